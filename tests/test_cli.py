"""The ``inferperf analyse | validate | compare`` commands, run for real on the example models.

Each command goes through ``pytest_inferperf.cli.main.main`` (one through ``python -m``), measures
with few repeats, and its files are read back: report.json must load as a Profile,
report.html must be self-contained and escape every name, exit codes must follow
0 ok / 1 regression / 2 usage error.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from pytest_inferperf.cli.main import main
from pytest_inferperf.core.profile import Profile
from pytest_inferperf.report.markdown import md

REPO = Path(__file__).resolve().parent.parent
FAST = ["--repeat", "5", "--warmup", "1"]
SCRIPT_NAME = "<script>alert(1)</script>"
EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", re.IGNORECASE)


@pytest.fixture(autouse=True)
def _no_job_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    """A CI runner's own summary file must not receive these tests' reports."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


@pytest.fixture(scope="module")
def models(example_models: dict[str, Path]) -> dict[str, Path]:
    return example_models


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def baseline(
    models: dict[str, Path], cache_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """report.json of MobileNetV2 measured with 6 repeats (enough for the rank test)."""
    out = tmp_path_factory.mktemp("baseline")
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("GITHUB_STEP_SUMMARY", raising=False)
        rc = main(
            [
                "analyse",
                str(models["mobilenet_v2"]),
                "--repeat",
                "6",
                "--warmup",
                "1",
                "--out",
                str(out),
                "--cache-dir",
                str(cache_dir),
            ]
        )
    assert rc == 0
    return out / "report.json"


def _edit(src: Path, dst: Path, change) -> Path:
    data = json.loads(src.read_text())
    change(data)
    dst.write_text(json.dumps(data))
    return dst


# -- analyse ------------------------------------------------------------------------------
def test_analyse_writes_a_profile_and_a_self_contained_report(
    models: dict[str, Path], tmp_path: Path, cache_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rep"
    rc = main(
        [
            "analyse",
            str(models["minilm"]),
            "--shape",
            "sequence=32",
            *FAST,
            "--out",
            str(out),
            "--cache-dir",
            str(cache_dir),
        ]
    )
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "measuring minilm.onnx: warm-up…" in captured.err
    assert "measuring minilm.onnx: repeat 1/5" in captured.err
    for text in (
        "inputs   batch=1, sequence=32",
        "Counted: task_clock",
        "latency_p50_ms",
        "p99 ms",
        "peak memory",
        "Top operators",
        "MatMul",
        "roofline",
        "energy",
        "Diagnosis",
        f"wrote {out / 'report.json'}",
    ):
        assert text in captured.out
    profile = Profile.load(out / "report.json")
    assert profile.name == "minilm" and len(profile.repeats) == 5
    assert profile.settings["analyse"]["dims"] == {"batch": 1, "sequence": 32}
    assert profile.operators and profile.operators[0]["op_type"]
    assert profile.roofline is not None and profile.roofline["ceilings"]["peak_gflops"] > 0
    assert profile.energy is not None  # joules, or the reason there are none
    assert "joules_per_call" in profile.energy
    assert Profile.from_dict(json.loads(profile.to_json())) == profile
    page = (out / "report.html").read_text()
    assert not EXTERNAL.search(page)
    assert "<svg" in page and "<style>" in page and "<script" not in page
    for section in (
        "What was counted",
        "Metrics",
        "Latency and memory",
        "Operators",
        "Roofline",
        "Diagnosis",
        "Energy",
        "Flamegraphs",
    ):
        assert section in page


def test_report_escapes_every_name(
    tmp_path: Path, cache_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["m"], name=SCRIPT_NAME),
            helper.make_node("Relu", ["m"], ["y"], name='relu" onmouseover="alert(2)'),
        ],
        SCRIPT_NAME,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 64])],
        [numpy_helper.from_array(np.ones((64, 64), np.float32), "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    path = tmp_path / "<img src=x onerror=alert(3)>.onnx"
    onnx.save(model, path)
    out = tmp_path / "rep"
    rc = main(["analyse", str(path), *FAST, "--out", str(out), "--cache-dir", str(cache_dir)])
    assert rc == 0, capsys.readouterr().err
    assert any(op["node"] == SCRIPT_NAME for op in Profile.load(out / "report.json").operators)
    page = (out / "report.html").read_text()
    assert SCRIPT_NAME not in page and "<img src=x" not in page
    assert 'onmouseover="alert' not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(3)&gt;" in page
    assert not EXTERNAL.search(page)


def test_second_analyse_is_cached_and_force_measures_again(
    models: dict[str, Path],
    baseline: Path,
    cache_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "rep"
    args = [
        "analyse",
        str(models["mobilenet_v2"]),
        "--repeat",
        "6",
        "--warmup",
        "1",
        "--out",
        str(out),
        "--cache-dir",
        str(cache_dir),
    ]
    capsys.readouterr()
    start = time.perf_counter()
    assert main(args) == 0
    elapsed = time.perf_counter() - start
    err = capsys.readouterr().err
    assert "cached result from" in err and "--force to measure again" in err
    assert "measuring" not in err
    assert elapsed < 5  # no measurement: reading the model and the entry
    assert Profile.load(out / "report.json").created == Profile.load(baseline).created
    assert main([*args, "--force"]) == 0
    err = capsys.readouterr().err
    assert "cached result" not in err and "measuring mobilenet_v2.onnx: warm-up…" in err


def test_corrupt_cache_entries_are_ignored_and_replaced(
    models: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("INFERPERF_CACHE_DIR", str(cache))  # no --cache-dir: the variable
    args = ["analyse", str(models["mobilenet_v2"]), *FAST, "--out", str(tmp_path / "r")]
    assert main(args) == 0
    (entry,) = cache.glob("*.json")
    for garbage in (b"\x00not json", b'{"schema": "pytest-inferperf/cache-entry"}'):
        entry.write_bytes(garbage)
        capsys.readouterr()
        assert main(args) == 0
        assert "cached result" not in capsys.readouterr().err
        assert json.loads(entry.read_text())["profile"]["name"] == "mobilenet_v2"
    assert main(args) == 0
    assert "cached result from" in capsys.readouterr().err


@pytest.mark.slow  # two analyse runs with perf record and the operator pass, ~13 s
def test_flamegraphs_are_linked_and_embedded(
    models: dict[str, Path], tmp_path: Path, cache_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rep"
    args = [
        "analyse",
        str(models["mobilenet_v2"]),
        *FAST,
        "--flamegraph",
        "--out",
        str(out),
        "--cache-dir",
        str(cache_dir),
    ]
    assert main(args) == 0
    profile = Profile.load(out / "report.json")
    assert "operators.svg" in profile.artifacts
    assert all((out / rel).is_file() for rel in profile.artifacts.values())
    page = (out / "report.html").read_text()
    assert 'href="flamegraphs/mobilenet_v2.operators.svg"' in page
    assert "data:image/svg+xml;base64," in page and not EXTERNAL.search(page)
    assert "flamegraph   operators.svg: flamegraphs/" in capsys.readouterr().out
    for svg in (out / "flamegraphs").glob("*.svg"):
        svg.unlink()
    assert main(args) == 0  # the cached result names files that are gone: measured again
    assert "cached result" not in capsys.readouterr().err
    again = Profile.load(out / "report.json")
    assert all((out / rel).is_file() for rel in again.artifacts.values())


def test_analyse_through_python_m(models: dict[str, Path], tmp_path: Path) -> None:
    env = {**os.environ, "INFERPERF_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("GITHUB_STEP_SUMMARY", None)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_inferperf",
            "analyse",
            str(models["mobilenet_v2"]),
            "--shape",
            "batch=1",
            *FAST,
            "--out",
            str(tmp_path / "rep"),
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "measuring mobilenet_v2.onnx: warm-up…" in result.stderr
    printed = Profile.from_dict(json.loads(result.stdout))
    assert printed == Profile.load(tmp_path / "rep" / "report.json")


def test_analyse_usage_errors(
    models: dict[str, Path], tmp_path: Path, cache_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["analyse", str(tmp_path / "missing.onnx")]) == 2
    assert "missing.onnx does not exist" in capsys.readouterr().err
    assert (
        main(
            [
                "analyse",
                str(models["minilm"]),
                "--shape",
                "seqence=64",
                "--cache-dir",
                str(cache_dir),
                "--out",
                str(tmp_path),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "no symbolic dimension or input named 'seqence'" in err and "sequence" in err
    assert main(["analyse", "no_such_module_xyz:run", "--out", str(tmp_path)]) == 2
    assert "cannot import 'no_such_module_xyz'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["analyse", str(models["minilm"]), "--shape", "sequence"])
    assert exc.value.code == 2


def test_analyse_a_python_callable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = tmp_path / "bench.py"
    bench.write_text(
        "import numpy as np\nA = np.ones((32, 32), np.float32)\ndef run():\n    return A @ A\n"
    )
    out = tmp_path / "rep"
    assert main(["analyse", f"{bench}:run", *FAST, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert (
        "not made     operators: not available: no ONNX Runtime session ran in one "
        "watched call of the workload"
    ) in printed
    assert Profile.load(out / "report.json").name == f"{bench}:run"


# -- validate -----------------------------------------------------------------------------
def test_validate_passes_against_its_own_baseline(
    models: dict[str, Path], baseline: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = main(
        ["validate", str(models["mobilenet_v2"]), "--baseline", str(baseline), "--tolerance", "100"]
    )
    out = capsys.readouterr().out
    assert rc == 0, out
    assert out.startswith(f"ok: {models['mobilenet_v2']} against {baseline}")
    assert main(["validate", str(baseline), "--baseline", str(baseline)]) == 0


def test_validate_fails_against_a_ten_times_faster_baseline(
    models: dict[str, Path], baseline: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Ten times, not three: each fresh process's value is divided by the machine slowdown
    # its own calibration measured, and on a machine busy with other tests that factor
    # is itself noisy (a 3x change once read +78% .. +183% across the 4 processes, below
    # the true +200%: over-corrected, so not separated at one-sided 0.005). The product
    # is right to call such a spread inconclusive; this test checks the failure path.
    def ten_times_faster(data: dict) -> None:
        for rep in data["repeats"]:
            rep["calls"] *= 10  # same counts and wall time over ten times the calls
        data["repeats"] = data["repeats"] * 2  # 12 repeats: the rank test can be credible
        for key in ("mean_ms", "min_ms", "max_ms", "stddev_ms", "p50_ms", "p95_ms", "p99_ms"):
            data["latency"][key] /= 10
        data["latency"]["calls_per_second"] *= 10

    faster = _edit(baseline, tmp_path / "faster.json", ten_times_faster)
    rc = main(["validate", str(models["mobilenet_v2"]), "--baseline", str(faster)])
    out = capsys.readouterr().out
    assert rc == 1, out
    assert out.startswith(f"inferperf: {models['mobilenet_v2']} on ")
    assert re.search(r"baseline (cpu_ms_per_call|latency_mean_ms): .* \(\+\d", out)
    # a timing regression alone: measured again in 4 fresh processes before it failed
    held = r"confirmed: (cpu_ms_per_call|latency_mean_ms) holds in 4 fresh processes"
    assert re.search(held, out)


def test_validate_usage_errors(
    models: dict[str, Path], baseline: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = str(models["mobilenet_v2"])
    assert main(["validate", model, "--baseline", str(tmp_path / "none.json")]) == 2
    err = capsys.readouterr().err
    assert "none.json does not exist" in err and "inferperf analyse" in err
    assert main(["validate", str(tmp_path / "none.onnx"), "--baseline", str(baseline)]) == 2
    assert "none.onnx does not exist" in capsys.readouterr().err
    other = _edit(
        baseline, tmp_path / "arm.json", lambda d: d.update(machine_class="arm64-cortex-a72")
    )
    for target in (model, str(baseline)):
        assert main(["validate", target, "--baseline", str(other)]) == 2
        err = capsys.readouterr().err
        assert "arm.json cannot be compared" in err and "arm64-cortex-a72" in err
    broken = tmp_path / "broken.json"
    broken.write_text("{ not json")
    assert main(["validate", model, "--baseline", str(broken)]) == 2
    err = capsys.readouterr().err
    assert f"baseline {broken} cannot be used: is not a valid profile: not UTF-8 JSON" in err


def test_validate_refuses_a_baseline_of_another_model(
    models: dict[str, Path], baseline: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stored = Profile.load(baseline).model
    assert stored is not None and len(stored["sha256"]) == 64
    assert [i["name"] for i in stored["inputs"]] and all(i["shape"] for i in stored["inputs"])
    other = str(models["mobilenet_v2_int8"])
    assert main(["validate", other, "--baseline", str(baseline), *FAST]) == 2
    err = capsys.readouterr().err
    assert f"baseline {baseline} is of another model: {other} (sha256 " in err
    assert "is not the model of the baseline, mobilenet_v2.onnx (sha256 " in err
    assert "--any-model" in err
    rc = main(["validate", other, "--baseline", str(baseline), "--any-model", *FAST])
    assert rc in (0, 1), capsys.readouterr().err


def test_validate_refuses_a_saved_profile_of_other_inputs(
    baseline: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def other_shape(data: dict) -> None:
        data["model"]["inputs"][0]["shape"] = [8, 3, 224, 224]

    edited = _edit(baseline, tmp_path / "batch8.json", other_shape)
    assert main(["validate", str(edited), "--baseline", str(baseline)]) == 2
    err = capsys.readouterr().err
    assert "was fed" in err and "[8, 3, 224, 224] now" in err


# -- compare ------------------------------------------------------------------------------
def test_compare_fp32_with_int8(
    models: dict[str, Path],
    baseline: Path,
    cache_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "cmp"
    rc = main(
        [
            "compare",
            str(models["mobilenet_v2"]),
            str(models["mobilenet_v2_int8"]),
            "--repeat",
            "6",
            "--warmup",
            "1",
            "--out",
            str(out),
            "--cache-dir",
            str(cache_dir),
            "--quality",
            "mobilenet_v2=0.72",
            "--quality",
            "mobilenet_v2_int8=0.71",
        ]
    )
    printed = capsys.readouterr().out
    assert rc == (1 if "REGRESSED" in printed else 0), printed
    assert "Compared with mobilenet_v2" in printed
    # short column names, spelt out once above the tables: a CI log stays narrow
    assert f"  A = mobilenet_v2: {models['mobilenet_v2']}" in printed
    assert f"  B = mobilenet_v2_int8: {models['mobilenet_v2_int8']}" in printed
    assert re.search(r"^metric\s+unit\s+A\s+B$", printed, re.M)
    assert re.search(r"^op type\s+A\s+B$", printed, re.M)
    assert re.search(r"latency_mean_ms\s+ms\s+\S+\s+\S+ \([+-]\d", printed)
    assert "QLinearConv" in printed and "Conv " in printed and "pareto front" in printed
    diff = out / "mobilenet_v2_int8-vs-mobilenet_v2.operators.diff.svg"
    assert diff.is_file() and "differential" in diff.read_text()
    assert (out / "pareto.svg").is_file()
    data = json.loads((out / "compare.json").read_text())
    assert [e["label"] for e in data["entries"]] == ["mobilenet_v2", "mobilenet_v2_int8"]
    assert data["pareto_front"] and set(data["pareto_front"]) <= {
        "mobilenet_v2",
        "mobilenet_v2_int8",
    }
    page = (out / "compare.html").read_text()
    assert "Side by side" in page and "data:image/svg+xml;base64," in page
    assert not EXTERNAL.search(page)
    # a saved profile and a model mix; an unknown --quality name is a usage error
    assert main(
        [
            "compare",
            str(baseline),
            str(models["mobilenet_v2_int8"]),
            "--repeat",
            "6",
            "--warmup",
            "1",
            "--out",
            str(out),
            "--cache-dir",
            str(cache_dir),
        ]
    ) in (0, 1)
    assert "cached result from" in capsys.readouterr().err
    assert (
        main(["compare", str(baseline), str(baseline), "--quality", "resnet=1", "--out", str(out)])
        == 2
    )
    assert "no compared variant is called 'resnet'" in capsys.readouterr().err


def test_compare_saved_profiles_with_a_change_from_zero(
    baseline: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def faults(value: float):
        def change(data: dict) -> None:
            for rep in data["repeats"]:
                rep["sample"]["counts"]["page_faults"].update(value=value, raw=int(value))

        return change

    quiet = _edit(baseline, tmp_path / "a.json", faults(0))
    noisy = _edit(baseline, tmp_path / "b.json", faults(50))
    out = tmp_path / "cmp"
    rc = main(["compare", str(quiet), str(noisy), "--out", str(out)])
    printed = capsys.readouterr().out
    assert rc == 0, printed  # page faults do not gate
    assert re.search(r"page_faults_per_call\s+0\s+\S+ \(from 0, worse\)", printed)
    assert "a.json" in printed and "b.json" in printed  # same name: labelled by path
    data = json.loads((out / "compare.json").read_text())
    row = next(r for r in data["metrics"] if r["metric"] == "page_faults_per_call")
    assert row["deltas"][str(noisy)] == "inf"


def test_compare_quantize_dynamic(
    models: dict[str, Path], cache_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "q"
    rc = main(
        [
            "compare",
            str(models["minilm"]),
            "--quantize",
            "dynamic",
            "--shape",
            "sequence=32",
            *FAST,
            "--out",
            str(out),
            "--cache-dir",
            str(cache_dir),
        ]
    )
    captured = capsys.readouterr()
    assert rc == (1 if "REGRESSED" in captured.out else 0), captured.out
    assert (out / "minilm_int8_dynamic.onnx").is_file()
    assert "minilm_int8_dynamic" in captured.out
    assert "DynamicQuantizeMatMul" in captured.out or "MatMulInteger" in captured.out
    assert (out / "minilm_int8_dynamic-vs-minilm.operators.diff.svg").is_file()
    assert (
        main(
            [
                "compare",
                str(models["minilm"]),
                str(models["minilm"]),
                "--quantize",
                "dynamic",
                "--out",
                str(out),
            ]
        )
        == 2
    )
    assert "--quantize dynamic takes exactly one ONNX model" in capsys.readouterr().err


# -- GitHub job summary -------------------------------------------------------------------
def test_github_step_summary_gets_markdown(
    models: dict[str, Path],
    baseline: Path,
    cache_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert (
        main(
            [
                "analyse",
                str(models["mobilenet_v2"]),
                "--repeat",
                "6",
                "--warmup",
                "1",
                "--out",
                str(tmp_path / "r"),
                "--cache-dir",
                str(cache_dir),
            ]
        )
        == 0
    )
    assert main(["validate", str(baseline), "--baseline", str(baseline)]) == 0
    text = summary.read_text()
    assert text.startswith("earlier step\n")
    assert "### inferperf analyse: mobilenet\\_v2" not in text  # underscores stay plain
    assert "### inferperf analyse: mobilenet_v2" in text
    assert "| metric | value | unit |" in text and "| latency_p50_ms |" in text
    assert "### inferperf validate:" in text and ": ok" in text


def test_markdown_escapes_names() -> None:
    assert md("a|b<c>`d\ne") == "a\\|b&lt;c&gt;\\`d e"
    assert "<" not in md(SCRIPT_NAME) and "|" not in md("x|y").replace("\\|", "")


def test_a_model_with_placeholder_dims_is_sized_per_axis_in_shapes_words(tmp_path, capsys):
    """x[-1, 3, "?", "?"] as Paddle2ONNX exports it: each free axis is its own
    <input>:<axis>, and the error says how to give it with --shape."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 3, "?", "?"])
    x.type.tensor_type.shape.dim[0].dim_value = -1
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 3, "?", "?"])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "paddle_like.onnx"
    onnx.save(model, path)
    assert main(["analyse", str(path), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "input 'x' has symbolic dimension 'x:0' (axis 0) and no value was given for it." in err
    assert "Give it with --shape x:0=N (e.g. x:0=1)." in err
    assert "make_inputs" not in err and ".." not in err.replace(str(tmp_path), "")
    code = main(
        [
            "analyse",
            str(path),
            "--shape",
            "x:0=1",
            "--shape",
            "x:2=4",
            "--shape",
            "x:3=6",
            "--repeat",
            "2",
            "--warmup",
            "1",
            "--out",
            str(tmp_path / "r"),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "inputs   x:0=1, x:2=4, x:3=6" in out
