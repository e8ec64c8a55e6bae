"""The simulate backend says when the child did other work than the native run; tiny
workloads cost little to measure."""

from __future__ import annotations

import functools
import json
import time

import pytest

from pytest_inferperf import profile as run_profile
from pytest_inferperf.core.profile import Profile
from pytest_inferperf.measure.runner import MAX_CALLS_PER_REPEAT, RunSettings, calls_per_repeat
from pytest_inferperf.measure.simulate import child as simulate_child
from pytest_inferperf.measure.simulate.backend import (
    ChildRecord,
    session_runs,
    with_honesty_warning,
    with_session_runs_warning,
)

pytest_plugins = ["pytester"]


def _profile() -> Profile:
    return run_profile(lambda: None, backend="none", warmup=1, repeat=2, min_time=0.0)


def test_same_results_give_no_warning():
    profile = _profile()
    assert with_honesty_warning(profile, "abc", "abc") is profile
    assert with_honesty_warning(profile, None, "abc") is profile


def test_different_results_warn_with_both_digests():
    profile = _profile()
    warned = with_honesty_warning(profile, "aaaa", "bbbb")
    (warning,) = warned.settings["simulation"]["warnings"]
    assert "different results in the simulation child" in warning
    assert "bbbb vs aaaa" in warning
    Profile.from_dict(warned.to_dict())  # still a valid profile


def test_results_that_differ_with_hidden_features_say_other_kernels_ran():
    profile = _profile()
    hidden = ["AVX512F", "AVX512VNNI", "GFNI"]
    warned = with_honesty_warning(profile, "aaaa", "bbbb", hidden)
    sim = warned.settings["simulation"]
    assert sim["emulated_cpu_lacks"] == hidden
    (warning,) = sim["warnings"]
    assert "(digest bbbb vs aaaa)" in warning
    assert (
        "chose others for valgrind's emulated CPU, which lacks AVX512F, AVX512VNNI and 1 more"
        in (warning)
    )
    assert "pid-, time-" not in warning
    Profile.from_dict(warned.to_dict())
    # the same results: no warning, the fact is kept for the summary
    same = with_honesty_warning(profile, "aaaa", "aaaa", hidden).settings["simulation"]
    assert same == {"emulated_cpu_lacks": hidden}


def test_the_summary_names_hidden_features_once():
    from pytest_inferperf.report.terminal import simulated_lines

    def record(sim):
        return {"key": "t.py::t", "profile": {"settings": {"simulation": sim}}}

    facts = {"child_wall_s": 1.0, "emulated_cpu_lacks": ["AVX512F", "AVX512VNNI"]}
    lines = simulated_lines([record(facts)])
    assert (
        "    emulated CPU: valgrind's lacks AVX512F, AVX512VNNI of this CPU; the counts are "
        "of the kernels chosen for it"
    ) in lines
    warned = {**facts, "result_digests": {"native": "a", "child": "b"}, "warnings": ["w"]}
    lines = simulated_lines([record(warned)])
    assert not any("emulated CPU" in line for line in lines)
    assert "    warning: w" in lines


def test_calibration_is_capped_for_tiny_workloads():
    assert calls_per_repeat(50, 0.01) == MAX_CALLS_PER_REPEAT  # 50 ns calls: not 200,000
    assert calls_per_repeat(1_000_000, 0.01) == 10


def test_a_trivial_workload_costs_well_under_a_second():
    begin = time.monotonic()
    result = run_profile(lambda: None, backend="none")
    assert result.settings["calls_per_repeat"] <= MAX_CALLS_PER_REPEAT
    assert result.calls <= 30 * MAX_CALLS_PER_REPEAT
    assert time.monotonic() - begin < 5  # bound against a hang-like cost, not a timing claim


@pytest.mark.slow
def test_a_workload_that_differs_in_the_child_is_flagged(pytester):
    pytester.makepyfile(
        test_a="""
        import os
        import pytest
        def work():
            return [os.getpid(), 1.5]  # pid-dependent: another process, another result
        @pytest.mark.perf(warmup=1, repeat=3)
        def test_pid(pmu_profile):
            pmu_profile(work)
    """
    )
    pytester.makeini("[pytest]\ninferperf_simulate_shared = false\n")
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--inferperf",
        "--inferperf-backend",
        "simulate",
        "--inferperf-flamegraphs",
        "none",
        timeout=300,
    )
    result.stdout.fnmatch_lines(
        ["*warning: the workload returned different results in the simulation child*"]
    )


# -- the same number of session runs per call in the child as in the native run --------
def test_same_session_runs_give_no_warning():
    profile = _profile()
    assert with_session_runs_warning(profile, {"mlp": 2}, {"mlp": 2}) is profile
    assert with_session_runs_warning(profile, None, {"mlp": 2}) is profile  # no ONNX Runtime
    assert with_session_runs_warning(profile, {"mlp": 2}, None) is profile


def test_other_session_runs_in_the_child_warn_with_both_counts():
    profile = _profile()
    warned = with_session_runs_warning(profile, {"mlp": 2, "head": 1}, {"mlp": 5, "head": 1})
    (warning,) = warned.settings["simulation"]["warnings"]
    assert "a different number of times per call in the simulation child" in warning
    assert "head: 1 vs 1, mlp: 5 vs 2" in warning
    assert warned.settings["simulation"]["session_runs"] == {
        "native": {"mlp": 2, "head": 1},
        "child": {"mlp": 5, "head": 1},
    }
    both = with_honesty_warning(warned, "aaaa", "bbbb")  # each check adds its own warning
    assert len(both.settings["simulation"]["warnings"]) == 2
    Profile.from_dict(both.to_dict())  # still a valid profile


def _tiny_session():
    import numpy as np
    from onnx import TensorProto, helper
    from onnx_graphs import make_model

    from pytest_inferperf.onnxrt.sessions import SessionSettings, make_session

    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
    )
    session = make_session(model.SerializeToString(), SessionSettings(intra_op_threads=1))
    return session, {"x": np.ones(4, dtype=np.float32)}


def test_session_runs_counts_each_sessions_runs_in_one_call():
    session, feeds = _tiny_session()

    def twice():
        session.run(None, feeds)
        return session.run(None, feeds)

    runs, returned = session_runs(twice)
    assert list(runs.values()) == [2] and returned is not None
    direct, _ = session_runs(functools.partial(session.run, None, feeds))
    assert list(direct.values()) == [1]
    assert session_runs(lambda: 7) == ({}, 7)  # no session ran: nothing to compare


def test_the_child_records_the_session_runs_without_an_extra_call(monkeypatch, tmp_path):
    """The first warm-up call is watched: the workload runs as often as before."""
    session, feeds = _tiny_session()
    calls = []

    def thrice():
        calls.append(1)
        for _ in range(3):
            out = session.run(None, feeds)
        return out

    result = tmp_path / "child.json"
    monkeypatch.setenv("INFERPERF_SIMULATE_CHILD", str(result))
    monkeypatch.setenv("INFERPERF_SIMULATE_VARIANT", "")
    monkeypatch.setenv("INFERPERF_SIMULATE_OPTIONS", json.dumps({"trigger": "start"}))
    monkeypatch.setattr(simulate_child, "_measured_variants", set())
    simulate_child.child_measure(thrice, settings=RunSettings(warmup=1))
    record = ChildRecord.from_json(result.read_text())
    assert list(record.session_runs.values()) == [3]
    repeats = sum(p.calls for p in record.plan if p.kind in ("repeat", "warmup"))
    assert len(calls) == repeats  # every call is a callback of the plan, none extra
