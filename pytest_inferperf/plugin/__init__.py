"""pytest wiring for inferperf: options, ini, the ``perf`` marker, fixtures, xdist.

This package is the ``pytest11`` entry point. Only hooks and fixtures live here;
measuring, judging and rendering are the engine's (``measure.runner``,
``diagnose.assessment``, ``report``), which never import pytest.

Flow: the ``pmu_profile`` fixture measures (on the xdist worker that runs the test)
and records Profiles on the item; after the test body passes, each Profile is
judged against the marker's budgets and its baseline; the verdicts ride on the call
report to the controller, which prints one table and, with ``--update-baselines``,
does the one baseline write pass.

Modules: ``options`` (flags, ini, Settings), ``lifecycle`` (configure/unconfigure),
``session`` (the per-session plugin object), ``fixtures``, ``html`` (pytest-html),
``keys`` (shared constants). Loading this package is what every pytest run pays once
the package is installed: it imports pytest and the standard library only.
"""

from __future__ import annotations

from .fixtures import perf_threads, pmu_profile
from .lifecycle import (
    pytest_addhooks,
    pytest_configure,
    pytest_load_initial_conftests,
    pytest_unconfigure,
)
from .options import pytest_addoption

__all__ = [
    "perf_threads",
    "pmu_profile",
    "pytest_addhooks",
    "pytest_addoption",
    "pytest_configure",
    "pytest_load_initial_conftests",
    "pytest_unconfigure",
]
