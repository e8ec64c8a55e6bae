"""What precision an ONNX model's operators really run in.

A model file that *stores* int8 weights does not necessarily *compute* in int8: a
weight-only export keeps int8 weights and turns them back into float (``Cast`` and
``Mul`` by a scale, or ``DequantizeLinear``) before every MatMul, and ONNX Runtime
folds that conversion at load time, so the MatMuls run in float32 on a model that
is "int8" by its file size.

Owns:

* :func:`stored_weight_types` - per compute node of a graph (MatMul, Gemm, Conv and
  their fused forms), the element type its constant weight is stored in when that is
  narrower than what reaches the node (an int8 initializer cast to float on the way).
* :func:`executed_types` / :func:`precision_table` - per op type, the element types of
  the inputs that really executed (the profiler's ``input_shapes``, e.g.
  ``float[1,128,64]``), the precision the kernel computes in (integer kernels such as
  ``MatMulInteger`` by their definition), the stored weight types and the share of
  operator time.
* :func:`precision_findings` - one line per thing a reader should know, such as
  ``int8 weights dequantised to float before MatMul: 18 nodes (62% of operator time)
  run in float``.

Must not: run a model (the operator table comes from :mod:`.sessions`), or print.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .graph import Node, read_graph
from .operators import node_name_variants

__all__ = [
    "executed_types",
    "precision_findings",
    "precision_lines",
    "precision_table",
    "stored_weight_types",
]

# op types whose kernel computes in integers whatever the trace shows (their quantised
# weight is pre-packed and left out of the trace; a float input is quantised inside)
INTEGER_KERNELS = frozenset(
    {
        "MatMulInteger",
        "ConvInteger",
        "QLinearMatMul",
        "QLinearConv",
        "QGemm",
        "DynamicQuantizeMatMul",
        "MatMulIntegerToFloat",
        "QAttention",
        "QLinearAdd",
        "QLinearMul",
        "QLinearGlobalAveragePool",
        "QLinearSigmoid",
        "QLinearLeakyRelu",
        "QLinearSoftmax",
        "QLinearConcat",
    }
)
# compute op types whose weight precision matters (index of the weight input)
WEIGHT_INPUT: dict[str, int] = {
    "MatMul": 1,
    "Gemm": 1,
    "FusedMatMul": 1,
    "FusedGemm": 1,
    "Conv": 1,
    "FusedConv": 1,
    "ConvTranspose": 1,
    "MatMulNBits": 1,
}
# ops a stored weight may pass through on its way to a compute node
_CONVERSIONS = frozenset(
    {
        "Cast",
        "DequantizeLinear",
        "Mul",
        "Div",
        "Sub",
        "Add",
        "Identity",
        "Transpose",
        "Reshape",
        "Unsqueeze",
        "Squeeze",
        "Flatten",
    }
)
_NARROW = {
    2: "uint8",
    3: "int8",
    4: "uint16",
    5: "int16",
    21: "uint4",
    22: "int4",
    10: "float16",
    16: "bfloat16",
    17: "float8",
    18: "float8",
    19: "float8",
    20: "float8",
}
_TRACE_TYPE = re.compile(r"^\s*([A-Za-z0-9_]+)\[")
_FLOATS = ("double", "float", "float16", "bfloat16")


def stored_weight_types(model: Any) -> dict[str, str]:
    """``{node: "int8"}`` for each compute node whose constant weight is stored narrower
    than it is used: an integer (or float16/float8) initializer that reaches the node
    through conversions (Cast, DequantizeLinear, Mul by a scale...). ``MatMulNBits``
    reads ``int<bits>``. Nodes keyed as :func:`pytest_inferperf.onnxrt.roofline.op_costs` keys
    them (unnamed: ``<op_type>_<index>``). ``model``: a path, bytes or ModelProto.
    """
    graph = read_graph(model)
    # weights: initializers of 2+ dims (scales and zero points are not weights)
    weights = {t.name: t.data_type for t in graph.initializers if len(t.dims) >= 2}
    producer = {out: node for node in graph.nodes for out in node.outputs}
    found: dict[str, str] = {}
    seen_names: set[str] = set()
    for index, node in enumerate(graph.nodes):
        name = node.name or f"{node.op_type}_{index}"
        if name in seen_names:
            name = f"{name}#{index}"
        seen_names.add(name)
        if node.op_type == "MatMulNBits":
            found[name] = f"int{node.int_attribute('bits', 4)}"
            continue
        slot = WEIGHT_INPUT.get(node.op_type)
        if slot is None or len(node.inputs) <= slot:
            continue
        stored = _stored_type(node.inputs[slot], weights, producer)
        if stored is not None:
            found[name] = stored
    return found


def _stored_type(
    tensor: str, weights: Mapping[str, int], producer: Mapping[str, Node]
) -> str | None:
    pending, seen = [tensor], set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in weights:
            narrow = _NARROW.get(weights[name])
            if narrow is not None and name != tensor:
                return narrow
            continue
        node = producer.get(name)
        if node is None or node.op_type not in _CONVERSIONS:
            continue
        inputs = node.inputs[:1] if node.op_type == "DequantizeLinear" else node.inputs
        pending.extend(i for i in inputs if i)
    return None


def _types(shapes: Iterable[str]) -> list[str]:
    out = []
    for text in shapes:
        match = _TRACE_TYPE.match(str(text))
        if match:
            out.append(match.group(1).lower())
    return out


def _field(op: Any, key: str, default: Any = None) -> Any:
    if isinstance(op, Mapping):
        return op.get(key, default)
    return getattr(op, key, default)


def _computes_in(op_type: str, input_types: Sequence[str], stored: str) -> str:
    if op_type in INTEGER_KERNELS:
        return "int8"
    floats = [t for t in input_types if t in _FLOATS]
    if floats:
        widest = max(floats, key=_FLOATS.index) if "float" not in floats else "float"
        return f"{widest} x {stored} weights" if stored and op_type == "MatMulNBits" else widest
    return ", ".join(dict.fromkeys(input_types)) or "?"


def executed_types(operators: Sequence[Any]) -> dict[str, list[str]]:
    """Per op type, the element types of the inputs that executed, in first-seen order."""
    out: dict[str, list[str]] = {}
    for op in operators:
        types = out.setdefault(str(_field(op, "op_type") or "?"), [])
        for t in _types(_field(op, "input_shapes") or ()):
            if t not in types:
                types.append(t)
    return out


def precision_table(
    operators: Sequence[Any], stored: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """Per op type: ``op_type``, ``nodes``, ``share`` (of operator time), ``inputs`` (the
    element types that executed), ``computes_in``, ``weights_stored`` (the stored
    types of its weights, where narrower than used) and ``narrow_nodes`` /
    ``narrow_share``: the nodes with such weights. Largest share first.

    ``stored`` is :func:`stored_weight_types` of the model, matched to the profiled
    nodes by name (ORT's renamed nodes by the names they came from); without it the
    operators' own ``weight_type`` field (set by the operator pass) is used.
    """
    rows: dict[str, dict[str, Any]] = {}
    for op in operators:
        op_type = str(_field(op, "op_type") or "?")
        row = rows.setdefault(
            op_type,
            {
                "op_type": op_type,
                "nodes": 0,
                "share": 0.0,
                "inputs": [],
                "weights_stored": [],
                "narrow_nodes": 0,
                "narrow_share": 0.0,
            },
        )
        row["nodes"] += 1
        with contextlib.suppress(TypeError, ValueError):
            row["share"] += float(_field(op, "share") or 0.0)
        for t in _types(_field(op, "input_shapes") or ()):
            if t not in row["inputs"]:
                row["inputs"].append(t)
        weight = str(_field(op, "weight_type") or "")
        if not weight and stored:
            node = str(_field(op, "node") or "")
            weight = next((stored[n] for n in node_name_variants(node) if n in stored), "")
        if weight:
            if weight not in row["weights_stored"]:
                row["weights_stored"].append(weight)
            row["narrow_nodes"] += 1
            with contextlib.suppress(TypeError, ValueError):
                row["narrow_share"] += float(_field(op, "share") or 0.0)
    for row in rows.values():
        row["computes_in"] = _computes_in(
            row["op_type"], row["inputs"], ", ".join(row["weights_stored"])
        )
    return sorted(rows.values(), key=lambda r: (-r["share"], r["op_type"]))


def precision_findings(table: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per op type that stores narrow weights but computes in float."""
    out = []
    for row in table:
        stored = [w for w in row.get("weights_stored") or () if w.startswith(("int", "uint"))]
        computes = str(row.get("computes_in") or "")
        if not stored or row.get("op_type") == "MatMulNBits" or not computes.startswith(_FLOATS):
            continue
        nodes = int(row.get("narrow_nodes") or row.get("nodes") or 0)
        share = float(row.get("narrow_share") or row.get("share") or 0.0)
        out.append(
            f"{'/'.join(stored)} weights dequantised to {computes} before "
            f"{row['op_type']}: {nodes} node{'s' if nodes != 1 else ''} "
            f"({share:.0%} of operator time) run in {computes}, not "
            f"{'/'.join(stored)}"
        )
    return out


def precision_lines(operators: Sequence[Any], limit: int = 4) -> list[str]:
    """``"MatMul 62% float (weights stored int8)"`` for the matmul, conv and integer op
    types with most time (any op types when there are none), then the findings; []
    when the table has no shapes."""
    table = [r for r in precision_table(operators) if r["inputs"]]
    if not table:
        return []
    compute = [
        r
        for r in table
        if r["op_type"] in WEIGHT_INPUT or r["op_type"] in INTEGER_KERNELS or r["weights_stored"]
    ]
    parts = []
    for row in (compute or table)[:limit]:  # the op types that do the arithmetic first
        stored = row["weights_stored"]
        parts.append(
            f"{row['op_type']} {row['share']:.0%} {row['computes_in']}"
            + (f" (weights stored {', '.join(stored)})" if stored else "")
        )
    return ["; ".join(parts), *precision_findings(table)]
