"""Explaining a change against a baseline: credible and material causes only.

Profiles are built in memory as a machine without a PMU measures them: task-clock,
page faults, context switches and migrations, per-call latency, ``region()`` stages
and ONNX Runtime op types.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import numpy as np
import pytest

from pytest_inferperf.core.metrics import profile_metrics
from pytest_inferperf.core.profile import (
    LatencyStats,
    MemoryStats,
    Profile,
    Repeat,
    StageStats,
    Steadiness,
)
from pytest_inferperf.diagnose.change import (
    MATERIAL_SHARE,
    ChangeExplanation,
    explain_change,
    explain_profiles,
    metric_share,
    op_type_changes,
    slowdown_of,
    stage_changes,
)
from pytest_inferperf.judge.comparison import compare_profiles
from pytest_inferperf.measure.stages import REST_STAGE
from pytest_inferperf.pmu.base import Count, CounterSample

CALLS = 20  # calls per repeat
REPEATS = 12


def spread(mean: float, rel: float, seed: int, n: int = REPEATS) -> list[float]:
    """``n`` values around ``mean`` moving by ``rel`` (uniform), never negative."""
    rng = np.random.default_rng(seed)
    return [max(0.0, mean * (1 + rel * (2 * rng.random() - 1))) for _ in range(n)]


def no_pmu_profile(
    ms: Sequence[float],
    *,
    switches: Sequence[float] = (),
    faults: Sequence[float] = (),
    migrations: Sequence[float] = (),
    stages: Mapping[str, Sequence[float]] | None = None,
    op_types: Mapping[str, tuple[int, Sequence[float]]] | None = None,
    cpu: float = 1.0,
) -> Profile:
    """Repeat i: CALLS calls of ``ms[i]`` ms (CPU = ``cpu`` x wall), OS events per call.

    ``stages`` maps a stage to its ms per call in each repeat (the rest of ``ms`` is
    outside the regions); ``op_types`` maps an op type to (nodes, µs of each run).
    """
    reps = []
    for i, per_call in enumerate(ms):
        counts = {"task_clock": cpu * per_call * 1e6 * CALLS}
        for event, values in (
            ("context_switches", switches),
            ("page_faults", faults),
            ("cpu_migrations", migrations),
        ):
            if values:
                counts[event] = values[i] * CALLS
        sample = CounterSample(counts={k: Count(v, int(v)) for k, v in counts.items()})
        reps.append(Repeat(CALLS, int(per_call * 1e6 * CALLS), sample))
    stage_rows: list[StageStats] = []
    if stages:
        inside = [sum(v[i] for v in stages.values()) for i in range(len(ms))]
        for name, values in {
            **stages,
            REST_STAGE: [m - s for m, s in zip(ms, inside, strict=True)],
        }.items():
            walls = tuple(int(v * 1e6 * CALLS) for v in values)
            stage_rows.append(StageStats(name, CALLS * len(ms), sum(walls), {}, walls))
    ops = tuple(
        {"op_type": name, "nodes": nodes, "mean_us": float(np.mean(runs)), "runs_us": list(runs)}
        for name, (nodes, runs) in (op_types or {}).items()
    )
    durations = [int(m * 1e6) for m in ms for _ in range(CALLS)]
    return Profile(
        name="test_model",
        machine_class="x86_64-test",
        backend="perf",
        machine={"cpu": {"core_slug": "intel-core-skylake"}},
        events=(),
        repeats=tuple(reps),
        latency=LatencyStats.from_durations_ns(durations),
        memory=MemoryStats(None, "none"),
        steady=Steadiness(True, 3, 0.01, 0.05, 3),
        stages=tuple(stage_rows),
        op_types=ops,
    )


def explain(current: Profile, baseline: Profile) -> ChangeExplanation:
    """As the verdict does: with the rank test's judgement of every metric."""
    return explain_profiles(current, baseline, comparison=compare_profiles(current, baseline))


