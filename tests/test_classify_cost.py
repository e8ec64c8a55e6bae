"""A counted cause makes the diagnosis only when its estimated cost is material.

Events per call x the per-event cost on each metric's row (``Metric.cost``, an upper bound),
over the call's time, is the share of the call the cause can take; below
``change.MATERIAL_SHARE`` (a fifth) the finding is "present but small". The arithmetic
of each case is written next to it, from those cited costs: 10 µs per page fault,
500 µs per migration, 15 cycles per L1D refill (an L2 hit), 400 per miss to DRAM,
75 per page walk, 20 per mispredicted branch.
"""

from __future__ import annotations

import json

import pytest

from pytest_inferperf.core.metrics import METRICS, MetricContext, compute
from pytest_inferperf.diagnose.change import MATERIAL_SHARE
from pytest_inferperf.diagnose.classify import (
    EstimatedCost,
    diagnose,
    diagnosis_as_dict,
    diagnosis_from_dict,
    estimate_cost,
)
from pytest_inferperf.report.diagnosis import render
from pytest_inferperf.report.headline import diagnosis_headline, finding_headline

ARENA_OFF = {
    "intra_op_threads": 1,
    "allow_spinning": False,
    "enable_mem_arena": False,
    "graph_optimization_level": "all",
}


def measured(*, calls, call_ms, counts, threads=1.0):
    """Metrics of ``calls`` calls of ``call_ms`` wall time each, ``threads`` CPUs busy."""
    wall_ns = calls * call_ms * 1e6
    return compute(
        {"task_clock": wall_ns * threads, **counts},
        MetricContext(
            calls=calls,
            wall_ns=wall_ns,
            core="neoverse-n1",
            latency={"mean_ms": call_ms, "p50_ms": call_ms, "p99_ms": call_ms},
        ),
    )


def categories(diagnosis):
    return [f.category for f in diagnosis.findings]


# -- page faults: the case ------------------------------------------------------


def test_a_280_ms_call_with_a_handful_of_faults_has_no_page_fault_headline():
    # 12 faults per call > 10 (the row crosses), but 12 x 10 µs = 0.12 ms of a 280 ms
    # call is 0.043%: present but small, not the diagnosis.
    metrics = measured(calls=20, call_ms=280.0, counts={"page_faults": 12 * 20})
    diagnosis = diagnose(metrics, core="neoverse-n1", session=ARENA_OFF, cpu_count=2)
    assert diagnosis.primary is None
    assert diagnosis_headline(diagnosis) == ""
    (small,) = diagnosis.small
    assert small.category == "page_faults"
    assert small.cost is not None
    assert small.cost.share == pytest.approx(12 * 10e-6 / 0.280)
    assert small.cost.text == (
        "up to 0.043% of the call: 12 page faults x <=10 µs / 280 ms CPU time per call"
    )
    assert not small.cost.material


def test_a_0_1_ms_call_with_40_faults_is_headlined_with_its_cost():
    # 40 x 10 µs = 0.4 ms against a 0.1 ms call: the bound exceeds the whole call.
    metrics = measured(calls=2000, call_ms=0.1, counts={"page_faults": 40 * 2000})
    diagnosis = diagnose(metrics, core="neoverse-n1", session=ARENA_OFF, cpu_count=2)
    assert diagnosis.primary is not None
    assert diagnosis.primary.category == "page_faults"
    cost = diagnosis.primary.cost
    assert cost is not None and cost.material
    assert cost.share == pytest.approx(4.0)
    assert cost.text == (
        "up to the whole call: 40 page faults x <=10 µs / 0.1 ms CPU time per call"
    )
    assert diagnosis.small == ()
    assert diagnosis_headline(diagnosis) == (
        f"page-fault / allocator overhead ({diagnosis.primary.confidence:.0%}), "
        "up to the whole call"
    )


