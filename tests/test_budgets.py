"""Unit tests for budgets: every marker keyword kind, every refusal, and budget checks.

The marker's behaviour inside a pytest run is covered by the plugin tests; here the
pure functions are called directly and their values asserted.
"""

from __future__ import annotations

import math

import pytest

from pytest_inferperf.core.metrics import METRICS, profile_metrics
from pytest_inferperf.judge.budgets import (
    OTHER_KEYWORDS,
    RUNNER_KEYWORDS,
    Budget,
    BudgetResult,
    MarkerError,
    PerfSpec,
    all_keywords,
    budget_keywords,
    budget_target,
    check_budgets,
    parse_marker,
)

# -- keyword names -----------------------------------------------------------------


def test_every_metric_has_a_min_and_a_max_keyword():
    assert len(budget_keywords()) == 2 * len(METRICS)
    assert {"ipc_min", "ipc_max", "latency_p99_ms_min", "peak_rss_mb_max"} <= set(budget_keywords())
    assert all_keywords()[-len(RUNNER_KEYWORDS) - len(OTHER_KEYWORDS) :] == [
        *RUNNER_KEYWORDS,
        *OTHER_KEYWORDS,
    ]


@pytest.mark.parametrize(
    ("key", "target"),
    [
        ("ipc_min", ("ipc", "min")),
        ("l1_miss_max", ("l1_miss", "max")),
        ("latency_p99_ms_max", ("latency_p99_ms", "max")),
        ("latency_p99_max_ms", ("latency_p99_ms", "max")),  # the unit may follow min/max
        ("peak_rss_max_mb", ("peak_rss_mb", "max")),
        ("rss_growth_min_mb", ("rss_growth_mb", "min")),
        ("ipc", None),
        ("ipc_mean", None),
        ("nonsense_min", None),
        ("ipc_max_ms", None),  # a unit only where the metric has it
        ("latency_p99_max_s", None),
        ("_min", None),
    ],
)
def test_budget_target(key, target):
    assert budget_target(key) == target


# -- parse_marker: what it accepts ---------------------------------------------------


def test_an_empty_marker_is_an_empty_spec():
    spec = parse_marker((), {})
    assert spec == PerfSpec((), None, {})
    assert spec.tolerances() is None


def test_budgets_keep_their_order_and_become_floats():
    spec = parse_marker((), {"ipc_min": 1, "latency_p99_max_ms": 8, "l1_miss_max": 0.05})
    assert spec.budgets == (
        Budget("ipc", "min", 1.0),
        Budget("latency_p99_ms", "max", 8.0),
        Budget("l1_miss", "max", 0.05),
    )
    assert all(type(b.limit) is float for b in spec.budgets)
    assert [b.keyword for b in spec.budgets] == ["ipc_min", "latency_p99_ms_max", "l1_miss_max"]


def test_min_equal_to_max_is_allowed():
    spec = parse_marker((), {"ipc_min": 1.5, "ipc_max": 1.5})
    assert spec.budgets == (Budget("ipc", "min", 1.5), Budget("ipc", "max", 1.5))


def test_negative_and_zero_budgets_are_numbers_like_any_other():
    spec = parse_marker((), {"rss_growth_mb_max": 0, "rss_growth_mb_min": -5})
    assert [b.limit for b in spec.budgets] == [0.0, -5.0]


@pytest.mark.parametrize(
    ("kwargs", "runner"),
    [
        ({"warmup": 0}, {"warmup": 0}),
        ({"warmup": 5, "warmup_max": 50}, {"warmup": 5, "warmup_max": 50}),
        ({"repeat": 1}, {"repeat": 1}),
        ({"threads": 4}, {"threads": 4}),
        ({"timeout": 2}, {"timeout": 2.0}),
        ({"timeout": 0.5}, {"timeout": 0.5}),
        ({"min_time": 0}, {"min_time": 0.0}),  # one call per repeat
        ({"min_time": 0.25}, {"min_time": 0.25}),
        ({"pin": 0}, {"pin": (0,)}),
        ({"pin": [0, 3]}, {"pin": (0, 3)}),
        ({"pin": (1,)}, {"pin": (1,)}),
    ],
)
def test_runner_keywords(kwargs, runner):
    spec = parse_marker((), kwargs)
    assert dict(spec.runner) == runner
    assert spec.budgets == ()
    for key in ("timeout", "min_time"):
        if key in runner:
            assert type(spec.runner[key]) is float