# -- OS-counter noise never points ----------------------------------------------------


def test_the_issue_case_names_the_stage_not_the_os_counters():
    # Measured on a 2-CPU VM without a PMU: preprocess 0.31 -> 98.5 ms per call; context
    # switches 0.77 -> 1.97, page faults 0.3 -> 0.8, migrations 0 -> 0.033 per call.
    model_ms = spread(2.0, 0.15, 1)
    base = no_pmu_profile(
        [0.31 + m for m in model_ms],
        switches=spread(0.77, 0.2, 2),
        faults=spread(0.3, 0.2, 3),
        migrations=[0.0] * REPEATS,
        stages={"preprocess": spread(0.31, 0.1, 4)},
        op_types={"MatMul": (24, spread(1500, 0.2, 5)), "Add": (12, spread(300, 0.2, 6))},
    )
    now_pre = spread(98.5, 0.05, 7)
    now_model = spread(2.0, 0.15, 8)
    now = no_pmu_profile(
        [p + m for p, m in zip(now_pre, now_model, strict=True)],
        switches=spread(1.97, 0.2, 9),
        faults=spread(0.8, 0.2, 10),
        migrations=[0.0] * (REPEATS - 4) + [0.1] * 4,  # 0.033 per call on average
        stages={"preprocess": now_pre},
        op_types={"MatMul": (24, spread(1500, 0.2, 11)), "Add": (12, spread(300, 0.2, 12))},
    )
    change = explain(now, base)
    assert change.points_to is None
    assert [(c.kind, c.name) for c in change.causes] == [("stage", "preprocess")]
    assert change.causes[0].share == pytest.approx(1.0, abs=0.05)
    assert "stage `preprocess` +98" in change.summary
    assert "the regression is outside the model" in change.summary
    assert "points to" not in change.summary
    moved = {c.metric: c for c in change.moved}
    for metric in ("context_switches_per_call", "page_faults_per_call", "cpu_migrations_per_call"):
        assert moved[metric].share is not None and moved[metric].share < 0.02, metric


def test_a_stage_that_explains_the_slowdown_leaves_no_counter_to_point_to():
    # Seen on the CI VM: a pure-Python preprocess stage 0.4 -> 12.8 ms per call raised CPU
    # utilisation 0.42 -> 0.68 (the session's wait became busy Python). The stage is all
    # of the slowdown; the utilisation moved with it and is not a second cause.
    base = no_pmu_profile(
        spread(2.0, 0.05, 1), stages={"preprocess": spread(0.4, 0.05, 2)}, cpu=0.42
    )
    now_pre = spread(12.8, 0.05, 3)
    now = no_pmu_profile([p + 1.6 for p in now_pre], stages={"preprocess": now_pre}, cpu=0.68)
    change = explain(now, base)
    assert [(c.kind, c.name) for c in change.causes] == [("stage", "preprocess")]
    assert change.points_to is None and "points to" not in change.summary
    moved = {c.metric: c for c in change.moved}
    assert moved["cpu_utilisation"].credible and moved["cpu_utilisation"].share is None
    assert "stays within one CPU" in moved["cpu_utilisation"].cost


def test_more_of_one_cpu_used_is_not_threads_spinning():
    # Seen in the suite while other work ran: the baseline's process got 0.5 of a CPU
    # (the machine was busy), the new run 0.96 of one, so its CPU time per call rose
    # while its wall time fell. A single thread that waited less is no spinning.
    base = no_pmu_profile(spread(0.42, 0.05, 1), cpu=0.50)
    now = no_pmu_profile(spread(0.372, 0.05, 2), cpu=0.96)
    change = explain(now, base)
    assert change.points_to is None and "thread_spinning" not in change.summary
    moved = {c.metric: c for c in change.moved}
    assert moved["cpu_utilisation"].share is None


