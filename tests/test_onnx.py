"""Tests for pytest_inferperf.onnxrt.sessions and examples/build_models.py."""

from __future__ import annotations

import ast
import json
import tempfile
import time
from collections import Counter
from pathlib import Path
from types import ModuleType

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper
from onnx_graphs import make_model as _model

from pytest_inferperf.onnxrt.sessions import (
    InputSpecError,
    ModelError,
    OperatorStat,
    SessionSettings,
    default_dims,
    make_inputs,
    make_session,
    make_session_options,
    parse_ort_profile,
    profile_operators,
)

REPO = Path(__file__).resolve().parent.parent
ONNX_MODULE = REPO / "pytest_inferperf" / "onnxrt/sessions.py"
BUILD_SCRIPT = REPO / "examples" / "build_models.py"
DIMS = {"batch": 1, "sequence": 128}


# --------------------------------------------------------------------------- helpers


def _tiny_model() -> onnx.ModelProto:
    """y = relu(x) + 1 on float32 [batch, 4]."""
    one = numpy_helper.from_array(np.ones(4, np.float32), "one")
    return _model(
        [
            helper.make_node("Relu", ["x"], ["r"], name="relu"),
            helper.make_node("Add", ["r", "one"], ["y"], name="add"),
        ],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
        [one],
    )


