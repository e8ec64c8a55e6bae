"""Parallel suites: the generated 40-test suite, the examples' start-up, the peers' figures.

The timing itself is benchmarks/physical_limits.py's job (docs/benchmarks/results.md);
these tests check what it relies on: the suite it generates, the per-process work
the examples' conftest and the runner avoid, and how the peers' numbers are read and
shown.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import bench_report  # noqa: E402
import parallel_suites  # noqa: E402

pytest_plugins = ["pytester"]


def test_generated_suite_collects_40_perf_tests(pytester: pytest.Pytester) -> None:
    parallel_suites.write_suite(pytester.path)
    # its own process: the generated modules import numpy, which cannot be imported
    # again after an in-process run restores sys.modules
    result = pytester.runpytest_subprocess("suite40", "--collect-only", "-q", "-p", "no:randomly")
    result.assert_outcomes()
    ids = [ln for ln in result.outlines if "::test_" in ln]
    assert len(ids) == 40
    assert sum("test_mlp" in i for i in ids) == 20
    assert sum("test_matmul" in i or "test_sort" in i for i in ids) == 20
    # built by the process that starts pytest, before any test (or xdist worker) runs
    assert (pytester.path / "suite40" / "mlp.onnx").stat().st_size > 1_000_000


def _imports_after(code: str) -> dict[str, bool]:
    probe = textwrap.dedent(code) + textwrap.dedent(
        """
        import json, sys
        print(json.dumps({m: m in sys.modules for m in ("numpy", "onnx", "onnxruntime",
                                                         "build_models")}))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(proc.stdout.splitlines()[-1])


def test_examples_conftest_imports_nothing_heavy_when_models_exist(tmp_path: Path) -> None:
    for name in ("mobilenet_v2", "mobilenet_v2_int8", "minilm", "minilm_int8"):
        (tmp_path / f"{name}.onnx").write_bytes(b"not read")
    loaded = _imports_after(
        f"""
        import sys
        from pathlib import Path
        sys.path.insert(0, {str(REPO / "examples")!r})
        import conftest
        paths = conftest.ensure_models(Path({str(tmp_path)!r}))
        assert sorted(paths) == sorted(conftest.MODEL_NAMES), paths
        """
    )
    assert loaded == {"numpy": False, "onnx": False, "onnxruntime": False, "build_models": False}


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_examples_conftest_names_the_models_build_models_builds() -> None:
    examples_conftest = _load(REPO / "examples" / "conftest.py", "inferperf_examples_conftest")
    build_models = _load(REPO / "examples" / "build_models.py", "inferperf_examples_build")
    assert tuple(build_models.MODEL_NAMES) == examples_conftest.MODEL_NAMES


def test_a_call_without_onnx_runtime_does_not_import_onnx() -> None:
    loaded = _imports_after(
        """
        from pytest_inferperf.measure.runner import profile
        p = profile(sum, [1, 2, 3], backend="none", repeat=2, warmup=1, warmup_max=1,
                    min_time=0.0)
        assert p.calls >= 2
        """
    )
    assert loaded["onnx"] is False and loaded["onnxruntime"] is False


def test_per_call_figures_are_read_from_each_tools_own_output(tmp_path: Path) -> None:
    report = tmp_path / "report"
    report.mkdir()
    (report / "a.json").write_text(json.dumps({"metrics": {"latency_mean_ms": 0.00125}}))
    (tmp_path / "bench.json").write_text(json.dumps({"benchmarks": [{"stats": {"mean": 2e-7}}]}))
    (tmp_path / ".codspeed").mkdir()
    (tmp_path / ".codspeed" / "r.json").write_text(
        json.dumps({"benchmarks": [{"stats": {"mean_ns": 150.5}}]})
    )
    assert parallel_suites._per_call_ns("pytest-inferperf", tmp_path, report) == pytest.approx(1250)
    assert parallel_suites._per_call_ns("pytest-benchmark", tmp_path, None) == pytest.approx(200)
    assert parallel_suites._per_call_ns("pytest-codspeed", tmp_path, None) == pytest.approx(150.5)
    (tmp_path / "bench.json").write_text("{}")
    assert parallel_suites._per_call_ns("pytest-benchmark", tmp_path, None) is None


