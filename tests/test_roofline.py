"""Tests for pytest_inferperf.onnxrt.roofline: FLOP/byte counting, ceilings, the join, the SVG."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from types import ModuleType

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_graphs import make_model as _model

from pytest_inferperf.onnxrt.roofline import (
    Ceilings,
    OpCost,
    RooflinePoint,
    measure_ceilings,
    op_costs,
    render_roofline_svg,
    roofline_from_dict,
    roofline_points,
    roofline_to_dict,
    unmatched_operators,
)
from pytest_inferperf.onnxrt.sessions import (
    InputSpecError,
    ModelError,
    OperatorStat,
    profile_operators,
)

REPO = Path(__file__).resolve().parent.parent
BUILD_SCRIPT = REPO / "examples" / "build_models.py"
SVG_NS = "{http://www.w3.org/2000/svg}"
CEILINGS = Ceilings(peak_gflops=100.0, bandwidth_gbs=10.0, threads=1, method="fixed for tests")


# --------------------------------------------------------------------------- helpers


def _f32(name: str, shape: list) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _weight(name: str, shape: tuple[int, ...]) -> onnx.TensorProto:
    return numpy_helper.from_array(np.ones(shape, np.float32), name)


@pytest.fixture(scope="module")
def minilm(build_models: ModuleType) -> onnx.ModelProto:
    return build_models.make_minilm()


@pytest.fixture(scope="module")
def mobilenet_path(build_models: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("mobilenet") / "mobilenet_v2_64.onnx"
    return build_models.build_mobilenet_v2(out, image_size=64)


# --------------------------------------------------------------------------- FLOP counts


def test_matmul_2x3_by_3x4_is_48_flops() -> None:
    # out [2,4] = 8 elements, each a dot product of length K=3: 8 * 3 multiply-adds * 2.
    model = _model(
        [helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")],
        [_f32("a", [2, 3]), _f32("b", [3, 4])],
        [_f32("y", [2, 4])],
    )
    cost = op_costs(model, {})["mm"]
    assert cost == OpCost("mm", "MatMul", 48, (6 + 12 + 8) * 4)
    assert cost.intensity == pytest.approx(48 / 104)


def test_matmul_broadcasts_batch_dims() -> None:
    # [5,2,3] x [3,4] -> [5,2,4]: 40 outputs * K=3 * 2 = 240.
    model = _model(
        [helper.make_node("MatMul", ["a", "w"], ["y"], name="mm")],
        [_f32("a", [5, 2, 3])],
        [_f32("y", [5, 2, 4])],
        [_weight("w", (3, 4))],
    )
    cost = op_costs(model, {})["mm"]
    assert cost.flops == 240
    assert cost.bytes == (30 + 12 + 40) * 4  # the weight is read once


@pytest.mark.parametrize("trans_a", [0, 1])
def test_gemm_with_bias(trans_a: int) -> None:
    # A [2,3] (or [3,2] transposed), B [4,3] with transB: M=2, N=4, K=3.
    # 2*M*N*K = 48, plus the bias add M*N = 8 -> 56.
    a_shape = [3, 2] if trans_a else [2, 3]
    model = _model(
        [helper.make_node("Gemm", ["a", "b", "c"], ["y"], name="fc", transA=trans_a, transB=1)],
        [_f32("a", a_shape)],
        [_f32("y", [2, 4])],
        [_weight("b", (4, 3)), _weight("c", (4,))],
    )
    cost = op_costs(model, {})["fc"]
    assert cost.flops == 56
    assert cost.bytes == (6 + 12 + 4 + 8) * 4


def test_gemm_without_bias() -> None:
    model = _model(
        [helper.make_node("Gemm", ["a", "b"], ["y"], name="fc")],
        [_f32("a", [2, 3])],
        [_f32("y", [2, 4])],
        [_weight("b", (3, 4))],
    )
    assert op_costs(model, {})["fc"].flops == 48


def test_conv_3x3_with_bias() -> None:
    # X [1,3,8,8], W [16,3,3,3], pads 1, stride 1 -> Y [1,16,8,8].
    # 2 * Cout*Hout*Wout * (Cin/group)*kH*kW = 2 * 16*8*8 * 3*3*3 = 2 * 1024 * 27 = 55296,
    # plus the bias: Cout*Hout*Wout = 1024 -> 56320.
    model = _model(
        [
            helper.make_node(
                "Conv", ["x", "w", "b"], ["y"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]
            )
        ],
        [_f32("x", [1, 3, 8, 8])],
        [_f32("y", [1, 16, 8, 8])],
        [_weight("w", (16, 3, 3, 3)), _weight("b", (16,))],
    )
    cost = op_costs(model, {})["conv"]
    assert cost.flops == 56320
    assert cost.bytes == (192 + 432 + 16 + 1024) * 4


def test_depthwise_conv_strided() -> None:
    # Depthwise: group == Cin == 8, W [8,1,3,3]; stride 2 on 8x8 with pads 1 -> 4x4.
    # 2 * Cout*Hout*Wout * (Cin/group)*kH*kW = 2 * 8*4*4 * 1*3*3 = 2304 (no bias).
    model = _model(
        [
            helper.make_node(
                "Conv",
                ["x", "w"],
                ["y"],
                name="dw",
                kernel_shape=[3, 3],
                pads=[1, 1, 1, 1],
                strides=[2, 2],
                group=8,
            )
        ],
        [_f32("x", [2, 8, 8, 8])],
        [_f32("y", [2, 8, 4, 4])],
        [_weight("w", (8, 1, 3, 3))],
    )
    assert op_costs(model, {})["dw"].flops == 2 * 2304  # batch 2


def test_tiny_attention_block() -> None:
    # q, k, v [1, heads=2, seq=4, d=8].
    # QK^T: [1,2,4,8] x [1,2,8,4] -> [1,2,4,4] = 32 outputs * K=8 * 2 = 512
    # Softmax: 5 per element * 32 = 160
    # PV: [1,2,4,4] x [1,2,4,8] -> [1,2,4,8] = 64 outputs * K=4 * 2 = 512
    shape = [1, 2, 4, 8]
    model = _model(
        [
            helper.make_node("Transpose", ["k"], ["kt"], name="k_t", perm=[0, 1, 3, 2]),
            helper.make_node("MatMul", ["q", "kt"], ["s"], name="qk"),
            helper.make_node("Softmax", ["s"], ["p"], name="softmax", axis=-1),
            helper.make_node("MatMul", ["p", "v"], ["y"], name="pv"),
        ],
        [_f32("q", shape), _f32("k", shape), _f32("v", shape)],
        [_f32("y", shape)],
    )
    costs = op_costs(model, {})
    assert {name: c.flops for name, c in costs.items()} == {
        "k_t": 0,
        "qk": 512,
        "softmax": 160,
        "pv": 512,
    }
    assert costs["k_t"].bytes == 2 * 64 * 4  # data movement: bytes only
    assert costs["softmax"].bytes == 2 * 32 * 4


def test_elementwise_layernorm_reduce_and_gather() -> None:
    model = _model(
        [
            helper.make_node("Gather", ["table", "ids"], ["e"], name="gather"),
            helper.make_node("Relu", ["e"], ["r"], name="relu"),
            helper.make_node("LayerNormalization", ["r", "g", "b"], ["n"], name="ln", axis=-1),
            helper.make_node("ReduceMean", ["n"], ["y"], name="mean", axes=[-1], keepdims=0),
        ],
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [3])],
        [_f32("y", [3])],
        [_weight("table", (100, 4)), _weight("g", (4,)), _weight("b", (4,))],
    )
    costs = op_costs(model, {})
    assert costs["gather"].flops == 0
    # the rows gathered (3 x 4 floats), not the 100-row table; plus the ids and the output
    assert costs["gather"].bytes == 12 * 4 + 3 * 8 + 12 * 4
    assert costs["relu"].flops == 12
    assert costs["ln"].flops == 8 * 12
    assert costs["mean"].flops == 12  # one per input element


def test_symbolic_dims_are_substituted() -> None:
    model = _model(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
        [_f32("x", ["batch", 3])],
        [_f32("y", ["batch", 4])],
        [_weight("w", (3, 4))],
    )
    assert op_costs(model, {"batch": 5})["mm"].flops == 2 * 5 * 4 * 3
    assert op_costs(model, {"batch": 1})["mm"].flops == 2 * 1 * 4 * 3
    # the caller's model keeps its symbolic dim
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    with pytest.raises(InputSpecError, match="'batch'"):
        op_costs(model, {})


def test_unnamed_nodes_get_onnx_runtime_names(tmp_path: Path) -> None:
    model = _model(
        [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Sigmoid", ["a"], ["y"])],
        [_f32("x", [64, 64])],
        [_f32("y", [64, 64])],
    )
    costs = op_costs(model, {})
    assert costs == {
        "Relu_0": OpCost("Relu_0", "Relu", 4096, 2 * 4096 * 4),
        "Sigmoid_1": OpCost("Sigmoid_1", "Sigmoid", 4096, 2 * 4096 * 4),
    }
    path = tmp_path / "unnamed.onnx"
    onnx.save(model, str(path))
    operators = profile_operators(path, {"x": np.ones((64, 64), np.float32)}, runs=2, warmup=0)
    points = roofline_points(costs, operators, CEILINGS)
    assert sorted((p.node, p.matched_by) for p in points) == [
        ("Relu_0", "name"),
        ("Sigmoid_1", "name"),
    ]
    with pytest.raises(ModelError, match="does not exist"):
        op_costs(tmp_path / "nope.onnx", {})


def test_minilm_costs(minilm: onnx.ModelProto) -> None:
    costs = op_costs(minilm, {"batch": 1, "sequence": 128})
    assert all(c.bytes > 0 for c in costs.values())
    by_op = Counter()
    for c in costs.values():
        by_op[c.op_type] += c.flops
    # per layer, seq 128, hidden 384, 12 heads of 32, FFN 1536:
    #   Q, K, V, output projections: 4 * 2*128*384*384  = 150,994,944
    #   FFN in and out:              2 * 2*128*384*1536 = 301,989,888
    #   QK^T and PV:                 2 * 2*12*128*128*32 = 25,165,824
    # two layers: 2 * 478,150,656 = 956,301,312
    assert by_op["MatMul"] == 956_301_312
    assert by_op["MatMul"] / sum(by_op.values()) > 0.98
    # the embedding sum broadcasts with position ids sliced by Shape -> Gather -> Slice;
    # it has a known shape [1,128,384] only because that chain is folded
    emb_adds = [c for name, c in costs.items() if name.startswith("emb_add")]
    assert [c.flops for c in emb_adds] == [128 * 384, 128 * 384]
    # Softmax over [1,12,128,128], 5 FLOPs per element, one per layer
    assert by_op["Softmax"] == 2 * 5 * 12 * 128 * 128


def test_mobilenet_costs(build_models: ModuleType) -> None:
    costs = op_costs(build_models.make_mobilenet_v2(), {"batch": 1})
    assert all(c.bytes > 0 for c in costs.values())
    by_op = Counter()
    for c in costs.values():
        by_op[c.op_type] += c.flops
    assert by_op["Conv"] / sum(by_op.values()) > 0.95
    # the classifier: Gemm 1280 -> 1000 with bias: 2*1000*1280 + 1000
    assert by_op["Gemm"] == 2_561_000
    depthwise = [
        c for c in costs.values() if c.op_type == "Conv" and c.flops and c.flops / c.bytes < 1.5
    ]
    assert depthwise, "depthwise convs have low arithmetic intensity"


def test_int8_models_count_integer_ops(build_models: ModuleType, tmp_path: Path) -> None:
    float_path = build_models.build_mobilenet_v2(tmp_path / "m.onnx", image_size=32)
    int8_path = build_models.quantize_int8(float_path, tmp_path / "m8.onnx")
    float_costs = op_costs(float_path, {"batch": 1})
    int8_costs = op_costs(int8_path, {"batch": 1})
    conv = sum(c.flops for c in float_costs.values() if c.op_type == "Conv")
    qconv = sum(c.flops for c in int8_costs.values() if c.op_type == "QLinearConv")
    assert qconv == conv > 0
    # QLinearAdd / QLinearGlobalAveragePool / QGemm are com.microsoft ops that onnx shape
    # inference does not know; their shapes still propagate
    assert all(c.bytes > 0 for c in int8_costs.values())
    qgemm = [c for c in int8_costs.values() if c.op_type == "QGemm"]
    assert [c.flops for c in qgemm] == [2 * 1000 * 1280 + 1000]
    # int8 traffic is smaller than float traffic
    assert sum(c.bytes for c in int8_costs.values()) < sum(c.bytes for c in float_costs.values())


# --------------------------------------------------------------------------- ceilings


def test_measured_ceilings_are_plausible() -> None:
    ceilings = measure_ceilings(seconds=0.2)
    assert 1 < ceilings.peak_gflops < 2000
    assert 0.5 < ceilings.bandwidth_gbs < 1000
    assert ceilings.threads == 1
    assert "matmul" in ceilings.method and "copy" in ceilings.method
    assert ceilings.ridge_intensity == pytest.approx(ceilings.peak_gflops / ceilings.bandwidth_gbs)
    assert Ceilings.from_dict(ceilings.to_dict()) == ceilings


def test_ceilings_validate() -> None:
    with pytest.raises(ValueError, match="peak_gflops"):
        Ceilings(0.0, 10.0, 1, "x")
    with pytest.raises(ValueError, match="bandwidth_gbs"):
        Ceilings(10.0, math.nan, 1, "x")
    with pytest.raises(ValueError, match="threads"):
        measure_ceilings(threads=0)
    assert CEILINGS.attainable_gflops(2.0) == 20.0
    assert CEILINGS.attainable_gflops(50.0) == 100.0


# --------------------------------------------------------------------------- the join


def _op(node: str, op_type: str, mean_us: float = 10.0, **extra: object) -> OperatorStat:
    return OperatorStat(
        node=node, op_type=op_type, calls=1, total_us=mean_us, mean_us=mean_us, share=0.0, **extra
    )


def test_points_from_a_real_profile(tmp_path: Path) -> None:
    # y = relu(x @ w + b) with x [64,256], w [256,256]
    model = _model(
        [
            helper.make_node("MatMul", ["x", "w"], ["h"], name="matmul"),
            helper.make_node("Add", ["h", "b"], ["z"], name="bias"),
            helper.make_node("Relu", ["z"], ["y"], name="relu"),
        ],
        [_f32("x", ["batch", 256])],
        [_f32("y", ["batch", 256])],
        [_weight("w", (256, 256)), _weight("b", (256,))],
    )
    path = tmp_path / "mlp.onnx"
    onnx.save(model, str(path))
    feeds = {"x": np.ones((64, 256), np.float32)}
    operators = profile_operators(path, feeds, runs=5, warmup=1)
    costs = op_costs(path, {"batch": 64})
    points = roofline_points(costs, operators, CEILINGS)
    assert unmatched_operators(costs, operators) == []
    assert len(points) == len(operators)
    by_flops = max(points, key=lambda p: p.flops)
    # ORT 1.32 fuses all three into FusedGemm "fused matmul/MatMulAddFusion", which is
    # matched back to the MatMul node plus the Add it took in as its bias (the Add and
    # Relu are no longer timed on their own)
    assert by_flops.op_type in ("MatMul", "FusedMatMul", "Gemm", "FusedGemm")
    if by_flops.node.startswith("fused "):
        assert by_flops.flops == 2 * 64 * 256 * 256 + 64 * 256
        assert by_flops.matched_by == "fused"
    else:
        assert by_flops.flops == 2 * 64 * 256 * 256
        assert by_flops.matched_by == "name"
    assert by_flops.bytes == costs["matmul"].bytes == (64 * 256 * 2 + 256 * 256) * 4
    for p in points:
        assert p.time_us > 0
        assert p.intensity == pytest.approx(p.flops / p.bytes)
        assert p.achieved_gflops == pytest.approx(p.flops / (p.time_us * 1e3))
        assert p.attainable_gflops == pytest.approx(min(100.0, 10.0 * p.intensity))
        assert p.bound == ("memory" if p.intensity < 10.0 else "compute")
    data = roofline_to_dict(CEILINGS, points)
    json.dumps(data, allow_nan=False)
    assert data["summary"]["operators"] == len(points)
    assert data["summary"]["unmatched"] == 0
    assert roofline_from_dict(json.loads(json.dumps(data))) == (CEILINGS, points)


def test_points_on_mobilenet_with_fused_and_renamed_nodes(mobilenet_path: Path) -> None:
    from pytest_inferperf.onnxrt.sessions import make_inputs

    costs = op_costs(mobilenet_path, {"batch": 1})
    operators = profile_operators(
        mobilenet_path, make_inputs(mobilenet_path, {"batch": 1}), runs=2, warmup=1
    )
    points = roofline_points(costs, operators, CEILINGS)
    assert unmatched_operators(costs, operators) == []
    assert len(points) == len(operators)
    # ORT's NCHWc layout fuses Conv + Clip (and residual Adds, as a "Sum" input) and names
    # the node after the output tensor, with "_nchwc". Its trace shapes pad the channels
    # to the SIMD block (8 on AVX2, 16 on AVX-512), so these are costed from the graph's
    # logical channels: the answer is the same on every CPU, and no work is lost or
    # invented - the fused convs carry exactly the model's Conv + Clip + Add FLOPs.
    nchwc = [p for p in points if p.node.endswith("_nchwc") and p.op_type == "Conv"]
    if nchwc:  # x86 with NCHWc kernels
        assert {p.matched_by for p in nchwc} <= {"name", "fused"}
        assert any(p.matched_by == "fused" for p in nchwc)
        absorbed = ("Conv", "Clip", "Add")
    else:  # no NCHWc transformer (e.g. Arm): plain Conv nodes
        absorbed = ("Conv",)
    model_conv = sum(c.flops for c in costs.values() if c.op_type in absorbed)
    profiled_conv = sum(p.flops for p in points if p.op_type in absorbed)
    assert profiled_conv == model_conv
    assert sum(p.flops for p in points) == sum(c.flops for c in costs.values())


def test_join_by_derived_names_and_trace_shapes() -> None:
    costs = {
        "conv_6_quant": OpCost("conv_6_quant", "QLinearConv", 1000, 100),
        "attn_qk_74": OpCost("attn_qk_74", "MatMul", 4000, 200),
        "relu6_7": OpCost("relu6_7", "Clip", 10, 80),
        "mm_quant": OpCost("mm_quant", "MatMulInteger", 5000, 100),
    }
    operators = [
        _op("conv_6_quant_token_1", "QLinearConv"),
        _op("attn_qk_74/MatMulScaleFusion/", "FusedMatMul"),
        _op("mm_quant", "DynamicQuantizeMatMul"),
        # fused Conv + Clip named after the Clip: the op types disagree, so the trace's
        # shapes are used: 2 * (16*4*4 outputs) * (3*3*3) + bias 256 = 14080
        _op(
            "relu6_7_nchwc",
            "Conv",
            input_shapes=("float[1,3,8,8]", "float[16,3,3,3]", "float[16]"),
            output_shapes=("float[1,16,4,4]",),
        ),
        _op(
            "Gelu_token_0",
            "Gelu",
            input_shapes=("float[1,8,16]",),
            output_shapes=("float[1,8,16]",),
        ),
        _op("Mystery", "SomeCustomOp", input_shapes=("float[4]",), output_shapes=("float[4]",)),
        _op("NoShapes", "Conv"),
    ]
    points = {p.node: p for p in roofline_points(costs, operators, CEILINGS)}
    assert points["conv_6_quant_token_1"].flops == 1000
    assert points["attn_qk_74/MatMulScaleFusion/"].flops == 4000
    assert points["mm_quant"].matched_by == "name"
    fused = points["relu6_7_nchwc"]
    assert (fused.flops, fused.matched_by) == (14080, "shapes")
    assert fused.bytes == (192 + 432 + 16 + 256) * 4
    assert points["Gelu_token_0"].flops == 5 * 128
    assert set(points) == {
        "conv_6_quant_token_1",
        "attn_qk_74/MatMulScaleFusion/",
        "mm_quant",
        "relu6_7_nchwc",
        "Gelu_token_0",
    }
    assert unmatched_operators(costs, operators) == ["Mystery", "NoShapes"]
    summary = roofline_to_dict(
        CEILINGS, list(points.values()), unmatched=unmatched_operators(costs, operators)
    )["summary"]
    assert summary["unmatched"] == 2
    assert summary["matched_by_shapes"] == 2


def test_join_accepts_dicts_and_never_crashes() -> None:
    costs = {"mm": OpCost("mm", "MatMul", 2000, 100)}
    operators = [
        {"node": "mm", "op_type": "MatMul", "total_us": 20.0, "calls": 2},  # no mean_us
        {"node": "mm", "op_type": "MatMul", "mean_us": 0.0},  # timed at 0 µs
        {
            "node": "x",
            "op_type": "Conv",
            "mean_us": 5.0,
            "input_shapes": ["garbage"],
            "output_shapes": ["float[a,b]"],
        },
        {"op_type": "MatMul"},
        {},
        {"node": "mm", "op_type": "MatMul", "mean_us": "fast"},
    ]
    points = roofline_points(costs, operators, CEILINGS)
    assert [(p.time_us, p.achieved_gflops) for p in points] == [(10.0, 0.2), (0.0, None)]
    assert len(unmatched_operators(costs, operators)) == 4
    json.dumps(roofline_to_dict(CEILINGS, points), allow_nan=False)


# --------------------------------------------------------------------------- SVG


def _point(
    node: str, op_type: str, intensity: float, achieved: float, time_us: float
) -> RooflinePoint:
    flops = int(achieved * time_us * 1e3)
    return RooflinePoint(
        node=node,
        op_type=op_type,
        flops=flops,
        bytes=int(flops / intensity) if intensity else 4096,
        intensity=intensity,
        time_us=time_us,
        achieved_gflops=achieved,
        attainable_gflops=CEILINGS.attainable_gflops(intensity),
        bound="memory" if intensity < CEILINGS.ridge_intensity else "compute",
    )


def test_svg_is_self_contained_and_escapes_names() -> None:
    evil = "<script>alert(1)</script>"
    points = [
        _point(evil, "MatMul", 40.0, 60.0, 900.0),
        _point("conv & co", '<b onload="x()">Conv</b>', 2.0, 8.0, 300.0),
        _point("gather", "Gather", 0.0, 0.0, 5.0),  # no FLOPs: not drawn, counted in a note
    ]
    svg = render_roofline_svg(CEILINGS, points, title=f"roofline of {evil}")
    root = ET.fromstring(svg.split("?>", 1)[1])  # well-formed XML
    assert root.tag == f"{SVG_NS}svg"
    assert not list(root.iter(f"{SVG_NS}script"))
    assert "<script" not in svg and "<b " not in svg
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in svg
    for attr in ("href", "xlink", "@import", "http://www.w3.org/1999"):
        assert attr not in svg
    assert svg.count("url(") == svg.count("url(#")  # only references inside the document
    assert "\x00" not in svg
    circles = list(root.iter(f"{SVG_NS}circle"))
    assert len(circles) == 2
    hovers = [c.find(f"{SVG_NS}title").text for c in circles]
    assert any(
        h.startswith(evil + " (MatMul)") and "60 GFLOP/s" in h and "40 FLOP/byte" in h
        for h in hovers
    )
    texts = " ".join(t.text or "" for t in root.iter(f"{SVG_NS}text"))
    assert "peak 100 GFLOP/s" in texts and "10 GB/s" in texts
    assert "1 operator(s) not drawn" in texts
    # the larger operator (time) gets the larger dot
    radii = {c.find(f"{SVG_NS}title").text.split(" (")[0]: float(c.get("r")) for c in circles}
    assert radii[evil] > radii["conv & co"]


def test_svg_with_no_points() -> None:
    svg = render_roofline_svg(CEILINGS, [], title="empty")
    root = ET.fromstring(svg.split("?>", 1)[1])
    assert not list(root.iter(f"{SVG_NS}circle"))
    assert "no operators to draw" in svg


def test_svg_axes() -> None:
    from pytest_inferperf.core.svgplot import Axis, category_colours

    log = Axis.fit("x", [0.03, 45.0, -1.0, math.inf], log=True)
    assert (log.lo, log.hi) == (0.01, 100.0)
    assert [label for _, label in log.ticks()] == ["0.01", "0.1", "1", "10", "100"]
    assert log.fraction(1.0) == pytest.approx(0.5)
    linear = Axis.fit("ms", [16.8, 20.1, 25.0], log=False, zero=True)
    assert linear.lo == 0.0 and linear.hi >= 25.0
    assert [v for v, _ in linear.ticks()] == [0.0, 10.0, 20.0, 30.0]
    with pytest.raises(ValueError, match="lo > 0"):
        Axis("y", 0.0, 1.0, log=True)
    colours = category_colours(["Conv", "MatMul", "Conv"])
    assert list(colours) == ["Conv", "MatMul"] and colours["Conv"] != colours["MatMul"]


# --------------------------------------------------------------------------- real exports

EXPORTS = REPO / "tests" / "fixtures" / "exports"  # made by export_models.py there
HF_BERT = REPO / "tests" / "fixtures" / "hf" / "tiny_bert_hf.onnx"


def _roofline_of(
    path: Path, dims: dict[str, int] | None = None, cost_dims: dict[str, int] | None = None
) -> dict:
    from pytest_inferperf.onnxrt.roofline import roofline_summary
    from pytest_inferperf.onnxrt.sessions import default_dims, make_inputs

    dims = {**default_dims(path), **(dims or {})}
    operators = profile_operators(path, make_inputs(path, dims), runs=2, warmup=1)
    return roofline_summary(op_costs(path, {**dims, **(cost_dims or {})}), operators, CEILINGS)


def _matmul_points(roof: dict) -> list[dict]:
    from pytest_inferperf.onnxrt.roofline import MATMUL_OPERANDS

    return [p for p in roof["points"] if p["op_type"] in MATMUL_OPERANDS]


def _encoder_hand_count(layers: int, hidden: int, ffn: int, seq: int) -> int:
    """2·M·K·N over every MatMul of a BERT encoder, counted by hand from its config:
    Q, K, V and output projections (4 of S·H·H), two FFN matmuls (S·H·F, S·F·H), then
    QK^T and AV per head, which over all heads are S·S·H each."""
    per_layer = 4 * 2 * seq * hidden * hidden + 2 * 2 * seq * hidden * ffn
    per_layer += 2 * 2 * seq * seq * hidden
    return layers * per_layer


@pytest.mark.parametrize(
    "variant",
    [
        "minilm_l3_st",
        "minilm_l3_st_int8",
        "minilm_l3_st_nbits",
        "minilm_l3_st_dequant",
    ],
)
def test_minilm_export_matmuls_match_the_hand_count(variant: str) -> None:
    """A torch.onnx export with symbolic batch_size/sequence_length (and the same model
    after ORT's dynamic int8 and 4-bit quantisers): every MatMul - MatMul, FusedMatMul,
    DynamicQuantizeMatMul, MatMulIntegerToFloat, MatMulNBits - has its 2·M·K·N, and
    they add up to the hand count."""
    roof = _roofline_of(EXPORTS / f"{variant}.onnx")
    matmuls = _matmul_points(roof)
    assert len(matmuls) == 3 * 8  # 3 layers x (q, k, v, out, 2 ffn, qk, av)
    assert all(p["flops"] > 0 for p in matmuls), [p["node"] for p in matmuls if not p["flops"]]
    hand = _encoder_hand_count(layers=3, hidden=64, ffn=256, seq=128)
    assert sum(p["flops"] for p in matmuls) == pytest.approx(hand, rel=0.01)
    summary = roof["summary"]
    assert summary["unmatched"] == 0 and summary["uncosted"] == []
    assert summary["cross_check"]["disagreed"] == []
    assert summary["cross_check"]["agreed"] > 100


def test_minilm_after_the_transformer_optimizer_counts_attention_and_its_matmuls() -> None:
    """ORT's transformer optimizer on the export: Attention (QKV projection, QK^T, softmax,
    AV in one node), EmbedLayerNormalization, SkipLayerNormalization, BiasGelu."""
    seq, hidden, ffn, heads = 128, 64, 256, 2
    roof = _roofline_of(EXPORTS / "minilm_l3_st_fused.onnx")
    by_type = Counter(p["op_type"] for p in roof["points"])
    assert by_type["Attention"] == 3 and by_type["EmbedLayerNormalization"] == 1
    assert by_type["SkipLayerNormalization"] == 6 and by_type["BiasGelu"] == 3
    matmuls = _matmul_points(roof)
    assert len(matmuls) == 3 * 3 and all(p["flops"] > 0 for p in matmuls)  # out, 2 ffn
    assert sum(p["flops"] for p in matmuls) == 3 * (
        2 * seq * hidden * hidden + 2 * 2 * seq * hidden * ffn
    )
    attention = 2 * seq * hidden * 3 * hidden + 3 * hidden * seq  # QKV projection + bias
    attention += 2 * 2 * seq * seq * hidden + 5 * heads * seq * seq  # QK^T, AV, softmax
    assert [p["flops"] for p in roof["points"] if p["op_type"] == "Attention"] == [attention] * 3
    summary = roof["summary"]
    assert summary["uncosted"] == [] and summary["cross_check"]["disagreed"] == []
    model = op_costs(EXPORTS / "minilm_l3_st_fused.onnx", {"batch_size": 1, "sequence_length": seq})
    assert sum(p["flops"] for p in roof["points"]) == sum(c.flops for c in model.values())


def test_minilm_export_at_another_sequence_length() -> None:
    roof = _roofline_of(EXPORTS / "minilm_l3_st.onnx", {"sequence_length": 40})
    hand = _encoder_hand_count(layers=3, hidden=64, ffn=256, seq=40)
    assert sum(p["flops"] for p in _matmul_points(roof)) == pytest.approx(hand, rel=0.01)


def test_the_shapes_that_ran_win_over_the_dims_given_for_the_graph() -> None:
    """Costs asked for sequence 64 while the model ran at 128: the trace's shapes say what
    ran, the disagreeing graph costs are named, and the MatMuls still add up."""
    roof = _roofline_of(EXPORTS / "minilm_l3_st.onnx", cost_dims={"sequence_length": 64})
    hand = _encoder_hand_count(layers=3, hidden=64, ffn=256, seq=128)
    assert sum(p["flops"] for p in _matmul_points(roof)) == pytest.approx(hand, rel=0.01)
    disagreed = roof["summary"]["cross_check"]["disagreed"]
    assert len(disagreed) >= 18
    assert all(p["matched_by"] == "shapes" for p in roof["points"] if p["node"] in disagreed)


def test_hugging_face_bert_export_matmuls_and_pooler() -> None:
    roof = _roofline_of(HF_BERT)
    matmuls = _matmul_points(roof)
    assert all(p["flops"] > 0 for p in matmuls)
    hand = _encoder_hand_count(layers=2, hidden=64, ffn=128, seq=128) + 2 * 64 * 64  # pooler
    assert sum(p["flops"] for p in matmuls) == pytest.approx(hand, rel=0.01)
    assert roof["summary"]["uncosted"] == []


def test_resnet_export_conv_flops_match_the_hand_count() -> None:
    """torch.onnx (dynamo) export of a small ResNet, symbolic batch_size, BatchNorm folded
    into the convs: conv FLOPs counted by hand, the same with batch 2, and no work lost
    where ONNX Runtime fuses residual Adds and ReLUs into its convs."""

    def conv(cin: int, cout: int, out_hw: int, groups: int = 1) -> int:
        return 2 * cout * out_hw * out_hw * (cin // groups) * 9 + cout * out_hw * out_hw

    per_image = (
        conv(3, 24, 16)
        + 2 * conv(24, 24, 16)
        + conv(24, 40, 8)
        + 2 * conv(40, 40, 8)
        + conv(40, 40, 8, groups=40)
    )
    path = EXPORTS / "small_resnet.onnx"
    for batch in (1, 2):
        roof = _roofline_of(path, {"batch_size": batch})
        convs = [p for p in roof["points"] if p["op_type"] in ("Conv", "FusedConv")]
        assert len(convs) == 7 and all(p["flops"] > 0 for p in convs)
        # each conv carries its epilogue (bias is counted; fused ReLU/Add/Clip too)
        epilogues = batch * (6 * 24 * 256 + 2 * 24 * 256 + 7 * 40 * 64 + 40 * 64)
        assert sum(p["flops"] for p in convs) == pytest.approx(
            batch * per_image + epilogues, rel=0.01
        )
        model = op_costs(path, {"batch_size": batch})
        assert sum(p["flops"] for p in roof["points"]) == sum(c.flops for c in model.values())


def test_contrib_attention_ops_get_their_work(tmp_path: Path) -> None:
    """com.microsoft Attention and MultiHeadAttention, run by ONNX Runtime."""
    seq, hidden, heads = 32, 64, 4
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((hidden, 3 * hidden)).astype(np.float32), "w")
    b = numpy_helper.from_array(np.zeros(3 * hidden, np.float32), "b")
    nodes = [
        helper.make_node(
            "Attention",
            ["x", "w", "b"],
            ["a"],
            name="attention",
            domain="com.microsoft",
            num_heads=heads,
        ),
        helper.make_node(
            "MultiHeadAttention",
            ["a", "a", "a"],
            ["y"],
            name="mha",
            domain="com.microsoft",
            num_heads=heads,
        ),
    ]
    graph = helper.make_graph(
        nodes,
        "attn",
        [_f32("x", ["batch", seq, hidden])],
        [_f32("y", ["batch", seq, hidden])],
        [w, b],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
        ir_version=8,
    )
    path = tmp_path / "attn.onnx"
    onnx.save(model, str(path))
    costs = op_costs(path, {"batch": 1})
    core = 2 * seq * seq * hidden * 2 + 5 * heads * seq * seq  # QK^T, AV, softmax
    projection = 2 * seq * hidden * 3 * hidden + 3 * hidden * seq
    assert costs["attention"].flops == projection + core
    assert costs["mha"].flops == core
    roof = _roofline_of(path, {"batch": 1})
    by_node = {p["node"]: p for p in roof["points"]}
    assert by_node["attention"]["flops"] == projection + core
    assert by_node["mha"]["flops"] == core


def _contrib_model(nodes: list, inputs: list, outputs: list, weights: list) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "contrib", inputs, outputs, weights)
    return helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
        ir_version=8,
    )


def test_qattention_gets_the_work_of_its_projection_and_attention(tmp_path: Path) -> None:
    """com.microsoft QAttention (ONNX Runtime's CPU kernel runs it): uint8 input, int8
    weight (H, 3H), float bias and output, against a hand count."""
    seq, hidden, heads = 16, 64, 4
    rng = np.random.default_rng(0)
    weights = [
        numpy_helper.from_array(rng.integers(-8, 8, (hidden, 3 * hidden)).astype(np.int8), "w"),
        numpy_helper.from_array(np.zeros(3 * hidden, np.float32), "b"),
        numpy_helper.from_array(np.array(0.05, np.float32), "x_scale"),
        numpy_helper.from_array(np.array(0.01, np.float32), "w_scale"),
        numpy_helper.from_array(np.array(128, np.uint8), "x_zero"),
        numpy_helper.from_array(np.array(0, np.int8), "w_zero"),
    ]
    node = helper.make_node(
        "QAttention",
        ["x", "w", "b", "x_scale", "w_scale", "", "x_zero", "w_zero"],
        ["y"],
        name="qattention",
        domain="com.microsoft",
        num_heads=heads,
    )
    x = helper.make_tensor_value_info("x", TensorProto.UINT8, ["batch", seq, hidden])
    path = tmp_path / "qattention.onnx"
    onnx.save(_contrib_model([node], [x], [_f32("y", ["batch", seq, hidden])], weights), path)
    projection = 2 * seq * hidden * 3 * hidden + seq * 3 * hidden  # x·W (int8) + bias
    core = 2 * seq * seq * hidden + 5 * heads * seq * seq + 2 * seq * seq * hidden
    assert projection + core == 466_944
    # input, int8 weight, bias, 4 scalars (two float scales, two 1-byte zero points), output
    nbytes = seq * hidden + hidden * 3 * hidden + 3 * hidden * 4 + 10 + seq * hidden * 4
    cost = op_costs(path, {"batch": 1})["qattention"]
    assert (cost.flops, cost.bytes, cost.complete) == (projection + core, nbytes, True)
    feeds = {"x": rng.integers(0, 255, (1, seq, hidden)).astype(np.uint8)}
    operators = profile_operators(path, feeds, runs=2, warmup=1)
    from pytest_inferperf.onnxrt.roofline import roofline_summary

    roof = roofline_summary(op_costs(path, {"batch": 1}), operators, CEILINGS)
    (point,) = roof["points"]
    assert (point["node"], point["flops"], point["bytes"]) == ("qattention", 466_944, nbytes)
    assert roof["summary"]["uncosted"] == []
    assert roof["summary"]["cross_check"]["agreed"] == 1


def _gqa_model(seq: int, past: int, heads: int, kv_heads: int, head: int) -> onnx.ModelProto:
    names = ["q", "k", "v", "past_key" if past else "", "past_value" if past else ""]
    node = helper.make_node(
        "GroupQueryAttention",
        [*names, "seqlens_k", "total_sequence_length"],
        ["y", "present_key", "present_value"],
        name="gqa",
        domain="com.microsoft",
        num_heads=heads,
        kv_num_heads=kv_heads,
    )
    inputs = [
        _f32("q", ["batch", seq, heads * head]),
        _f32("k", ["batch", seq, kv_heads * head]),
        _f32("v", ["batch", seq, kv_heads * head]),
    ]
    if past:
        inputs += [_f32(n, ["batch", kv_heads, past, head]) for n in ("past_key", "past_value")]
    inputs += [
        helper.make_tensor_value_info("seqlens_k", TensorProto.INT32, ["batch"]),
        helper.make_tensor_value_info("total_sequence_length", TensorProto.INT32, []),
    ]
    outputs = [
        _f32("y", ["batch", seq, heads * head]),
        helper.make_tensor_value_info("present_key", TensorProto.FLOAT, None),
        helper.make_tensor_value_info("present_value", TensorProto.FLOAT, None),
    ]
    return _contrib_model([node], inputs, outputs, [])


@pytest.mark.parametrize("past", [0, 8], ids=["prompt", "with-past"])
def test_group_query_attention_gets_the_work_of_every_query_head(tmp_path: Path, past: int) -> None:
    """com.microsoft GroupQueryAttention, 4 query heads sharing 2 key/value heads, run by
    ONNX Runtime's CPU kernel; each query head meets the L = past + S keys of its group."""
    seq, heads, kv_heads, head = 16, 4, 2, 16
    path = tmp_path / "gqa.onnx"
    onnx.save(_gqa_model(seq, past, heads, kv_heads, head), path)
    keys = past + seq
    qk = av = 2 * seq * keys * heads * head
    softmax = 5 * heads * seq * keys
    hand = qk + softmax + av
    assert hand == {0: 70_656, 8: 105_984}[past]
    present = 2 * kv_heads * keys * head * 4  # present_key and present_value, float
    q_kv = seq * (heads + 2 * kv_heads) * head * 4
    nbytes = q_kv + 2 * kv_heads * past * head * 4 + 4 + 4 + seq * heads * head * 4 + present
    cost = op_costs(path, {"batch": 1})["gqa"]
    assert (cost.flops, cost.bytes, cost.complete) == (hand, nbytes, True)
    rng = np.random.default_rng(1)
    feeds = {
        n: rng.standard_normal((1, seq, h * head)).astype(np.float32)
        for n, h in (("q", heads), ("k", kv_heads), ("v", kv_heads))
    }
    if past:
        for n in ("past_key", "past_value"):
            feeds[n] = rng.standard_normal((1, kv_heads, past, head)).astype(np.float32)
    feeds["seqlens_k"] = np.array([keys - 1], np.int32)
    feeds["total_sequence_length"] = np.array(keys, np.int32)
    operators = profile_operators(path, feeds, runs=2, warmup=1)
    (op,) = operators
    assert op.output_shapes[1] == f"float[1,{kv_heads},{keys},{head}]"  # what really ran
    from pytest_inferperf.onnxrt.roofline import roofline_summary

    roof = roofline_summary(op_costs(path, {"batch": 1}), operators, CEILINGS)
    (point,) = roof["points"]
    assert (point["node"], point["flops"], point["bytes"]) == ("gqa", hand, nbytes)
    assert roof["summary"]["uncosted"] == []
    assert roof["summary"]["cross_check"]["agreed"] == 1


def test_qattention_and_gqa_are_costed_from_the_shapes_that_ran_alone() -> None:
    """Without the model file, the profiler's shapes (as ONNX Runtime 1.32's CPU kernels
    record them: QAttention's int8 weight pre-packed out of the list, GQA's absent past
    left out) give the same work, less QAttention's softmax: the trace has no num_heads."""
    seq, hidden = 16, 64
    qattention = _op(
        "qattention",
        "QAttention",
        input_shapes=(
            "uint8[1,16,64]",
            "float[192]",
            "float[]",
            "float[]",
            "uint8[]",
            "int8[]",
        ),
        output_shapes=("float[1,16,64]",),
    )
    gqa = _op(
        "gqa",
        "GroupQueryAttention",
        input_shapes=(
            "float[1,16,64]",
            "float[1,16,32]",
            "float[1,16,32]",
            "int32[1]",
            "int32[]",
        ),
        output_shapes=("float[1,16,64]", "float[1,2,16,16]", "float[1,2,16,16]"),
    )
    points = {p.node: p for p in roofline_points({}, [qattention, gqa], CEILINGS)}
    projection = 2 * seq * hidden * 3 * hidden + seq * 3 * hidden
    assert points["qattention"].flops == projection + 4 * seq * seq * hidden
    assert points["qattention"].bytes == 18_186  # the pre-packed weight's bytes added back
    assert points["gqa"].flops == 4 * seq * seq * 64 + 5 * 4 * seq * seq  # 4 heads of 16
    assert points["gqa"].bytes == 16_392
    assert {p.matched_by for p in points.values()} == {"shapes"}


def test_an_op_with_no_flop_formula_is_listed_never_called_data_movement(tmp_path: Path) -> None:
    model = _model(
        [
            helper.make_node("Einsum", ["x", "w"], ["h"], name="einsum", equation="ij,jk->ik"),
            helper.make_node("Relu", ["h"], ["y"], name="relu"),
        ],
        [_f32("x", [64, 256])],
        [_f32("y", [64, 256])],
        [_weight("w", (256, 256))],
    )
    path = tmp_path / "einsum.onnx"
    onnx.save(model, str(path))
    roof = _roofline_of(path)
    assert [p["node"] for p in roof["points"]] == ["relu"]
    (row,) = roof["summary"]["uncosted"]
    assert (row["op_type"], row["nodes"], row["reason"]) == (
        "Einsum",
        ["einsum"],
        "no FLOP formula for this op type",
    )
    assert 0.0 < row["share"] <= 1.0
    assert roof["summary"]["uncosted_time_share"] == pytest.approx(row["share"])
    ceilings, points = roofline_from_dict(roof)
    svg = render_roofline_svg(ceilings, points, title="t", uncosted=roof["summary"]["uncosted"])
    notes = " ".join(t.text or "" for t in ET.fromstring(svg).iter(f"{SVG_NS}text"))
    assert f"not costed (no FLOP count; not drawn): Einsum {row['share']:.0%}" in notes
    assert "data movement" not in notes


def test_a_matmul_whose_shapes_stay_unknown_is_uncosted_never_zero_flops() -> None:
    costs = {"mm": OpCost("mm", "MatMul", 0, 4096, complete=False)}
    operators = [_op("mm", "MatMul", input_shapes=("float[?,64]",), output_shapes=("float",))]
    assert roofline_points(costs, operators, CEILINGS) == []
    from pytest_inferperf.onnxrt.roofline import uncosted_operators

    assert [
        (r["op_type"], r["nodes"], r["reason"]) for r in uncosted_operators(costs, operators)
    ] == [("MatMul", ["mm"], "shapes unknown")]
