"""The ONNX Runtime operator pass around a measured profile, and the model it ran.

Owns: asking the ONNX helpers for per-operator times of a workload already
measured (:func:`with_operator_times`: each session run as the workload ran it, every
feed of one call and the session's own options; ``settings["operator_pass"]`` keeps,
per session, those options and the inputs of each run, which ``settings_change``
compares with a baseline's) and the model identity of the call (:func:`with_model`).
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