def test_threads_busy_beyond_one_cpu_do_point_to_spinning():
    base = no_pmu_profile(spread(2.0, 0.05, 1), cpu=0.95)
    now = no_pmu_profile(spread(2.0, 0.05, 2), cpu=1.9)  # same wall, twice the CPU
    change = explain(now, base)
    assert change.points_to == "thread_spinning", change.summary


def test_a_slowdown_nothing_here_explains_is_unexplained_and_shows_what_moved():
    base = no_pmu_profile(
        spread(50.0, 0.05, 1),
        switches=spread(0.77, 0.1, 2),
        faults=spread(0.3, 0.1, 3),
        migrations=[0.0] * REPEATS,
    )
    now = no_pmu_profile(
        spread(100.0, 0.05, 4),
        switches=spread(1.97, 0.1, 5),
        faults=spread(0.8, 0.1, 6),
        migrations=[0.1] * 4 + [0.0] * 8,
    )
    change = explain(now, base)
    assert change.unexplained and change.causes == () and change.points_to is None
    assert "unexplained by the counters available here" in change.summary
    assert "context_switches_per_call +" in change.summary  # what did move is shown
    moved = {c.metric: c for c in change.moved}
    # 1.97 switches in a call twice as long: 0.43 more than the baseline's rate gives,
    # x 1 ms at most = 0.43 ms of a 50 ms slowdown.
    assert moved["context_switches_per_call"].share == pytest.approx(0.43 / 50, rel=0.3)
    assert moved["page_faults_per_call"].share == pytest.approx(0.5 * 0.01 / 50, rel=0.3)


@pytest.mark.parametrize("seed", range(20))
def test_unchanged_os_counter_noise_never_points(seed):
    """Same distributions on both sides, small absolute moves: never a 'points to'."""
    rng = np.random.default_rng(seed)
    slower = float(rng.choice([1.0, 1.2, 2.0]))  # no slowdown, noise-sized, doubled
    ms = float(rng.uniform(0.5, 20.0))
    switches, faults = float(rng.uniform(0, 3)), float(rng.uniform(0, 2))

    def side(factor: float, offset: int) -> Profile:
        return no_pmu_profile(
            spread(ms * factor, 0.3, seed * 10 + offset),
            switches=spread(switches, 0.8, seed * 10 + offset + 1),
            faults=spread(faults, 0.8, seed * 10 + offset + 2),
            migrations=[float(rng.choice([0.0, 0.05])) for _ in range(REPEATS)],
        )

    change = explain(side(slower, 5), side(1.0, 0))
    assert change.points_to is None, change.summary
    assert not [c for c in change.causes if c.kind == "metric"], change.summary


def test_credible_extra_switches_that_can_cost_the_slowdown_do_point():
    # 1 ms calls become 3 ms with 4 more preemptions per call than the rate explains:
    # material (x 1 ms at most) and credible, so it is a candidate.
    base = no_pmu_profile(spread(1.0, 0.05, 1), switches=spread(0.5, 0.1, 2))
    now = no_pmu_profile(spread(3.0, 0.05, 3), switches=spread(5.5, 0.1, 4))
    change = explain(now, base)
    assert change.points_to == "thread_spinning"
    assert "points to thread_spinning" in change.summary


# -- stages --------------------------------------------------------------------------------


def test_a_stage_without_per_repeat_values_is_judged_on_point_values():
    base = no_pmu_profile([1.31] * REPEATS, stages={"preprocess": [0.31] * REPEATS})
    now = no_pmu_profile([99.5] * REPEATS, stages={"preprocess": [98.5] * REPEATS})
    old = base.with_(
        stages=tuple(s.__class__(s.name, s.calls, s.wall_ns, {}) for s in base.stages)
    )  # a baseline from before
    changes = stage_changes(now, old, slowdown_of(profile_metrics(now), profile_metrics(old)))
    pre = next(s for s in changes if s.name == "preprocess")
    assert pre.credible and pre.detail.startswith("point values")
    assert pre.delta_ms == pytest.approx(98.19)
    assert pre.relative == pytest.approx(98.5 / 0.31 - 1)


