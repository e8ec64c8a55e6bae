"""Roofline analysis of an ONNX model's operators: work, traffic, machine ceilings, SVG.

Owns:

* :func:`op_costs` - the arithmetic (FLOPs) and memory traffic (bytes) of every node of an
  ONNX graph, from its tensor shapes once the symbolic dims are fixed.
* :func:`measure_ceilings` - two short probes of this machine: a compute ceiling (GFLOP/s of
  a float32 matmul) and a memory-bandwidth ceiling (GB/s of a large copy).
* :func:`roofline_points` - the join of those costs with the per-operator times of ONNX
  Runtime's profiler (:func:`pytest_inferperf.onnxrt.sessions.profile_operators`), giving each
  operator's arithmetic intensity, achieved and attainable GFLOP/s, and whether it is
  memory- or compute-bound. The graph's cost of a node is cross-checked with the shapes
  that really ran (the trace), which win when the two disagree; fused nodes keep the
  work of the nodes they absorbed; NCHWc nodes are costed in logical channels.
  :func:`uncosted_operators` lists what could not be costed, :func:`cross_check` how the
  two sources compared, :func:`roofline_summary` / :func:`roofline_to_dict` give
  ``Profile.roofline`` and :func:`render_roofline_svg` the picture.

Counting conventions (the same for every model, so results compare):

* A multiply-add is 2 FLOPs. Integer ops (``MatMulInteger``, ``ConvInteger``,
  ``QLinearMatMul``, ``QLinearConv``) are counted as operations with the same formulas,
  so "GFLOP/s" of an int8 model means giga-operations per second.
* ``MatMul``: 2·M·N·K per output matrix, with batch broadcasting (2 · output elements · K).
* ``Gemm``: 2·M·N·K, plus M·N when the bias ``C`` is given.
* ``Conv``: per batch 2·Cout·Hout·Wout·(Cin/group)·kH·kW, plus Cout·Hout·Wout with a bias;
  a depthwise conv (group == Cin) has Cin/group == 1. ``ConvTranspose``: 2 · input
  elements · (Cout/group)·kH·kW, plus the bias.
* Elementwise ops (Add, Sub, Mul, Div, Relu, Clip, Erf, Sqrt, Pow, Tanh, Sigmoid, ...):
  1 per output element, whatever the op costs in instructions. Composites an exporter
  spells out node by node (the erf GELU: Div, Erf, Add, Mul, Mul) are counted per node.
* ``Softmax``: 5 per element (max, subtract, exp, sum, divide). ``LayerNormalization``: 8
  per element (sum for the mean, subtract, square, sum for the variance, multiply by the
  reciprocal standard deviation, scale, shift, and the per-row rsqrt spread over the row).
* ``ReduceMean``/``ReduceSum``/``GlobalAveragePool``: 1 per input element; pools: output
  elements · kernel size. Comparisons, logic and ``Where``: 1 per output element. Data
  movement (``Gather``, ``Reshape``, ``Transpose``, ``Cast``, ``Concat``, ``Shape``,
  ``DequantizeLinear``... :data:`DATA_MOVEMENT_OPS`): 0 FLOPs - they still move bytes.
  Any other op type is *not costed* (:func:`is_costed`): listed with its share of time,
  never counted as data movement.
* Fused ops ONNX Runtime creates (and optimised models may contain): ``FusedMatMul``,
  ``MatMulIntegerToFloat``, ``DynamicQuantizeMatMul``, ``QGemm``, ``MatMulNBits`` as a
  matmul; ``FusedConv`` as a conv; ``Attention`` as its QKV projection, QK^T, softmax
  (5 per element) and AV, ``QAttention`` the same in integer operations,
  ``MultiHeadAttention`` as the last three, ``GroupQueryAttention`` as the last three
  for every query head over the keys of its group (formulas: :func:`_attention_flops`);
  ``SkipLayerNormalization`` 9 per element (add + layer norm); ``Gelu`` 5 (the
  erf form's five ops), ``BiasGelu`` 6, ``FastGelu`` 8, ``QuickGelu`` 3.
* Bytes: every distinct input tensor (activations and weights, each read once) plus every
  output tensor, at their element sizes - the compulsory traffic of one node run in
  isolation; ``Gather``/``Slice`` read only as much of their data input as they return
  (the rows looked up, not the whole embedding table). Caches make real DRAM traffic
  lower for operators whose tensors stay in cache between nodes, so an operator can sit
  above the memory roof.
* Shapes that stay unknown (a dim no inference could fix) count 0 elements; a matmul,
  conv or attention left so is not costed ("shapes unknown") rather than given 0 FLOPs.

Must not: import pytest, run models (the operator times come from ``sessions.profile_operators``;
only tiny shape-arithmetic nodes are evaluated, with onnx's reference evaluator) or decide
pass/fail. Everything here is a pure function of its arguments except
:func:`measure_ceilings`, which times this machine.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import re
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from ..core.svgplot import Axis, Chart, category_colours
from .operators import (
    InputSpecError,
    ModelError,
    OperatorStat,
    node_name_variants,
)

__all__ = [
    "Ceilings",
    "OpCost",
    "RooflinePoint",
    "cross_check",
    "is_costed",
    "measure_ceilings",
    "op_costs",
    "render_roofline_svg",
    "roofline_from_dict",
    "roofline_points",
    "roofline_summary",
    "roofline_to_dict",
    "uncosted_operators",
    "uncosted_text",
    "unmatched_operators",
]

# --------------------------------------------------------------------------- conventions

# FLOPs per *output* element.
ELEMENTWISE_FLOPS: dict[str, int] = {
    **dict.fromkeys(
        (
            "Add",
            "Sub",
            "Mul",
            "Div",
            "Relu",
            "LeakyRelu",
            "PRelu",
            "Clip",
            "Erf",
            "Sqrt",
            "Pow",
            "Tanh",
            "Sigmoid",
            "Exp",
            "Log",
            "Neg",
            "Abs",
            "Reciprocal",
            "Max",
            "Min",
            "Sum",
            "Mean",
            "Elu",
            "Selu",
            "Softplus",
            "HardSigmoid",
            "HardSwish",
            "Sin",
            "Cos",
            # comparisons, logic and selection: one operation per output element
            "Equal",
            "Less",
            "Greater",
            "LessOrEqual",
            "GreaterOrEqual",
            "And",
            "Or",
            "Xor",
            "Not",
            "Where",
            "IsNaN",
            "IsInf",
            "Floor",
            "Ceil",
            "Round",
            "Sign",
            "Mod",
        ),
        1,
    ),
    "Softmax": 5,
    "LogSoftmax": 5,
    "LayerNormalization": 8,
    "SimplifiedLayerNormalization": 6,
    "SkipLayerNormalization": 9,
    "SkipSimplifiedLayerNormalization": 7,
    "BatchNormalization": 2,
    "Gelu": 5,
    "BiasGelu": 6,
    "FastGelu": 8,
    "QuickGelu": 3,
    "BiasAdd": 2,
    "RotaryEmbedding": 3,
    "EmbedLayerNormalization": 10,
    "QLinearAdd": 1,
    "QLinearMul": 1,
    "QLinearSigmoid": 1,
    "QLinearLeakyRelu": 1,
}
# FLOPs per *input* element.
REDUCTION_FLOPS: dict[str, int] = {
    "ReduceMean": 1,
    "ReduceSum": 1,
    "ReduceMax": 1,
    "ReduceMin": 1,
    "ReduceSumSquare": 2,
    "ReduceL2": 2,
    "GlobalAveragePool": 1,
    "GlobalMaxPool": 1,
    "QLinearGlobalAveragePool": 1,
}
WINDOW_POOLS = frozenset({"AveragePool", "MaxPool", "LpPool"})
# Matmul-like ops: where the A operand, the B operand and the bias sit among the inputs.
MATMUL_OPERANDS: dict[str, tuple[int, int, int | None]] = {
    "MatMul": (0, 1, None),
    "MatMulInteger": (0, 1, None),
    "Gemm": (0, 1, 2),
    "FusedGemm": (0, 1, 2),
    "FusedMatMul": (0, 1, None),
    "QLinearMatMul": (0, 3, None),
    "MatMulIntegerToFloat": (0, 1, None),
    "DynamicQuantizeMatMul": (0, 1, None),
    "QGemm": (0, 3, 6),
    "MatMulNBits": (0, 1, 5),
}
# Attention ops of com.microsoft, costed as their projections, QK^T, softmax and AV.
ATTENTION_OPS = frozenset({"Attention", "MultiHeadAttention", "QAttention", "GroupQueryAttention"})
# where the past state sits among an attention op's inputs (BNSH, 5-d: (2, B, N, P, h))
_PAST_INPUT = {"Attention": 4, "QAttention": 8}
# Conv-like ops: where the weight and the bias sit among the inputs.
CONV_OPERANDS: dict[str, tuple[int, int | None]] = {
    "Conv": (1, 2),
    "FusedConv": (1, 2),
    "NhwcFusedConv": (1, 2),
    "ConvInteger": (1, None),
    "QLinearConv": (3, 8),
}
QUANTISED_PREFIXES = ("QLinear", "QGemm", "DynamicQuantize")
# Ops that only move or convert data (0 FLOPs): costed from the trace's shapes when ORT
# inserts them itself (layout Transposes, NCHWc ReorderInput/ReorderOutput).
DATA_MOVEMENT_OPS = frozenset(
    {
        "Transpose",
        "Reshape",
        "ReorderInput",
        "ReorderOutput",
        "Cast",
        "Concat",
        "Split",
        "Slice",
        "Gather",
        "Identity",
        "Squeeze",
        "Unsqueeze",
        "Flatten",
        "Expand",
        "Pad",
        "QuantizeLinear",
        "DequantizeLinear",
        "DynamicQuantizeLinear",
        "Tile",
        "MemcpyToHost",
        "MemcpyFromHost",
        "Shape",
        "Size",
        "Constant",
        "ConstantOfShape",
        "Range",
        "NonZero",
        "GatherElements",
        "GatherND",
        "ScatterND",
        "ScatterElements",
        "DepthToSpace",
        "SpaceToDepth",
        "Dropout",
        "Trilu",
        "OneHot",
        "CastLike",
        "QLinearConcat",
    }
)

# element sizes in bytes, by ONNX TensorProto data type and by the name ORT's profiler uses
_ONNX_ITEMSIZE: dict[int, float] = {
    1: 4,
    2: 1,
    3: 1,
    4: 2,
    5: 2,
    6: 4,
    7: 8,
    9: 1,
    10: 2,
    11: 8,
    12: 4,
    13: 8,
    16: 2,
    17: 1,
    18: 1,
    19: 1,
    20: 1,
    21: 0.5,
    22: 0.5,
    23: 1,
    14: 8,
    15: 16,
}
_TRACE_ITEMSIZE: dict[str, float] = {
    "float": 4,
    "float32": 4,
    "double": 8,
    "float64": 8,
    "float16": 2,
    "bfloat16": 2,
    "int8": 1,
    "uint8": 1,
    "int16": 2,
    "uint16": 2,
    "int32": 4,
    "uint32": 4,
    "int64": 8,
    "uint64": 8,
    "bool": 1,
    "int4": 0.5,
    "uint4": 0.5,
}

Shape = tuple[int | None, ...]  # None: a dim no inference could fix


@dataclass(frozen=True)
class _Tensor:
    itemsize: float
    shape: Shape | None  # None: rank unknown
    elem_type: int = 0  # ONNX TensorProto data type; 0 when unknown (profiler shapes)

    @property
    def numel(self) -> int | None:
        return _numel(self.shape)

    @property
    def nbytes(self) -> int:
        n = self.numel
        return 0 if n is None else math.ceil(n * self.itemsize)


# --------------------------------------------------------------------------- costs


@dataclass(frozen=True)
class OpCost:
    """Work and compulsory memory traffic of one graph node (conventions: module docstring)."""

    node: str
    op_type: str
    flops: int
    bytes: int
    #: every tensor shape of the node was known (inferred for the dims given)
    complete: bool = field(default=True, compare=False)
    #: elements of the first output (what a fused activation or residual add runs over)
    output_elements: int = field(default=0, compare=False)
    #: the model nodes producing this node's inputs (to follow fusions back to them)
    producers: tuple[str, ...] = field(default=(), compare=False)
    #: the node's output tensors (ORT names NCHWc nodes after them: ``relu6_7_nchwc``)
    outputs: tuple[str, ...] = field(default=(), compare=False)

    @property
    def costed(self) -> bool:
        """The op type has a FLOP formula (or is data movement, 0 FLOPs by convention)."""
        return is_costed(self.op_type)

    @property
    def intensity(self) -> float | None:
        """Arithmetic intensity in FLOP/byte; ``None`` when no bytes are known."""
        return self.flops / self.bytes if self.bytes > 0 else None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _numel(shape: Shape | None) -> int | None:
    if shape is None or any(d is None for d in shape):
        return None
    return math.prod(d for d in shape if d is not None)


def _at(seq: Sequence[_Tensor | None], index: int | None) -> _Tensor | None:
    if index is None or index >= len(seq):
        return None
    return seq[index]


def _matmul_k(a: Shape, out: Shape, trans_a: bool | None) -> int | None:
    """The reduction length K from A's shape (``trans_a`` None: infer it from the output)."""
    if len(a) == 1:
        return a[0]
    if trans_a is None:
        m = out[-2] if len(out) >= 2 else None
        trans_a = m is not None and a[-2] != m and a[-1] == m
    return a[-2] if trans_a else a[-1]


