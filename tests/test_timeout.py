"""The hard timeout: a call that runs past ``timeout=`` is interrupted, never waited for.

Every test here is bounded: a workload that would run 15 s (or for ever) must come back
within a few seconds of its 1-2 s timeout. The bounds are generous upper limits against
a hang, not timing assertions about a single run.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from pytest_inferperf.core import watchdog
from pytest_inferperf.measure.runner import MeasurementTimeout, profile

pytest_plugins = ["pytester"]


def _slow_after(n: int, seconds: float):
    calls = {"n": 0}

    def work():
        calls["n"] += 1
        if calls["n"] > n:
            time.sleep(seconds)
        return sum(range(100))

    return work


def test_a_sleeping_call_is_interrupted_with_the_repeats_that_finished():
    begin = time.monotonic()
    result = profile(
        _slow_after(4, 15.0),
        backend="none",
        warmup=1,
        warmup_max=1,
        repeat=30,
        min_time=0.0,
        timeout=2.0,
    )
    assert time.monotonic() - begin < 12  # not the 15 s the call asked for
    assert result.partial
    assert "interrupted" in result.partial_reason and "of 30 repeats" in result.partial_reason
    assert 1 <= len(result.repeats) < 30
    assert all(r.calls >= 1 for r in result.repeats)


def test_a_python_loop_that_never_ends_is_interrupted():
    calls = {"n": 0}

    def spin():
        calls["n"] += 1
        if calls["n"] > 3:
            while True:
                pass

    begin = time.monotonic()
    result = profile(
        spin, backend="none", warmup=1, warmup_max=1, repeat=10, min_time=0.0, timeout=1.0
    )
    assert time.monotonic() - begin < 10
    assert result.partial and len(result.repeats) == 2


def test_a_workload_that_catches_exception_cannot_swallow_the_interrupt():
    calls = {"n": 0}

    def stubborn():
        calls["n"] += 1
        if calls["n"] > 3:
            try:  # noqa: SIM105 - the point: this must not catch it
                time.sleep(15)
            except Exception:
                pass

    begin = time.monotonic()
    result = profile(
        stubborn, backend="none", warmup=1, warmup_max=1, repeat=10, min_time=0.0, timeout=1.0
    )
    assert time.monotonic() - begin < 10
    assert result.partial


def test_an_overrun_in_warm_up_is_a_clear_timeout():
    with pytest.raises(MeasurementTimeout, match=r"warm-up call 1.*timeout="):
        profile(_slow_after(0, 15.0), backend="none", warmup=1, repeat=5, timeout=1.0)


def test_a_call_that_ignores_signals_is_reported_with_partial_results(monkeypatch):
    """Native code that blocks signals: reported once, then interrupted when it gives way."""
    monkeypatch.setattr(watchdog, "STUCK_GRACE_S", 0.5)
    reports: list[str] = []
    previous = watchdog.set_reporter(reports.append)
    calls = {"n": 0}

    def blocks_signals():
        calls["n"] += 1
        if calls["n"] > 3:
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
            try:
                time.sleep(3.0)  # the alarm cannot reach this call
            finally:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGALRM})

    try:
        result = profile(
            blocks_signals,
            backend="none",
            warmup=1,
            warmup_max=1,
            repeat=10,
            min_time=0.0,
            timeout=1.0,
            name="native_stall",
        )
    finally:
        watchdog.set_reporter(previous)
    assert result.partial
    assert len(reports) == 1
    assert "native_stall" in reports[0] and "does not give way" in reports[0]
    assert "Partial results so far: 2 of 10 repeats" in reports[0]


def test_previous_alarm_handler_is_restored():
    def mine(signum, frame):
        pass

    old = signal.signal(signal.SIGALRM, mine)
    try:
        profile(lambda: None, backend="none", warmup=1, repeat=2, min_time=0.0, timeout=5.0)
        assert signal.getsignal(signal.SIGALRM) is mine
    finally:
        signal.signal(signal.SIGALRM, old)


def test_a_partial_profile_is_never_written_as_a_baseline(pytester):
    pytester.makepyfile(
        test_a="""
        import time
        import pytest
        calls = {"n": 0}
        def work():
            calls["n"] += 1
            if calls["n"] > 80:  # past the warm-up (at most 50 calls)
                time.sleep(15)
        @pytest.mark.perf(warmup=1, repeat=30, timeout=2, tolerance=0.5)
        def test_stalls(pmu_profile):
            pmu_profile(work)
    """
    )
    begin = time.monotonic()
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--inferperf",
        "--update-baselines",
        "--inferperf-json",
        "run.json",
        "--inferperf-flamegraphs",
        "none",
        "--junitxml",
        "junit.xml",
    )
    assert time.monotonic() - begin < 60
    assert not list(Path(pytester.path, "baselines").rglob("*.json"))
    result.stdout.fnmatch_lines(
        ["*partial (*/30 repeats, timeout 2 s)*", "ERROR not written *test_stalls*: partial*"]
    )
    run = json.loads(Path(pytester.path, "run.json").read_text())
    (entry,) = run["tests"]
    assert entry["partial"] is True
    assert entry["partial_label"].startswith("partial (")
    assert entry["partial_label"].endswith("/30 repeats, timeout 2 s)")
    junit = Path(pytester.path, "junit.xml").read_text()
    assert 'name="inferperf.partial"' in junit and "timeout 2 s" in junit


@pytest.mark.slow
def test_the_simulate_child_gets_the_markers_timeout(pytester):
    """A stall only in the valgrind child ends at the marker's timeout, not 600 s later."""
    pytester.makepyfile(
        test_a="""
        import os, time
        import pytest
        def work():
            if os.environ.get("INFERPERF_SIMULATE_CHILD"):
                time.sleep(45)  # only under valgrind
        @pytest.mark.perf(warmup=1, repeat=3, timeout=5)
        def test_child_stalls(pmu_profile):
            pmu_profile(work)
    """
    )
    pytester.makeini("[pytest]\ninferperf_simulate_shared = false\n")
    begin = time.monotonic()
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--inferperf",
        "--inferperf-backend",
        "simulate",
        "--inferperf-flamegraphs",
        "none",
    )
    assert time.monotonic() - begin < 40  # the 45 s stall was not waited for
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*timeout=5s*"])


