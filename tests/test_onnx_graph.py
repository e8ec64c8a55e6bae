"""The graph reader against the onnx package's own parse of the same bytes.

onnx (a dependency, installed for the tests) builds and serialises the models; the
reader must see exactly what onnx sees in every field it reads, and must refuse any
other bytes with GraphFormatError, never another exception.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from pytest_inferperf.onnxrt.graph import (
    ELEMENT_TYPE_NAMES,
    GraphFormatError,
    read_graph,
)
from pytest_inferperf.onnxrt.sessions import ModelError, make_inputs

REPO = Path(__file__).resolve().parents[1]


def onnx_view(model: onnx.ModelProto) -> dict:
    """What the reader reads, as onnx's own objects state it."""
    graph = model.graph

    def shape(vi: onnx.ValueInfoProto):
        if not vi.type.HasField("tensor_type"):
            return "not a tensor"
        tensor_type = vi.type.tensor_type
        if not tensor_type.HasField("shape"):
            return None
        return tuple(
            (
                d.dim_value if d.HasField("dim_value") else None,
                d.dim_param if d.HasField("dim_param") else None,
            )
            for d in tensor_type.shape.dim
        )

    def attributes(node: onnx.NodeProto):
        return tuple(
            (
                a.name,
                a.i if a.HasField("i") else None,
                tuple(a.t.dims) if a.HasField("t") else None,
            )
            for a in node.attribute
        )

    return {
        "inputs": [(vi.name, shape(vi), vi.type.tensor_type.elem_type) for vi in graph.input],
        "initializers": [(t.name, t.data_type, tuple(t.dims)) for t in graph.initializer]
        + [(s.values.name, s.values.data_type, tuple(s.dims)) for s in graph.sparse_initializer],
        "nodes": [
            (n.name, n.op_type, tuple(n.input), tuple(n.output), attributes(n)) for n in graph.node
        ],
    }


def reader_view(source) -> dict:
    graph = read_graph(source)

    def shape(vi):
        if vi.tensor is None:
            return "not a tensor"
        if vi.tensor.shape is None:
            return None
        return tuple((d.value, d.param) for d in vi.tensor.shape)

    return {
        "inputs": [
            (vi.name, shape(vi), vi.tensor.elem_type if vi.tensor else 0) for vi in graph.inputs
        ],
        "initializers": [(t.name, t.data_type, t.dims) for t in graph.initializers],
        "nodes": [
            (
                n.name,
                n.op_type,
                n.inputs,
                n.outputs,
                tuple((a.name, a.i, a.tensor.dims if a.tensor else None) for a in n.attributes),
            )
            for n in graph.nodes
        ],
    }


# -- generated models --------------------------------------------------------------
names = st.text(alphabet="abcxyz_0189/:.é", min_size=1, max_size=8)
int64s = st.integers(min_value=-(2**63), max_value=2**63 - 1)
dims = st.one_of(
    st.integers(min_value=-(2**40), max_value=2**40),  # dim_value (negative: invalid, kept)
    names,  # dim_param
    st.none(),  # neither: an unnamed axis
)


@st.composite
def value_infos(draw, name: str):
    kind = draw(st.sampled_from(["tensor", "tensor", "no shape", "sequence"]))
    elem = draw(st.sampled_from(sorted(ELEMENT_TYPE_NAMES)))
    if kind == "sequence":
        return helper.make_tensor_sequence_value_info(name, elem, None)
    shape = None if kind == "no shape" else draw(st.lists(dims, max_size=5))
    vi = helper.make_tensor_value_info(name, elem, shape)
    return vi


@st.composite
def models(draw) -> onnx.ModelProto:
    input_names = draw(st.lists(names, min_size=0, max_size=4, unique=True))
    inputs = [draw(value_infos(n)) for n in input_names]
    initializers = []
    for index in range(draw(st.integers(0, 3))):
        shape = draw(st.lists(st.integers(0, 3), max_size=3))
        data = np.zeros(shape, np.float32) if draw(st.booleans()) else np.zeros(shape, np.int8)
        initializers.append(numpy_helper.from_array(data, f"w{index}"))
    nodes = []
    for _ in range(draw(st.integers(0, 4))):
        attrs = {}
        if draw(st.booleans()):
            attrs["axis"] = draw(int64s)
        if draw(st.booleans()):
            attrs["alpha"] = draw(st.floats(allow_nan=False, width=32))
        if draw(st.booleans()):
            attrs["value"] = numpy_helper.from_array(
                np.zeros(draw(st.lists(st.integers(0, 4), max_size=3)), np.int64), "v"
            )
        if draw(st.booleans()):
            attrs["perm"] = draw(st.lists(int64s, min_size=1, max_size=3))
        nodes.append(
            helper.make_node(
                draw(st.sampled_from(["Gather", "Constant", "Cast", "MatMul"])),
                draw(st.lists(names, max_size=3)),
                draw(st.lists(names, max_size=2)),
                name=draw(st.one_of(st.just(""), names)),
                **attrs,
            )
        )
    sparse = []
    if draw(st.booleans()):
        values = numpy_helper.from_array(np.ones(2, np.float32), "sparse_w")
        indices = numpy_helper.from_array(np.array([0, 5], np.int64), "")
        sparse.append(helper.make_sparse_tensor(values, indices, [2, 3]))
    graph = helper.make_graph(
        nodes, "g", inputs, [], initializers, sparse_initializer=sparse or None
    )
    return helper.make_model(graph, producer_name=draw(names))


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(models())
def test_the_reader_sees_what_onnx_sees(model: onnx.ModelProto) -> None:
    data = model.SerializeToString()
    assert reader_view(data) == onnx_view(onnx.load_model_from_string(data))


