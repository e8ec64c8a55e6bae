"""Comparing a Profile with its baseline: tolerances, direction, credibility, the rank test."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pytest_inferperf.core.metrics import METRICS
from pytest_inferperf.core.profile import LatencyStats, MemoryStats, Profile, Repeat, Steadiness
from pytest_inferperf.judge import comparison as compare_mod
from pytest_inferperf.judge.comparison import (
    ALPHA,
    DEFAULT_TOLERANCES,
    FALLBACK_TOLERANCE,
    Comparison,
    IncomparableError,
    MetricChange,
    compare_profiles,
    judge_metric,
    mann_whitney_u,
    relative_delta,
)
from pytest_inferperf.pmu.base import Count, CounterSample

CALLS = 100  # calls per repeat


def _count(v: float) -> Count:
    return Count(float(v), int(v))


def make_profile(
    instructions: Sequence[float],
    cycles: Sequence[float] | None = None,
    *,
    page_faults: Sequence[float] | None = None,
    latency_ms: Sequence[float] = (1.0, 1.1, 1.2, 1.3, 2.0),
    rss_mb: float = 100.0,
    machine_class: str = "arm64-neoverse-n1",
    backend: str = "perf",
) -> Profile:
    """A Profile whose repeat i ran CALLS calls of ``instructions[i]`` instructions each."""
    cycles = [2 * i for i in instructions] if cycles is None else cycles
    reps = []
    for i, (ins, cyc) in enumerate(zip(instructions, cycles, strict=True)):
        counts = {
            "instructions": _count(ins * CALLS),
            "cycles": _count(cyc * CALLS),
            "task_clock": _count(cyc * CALLS / 2.5),  # 2.5 GHz: ns
        }
        if page_faults is not None:
            counts["page_faults"] = _count(page_faults[i] * CALLS)
        reps.append(Repeat(CALLS, int(cyc * CALLS / 2.5) + 1000, CounterSample(counts=counts)))
    return Profile(
        name="test_model",
        machine_class=machine_class,
        backend=backend,
        machine={"cpu": {"core_slug": "neoverse-n1"}},
        events=(),
        repeats=tuple(reps),
        latency=LatencyStats.from_durations_ns([int(ms * 1e6) for ms in latency_ms]),
        memory=MemoryStats(int(rss_mb * (1 << 20)), "clear_refs"),
        steady=Steadiness(True, 10, 0.01, 0.05, 5),
    )


def noisy(mean: float, n: int, rel_noise: float, seed: int) -> list[float]:
    rng = np.random.default_rng(seed)
    return list(mean * (1 + rel_noise * rng.standard_normal(n)))


# -- the tolerance table -----------------------------------------------------
def test_the_tolerance_table():
    # every entry names a real metric (a typo would silently fall back to 10%)
    assert set(DEFAULT_TOLERANCES) <= set(METRICS)
    core = {
        "ipc",
        "l1_miss",
        "l2_mpki",
        "instructions_per_call",
        "cycles_per_call",
        "cpu_ms_per_call",
        "page_faults_per_call",
        "latency_p50_ms",
        "latency_p99_ms",
        "peak_rss_mb",
    }
    assert core <= set(DEFAULT_TOLERANCES)
    assert all(0 < t < 1 for t in DEFAULT_TOLERANCES.values())
    assert DEFAULT_TOLERANCES["instructions_per_call"] == 0.02
    assert DEFAULT_TOLERANCES["ipc"] == 0.05
    assert DEFAULT_TOLERANCES["latency_p99_ms"] == 0.20


def test_the_tolerance_table_is_a_view_of_the_rows():
    assert {n: m.tolerance for n, m in METRICS.items()} == DEFAULT_TOLERANCES
    assert compare_mod.tolerance_of("ipc") == METRICS["ipc"].tolerance == 0.05
    assert compare_mod.floor_of("rss_growth_mb") == METRICS["rss_growth_mb"].floor == 1.0


def test_a_metric_with_no_row_uses_the_fallback():
    # a metric a hook adds has no row in core.metrics
    assert compare_mod.tolerance_of("my_hook_metric") == FALLBACK_TOLERANCE == 0.10
    assert compare_mod.floor_of("my_hook_metric") == 0.0


def test_a_rows_tolerance_is_the_one_a_comparison_uses(monkeypatch):
    from dataclasses import replace

    monkeypatch.setitem(METRICS, "ipc", replace(METRICS["ipc"], tolerance=0.33))
    base = make_profile([1e6] * 3)
    change = compare_profiles(base, base).get("ipc")
    assert change is not None
    assert change.tolerance == 0.33


# -- judging -----------------------------------------------------------------
def test_ten_percent_more_instructions_over_30_repeats_is_a_credible_regression():
    base = make_profile(noisy(1e6, 30, 0.01, seed=1), [2e6] * 30)
    cur = make_profile(noisy(1.1e6, 30, 0.01, seed=2), [2e6] * 30)
    result = compare_profiles(cur, base)
    change = result.get("instructions_per_call")
    assert change.status == "regressed"
    assert change.credible
    assert change.better == "lower"
    assert change.delta == pytest.approx(0.10, abs=0.01)
    assert change.tolerance == 0.02
    assert change.p_value is not None and change.p_value < 1e-8
    assert "Mann-Whitney U over 30 vs 30 repeats" in change.detail
    assert change.detail.startswith("p=")
    assert not result.ok
    assert change in result.regressions
    # more instructions in the same cycles: IPC went up, which is better, not worse
    assert result.get("ipc").status == "improved"


def test_ten_percent_change_with_two_repeats_is_judged_on_point_values():
    base = make_profile([1e6, 1e6], [2e6, 2e6])
    cur = make_profile([1.1e6, 1.1e6], [2e6, 2e6])
    change = compare_profiles(cur, base).get("instructions_per_call")
    assert change.status == "regressed"
    assert change.credible
    assert change.p_value is None
    assert change.delta == pytest.approx(0.10)
    assert "point values only: 2 vs 2 repeats" in change.detail


def test_half_a_percent_is_within_tolerance():
    base = make_profile(noisy(1e6, 30, 0.001, seed=3), [2e6] * 30)
    cur = make_profile([v * 1.005 for v in noisy(1e6, 30, 0.001, seed=3)], [2e6] * 30)
    result = compare_profiles(cur, base)
    change = result.get("instructions_per_call")
    assert change.status == "ok"
    assert change.delta == pytest.approx(0.005)
    assert result.ok
    assert result.regressions == ()


def test_higher_ipc_is_an_improvement():
    base = make_profile([1e6] * 10, noisy(2e6, 10, 0.005, seed=4))
    cur = make_profile([1e6] * 10, noisy(1.6e6, 10, 0.005, seed=5))  # 20% fewer cycles
    result = compare_profiles(cur, base)
    ipc = result.get("ipc")
    assert ipc.better == "higher"
    assert ipc.delta == pytest.approx(0.25, abs=0.01)  # 1/0.8 - 1
    assert ipc.status == "improved" and ipc.credible
    assert result.get("cycles_per_call").status == "improved"
    assert result.get("cycles_per_call").delta == pytest.approx(-0.20, abs=0.01)
    assert result.get("instructions_per_call").status == "ok"
    assert result.ok
    # CPU time moved by exactly its 20% tolerance: not beyond it.
    assert {c.metric for c in result.improvements} >= {"ipc", "cycles_per_call"}


def test_lower_ipc_is_a_regression():
    base = make_profile([1e6] * 10, noisy(2e6, 10, 0.005, seed=6))
    cur = make_profile([1e6] * 10, noisy(2.4e6, 10, 0.005, seed=7))
    ipc = compare_profiles(cur, base).get("ipc")
    assert ipc.delta == pytest.approx(-1 / 6, abs=0.01)
    assert ipc.status == "regressed"


def test_beyond_tolerance_from_one_outlier_is_noise():
    values = noisy(1e6, 30, 0.01, seed=8)
    outlier = list(values)
    outlier[0] = values[0] * 4  # the mean moves ~10%, the ranks barely
    change = compare_profiles(make_profile(outlier), make_profile(values)).get(
        "instructions_per_call"
    )
    assert change.delta > 0.05
    assert change.status == "noise"
    assert not change.credible
    assert change.p_value > ALPHA


def test_medians_moving_the_other_way_are_not_credible():
    base = noisy(1e6, 30, 0.001, seed=9)
    cur = [v * 0.99 for v in base]  # every repeat 1% lower: the rank test is sure
    cur[0] *= 3  # ...but one outlier pushes the total up beyond 2%
    change = compare_profiles(make_profile(cur), make_profile(base)).get("instructions_per_call")
    assert change.delta > 0.02
    assert change.p_value < ALPHA
    assert change.status == "noise"
    assert "medians moved the other way" in change.detail


def test_latency_and_memory_are_judged_on_point_values():
    base = make_profile([1e6] * 30, latency_ms=[1.0] * 99 + [2.0], rss_mb=100)
    cur = make_profile([1e6] * 30, latency_ms=[1.0] * 98 + [3.0, 3.0], rss_mb=105)
    result = compare_profiles(cur, base)
    p99 = result.get("latency_p99_ms")
    assert (p99.baseline, p99.current) == (pytest.approx(1.0), pytest.approx(3.0))
    assert p99.status == "regressed" and p99.p_value is None
    assert "point values only" in p99.detail
    rss = result.get("peak_rss_mb")
    assert rss.delta == pytest.approx(0.05)
    assert rss.status == "ok"
    assert result.get("latency_p50_ms").status == "ok"


def test_zero_baseline():
    base = make_profile([1e6] * 10, page_faults=[0.0] * 10)
    few = make_profile([1e6] * 10, page_faults=[0.05] * 10)  # one fault every 20 calls
    many = make_profile([1e6] * 10, page_faults=[2.0] * 10)
    quiet = compare_profiles(few, base).get("page_faults_per_call")
    assert quiet.delta == 0.0 and quiet.status == "ok"
    loud = compare_profiles(many, base).get("page_faults_per_call")
    assert loud.delta == math.inf
    assert loud.status == "regressed" and loud.credible
    back = compare_profiles(base, many).get("page_faults_per_call")
    assert back.delta == -1.0 and back.status == "improved"
    same = compare_profiles(base, base).get("page_faults_per_call")
    assert same.delta == 0.0 and same.status == "ok"


def test_relative_delta():
    assert relative_delta(2.0, 3.0) == 0.5
    assert relative_delta(-2.0, -1.0) == 0.5  # against |baseline|: up is up
    assert relative_delta(0.0, 0.0) == 0.0
    assert relative_delta(0.0, 0.05, 0.1) == 0.0
    assert relative_delta(0.0, 0.2, 0.1) == math.inf
    assert relative_delta(0.0, -0.2) == -math.inf
    assert relative_delta(0.0028, 0.0040, 0.01) == 0.0  # +41%, but 1 miss in 10^6 instr.
    assert relative_delta(0.5, 0.7, 0.01) == pytest.approx(0.4)
    assert relative_delta(0.7, 0.5, 0.01) == pytest.approx(-2 / 7)


def test_a_cache_that_almost_never_misses_missing_more_is_no_regression():
    # a simulated 480 MiB LLC (a cloud VM's L3): two runs of the MiniLM int8 example
    tiny = judge_metric("llc_mpki", 0.002844, 0.004022, tolerance=0.10)
    assert (tiny.status, tiny.delta) == ("ok", 0.0)
    ratio = judge_metric("llc_miss", 0.0001065, 0.0001505, tolerance=0.10)
    assert ratio.status == "ok"
    real = judge_metric("llc_mpki", 2.8, 4.0, tolerance=0.10)  # one miss per 1000 more
    assert real.status == "regressed"


def test_another_machine_class_or_backend_is_refused():
    base = make_profile([1e6] * 3)
    other = make_profile([1e6] * 3, machine_class="x86_64-amd-epyc-zen3")
    with pytest.raises(IncomparableError, match="another machine class or backend") as info:
        compare_profiles(other, base)
    assert "x86_64-amd-epyc-zen3" in str(info.value) and "arm64-neoverse-n1" in str(info.value)
    with pytest.raises(IncomparableError, match="simulate"):
        compare_profiles(make_profile([1e6] * 3, backend="simulate"), base)


def test_only_metrics_present_in_both_are_compared():
    base = make_profile([1e6] * 3, page_faults=[1.0] * 3)
    cur = make_profile([1e6] * 3)
    names = {c.metric for c in compare_profiles(cur, base).changes}
    assert "page_faults_per_call" not in names
    assert {
        "ipc",
        "instructions_per_call",
        "cycles_per_call",
        "cpu_ms_per_call",
        "latency_p50_ms",
        "peak_rss_mb",
    } <= names
    assert "l1_miss" not in names  # never counted: absent, not 0


def test_selected_metrics_and_tolerance_overrides():
    base = make_profile([1e6] * 2)
    cur = make_profile([1.1e6] * 2)
    only = compare_profiles(cur, base, metrics=["instructions_per_call"])
    assert [c.metric for c in only.changes] == ["instructions_per_call"]
    loose = compare_profiles(cur, base, tolerances={"instructions_per_call": 0.2})
    assert loose.get("instructions_per_call").status == "ok"
    assert loose.get("instructions_per_call").tolerance == 0.2
    with pytest.raises(ValueError, match="unknown metric"):
        compare_profiles(cur, base, metrics=["ipcc"])
    with pytest.raises(ValueError, match="tolerance of ipc"):
        compare_profiles(cur, base, tolerances={"ipc": -1})


def _change(metric: str, delta: float, status: str = "ok") -> MetricChange:
    return MetricChange(metric, 1.0, 1.0 + delta, delta, 0.1, "lower", status, False, "")


def test_movers_are_the_largest_changes_either_way():
    result = Comparison(
        (
            _change("a", 0.01),
            _change("b", -0.5, "improved"),
            _change("c", 0.2, "regressed"),
            _change("d", math.inf, "regressed"),
            _change("e", -0.2),
        )
    )
    assert [c.metric for c in result.movers(3)] == ["d", "b", "c"]
    assert [c.metric for c in result.movers(10)] == ["d", "b", "c", "e", "a"]
    assert result.movers(0) == ()
    assert [c.metric for c in result.regressions] == ["c", "d"]
    assert [c.metric for c in result.improvements] == ["b"]
    assert not result.ok


# -- the rank test -----------------------------------------------------------
def test_mann_whitney_without_ties_is_exact_for_small_samples():
    # U = 0 (every x below every y): one ordering of C(10, 5) = 252 on each side, so
    # p = 2/252 = 0.0079365 (scipy.stats.mannwhitneyu([1,2,3,4,5], [6,7,8,9,10],
    # method="exact").pvalue = 0.007936507936507936). The normal approximation gives
    # 0.0122 (z = (12.5 - 0.5)/4.78714), above ALPHA: 5 repeats a side could never count.
    assert mann_whitney_u([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]) == pytest.approx(2 / 252)
    assert mann_whitney_u([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]) < compare_mod.ALPHA
    # U = 2 for 3 vs 4 values: orderings with U <= 2 are 1 + 1 + 2 = 4 of C(7, 3) = 35,
    # p = 8/35 (scipy exact: 0.22857142857142856).
    assert mann_whitney_u([1, 2, 5], [3, 4, 6, 7]) == pytest.approx(8 / 35)


def test_mann_whitney_without_ties_beyond_the_exact_size_is_the_normal_approximation():
    # 21 vs 20 values (420 pairs > EXACT_MAX_PAIRS), every x below every y: U = 0,
    # mean 210, var = 420 * 42 / 12 = 1470, z = (210 - 0.5) / 38.3406 = 5.4642,
    # p = erfc(z / sqrt 2) = 4.65e-08.
    x = list(range(21))
    y = list(range(100, 120))
    assert mann_whitney_u(x, y) == pytest.approx(
        math.erfc((210 - 0.5) / math.sqrt(1470) / math.sqrt(2)), rel=1e-12
    )


@settings(max_examples=60, deadline=None)
@given(
    x=st.lists(st.integers(-1000, 1000), min_size=1, max_size=12, unique=True),
    y=st.lists(st.integers(-1000, 1000), min_size=1, max_size=12, unique=True),
)
def test_exact_p_matches_counting_every_ordering(x, y):
    """The exact p against brute force over every split of the pooled ranks (small sizes)."""
    import itertools

    assume(not set(x) & set(y) and len(x) + len(y) <= 11)
    n1, n = len(x), len(x) + len(y)
    pooled = sorted(x + y)
    u_obs = sum(pooled.index(v) + 1 for v in x) - n1 * (n1 + 1) // 2
    us = [sum(r + 1 for r in c) - n1 * (n1 + 1) // 2 for c in itertools.combinations(range(n), n1)]
    low = sum(u <= u_obs for u in us) / len(us)
    high = sum(u >= u_obs for u in us) / len(us)
    assert mann_whitney_u(x, y) == pytest.approx(min(1.0, 2 * min(low, high)), rel=1e-12)


def test_mann_whitney_with_ties():
    # By hand: pooled ranks 1 -> 1, 2 -> 3 (x3), 3 -> 6 (x3), 4 -> 9 (x3), 5 -> 11.5 (x2),
    # 6 -> 13. Rank sum of x = 1+3+3+6+6+9 = 28, U = 28 - 21 = 7, mean 21,
    # tie term sum(t^3 - t) = 24+24+24+6 = 78, var = 42/12 * (14 - 78/156) = 47.25,
    # z = (14 - 0.5)/6.87386 = 1.96396, p = 0.0495346. scipy 1.17.1 asymptotic:
    # 0.049534613435626706.
    x = [1, 2, 2, 3, 3, 4]
    y = [2, 3, 4, 4, 5, 5, 6]
    assert mann_whitney_u(x, y) == pytest.approx(0.049534613435626706, rel=1e-12)


def test_mann_whitney_degenerate_inputs():
    assert mann_whitney_u([1.0] * 5, [1.0] * 7) == 1.0
    assert mann_whitney_u([1, 2, 3], [1, 2, 3]) == 1.0
    with pytest.raises(ValueError):
        mann_whitney_u([], [1.0])


@settings(max_examples=100, deadline=None)
@given(
    x=st.lists(st.integers(-50, 50), min_size=1, max_size=25),
    y=st.lists(st.integers(-50, 50), min_size=1, max_size=25),
)
def test_mann_whitney_properties(x, y):
    p = mann_whitney_u(x, y)
    assert 0.0 < p <= 1.0
    assert p == pytest.approx(mann_whitney_u(y, x), rel=1e-9)  # two-sided: symmetric
    # rank-based: any strictly increasing transform leaves it unchanged
    assert p == pytest.approx(
        mann_whitney_u([v**3 + 7 for v in x], [v**3 + 7 for v in y]), rel=1e-9
    )


def test_module_constants():
    assert compare_mod.ALPHA == 0.01
    assert compare_mod.MIN_REPEATS == 5


# --------------------------------------------------------------------------- precision

EXPORTS = Path(__file__).resolve().parent / "fixtures" / "exports"


def _operators(variant: str) -> list:
    from pytest_inferperf.onnxrt.sessions import default_dims, make_inputs, profile_operators

    path = EXPORTS / f"{variant}.onnx"
    return profile_operators(path, make_inputs(path, default_dims(path)), runs=1, warmup=1)


def test_stored_weight_types_of_real_exports():
    from pytest_inferperf.onnxrt.precision import stored_weight_types

    assert stored_weight_types(EXPORTS / "minilm_l3_st.onnx") == {}
    dequant = stored_weight_types(EXPORTS / "minilm_l3_st_dequant.onnx")
    assert len(dequant) == 18 and set(dequant.values()) == {"int8"}  # q, k, v, out, 2 ffn x 3
    assert all(name.endswith("MatMul") for name in dequant)
    nbits = stored_weight_types(EXPORTS / "minilm_l3_st_nbits.onnx")
    assert len(nbits) == 18 and set(nbits.values()) == {"int4"}


def test_int8_weights_cast_to_float_before_matmul_are_said_to_run_in_float():
    """The file stores int8 weights; ONNX Runtime folds the Cast and Mul at load time, so
    the profile's MatMuls run on float inputs: the table and the finding say so."""
    from pytest_inferperf.onnxrt.precision import (
        precision_findings,
        precision_lines,
        precision_table,
    )

    ops = _operators("minilm_l3_st_dequant")
    assert sum(1 for o in ops if o.weight_type == "int8") == 18
    table = {r["op_type"]: r for r in precision_table(ops)}
    matmul = table["MatMul"]
    assert (
        matmul["inputs"],
        matmul["computes_in"],
        matmul["weights_stored"],
        matmul["nodes"],
        matmul["narrow_nodes"],
    ) == (["float"], "float", ["int8"], 21, 18)
    (finding,) = precision_findings(list(table.values()))
    assert finding.startswith("int8 weights dequantised to float before MatMul: 18 nodes (")
    assert finding.endswith("of operator time) run in float, not int8")
    assert precision_lines(ops)[-1] == finding
    # as stored in a Profile (dicts), the same
    assert precision_findings(precision_table([o.to_dict() for o in ops])) == [finding]