def test_the_formula_reads_as_the_share():
    # 42 x 10 µs = 0.42 ms of 1.2 ms = 35%.
    metrics = measured(calls=100, call_ms=1.2, counts={"page_faults": 4200})
    primary = diagnose(metrics, core="neoverse-n1").primary
    assert primary is not None and primary.cost is not None
    assert primary.cost.share == pytest.approx(0.35)
    assert finding_headline(primary) == (
        "page-fault / allocator overhead, up to 35% of the call: "
        "42 page faults x <=10 µs / 1.2 ms CPU time per call"
    )
    cost = METRICS["page_faults_per_call"].cost
    assert cost is not None and cost.cost == 10.0  # the metric's row's figure


@pytest.mark.parametrize(
    ("faults", "headlined"),
    [
        (20.0, True),  # 20 x 10 µs / 1 ms = 0.20: at the material share
        (19.9, False),  # 0.199: below it
    ],
)
def test_the_material_share_is_the_boundary(faults, headlined):
    metrics = {"page_faults_per_call": faults, "cpu_ms_per_call": 1.0}
    diagnosis = diagnose(metrics, core="neoverse-n1")
    estimate = estimate_cost("page_faults_per_call", faults, metrics)
    assert estimate is not None
    assert estimate.share == pytest.approx(faults * 10e-6 / 1e-3)
    assert estimate.material is headlined
    assert ("page_faults" in categories(diagnosis)) is headlined
    assert (diagnosis.small != ()) is not headlined
    assert MATERIAL_SHARE == 0.20  # change.py's constant, the one definition


def test_threads_do_not_dilute_the_share():
    # 4 CPUs busy: 4 ms of CPU per 1 ms call. 15 faults x 10 µs = 0.15 ms is 3.75% of the
    # CPU time but 15% of the wall time: the shorter clock is the bound.
    metrics = measured(calls=100, call_ms=1.0, counts={"page_faults": 1500}, threads=4.0)
    estimate = estimate_cost("page_faults_per_call", 15.0, metrics)
    assert estimate is not None
    assert estimate.share == pytest.approx(0.15)
    assert estimate.formula == "15 page faults x <=10 µs / 1 ms wall time per call"


def test_a_rate_per_cpu_second_reads_per_call_where_calls_were_counted():
    # 0.1 ms calls with 6 faults each: 6 < 10 per call, but 60,000 per CPU-second >
    # 50,000 crosses; the same events per call: 6 x 10 µs / 0.1 ms = 60%.
    metrics = measured(calls=1000, call_ms=0.1, counts={"page_faults": 6000})
    primary = diagnose(metrics, core="neoverse-n1").primary
    assert primary is not None and primary.category == "page_faults"
    assert [e.metric for e in primary.evidence if e.crossed] == ["page_faults_per_sec"]
    assert primary.cost is not None
    assert primary.cost.share == pytest.approx(0.6)
    assert primary.cost.formula == "6 page faults x <=10 µs / 0.1 ms CPU time per call"


def test_a_rate_per_cpu_second_is_its_own_share():
    # perf stat without --calls: 60,000 faults per CPU-second x 10 µs = 0.6 of the CPU.
    metrics = {"page_faults_per_sec": 60_000.0}
    primary = diagnose(metrics, core="neoverse-n1").primary
    assert primary is not None and primary.category == "page_faults"
    assert primary.cost is not None
    assert primary.cost.share == pytest.approx(0.6)
    assert primary.cost.formula == "60000 page faults per CPU-second x <=10 µs"


def test_without_a_clock_the_page_fault_rule_keeps_its_logic():
    # 40 faults per call and nothing to weigh them against: not estimable, named as before.
    diagnosis = diagnose({"page_faults_per_call": 40.0}, core="neoverse-n1")
    assert diagnosis.primary is not None
    assert diagnosis.primary.category == "page_faults"
    assert diagnosis.primary.cost is None
    assert "Estimated cost" not in diagnosis.primary.explanation


# -- migrations, TLB walks, cache refills, branches ---------------------------------------


def test_migrations_on_a_long_call_are_small():
    # 1.5 migrations per 280 ms call > 1 (the row crosses); 1.5 x 500 µs = 0.75 ms is
    # 0.27% of the call. 30 / 8.4 s = 3.6 per second stays under 100.
    metrics = measured(calls=30, call_ms=280.0, counts={"cpu_migrations": 45})
    diagnosis = diagnose(metrics, core="neoverse-n1")
    assert "noisy_machine" not in categories(diagnosis)
    (small,) = diagnosis.small
    assert small.category == "noisy_machine"
    assert small.cost is not None
    assert small.cost.share == pytest.approx(1.5 * 0.5 / 280.0)