def test_one_tolerance_applies_to_every_metric():
    spec = parse_marker((), {"tolerance": 0.05})
    assert spec.tolerance == 0.05
    tolerances = spec.tolerances()
    assert tolerances is not None
    assert set(tolerances) == {*METRICS, "stage:*"}  # and every region() stage
    assert set(tolerances.values()) == {0.05}


def test_a_tolerance_per_metric():
    spec = parse_marker((), {"tolerance": {"ipc": 0.02, "latency_p99_ms": 0}})
    assert spec.tolerances() == {"ipc": 0.02, "latency_p99_ms": 0.0}
    assert spec.tolerances() is not spec.tolerance  # a copy the caller may change


# -- parse_marker: what it refuses, and what it says ----------------------------------


def _refusal(kwargs, *, args=(), marker="perf") -> str:
    with pytest.raises(MarkerError) as info:
        parse_marker(args, kwargs, marker=marker)
    return str(info.value)


def test_positional_arguments_are_refused_with_the_fix():
    text = _refusal({}, args=(1.2,))
    assert text.startswith("@pytest.mark.perf takes keywords only, got positional (1.2,)")
    assert "@pytest.mark.perf(ipc_min=1.2, latency_p99_max_ms=8)" in text
    assert "@pytest.mark.inferperf(...)" in text


def test_the_message_names_the_marker_as_written():
    assert _refusal({"bogus": 1}, marker="inferperf").startswith("@pytest.mark.inferperf: ")
    assert _refusal({}, args=("x",), marker="inferperf").startswith(
        "@pytest.mark.inferperf takes keywords only"
    )


def test_an_unknown_keyword_gets_a_did_you_mean():
    text = _refusal({"ipc_mn": 1})
    assert "unknown keyword 'ipc_mn'. Did you mean ipc_min or ipc_max?" in text
    assert "`inferperf metrics`" in text
    assert "other keywords: warmup, warmup_max, repeat, timeout, min_time, pin, threads" in text


def test_an_unknown_keyword_far_from_every_name_gets_no_guess():
    text = _refusal({"zzzzzz": 1})
    assert "unknown keyword 'zzzzzz'. Budgets are" in text
    assert "Did you mean" not in text


@pytest.mark.parametrize(
    ("keyword", "needs", "instead"),
    [
        # perf's printed top-down nodes below level 2: no counter of ours gives them
        ("divider_max", "divider_active", "backend_bound_max"),
        ("assists_max", "tma_assists", "retiring_max"),
        ("fetch_latency_max", "topdown-fetch-lat, slots", "frontend_bound_max"),
        # Intel's named stall events, read from saved outputs only
        ("l1_bound_max", "stall_mem_any", "backend_bound_max"),
    ],
)
def test_a_budget_on_a_metric_only_saved_outputs_hold_is_refused(keyword, needs, instead):
    text = _refusal({keyword: 0.2})
    metric = keyword.removesuffix("_max")
    assert text.startswith(f"@pytest.mark.perf({keyword}=...): {metric} (")
    assert f"is not measured by the plugin: it needs {needs}," in text
    assert "`inferperf explain`" in text
    assert f"Budget {instead} instead." in text


def test_every_budget_keyword_the_plugin_accepts_can_be_counted():
    from pytest_inferperf.pmu.events import CATALOGUE

    accepted = []
    for key in budget_keywords():
        target = budget_target(key)
        try:
            parse_marker((), {key: 1.0})
        except MarkerError:
            continue
        if target is not None:
            accepted.append(target[0])
    assert "ipc" in accepted and "backend_bound" in accepted
    assert "divider" not in accepted and "assists" not in accepted
    for metric in accepted:
        assert all(e in CATALOGUE for e in METRICS[metric].inputs), metric