def test_a_stuck_call_is_reported_on_the_terminal_past_the_capture(pytester):
    pytester.makepyfile(
        test_a="""
        import signal, time
        import pytest
        from pytest_inferperf.core import watchdog
        watchdog.STUCK_GRACE_S = 0.5
        calls = {"n": 0}
        def work():
            calls["n"] += 1
            if calls["n"] > 80:
                signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
                try:
                    time.sleep(3)
                finally:
                    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGALRM})
        @pytest.mark.perf(warmup=1, repeat=30, timeout=1, tolerance=0.5)
        def test_native_stall(pmu_profile):
            pmu_profile(work)
    """
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--inferperf", "--inferperf-flamegraphs", "none"
    )
    result.stdout.fnmatch_lines(
        [
            "inferperf: test_native_stall: a call of the workload has run "
            "*past timeout=1s and does not give way*Partial results so "
            "far: 0 of 30 repeats*"
        ]
    )
    result.stdout.fnmatch_lines(["*partial (1/30 repeats, timeout 1 s)*"])


@pytest.mark.slow
def test_a_call_that_never_returns_ends_only_its_worker_with_the_documented_recipe(pytester):
    """The limit of the in-process timeout, and the way round it docs/plugin.md gives.

    A call stuck in native code for an hour (SIGALRM blocked, a C-level sleep) cannot be
    abandoned inside the process. With pytest-xdist and pytest-timeout's thread method
    the stuck worker is ended, its test fails as crashed, and the next test still runs.
    """
    pytest.importorskip("pytest_timeout")
    pytester.makepyfile(
        test_a="""
        import ctypes, signal
        import pytest
        from pytest_inferperf.core import watchdog
        watchdog.STUCK_GRACE_S = 0.5
        calls = {"n": 0}
        def work():
            calls["n"] += 1
            if calls["n"] > 2:
                signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
                ctypes.CDLL(None).sleep(3600)
        @pytest.mark.perf(warmup=1, repeat=3, timeout=1)
        def test_never_returns(pmu_profile):
            pmu_profile(work)
        def test_after():
            pass
    """
    )
    begin = time.monotonic()
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--inferperf",
        "--inferperf-flamegraphs",
        "none",
        "-n",
        "1",
        "--timeout=8",
        "--timeout-method=thread",
        timeout=300,
    )
    assert time.monotonic() - begin < 300  # never the hour the call asked for
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*worker 'gw0' crashed while running*test_never_returns*"])