def _matmul_flops(
    op_type: str, inputs: Sequence[_Tensor | None], out: _Tensor | None, trans_a: bool | None
) -> int:
    a_index, _, bias_index = MATMUL_OPERANDS[op_type]
    a = _at(inputs, a_index)
    if a is None or a.shape is None or not a.shape or out is None or out.shape is None:
        return 0
    k, n_out = _matmul_k(a.shape, out.shape, trans_a), out.numel
    if k is None or n_out is None:
        return 0
    flops = 2 * n_out * k
    if _at(inputs, bias_index) is not None:
        flops += n_out
    return flops


def _conv_flops(op_type: str, inputs: Sequence[_Tensor | None], out: _Tensor | None) -> int:
    w_index, bias_index = CONV_OPERANDS[op_type]
    w = _at(inputs, w_index)
    if w is None or w.shape is None or len(w.shape) < 3 or out is None:
        return 0
    per_output, n_out = _numel(w.shape[1:]), out.numel
    if per_output is None or n_out is None:
        return 0
    flops = 2 * n_out * per_output  # 2 · N·Cout·Hout·Wout · (Cin/group)·kH·kW
    if _at(inputs, bias_index) is not None:
        flops += n_out
    return flops


def _conv_transpose_flops(inputs: Sequence[_Tensor | None], out: _Tensor | None) -> int:
    x, w = _at(inputs, 0), _at(inputs, 1)
    if x is None or w is None or w.shape is None or len(w.shape) < 3:
        return 0
    per_input, n_in = _numel(w.shape[1:]), x.numel
    if per_input is None or n_in is None:
        return 0
    flops = 2 * n_in * per_input  # each input element meets (Cout/group)·kH·kW weights
    if _at(inputs, 2) is not None and out is not None and out.numel is not None:
        flops += out.numel
    return flops


def is_costed(op_type: str) -> bool:
    """True when this module counts ``op_type``'s work (0 FLOPs is a count for data movement).

    An op type outside every table (a custom op, ``Resize``, ``LSTM``, ``Loop``...) is
    *not costed*: the roofline lists it with its share of time, never as data movement.
    """
    return (
        op_type in ELEMENTWISE_FLOPS
        or op_type in REDUCTION_FLOPS
        or op_type in WINDOW_POOLS
        or op_type in MATMUL_OPERANDS
        or op_type in CONV_OPERANDS
        or op_type in ATTENTION_OPS
        or op_type in DATA_MOVEMENT_OPS
        or op_type == "ConvTranspose"
    )


def _kv_length(
    op_type: str, inputs: Sequence[_Tensor | None], outputs: Sequence[_Tensor | None], s: int
) -> int:
    """L, the keys each query meets: the present state's sequence axis when it is known
    (what ran), else the sequence plus the past state's length."""
    present, past = _at(outputs, 1), _at(inputs, _PAST_INPUT.get(op_type, 3))
    axis, rank = (2, 4) if op_type == "GroupQueryAttention" else (3, 5)
    for state in (present, past):
        if state is not None and state.shape is not None and len(state.shape) == rank:
            length = state.shape[axis]
            if length:
                return int(length) if state is present else s + int(length)
    return s


def _attention_flops(
    op_type: str,
    inputs: Sequence[_Tensor | None],
    outputs: Sequence[_Tensor | None],
    attrs: Mapping[str, Any] | None,
) -> int:
    """``Attention`` / ``QAttention``: QKV projection (+ bias), QK^T, softmax (5/element),
    AV. ``MultiHeadAttention``: QK^T, softmax and AV from query, key and value shapes.
    ``GroupQueryAttention``: QK^T, softmax and AV of every query head.

    Shapes, from the com.microsoft (version 1) definitions in ONNX Runtime's
    ContribOperators.md (github.com/microsoft/onnxruntime, its docs folder), as the
    installed ONNX Runtime's own schemas report them (``get_all_operator_schema()``):

    * ``QAttention``: input (B, S, H_in) uint8, weight (H_in, 3·H) int8/uint8, bias (3·H),
      output (B, S, H), present (2, B, N, P + S, h); the same work as ``Attention``:
      2·B·S·H_in·3H (projection) + B·S·3H (bias) + 2·B·S·L·H (QK^T) + 5·B·N·S·L (softmax)
      + 2·B·S·L·H (AV), L = P + S, integer multiply-adds counted as operations.
    * ``GroupQueryAttention``: query (B, S, N·h) (or packed QKV (B, S, N·h + 2·N_kv·h)),
      key/value (B, S, N_kv·h), output (B, S, N·h), present_key/value (B, N_kv, L, h).
      Each of the N query heads meets the L keys of its group: 2·B·S·L·N·h (QK^T) +
      5·B·N·S·L (softmax) + 2·B·S·L·N·h (AV). The projections are separate MatMuls before
      it. Masks (causal, local window) are not subtracted and rotary embedding
      (``do_rotary``) is not counted: the same convention as ``Attention``.
    """
    x, o = _at(inputs, 0), _at(outputs, 0)
    if x is None or x.shape is None or len(x.shape) != 3 or o is None or o.shape is None:
        return 0
    b, s = x.shape[0], x.shape[1]
    hv = o.shape[-1]
    if b is None or s is None or hv is None:
        return 0
    heads = int(attrs.get("num_heads", 0)) if attrs else 0
    kv = _kv_length(op_type, inputs, outputs, s)
    flops = 0
    if op_type == "GroupQueryAttention":
        present = _at(outputs, 1)
        head_size = (
            present.shape[3]
            if present is not None and present.shape is not None and len(present.shape) == 4
            else None
        )
        if not heads and head_size:
            heads = hv // head_size  # the trace has no attributes; the shapes tell
        hq = hv
    elif op_type in ("Attention", "QAttention"):
        w, bias = _at(inputs, 1), _at(inputs, 2)
        sizes = list(attrs.get("qkv_hidden_sizes") or []) if attrs else []
        hq = int(sizes[0]) if sizes else hv
        if (
            w is not None
            and w.shape is not None
            and len(w.shape) == 2
            and w.shape[0] is not None
            and w.shape[1] is not None
        ):
            flops += 2 * b * s * int(w.shape[0]) * int(w.shape[1])
        elif x.shape[2] is not None:  # weights pre-packed out of the trace: q, k, v of hv
            flops += 2 * b * s * int(x.shape[2]) * (hq + hq + hv)
        bias_numel = bias.numel if bias is not None else None
        if bias_numel:
            flops += b * s * bias_numel
        present = _at(outputs, 1)
        if not heads and present is not None and present.shape and len(present.shape) == 5:
            heads = present.shape[2] or 0
    else:
        hq = x.shape[2] or hv
        key = _at(inputs, 1)
        if key is None or key.shape is None:
            kv = s  # packed QKV in the query input
        elif len(key.shape) == 4:
            kv = key.shape[2] or s
        else:
            kv = key.shape[1] or s
    flops += 2 * b * s * kv * hq + 2 * b * s * kv * hv
    if heads:
        flops += 5 * b * heads * s * kv
    return flops


