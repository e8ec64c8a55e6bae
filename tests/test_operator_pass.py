"""The operator pass runs each session as the workload ran it.

Every feed a session got in one call of the workload is replayed, in order, in each
profiled call (a pipeline that runs one session on inputs of two shapes gets both
timed), and the second session is made with the first one's own options and
providers (a default-threaded session is not profiled with one thread).
"""

from __future__ import annotations

import statistics
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_graphs import make_model

import pytest_inferperf.onnxrt.sessions as onnx_module
from pytest_inferperf.onnxrt.sessions import (
    PASS_WARMUP,
    describe_session,
    find_session_calls,
    op_type_runs,
    operator_times,
)

SMALL = np.ones((1, 64), np.float32)
BIG = np.ones((8192, 64), np.float32)


def rows_model(path: Path) -> Path:
    """``x[n, 64]`` -> MatMul(64x64) -> Tanh -> y: its time grows with ``n``."""
    weight = (np.random.default_rng(0).standard_normal((64, 64)) / 8).astype(np.float32)
    model = make_model(
        [
            helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
            helper.make_node("Tanh", ["m"], ["y"], name="tanh"),
        ],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 64])],
        [numpy_helper.from_array(weight, "w")],
    )
    onnx.save(model, str(path))
    return path


@pytest.fixture
def model(tmp_path: Path) -> Path:
    return rows_model(tmp_path / "recogniser.onnx")


def logged_replicas(monkeypatch: pytest.MonkeyPatch) -> list[tuple[object, list[tuple]]]:
    """Each replica the pass makes, with the shape of ``x`` in each of its runs, in order."""
    made: list[tuple[object, list[tuple]]] = []
    real = onnx_module.replica_session

    class Logged:
        def __init__(self, session: object) -> None:
            self.session, self.shapes = session, []
            made.append((session, self.shapes))

        def run(self, names, feeds):
            self.shapes.append(tuple(feeds["x"].shape))
            return self.session.run(names, feeds)

        def end_profiling(self):
            return self.session.end_profiling()

    monkeypatch.setattr(onnx_module, "replica_session", lambda *a, **kw: Logged(real(*a, **kw)))
    return made


def test_every_feed_of_one_call_is_replayed_in_order_in_each_profiled_call(model, monkeypatch):
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])

    def pipeline():  # one large input, then a small crop: the last feed is the small one
        session.run(None, {"x": BIG})
        return session.run(None, {"x": SMALL})

    search = find_session_calls(pipeline)
    (found,) = search.sessions
    assert [f["x"].shape for f in found.replayed] == [(8192, 64), (1, 64)]
    assert found.runs == 2 and found.feeds["x"].shape == (1, 64)

    made = logged_replicas(monkeypatch)
    fields, why = operator_times(pipeline, found=search)
    assert why is None
    runs = fields["operator_pass"]["runs"]
    ((_, shapes),) = made
    assert shapes == [(8192, 64), (1, 64)] * (PASS_WARMUP + runs)
    (record,) = fields["operator_pass"]["sessions"]
    assert record["runs_per_call"] == 2
    assert record["inputs"] == [
        [{"name": "x", "shape": [8192, 64], "dtype": "float32"}],
        [{"name": "x", "shape": [1, 64], "dtype": "float32"}],
    ]
    mm = next(o for o in fields["operators"] if o["node"] == "mm")
    assert mm["calls"] == 2 * runs and mm["session_runs_per_call"] == 2
    matmul = next(r for r in fields["op_types"] if r["op_type"] == "MatMul")
    assert len(matmul["runs_us"]) == runs  # one value per replayed call, both feeds in it


def test_the_op_times_are_those_of_every_shape_the_call_fed(model):
    """The small crop alone, against the large input and the crop: the pass that replays
    only the last feed (the crop) would time a fraction of what one call does."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # one thread: no pool waiting on a busy machine
    session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])

    def both():
        session.run(None, {"x": BIG})
        return session.run(None, {"x": SMALL})

    def small_only():
        return session.run(None, {"x": SMALL})

    def matmul_us(call) -> float:
        fields, why = operator_times(call, latency_ms=1.0)
        assert why is None
        runs = next(r["runs_us"] for r in fields["op_types"] if r["op_type"] == "MatMul")
        return statistics.median(runs)  # a run the machine delayed does not decide

    small, pipeline = matmul_us(small_only), matmul_us(both)
    assert pipeline > 10 * small  # 8192 rows against 1: the large input is timed too


def test_a_default_threaded_session_is_profiled_with_its_own_options(model, monkeypatch):
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    assert session.get_session_options().intra_op_num_threads == 0  # ORT's own choice

    made = logged_replicas(monkeypatch)
    fields, why = operator_times(lambda: session.run(None, {"x": SMALL}))
    assert why is None
    ((replica, _),) = made
    assert describe_session(replica) == describe_session(session)
    assert replica.get_session_options().intra_op_num_threads == 0  # not rebuilt with 1
    assert fields["operator_pass"]["sessions"][0]["options"] == describe_session(session)


def test_a_tuned_session_keeps_its_threads_spinning_and_optimisation_level(model, monkeypatch):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.enable_cpu_mem_arena = False
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])

    made = logged_replicas(monkeypatch)

    def pipeline():
        return session.run(None, {"x": SMALL * 2})

    fields, why = operator_times(pipeline)
    assert why is None
    ((replica, _),) = made
    facts = describe_session(replica)
    assert facts == describe_session(session)
    assert (
        facts["intra_op_threads"],
        facts["graph_optimization_level"],
        facts["allow_spinning"],
        facts["enable_mem_arena"],
    ) == (2, "disable", False, False)
    assert replica.get_providers() == session.get_providers()
    assert fields["operator_pass"]["sessions"][0]["options"]["intra_op_threads"] == 2
    # the workload's own options object is read, not changed
    assert not options.enable_profiling and session.get_session_options().enable_profiling is False


def test_op_type_runs_count_each_replayed_call_as_one_run():
    def run(start: float) -> list[dict]:
        return [
            {"cat": "Session", "name": "model_run", "ts": start, "dur": 10},
            {
                "cat": "Node",
                "name": "mm_kernel_time",
                "ts": start + 1,
                "dur": 4 if start % 200 < 100 else 2,  # alternately a large and a small feed
                "args": {"op_name": "MatMul"},
            },
        ]

    events = [e for i in range(8) for e in run(i * 100.0)]  # 4 calls of 2 runs each
    (row,) = op_type_runs(events, skip_runs=2, runs_per_call=2)
    assert row["runs_us"] == [6.0, 6.0, 6.0] and row["mean_us"] == 6.0
    (single,) = op_type_runs(events, skip_runs=2)
    assert single["runs_us"] == [4.0, 2.0, 4.0, 2.0, 4.0, 2.0]
    with pytest.raises(ValueError, match="runs_per_call must be a positive int"):
        op_type_runs(events, runs_per_call=0)


def test_a_feed_dict_refilled_for_every_run_is_replayed_as_each_run_got_it(model):
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    feeds: dict[str, np.ndarray] = {}

    def pipeline():
        for crop in (BIG, SMALL):
            feeds["x"] = crop
            session.run(None, feeds)

    (found,) = find_session_calls(pipeline).sessions
    assert [f["x"].shape for f in found.replayed] == [(8192, 64), (1, 64)]
