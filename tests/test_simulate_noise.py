"""Tolerances of simulated counts from their own noise (pmu/simulate_noise.py), and the
simulate mode chosen from what a test asks for."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_inferperf.core.profile import LatencyStats, MemoryStats, Profile, Repeat, Steadiness
from pytest_inferperf.judge.budgets import parse_marker
from pytest_inferperf.judge.comparison import DEFAULT_TOLERANCES, compare_profiles
from pytest_inferperf.measure.simulate import backend as simulate
from pytest_inferperf.measure.simulate import noise as simulate_noise
from pytest_inferperf.pmu.base import Count, CounterSample


def sim_profile(
    per_call: list[float],
    *,
    calls: int = 1,
    backend: str = "simulate",
    run_to_run: float | None = None,
    mode: str | None = None,
) -> Profile:
    reps = tuple(
        Repeat(
            calls,
            1_000_000,
            CounterSample(counts={"instructions": Count(v * calls, int(v * calls))}),
        )
        for v in per_call
    )
    simulation: dict = (
        {} if run_to_run is None else {"run_to_run": {"instructions_per_call": run_to_run}}
    )
    if mode is not None:
        simulation["mode"] = mode
    return Profile(
        name="t",
        machine_class="x86_64-test",
        backend=backend,
        machine={},
        events=(),
        repeats=reps,
        latency=LatencyStats.from_durations_ns([1_000_000] * 3),
        memory=MemoryStats(None, "none"),
        steady=Steadiness(True, 10, 0.0, 0.05, 5),
        settings={"simulation": simulation},
    )


# -- the pure functions ------------------------------------------------------------
def test_range_over_median_values():
    assert simulate_noise.range_over_median([100.0, 101.0, 102.0]) == pytest.approx(0.02 / 1.01)
    # the worst repeat counts: 2 / 100.5, where the median absolute deviation gives 0.5 / 100.5
    assert simulate_noise.range_over_median([100.0, 100.5, 102.0]) == pytest.approx(2 / 100.5)
    assert simulate_noise.range_over_median([5.0, 5.0]) == 0.0
    assert simulate_noise.range_over_median([7.0]) is None
    assert simulate_noise.range_over_median([]) is None
    assert simulate_noise.range_over_median([0.0, 0.0]) is None


def test_the_noise_estimate_is_the_larger_of_range_and_run_to_run():
    assert simulate_noise.noise_estimate([100.0, 101.0, 102.0]) == pytest.approx(2 / 101)
    assert simulate_noise.noise_estimate([100.0, 101.0, 102.0], -0.05) == 0.05
    assert simulate_noise.noise_estimate([7.0]) == 0.0


def test_noise_is_the_larger_of_the_repeats_spread_and_the_run_to_run_difference():
    assert simulate_noise.noise_estimate([100.0, 100.01, 100.02]) == pytest.approx(0.02 / 100.01)
    assert simulate_noise.noise_estimate([100.0, 100.0, 100.0], run_to_run=-0.0005) == 0.0005
    assert simulate_noise.noise_estimate([100.0, 100.3], run_to_run=0.0001) == pytest.approx(
        0.3 / 100.15
    )
    assert simulate_noise.noise_estimate([100.0]) == 0.0


def test_tolerance_is_a_multiple_of_the_noise_above_a_floor():
    floor, k = simulate_noise.RESOLUTION_FLOOR, simulate_noise.NOISE_MULTIPLE
    assert simulate_noise.tolerance_from_noise([]) == floor
    assert simulate_noise.tolerance_from_noise([0.0, 0.00001]) == floor
    assert simulate_noise.tolerance_from_noise([0.0002, 0.001]) == pytest.approx(k * 0.001)
    assert simulate_noise.tolerance_from_noise([-0.004]) == pytest.approx(k * 0.004)
    assert simulate_noise.tolerance_from_noise([0.01], multiple=2, floor=0) == 0.02


@given(st.lists(st.floats(0, 0.2, allow_nan=False), max_size=6))
def test_tolerance_never_falls_below_the_floor_nor_under_any_noise(noises):
    tol = simulate_noise.tolerance_from_noise(noises)
    assert tol >= simulate_noise.RESOLUTION_FLOOR
    assert all(tol >= n for n in noises)


def test_half_a_percent_is_separable_at_the_noise_measured_here():
    # docs/simulate.md: 0.002-0.047% run to run for inference workloads on the VM.
    assert simulate_noise.tolerance_from_noise([0.00047]) < 0.005
    floor = simulate_noise.RESOLUTION_FLOOR
    assert simulate_noise.tolerance_from_noise([0.00012, 0.00002]) == floor


# -- profiles and the comparison ------------------------------------------------------
def test_profile_noise_and_resolution():
    steady = sim_profile([1e6, 1e6 + 10, 1e6 + 20], calls=4)
    assert simulate_noise.per_call_instructions(steady) == [1e6, 1e6 + 10, 1e6 + 20]
    assert simulate_noise.profile_noise(steady) == pytest.approx(20 / (1e6 + 10))
    assert simulate_noise.resolution(steady) == simulate_noise.RESOLUTION_FLOOR
    shaky = sim_profile([1e6, 1e6, 1e6], run_to_run=0.004)
    assert simulate_noise.resolution(shaky) == pytest.approx(0.02)
    assert simulate_noise.profile_noise(sim_profile([1e6] * 3, backend="perf")) is None


def test_two_simulated_profiles_get_a_measured_tolerance():
    base = sim_profile([1e6, 1e6 + 5, 1e6 + 10])
    assert simulate_noise.noise_tolerances(sim_profile([1.004e6] * 3), base) == {
        "instructions_per_call": simulate_noise.RESOLUTION_FLOOR
    }
    # Timed or mixed profiles keep the fixed defaults.
    assert (
        simulate_noise.noise_tolerances(
            sim_profile([1e6] * 3, backend="perf"), sim_profile([1e6] * 3, backend="perf")
        )
        == {}
    )


def test_compare_flags_half_a_percent_between_steady_simulated_profiles():
    base = sim_profile([1e6, 1e6 + 3, 1e6 + 6])
    same = sim_profile([1e6 + 2, 1e6 + 4, 1e6 + 1])
    slower = sim_profile([1.005e6, 1.005e6 + 3, 1.005e6 + 1])
    change = compare_profiles(slower, base).get("instructions_per_call")
    assert change.status == "regressed" and change.tolerance == simulate_noise.RESOLUTION_FLOOR
    assert compare_profiles(same, base).get("instructions_per_call").status == "ok"
    # With the old fixed 2% the same change passed.
    assert DEFAULT_TOLERANCES["instructions_per_call"] == 0.02
    assert (
        compare_profiles(slower, base, tolerances={"instructions_per_call": 0.02})
        .get("instructions_per_call")
        .status
        == "ok"
    )


def test_profiles_of_two_modes_keep_the_fixed_tolerance():
    base = sim_profile([1e6, 1e6, 1e6], mode="full")
    assert simulate_noise.mode(sim_profile([1e6])) == "full"  # older profiles
    assert simulate_noise.noise_tolerances(sim_profile([1e6] * 3, mode="full"), base) != {}
    assert simulate_noise.noise_tolerances(sim_profile([1e6] * 3, mode="instructions"), base) == {}
    change = compare_profiles(sim_profile([1.001e6] * 3, mode="instructions"), base).get(
        "instructions_per_call"
    )
    assert change.tolerance == DEFAULT_TOLERANCES["instructions_per_call"]


def test_a_noisy_baseline_widens_the_tolerance():
    base = sim_profile([1e6, 1e6, 1e6], run_to_run=0.002)  # two runs 0.2% apart
    slower = sim_profile([1.005e6] * 3)
    change = compare_profiles(slower, base).get("instructions_per_call")
    assert change.tolerance == pytest.approx(0.01) and change.status == "ok"


def test_with_run_to_run_and_resolution_record_what_they_used():
    first = sim_profile([1e6, 1e6, 1e6])
    second = sim_profile([1.0002e6] * 3)
    both = simulate.with_resolution(simulate.with_run_to_run(first, second, 12.345))
    sim = both.settings["simulation"]
    assert sim["run_to_run"]["instructions_per_call"] == pytest.approx(0.0002)
    assert sim["run_to_run"]["runs"] == [1e6, 1.0002e6]
    assert sim["run_to_run"]["second_run_wall_s"] == 12.35
    assert sim["resolution"]["instructions_per_call"] == pytest.approx(0.001)
    assert "second run" in sim["resolution"]["from"]
    again = Profile.from_dict(both.to_dict())  # stored with a baseline, read back
    assert simulate_noise.run_to_run(again) == pytest.approx(0.0002)


# -- the mode ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("metrics", "mode"),
    [
        (None, "full"),
        ([], "instructions"),
        (["instructions_per_call", "latency_p99_ms"], "instructions"),
        (["l1_miss"], "full"),
        (["branch_miss", "instructions_per_call"], "full"),
        (["llc_mpki"], "full"),
    ],
)
def test_mode_is_instructions_only_unless_a_metric_needs_caches_or_branches(metrics, mode):
    assert simulate.mode_for(metrics) == mode


def test_mode_from_markers():
    cheap = parse_marker((), {"instructions_per_call_max": 5e7, "latency_p99_ms_max": 60})
    dear = parse_marker((), {"l1_miss_max": 0.1})
    tol = parse_marker((), {"tolerance": {"branch_miss": 0.05}})
    assert simulate.mode_for(simulate.spec_metrics(cheap)) == "instructions"
    assert simulate.mode_for(simulate.spec_metrics(tol)) == "full"
    assert simulate.session_mode([cheap, cheap]) == "instructions"
    assert simulate.session_mode([cheap, dear]) == "full"


def test_instructions_mode_says_why_cache_events_are_missing():
    statuses = simulate.event_statuses(
        ["instructions", "l1d_access", "branches", "cycles"], ["Ir"], mode="instructions"
    )
    assert statuses["instructions"].available
    assert "instructions-only mode" in statuses["l1d_access"].reason
    assert "instructions-only mode" in statuses["branches"].reason
    assert "cycles" in statuses["cycles"].reason


def test_child_command_per_mode(tmp_path):
    kwargs = dict(
        rootdir=tmp_path,
        python="python",
        instrument_from_start=False,
        extra_args=(),
        block_plugins=(),
        workdir=tmp_path,
    )
    full = simulate.child_command(["t.py::t"], **kwargs).valgrind_options
    cheap = simulate.child_command(["t.py::t"], mode="instructions", **kwargs).valgrind_options
    assert "--cache-sim=yes" in full and "--branch-sim=yes" in full
    assert "--cache-sim=no" in cheap and "--branch-sim=no" in cheap
    assert not any(o.startswith(("--I1=", "--D1=", "--LL=")) for o in cheap)
    with pytest.raises(ValueError, match="one of full, instructions"):
        simulate.child_command(["t.py::t"], mode="fast", **kwargs)
    assert math.isfinite(simulate_noise.NOISE_MULTIPLE)