def test_integer_kernels_and_4_bit_weights_are_named_as_they_run():
    from pytest_inferperf.onnxrt.precision import precision_findings, precision_table

    int8 = {r["op_type"]: r for r in precision_table(_operators("minilm_l3_st_int8"))}
    assert int8["DynamicQuantizeMatMul"]["computes_in"] == "int8"
    assert int8["MatMulIntegerToFloat"]["computes_in"] == "int8"
    nbits = precision_table(_operators("minilm_l3_st_nbits"))
    row = next(r for r in nbits if r["op_type"] == "MatMulNBits")
    assert (row["computes_in"], row["narrow_nodes"]) == ("float x int4 weights", 18)
    assert precision_findings(nbits) == []
    fp32 = precision_table(_operators("minilm_l3_st"))
    assert precision_findings(fp32) == [] and all(not r["weights_stored"] for r in fp32)


def test_compare_shows_the_precision_per_op_type_and_the_finding():
    from pytest_inferperf.cli.compare import side_by_side
    from pytest_inferperf.measure.target import Analysis
    from pytest_inferperf.report.text import render_comparison

    fp32 = make_profile([1000] * 5).with_(
        operators=tuple(o.to_dict() for o in _operators("minilm_l3_st"))
    )
    dequant = make_profile([1000] * 5).with_(
        operators=tuple(o.to_dict() for o in _operators("minilm_l3_st_dequant"))
    )
    side = side_by_side([Analysis("fp32", "a.json", fp32), Analysis("w8", "b.json", dequant)])
    matmul = next(r for r in side.op_types if r.op_type == "MatMul")
    assert matmul.precision == ("float", "float (int8 weights)")
    assert any(
        n.startswith("w8: int8 weights dequantised to float before MatMul: 18 nodes")
        for n in side.notes
    )
    text = render_comparison(side)
    assert "[21] float (int8 weights)" in text
    assert side.to_dict()["operator_types"][0]["precision"].keys() == {"fp32", "w8"}


