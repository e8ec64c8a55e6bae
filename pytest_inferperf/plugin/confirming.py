"""A timing regression that alone would fail a test, measured again before it does.

Owns: choosing where it is measured again (in fresh processes with
``--inferperf-processes``, where there is a baseline and the counts are native; else in
this process after a pause), the fresh processes' time limit, and handing what was
measured again to the Assessment. Must not: decide whether a verdict needs confirming
or what the new measurements mean (:mod:`diagnose.assessment`), start processes itself
(:mod:`.fresh_processes`), or import the engine at module level.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest

from .judging import ProfileJudge
from .keys import REMEASURE

if TYPE_CHECKING:
    from ..core.profile import Profile
    from ..diagnose.assessment import Assessment as Verdict


def confirm(
    judge: ProfileJudge,
    item: pytest.Item,
    name: str,
    verdict: Verdict,
    baseline: Profile | None = None,
) -> Verdict:
    """``verdict`` as it stands after measuring again, where it needs confirming: in
    fresh processes (``--inferperf-processes``), else in this one after a pause."""
    remeasure = item.stash.get(REMEASURE, {}).get(name)
    if remeasure is None or not verdict.needs_confirmation:
        return verdict
    failed = None
    settings = judge.settings
    # simulated counts repeat to 0.1% whatever the process: its timings are measured
    # again here, never by starting valgrind in fresh processes
    native = "simulate" not in (verdict.profile.backend, settings.backend)
    if settings.processes > 0 and baseline is not None and native:
        from ..diagnose.assessment import with_process_confirmation
        from .fresh_processes import measure_in_fresh_processes

        processes, failed = measure_in_fresh_processes(
            judge.config,
            [item.nodeid],
            verdict.profile.backend,
            settings.processes,
            timeout=child_timeout(verdict.profile),
        )
        measured = [p.get(item.nodeid, {}).get(name) for p in processes]
        fresh = [
            judge.judge(item, name, p.with_(model=verdict.profile.model))[0]
            for p in measured
            if p is not None
        ]
        if len(fresh) >= 2:  # a spread needs two; fewer: measured again here instead
            return with_process_confirmation(verdict, fresh, baseline, failed=failed)
    return _again_here(judge, item, name, verdict, remeasure, failed)


def _again_here(
    judge: ProfileJudge,
    item: pytest.Item,
    name: str,
    verdict: Verdict,
    remeasure: Callable[[], Any],
    failed: str | None,
) -> Verdict:
    """``verdict`` confirmed (or not) by the same measurement again in this process."""
    import time

    from ..diagnose.assessment import CONFIRM_PAUSE_S, with_confirmation

    time.sleep(CONFIRM_PAUSE_S)
    try:
        profile = remeasure()  # the same measure() call again, operator pass included
    except TimeoutError as exc:  # the first measurement stands, and says why
        return replace(
            verdict,
            confirmation={
                "held": True,
                "pause_s": CONFIRM_PAUSE_S,
                "text": f"not measured again ({exc}): the first measurement stands",
            },
        )
    again, _ = judge.judge(item, name, profile.with_(model=verdict.profile.model))
    confirmed = with_confirmation(verdict, again, pause_s=CONFIRM_PAUSE_S)
    if failed and confirmed.confirmation is not None:
        text = f"{confirmed.confirmation['text']} (not in fresh processes: {failed})"
        from ..diagnose.assessment import replace_confirmation

        return replace_confirmation(confirmed, text)
    return confirmed


def child_timeout(profile: Profile) -> float | None:
    """How long one fresh process of this profile may take: three times the marker's
    ``timeout=`` (start-up and fixtures come on top of the measurement), else the default."""
    timeout = profile.settings.get("timeout")
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        return None
    return 3.0 * float(timeout) + 30.0