def _flops(
    op_type: str,
    inputs: Sequence[_Tensor | None],
    outputs: Sequence[_Tensor | None],
    attrs: Mapping[str, Any] | None,
) -> int:
    """FLOPs of one node; ``attrs`` None when the attributes are unknown (profiler shapes)."""
    out = _at(outputs, 0)
    if op_type in MATMUL_OPERANDS:
        trans_a = None if attrs is None else bool(attrs.get("transA", 0))
        return _matmul_flops(op_type, inputs, out, trans_a)
    if op_type in CONV_OPERANDS:
        return _conv_flops(op_type, inputs, out)
    if op_type in ATTENTION_OPS:
        return _attention_flops(op_type, inputs, outputs, attrs)
    if op_type == "ConvTranspose":
        return _conv_transpose_flops(inputs, out)
    if op_type in ELEMENTWISE_FLOPS:
        n = None if out is None else out.numel
        return 0 if n is None else ELEMENTWISE_FLOPS[op_type] * n
    if op_type in REDUCTION_FLOPS:
        x = _at(inputs, 0)
        n = None if x is None else x.numel
        return 0 if n is None else REDUCTION_FLOPS[op_type] * n
    if op_type in WINDOW_POOLS:
        kernel = None if attrs is None else attrs.get("kernel_shape")
        if kernel and out is not None and out.numel is not None:
            return out.numel * math.prod(int(k) for k in kernel)
        x = _at(inputs, 0)  # no attributes: one op per input element (kernel == stride)
        n = None if x is None else x.numel
        return n or 0
    return 0


def _load_model(model: str | os.PathLike[str] | Any) -> Any:
    if isinstance(model, onnx.ModelProto):
        return model
    path = Path(model)
    if not path.is_file():
        raise ModelError(f"ONNX model file {os.fspath(model)!r} does not exist or is not a file.")
    try:
        return onnx.load(os.fspath(path), load_external_data=False)
    except Exception as exc:
        raise ModelError(f"onnx could not load model {os.fspath(model)!r}: {exc}") from exc


_FOLD_LIMIT = 65536  # elements: small enough to be shape arithmetic, never a weight
_INFER_ROUNDS = 64


def _skeleton(model: Any) -> Any:
    """A copy of ``model`` without its large weights (they become typed graph inputs).

    Shape inference serialises the whole model; with the weights left out it takes
    milliseconds instead of a second, and the caller's model is never modified.
    """
    source = model.graph
    work = onnx.ModelProto()
    work.ir_version = max(model.ir_version, 4)
    work.opset_import.extend(model.opset_import)
    graph = work.graph
    graph.name = source.name
    graph.node.extend(source.node)
    graph.output.extend(source.output)
    graph.value_info.extend(source.value_info)
    big = set()
    for tensor in source.initializer:
        if math.prod(tensor.dims) <= _FOLD_LIMIT:
            graph.initializer.append(tensor)
        else:
            big.add(tensor.name)
            graph.input.append(
                onnx.helper.make_tensor_value_info(tensor.name, tensor.data_type, tensor.dims)
            )
    graph.input.extend(vi for vi in source.input if vi.name not in big)
    return work


def _fix_dims(model: Any, dims: Mapping[str, int]) -> None:
    """Replace symbolic dims by their values everywhere a shape is declared (in place)."""
    graph = model.graph
    initializers = {t.name for t in graph.initializer}
    missing: list[str] = []
    for group, is_input in ((graph.input, True), (graph.output, False), (graph.value_info, False)):
        for vi in group:
            if not vi.type.HasField("tensor_type") or not vi.type.tensor_type.HasField("shape"):
                continue
            for axis, dim in enumerate(vi.type.tensor_type.shape.dim):
                if dim.HasField("dim_value") and dim.dim_value > 0:
                    continue
                key = dim.dim_param if dim.HasField("dim_param") else f"{vi.name}:{axis}"
                value = dims.get(key)
                if value is not None:
                    dim.Clear()
                    dim.dim_value = int(value)
                elif is_input and vi.name not in initializers:
                    missing.append(f"{key!r} (input {vi.name!r}, axis {axis})")
                else:
                    dim.Clear()  # an output/value_info dim: let inference recompute it
    if missing:
        raise InputSpecError(
            f"no value for symbolic dim(s) {', '.join(missing)}; pass them in dims, e.g. "
            "dims={**default_dims(model), ...} (an unnamed dim is given as '<input>:<axis>')."
        )


# -- shape inference, folding shape arithmetic and shaping contrib ops between rounds -------

_FOLDABLE = frozenset(
    {
        "Gather",
        "Slice",
        "Concat",
        "Unsqueeze",
        "Squeeze",
        "Cast",
        "Reshape",
        "Identity",
        "Add",
        "Sub",
        "Mul",
        "Div",
        "Range",
        "ConstantOfShape",
        "Expand",
        "Equal",
        "Where",
        "Flatten",
        "Transpose",
        "ReduceProd",
        "Min",
        "Max",
        "Neg",
        "Floor",
        "Ceil",
        "Mod",
        "Not",
        "Less",
        "Greater",
        "Abs",
        "Constant",
    }
)
# contrib (com.microsoft) ops whose first output has the shape and type of their first input
_SHAPE_OF_FIRST_INPUT = frozenset(
    {
        "QLinearSigmoid",
        "QLinearLeakyRelu",
        "QLinearSoftmax",
        "Gelu",
        "FastGelu",
        "BiasGelu",
        "QuickGelu",
        "SkipLayerNormalization",
        "SkipSimplifiedLayerNormalization",
        "SimplifiedLayerNormalization",
        "BiasAdd",
        "RotaryEmbedding",
    }
)
_FLOAT = 1


def _shape_of(vi: Any) -> _Tensor | None:
    if not vi.type.HasField("tensor_type"):
        return None
    tt = vi.type.tensor_type
    itemsize = _ONNX_ITEMSIZE.get(tt.elem_type, 4)
    if not tt.HasField("shape"):
        return _Tensor(itemsize, None, tt.elem_type)
    shape = tuple(
        d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None for d in tt.shape.dim
    )
    return _Tensor(itemsize, shape, tt.elem_type)


def _tensor_table(model: Any, weights: Iterable[Any]) -> dict[str, _Tensor]:
    graph = model.graph
    table: dict[str, _Tensor] = {}
    for t in weights:
        dims = tuple(int(d) for d in t.dims)
        table[t.name] = _Tensor(_ONNX_ITEMSIZE.get(t.data_type, 4), dims, t.data_type)
    for vi in (*graph.value_info, *graph.input, *graph.output):
        tensor = _shape_of(vi)
        known = table.get(vi.name)
        if tensor is not None and (known is None or (known.numel is None and tensor.numel)):
            table[vi.name] = tensor
    for node in graph.node:  # Constant nodes carry their shape in the attribute
        if node.op_type == "Constant" and node.output:
            for attr in node.attribute:
                if attr.name == "value" and attr.HasField("t"):
                    t = attr.t
                    dims = tuple(int(d) for d in t.dims)
                    itemsize = _ONNX_ITEMSIZE.get(t.data_type, 4)
                    table.setdefault(node.output[0], _Tensor(itemsize, dims, t.data_type))
    return table


def _constants(model: Any) -> dict[str, np.ndarray]:
    """Values of the small initializers and ``Constant`` nodes (exporters such as
    torch.onnx write shape constants and buffers as ``Constant`` nodes)."""
    values: dict[str, np.ndarray] = {}
    for t in model.graph.initializer:
        if math.prod(t.dims) <= _FOLD_LIMIT:
            with contextlib.suppress(Exception):
                values[t.name] = onnx.numpy_helper.to_array(t)
    for node in model.graph.node:
        if node.op_type != "Constant" or len(node.output) != 1:
            continue
        for attr in node.attribute:
            with contextlib.suppress(Exception):
                if attr.name == "value" and attr.HasField("t"):
                    if math.prod(attr.t.dims) <= _FOLD_LIMIT:
                        values[node.output[0]] = onnx.numpy_helper.to_array(attr.t)
                elif attr.name in ("value_int", "value_ints", "value_float", "value_floats"):
                    value = onnx.helper.get_attribute_value(attr)
                    dtype = np.int64 if "int" in attr.name else np.float32
                    values[node.output[0]] = np.array(value, dtype)
    return values


