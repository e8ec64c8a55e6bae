"""Unit tests for one metric's judgement and the comparison's refusals (compare.py).

Whole-profile comparisons are in test_compare.py; these call ``judge_metric`` and
``check_comparable`` directly, and compare Profiles built by ``profile_factory``.
"""

from __future__ import annotations

import math

import pytest

from pytest_inferperf.judge.comparison import (
    IncomparableError,
    check_comparable,
    compare_profiles,
    judge_metric,
)

STEADY = [1.0, 1.01, 0.99, 1.0, 1.02, 0.98]
SLOWER = [1.3, 1.31, 1.29, 1.3, 1.32, 1.28]  # +30%, every repeat above every baseline one


def test_point_values_alone_decide_without_enough_repeats():
    change = judge_metric("cpu_ms_per_call", 1.0, 1.3, tolerance=0.1)
    assert (change.status, change.credible, change.p_value) == ("regressed", True, None)
    assert change.delta == pytest.approx(0.3)
    assert change.better == "lower"
    assert change.detail == "point values only: 0 vs 0 repeats (rank test needs 5 each)"


def test_within_tolerance_is_ok_even_with_a_credible_shift():
    change = judge_metric(
        "cpu_ms_per_call",
        1.0,
        1.05,
        tolerance=0.1,
        baseline_repeats=STEADY,
        current_repeats=[r * 1.05 for r in STEADY],
    )
    assert change.status == "ok" and not change.regressed and not change.improved


def test_a_separated_shift_beyond_tolerance_is_a_credible_regression():
    change = judge_metric(
        "cpu_ms_per_call", 1.0, 1.3, tolerance=0.1, baseline_repeats=STEADY, current_repeats=SLOWER
    )
    assert change.status == "regressed" and change.regressed and change.credible
    assert change.p_value is not None and change.p_value < 0.01
    assert change.detail == f"p={change.p_value:.3g}, Mann-Whitney U over 6 vs 6 repeats"


def test_the_same_shift_on_a_higher_is_better_metric_is_an_improvement():
    change = judge_metric(
        "ipc", 1.0, 1.3, tolerance=0.05, baseline_repeats=STEADY, current_repeats=SLOWER
    )
    assert (change.better, change.status) == ("higher", "improved")
    assert change.improved and not change.regressed


def test_overlapping_repeats_beyond_tolerance_are_noise():
    change = judge_metric(
        "cpu_ms_per_call",
        1.0,
        1.5,
        tolerance=0.1,
        baseline_repeats=[1.0, 1.2, 0.9, 1.1, 1.0, 1.05],
        current_repeats=[1.5, 0.8, 1.6, 0.9, 1.4, 1.0],
    )
    assert change.status == "noise" and not change.credible
    assert change.p_value is not None and change.p_value > 0.01


def test_medians_against_the_point_values_are_noise_and_say_so():
    # point values say +30%, but every current repeat is below every baseline repeat
    change = judge_metric(
        "cpu_ms_per_call",
        1.0,
        1.3,
        tolerance=0.1,
        baseline_repeats=SLOWER,
        current_repeats=STEADY,
    )
    assert change.status == "noise"
    assert change.detail.endswith("; per-repeat medians moved the other way")


def test_a_zero_baseline_uses_the_metrics_floor():
    assert judge_metric("rss_growth_mb", 0.0, 0.5, tolerance=0.1).status == "ok"  # under 1 MiB
    grown = judge_metric("rss_growth_mb", 0.0, 2.0, tolerance=0.1)
    assert (grown.delta, grown.status) == (math.inf, "regressed")
    fewer = judge_metric("page_faults_per_call", 0.0, -0.5, tolerance=0.25)
    assert fewer.delta == -math.inf and fewer.status == "improved"


def test_a_metric_no_table_knows_counts_lower_as_better():
    change = judge_metric("house_metric", 2.0, 3.0, tolerance=0.1)
    assert (change.better, change.status, change.delta) == ("lower", "regressed", 0.5)


def test_profiles_from_another_machine_class_or_backend_are_refused(profile_factory):
    here = profile_factory(name="test_x", machine_class="arm64-neoverse-n1")
    check_comparable(here, profile_factory(machine_class="arm64-neoverse-n1"))  # no error
    with pytest.raises(IncomparableError) as info:
        check_comparable(here, profile_factory(machine_class="x86_64-amd-epyc-zen4"))
    assert str(info.value) == (
        "Profiles from another machine class or backend are never compared: 'test_x' was "
        "measured on arm64-neoverse-n1 with the perf backend, its baseline on "
        "x86_64-amd-epyc-zen4 with the perf backend. Record a baseline for this machine class "
        "and backend with --update-baselines."
    )
    with pytest.raises(IncomparableError, match="with the simulate backend"):
        compare_profiles(here, profile_factory(backend="simulate"))


def test_profiles_compare_on_the_metrics_both_counted(profile_factory):
    base = profile_factory({"instructions": 1e6, "cycles": 2e6, "task_clock": 8e5}, repeats=6)
    slower = profile_factory(
        [{"instructions": 1e6, "cycles": c, "task_clock": 8e5} for c in (3e6, 3.1e6) * 3],
        repeats=6,
    )
    comparison = compare_profiles(slower, base, metrics=["ipc", "cycles_per_call"])
    ipc, cycles = comparison.changes
    assert (ipc.metric, ipc.status) == ("ipc", "regressed")
    assert ipc.baseline == pytest.approx(0.5) and ipc.current == pytest.approx(1 / 3.05)
    assert (cycles.metric, cycles.status) == ("cycles_per_call", "regressed")
    assert cycles.delta == pytest.approx(0.525)
    assert comparison.regressions == (ipc, cycles) and not comparison.ok
    assert comparison.get("ipc") is ipc and comparison.get("l1_miss") is None
    assert comparison.movers(1) == (cycles,)
    # a metric only one side counted is not compared
    counted_more = profile_factory({"instructions": 1e6, "cycles": 2e6, "page_faults": 1.0})
    assert compare_profiles(counted_more, base).get("page_faults_per_call") is None
