"""The ONNX Runtime operator pass around a measured profile.

Owns: asking the ONNX helpers for per-operator times of a workload already
measured. Must not: measure counters or judge.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..profile import Profile


def with_operator_times(profile: Profile, call: Callable[[], Any]) -> Profile:
    """The profile with ONNX Runtime's per-node and per-op-type times (onnx.operator_times)."""
    if "onnxruntime" not in sys.modules:  # no session can exist: skip the import
        return profile
    if profile.partial:  # the workload already ran past its timeout: call it no more
        return profile.with_(
            settings={
                **profile.settings,
                "operator_pass": {"skipped": "the measured run stopped at its timeout"},
            }
        )
    from ..onnx import operator_times
    from ..watchdog import pass_timeout

    fields, reason = operator_times(
        call, latency_ms=profile.latency.mean_ms, timeout=pass_timeout(profile.settings)
    )
    settings = {
        **profile.settings,
        "operator_pass": fields.pop("operator_pass", None)
        or {"skipped": reason or "not an ONNX Runtime workload"},
    }
    return profile.with_(settings=settings, **fields)


def operator_table_for(profile: Profile, call: Callable[[], Any]) -> tuple[list | None, str | None]:
    """The profile's operator table, else ONNX Runtime's per-operator times, or why not."""
    if profile.operators:
        return list(profile.operators), None
    from ..onnx import operator_table
    from ..watchdog import pass_timeout

    return operator_table(call, timeout=pass_timeout(profile.settings))


def model_name_of(call: Callable[[], Any]) -> str:
    from ..onnx import session_of

    session = session_of(getattr(call, "func", call))
    model = getattr(session, "_model_path", None) if session is not None else None
    return Path(model).stem if isinstance(model, str) else "model"
