"""The flamegraph pass of a judged profile, as ``--inferperf-flamegraphs`` asks for it.

Owns: whether a verdict gets flamegraphs (``none``, ``failed``, ``all``), the folder
they go to, and a problem with it or with the pass told on the verdict, never raised:
output never decides a test. Must not: sample or render (:func:`measure.flame.capture_for`),
judge, or import the engine at module level (the plugin loads with every pytest run).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..core.default_paths import REPORT_DIR
from .context import add_property
from .keys import FLAME_PROBLEM
from .options import Settings

if TYPE_CHECKING:
    from ..core.profile import Profile
    from ..diagnose.assessment import Assessment as Verdict


def wants_flamegraphs(settings: Settings, verdict: Verdict) -> bool:
    mode = settings.flamegraphs
    if mode == "none":
        return False
    # A new baseline is sampled only under "all": a sampling pass per test would make
    # recording several times slower than a run (issue 38). Its operator table, which
    # the primary differential view needs, comes from the operator pass regardless.
    return mode == "all" or verdict.failed


def attach_flamegraphs(
    config: pytest.Config,
    settings: Settings,
    verdict: Verdict,
    baseline: Profile | None,
    call: Callable[[], Any],
    item: pytest.Item,
) -> Verdict:
    """``verdict`` with the flamegraphs of ``call`` (or the note why there are none)."""
    from ..core.output_errors import describe, make_folder
    from ..core.watchdog import pass_timeout
    from ..measure.flame import capture_for

    out_dir = settings.report_dir or Path(config.rootpath) / REPORT_DIR
    folder = out_dir / "flamegraphs"
    if verdict.profile.partial:  # past its timeout already: no sampling pass
        return replace(
            verdict,
            artifact_notes={"flamegraphs": "not sampled: the measured run stopped at its timeout"},
        )
    problem = make_folder(folder)
    if problem is not None:  # output never decides a test: say so once, judge as before
        return replace(verdict, artifact_notes={FLAME_PROBLEM: problem})
    try:
        graphs = capture_for(
            call,
            name=verdict.key,
            out_dir=folder,
            relative_to=config.rootpath,
            profile=verdict.profile,
            find_operators=True,
            baseline=baseline,
            timeout=pass_timeout(verdict.profile.settings),
        )
    except Exception as exc:  # a disk full mid-write, a sampler's bug: never the test's
        return replace(verdict, artifact_notes={FLAME_PROBLEM: describe(exc, folder)})
    notes = dict(graphs.notes)
    if "diff" in notes and baseline is not None and not baseline.stacks:
        notes["diff"] = "no stacks stored with the baseline (re-run --update-baselines)"
    for kind, path in graphs.artifacts.items():
        add_property(item, f"inferperf.flamegraph.{kind}", path)
    profile = verdict.profile
    if graphs.stacks:
        profile = profile.with_(stacks=graphs.stacks)
    return replace(verdict, profile=profile, artifacts=graphs.artifacts, artifact_notes=notes)