def test_a_misspelt_runner_keyword_is_guessed_too():
    assert "Did you mean repeat?" in _refusal({"repeats": 3})


@pytest.mark.parametrize("value", ["1.2", None, True, math.nan, math.inf, -math.inf, [1]])
def test_a_budget_must_be_a_finite_number(value):
    assert _refusal({"ipc_min": value}) == (
        f"@pytest.mark.perf(ipc_min={value!r}): a budget must be a finite number"
    )


def test_min_above_max_can_never_pass():
    assert _refusal({"ipc_min": 2, "ipc_max": 1.5}) == (
        "@pytest.mark.perf: ipc_min=2 is above ipc_max=1.5; no value can meet both"
    )


@pytest.mark.parametrize(
    ("kwargs", "bound"),
    [
        ({"warmup": -1}, "an integer >= 0"),
        ({"warmup": 1.0}, "an integer >= 0"),
        ({"warmup": True}, "an integer >= 0"),
        ({"repeat": 0}, "an integer >= 1"),
        ({"repeat": "3"}, "an integer >= 1"),
        ({"warmup_max": 0}, "an integer >= 1"),
        ({"threads": False}, "an integer >= 1"),
        ({"threads": 2.5}, "an integer >= 1"),
        ({"timeout": 0}, "a number > 0 (seconds)"),
        ({"timeout": -1}, "a number > 0 (seconds)"),
        ({"timeout": math.inf}, "a number > 0 (seconds)"),
        ({"timeout": True}, "a number > 0 (seconds)"),
        ({"timeout": "5"}, "a number > 0 (seconds)"),
        ({"timeout": None}, "a number > 0 (seconds)"),
        ({"min_time": -0.1}, "a number >= 0 (seconds)"),
        ({"min_time": math.nan}, "a number >= 0 (seconds)"),
        ({"min_time": "fast"}, "a number >= 0 (seconds)"),
    ],
)
def test_runner_values_out_of_range(kwargs, bound):
    ((key, value),) = kwargs.items()
    assert _refusal(kwargs) == f"@pytest.mark.perf({key}={value!r}): must be {bound}"


@pytest.mark.parametrize("value", ["0", -1, [0, -2], [0, True], 1.0, None, {0: 1}])
def test_pin_takes_cpu_numbers(value):
    assert _refusal({"pin": value}) == (
        f"@pytest.mark.perf(pin={value!r}): a CPU number or a list of them"
    )


@pytest.mark.parametrize("value", [-0.01, "5%", None, math.nan, True])
def test_a_tolerance_is_a_finite_relative_change(value):
    assert _refusal({"tolerance": value}) == (
        f"@pytest.mark.perf(tolerance={value!r}): a tolerance is a relative change such as "
        "0.05 (5%), a finite number >= 0"
    )


def test_a_per_metric_tolerance_names_the_metric():
    assert _refusal({"tolerance": {"ipc": -1}}) == (
        "@pytest.mark.perf(tolerance['ipc']=-1): a tolerance is a relative change such as "
        "0.05 (5%), a finite number >= 0"
    )
    assert _refusal({"tolerance": {"ipcc": 0.1}}) == (
        "@pytest.mark.perf(tolerance=...): unknown metric 'ipcc'. Did you mean ipc?"
    )


# -- check_budgets --------------------------------------------------------------------


def _check(kwargs, metrics, unavailable=None, **kw):
    return check_budgets(parse_marker((), kwargs).budgets, metrics, unavailable or {}, **kw)


def test_budgets_pass_and_fail_at_the_limit():
    results = _check(
        {"ipc_min": 1.0, "l1_miss_max": 0.05, "latency_p99_ms_max": 8},
        {"ipc": 1.0, "l1_miss": 0.0500001, "latency_p99_ms": 8.0},
    )
    assert [(r.budget.keyword, r.value, r.status) for r in results] == [
        ("ipc_min", 1.0, "pass"),  # the limit itself passes
        ("l1_miss_max", 0.0500001, "fail"),
        ("latency_p99_ms_max", 8.0, "pass"),
    ]
    assert [r.failed for r in results] == [False, True, False]
    assert all(r.reason is None for r in results)