def test_operator_tables_of_several_sessions_say_whose_each_node_is():
    from pytest_inferperf.diagnose.assessment import assess_profile
    from pytest_inferperf.report.html import render_html
    from pytest_inferperf.report.text import render_profile

    ops = (
        {
            "node": "mm",
            "op_type": "MatMul",
            "calls": 5,
            "mean_us": 90.0,
            "total_us": 450.0,
            "share": 0.9,
            "model": "encoder",
            "input_shapes": ["float[16,32]"],
        },
        {
            "node": "gemm",
            "op_type": "Gemm",
            "calls": 5,
            "mean_us": 10.0,
            "total_us": 50.0,
            "share": 0.1,
            "model": "classifier",
            "input_shapes": ["float[1,32]"],
        },
    )
    profile = make_profile([1000] * 5).with_(operators=ops)
    text = render_profile(assess_profile(profile))
    header = next(line for line in text.splitlines() if line.startswith("model "))
    assert header.split()[:3] == ["model", "node", "op"]
    assert any(line.startswith("encoder ") and " mm " in line for line in text.splitlines())
    html = render_html(assess_profile(profile), title="t", svgs={})
    assert "<th>model</th>" in html.replace(' class="num"', "") and "classifier" in html
    single = render_profile(assess_profile(make_profile([1000] * 5).with_(operators=ops[:1])))
    assert not any(line.startswith("model ") for line in single.splitlines())


