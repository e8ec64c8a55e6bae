"""The runner: warm-up and steady state, repeats, latency, timeout, stages, environment."""

from __future__ import annotations

import gc
import hashlib
import json
import os
import random
import re
import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_inferperf import MeasurementTimeout, Profile, RunnerConfigError, profile, region
from pytest_inferperf.core.profile import LatencyStats, nearest_rank
from pytest_inferperf.measure.runner import calls_per_repeat, is_steady, mad_over_median
from pytest_inferperf.pmu.perf_backend import fd_count

QUICK = {"warmup": 1, "repeat": 3, "min_time": 0.0}


def busy(ms: float) -> None:
    end = time.perf_counter() + ms / 1000
    while time.perf_counter() < end:
        pass


# -- pure pieces -------------------------------------------------------------
def test_steady_after_a_cold_start():
    cold_then_flat = [50.0, 20.0, 12.0, 10.0, 10.1, 9.9, 10.0, 10.05]
    reached, spread = is_steady(cold_then_flat, warmup=3, window=5, threshold=0.05)
    assert reached and spread < 0.01


def test_not_steady_while_timings_drift():
    drifting = [10.0, 11.0, 12.5, 14.0, 16.0, 18.0, 20.5, 23.0]
    reached, spread = is_steady(drifting, warmup=3, window=5, threshold=0.05)
    assert not reached and spread > 0.05


def test_not_steady_before_the_window_fills():
    assert is_steady([1.0, 1.0, 1.0], warmup=1, window=5, threshold=0.05) == (False, float("inf"))


def test_mad_over_median_ignores_one_outlier():
    assert mad_over_median([10, 10, 10, 10, 100]) == 0.0


def test_mad_over_median_values():
    # median 3, absolute deviations 2, 1, 0, 1, 2: their median 1, over 3
    assert mad_over_median([1, 2, 3, 4, 5]) == pytest.approx(1 / 3)
    # median 100.5, deviations 0.5, 0, 1.5: 0.5 / 100.5 (the range would give 2 / 100.5)
    assert mad_over_median([100, 100.5, 102]) == pytest.approx(0.5 / 100.5)
    assert mad_over_median([0.0, 0.0, 0.0]) == 0.0  # no median to divide by
    assert mad_over_median([-1.0, -1.0]) == 0.0


def test_the_steady_window_is_judged_by_mad_over_median():
    # warm-up 2 calls skipped; the last 5 of the rest: median 10, deviations 0,0,0,1,40
    durations = [90.0, 50.0, 10.0, 10.0, 10.0, 11.0, 50.0]
    assert is_steady(durations, warmup=2, window=5, threshold=0.05) == (True, 0.0)
    assert is_steady([10.0, 12.0, 9.0, 11.0, 14.0], warmup=0, window=5, threshold=0.05) == (
        False,
        pytest.approx(1 / 11),
    )


def test_calls_per_repeat_calibration():
    assert calls_per_repeat(1_000_000, 0.01) == 10  # 1 ms calls, 10 ms repeats
    assert calls_per_repeat(50_000_000, 0.01) == 1
    assert calls_per_repeat(0, 0.01) == 1


@given(st.lists(st.floats(0, 1e6, allow_nan=False), min_size=1, max_size=300))
def test_percentiles_match_numpy_nearest_rank(values):
    ordered = sorted(values)
    for pct in (50, 95, 99):
        expected = np.percentile(np.array(values), pct, method="inverted_cdf")
        assert nearest_rank(ordered, pct) == pytest.approx(float(expected))


def test_latency_stats_from_known_durations():
    stats = LatencyStats.from_durations_ns([i * 1_000_000 for i in range(1, 101)])  # 1..100 ms
    assert (stats.min_ms, stats.max_ms, stats.mean_ms) == (1.0, 100.0, 50.5)
    assert (stats.p50_ms, stats.p95_ms, stats.p99_ms) == (50.0, 95.0, 99.0)
    assert stats.calls_per_second == pytest.approx(1000 / 50.5)
    assert stats.stddev_ms == pytest.approx(np.std(np.arange(1, 101)))