def _evaluate(node: Any, inputs: list[np.ndarray], opsets: Any) -> list[np.ndarray] | None:
    """Run one node on constant inputs with onnx's reference evaluator; None on failure."""
    from onnx.reference import ReferenceEvaluator

    names = [f"in{i}" for i in range(len(inputs))]
    single = onnx.NodeProto()
    single.CopyFrom(node)
    del single.input[:]
    used = iter(names)
    single.input.extend(next(used) if name else "" for name in node.input)
    graph = onnx.helper.make_graph(
        [single],
        "fold",
        [
            onnx.helper.make_tensor_value_info(
                n, onnx.helper.np_dtype_to_tensor_dtype(v.dtype), v.shape
            )
            for n, v in zip(names, inputs, strict=True)
        ],
        [
            onnx.helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None)
            for o in node.output
        ],
    )
    try:
        model = onnx.helper.make_model(graph, opset_imports=list(opsets))
        results = ReferenceEvaluator(model).run(None, dict(zip(names, inputs, strict=True)))
    except Exception:
        return None
    return [np.asarray(r) for r in results]


def _attrs(node: Any) -> dict[str, Any]:
    return {
        a.name: onnx.helper.get_attribute_value(a)
        for a in node.attribute
        if a.type in (1, 2, 3, 6, 7)  # FLOAT, INT, STRING, FLOATS, INTS
    }


def _fold_node(
    node: Any, tensors: Mapping[str, _Tensor], values: Mapping[str, np.ndarray], opsets: Any
) -> list[np.ndarray] | None:
    """The values of a small shape-arithmetic node whose inputs are known, else None."""
    if node.domain not in ("", "ai.onnx") or any(a.type in (5, 10) for a in node.attribute):
        return None
    if node.op_type in ("Shape", "Size"):
        source = tensors.get(node.input[0]) if node.input else None
        if source is None or source.shape is None or source.numel is None:
            return None
        if node.op_type == "Size":
            return [np.array(source.numel, np.int64)]
        shape = np.array(source.shape, np.int64)
        attrs = _attrs(node)
        return [shape[attrs.get("start", 0) : attrs.get("end", len(shape))]]
    if node.op_type not in _FOLDABLE:
        return None
    present = [name for name in node.input if name]
    if not all(name in values for name in present):
        return None
    inputs = [values[name] for name in present]
    if sum(v.size for v in inputs) > _FOLD_LIMIT:
        return None
    results = _evaluate(node, inputs, opsets)
    if not results or any(r.size > _FOLD_LIMIT for r in results):
        return None
    return results


def _broadcast(*shapes: Shape) -> Shape:
    rank = max(len(s) for s in shapes)
    out: list[int | None] = []
    for axis in range(rank):
        dims = [s[axis - rank + len(s)] for s in shapes if axis - rank + len(s) >= 0]
        if any(d is None for d in dims):
            out.append(None)
        else:
            out.append(max(d for d in dims if d is not None))
    return tuple(out)


def _matmul_shape(a: Shape, b: Shape, trans_a: bool = False, trans_b: bool = False) -> Shape:
    if trans_a and len(a) >= 2:
        a = (*a[:-2], a[-1], a[-2])
    if trans_b and len(b) >= 2:
        b = (*b[:-2], b[-1], b[-2])
    if len(a) == 1 and len(b) == 1:
        return ()
    if len(a) == 1:
        return (*b[:-2], b[-1])
    if len(b) == 1:
        return a[:-1]
    return (*_broadcast(a[:-2], b[:-2]), a[-2], b[-1])


def _gqa_hidden(node: Any, query: Shape, attrs: Mapping[str, Any]) -> int | None:
    """N·h, GroupQueryAttention's output width: the query's, or with packed QKV (no key
    input) the query part of N·h + 2·N_kv·h (ContribOperators.md)."""
    width = query[2] if len(query) == 3 else None
    if width is None:
        return None
    if len(node.input) > 1 and node.input[1]:
        return width
    heads, kv_heads = int(attrs.get("num_heads", 0)), int(attrs.get("kv_num_heads", 0))
    if heads <= 0 or kv_heads <= 0:
        return None
    return width * heads // (heads + 2 * kv_heads)