def test_l1d_refills_are_charged_an_l2_hit_when_l2_was_counted():
    # 25 L1D MPKI > 20 (AWS). IPC 0.5: 1000 instructions take 2000 cycles.
    # With L2 counted (4 MPKI < 10): 25 x 15 = 375 cycles of 2000 = 18.75%: small.
    counted_l2 = {"l1d_mpki": 25.0, "ipc": 0.5, "l2_mpki": 4.0}
    diagnosis = diagnose(counted_l2, core="neoverse-n1")
    assert "l1d_residency" not in categories(diagnosis)
    assert [f.category for f in diagnosis.small] == ["l1d_residency"]
    assert diagnosis.small[0].cost.share == pytest.approx(25 * 15 / 2000)
    # With nothing below L1 counted a refill may be a miss to DRAM: 25 x 400 / 2000 = 5.
    l1_only = {"l1d_mpki": 25.0, "ipc": 0.5}
    estimate = estimate_cost("l1d_mpki", 25.0, l1_only)
    assert estimate is not None
    assert estimate.share == pytest.approx(25 * 400 / 2000)
    assert "charged as a miss to DRAM" in estimate.formula
    assert "l1d_residency" in categories(diagnose(l1_only, core="neoverse-n1"))


def test_a_small_child_neither_halves_its_parent_nor_explains_low_ipc():
    # N1 (width 5): IPC 0.5 < 1.25. DTLB 2 MPKI > 1 (judgement) but 2 x 75 / 2000 = 7.5%:
    # present but small. Backend stalls 0.6 > 0.5 (perf): backend_bound keeps its full
    # confidence, and it (not the TLB) explains the low IPC.
    metrics = {"ipc": 0.5, "dtlb_mpki": 2.0, "backend_stalled": 0.6}
    diagnosis = diagnose(metrics, core="neoverse-n1")
    assert diagnosis.primary is not None
    assert diagnosis.primary.category == "backend_bound"
    assert "halved" not in diagnosis.primary.explanation
    assert [f.category for f in diagnosis.small] == ["tlb_churn"]
    assert diagnosis.small[0].cost.share == pytest.approx(0.075)
    assert "ipc_collapse" not in categories(diagnosis)


def test_a_small_memory_finding_leaves_low_ipc_to_ilp_limited_compute():
    # N1: IPC 0.5 < 1.25. L2 counted and fine (4 MPKI < 10); DTLB 2 MPKI x 75 cycles /
    # 2000 cycles = 7.5%: the walks cannot explain the low IPC, so IPC collapse stands.
    metrics = {"ipc": 0.5, "l2_mpki": 4.0, "dtlb_mpki": 2.0}
    diagnosis = diagnose(metrics, core="neoverse-n1")
    assert diagnosis.primary is not None
    assert diagnosis.primary.category == "ipc_collapse"
    assert "halved" not in diagnosis.primary.explanation  # a small child halves nothing
    assert [f.category for f in diagnosis.small] == ["tlb_churn"]


def test_a_ratio_key_keeps_its_logic():
    # Branch MPKI 12 > 10 at IPC 0.5: 12 x 20 / 2000 = 12%, small on its own; but 15% of
    # branches mispredicted > 10% (perf) is a ratio, so the finding stands, unestimated.
    metrics = {"branch_mpki": 12.0, "branch_miss": 0.15, "ipc": 0.5}
    primary = diagnose(metrics, core="neoverse-n1").primary
    assert primary is not None
    assert primary.category == "branch_misprediction"
    assert primary.cost is None
    # Alone, the mispredicts are present but small, and they do not keep the IPC of 0.5
    # on a 5-wide core (under a quarter of it) from naming the backend, inferred: the
    # branches counted explain little of the unused slots.
    alone = diagnose({"branch_mpki": 12.0, "ipc": 0.5}, core="neoverse-n1")
    assert alone.primary.category == "backend_bound"
    assert alone.primary.title.startswith("backend bound, inferred from IPC alone")
    assert "Mispredicted branches were counted and explain little" in alone.primary.explanation
    assert [f.category for f in alone.small] == ["branch_misprediction"]
    assert alone.small[0].cost.share == pytest.approx(0.12)