def test_a_stage_inside_noise_is_not_named():
    base = no_pmu_profile(spread(10.0, 0.3, 1), stages={"preprocess": spread(5.0, 0.3, 2)})
    now = no_pmu_profile(spread(20.0, 0.05, 3), stages={"preprocess": spread(5.0, 0.3, 4)})
    change = explain(now, base)
    assert "preprocess" not in {c.name for c in change.causes}
    assert change.causes[0].name == REST_STAGE  # the time outside the regions grew
    assert "stage `outside the region() stages`" in change.summary


# -- op types -------------------------------------------------------------------------------


def test_one_op_type_twice_as_slow_is_named_the_rest_unchanged():
    def side(matmul_us: float, seed: int) -> Profile:
        total = (matmul_us + 400) / 1000
        return no_pmu_profile(
            spread(total, 0.2, seed),
            op_types={
                "MatMul": (24, spread(matmul_us, 0.25, seed + 1)),
                "Add": (12, spread(250, 0.25, seed + 2)),
                "Softmax": (4, spread(150, 0.25, seed + 3)),
            },
        )

    change = explain(side(1600, 10), side(800, 0))
    assert [(c.kind, c.name) for c in change.causes] == [("op_type", "MatMul")]
    assert "op type MatMul +0.7" in change.summary and "24 nodes" in change.summary
    matmul = next(o for o in change.op_types if o.name == "MatMul")
    assert matmul.relative == pytest.approx(1.0, abs=0.25) and matmul.stands_out


def test_every_op_type_slower_alike_names_none():
    """A busy machine slows every op type: no single op type is to blame."""

    def side(factor: float, seed: int) -> Profile:
        return no_pmu_profile(
            spread(1.2 * factor, 0.05, seed),
            op_types={
                "MatMul": (24, spread(800 * factor, 0.05, seed + 1)),
                "Add": (12, spread(250 * factor, 0.05, seed + 2)),
            },
        )

    change = explain(side(1.5, 10), side(1.0, 0))
    assert not [c for c in change.causes if c.kind == "op_type"]
    assert all(not o.stands_out for o in change.op_types)
    assert "as much as the other op types" in change.summary


def test_op_types_from_an_operator_table_only():
    """Profiles of ``inferperf analyse`` (per-node table, no per-run values) still compare."""

    def side(matmul_us: float) -> Profile:
        profile = no_pmu_profile([(matmul_us + 200) / 1000] * REPEATS)
        return profile.with_(
            operators=(
                {"node": "mm1", "op_type": "MatMul", "mean_us": matmul_us / 2},
                {"node": "mm2", "op_type": "MatMul", "mean_us": matmul_us / 2},
                {"node": "add", "op_type": "Add", "mean_us": 200.0},
            )
        )

    now, base = side(2000), side(1000)
    ops = op_type_changes(now, base, slowdown_of(profile_metrics(now), profile_metrics(base)))
    matmul = ops[0]
    assert (matmul.name, matmul.nodes, matmul.credible) == ("MatMul", (2, 2), True)
    assert matmul.share == pytest.approx(1.0)


# -- metrics with a PMU ----------------------------------------------------------------------


def test_a_small_cache_move_cannot_explain_a_large_slowdown():
    base = {"cycles_per_call": 1e9, "instructions_per_call": 2e9, "ipc": 2.0, "l1d_mpki": 10.0}
    now = {"cycles_per_call": 2e9, "instructions_per_call": 2e9, "ipc": 1.0, "l1d_mpki": 12.0}
    share, how = metric_share("l1d_mpki", now, base, slowdown_of(now, base))
    # 2 more refills per 1000 instructions x 2e9 instructions x 15 cycles = 6e7 of 1e9
    assert share == pytest.approx(0.06)
    assert "15 cycles per L1D refill" in how and "Levinthal" in how
    change = explain_change(now, base)
    assert change.points_to == "ipc_collapse"  # the lower IPC itself is material
    assert "l1d_mpki" not in {c.name for c in change.causes}