def _gather_model() -> onnx.ModelProto:
    """ids (int32) -> Cast -> Unsqueeze -> Reshape -> Gather(10-row table); a 2-row type table;
    a mask, a float input, a bool input and a free int input."""
    inits = [
        numpy_helper.from_array(np.zeros((10, 4), np.float32), "word_table"),
        numpy_helper.from_array(np.zeros((2, 4), np.float32), "type_table"),
        numpy_helper.from_array(np.array([0], np.int64), "axes0"),
        numpy_helper.from_array(np.array([-1, 6], np.int64), "shape"),
    ]
    nodes = [
        helper.make_node("Cast", ["ids"], ["ids64"], to=TensorProto.INT64),
        helper.make_node("Unsqueeze", ["ids64", "axes0"], ["ids_u"]),
        helper.make_node("Reshape", ["ids_u", "shape"], ["ids_r"]),
        helper.make_node("Gather", ["word_table", "ids_r"], ["words"]),
        helper.make_node("Gather", ["type_table", "token_type_ids"], ["types"]),
        helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["flag"], ["flag_f"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["count"], ["count_f"], to=TensorProto.FLOAT),
    ]
    inputs = [
        helper.make_tensor_value_info("ids", TensorProto.INT32, ["batch", "sequence"]),
        helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, ["batch", "sequence"]),
        helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"]),
        helper.make_tensor_value_info("pixels", TensorProto.FLOAT16, ["batch", 3]),
        helper.make_tensor_value_info("flag", TensorProto.BOOL, [5]),
        helper.make_tensor_value_info("count", TensorProto.UINT8, [50]),
    ]
    outputs = [
        helper.make_tensor_value_info(name, TensorProto.FLOAT, None)
        for name in ("words", "types", "mask_f", "flag_f", "count_f")
    ]
    graph = helper.make_graph(nodes, "gather", inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def models(example_models: dict[str, Path]) -> dict[str, Path]:
    return example_models


@pytest.fixture(scope="module")
def minilm_trace(models: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real ORT trace of 3 MiniLM runs (no warm-up), kept on disk."""
    workdir = tmp_path_factory.mktemp("minilm_trace")
    feeds = make_inputs(models["minilm"], {"batch": 1, "sequence": 16})
    profile_operators(models["minilm"], feeds, runs=3, warmup=0, workdir=workdir)
    (trace,) = workdir.glob("*.json")
    return trace


# --------------------------------------------------------------------------- module hygiene


def test_onnx_module_never_imports_pytest() -> None:
    tree = ast.parse(ONNX_MODULE.read_text())
    imported = {
        alias.name for n in ast.walk(tree) if isinstance(n, ast.Import) for alias in n.names
    }
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not {name for name in imported if name.split(".")[0] == "pytest"}
    assert ast.get_docstring(tree)


def test_measuring_a_session_and_making_its_inputs_do_not_import_the_onnx_package(
    tmp_path: Path,
) -> None:
    # 0.8 s of imports in every xdist worker (4 s in a simulation child), for a package
    # only the graph reader needed: make_inputs, default_dims and the operator pass's
    # stored weight types read the graph through pytest_inferperf.onnxrt.graph
    import subprocess
    import sys

    model = tmp_path / "tiny.onnx"
    onnx.save(_tiny_model(), model)
    code = f"""
import json, sys
import numpy as np
from pytest_inferperf.onnxrt.sessions import (
    default_dims, describe_session, make_inputs, make_session, profile_operators, session_of)
from pytest_inferperf.measure.runner import profile
session = make_session({str(model)!r})
x = make_inputs({str(model)!r}, default_dims({str(model)!r}))
p = profile(session.run, None, x, warmup=1, repeat=3, min_time=0.0)
ops = profile_operators({str(model)!r}, x, runs=2, warmup=1, workdir={str(tmp_path)!r})
print(json.dumps({{"onnx": "onnx" in sys.modules, "found": session_of(session.run) is session,
                  "threads": describe_session(session)["intra_op_threads"],
                  "shape": list(x["x"].shape), "ops": sorted(o.op_type for o in ops),
                  "repeats": len(p.repeats)}}))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    facts = json.loads(done.stdout.splitlines()[-1])
    assert facts["onnx"] is False and facts["found"] is True and facts["repeats"] == 3
    assert facts["shape"] == [1, 4] and facts["ops"] == ["Add", "Relu"]
    assert facts["threads"] >= 1


PACKAGE = REPO / "pytest_inferperf"
# the ONNX side: running sessions, costing, precision, the operator row they share, and
# the flamegraphs drawn from operator tables
ONNX_SIDE = (
    "onnxrt.sessions",
    "onnxrt.operators",
    "onnxrt.roofline",
    "onnxrt.precision",
    "measure.flame",
)


def _package_imports() -> dict[str, dict[str, set[str]]]:
    """``{module: {imported module: names}}`` over every import of the package, the ones
    inside functions too (a lazy import still makes a cycle)."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        package = parts[:-1] if parts[-1] != "__init__" else parts
        modules[".".join(package if parts[-1] == "__init__" else parts)] = (path, package)
    graph: dict[str, dict[str, set[str]]] = {}
    for name, (path, package) in modules.items():
        edges: dict[str, set[str]] = {}
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = package[: len(package) - node.level + 1] if node.level else []
            source = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                target = f"{source}.{alias.name}"
                if target in modules:  # "from . import fold": the module itself
                    edges.setdefault(target, set())
                elif source in modules and source != name:
                    edges.setdefault(source, set()).add(alias.name)
        graph[name] = edges
    return graph


def _cycles(graph: dict[str, dict[str, set[str]]]) -> list[set[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    for v in graph:
        if v not in index:
            visit(v)
    return found


def _on_onnx_side(module: str) -> bool:
    return any(module.startswith(f"pytest_inferperf.{m}") for m in ONNX_SIDE)


def test_onnx_side_has_no_import_cycle() -> None:
    graph = _package_imports()
    assert _cycles({"a": {"b": set()}, "b": {"a": set()}}) == [{"a", "b"}]  # the scan works
    cycles = [c for c in _cycles(graph) if any(_on_onnx_side(m) for m in c)]
    assert cycles == []
    assert "pytest_inferperf.onnxrt.operators" in graph["pytest_inferperf.onnxrt.roofline"]


def test_onnx_side_imports_no_private_name_across_modules() -> None:
    graph = _package_imports()
    private = {
        (module, source, name)
        for module, edges in graph.items()
        if _on_onnx_side(module)
        for source, names in edges.items()
        for name in names
        if name.startswith("_")
    }
    assert private == set()


def test_operator_row_lives_below_onnx_roofline_and_precision() -> None:
    from pytest_inferperf.onnxrt import operators
    from pytest_inferperf.onnxrt import sessions as onnx_module

    graph = _package_imports()
    # the lowest layer imports none of ours but the error base (a module with no imports)
    assert set(graph["pytest_inferperf.onnxrt.operators"]) <= {"pytest_inferperf.core.errors"}
    assert graph.get("pytest_inferperf.core.errors", {}) == {}
    assert onnx_module.OperatorStat is operators.OperatorStat  # old import path still works
    assert list(operators.node_name_variants("fused /l0/MatMul/MatMulAddFusion")) == [
        "fused /l0/MatMul/MatMulAddFusion",
        "/l0/MatMul/MatMulAddFusion",
        "/l0/MatMul",
    ]
    assert list(operators.node_name_variants("conv_3_nchwc_token_2")) == [
        "conv_3_nchwc_token_2",
        "conv_3_nchwc",
        "conv_3",
    ]


# --------------------------------------------------------------------------- SessionSettings


def test_session_settings_defaults() -> None:
    settings = SessionSettings()
    assert settings.intra_op_threads == 1
    assert settings.inter_op_threads == 1
    assert settings.execution_mode == "sequential"
    assert settings.allow_spinning is False
    assert settings.enable_mem_arena is True
    assert settings.graph_optimization_level == "all"
    assert settings.providers == ("CPUExecutionProvider",)


def test_session_settings_round_trip_through_json() -> None:
    settings = SessionSettings(
        intra_op_threads=4,
        inter_op_threads=2,
        execution_mode="parallel",
        allow_spinning=True,
        enable_mem_arena=False,
        graph_optimization_level="basic",
    )
    data = json.loads(json.dumps(settings.to_dict()))
    assert data["providers"] == ["CPUExecutionProvider"]
    assert SessionSettings.from_dict(data) == settings
    assert SessionSettings.from_dict({}) == SessionSettings()
    assert SessionSettings.from_dict({"intra_op_threads": 3}).intra_op_threads == 3


@pytest.mark.parametrize(
    ("kwargs", "fragments"),
    [
        ({"intra_op_threads": -1}, ["intra_op_threads", "-1", "non-negative"]),
        ({"inter_op_threads": 1.5}, ["inter_op_threads", "1.5"]),
        ({"intra_op_threads": True}, ["intra_op_threads", "True"]),
        ({"execution_mode": "fast"}, ["execution_mode", "'fast'", "'sequential'", "'parallel'"]),
        (
            {"graph_optimization_level": "max"},
            ["graph_optimization_level", "'max'", "'disable'", "'basic'", "'extended'", "'all'"],
        ),
        ({"allow_spinning": "yes"}, ["allow_spinning", "'yes'"]),
        ({"enable_mem_arena": 1}, ["enable_mem_arena", "1"]),
        ({"providers": ()}, ["providers", "CPUExecutionProvider"]),
        ({"providers": ["CPUExecutionProvider"]}, ["providers", "tuple"]),
    ],
)
def test_session_settings_validation(kwargs: dict[str, object], fragments: list[str]) -> None:
    with pytest.raises(ValueError) as info:
        SessionSettings(**kwargs)  # type: ignore[arg-type]
    message = str(info.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message


def test_session_settings_from_dict_rejects_unknown_keys() -> None:
    with pytest.raises(ValueError, match=r"'threads'.*allowed keys"):
        SessionSettings.from_dict({"threads": 2})


# --------------------------------------------------------------------------- sessions


def test_make_session_options_applies_every_setting() -> None:
    settings = SessionSettings(
        intra_op_threads=3,
        inter_op_threads=2,
        execution_mode="parallel",
        allow_spinning=True,
        enable_mem_arena=False,
        graph_optimization_level="extended",
    )
    options = make_session_options(settings, profile_prefix="/tmp/x")
    assert options.intra_op_num_threads == 3
    assert options.inter_op_num_threads == 2
    assert options.execution_mode == ort.ExecutionMode.ORT_PARALLEL
    assert options.graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    assert options.enable_cpu_mem_arena is False
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "1"
    assert options.get_session_config_entry("session.inter_op.allow_spinning") == "1"
    assert options.enable_profiling is True
    assert options.profile_file_prefix == "/tmp/x"
    assert make_session_options(SessionSettings()).enable_profiling is False


@pytest.mark.parametrize("spinning", [False, True])
def test_make_session_applies_threads_and_spinning(spinning: bool, tmp_path: Path) -> None:
    path = tmp_path / "tiny.onnx"
    onnx.save(_tiny_model(), str(path))
    settings = SessionSettings(intra_op_threads=2, inter_op_threads=1, allow_spinning=spinning)
    for source in (path, str(path), path.read_bytes()):
        session = make_session(source, settings)
        options = session.get_session_options()
        assert options.intra_op_num_threads == 2
        assert options.inter_op_num_threads == 1
        expected = "1" if spinning else "0"
        assert options.get_session_config_entry("session.intra_op.allow_spinning") == expected
        assert options.get_session_config_entry("session.inter_op.allow_spinning") == expected
        assert session.get_providers() == ["CPUExecutionProvider"]
        (y,) = session.run(None, {"x": np.array([[-1, 0, 2, 3]], np.float32)})
        np.testing.assert_array_equal(y, [[1, 1, 3, 4]])


def test_make_session_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.onnx"
    with pytest.raises(ModelError, match=r"nope\.onnx.*does not exist"):
        make_session(missing)
    with pytest.raises(ModelError, match=r"nope\.onnx"):
        make_inputs(missing)


def test_make_session_invalid_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"this is not a protobuf")
    with pytest.raises(ModelError) as info:
        make_session(bad)
    assert isinstance(info.value, ValueError)
    assert str(bad) in str(info.value)
    assert "protobuf" in str(info.value).lower()  # ORT's cause is carried along
    with pytest.raises(ModelError, match="bytes"):
        make_session(b"junk")
    with pytest.raises(ModelError, match="bytes"):
        make_inputs(b"junk")


# --------------------------------------------------------------------------- inputs


def test_make_inputs_respects_gathers_masks_and_dtypes() -> None:
    model = _gather_model()
    feeds = make_inputs(model, {"batch": 4, "sequence": 300})
    assert set(feeds) == {"ids", "token_type_ids", "attention_mask", "pixels", "flag", "count"}
    ids = feeds["ids"]
    assert ids.dtype == np.int32 and ids.shape == (4, 300)
    assert ids.min() >= 0 and ids.max() <= 9  # within the 10-row table, through Cast/Unsqueeze
    assert len(np.unique(ids)) == 10  # and actually spread over it
    types = feeds["token_type_ids"]
    assert types.dtype == np.int64 and set(np.unique(types)) == {0, 1}
    mask = feeds["attention_mask"]
    assert mask.dtype == np.int64 and mask.shape == (4, 300) and (mask == 1).all()
    pixels = feeds["pixels"]
    assert pixels.dtype == np.float16 and pixels.shape == (4, 3)
    assert feeds["flag"].dtype == np.bool_ and feeds["flag"].shape == (5,)
    count = feeds["count"]
    assert count.dtype == np.uint8 and count.min() >= 0 and count.max() < 8
    # and ORT accepts all of them
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    words, *_ = session.run(None, feeds)
    assert words.shape == (200, 6, 4)


def test_make_inputs_is_deterministic_and_seeded() -> None:
    model = _gather_model()
    first = make_inputs(model, {"batch": 2, "sequence": 8}, seed=3)
    again = make_inputs(model, {"batch": 2, "sequence": 8}, seed=3)
    other = make_inputs(model, {"batch": 2, "sequence": 8}, seed=4)
    for name in first:
        np.testing.assert_array_equal(first[name], again[name])
    assert not np.array_equal(first["pixels"], other["pixels"])


def test_make_inputs_floats_are_standard_normal(models: dict[str, Path]) -> None:
    (image,) = make_inputs(models["mobilenet_v2"], {"batch": 2}).values()
    assert image.dtype == np.float32 and image.shape == (2, 3, 224, 224)
    assert abs(float(image.mean())) < 0.02 and abs(float(image.std()) - 1) < 0.02


def test_make_inputs_missing_dim_names_input_dim_and_fix() -> None:
    with pytest.raises(InputSpecError) as info:
        make_inputs(_gather_model(), {"batch": 1})
    message = str(info.value)
    assert "'ids'" in message
    assert "'sequence'" in message
    assert "dims={'sequence': 128}" in message
    assert isinstance(info.value, ValueError)


def test_make_inputs_rejects_bad_dim_value() -> None:
    with pytest.raises(InputSpecError, match=r"'sequence'.*positive int"):
        make_inputs(_gather_model(), {"batch": 1, "sequence": 0})


def test_make_inputs_unnamed_dim_by_input_and_axis() -> None:
    model = _tiny_model()
    model.graph.input[0].type.tensor_type.shape.dim[0].Clear()
    with pytest.raises(InputSpecError, match="'x:0'"):
        make_inputs(model)
    assert make_inputs(model, {"x:0": 5})["x"].shape == (5, 4)


def test_default_dims() -> None:
    assert default_dims(_gather_model()) == {"batch": 1, "sequence": 128}
    model = _gather_model()
    for vi in model.graph.input:
        for dim, name in zip(
            vi.type.tensor_type.shape.dim, ("batch_size", "sequence_length"), strict=False
        ):
            if dim.HasField("dim_param"):
                dim.dim_param = name
    model.graph.input[3].type.tensor_type.shape.dim[1].dim_param = "channels"
    assert default_dims(model) == {"batch_size": 1, "sequence_length": 128}
    with pytest.raises(InputSpecError, match="'channels'"):
        make_inputs(model, default_dims(model))


def test_make_inputs_on_minilm_runs_in_ort(models: dict[str, Path]) -> None:
    path = models["minilm"]
    assert default_dims(path) == DIMS
    feeds = make_inputs(path, {"batch": 2, "sequence": 32})
    assert {k: (v.dtype, v.shape) for k, v in feeds.items()} == {
        name: (np.dtype(np.int64), (2, 32))
        for name in ("input_ids", "attention_mask", "token_type_ids")
    }
    assert feeds["input_ids"].min() >= 0 and feeds["input_ids"].max() < 8192
    assert feeds["input_ids"].max() > 2  # real token ids, not just 0/1
    assert (feeds["attention_mask"] == 1).all()
    assert set(np.unique(feeds["token_type_ids"])) <= {0, 1}
    (hidden,) = make_session(path).run(None, feeds)
    assert hidden.shape == (2, 32, 384) and hidden.dtype == np.float32
    assert np.isfinite(hidden).all()
    # a ModelProto or serialized bytes give the same inputs as the path
    for source in (onnx.load(str(path)), path.read_bytes()):
        other = make_inputs(source, {"batch": 2, "sequence": 32})
        for name, value in feeds.items():
            np.testing.assert_array_equal(other[name], value)


def test_make_inputs_on_hugging_face_style_dims(models: dict[str, Path], tmp_path: Path) -> None:
    """HF exports name their dims batch_size / sequence_length."""
    model = onnx.load(str(models["minilm"]))
    for vi in model.graph.input:
        shape = vi.type.tensor_type.shape
        shape.dim[0].dim_param, shape.dim[1].dim_param = "batch_size", "sequence_length"
    path = tmp_path / "hf.onnx"
    onnx.save(model, str(path))
    feeds = make_inputs(path, {**default_dims(path), "sequence_length": 64})
    (hidden,) = make_session(path).run(None, feeds)
    assert hidden.shape == (1, 64, 384) and np.isfinite(hidden).all()


# --------------------------------------------------------------------------- example models


@pytest.mark.parametrize("name", ["mobilenet_v2", "mobilenet_v2_int8", "minilm", "minilm_int8"])
def test_example_models_run_fast_and_finite(models: dict[str, Path], name: str) -> None:
    path = models[name]
    feeds = make_inputs(path, {k: v for k, v in DIMS.items() if k in default_dims(path)})
    session = make_session(path)
    (out,) = session.run(None, feeds)
    expected = (1, 1000) if name.startswith("mobilenet") else (1, 128, 384)
    assert out.shape == expected and np.isfinite(out).all()
    assert float(np.abs(out).max()) < 1e3
    times = []
    for _ in range(3):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append(time.perf_counter() - start)
    assert min(times) < 0.5  # ~5-20 ms on one core; generous for loaded CI machines


def test_example_models_metadata(models: dict[str, Path]) -> None:
    for name in ("mobilenet_v2", "minilm"):
        model = onnx.load(str(models[name]))
        onnx.checker.check_model(model)
        assert model.ir_version == 8
        assert {o.domain: o.version for o in model.opset_import}[""] == 17


def test_mobilenet_structure(models: dict[str, Path]) -> None:
    model = onnx.load(str(models["mobilenet_v2"]))
    (image,) = model.graph.input
    dims = image.type.tensor_type.shape.dim
    assert image.name == "image" and dims[0].dim_param == "batch"
    assert [d.dim_value for d in dims[1:]] == [3, 224, 224]
    assert [o.name for o in model.graph.output] == ["logits"]
    ops = Counter(n.op_type for n in model.graph.node)
    assert ops["Add"] == 10  # residuals: n-1 per group for groups 2..6 = 1+2+3+2+2
    assert ops["Conv"] == 1 + 17 * 3 - 1 + 1  # stem, 17 blocks (first has no expand), head
    assert ops["Gemm"] == 1 and ops["GlobalAveragePool"] == 1
    shapes = {t.name: tuple(t.dims) for t in model.graph.initializer}
    groups = {
        n.name: {a.name: helper.get_attribute_value(a) for a in n.attribute}.get("group", 1)
        for n in model.graph.node
        if n.op_type == "Conv"
    }
    depthwise = [n for n in model.graph.node if groups.get(n.name, 1) > 1]
    assert len(depthwise) == 17
    for node in depthwise:
        assert shapes[node.input[1]] == (groups[node.name], 1, 3, 3)


def test_minilm_structure(models: dict[str, Path]) -> None:
    model = onnx.load(str(models["minilm"]))
    assert [i.name for i in model.graph.input] == ["input_ids", "attention_mask", "token_type_ids"]
    for vi in model.graph.input:
        assert vi.type.tensor_type.elem_type == TensorProto.INT64
        assert [d.dim_param for d in vi.type.tensor_type.shape.dim] == ["batch", "sequence"]
    assert [o.name for o in model.graph.output] == ["last_hidden_state"]
    ops = Counter(n.op_type for n in model.graph.node)
    assert ops["LayerNormalization"] == 1 + 2 * 2
    assert ops["Erf"] == 2 and ops["Softmax"] == 2 and ops["Gather"] == 4
    assert ops["MatMul"] == 2 * (4 + 2 + 2)


def test_quantized_models_use_integer_ops(models: dict[str, Path]) -> None:
    minilm_ops = {n.op_type for n in onnx.load(str(models["minilm_int8"])).graph.node}
    assert {"MatMulInteger", "DynamicQuantizeLinear"} <= minilm_ops
    cnn_ops = {n.op_type for n in onnx.load(str(models["mobilenet_v2_int8"])).graph.node}
    assert {"QLinearConv", "QuantizeLinear"} <= cnn_ops
    size = {name: path.stat().st_size for name, path in models.items()}
    assert size["mobilenet_v2_int8"] < 0.5 * size["mobilenet_v2"]
    # MiniLM keeps its 12.6 MB float embedding tables; the 1.8 M encoder weights shrink 4x
    assert size["minilm"] - size["minilm_int8"] > 0.7 * 2 * 1.77e6 * 3


@pytest.mark.parametrize("name", ["minilm", "mobilenet_v2"])
def test_quantized_models_track_float_models(models: dict[str, Path], name: str) -> None:
    dims = {
        k: v for k, v in {"batch": 1, "sequence": 32}.items() if k in default_dims(models[name])
    }
    feeds = make_inputs(models[name], dims)
    (ref,) = make_session(models[name]).run(None, feeds)
    (got,) = make_session(models[f"{name}_int8"]).run(None, feeds)
    cosine = float(np.dot(ref.ravel(), got.ravel()) / np.linalg.norm(ref) / np.linalg.norm(got))
    assert cosine > 0.9


def test_build_all_skips_existing_files(models: dict[str, Path], build_models: ModuleType) -> None:
    assert set(models) == {"mobilenet_v2", "mobilenet_v2_int8", "minilm", "minilm_int8"}
    directory = models["minilm"].parent
    assert sorted(p.name for p in directory.iterdir()) == sorted(f"{n}.onnx" for n in models)
    before = {name: path.stat().st_mtime_ns for name, path in models.items()}
    assert build_models.build_all(directory) == models
    assert {name: path.stat().st_mtime_ns for name, path in models.items()} == before


def test_builders_are_seeded(build_models: ModuleType, tmp_path: Path) -> None:
    a = build_models.build_mobilenet_v2(tmp_path / "a.onnx", image_size=64, seed=1)
    b = build_models.build_mobilenet_v2(tmp_path / "b.onnx", image_size=64, seed=1)
    c = build_models.build_mobilenet_v2(tmp_path / "c.onnx", image_size=64, seed=2)
    assert a.read_bytes() == b.read_bytes() != c.read_bytes()
    small = build_models.build_minilm(tmp_path / "m.onnx", layers=1, hidden=64, heads=4, vocab=100)
    feeds = make_inputs(small, {"batch": 1, "sequence": 8})
    assert feeds["input_ids"].max() < 100
    (hidden,) = make_session(small).run(None, feeds)
    assert hidden.shape == (1, 8, 64)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.onnx", "b.onnx", "c.onnx", "m.onnx"]


# --------------------------------------------------------------------------- profiles


@pytest.mark.parametrize("name", ["mobilenet_v2", "minilm", "minilm_int8"])
def test_profile_operators_excludes_warmup(
    models: dict[str, Path], name: str, tmp_path: Path
) -> None:
    path = models[name]
    dims = {k: v for k, v in {"batch": 1, "sequence": 32}.items() if k in default_dims(path)}
    stats = profile_operators(path, make_inputs(path, dims), runs=3, warmup=2, workdir=tmp_path)
    assert len(stats) > 20
    assert {s.calls for s in stats} == {3}  # every node runs once per inference
    assert sum(s.share for s in stats) == pytest.approx(1.0)
    totals = [s.total_us for s in stats]
    assert totals == sorted(totals, reverse=True)
    for stat in stats:
        assert stat.mean_us == pytest.approx(stat.total_us / 3)
        assert stat.op_type and stat.node and not stat.node.endswith("_kernel_time")
        assert stat.output_shapes and stat.output_bytes is not None and stat.output_bytes > 0
    (trace,) = tmp_path.glob("*.json")  # workdir keeps the trace
    assert [s.calls for s in parse_ort_profile(trace)] == [5] * len(stats)
    assert {s.calls for s in parse_ort_profile(trace, skip_runs=4)} == {1}
    assert parse_ort_profile(trace, skip_runs=5) == []


def test_profile_operators_cleans_up_temp_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    model = _tiny_model().SerializeToString()
    stats = profile_operators(model, {"x": np.ones((1, 4), np.float32)}, runs=2, warmup=1)
    assert {s.op_type for s in stats} == {"Relu", "Add"}
    assert {s.calls for s in stats} == {2}
    assert list(tmp_path.iterdir()) == []


def test_profile_operators_validates_counts() -> None:
    with pytest.raises(ValueError, match="runs"):
        profile_operators(b"", {}, runs=0)
    with pytest.raises(ValueError, match="warmup"):
        profile_operators(b"", {}, warmup=-1)
    with pytest.raises(ValueError, match="skip_runs"):
        parse_ort_profile([], skip_runs=-1)


def test_parse_minilm_trace_shapes_and_memory(minilm_trace: Path) -> None:
    stats = parse_ort_profile(minilm_trace)
    by_op = Counter(s.op_type for s in stats)
    assert by_op["LayerNormalization"] == 5
    assert all(s.calls == 3 for s in stats)
    gathers = [s for s in stats if s.op_type == "Gather" and "word" in s.node]
    assert gathers, [s.node for s in stats]
    assert gathers[0].output_shapes == ("float[1,16,384]",)
    assert gathers[0].output_bytes == 16 * 384 * 4
    assert gathers[0].parameter_bytes == 8192 * 384 * 4


def test_parse_truncated_trace(minilm_trace: Path, tmp_path: Path) -> None:
    text = minilm_trace.read_text()
    full = parse_ort_profile(minilm_trace)
    # no closing bracket
    no_bracket = tmp_path / "no_bracket.json"
    no_bracket.write_text(text.rstrip().removesuffix("]"))
    assert parse_ort_profile(no_bracket) == full
    # cut in the middle of the last line: the final model_run event is lost, so the
    # third run cannot be delimited and is dropped
    lines = text.rstrip().splitlines()
    assert '"model_run"' in lines[-2]
    cut = tmp_path / "cut.json"
    cut.write_text("\n".join(lines[:-2]) + "\n" + lines[-2][: len(lines[-2]) // 2])
    stats = parse_ort_profile(cut)
    assert {s.calls for s in stats} == {2}
    assert {s.node for s in stats} == {s.node for s in full}
    assert sum(s.share for s in stats) == pytest.approx(1.0)
    # garbage-only file
    empty = tmp_path / "empty.json"
    empty.write_text('[\n{"cat" : "Sess')
    assert parse_ort_profile(empty) == []


def _event(name: str, ts: float, dur: float, cat: str = "Node", **args: object) -> dict:
    return {"cat": cat, "name": name, "ts": ts, "dur": dur, "ph": "X", "args": args}


def test_parse_synthetic_events_counts_only_kernel_time() -> None:
    events = [
        _event("session_initialization", 0, 50, cat="Session"),
        _event("a_kernel_time", 60, 999, op_name="Conv"),  # before any run: dropped
        # run 0 (warm-up) at 100..200
        _event("a_kernel_time", 110, 40, op_name="Conv"),
        _event("b_kernel_time", 160, 30, op_name="Relu"),
        _event("model_run", 100, 100, cat="Session"),
        # run 1 at 300..400
        _event("a_fence_before", 305, 500, op_name="Conv"),
        _event(
            "a_kernel_time",
            310,
            60,
            op_name="Conv",
            input_type_shape=[{"float": [1, 3, 8, 8]}, {"float": [4, 3, 3, 3]}],
            output_type_shape=[{"float": [1, 4, 8, 8]}],
            output_size="1024",
            activation_size="768",
            parameter_size="432",
        ),
        _event("a_fence_after", 371, 500, op_name="Conv"),
        _event("b_kernel_time", 380, 20, op_name="Relu"),
        _event("SequentialExecutor::Execute", 301, 98, cat="Session"),
        _event("model_run", 300, 100, cat="Session"),
        # run 2 at 500..600
        _event("a_kernel_time", 510, 40, op_name="Conv"),
        _event("b_kernel_time", 560, 80, op_name="Relu"),  # starts inside the run
        _event("model_run", 500, 100, cat="Session"),
    ]
    stats = parse_ort_profile(events, skip_runs=1)
    assert [(s.node, s.op_type, s.calls, s.total_us) for s in stats] == [
        ("a", "Conv", 2, 100.0),
        ("b", "Relu", 2, 100.0),
    ]
    conv = stats[0]
    assert conv.mean_us == 50.0 and conv.share == 0.5
    assert conv.input_shapes == ("float[1,3,8,8]", "float[4,3,3,3]")
    assert conv.output_shapes == ("float[1,4,8,8]",)
    assert (conv.output_bytes, conv.activation_bytes, conv.parameter_bytes) == (1024, 768, 432)
    assert stats[1].output_bytes is None
    # without skipping, run 0 counts too; the event before any run never does
    assert [s.calls for s in parse_ort_profile(events)] == [3, 3]


def test_parse_trace_without_runs_is_one_run() -> None:
    events = [_event("x_kernel_time", 0, 30, op_name="Add"), _event("y_kernel_time", 40, 10)]
    stats = parse_ort_profile(events)
    assert [(s.node, s.op_type, s.share) for s in stats] == [("x", "Add", 0.75), ("y", "", 0.25)]
    assert parse_ort_profile(events, skip_runs=1) == []


def test_operator_stat_json_round_trip() -> None:
    stat = OperatorStat(
        node="conv_1",
        op_type="Conv",
        calls=3,
        total_us=30.0,
        mean_us=10.0,
        share=0.25,
        input_shapes=("float[1,3,8,8]",),
        output_shapes=("float[1,4,8,8]",),
        output_bytes=1024,
        activation_bytes=None,
    )
    data = json.loads(json.dumps(stat.to_dict()))
    assert data["input_shapes"] == ["float[1,3,8,8]"]
    assert OperatorStat.from_dict(data) == stat


@settings(max_examples=60, deadline=None, database=None)
@given(fraction=st.floats(min_value=0.0, max_value=1.0))
def test_parse_trace_cut_anywhere_never_fails(minilm_trace: Path, fraction: float) -> None:
    """However ORT's trace is cut short, the parser returns a consistent subset."""
    text = minilm_trace.read_text()
    full = {s.node: s.calls for s in parse_ort_profile(minilm_trace)}
    with tempfile.TemporaryDirectory() as tmp:
        cut = Path(tmp) / "cut.json"
        cut.write_text(text[: int(len(text) * fraction)])
        stats = parse_ort_profile(cut)
    for stat in stats:
        assert 1 <= stat.calls <= full[stat.node]
    if stats:
        assert sum(s.share for s in stats) == pytest.approx(1.0)


HF_EXPORT = Path(__file__).resolve().parent / "fixtures" / "hf" / "tiny_bert_hf.onnx"


def test_a_real_hugging_face_export_runs_without_hand_written_inputs():
    """A BertModel exported by torch.onnx.export (see fixtures/hf/export_tiny_bert.py)."""
    dims = default_dims(HF_EXPORT)
    assert dims == {"batch": 1, "sequence": 128}
    feeds = make_inputs(HF_EXPORT, dims)
    assert feeds["input_ids"].dtype == np.int64
    assert feeds["input_ids"].min() >= 0 and feeds["input_ids"].max() < 1000  # vocab_size
    assert (feeds["attention_mask"] == 1).all()
    assert set(np.unique(feeds["token_type_ids"])) <= {0, 1}  # type_vocab_size 2
    hidden, pooled = make_session(HF_EXPORT).run(None, feeds)
    assert hidden.shape == (1, 128, 64) and pooled.shape == (1, 64)
    assert np.isfinite(hidden).all() and np.isfinite(pooled).all()


# --------------------------------------------------------------------------- operator pass


def _chain_session(tmp_path: Path, name: str, matmuls: int = 1) -> ort.InferenceSession:
    from onnx_graphs import matmul_chain

    path = tmp_path / f"{name}.onnx"
    onnx.save(matmul_chain(matmuls, rows=16, k=32), str(path))
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def _table(fields: dict) -> list[tuple[str, str, str]]:
    return sorted((o["model"], o["op_type"], o["node"]) for o in fields["operators"])


def test_a_wrapped_session_run_gets_the_same_operator_table_as_a_direct_one(tmp_path):
    import functools

    from pytest_inferperf.onnxrt.sessions import describe_session, operator_times

    session = _chain_session(tmp_path, "encoder")
    feeds = {"x": np.ones((16, 32), np.float32)}

    def pipeline():  # tokenise, run, post-process: the common shape of a workload
        prepared = {"x": (feeds["x"] * 0.5).astype(np.float32)}
        (out,) = session.run(None, prepared)
        return float(out.sum())

    direct, why_direct = operator_times(functools.partial(session.run, None, feeds))
    wrapped, why_wrapped = operator_times(pipeline)
    assert why_direct is None and why_wrapped is None
    assert _table(wrapped) == _table(direct) and len(_table(direct)) >= 4
    assert {r["op_type"] for r in wrapped["op_types"]} == {r["op_type"] for r in direct["op_types"]}
    assert (direct["operator_pass"]["session"], wrapped["operator_pass"]["session"]) == (
        "direct",
        "found",
    )
    assert wrapped["operator_pass"]["sessions"] == [
        {
            "label": "encoder",
            "how": "found",
            "runs_per_call": 1,
            "seconds_per_call": wrapped["operator_pass"]["sessions"][0]["seconds_per_call"],
            "options": describe_session(session),
            "inputs": [[{"name": "x", "shape": [16, 32], "dtype": "float32"}]],
        }
    ]
    assert {o["model"] for o in wrapped["operators"]} == {"encoder"}


def test_only_the_profiled_runs_of_the_operator_pass_are_timed(tmp_path, monkeypatch):
    """``timed`` holds the profiled runs of each second session, not its making (nor the
    watched call that finds the sessions, nor reading the trace)."""
    import contextlib

    import pytest_inferperf.onnxrt.sessions as onnx_module

    encoder = _chain_session(tmp_path, "encoder")
    classifier = _chain_session(tmp_path, "classifier")
    feeds = {"x": np.ones((16, 32), np.float32)}
    log: list[str] = []
    made = onnx_module.replica_session

    class Logged:  # the second session, its runs logged
        def __init__(self, session):
            self.session = session

        def run(self, *args):
            log.append("profiled run")
            return self.session.run(*args)

        def end_profiling(self):
            log.append("trace")
            return self.session.end_profiling()

    def replica_session(*args, **kwargs):
        log.append("session")
        return Logged(made(*args, **kwargs))

    @contextlib.contextmanager
    def timed():
        log.append("stop")
        yield
        log.append("go")

    def pipeline():
        log.append("run")
        classifier.run(None, feeds)
        return encoder.run(None, feeds)

    monkeypatch.setattr(onnx_module, "replica_session", replica_session)
    fields, why = onnx_module.operator_times(pipeline, timed=timed)
    assert why is None and {s["label"] for s in fields["operator_pass"]["sessions"]} == {
        "encoder",
        "classifier",
    }
    steps = [step for i, step in enumerate(log) if i == 0 or step != log[i - 1]]
    once = ["session", "stop", "profiled run", "go", "trace"]
    assert steps == ["run", *once, *once]
    runs = onnx_module.PASS_WARMUP + fields["operator_pass"]["runs"]
    assert log.count("profiled run") == 2 * runs


def test_each_session_a_workload_runs_gets_its_own_table(tmp_path):
    from pytest_inferperf.measure.flame.ops import operator_stacks
    from pytest_inferperf.onnxrt.sessions import operator_times

    encoder = _chain_session(tmp_path, "encoder", matmuls=2)
    classifier = _chain_session(tmp_path, "classifier")
    feeds = {"x": np.ones((16, 32), np.float32)}

    def pipeline():
        for _ in range(2):  # the classifier runs twice per call
            classifier.run(None, feeds)
        return encoder.run(None, feeds)

    fields, why = operator_times(pipeline)
    assert why is None
    sessions = {s["label"]: s for s in fields["operator_pass"]["sessions"]}
    assert set(sessions) == {"encoder", "classifier"}
    assert (sessions["encoder"]["runs_per_call"], sessions["classifier"]["runs_per_call"]) == (1, 2)
    by_model = Counter(o["model"] for o in fields["operators"])
    assert by_model["encoder"] > by_model["classifier"] > 0
    assert sum(o["share"] for o in fields["operators"]) == pytest.approx(1.0)
    assert {k.split(";")[0] for k in operator_stacks(fields["operators"], "x")} == {
        "encoder",
        "classifier",
    }
    matmul = next(r for r in fields["op_types"] if r["op_type"] == "MatMul")
    assert matmul["nodes"] == 4 + 2  # both sessions' MatMuls, summed run by run


def test_no_session_found_says_why_in_one_line(tmp_path):
    from pytest_inferperf.onnxrt.sessions import operator_table, operator_times

    fields, why = operator_times(lambda: np.ones(4).sum())
    assert fields == {} and why == (
        "not available: no ONNX Runtime session ran in one "
        "watched call of the workload (InferenceSession.run was "
        "never called)"
    )
    assert operator_table(lambda: None) == (None, why)
    session = _chain_session(tmp_path, "bound")
    binding = session.io_binding()
    binding.bind_cpu_input("x", np.ones((16, 32), np.float32))
    binding.bind_output(session.get_outputs()[0].name)
    before = {n: ort.InferenceSession.__dict__.get(n) for n in ("run", "run_with_iobinding")}
    fields, why = operator_times(lambda: session.run_with_iobinding(binding))
    assert fields == {} and "run_with_iobinding, whose inputs cannot be replayed" in why
    assert "\n" not in why
    after = {n: ort.InferenceSession.__dict__.get(n) for n in ("run", "run_with_iobinding")}
    assert after == before  # the watch is undone


def test_analyse_of_a_python_callable_gets_the_operator_table_of_its_session(tmp_path):
    from pytest_inferperf.measure.target import analyse_callable
    from pytest_inferperf.onnxrt.sessions import operator_times

    session = _chain_session(tmp_path, "encoder")
    bench = tmp_path / "bench_pipeline.py"
    bench.write_text(
        "import numpy as np, onnxruntime as ort\n"
        f"S = ort.InferenceSession({str(tmp_path / 'encoder.onnx')!r}, "
        "providers=['CPUExecutionProvider'])\n"
        "def run():\n"
        "    x = np.ones((16, 32), np.float32) * 0.5  # preprocess\n"
        "    return float(S.run(None, {'x': x})[0].sum())  # post-process\n"
    )
    profile = analyse_callable(
        f"{bench}:run", warmup=1, repeat=3, timeout=20, backend="none", out_dir=tmp_path / "rep"
    )
    direct, _ = operator_times(lambda: session.run(None, {"x": np.ones((16, 32), np.float32)}))
    assert _table({"operators": profile.operators}) == _table(direct)
    assert profile.settings["operator_pass"]["sessions"][0]["label"] == "encoder"
    assert "operators" not in profile.settings["analyse"]["notes"]


def test_profile_with_operators_gives_a_wrapper_the_table_of_a_direct_call(tmp_path):
    from pytest_inferperf import profile

    session = _chain_session(tmp_path, "encoder")
    feeds = {"x": np.ones((16, 32), np.float32)}

    def pipeline():
        return float(session.run(None, {"x": feeds["x"] * 0.5})[0].sum())

    fast = {"backend": "none", "warmup": 1, "repeat": 3, "min_time": 0.001}
    direct = profile(session.run, None, feeds, operators=True, **fast)
    wrapped = profile(pipeline, operators=True, **fast)
    assert _table({"operators": wrapped.operators}) == _table({"operators": direct.operators})
    assert wrapped.settings["operator_pass"]["session"] == "found"
    assert direct.settings["operator_pass"]["session"] == "direct"
    plain = profile(lambda: sum(range(100)), operators=True, **fast)
    assert plain.operators == () and plain.settings["operator_pass"]["skipped"].startswith(
        "not available: no ONNX Runtime session ran"
    )
    assert profile(pipeline, **fast).operators == ()  # off by default: no extra pass