def _suite(n0: list[float], n2: list[float], identical: bool = True) -> dict:
    def runs(walls: list[float]) -> list[dict]:
        return [
            {"wall_s": w, "cpu_s": w / 2, "load_avg": [1.0, 2.5], "summary": "40 passed"}
            for w in walls
        ]

    return {
        "target": "suite40",
        "tests": 40,
        "rounds": len(n0),
        "wall_s": {"n0": n0[0], "n2": n2[0]},
        "cpu_s": {"n0": n0[0] / 2, "n2": n2[0] / 2},
        "speed_up_n2": n0[0] / n2[0],
        "cpu_ratio_n2_over_n0": n2[0] / n0[0],
        "pair_ratios_n2_over_n0": [b / a for a, b in zip(n0, n2, strict=True)],
        "verdicts_identical": identical,
        "verdicts_differing": [] if identical else ["suite40/test_numpy.py::test_sort[20000]"],
        "runs": {"n0": runs(n0), "n2": runs(n2)},
    }


def test_workers_section_shows_speed_up_load_and_verdicts() -> None:
    md = "\n".join(bench_report._workers_md("(e)", "suite40", _suite([40.0], [20.0]), "(when)"))
    assert "-n 2 is **2.00x** as fast" in md
    assert "identical across all runs: **yes**" in md
    assert "load average over its runs: 1.00-2.50" in md
    assert "| -n 2 | 1 | 20.0 | 10.0 | 1.00 -> 2.50 | 40 passed |" in md
    md = "\n".join(bench_report._workers_md("(e)", "x", _suite([40.0], [30.0], False), ""))
    assert "**NO** (differing: suite40/test_numpy.py::test_sort[20000])" in md


def test_peers_section_names_the_missing_peer() -> None:
    peers = {
        "installed": {"pytest-benchmark": True, "pytest-codspeed": False},
        "empty_function": {
            "pytest-inferperf": {"per_call_ns": 950.0, "test_s": 2.5, "process_wall_s": 6.0},
            "pytest-benchmark": {"per_call_ns": 90.0, "test_s": 1.1, "process_wall_s": 4.0},
        },
        "installed_off": {
            "none of the three": {"wall_s": 1.0, "cpu_s": 0.5, "cpu_over_none": 1.0},
            "pytest-inferperf installed, off": {"wall_s": 1.1, "cpu_s": 0.55, "cpu_over_none": 1.1},
        },
        "off_tests": 200,
    }
    md = "\n".join(bench_report._peers_md(peers, "(when)"))
    assert "| pytest-inferperf | 950 | 2.50 | 6.00 |" in md
    assert "Not installed here, so not measured: pytest-codspeed." in md
    assert "| pytest-inferperf installed, off | 1.10 | 0.55 | 1.10x |" in md