# -- the passes around a measurement: operator times and flamegraph sampling -------------


def _session_workload(tmp_path: Path):
    """A workload that runs a tiny ONNX model, and sleeps 15 s per call once ``slow`` is set."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper
    from onnx_graphs import make_model

    from pytest_inferperf.onnxrt.sessions import make_session

    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 4])],
    )
    path = tmp_path / "relu.onnx"
    onnx.save(model, path)
    session = make_session(path)
    feeds = {"x": np.ones((4, 4), np.float32)}
    state = {"slow": False}

    def work():
        if state["slow"]:
            time.sleep(15.0)
        return session.run(None, feeds)

    return work, state


def test_the_operator_pass_stops_at_the_markers_timeout(tmp_path):
    from pytest_inferperf.measure.operator_pass import with_operator_times

    work, state = _session_workload(tmp_path)
    result = profile(work, backend="none", warmup=1, repeat=3, min_time=0.0, timeout=1.0)
    assert not result.partial  # the measured run itself was quick
    state["slow"] = True  # the pass's watched call of the workload now sleeps
    begin = time.monotonic()
    with_ops = with_operator_times(result, work)
    assert time.monotonic() - begin < 10  # not the 15 s the call asked for
    note = with_ops.settings["operator_pass"]["skipped"]
    assert note.startswith("not available: operator pass stopped after ")
    assert "(timeout=1 s)" in note and "raise the marker's `timeout=`" in note
    assert not with_ops.operators
    from pytest_inferperf.onnxrt import sessions as ort_helpers

    assert ort_helpers.ort.InferenceSession.run.__name__ == "run"  # the watch was undone


def test_a_quick_operator_pass_is_unchanged_under_its_timeout(tmp_path):
    from pytest_inferperf.onnxrt.sessions import operator_times

    work, _ = _session_workload(tmp_path)
    fields, reason = operator_times(work, latency_ms=0.1, timeout=30.0)
    assert reason is None
    assert [op["node"] for op in fields["operators"]] == ["relu"]


def test_the_python_sampling_pass_stops_at_the_timeout():
    from pytest_inferperf.measure.flame.pysampler import sample_python

    begin = time.monotonic()
    with pytest.raises(watchdog.PassStopped, match=r"Python sampling pass stopped after"):
        sample_python(lambda: time.sleep(15.0), seconds=0.2, timeout=1.0)
    assert time.monotonic() - begin < 10


def test_the_flamegraph_passes_stop_at_the_timeout_and_leave_nothing(tmp_path):
    import shutil
    import subprocess

    from pytest_inferperf.measure.flame import capture

    begin = time.monotonic()
    graphs = capture(
        lambda: time.sleep(15.0), name="sleepy", out_dir=tmp_path / "out", seconds=0.2, timeout=1.0
    )
    assert time.monotonic() - begin < 20  # never the 15 s per call, per pass
    if shutil.which("perf") is None:
        assert graphs.reasons["python"].startswith("not available: Python sampling pass stopped")
    else:
        assert graphs.reasons["native"].startswith("not available: native sampling pass stopped")
        assert graphs.reasons["python"] == (
            "not sampled: the native sampling pass stopped at the timeout"
        )
        ps = subprocess.run(["ps", "-o", "args=", "--ppid", str(os.getpid())], capture_output=True)
        assert b"perf record" not in ps.stdout
    assert not any(p.suffix == ".svg" for p in (tmp_path / "out").iterdir())


def test_the_plugins_flamegraph_passes_are_bounded_by_the_markers_timeout(pytester):
    """Fast while measured, then 60 s per call: the sampling passes stop at timeout=2."""
    pytester.makepyfile(
        test_a="""
        import time
        import pytest
        calls = {"n": 0}
        def work():
            calls["n"] += 1
            if calls["n"] > 300:  # past the measured run: inside the sampling window
                time.sleep(60)
            return sum(range(50))
        @pytest.mark.perf(warmup=1, repeat=3, timeout=2, min_time=0)
        def test_flame(pmu_profile):
            pmu_profile(work)
    """
    )
    begin = time.monotonic()
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--inferperf",
        "--inferperf-flamegraphs",
        "all",
        timeout=170,
    )
    assert time.monotonic() - begin < 45  # not the 60 s of one call, let alone two passes
    result.assert_outcomes(passed=1)