def _gqa_present(
    node: Any, tensors: Mapping[str, _Tensor], output: _Tensor
) -> tuple[int, Shape] | None:
    """(elem type, shape) of GroupQueryAttention's present_key/value: (B, N_kv, L, h) with
    L = past length + S (past and present sharing one buffer cannot be seen in a graph;
    the trace's present shape corrects it)."""
    attrs = _attrs(node)
    heads, kv_heads = int(attrs.get("num_heads", 0)), int(attrs.get("kv_num_heads", 0))
    if output.shape is None or len(output.shape) != 3 or heads <= 0 or kv_heads <= 0:
        return None
    b, s, hidden = output.shape
    if b is None or s is None or hidden is None:
        return None
    past = tensors.get(node.input[3]) if len(node.input) > 3 and node.input[3] else None
    length, elem_type = s, output.elem_type
    if past is not None:
        if past.shape is None or len(past.shape) != 4 or past.shape[2] is None:
            return None
        length += past.shape[2]
        elem_type = past.elem_type or elem_type
    return elem_type, (b, kv_heads, length, hidden // heads)


def _declare_present(node: Any, tensors: dict[str, _Tensor], output: _Tensor, work: Any) -> bool:
    """Give GroupQueryAttention's present_key/value their shapes where still unknown."""
    present = _gqa_present(node, tensors, output)
    if present is None:
        return False
    elem_type, shape = present
    declared = False
    for name in node.output[1:3]:
        known = tensors.get(name) if name else None
        if name and (known is None or known.numel is None):
            tensors[name] = _Tensor(_ONNX_ITEMSIZE.get(elem_type, 4), shape, elem_type)
            work.graph.value_info.append(
                onnx.helper.make_tensor_value_info(name, elem_type or _FLOAT, shape)
            )
            declared = True
    return declared


def _contrib_output(node: Any, tensors: Mapping[str, _Tensor]) -> tuple[int, Shape] | None:
    """(elem type, shape) of the first output of a com.microsoft op onnx cannot infer."""
    inputs = [tensors.get(i) if i else None for i in node.input]
    shapes = [t.shape if t is not None else None for t in inputs]
    first = inputs[0] if inputs else None
    if first is None or first.shape is None:
        return None
    op, attrs = node.op_type, _attrs(node)
    if op in _SHAPE_OF_FIRST_INPUT:
        return first.elem_type, first.shape
    if op in ("QLinearAdd", "QLinearMul") and len(shapes) > 3 and shapes[3] is not None:
        return first.elem_type, _broadcast(first.shape, shapes[3])
    if op == "QLinearGlobalAveragePool" and len(first.shape) >= 3:
        if attrs.get("channels_last", 0):
            return first.elem_type, (
                first.shape[0],
                *(1,) * (len(first.shape) - 2),
                first.shape[-1],
            )
        return first.elem_type, (*first.shape[:2], *(1,) * (len(first.shape) - 2))
    if op == "MatMulNBits" and attrs.get("N"):
        return _FLOAT, (*first.shape[:-1], int(attrs["N"]))
    if op == "EmbedLayerNormalization" and len(first.shape) == 2 and len(shapes) > 2:
        table = shapes[2]
        if table is not None and len(table) == 2:
            return _FLOAT, (*first.shape, table[1])
        return None
    if op == "Attention" and len(first.shape) == 3:
        sizes = list(attrs.get("qkv_hidden_sizes") or [])
        w = shapes[1] if len(shapes) > 1 else None
        hidden = (
            sizes[2]
            if sizes
            else (w[1] // 3 if w is not None and len(w) == 2 and w[1] is not None else None)
        )
        return (first.elem_type, (*first.shape[:2], hidden)) if hidden else None
    if op == "MultiHeadAttention" and len(first.shape) == 3:
        value = shapes[2] if len(shapes) > 2 else None
        hidden = value[-1] if value is not None and len(value) == 3 else first.shape[2]
        return first.elem_type, (*first.shape[:2], hidden)
    if op == "QAttention" and len(first.shape) == 3:
        weight, bias = _at(inputs, 1), _at(inputs, 2)  # (H_in, 3·H); output (B, S, H), float
        if (
            weight is None
            or weight.shape is None
            or len(weight.shape) != 2
            or weight.shape[1] is None
        ):
            return None
        out_type = bias.elem_type if bias is not None and bias.elem_type else _FLOAT
        return out_type, (*first.shape[:2], weight.shape[1] // 3)
    if op == "GroupQueryAttention" and len(first.shape) == 3:
        hidden = _gqa_hidden(node, first.shape, attrs)
        return (first.elem_type, (*first.shape[:2], hidden)) if hidden else None
    operands = MATMUL_OPERANDS.get(op)
    if operands is not None and node.domain == "com.microsoft":
        b = _at(inputs, operands[1])
        if b is None or b.shape is None:
            return None
        shape = _matmul_shape(
            first.shape, b.shape, bool(attrs.get("transA", 0)), bool(attrs.get("transB", 0))
        )
        quantised_out = op == "QGemm" and len(node.input) > 7 and node.input[7]
        return (first.elem_type if quantised_out else _FLOAT), shape
    return None


def _shape_round(work: Any, tensors: dict[str, _Tensor], values: dict[str, np.ndarray]) -> bool:
    """Fold shape arithmetic and give contrib ops their output shapes; True when any changed.

    Folded nodes become ``Constant`` nodes in ``work`` (so the next inference round sees
    their values); contrib outputs are declared as ``value_info``.
    """
    changed = False
    nodes = []
    for node in work.graph.node:
        if node.op_type != "Constant" and node.output and not all(o in values for o in node.output):
            results = _fold_node(node, tensors, values, work.opset_import)
            if results is not None:
                for name, value in zip(node.output, results, strict=False):
                    values[name] = value
                    tensors[name] = _Tensor(value.dtype.itemsize, value.shape)
                changed = True
        if len(node.output) == 1 and node.output[0] in values and node.op_type != "Constant":
            tensor = onnx.numpy_helper.from_array(
                np.ascontiguousarray(values[node.output[0]]), node.output[0]
            )
            node = onnx.helper.make_node(
                "Constant", [], [node.output[0]], name=node.name, value=tensor
            )
        out = tensors.get(node.output[0]) if node.output else None
        if node.domain == "com.microsoft" and (out is None or out.numel is None):
            shaped = _contrib_output(node, tensors)
            if shaped is not None and None not in shaped[1]:
                elem_type, shape = shaped
                itemsize = _ONNX_ITEMSIZE.get(elem_type, 4)
                tensors[node.output[0]] = _Tensor(itemsize, shape, elem_type)
                work.graph.value_info.append(
                    onnx.helper.make_tensor_value_info(node.output[0], elem_type or _FLOAT, shape)
                )
                if (
                    node.op_type == "EmbedLayerNormalization"
                    and len(node.output) > 1
                    and node.output[1]
                ):  # mask_index: one int32 per sequence
                    tensors[node.output[1]] = _Tensor(4, shape[:1], 6)
                    work.graph.value_info.append(
                        onnx.helper.make_tensor_value_info(node.output[1], 6, shape[:1])
                    )
                changed = True
        out = tensors.get(node.output[0]) if node.output else None
        if node.op_type == "GroupQueryAttention" and out is not None:
            changed = _declare_present(node, tensors, out, work) or changed
        nodes.append(node)
    del work.graph.node[:]
    work.graph.node.extend(nodes)
    return changed


def _infer(model: Any) -> dict[str, _Tensor]:
    """Shapes of every tensor of ``model``: onnx shape inference, repeated while it helps.

    onnx's inference does not evaluate chains such as Shape -> Gather -> Slice (position
    ids sliced to the sequence length), so their outputs, and everything broadcast with
    them, keep unknown dims; nor does it know most com.microsoft ops (QLinearAdd,
    QGemm...). Between rounds, small nodes whose inputs are known constants are
    evaluated with onnx's reference evaluator and turned into ``Constant`` nodes, and
    contrib ops get their output shapes declared; then inference runs again.
    """
    work = _skeleton(model)
    values = _constants(work)
    tensors: dict[str, _Tensor] = {}
    for _ in range(_INFER_ROUNDS):
        try:
            inferred = onnx.shape_inference.infer_shapes(
                work, check_type=False, strict_mode=False, data_prop=True
            )
        except Exception:  # inference failing on one exotic op must not lose the rest
            inferred = work
        tensors = _tensor_table(inferred, model.graph.initializer)
        if not _shape_round(work, tensors, values):
            break
    return tensors


def _node_keys(nodes: Iterable[Any]) -> Iterator[tuple[str, Any]]:
    """(name, node); unnamed nodes get ONNX Runtime's name for them, ``<op_type>_<index>``;
    a repeated name gets ``#<index>``."""
    seen: set[str] = set()
    for index, node in enumerate(nodes):
        name = node.name or f"{node.op_type}_{index}"
        if name in seen:
            name = f"{name}#{index}"
        seen.add(name)
        yield name, node


# ops that read only the part of their data input that they output
_PARTIAL_READERS = frozenset({"Gather", "GatherElements", "GatherND", "Slice"})


def _node_bytes(
    node: Any, inputs: Sequence[_Tensor | None], outputs: Sequence[_Tensor | None]
) -> int:
    read: dict[str, int] = {}
    for index, (name, tensor) in enumerate(zip(node.input, inputs, strict=True)):
        if name and tensor is not None:
            nbytes = tensor.nbytes
            if index == 0 and node.op_type in _PARTIAL_READERS and outputs and outputs[0]:
                nbytes = min(nbytes, outputs[0].nbytes)  # rows gathered, not the whole table
            read[name] = max(read.get(name, 0), nbytes)
    return sum(read.values()) + sum(t.nbytes for t in outputs if t is not None)


def op_costs(model: str | os.PathLike[str] | Any, dims: Mapping[str, int]) -> dict[str, OpCost]:
    """FLOPs and bytes of every node of ``model`` (a path or ``onnx.ModelProto``), by node name.

    ``dims`` fixes the symbolic dims of the graph inputs (see
    :func:`pytest_inferperf.onnxrt.sessions.default_dims`); an unnamed dim is ``"<input>:<axis>"``.
    Raises :class:`~pytest_inferperf.onnxrt.sessions.InputSpecError` naming any input dim left
    symbolic and :class:`~pytest_inferperf.onnxrt.sessions.ModelError` when the model cannot be
    loaded. The caller's ``ModelProto`` is not modified. Nodes inside subgraphs (If, Loop)
    are not counted; unnamed nodes are keyed ``"<op_type>_<index>"`` (the name ONNX Runtime
    gives them, so its profiler's names match).
    """
    proto = _load_model(model)
    work = _skeleton(proto)
    _fix_dims(work, dims)
    tensors = _infer(work)
    keyed = list(_node_keys(proto.graph.node))
    producer = {out: name for name, node in keyed for out in node.output if out}
    costs: dict[str, OpCost] = {}
    for name, node in keyed:
        inputs = [tensors.get(i) if i else None for i in node.input]
        outputs = [tensors.get(o) if o else None for o in node.output]
        flops = _flops(node.op_type, inputs, outputs, _attrs(node))
        complete = all(
            t is not None and t.numel is not None
            for i, t in zip(node.input, inputs, strict=True)
            if i
        ) and all(t is not None and t.numel is not None for t in outputs[:1])
        first = outputs[0] if outputs else None
        costs[name] = OpCost(
            name,
            node.op_type,
            flops,
            _node_bytes(node, inputs, outputs),
            complete=complete,
            output_elements=(first.numel or 0) if first is not None else 0,
            producers=tuple(dict.fromkeys(producer[i] for i in node.input if i in producer)),
            outputs=tuple(o for o in node.output if o),
        )
    return costs


# --------------------------------------------------------------------------- ceilings


@dataclass(frozen=True)
class Ceilings:
    """This machine's roofs: peak compute (GFLOP/s) and memory bandwidth (GB/s, 1e9 bytes/s)."""

    peak_gflops: float
    bandwidth_gbs: float
    threads: int
    method: str

    def __post_init__(self) -> None:
        for name in ("peak_gflops", "bandwidth_gbs"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"Ceilings.{name} must be a positive finite number; got {value!r}")
        if isinstance(self.threads, bool) or not isinstance(self.threads, int) or self.threads < 1:
            raise ValueError(f"Ceilings.threads must be a positive int; got {self.threads!r}")

    @property
    def ridge_intensity(self) -> float:
        """FLOP/byte where the memory roof meets the compute roof."""
        return self.peak_gflops / self.bandwidth_gbs

    def attainable_gflops(self, intensity: float) -> float:
        """min(peak, bandwidth · intensity)."""
        return min(self.peak_gflops, self.bandwidth_gbs * intensity)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ridge_intensity"] = self.ridge_intensity
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Ceilings:
        return cls(
            float(data["peak_gflops"]),
            float(data["bandwidth_gbs"]),
            int(data["threads"]),
            str(data["method"]),
        )


_BLAS_THREAD_FUNCS = (
    ("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
    ("scipy_openblas_get_num_threads", "scipy_openblas_set_num_threads"),
    ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
    ("openblas_get_num_threads", "openblas_set_num_threads"),
)


def _openblas() -> tuple[Any, Any] | None:
    """numpy's OpenBLAS (get, set) thread functions, found among the loaded libraries."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return None
    paths = sorted(
        {
            line.split()[-1]
            for line in maps.splitlines()
            if "openblas" in line.lower() and line.split()[-1].startswith("/")
        }
    )
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for get_name, set_name in _BLAS_THREAD_FUNCS:
            getter, setter = getattr(lib, get_name, None), getattr(lib, set_name, None)
            if getter is not None and setter is not None:
                getter.restype = ctypes.c_int
                setter.argtypes = [ctypes.c_int]
                return getter, setter
    return None


@contextlib.contextmanager
def _blas_threads(threads: int) -> Iterator[str]:
    """Run numpy's BLAS with ``threads`` threads inside the block; yields a description."""
    funcs = _openblas()
    if funcs is None:
        yield "BLAS thread count not controlled"
        return
    getter, setter = funcs
    previous = int(getter())
    setter(threads)
    try:
        yield f"OpenBLAS, {threads} thread{'s' if threads != 1 else ''}"
    finally:
        setter(previous)


def _last_level_cache_bytes() -> int:
    from ..pmu.cpu import SystemPaths, read_caches

    try:
        caches = read_caches(SystemPaths())
    except OSError:
        caches = ()
    sizes = [c.size_bytes for c in caches if c.type in ("Data", "Unified")]
    return max(sizes, default=32 << 20)


def _compute_probe(budget_s: float, threads: int) -> tuple[float, str]:
    n = 256 if threads == 1 else min(1024, 256 * math.ceil(math.sqrt(threads)))
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    out = np.empty_like(a)
    best, reps = math.inf, 0
    with _blas_threads(threads) as blas:
        deadline = time.perf_counter() + budget_s
        while reps < 3 or (time.perf_counter() < deadline and reps < 500):
            start = time.perf_counter()
            np.matmul(a, b, out=out)
            best = min(best, time.perf_counter() - start)
            reps += 1
    gflops = 2 * n**3 / best / 1e9
    return gflops, f"float32 matmul {n}x{n}x{n} with numpy ({blas}), best of {reps}"


def _copy_once(dst: np.ndarray, src: np.ndarray, threads: int) -> float:
    if threads == 1:
        start = time.perf_counter()
        np.copyto(dst, src)
        return time.perf_counter() - start
    chunks = np.array_split(np.arange(src.size), threads)
    bounds = [(int(c[0]), int(c[-1]) + 1) for c in chunks if c.size]
    workers = [
        threading.Thread(target=np.copyto, args=(dst[lo:hi], src[lo:hi])) for lo, hi in bounds
    ]
    start = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return time.perf_counter() - start


def _bandwidth_probe(budget_s: float, threads: int) -> tuple[float, str]:
    llc = _last_level_cache_bytes()
    nbytes = min(max(2 * llc, 32 << 20), 256 << 20)  # source + destination >= 4x the LLC
    src = np.empty(nbytes // 4, np.float32)
    src.fill(1.0)  # touch every page before timing
    dst = np.empty_like(src)
    dst.fill(0.0)
    best, reps = math.inf, 0
    deadline = time.perf_counter() + budget_s
    while reps < 3 or (time.perf_counter() < deadline and reps < 20):
        best = min(best, _copy_once(dst, src, threads))
        reps += 1
    gbs = 2 * src.nbytes / best / 1e9
    plural = "s" if threads != 1 else ""
    return gbs, (
        f"copy between two {src.nbytes >> 20} MiB float32 arrays (last-level cache "
        f"{llc >> 20} MiB) "
        f"with {threads} thread{plural}, best of {reps}, counting bytes read + written "
        "(write-allocate traffic not counted, as in STREAM)"
    )


def measure_ceilings(*, seconds: float = 0.3, threads: int = 1) -> Ceilings:
    """Measure this machine's compute and memory-bandwidth roofs in about ``seconds``.

    Compute: the best time of repeated float32 ``n x n`` matmuls (n = 256 for one thread:
    three matrices of 256 KiB fit a typical L2), GFLOP/s = 2n³/t, with numpy's OpenBLAS
    held to ``threads`` threads. Memory: the best time of copying one array into another,
    each twice the last-level cache (32-256 MiB), so the pair is at least 4x the cache;
    GB/s = (bytes read + bytes written) / t, split over ``threads`` Python threads. Each
    probe gets half of ``seconds`` (and at least three repetitions); with the allocation
    the whole call takes well under a second. Use the thread count of the ONNX Runtime
    session being analysed, and measure once per session, not per test.
    """
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive int; got {threads!r}")
    if not (isinstance(seconds, (int, float)) and math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"seconds must be a positive number; got {seconds!r}")
    peak, compute = _compute_probe(seconds / 2, threads)
    bandwidth, memory = _bandwidth_probe(seconds / 2, threads)
    return Ceilings(peak, bandwidth, threads, f"compute: {compute}; memory: {memory}")


# --------------------------------------------------------------------------- points


@dataclass(frozen=True)
class RooflinePoint:
    """One profiled operator on the roofline.

    ``intensity`` is FLOP/byte, ``time_us`` the operator's mean time per run,
    ``achieved_gflops`` flops / time (``None`` when the profiler timed it at 0 µs),
    ``attainable_gflops`` min(peak, bandwidth · intensity), ``bound`` ``"memory"`` left of
    the ridge point and ``"compute"`` at or right of it. ``matched_by`` says where the
    cost came from: ``"name"`` (the model node of that name, or the name ONNX Runtime
    derived from it) or ``"shapes"`` (the operator's own shapes in the profiler trace,
    for nodes ONNX Runtime fused or renamed).
    """

    node: str
    op_type: str
    flops: int
    bytes: int
    intensity: float
    time_us: float
    achieved_gflops: float | None
    attainable_gflops: float
    bound: str
    matched_by: str = "name"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RooflinePoint:
        achieved = data.get("achieved_gflops")
        return cls(
            node=str(data["node"]),
            op_type=str(data["op_type"]),
            flops=int(data["flops"]),
            bytes=int(data["bytes"]),
            intensity=float(data["intensity"]),
            time_us=float(data["time_us"]),
            achieved_gflops=None if achieved is None else float(achieved),
            attainable_gflops=float(data["attainable_gflops"]),
            bound=str(data["bound"]),
            matched_by=str(data.get("matched_by", "name")),
        )


def _field(op: OperatorStat | Mapping[str, Any], key: str, default: Any = None) -> Any:
    if isinstance(op, Mapping):
        return op.get(key, default)
    return getattr(op, key, default)


def _time_us(op: OperatorStat | Mapping[str, Any]) -> float | None:
    mean = _field(op, "mean_us")
    if mean is None:
        total, calls = _field(op, "total_us"), _field(op, "calls")
        if total is None or not calls:
            return None
        mean = float(total) / float(calls)
    try:
        mean = float(mean)
    except (TypeError, ValueError):
        return None
    return mean if math.isfinite(mean) and mean >= 0 else None


_TRACE_SHAPE = re.compile(r"^\s*([A-Za-z0-9_]+)\[([^\]]*)\]\s*$")


def _trace_tensor(text: str) -> _Tensor | None:
    """``"float[1,128,384]"`` -> a tensor; ``None`` when unreadable."""
    match = _TRACE_SHAPE.match(str(text))
    if not match:
        return None
    itemsize = _TRACE_ITEMSIZE.get(match.group(1).lower())
    if itemsize is None:
        return None
    dims: list[int | None] = []
    for part in filter(None, (p.strip() for p in match.group(2).split(","))):
        try:
            value = int(part)
        except ValueError:
            value = -1
        dims.append(value if value >= 0 else None)
    return _Tensor(itemsize, tuple(dims))


def _cost_from_trace(op: OperatorStat | Mapping[str, Any]) -> OpCost | None:
    """An operator's cost from the shapes in the profiler trace (the shapes that ran)."""
    op_type, node = str(_field(op, "op_type", "")), str(_field(op, "node", ""))
    inputs = [_trace_tensor(s) for s in _field(op, "input_shapes", ()) or ()]
    outputs = [_trace_tensor(s) for s in _field(op, "output_shapes", ()) or ()]
    if not outputs or outputs[0] is None or not is_costed(op_type):
        return None
    if op_type in MATMUL_OPERANDS and len(inputs) > 1:
        # ORT leaves pre-packed constant inputs out of the trace, so the inputs shift:
        # a FusedGemm traced as (A, C) has its bias where B would be
        b_index = MATMUL_OPERANDS[op_type][1]
        b = _at(inputs, b_index)
        if (
            b is not None
            and b.shape is not None
            and len(b.shape) < 2
            and op_type in ("Gemm", "FusedGemm", "MatMulNBits")
        ):
            inputs = [inputs[0], None, *inputs[1:]]
    if op_type in ("Attention", "QAttention") and len(inputs) > 1:
        w = inputs[1]
        if w is not None and w.shape is not None and len(w.shape) < 2:
            inputs = [inputs[0], None, *inputs[1:]]  # the QKV weight was pre-packed
    flops = _flops(op_type, inputs, outputs, None)
    if flops == 0 and op_type in (*CONV_OPERANDS, *MATMUL_OPERANDS, *ATTENTION_OPS):
        return None  # a matmul or conv whose shapes the trace does not show
    # a float while it sums: the pre-packed weights below may have fractional item sizes
    nbytes: float = sum(t.nbytes for t in (*inputs, *outputs) if t is not None)
    x = _at(inputs, 0)
    if op_type in ("Attention", "QAttention") and _at(inputs, 1) is None and x and x.shape:
        # the pre-packed QKV weight (H_in, 3·H) is left out of the trace: add its bytes
        hidden, width = x.shape[-1], outputs[0].shape[-1] if outputs[0].shape else None
        if hidden is not None and width is not None:
            nbytes += hidden * 3 * width * (1 if op_type == "QAttention" else x.itemsize)
    if op_type in MATMUL_OPERANDS:
        # ORT pre-packs constant B and leaves it out of the trace: add K·N weight bytes.
        _, b_index, _ = MATMUL_OPERANDS[op_type]
        b, a, out = _at(inputs, b_index), _at(inputs, 0), outputs[0]
        if (b is None or b.shape is None or len(b.shape) < 2) and a and a.shape and out.shape:
            k = _matmul_k(a.shape, out.shape, None)
            n = out.shape[-1] if out.shape else None
            if k is not None and n is not None:
                itemsize = (
                    0.5
                    if op_type == "MatMulNBits"
                    else 1
                    if op_type.startswith(QUANTISED_PREFIXES)
                    else a.itemsize
                )
                nbytes += math.ceil(k * n * itemsize)
    if nbytes <= 0:
        return None
    first = outputs[0]
    return OpCost(
        node,
        op_type,
        flops,
        int(nbytes),
        complete=first.numel is not None,
        output_elements=first.numel or 0,
    )


def _family(op_type: str) -> str:
    if op_type in MATMUL_OPERANDS or "MatMul" in op_type or "Gemm" in op_type:
        return "matmul"
    for family in ("Conv", "LayerNormalization", "Gelu", "Softmax", "Pool", "Attention"):
        if family in op_type:
            return family
    return op_type


def _is_nchwc(node: str) -> bool:
    """ONNX Runtime's NCHWc layout (x86): channels padded to the SIMD block (8 on AVX2,
    16 on AVX-512) in the trace's shapes, so only the graph's shapes are logical."""
    return node.endswith("_nchwc") or "_nchwc_" in node


def _with_extra(cost: OpCost, node: str, op_type: str, flops: int, nbytes: int = 0) -> OpCost:
    return OpCost(
        node,
        op_type,
        cost.flops + flops,
        cost.bytes + nbytes,
        complete=cost.complete,
        output_elements=cost.output_elements,
        producers=cost.producers,
        outputs=cost.outputs,
    )


def _named(costs: Mapping[str, OpCost], name: str) -> OpCost | None:
    """The node called ``name``, else the node whose output tensor is called ``name``."""
    cost = costs.get(name)
    if cost is not None:
        return cost
    return next((c for c in costs.values() if name in c.outputs), None)


def _model_match(
    costs: Mapping[str, OpCost], op: OperatorStat | Mapping[str, Any]
) -> tuple[OpCost, str, tuple[str, ...]] | None:
    """The model node(s) a profiled operator ran, costed from the graph: (cost, how).

    ``how`` is ``"name"`` (the node of that name or of the name ORT derived from it) or
    ``"fused"`` (ORT named the fused node after an op it absorbed, e.g. a Conv + Clip
    named ``relu6_7_nchwc`` after the Clip: the Conv producing the Clip's input plus the
    Clip itself). The third item names the model nodes the operator covers.
    """
    node, op_type = str(_field(op, "node", "")), str(_field(op, "op_type", ""))
    for name in node_name_variants(node):
        cost = _named(costs, name)
        if cost is None:
            continue
        if not op_type or _family(cost.op_type) == _family(op_type):
            extra = 0
            if node.startswith("fused ") and "MatMulAddFusion" in node:
                extra = cost.output_elements  # the Add became the Gemm's bias
            if extra:
                return _with_extra(cost, node, cost.op_type, extra), "fused", (cost.node,)
            return cost, "name", (cost.node,)
        for producer in cost.producers:  # Conv + activation, named after the activation
            base = costs.get(producer)
            if base is not None and _family(base.op_type) == _family(op_type):
                fused = OpCost(
                    node,
                    base.op_type,
                    base.flops + cost.flops,
                    base.bytes,
                    complete=base.complete and cost.complete,
                    output_elements=cost.output_elements,
                )
                return fused, "fused", (base.node, cost.node)
    return None


# a matmul, conv or attention whose shapes stayed unknown has no cost, never 0 FLOPs
_COMPUTE_FAMILIES = frozenset({"matmul", "Conv", "Attention"})

CROSS_CHECK_TOLERANCE = 0.25
"""Graph and trace FLOPs further apart than this (relative) disagree: the trace wins."""


def _agree(a: int, b: int) -> bool:
    return abs(a - b) <= CROSS_CHECK_TOLERANCE * max(a, b, 1)


@dataclass(frozen=True)
class _Placement:
    cost: OpCost | None
    how: str  # "name" | "fused" | "shapes"; "" when not placed
    time_us: float | None
    reason: str = ""  # why not placed
    checked: bool | None = None  # graph and trace agreed (None: only one was available)
    covers: tuple[str, ...] = ()  # the model nodes whose work this operator did


def _placement(costs: Mapping[str, OpCost], op: OperatorStat | Mapping[str, Any]) -> _Placement:
    """Where an operator's cost comes from, or why it has none.

    The graph (shapes inferred for the dims that ran) is used when it knows every shape
    of the node, cross-checked against the trace's own shapes; when the two disagree by
    more than :data:`CROSS_CHECK_TOLERANCE` the trace (what really ran) wins. NCHWc nodes
    use the graph (logical channels) whenever it can, since the trace shows padded ones.
    """
    op_type = str(_field(op, "op_type", ""))
    node = str(_field(op, "node", ""))
    time_us = _time_us(op)
    if time_us is None:
        return _Placement(None, "", None, "no time")
    trace = _cost_from_trace(op)
    match = _model_match(costs, op)
    if match is not None:
        cost, how, covers = match
        if cost.complete and cost.costed and cost.bytes > 0:
            if trace is None or _is_nchwc(node):
                return _Placement(cost, how, time_us, covers=covers)
            if _agree(cost.flops, trace.flops):
                return _Placement(cost, how, time_us, checked=True, covers=covers)
            return _Placement(trace, "shapes", time_us, checked=False, covers=covers)
    if trace is not None:
        return _Placement(trace, "shapes", time_us, covers=() if match is None else match[2])
    if (
        match is not None
        and match[0].costed
        and match[0].bytes > 0
        and (match[0].flops > 0 or _family(match[0].op_type) not in _COMPUTE_FAMILIES)
    ):
        return _Placement(match[0], match[1], time_us, covers=match[2])
    if op_type and not is_costed(op_type):
        return _Placement(None, "", time_us, "no FLOP formula for this op type")
    return _Placement(None, "", time_us, "shapes unknown")


def _place(
    costs: Mapping[str, OpCost], op: OperatorStat | Mapping[str, Any]
) -> tuple[OpCost, str, float] | None:
    """(cost, how it was found, mean µs) for an operator that can go on the roofline."""
    placed = _placement(costs, op)
    if placed.cost is None or placed.time_us is None:
        return None
    return placed.cost, placed.how, placed.time_us


def unmatched_operators(
    costs: Mapping[str, OpCost], operators: Sequence[OperatorStat | Mapping[str, Any]]
) -> list[str]:
    """Profiled operators :func:`roofline_points` could not place (no cost found), by name."""
    return [str(_field(op, "node", "?")) for op in operators if _place(costs, op) is None]


def _share(op: OperatorStat | Mapping[str, Any], total_us: float) -> float:
    share = _field(op, "share")
    try:
        value = float(share)
    except (TypeError, ValueError):
        total = _field(op, "total_us")
        try:
            return float(total) / total_us if total_us > 0 else 0.0
        except (TypeError, ValueError):
            return 0.0
    return value if math.isfinite(value) else 0.0


def uncosted_operators(
    costs: Mapping[str, OpCost], operators: Sequence[OperatorStat | Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The profiled operators with no cost, by op type: nodes, names, share of time, why.

    Share is of the summed operator time (the profiler's ``share``). Largest share first.
    These are never counted as data movement: their work is unknown.
    """
    total_us = 0.0
    for op in operators:
        with contextlib.suppress(TypeError, ValueError):
            total_us += float(_field(op, "total_us") or 0.0)
    groups: dict[str, dict[str, Any]] = {}
    for op in operators:
        placed = _placement(costs, op)
        if placed.cost is not None or placed.reason == "no time":
            continue
        op_type = str(_field(op, "op_type", "") or "?")
        row = groups.setdefault(
            op_type, {"op_type": op_type, "nodes": [], "share": 0.0, "reason": placed.reason}
        )
        row["nodes"].append(str(_field(op, "node", "?")))
        row["share"] += _share(op, total_us)
    return sorted(groups.values(), key=lambda r: (-r["share"], r["op_type"]))


def cross_check(
    costs: Mapping[str, OpCost], operators: Sequence[OperatorStat | Mapping[str, Any]]
) -> dict[str, Any]:
    """How the graph's costs compared with the trace's shapes: agreed, disagreed (names)."""
    agreed, disagreed = 0, []
    for op in operators:
        placed = _placement(costs, op)
        if placed.checked is True:
            agreed += 1
        elif placed.checked is False:
            disagreed.append(str(_field(op, "node", "?")))
    return {"agreed": agreed, "disagreed": disagreed}


# ops ONNX Runtime folds into a convolution's epilogue (NCHWc "Sum" input, activations)
_EPILOGUE_OPS = frozenset(
    {"Add", "Sum", "Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid", "Tanh"}
)


def _epilogues(costs: Mapping[str, OpCost], placements: Sequence[_Placement]) -> dict[int, int]:
    """FLOPs of graph nodes ORT folded into a placed convolution, by placement index.

    A residual Add and the activation after it that were not timed on their own were run
    by the conv that produced the Add's later input (x86 NCHWc convs take it as a "Sum"
    input); any other node that was not timed was folded away or fused elsewhere.
    """
    covered: dict[str, int] = {}
    for index, placed in enumerate(placements):
        for name in placed.covers:
            covered.setdefault(name, index)
    order = {name: i for i, name in enumerate(costs)}
    extra: dict[int, int] = {}
    for name, cost in costs.items():
        if name in covered or cost.op_type not in _EPILOGUE_OPS or not cost.flops:
            continue
        current, seen = cost, {name}
        while current.op_type in _EPILOGUE_OPS and current.producers:
            parent = max(current.producers, key=lambda n: order.get(n, -1))
            if parent in covered or parent in seen or parent not in costs:
                break
            seen.add(parent)
            current = costs[parent]
        producer = (
            max(current.producers, key=lambda n: order.get(n, -1)) if current.producers else None
        )
        owner_index = covered.get(producer) if producer is not None else None
        if owner_index is None:
            continue
        owner = placements[owner_index]
        if owner.cost is not None and _family(owner.cost.op_type) == "Conv":
            extra[owner_index] = extra.get(owner_index, 0) + cost.flops
    return extra


def roofline_points(
    costs: Mapping[str, OpCost],
    operators: Sequence[OperatorStat | Mapping[str, Any]],
    ceilings: Ceilings,
) -> list[RooflinePoint]:
    """Join ``costs`` (:func:`op_costs`) with profiled ``operators`` into roofline points.

    ``operators`` are :class:`~pytest_inferperf.onnxrt.sessions.OperatorStat` objects or their
    ``to_dict()`` form (as stored in ``Profile.operators``). ONNX Runtime renames nodes it
    optimises: an operator is matched to the model node of the same name, else to the
    name it was derived from (``conv_6_quant_token_1`` -> ``conv_6_quant``,
    ``relu6_7_nchwc`` -> ``relu6_7``, ``attn_qk_74/MatMulScaleFusion/`` -> ``attn_qk_74``,
    ``fused mm/MatMulAddFusion`` -> ``mm``) when the op types agree
    (``DynamicQuantizeMatMul`` matches ``MatMulInteger``); a node named after an op it
    absorbed (Conv + Clip named after the Clip) is costed as both graph nodes. The graph's
    cost is cross-checked with the operator's own shapes in the trace, which cost what the
    graph cannot (fused ``Gelu``, ``SkipLayerNormalization``, shapes the graph left
    unknown) and win when the two disagree. NCHWc nodes keep the graph's logical channel
    counts, so the result does not depend on the CPU's SIMD width. Operators that cannot
    be costed are left out: :func:`unmatched_operators` names them,
    :func:`uncosted_operators` gives their share of time. Order: the operators' order.
    """
    points = []
    ridge = ceilings.ridge_intensity
    placements = [_placement(costs, op) for op in operators]
    epilogues = _epilogues(costs, placements)
    for index, (op, placed) in enumerate(zip(operators, placements, strict=True)):
        if placed.cost is None or placed.time_us is None:
            continue
        cost, how, time_us = placed.cost, placed.how, placed.time_us
        if index in epilogues:
            cost = _with_extra(cost, cost.node, cost.op_type, epilogues[index])
            how = "fused"
        intensity = cost.flops / cost.bytes
        points.append(
            RooflinePoint(
                node=str(_field(op, "node", cost.node)),
                op_type=str(_field(op, "op_type", "") or cost.op_type),
                flops=cost.flops,
                bytes=cost.bytes,
                intensity=intensity,
                time_us=time_us,
                achieved_gflops=cost.flops / (time_us * 1e3) if time_us > 0 else None,
                attainable_gflops=ceilings.attainable_gflops(intensity),
                bound="memory" if intensity < ridge else "compute",
                matched_by=how,
            )
        )
    return points


def roofline_to_dict(
    ceilings: Ceilings,
    points: Sequence[RooflinePoint],
    *,
    unmatched: Sequence[str] = (),
    uncosted: Sequence[Mapping[str, Any]] = (),
    checked: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """JSON-safe summary for ``Profile.roofline``: ceilings, points and totals.

    ``summary.achieved_gflops`` is all counted FLOPs over all placed operators' time;
    ``memory_bound_time_share`` the fraction of that time spent in memory-bound operators;
    ``uncosted`` (from :func:`uncosted_operators`) the op types with no cost and their
    share of operator time; ``cross_check`` (from :func:`cross_check`) how many graph
    costs the trace's shapes confirmed.
    """
    total_us = sum(p.time_us for p in points)
    total_flops = sum(p.flops for p in points)
    memory_us = sum(p.time_us for p in points if p.bound == "memory")
    uncosted_rows = [dict(r) for r in uncosted]
    summary: dict[str, Any] = {
        "operators": len(points),
        "memory_bound": sum(1 for p in points if p.bound == "memory"),
        "compute_bound": sum(1 for p in points if p.bound == "compute"),
        "matched_by_shapes": sum(1 for p in points if p.matched_by == "shapes"),
        "fused": sum(1 for p in points if p.matched_by == "fused"),
        "unmatched": len(unmatched),
        "unmatched_operators": [str(u) for u in unmatched],
        "uncosted": uncosted_rows,
        "uncosted_time_share": sum(float(r.get("share") or 0.0) for r in uncosted_rows),
        "time_us": total_us,
        "gflop": total_flops / 1e9,
        "achieved_gflops": total_flops / (total_us * 1e3) if total_us > 0 else None,
        "memory_bound_time_share": memory_us / total_us if total_us > 0 else None,
    }
    if checked is not None:
        summary["cross_check"] = dict(checked)
    return {
        "ceilings": ceilings.to_dict(),
        "points": [p.to_dict() for p in points],
        "summary": summary,
    }


def roofline_summary(
    costs: Mapping[str, OpCost],
    operators: Sequence[OperatorStat | Mapping[str, Any]],
    ceilings: Ceilings,
) -> dict[str, Any]:
    """:func:`roofline_points` + :func:`roofline_to_dict` with every list filled in."""
    return roofline_to_dict(
        ceilings,
        roofline_points(costs, operators, ceilings),
        unmatched=unmatched_operators(costs, operators),
        uncosted=uncosted_operators(costs, operators),
        checked=cross_check(costs, operators),
    )


def uncosted_text(uncosted: Sequence[Mapping[str, Any]], limit: int = 4) -> str:
    """``"Resize 12% (2 nodes), MyOp 3%"``: the uncosted op types and their share of time."""
    parts = []
    for row in list(uncosted)[:limit]:
        nodes = len(row.get("nodes") or ())
        share = float(row.get("share") or 0.0)
        parts.append(
            f"{row.get('op_type')} {share:.0%}" + (f" ({nodes} nodes)" if nodes > 1 else "")
        )
    if len(uncosted) > limit:
        parts.append(f"{len(uncosted) - limit} more")
    return ", ".join(parts)


def roofline_from_dict(data: Mapping[str, Any]) -> tuple[Ceilings, list[RooflinePoint]]:
    """Inverse of :func:`roofline_to_dict` (for re-drawing a stored ``Profile.roofline``)."""
    return (
        Ceilings.from_dict(data["ceilings"]),
        [RooflinePoint.from_dict(p) for p in data.get("points", [])],
    )


# --------------------------------------------------------------------------- SVG


def _hover(p: RooflinePoint) -> str:
    achieved = "-" if p.achieved_gflops is None else f"{p.achieved_gflops:.3g}"
    return (
        f"{p.node} ({p.op_type})\n"
        f"{achieved} GFLOP/s achieved of {p.attainable_gflops:.3g} attainable\n"
        f"intensity {p.intensity:.3g} FLOP/byte, {p.bound}-bound\n"
        f"{p.flops / 1e6:.3g} MFLOP, {p.bytes / 1e6:.3g} MB, {p.time_us:.1f} µs per run"
    )


def _skipped_note(skipped: Sequence[RooflinePoint]) -> str:
    """``"7 operator(s) not drawn: 0 FLOPs (data movement: Reshape 4, Gather 2), 1 timed
    at 0 µs"``."""
    zero = Counter(p.op_type for p in skipped if p.flops == 0)
    instant = sum(1 for p in skipped if p.flops > 0)
    parts = []
    if zero:
        kinds = ", ".join(f"{op} {n}" for op, n in zero.most_common(4))
        more = len(zero) - 4
        parts.append(f"0 FLOPs ({kinds}{f', {more} more op types' if more > 0 else ''})")
    if instant:
        parts.append(f"{instant} timed at 0 µs")
    return f"{len(skipped)} operator(s) not drawn: {'; '.join(parts)}"


def render_roofline_svg(
    ceilings: Ceilings,
    points: Sequence[RooflinePoint],
    *,
    title: str,
    uncosted: Sequence[Mapping[str, Any]] = (),
) -> str:
    """A self-contained SVG roofline: log-log axes, both roofs, one dot per operator.

    x: arithmetic intensity (FLOP/byte); y: GFLOP/s. Dot area is proportional to the
    operator's time, colour is its op type, hovering shows node, op type, achieved and
    attainable GFLOP/s and intensity. Operators with no FLOPs or no measurable time cannot
    sit on log axes; a note under the plot counts them by op type, and names the
    ``uncosted`` op types (:func:`uncosted_operators`) with their share of time.
    """
    placed = [p for p in points if p.flops > 0 and p.achieved_gflops]
    ridge = ceilings.ridge_intensity
    intensities = [p.intensity for p in placed] + [ridge / 4, ridge * 4]
    x_axis = Axis.fit("arithmetic intensity (FLOP/byte)", intensities, log=True)
    low_roof = ceilings.bandwidth_gbs * x_axis.lo
    ys = [p.achieved_gflops for p in placed if p.achieved_gflops] + [
        ceilings.peak_gflops * 2,
        min(low_roof, ceilings.peak_gflops / 100),
    ]
    y_axis = Axis.fit("performance (GFLOP/s)", ys, log=True)
    skipped = len(points) - len(placed)
    subtitle = (
        f"peak {ceilings.peak_gflops:.3g} GFLOP/s, bandwidth {ceilings.bandwidth_gbs:.3g} GB/s, "
        f"ridge {ridge:.3g} FLOP/byte, {ceilings.threads} thread"
        f"{'s' if ceilings.threads != 1 else ''}; dot area ∝ operator time"
    )
    chart = Chart(
        title=title,
        x=x_axis,
        y=y_axis,
        subtitle=subtitle,
        description=f"ceilings: {ceilings.method}",
    )
    if skipped:
        chart.notes.append(_skipped_note([p for p in points if p not in placed]))
    if uncosted:
        chart.notes.append(f"not costed (no FLOP count; not drawn): {uncosted_text(uncosted)}")
    chart.notes.append(f"ceilings: {ceilings.method}")
    x_start = max(x_axis.lo, y_axis.lo / ceilings.bandwidth_gbs)
    chart.polyline(
        [
            (x_start, ceilings.bandwidth_gbs * x_start),
            (ridge, ceilings.peak_gflops),
            (x_axis.hi, ceilings.peak_gflops),
        ],
        stroke="#222222",
        width=2.2,
    )
    chart.label(
        x_axis.hi,
        ceilings.peak_gflops,
        f"peak {ceilings.peak_gflops:.3g} GFLOP/s",
        dx=-6,
        dy=-6,
        anchor="end",
    )
    label_x = x_start * (ridge / x_start) ** 0.15  # a little way up the memory roof
    if label_x < ridge:
        slope = chart.angle(
            (label_x, ceilings.bandwidth_gbs * label_x), (ridge, ceilings.peak_gflops)
        )
        chart.label(
            label_x,
            ceilings.bandwidth_gbs * label_x,
            f"{ceilings.bandwidth_gbs:.3g} GB/s",
            dx=0,
            dy=-6,
            rotate=slope,
        )
    colours = category_colours(p.op_type for p in placed)
    longest = max((p.time_us for p in placed), default=1.0) or 1.0
    for p in sorted(placed, key=lambda q: -q.time_us):  # big dots first, small ones on top
        radius = 3.0 + 15.0 * math.sqrt(p.time_us / longest)
        chart.dot(
            p.intensity,
            p.achieved_gflops or 0.0,
            radius=radius,
            fill=colours[p.op_type],
            hover=_hover(p),
        )
    for op_type, colour in colours.items():
        chart.legend(op_type, colour)
    if not placed:
        chart.label(x_axis.lo, y_axis.hi, "no operators to draw", dx=10, dy=20)
    return chart.render()