def test_simulate_speed_section_splits_start_up_from_the_repeats() -> None:
    def run(wall: float, child: float, instr: float) -> dict:
        return {
            "wall_s": wall,
            "load_avg": [11.0, 10.0],
            "tests": {
                "t.py::test_a": {
                    "instructions_per_call": instr,
                    "child_wall_s": child,
                    "includes_start_up": True,
                    "region_repeats_s": 6.5,
                    "mode": "full",
                    "child_pid": 4242,
                }
            },
        }

    speed = {
        "started": "2026-12-02T02:00:00+00:00",
        "command": "python benchmarks/simulate_speed.py",
        "load_avg_start": [11.0],
        "load_avg_end": [10.0],
        "start_up": {
            "command": "import numpy, onnx, onnxruntime",
            "wall_s": {"native": 1.5, "valgrind": 20.0},
            "runs": {"native": [1.4, 1.6], "valgrind": [19.0, 21.0]},
        },
        "example": {
            "variants": {
                "as shipped": {
                    "wall_s": 100.0,
                    "wall_over_shipped": 1.0,
                    "instructions_vs_shipped": {"t.py::test_a": 0.0},
                    "same_instructions_within_0.1pct": True,
                    "runs": [run(100.0, 81.0, 1e6)],
                },
                "--smc-check=stack": {
                    "wall_s": 70.0,
                    "wall_over_shipped": 0.7,
                    "instructions_vs_shipped": {"t.py::test_a": -0.0003},
                    "same_instructions_within_0.1pct": True,
                    "runs": [run(70.0, 60.0, 0.9997e6)],
                },
            }
        },
    }
    md = "\n".join(bench_report._simulate_speed_md(speed))
    assert "native: **1.5 s**; valgrind: **20.0 s**" in md
    assert "| t.py::test_a | 1 | 81.0 | yes | 6.5 | full |" in md
    assert "| `--smc-check=stack` | 70.0 | 0.70x | -0.0300% | yes | 11.0 |" in md


def test_uneven_suite_section_says_which_child_ran_each_test() -> None:
    def run(wall: float, pids: list[int]) -> dict:
        names = ("t.py::test_1_long", "t.py::test_2_short", "t.py::test_3_long")
        tests = {
            n: {"instructions_per_call": 1e6, "child_pid": p}
            for n, p in zip(names, pids, strict=True)
        }
        return {"wall_s": wall, "load_avg": [1.0, 1.0], "tests": tests}

    def variant(wall: float, ratio: float, diff: float, pids: list[int]) -> dict:
        return {
            "wall_s": wall,
            "wall_over_shipped": ratio,
            "instructions_vs_shipped": {"t.py::test_1_long": diff},
            "same_instructions_within_0.1pct": True,
            "runs": [run(wall, pids)],
        }

    uneven = {
        "rounds": 1,
        "variants": {
            "as shipped": variant(13.7, 1.0, 0.0, [11, 12, 12]),
            "at abc123": variant(21.7, 1.584, 0.00001, [21, 22, 21]),
        },
    }
    md = "\n".join(bench_report._uneven_md(uneven))
    assert (
        "| as shipped | 13.7 | 1.00x | test_1_long: 1, test_2_short: 2, test_3_long: 2 | yes |"
        in md
    )
    assert "| at abc123 | 21.7 | 1.58x | test_1_long: 1, test_2_short: 2, test_3_long: 1 |" in md
    assert bench_report._uneven_md({}) == []


def test_beside_section_gives_latency_beside_a_child_against_it_stopped() -> None:
    model = {
        "stopped_median_ms": 1.77,
        "beside_median_ms": 1.8167,
        "stopped_p99_ms": 2.3916,
        "beside_p99_ms": 2.8944,
        "ratio_median": 1.0305,
        "ratio_range": [1.0093, 1.044],
        "rounds_beside_slower": 4,
    }
    beside = {"rounds": 4, "calls": 150, "models": {"mobilenet_v2_int8": model}}
    md = "\n".join(bench_report._beside_md(beside))
    assert "4 rounds alternating, 150 calls per model and round" in md
    assert "| mobilenet_v2_int8 | 1.770 / 1.817 | 2.392 / 2.894 | 1.030x | 1.01-1.04 | 4/4 |" in md
    assert bench_report._beside_md({}) == []
    assert "not measured: valgrind is not installed" in "\n".join(
        bench_report._beside_md({"error": "valgrind is not installed"})
    )
    speed = {"machine": {"cpu_model": "AMD EPYC", "cpus": 2}, "beside": beside}
    assert "on AMD EPYC, 2 CPUs by" in "\n".join(bench_report._simulate_speed_md(speed))
