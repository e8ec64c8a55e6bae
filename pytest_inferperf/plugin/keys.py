"""Names the plugin's modules share: option choices, stash keys, limits.

Owns: constants only. Must not: import the engine (``measure.backends``, whose names
are the backend choices, imports the standard library only)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from ..measure import backends

if TYPE_CHECKING:
    from ..core.profile import Profile
    from ..diagnose.assessment import Assessment as Verdict


BACKEND_CHOICES = backends.names()  # the registry's rows (stdlib only at load)
FLAMEGRAPH_CHOICES = ("failed", "all", "none")
MARKERS = ("inferperf", "perf")  # the unambiguous name first; "perf" is the short one
FIXTURES = ("pmu_profile",)  # a test that uses one of these is an inferperf test
SHORT_UPDATE = "--update-baselines"
# (variant name, profile, the workload as a no-argument callable for the sampling pass)
PROFILES = pytest.StashKey[list[tuple[str, "Profile", Callable[[], Any]]]]()
VERDICTS = pytest.StashKey[list["Verdict"]]()
# baseline key -> the failure paragraph of a profile that had no baseline it was
# required to have (--inferperf-require-baseline): that profile failed, on its own
MISSING_BASELINES = pytest.StashKey[dict[str, str]]()
# variant name -> the same measurement again (a suspected timing regression is confirmed)
REMEASURE = pytest.StashKey[dict[str, Callable[[], "Profile"]]]()
EARLY_WARNINGS = pytest.StashKey[list[str]]()  # found before pytest_configure
SHORT_UPDATE_TAKEN = pytest.StashKey[bool]()  # another plugin owns --update-baselines
FLAME_PROBLEM = "flamegraphs not written"  # an artifact note: the folder could not be written
MEASURERS = "inferperf-measurers"  # the plugin object that chooses measurers (measuring.py)
