"""Tiny ONNX graphs for tests: one helper to wrap nodes into a checked model."""

from __future__ import annotations

import onnx
from onnx import helper


def make_model(
    nodes: list[onnx.NodeProto],
    inputs: list[onnx.ValueInfoProto],
    outputs: list[onnx.ValueInfoProto],
    initializers: list[onnx.TensorProto] | None = None,
) -> onnx.ModelProto:
    """Opset 17, IR version 8 (loads in every supported ONNX Runtime), checked."""
    graph = helper.make_graph(nodes, "test", inputs, outputs, initializers or [])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    return model
