"""ONNX Runtime operator times -> folded stacks ``model;op_type;node``.

Owns: turning a per-operator table (:class:`pytest_inferperf.onnxrt.operators.OperatorStat`
values, or their ``to_dict()`` mappings as stored in a Profile) into folded
stacks whose counts are microseconds of kernel time, so the operator view can be
drawn, capped and diffed like sampled stacks.

Must not: run a model or read ONNX Runtime's trace (that is
:mod:`pytest_inferperf.onnxrt.sessions`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .fold import sanitize_frame

if TYPE_CHECKING:
    from ...onnxrt.operators import OperatorStat

__all__ = ["operator_stacks"]


def _field(op: Any, name: str) -> Any:
    if isinstance(op, Mapping):
        return op.get(name)
    return getattr(op, name, None)


def _microseconds(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return 0
    if value <= 0:
        return 0
    return max(1, round(value))


def _per_call_us(op: Any) -> float:
    """µs of one workload call: the node's mean µs per session run times the session's
    runs per call (1 when unknown)."""
    mean = _field(op, "mean_us")
    if isinstance(mean, bool) or not isinstance(mean, (int, float)) or not math.isfinite(mean):
        total, calls = _field(op, "total_us"), _field(op, "calls")
        if not isinstance(total, (int, float)) or not isinstance(calls, int) or calls <= 0:
            return 0.0
        mean = total / calls
    runs = _field(op, "session_runs_per_call")
    factor = runs if isinstance(runs, int) and not isinstance(runs, bool) and runs > 0 else 1
    return max(0.0, float(mean)) * factor


def operator_stacks(
    ops: Sequence[OperatorStat] | Sequence[Mapping[str, Any]],
    model_name: str,
    *,
    per_call: bool = False,
) -> dict[str, Any]:
    """``{"model;op_type;node": µs}``: each node's total kernel time, rounded.

    The root frame is the operator's own ``model`` (the session it ran in, when the
    table covers several) or ``model_name``. A node with any time counts at least 1 µs;
    nodes with no time (or an unreadable one) are left out. Nodes sharing a name and
    type add up. Names are sanitised for the folded format (``;`` becomes ``:``).
    ``per_call=True`` gives float µs per workload call instead (mean µs per run times
    the session's runs per call), the unit of :func:`.diff.diff_per_call`.
    """
    default = sanitize_frame(model_name or "model")
    stacks: dict[str, Any] = {}
    for op in ops:
        value: float = _per_call_us(op) if per_call else _microseconds(_field(op, "total_us"))
        if not value:
            continue
        own = _field(op, "model")
        model = sanitize_frame(str(own)) if own else default
        op_type = sanitize_frame(str(_field(op, "op_type") or "[unknown op]"))
        node = sanitize_frame(str(_field(op, "node") or "[unnamed node]"))
        key = f"{model};{op_type};{node}"
        stacks[key] = stacks.get(key, 0) + value
    return stacks