def test_a_backend_split_at_level_2_points_to_the_part_that_moved():
    # The backend's share grew by 0.3 of the cycles, all of it waiting on memory
    # (top-down level 2: Backend = Memory + Core). Measured on both sides, the parts name
    # the cause: memory (l2_llc_residency), not the core-bound backend category.
    base = {"cycles_per_call": 1e9, "backend_bound": 0.30, "memory_bound": 0.10, "core_bound": 0.20}
    now = {"cycles_per_call": 2e9, "backend_bound": 0.65, "memory_bound": 0.45, "core_bound": 0.20}
    change = explain_change(now, base)
    assert change.points_to == "l2_llc_residency"
    assert "backend_bound" not in {c.name for c in change.causes}
    # Without the parts on one side, the whole is the cause, as before.
    whole = explain_change(now, {k: v for k, v in base.items() if k != "memory_bound"})
    assert whole.points_to == "backend_bound"


def test_a_front_end_split_at_level_2_names_the_part_that_moved():
    # Frontend = Fetch Latency + Fetch Bandwidth (top-down level 2): the latency part
    # grew (i-cache, iTLB misses, resteers), so it is the cause named, not the whole.
    base = {
        "cycles_per_call": 1e9,
        "frontend_bound": 0.20,
        "fetch_latency": 0.10,
        "fetch_bandwidth": 0.10,
    }
    now = {
        "cycles_per_call": 2e9,
        "frontend_bound": 0.55,
        "fetch_latency": 0.45,
        "fetch_bandwidth": 0.10,
    }
    change = explain_change(now, base)
    assert change.points_to == "frontend_bound"
    names = {c.name for c in change.causes}
    assert "fetch_latency" in names and "frontend_bound" not in names


def test_every_metric_with_a_cost_points_to_a_category_and_names_a_source():
    from pytest_inferperf.core.metrics import METRICS

    costed = {n: m for n, m in METRICS.items() if m.cost is not None}
    # 3 OS events, 9 MPKI, 19 stall fractions, 35 printed TMA nodes below level 2 (and
    # the microcode sequencer's, AMD's from the counts; Slow_Pause; the 18 deeper nodes
    # under the front end, L3_Bound, Store_Bound, L1_Bound and the ports the latest),
    # the 9 entries of Intel's bottleneck view that name a category, instr., IPC, CPUs
    assert len(costed) == 78
    for name, row in costed.items():
        assert row.points_to is not None, name
        assert row.cost is not None and row.cost.source, name


def test_no_slowdown_names_nothing():
    base = no_pmu_profile(spread(5.0, 0.05, 1), faults=spread(1.0, 0.05, 2))
    now = no_pmu_profile(spread(5.0, 0.05, 3), faults=spread(3.0, 0.05, 4))
    change = explain(now, base)
    assert change.causes == () and not change.unexplained
    assert change.summary.startswith("no credible slowdown; moved most: ")
    assert "page_faults_per_call +207% (0.989 -> 3.03; credible)" in change.summary


# -- data --------------------------------------------------------------------------------


def test_profile_keeps_stage_repeats_and_op_types_and_older_files_load():
    profile = no_pmu_profile(
        [1.0, 1.1, 1.2], stages={"pre": [0.1, 0.2, 0.3]}, op_types={"MatMul": (2, [10.0, 11.0])}
    )
    again = Profile.from_dict(json.loads(profile.to_json()))
    assert again.stages == profile.stages
    assert again.stages[0].repeat_wall_ns == (2_000_000, 4_000_000, 6_000_000)
    assert again.op_types == (
        {"op_type": "MatMul", "nodes": 2, "mean_us": 10.5, "runs_us": [10.0, 11.0]},
    )
    older = json.loads(profile.to_json())
    del older["op_types"]
    for stage in older["stages"]:
        del stage["repeat_wall_ns"]
    loaded = Profile.from_dict(older)
    assert loaded.op_types == () and loaded.stages[0].repeat_wall_ns == ()
    assert loaded.schema_version == 1


