"""The simulate backend says when the child did other work than the native run; tiny
workloads cost little to measure."""

from __future__ import annotations

import time

import pytest

from pytest_inferperf import profile as run_profile
from pytest_inferperf.pmu.simulate import with_honesty_warning
from pytest_inferperf.profile import Profile
from pytest_inferperf.runner import MAX_CALLS_PER_REPEAT, calls_per_repeat

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