def test_without_ipc_refills_keep_their_logic():
    # Cortex-A15 style: L1 DTLB refills counted, no cycles: no IPC to weigh them with.
    diagnosis = diagnose({"l1d_tlb_mpki": 142.7}, core="cortex-a15")
    assert diagnosis.primary is not None
    assert diagnosis.primary.category == "tlb_churn"
    assert diagnosis.primary.cost is None


# -- where it shows ------------------------------------------------------------------------


def test_the_full_reasoning_lists_what_is_present_but_small():
    metrics = measured(calls=20, call_ms=280.0, counts={"page_faults": 12 * 20})
    diagnosis = diagnose(metrics, core="neoverse-n1", session=ARENA_OFF, cpu_count=2)
    short = render(diagnosis)
    assert short.splitlines()[0] == (
        "Diagnosis (neoverse-n1): no cause that can take 20% of the call."
    )
    assert "  present but small: page_faults (-v for why)" in short.splitlines()
    full = render(diagnosis, verbose=True).splitlines()
    at = full.index("Present but small (their events can cost less than 20% of the call):")
    assert full[at + 1] == (
        "  page-fault / allocator overhead [page_faults]: up to 0.043% of the call: "
        "12 page faults x <=10 µs / 280 ms CPU time per call"
    )
    assert full[at + 2].startswith("    page_faults_per_call = 12 > 10")


def test_the_primary_block_shows_its_cost():
    metrics = measured(calls=100, call_ms=1.2, counts={"page_faults": 4200})
    text = render(diagnose(metrics, core="neoverse-n1"))
    assert (
        "  cost: up to 35% of the call: 42 page faults x <=10 µs / 1.2 ms CPU time per call"
        in text.splitlines()
    )


def test_cost_and_small_round_trip_and_old_diagnoses_load():
    # 42 faults per 1.2 ms call (35%); DTLB 2 MPKI at IPC 0.5: 2 x 75 / 2000 = 7.5%.
    counts = {"page_faults": 4200, "cycles": 2e9, "instructions": 1e9, "dtlb_walk": 2e6}
    diagnosis = diagnose(measured(calls=100, call_ms=1.2, counts=counts), core="neoverse-n1")
    assert [f.category for f in diagnosis.small] == ["tlb_churn"]
    data = json.loads(json.dumps(diagnosis_as_dict(diagnosis)))
    assert data["primary"]["cost"]["share"] == pytest.approx(0.35)
    back = diagnosis_from_dict(data)
    assert back.primary is not None and back.primary.cost == diagnosis.primary.cost
    assert back.small == diagnosis.small
    assert diagnosis_as_dict(back) == data
    # A diagnosis written before costs were estimated has neither field.
    old = {k: v for k, v in data.items() if k != "small"}
    old["primary"] = {k: v for k, v in data["primary"].items() if k != "cost"}
    loaded = diagnosis_from_dict(old)
    assert loaded.small == ()
    assert loaded.primary is not None and loaded.primary.cost is None


def test_every_count_threshold_has_a_cost_on_record():
    # The rows whose metric is a count of events get their cost from the one table.
    from pytest_inferperf.diagnose.thresholds_by_core import THRESHOLDS

    counts = {
        r.metric
        for r in THRESHOLDS
        if r.role == "key" and (r.metric.endswith(("_mpki", "_per_call", "_per_sec")))
    }
    metrics = {"ipc": 1.0, "cpu_ms_per_call": 1.0, "l2_mpki": 1.0}
    missing = {m for m in counts if estimate_cost(m, 1.0, metrics) is None}
    assert missing == set()
    assert isinstance(estimate_cost("ipc", 1.0, metrics), type(None))
    assert EstimatedCost("x", 0.2, "").material