def test_a_budget_describes_itself():
    ok, failed = _check(
        {"ipc_min": 1.0, "latency_p99_max_ms": 8}, {"ipc": 1.5, "latency_p99_ms": 9}
    )
    assert ok.describe() == "ipc = 1.5, budget >= 1 (+50.0% from the limit): ok"
    assert failed.describe() == "latency_p99_ms = 9, budget <= 8 (+12.5% from the limit): FAILED"


def test_a_zero_limit_describes_without_dividing_by_zero():
    (result,) = _check({"rss_growth_mb_max": 0}, {"rss_growth_mb": 3.0})
    assert result.status == "fail"
    assert result.describe() == "rss_growth_mb = 3, budget <= 0 (+inf% from the limit): FAILED"


def test_an_uncounted_input_is_not_checked_and_says_why():
    (result,) = _check({"ipc_min": 1.0}, {}, {"cycles": "no hardware counter (ENOENT)"})
    assert result == BudgetResult(
        Budget("ipc", "min", 1.0), None, "unavailable", "needs cycles, no hardware counter (ENOENT)"
    )
    assert not result.failed
    assert result.describe() == (
        "ipc_min=1: not checked: needs cycles, no hardware counter (ENOENT)"
    )


def test_inputs_missing_for_the_same_reason_are_named_together():
    (result,) = _check(
        {"l1_miss_max": 0.1},
        {},
        {"l1d_refill": "no PMU", "l1d_access": "no PMU", "cycles": "other"},
    )
    assert result.reason == "needs l1d_refill, l1d_access, no PMU"
    (result,) = _check(
        {"l1_miss_max": 0.1}, {}, {"l1d_refill": "not on this core", "l1d_access": "no PMU"}
    )
    assert result.reason == "needs l1d_refill, not on this core; needs l1d_access, no PMU"


def test_a_metric_absent_without_a_reason_says_it_could_not_be_computed():
    (result,) = _check({"peak_rss_mb_max": 100}, {"ipc": 1.0})
    assert result.status == "unavailable"
    assert result.reason == "peak_rss_mb could not be computed from what was counted"


def test_metrics_this_machine_cannot_judge_are_not_checked():
    results = _check(
        {"latency_p50_ms_max": 1, "ipc_min": 1},
        {"latency_p50_ms": 50.0, "ipc": 2.0},
        not_judged={"latency_p50_ms": "an emulator's clock is not the CPU's"},
    )
    assert [(r.status, r.value, r.reason) for r in results] == [
        ("unavailable", None, "an emulator's clock is not the CPU's"),
        ("pass", 2.0, None),
    ]


def test_no_budgets_no_results():
    assert check_budgets((), {"ipc": 1.0}, {}) == ()


def test_budgets_against_a_profiles_metrics(profile_factory):
    profile = profile_factory(
        {"instructions": 3e6, "cycles": 2e6, "task_clock": 1e6},
        unavailable={"l1d_refill": "no counter", "l1d_access": "no counter"},
        latency_ms=[1.0] * 9 + [4.0],
    )
    metrics = profile_metrics(profile)
    assert metrics["ipc"] == pytest.approx(1.5)
    assert metrics["instructions_per_call"] == pytest.approx(3e6)
    assert metrics["latency_p99_ms"] == pytest.approx(4.0)
    unavailable = {e.name: e.reason for e in profile.events if not e.available}
    ipc, l1, p99, per_call = _check(
        {
            "ipc_min": 1.2,
            "l1_miss_max": 0.1,
            "latency_p99_ms_max": 3,
            "instructions_per_call_max": 3e6,
        },
        metrics,
        unavailable,
    )
    assert (ipc.status, l1.status, p99.status, per_call.status) == (
        "pass",
        "unavailable",
        "fail",
        "pass",
    )
    assert l1.reason == "needs l1d_refill, l1d_access, no counter"
