"""The change against a baseline, named in real pytest runs on a machine without a PMU.

A pipeline's ``region("preprocess")`` gets 100 times the work, or a model gets twice
its MatMul work: the failure text, the terminal summary and the per-test JSON must
name that stage or that op type. In-process pytester runs: the workloads need no
process of their own.
"""

from __future__ import annotations

import json
from fnmatch import fnmatch
from pathlib import Path

import pytest

# In-process runs put sys.modules back as it was after each run, and numpy's extension
# cannot be loaded twice in a process: import what the inner tests import first.
from onnx_graphs import matmul_chain  # noqa: F401
from plugin_output import said, table_row

import pytest_inferperf.onnxrt.sessions  # noqa: F401  (numpy, onnx, onnxruntime)

pytest_plugins = ["pytester"]

TESTS = """
import os

import numpy as np
import onnx
import pytest
from onnx_graphs import matmul_chain

from pytest_inferperf import region
from pytest_inferperf.onnxrt.sessions import SessionSettings, make_session

FEEDS = {"x": np.ones((128, 256), np.float32)}


def busy(n):
    total = 0
    for i in range(n):
        total += i
    return total


@pytest.fixture
def session(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(matmul_chain(int(os.environ.get("MATMULS", "1"))), path)
    return make_session(path, SessionSettings(intra_op_threads=1,
                                              graph_optimization_level="disable"))


@pytest.mark.perf(warmup=2, repeat=10)
def test_pipeline(pmu_profile, session):
    work = int(os.environ.get("PREPROCESS", "3000"))

    def pipeline():
        with region("preprocess"):
            busy(work)
        return session.run(None, FEEDS)

    pmu_profile(pipeline)


@pytest.mark.perf(warmup=2, repeat=10)
def test_model(pmu_profile, session):
    pmu_profile(session.run, None, FEEDS)
"""

ARGS = ("-p", "no:cacheprovider", "--inferperf", "--inferperf-flamegraphs=none")


@pytest.fixture
def suite(pytester, monkeypatch):
    monkeypatch.setenv("ORT_DISABLE_TELEMETRY", "1")  # ORT is imported in this process already
    pytester.makepyfile(test_suite=TESTS)
    return pytester


def baseline_then(suite, monkeypatch, test: str, **env: str):
    """Record the baseline of ``test``, then run it again with ``env`` injected."""
    suite.runpytest(*ARGS, "--update-baselines", "-k", test).assert_outcomes(passed=1)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return suite.runpytest(*ARGS, "--inferperf-report=report", "-k", test)


def report_of(suite, test: str) -> dict:
    path = next(Path(suite.path, "report").glob(f"test_suite.py__{test}-*.json"))
    return json.loads(path.read_text())


@pytest.mark.slow  # several full pytest runs: the default suite stays near 5 minutes
def test_a_preprocess_stage_100_times_slower_is_named_in_the_failure(suite, monkeypatch):
    result = baseline_then(suite, monkeypatch, "test_pipeline", PREPROCESS="300000")
    result.assert_outcomes(failed=1)
    said(
        result,
        "*baseline *: * -> * ms (+*%, tolerance 10%; p=*",
        "*change vs baseline: latency_mean_ms * -> * ms (+* ms per call, +*%): stage "
        "`preprocess` +* ms per call (+*%, * the slowdown): the regression is *outside the "
        "model (ONNX Runtime's operators *% in total*",
        "*stages (ms per call): preprocess * -> * (+*%)*",
        "Slower than the baseline, and why:",
        "*test_suite.py::test_pipeline: latency_mean_ms * stage `preprocess` +*",
    )
    row = table_row(result, "test_suite.py::test_pipeline")
    assert fnmatch(row, "*REGRESSED * (stage preprocess)*") and "FAILED" in row, row
    assert "points to" not in result.stdout.str()
    record = report_of(suite, "test_pipeline")
    change = record["change_explanation"]
    assert [(c["kind"], c["name"]) for c in change["causes"]] == [("stage", "preprocess")]
    assert change["causes"][0]["share"] > 0.5 and change["points_to"] is None
    preprocess = next(s for s in change["stages"] if s["name"] == "preprocess")
    # 100x the work; the region's own cost (a counter read on entry and exit) is not
    assert preprocess["current_ms"] > 20 * preprocess["baseline_ms"]
    profile = record["profile"]
    assert all(len(s["repeat_wall_ns"]) == len(profile["repeats"]) for s in profile["stages"])
    # the session inside the pipeline was found and profiled: op types in the Profile
    assert {o["op_type"] for o in profile["op_types"]} == {"MatMul", "Tanh", "Identity"}
    assert profile["settings"]["operator_pass"]["session"] == "found"


@pytest.mark.slow  # several full pytest runs: the default suite stays near 5 minutes
def test_one_op_type_with_twice_the_work_is_named_in_the_failure(suite, monkeypatch):
    result = baseline_then(suite, monkeypatch, "test_model", MATMULS="2")
    result.assert_outcomes(failed=1)
    said(
        result,
        # wall or CPU time carries it, whichever the busy machine left clearer
        "*change vs baseline: * * -> * ms (+* ms per call, +*%): op type MatMul "
        "+* ms per run (+*%; 4 nodes, 2 in the baseline; *), the other op types *%",
        "*op types (ms per run, ONNX Runtime profiler): MatMul * -> * (+*%, 2 -> 4 nodes)*",
    )
    row = table_row(result, "test_suite.py::test_model")
    assert fnmatch(row, "*REGRESSED * (op type MatMul)*") and "FAILED" in row, row
    assert "points to" not in result.stdout.str()
    record = report_of(suite, "test_model")
    change = record["change_explanation"]
    assert [(c["kind"], c["name"]) for c in change["causes"]] == [("op_type", "MatMul")]
    matmul = next(o for o in change["op_types"] if o["name"] == "MatMul")
    assert matmul["nodes"] == [2, 4] and matmul["credible"] and matmul["stands_out"]
    operator_pass = record["profile"]["settings"]["operator_pass"]
    assert operator_pass["session"] == "direct" and operator_pass["runs"] >= 8
