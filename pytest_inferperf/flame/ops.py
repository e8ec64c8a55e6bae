"""ONNX Runtime operator times -> folded stacks ``model;op_type;node``.

Owns: turning a per-operator table (:class:`pytest_inferperf.onnx.OperatorStat`
values, or their ``to_dict()`` mappings as stored in a Profile) into folded
stacks whose counts are microseconds of kernel time, so the operator view can be
drawn, capped and diffed like sampled stacks.

Must not: run a model or read ONNX Runtime's trace (that is :mod:`pytest_inferperf.onnx`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .fold import sanitize_frame

if TYPE_CHECKING:
    from ..onnx import OperatorStat

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


def operator_stacks(
    ops: Sequence[OperatorStat] | Sequence[Mapping[str, Any]], model_name: str
) -> dict[str, int]:
    """``{"model;op_type;node": µs}``: each node's total kernel time, rounded.

    A node with any time counts at least 1 µs; nodes with no time (or an unreadable
    one) are left out. Nodes sharing a name and type add up. Names are sanitised
    for the folded format (``;`` becomes ``:``).
    """
    model = sanitize_frame(model_name or "model")
    stacks: dict[str, int] = {}
    for op in ops:
        micros = _microseconds(_field(op, "total_us"))
        if not micros:
            continue
        op_type = sanitize_frame(str(_field(op, "op_type") or "[unknown op]"))
        node = sanitize_frame(str(_field(op, "node") or "[unnamed node]"))
        key = f"{model};{op_type};{node}"
        stacks[key] = stacks.get(key, 0) + micros
    return stacks