def test_analyse_roofline_line_names_the_op_types_it_could_not_cost():
    from pytest_inferperf.onnxrt.roofline import Ceilings, roofline_to_dict
    from pytest_inferperf.report.text import roofline_text

    uncosted = [
        {
            "op_type": "Einsum",
            "nodes": ["e1", "e2"],
            "share": 0.8,
            "reason": "no FLOP formula for this op type",
        },
        {"op_type": "Resize", "nodes": ["r"], "share": 0.05, "reason": "x"},
    ]
    roof = roofline_to_dict(Ceilings(100.0, 10.0, 1, "fixed"), [], uncosted=uncosted)
    assert roof["summary"]["uncosted_time_share"] == pytest.approx(0.85)
    text = roofline_text(make_profile([1000] * 5).with_(roofline=roof))
    assert text.endswith("; not costed: Einsum 80% (2 nodes), Resize 5%")


# -- compare refuses saved profiles of different models ----------------------------------
def _saved_profile(tmp_path, name: str, sha: str, shape: list[int]):
    import json

    from profile_paths import RICH

    data = json.loads(RICH.read_text(encoding="utf-8"))
    data["model"] = {
        "sha256": sha * 64,
        "path": f"{name}.onnx",
        "inputs": [{"name": "x", "shape": shape, "dtype": "float32"}],
    }
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_compare_refuses_saved_profiles_of_different_models(tmp_path, capsys):
    from pytest_inferperf.cli.main import main

    fp32 = _saved_profile(tmp_path, "fp32", "a", [1, 3])
    int8 = _saved_profile(tmp_path, "int8", "b", [1, 3])
    out = str(tmp_path / "out")
    assert main(["compare", str(fp32), str(int8), "--out", out]) == 2
    err = capsys.readouterr().err
    assert (
        f"saved profiles of different models: {int8} measured int8.onnx (sha256 "
        f"bbbbbbbbbbbb), {fp32} fp32.onnx (sha256 aaaaaaaaaaaa). A change" in err
    )
    assert "--any-model" in err and "--quantize dynamic" in err
    assert not (tmp_path / "out" / "compare.json").exists()  # refused before writing

    assert main(["compare", str(fp32), str(int8), "--out", out, "--any-model"]) == 0
    printed = capsys.readouterr().out
    assert f"note: {int8} is another model than {fp32}" in printed


def test_compare_refuses_saved_profiles_of_other_inputs_and_accepts_the_same_model(
    tmp_path, capsys
):
    from pytest_inferperf.cli.main import main

    one = _saved_profile(tmp_path, "batch1", "a", [1, 3])
    eight = _saved_profile(tmp_path, "batch8", "a", [8, 3])
    out = str(tmp_path / "out")
    assert main(["compare", str(one), str(eight), "--out", out]) == 2
    assert f"was fed x[8, 3] in {eight}, x[1, 3] in {one}" in capsys.readouterr().err
    again = _saved_profile(tmp_path / "..", "batch1", "a", [1, 3])
    assert main(["compare", str(one), str(again), "--out", out]) == 0, capsys.readouterr()
