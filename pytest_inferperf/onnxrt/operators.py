"""What one profiled ONNX Runtime operator is, and how its name maps back to the graph.

Owns:

* :class:`OperatorStat` - time, shapes and bytes of one graph node over the kept runs of
  an ONNX Runtime profile (the row every operator table, roofline point and operator
  flamegraph is made of).
* :func:`node_name_variants` - the profiler's node name, then the names ONNX Runtime
  derived it from (``fused ...``, ``.../MatMulScaleFusion/``, ``_token_3``, ``_nchwc``),
  so a renamed node is found again in the model file.
* :class:`ModelError` and :class:`InputSpecError` - the errors a user causes with a
  model file or with the inputs asked for.

This is the lowest layer of the ONNX side: :mod:`.sessions` (running sessions),
:mod:`.roofline` (costing) and :mod:`.precision` (element types) all use it, and it
uses none of them.

Must not: import numpy, onnx, onnxruntime or pytest, or any module of this package.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from ..core.errors import InferperfError

__all__ = ["InputSpecError", "ModelError", "OperatorStat", "node_name_variants"]


class ModelError(InferperfError, ValueError):
    """A model file is missing or ONNX Runtime / onnx cannot load it."""


class InputSpecError(InferperfError, ValueError):
    """Inputs for a model cannot be made from what the caller gave (e.g. a missing dim).

    ``dimension``: the symbolic dimension that had no value, where that was the cause (a
    front-end names it in its own option: the CLI's ``--shape NAME=N``); ``hint`` the fix
    in the Python API's words, which such a front-end leaves out (:attr:`message` is the
    cause alone)."""

    dimension: str | None = None

    def __init__(self, message: str, *, dimension: str | None = None, hint: str = "") -> None:
        self.about(message, hint=hint)
        super().__init__(self.text())
        self.dimension = dimension


@dataclass(frozen=True)
class OperatorStat:
    """Time and memory of one graph node over the kept (post-warm-up) runs of a profile.

    ``share`` is this node's fraction (0-1) of the summed kernel time of all nodes.
    Shapes read like ``"float[1,128,384]"``. The byte counts come from the trace's
    ``output_size``/``activation_size``/``parameter_size`` args and are ``None`` when absent.
    """

    node: str
    op_type: str
    calls: int
    total_us: float
    mean_us: float
    share: float
    input_shapes: tuple[str, ...] = ()
    output_shapes: tuple[str, ...] = ()
    output_bytes: int | None = None
    activation_bytes: int | None = None
    parameter_bytes: int | None = None
    model: str = ""  # the session it ran in (operator_times: a label per session)
    weight_type: str = ""  # its weight's stored type when narrower (precision module)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (shape tuples as lists)."""
        data = asdict(self)
        data["input_shapes"] = list(self.input_shapes)
        data["output_shapes"] = list(self.output_shapes)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OperatorStat:
        """Inverse of :meth:`to_dict`; unknown keys are ignored."""
        known = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in known}
        for key in ("input_shapes", "output_shapes"):
            if key in kwargs:
                kwargs[key] = tuple(kwargs[key])
        return cls(**kwargs)


# suffixes ONNX Runtime appends when it splits or re-lays out a node
_ORT_NAME_SUFFIX = re.compile(r"_(token_\d+|nchwc|nhwc|fused)$")
_FUSION_PATH = re.compile(r"^(.+?)/[A-Za-z0-9_]*Fusion/?$")


def node_name_variants(node: str) -> Iterator[str]:
    """The profiler's node name, then the names ONNX Runtime derived it from.

    >>> list(node_name_variants("fused /enc/MatMul/MatMulAddFusion"))
    ['fused /enc/MatMul/MatMulAddFusion', '/enc/MatMul/MatMulAddFusion', '/enc/MatMul']
    >>> list(node_name_variants("conv1_nchwc"))
    ['conv1_nchwc', 'conv1']
    """
    yield node
    name = node
    if name.startswith("fused "):  # "fused matmul/MatMulAddFusion": MatMul + Add -> FusedGemm
        name = name[len("fused ") :]
        if name:
            yield name
    match = _FUSION_PATH.match(name)  # "/enc/attn/MatMul/MatMulScaleFusion/"
    if match:
        name = match.group(1)
        yield name
    while True:
        stripped = _ORT_NAME_SUFFIX.sub("", name)
        if stripped == name or not stripped:
            return
        name = stripped
        yield name