# -- real runs ---------------------------------------------------------------
def test_profile_keeps_every_repeat_and_counts_each():
    p = profile(busy, 2, warmup=2, repeat=5, min_time=0.005)
    assert len(p.repeats) == 5
    per_repeat = p.settings["calls_per_repeat"]
    assert 1 <= per_repeat <= 3  # 5 ms / >= 2 ms per call, rounded up
    assert all(r.calls == per_repeat for r in p.repeats)
    assert p.latency.calls == 5 * per_repeat
    assert 1.9 < p.latency.p50_ms < 20.0  # a 2 ms spin; preemption only adds
    per_call_cpu = p.per_repeat("task_clock")
    assert len(per_call_cpu) == 5
    # every thread of the process counts (in a full run, another test's leftover pool
    # threads too), so a call's CPU time is at most its wall time on each usable CPU
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    for v, r in zip(per_call_cpu, p.repeats, strict=True):
        assert 0 < v <= (cpus or 1) * r.wall_ns / r.calls * 1.05 + 1e5
    assert p.steady.warmup_calls >= 2
    assert not p.partial
    assert p.status("task_clock").available
    assert p.overhead["task_clock"] < 1e6  # an empty region costs well under 1 ms


def test_unavailable_events_keep_their_reason_in_the_profile():
    p = profile(busy, 0.2, events=("cycles", "task_clock"), **QUICK)
    cycles = p.status("cycles")
    if cycles.available:
        pytest.skip("this machine has a PMU")
    assert cycles.reason and "cycles" not in p.totals


def test_timeout_returns_partial_results():
    # 1000 repeats of 20 ms cannot finish in 3 s; the 3 s leave room, on a busy machine,
    # for what comes before the first repeat (settling, opening the counters, calibration)
    p = profile(busy, 20, warmup=1, repeat=1000, timeout=3.0, min_time=0.0)
    assert p.partial
    assert "timeout" in p.partial_reason and "of 1000 repeats" in p.partial_reason
    assert 1 <= len(p.repeats) < 1000


def test_timeout_with_no_repeat_done_is_an_error():
    with pytest.raises(MeasurementTimeout, match="Raise the timeout"):
        profile(busy, 400, warmup=1, repeat=3, timeout=0.3, min_time=0.0)


def test_workload_exception_propagates_with_context_and_closes_counters():
    before = fd_count()
    calls = {"n": 0}

    def flaky():
        calls["n"] += 1
        if calls["n"] == 6:
            raise ValueError("model exploded")

    with pytest.raises(ValueError, match="model exploded") as info:
        profile(flaky, warmup=2, warmup_max=2, repeat=10, min_time=0.0)
    if hasattr(info.value, "__notes__"):
        assert "measured repeat" in info.value.__notes__[0]
    assert fd_count() == before
    assert gc.isenabled()


def test_stage_attribution_sums_to_the_whole():
    data = b"x" * (1 << 20)  # large enough that the stage-boundary reads are noise

    def pipeline():
        with region("preprocess"):
            hashlib.sha256(data).digest()
        with region("inference"):
            for _ in range(4):
                hashlib.sha256(data).digest()
        sum(range(1000))

    p = profile(pipeline, warmup=2, repeat=5, min_time=0.0)
    stages = {s.name: s for s in p.stages}
    assert set(stages) == {"preprocess", "inference", "(outside regions)"}
    assert stages["inference"].calls == p.calls
    total_wall = sum(r.wall_ns for r in p.repeats)
    assert sum(s.wall_ns for s in p.stages) == total_wall
    total_cpu = p.totals["task_clock"]
    assert sum(s.counts["task_clock"] for s in p.stages) == pytest.approx(total_cpu)
    # Four hashes cost about four times one (loose: other tests may load the machine).
    ratio = stages["inference"].counts["task_clock"] / stages["preprocess"].counts["task_clock"]
    assert 2.5 < ratio < 8


def test_region_outside_measurement_is_a_no_op():
    with region("anything"):
        x = 1
    assert x == 1


def test_environment_is_restored():
    gc.enable()
    random.seed(123)
    expected_py = random.random()
    random.seed(123)
    np.random.seed(7)
    expected_np = np.random.rand()
    np.random.seed(7)
    affinity = os.sched_getaffinity(0)
    seen = {}

    def workload():
        seen["gc"] = gc.isenabled()
        seen["affinity"] = os.sched_getaffinity(0)

    profile(workload, pin=min(affinity), **QUICK)
    assert seen == {"gc": False, "affinity": {min(affinity)}}
    assert gc.isenabled()
    assert os.sched_getaffinity(0) == affinity
    assert random.random() == expected_py
    assert np.random.rand() == expected_np


