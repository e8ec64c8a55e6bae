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


def matmul_chain(
    matmuls: int = 1, *, rows: int = 128, k: int = 256, layers: int = 2
) -> onnx.ModelProto:
    """``x[rows, k]`` through ``layers`` x (``matmuls`` MatMul nodes -> Tanh) -> Identity.

    MatMul takes most of the time; ``matmuls=2`` doubles its work (twice the nodes,
    each as costly) and leaves every other node as it was.
    """
    import numpy as np
    from onnx import TensorProto, numpy_helper

    rng = np.random.default_rng(0)
    nodes, weights, previous = [], [], "x"
    for layer in range(layers):
        for i in range(matmuls):
            weight = (rng.standard_normal((k, k)) / np.sqrt(k)).astype(np.float32)
            weights.append(numpy_helper.from_array(weight, f"w{layer}_{i}"))
            nodes.append(
                helper.make_node(
                    "MatMul", [previous, f"w{layer}_{i}"], [f"mm{layer}_{i}"], name=f"mm{layer}_{i}"
                )
            )
            previous = f"mm{layer}_{i}"
        nodes.append(helper.make_node("Tanh", [previous], [f"t{layer}"], name=f"t{layer}"))
        previous = f"t{layer}"
    nodes.append(helper.make_node("Identity", [previous], ["y"], name="out"))
    return make_model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, k])],
        weights,
    )
