"""The ONNX Runtime operator pass around a measured profile, and the model it ran.

Owns: the one operator pass every front-end's profile gets (:func:`with_operator_pass`:
the measurers of :mod:`.measurer` run it inside ``measure()``, so ``pytest --inferperf``
and ``inferperf analyse`` share it; :func:`runner.profile` runs its
:func:`with_operator_times`): asking the ONNX helpers for per-operator times of a
workload already measured (each session run as the workload ran it, every feed of one
call and the session's own options; ``settings["operator_pass"]`` keeps, per session,
those options and the inputs of each run, which ``settings_change`` compares with a
baseline's) and the model identity of the call (:func:`with_model`).
Imports ONNX Runtime only where a session can exist (it is already imported).

Must not: measure counters, judge or render; import pytest.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..core.profile import Profile


def with_operator_pass(
    profile: Profile,
    call: Callable[[], Any],
    timed: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext,
    say: Callable[[str], None] | None = None,
) -> Profile:
    """A counted profile as every front-end gets it: operator times (their profiled runs
    inside ``timed``) and the model. ``say`` is told the pass runs (where it can)."""
    if say is not None and "onnxruntime" in sys.modules:
        say("operator times (ONNX Runtime profiler)")
    return with_model(with_operator_times(profile, call, timed), call)


def with_operator_times(
    profile: Profile,
    call: Callable[[], Any],
    timed: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext,
) -> Profile:
    """The profile with ONNX Runtime's per-node and per-op-type times (onnx.operator_times;
    its profiled runs inside ``timed``)."""
    if "onnxruntime" not in sys.modules:  # no session can exist: skip the import
        return profile
    if profile.partial:  # the workload already ran past its timeout: call it no more
        return profile.with_(
            settings={
                **profile.settings,
                "operator_pass": {"skipped": "the measured run stopped at its timeout"},
            }
        )
    from ..core.watchdog import pass_timeout
    from ..onnxrt.sessions import operator_times

    fields, reason = operator_times(
        call,
        latency_ms=profile.latency.mean_ms,
        timeout=pass_timeout(profile.settings),
        timed=timed,
    )
    settings = {
        **profile.settings,
        "operator_pass": fields.pop("operator_pass", None)
        or {"skipped": reason or "not an ONNX Runtime workload"},
    }
    return profile.with_(settings=settings, **fields)


def with_model(profile: Profile, call: Callable[[], Any]) -> Profile:
    """The profile with the model ``call`` runs (identity.model_of_call), where it has none."""
    if profile.model is not None or "onnxruntime" not in sys.modules:
        return profile
    from .identity import model_of_call

    return profile.with_(model=model_of_call(call))