def test_seed_is_fixed_inside_the_measurement():
    draws = []
    profile(lambda: draws.append(random.random()), warmup=0, repeat=1, min_time=0.0)
    again = []
    profile(lambda: again.append(random.random()), warmup=0, repeat=1, min_time=0.0)
    assert draws[0] == again[0]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"repeat": 0}, "repeat=0"),
        ({"warmup": -1}, "warmup=-1"),
        ({"timeout": 0}, "timeout=0"),
        ({"timeout": float("nan")}, "timeout=nan"),
        ({"pin": 4096}, "pin=(4096,)"),
        ({"repeat": True}, "repeat=True"),
    ],
)
def test_bad_settings_are_clear_errors(kwargs, message):
    with pytest.raises(RunnerConfigError) as info:
        profile(lambda: None, **kwargs)
    assert message in str(info.value)


def test_peak_rss_of_the_region_sees_a_large_allocation():
    def allocate():
        buf = np.ones(64 << 20, dtype=np.uint8)  # 64 MiB, touched
        return buf.sum()

    p = profile(allocate, **QUICK)
    assert p.memory.peak_rss_bytes >= 64 << 20
    if p.memory.method == "ru_maxrss":
        assert "process-lifetime" in p.memory.note


def test_profile_round_trips_through_json(tmp_path):
    p = profile(busy, 0.5, **QUICK)
    path = tmp_path / "p.json"
    path.write_text(p.to_json())
    assert Profile.load(path) == p
    assert json.loads(p.to_json())["schema_version"] == 1


def test_onnx_session_settings_are_recorded(tmp_path):
    from pytest_inferperf.onnxrt.sessions import SessionSettings, make_inputs, make_session

    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "relu.onnx"
    onnx.save(model, path)
    session = make_session(path, SessionSettings(intra_op_threads=2, allow_spinning=False))
    p = profile(session.run, None, make_inputs(path), **QUICK)
    assert p.session["intra_op_threads"] == 2
    assert p.session["allow_spinning"] is False
    assert p.session["graph_optimization_level"] == "all"
    assert p.name.endswith("Session.run")


def test_inferperf_metrics_lists_every_budget_metric(capsys):
    from pytest_inferperf.cli.main import main
    from pytest_inferperf.core.metrics import METRICS

    assert main(["metrics"]) == 0
    out = capsys.readouterr().out
    for name in METRICS:
        assert f"\n{name} " in out
    assert re.search(r"^ipc +instructions per cycle +higher", out, re.M)


def test_a_process_s_other_threads_settle_before_its_first_measurement(monkeypatch):
    """A thread of the process still burning CPU (numpy's OpenBLAS workers spin after
    import) is waited for, once per process; a quiet process waits one window."""
    import hashlib
    import threading

    from pytest_inferperf.measure import runner as runner_module

    ran: list[float] = []

    def spin(seconds: float) -> None:  # hashlib releases the GIL on large buffers
        data = b"x" * (1 << 20)
        cpu0, end = time.thread_time(), time.perf_counter() + seconds
        while time.perf_counter() < end:
            hashlib.sha256(data).digest()
        ran.append(time.thread_time() - cpu0)

    monkeypatch.setattr(runner_module, "_settled", False)
    worker = threading.Thread(target=spin, args=(0.15,))
    worker.start()
    waited = runner_module.settle_other_threads(2.0)
    worker.join()
    assert runner_module.SETTLE_WINDOW_S <= waited < 1.0
    # It waited for the spinning thread, where that thread had a CPU to spin on: beside
    # other processes (a CPU hog and a second pytest worker on 2 CPUs) it may have got
    # under a quarter of one, which is what the settling rule looks for.
    if ran[0] >= 0.9 * 0.15:
        assert waited >= 0.1
    assert runner_module.settle_other_threads(2.0) == 0.0  # once per process
    monkeypatch.setattr(runner_module, "_settled", False)
    quiet = runner_module.settle_other_threads(2.0)
    assert runner_module.SETTLE_WINDOW_S <= quiet < 0.2
    monkeypatch.setattr(runner_module, "_settled", False)
    worker = threading.Thread(target=spin, args=(1.0,))
    worker.start()
    assert runner_module.settle_other_threads(0.2) < 0.4  # never past its limit (a window)
    worker.join()