@given(models(), st.data())
def test_a_cut_or_damaged_model_is_a_graph_format_error_or_reads(model, data) -> None:
    raw = bytearray(model.SerializeToString())
    if data.draw(st.booleans()):
        raw = raw[: data.draw(st.integers(0, len(raw)))]
    elif raw:
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    with contextlib.suppress(GraphFormatError):
        read_graph(bytes(raw))


@given(st.binary(max_size=200))
@example(b"")
@example(b"\x3a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01")  # an 11-byte length
@example(b"\x0b")  # wire type 3, a group
def test_any_bytes_read_or_raise_graph_format_error(raw: bytes) -> None:
    with contextlib.suppress(GraphFormatError):
        read_graph(raw)


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def test_packed_and_unpacked_dims_read_alike_and_as_onnx_reads_them() -> None:
    # onnx.proto's dims are proto2 (unpacked); a parser must accept both encodings
    packed = _field(1, _varint(3) + _varint(2**40) + _varint(-1))
    unpacked = _varint(1 << 3) + _varint(3) + _varint(1 << 3) + _varint(2**40)
    unpacked += _varint(1 << 3) + _varint(-1)
    for encoding in (packed, unpacked):
        tensor = encoding + _varint(2 << 3) + _varint(7) + _field(8, b"w")
        model = _field(7, _field(5, tensor))
        assert read_graph(model).initializers[0].dims == (3, 2**40, -1)
        assert onnx.load_model_from_string(model).graph.initializer[0].dims == [3, 2**40, -1]


def test_repeated_graph_fields_merge_as_protobuf_merges_them() -> None:
    one = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "a", [], [])
    two = helper.make_graph([helper.make_node("Tanh", ["y"], ["z"])], "b", [], [])
    data = _field(7, one.SerializeToString()) + _field(7, two.SerializeToString())
    assert [n.op_type for n in read_graph(data).nodes] == ["Relu", "Tanh"]
    assert [n.op_type for n in onnx.load_model_from_string(data).graph.node] == ["Relu", "Tanh"]


def test_weights_are_skipped_not_read(tmp_path: Path) -> None:
    # a 64 MiB initializer: its header is read, its data is walked over in the memory map
    big = numpy_helper.from_array(np.zeros((4096, 4096), np.float32), "big")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "big"], ["y"], name="mm")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4096])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4096])],
        [big],
    )
    path = tmp_path / "big.onnx"
    onnx.save(helper.make_model(graph), path)
    read = read_graph(path)
    assert [(t.name, t.data_type, t.dims) for t in read.initializers] == [
        ("big", TensorProto.FLOAT, (4096, 4096))
    ]
    assert [vi.name for vi in read.fed_inputs()] == ["x"]
    assert make_inputs(path, {"batch": 2})["x"].shape == (2, 4096)


@pytest.mark.parametrize("name", ["mobilenet_v2", "mobilenet_v2_int8", "minilm", "minilm_int8"])
def test_the_example_models_read_as_onnx_reads_them(name: str) -> None:
    path = REPO / "examples" / "models" / f"{name}.onnx"
    if not path.is_file():
        pytest.skip("examples/models not built (python examples/build_models.py)")
    assert reader_view(path) == onnx_view(onnx.load(path, load_external_data=False))


def test_a_model_that_is_not_one_names_the_file_and_the_fix(tmp_path: Path) -> None:
    good = helper.make_model(
        helper.make_graph(
            [helper.make_node("Relu", ["x"], ["y"])],
            "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        )
    ).SerializeToString()
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(good[: len(good) // 2])
    with pytest.raises(ModelError) as info:
        make_inputs(cut)
    text = str(info.value)
    assert str(cut) in text and "protobuf encoding breaks at byte" in text
    assert "complete .onnx file" in text
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    with pytest.raises(ModelError, match="the file is empty"):
        make_inputs(empty)
    with pytest.raises(ModelError, match=r"no graph \(ModelProto field 7\)"):
        make_inputs(b"\x08\x07")  # ir_version 7 and nothing else


def test_a_placeholder_dim_param_is_sized_per_axis():
    """Paddle2ONNX writes dim_param "?" for every free axis; ONNX names are C90
    identifiers, so "?" is no name, and each such axis is sized on its own."""
    from pytest_inferperf.onnxrt.graph import Dim

    assert Dim(param="?").key("x", 2) == "x:2"
    assert Dim(param="?").key("x", 3) == "x:3"
    assert Dim(param="").key("x", 0) == "x:0"
    assert Dim(param="batch_size").key("x", 0) == "batch_size"
    assert Dim(param="unk__25").key("x", 1) == "unk__25"
    assert Dim(param="N:0").key("x", 1) == "x:1"