def test_the_explanation_as_plain_data():
    base = no_pmu_profile(
        [1.31] * REPEATS, stages={"preprocess": [0.31] * REPEATS}, migrations=[0.0] * REPEATS
    )
    now = no_pmu_profile(
        [99.5] * REPEATS, stages={"preprocess": [98.5] * REPEATS}, migrations=[0.05] * REPEATS
    )
    data = json.loads(json.dumps(explain(now, base).to_dict(), allow_nan=False))
    assert data["causes"][0]["name"] == "preprocess" and data["points_to"] is None
    assert data["stages"][0]["name"] == "preprocess"
    migrations = next(m for m in data["moved"] if m["metric"] == "cpu_migrations_per_call")
    assert migrations["relative"] == "inf" and migrations["share"] < MATERIAL_SHARE


# -- rendering -------------------------------------------------------------------------------


def _stage_change() -> ChangeExplanation:
    base = no_pmu_profile([1.31] * REPEATS, stages={"<pre>": [0.31] * REPEATS})
    now = no_pmu_profile([99.5] * REPEATS, stages={"<pre>": [98.5] * REPEATS})
    return explain(now, base)


def test_html_shows_the_summary_and_the_stage_table_escaped():
    from pytest_inferperf.report.html import change_html

    page = change_html(_stage_change(), "current vs baseline")
    assert "<pre>" not in page and "&lt;pre&gt;" in page
    assert "stage `&lt;pre&gt;` +98.2 ms per call (+31,674%, all of the slowdown)" in page
    assert (
        '<tr><td>&lt;pre&gt;</td><td class="num">0.31</td><td class="num">98.5</td>'
        '<td class="num"><span class="bad">+31,674%</span></td><td>yes</td>'
        '<td class="num">100%</td></tr>'
    ) in page


def test_terminal_summary_says_why_each_slower_test_is_slower():
    from pytest_inferperf.report.terminal import change_lines

    change = _stage_change().to_dict()
    records = [
        {"key": "t.py::test_slow", "change_explanation": change, "verdict": "regressed"},
        {"key": "t.py::test_flaky", "change_explanation": change, "verdict": "inconclusive"},
        # a passed test is never listed as slower, whatever its explanation says
        {"key": "t.py::test_fine", "change_explanation": change, "verdict": "passed"},
        {
            "key": "t.py::test_same",
            "change_explanation": {"summary": "no metric moved", "slowdown": {"credible": False}},
        },
        {"key": "t.py::test_new", "change_explanation": None},
    ]
    assert change_lines(records) == [
        "Slower than the baseline, and why:",
        f"  t.py::test_flaky (inconclusive): {change['summary']}",
        f"  t.py::test_slow: {change['summary']}",
    ]


def test_a_stage_named_while_the_model_also_moved_a_little_is_mostly_outside_it():
    base = no_pmu_profile(
        spread(1.3, 0.05, 1),
        stages={"preprocess": spread(0.3, 0.05, 2)},
        op_types={"MatMul": (2, spread(400, 0.05, 3))},
    )
    now = no_pmu_profile(
        spread(8.0, 0.05, 4),
        stages={"preprocess": spread(6.6, 0.05, 5)},
        op_types={"MatMul": (4, spread(800, 0.05, 6))},
    )
    change = explain(now, base)
    assert [c.name for c in change.causes] == ["preprocess"]  # MatMul: 6% of the slowdown
    assert (
        "the regression is mostly outside the model (ONNX Runtime's operators +102% in "
        "total, 6% of the slowdown)" in change.summary
    )
