"""Derived metrics: pure functions of counter totals and a Profile's statistics.

Owns: the table of every metric the product knows (name, inputs, unit,
which direction is better, source of the formula) and computing them. A
metric whose inputs were not counted is absent, never 0. Budget keywords
(``<metric>_min`` / ``<metric>_max``) and baseline comparisons are built on
this table.

Must not: read counters or files.

Formulas: Arm's Neoverse telemetry specifications (telemetry-solution
``data/pmu/cpu/neoverse/*.json``, ``metrics`` sections) and Linux
``tools/perf/pmu-events/arch/arm64/sbsa.json``; thresholds of concern live in
``thresholds`` and the judging in ``classify``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .profile import Profile

Counts = Mapping[str, float]


@dataclass(frozen=True)
class TopdownModel:
    """Level-1 top-down constants of one core (telemetry-solution ``metrics``)."""

    slots: int
    frontend_branch_k: float  # frontend_bound -= k * BR_MIS_PRED / CPU_CYCLES
    backend_branch_k: float  # backend_bound -= k * BR_MIS_PRED / CPU_CYCLES
    slot_cycles_correction: bool = False  # N2 r0p0: slot counts include one per cycle


# neoverse-v1.json: frontend_bound = STALL_SLOT_FRONTEND/(8*CYC) - 4*BR_MIS_PRED/CYC,
#                   backend_bound = STALL_SLOT_BACKEND/(8*CYC)
# neoverse-v2.json: ... - 1*BR_MIS_PRED/CYC, backend ... - 3*BR_MIS_PRED/CYC
# neoverse-n2-r0p3.json: slots 5, same branch terms as V2.
# neoverse-n2-r0p0.json (a link to telemetry-solution neoverse-n2.json, product_configuration
# r0p0; checked against that file): frontend_bound uses (STALL_SLOT_FRONTEND - CPU_CYCLES),
# retiring and bad_speculation use (STALL_SLOT - CPU_CYCLES); backend_bound is NOT corrected
# (STALL_SLOT_BACKEND / (5*CYC) - 3*BR_MIS_PRED/CYC). Linux perf's neoverse-n2-v2 metrics apply
# the same correction only when the MIDR is 0x410fd490 (r0p0). Arm erratum notice SDEN1982442.
TOPDOWN_MODELS: dict[str, TopdownModel] = {
    "neoverse-v1": TopdownModel(8, 4, 0),
    "neoverse-v2": TopdownModel(8, 1, 3),
    "neoverse-n2": TopdownModel(5, 1, 3),
    "azure-cobalt-100": TopdownModel(5, 1, 3, slot_cycles_correction=True),  # an N2 r0p0
}


@dataclass(frozen=True)
class Metric:
    name: str
    description: str
    unit: str
    better: str  # "higher" | "lower"
    inputs: tuple[str, ...]
    source: str
    compute: MetricFn


@dataclass(frozen=True)
class MetricContext:
    """What a metric may need besides the counts."""

    calls: int = 1
    wall_ns: float = 0.0
    core: str = ""  # core slug: "neoverse-v2"
    midr: str | None = None
    latency: Mapping[str, float] | None = None
    peak_rss_bytes: int | None = None
    rss_growth_bytes: int | None = None

    @property
    def topdown(self) -> TopdownModel | None:
        model = TOPDOWN_MODELS.get(self.core)
        if self.core == "neoverse-n2" and self.midr:
            midr = int(self.midr, 16)
            if (midr >> 20) & 0xF == 0 and midr & 0xF == 0:  # r0p0
                model = TopdownModel(5, 1, 3, slot_cycles_correction=True)
        return model


# A metric's formula: the counts and the context in, the value out (None: not computable).
MetricFn = Callable[[Counts, MetricContext], float | None]


def _ratio(num: str, den: str, scale: float = 1.0) -> MetricFn:
    def f(c: Counts, _ctx: MetricContext) -> float | None:
        if num not in c or den not in c or c[den] <= 0:
            return None
        return scale * c[num] / c[den]

    return f


def _per_call(event: str, scale: float = 1.0) -> MetricFn:
    def f(c: Counts, ctx: MetricContext) -> float | None:
        if event not in c or ctx.calls <= 0:
            return None
        return scale * c[event] / ctx.calls

    return f


def _latency(key: str) -> MetricFn:
    def f(_c: Counts, ctx: MetricContext) -> float | None:
        return None if ctx.latency is None else ctx.latency.get(key)

    return f


# What each level-1 part reads (telemetry-solution ``metrics`` ``events`` lists): a part is
# computed when its own inputs were counted, not only when all four parts' inputs were.
_TOPDOWN_NEEDS: dict[str, tuple[str, ...]] = {
    "frontend": ("cycles", "branch_misses", "stall_slot_frontend"),
    "backend": ("cycles", "branch_misses", "stall_slot_backend"),
    "retiring": ("cycles", "stall_slot", "op_retired", "op_spec"),
    "bad_speculation": ("cycles", "branch_misses", "stall_slot", "op_retired", "op_spec"),
}


def _topdown(part: str) -> MetricFn:
    need = _TOPDOWN_NEEDS[part]

    def f(c: Counts, ctx: MetricContext) -> float | None:
        model = ctx.topdown
        if model is None or any(n not in c for n in need) or c["cycles"] <= 0:
            return None
        cyc = c["cycles"]
        total = model.slots * cyc
        br = c.get("branch_misses", 0.0) / cyc
        if part == "frontend":
            fe_slots = c["stall_slot_frontend"]
            if model.slot_cycles_correction:
                fe_slots -= cyc
            return fe_slots / total - model.frontend_branch_k * br
        if part == "backend":
            return c["stall_slot_backend"] / total - model.backend_branch_k * br
        all_slots = c["stall_slot"]
        if model.slot_cycles_correction:
            all_slots -= cyc
        useful = c["op_retired"] / c["op_spec"] if c["op_spec"] > 0 else 0.0
        issued = 1 - all_slots / total
        if part == "retiring":
            return issued * useful
        return (1 - useful) * issued + 4 * br  # bad speculation

    return f


def _cpu_utilisation(c: Counts, ctx: MetricContext) -> float | None:
    if "task_clock" not in c or ctx.wall_ns <= 0:
        return None
    return c["task_clock"] / ctx.wall_ns


def _per_cpu_second(event: str) -> MetricFn:
    """``event`` per second of CPU time (task-clock): what ``perf stat`` prints as ``/sec``."""

    def f(c: Counts, _ctx: MetricContext) -> float | None:
        if event not in c or "task_clock" not in c or c["task_clock"] <= 0:
            return None
        return c[event] / (c["task_clock"] / 1e9)

    return f


def _latency_tail(_c: Counts, ctx: MetricContext) -> float | None:
    if ctx.latency is None:
        return None
    p50, p99 = ctx.latency.get("p50_ms"), ctx.latency.get("p99_ms")
    if p50 is None or p99 is None or p50 <= 0:
        return None
    return p99 / p50


def _peak_rss_mb(_c: Counts, ctx: MetricContext) -> float | None:
    return None if ctx.peak_rss_bytes is None else ctx.peak_rss_bytes / (1 << 20)


def _rss_growth_mb(_c: Counts, ctx: MetricContext) -> float | None:
    return None if ctx.rss_growth_bytes is None else ctx.rss_growth_bytes / (1 << 20)


_TD = "telemetry-solution neoverse-{v1,v2,n2} metrics (top-down level 1)"
_MPKI = "X / INST_RETIRED * 1000 (Arm telemetry-solution, perf sbsa.json)"

METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric(
            "ipc",
            "instructions per cycle",
            "",
            "higher",
            ("instructions", "cycles"),
            "INST_RETIRED / CPU_CYCLES",
            _ratio("instructions", "cycles"),
        ),
        Metric(
            "l1_miss",
            "L1 data cache miss ratio",
            "",
            "lower",
            ("l1d_refill", "l1d_access"),
            "L1D_CACHE_REFILL / L1D_CACHE",
            _ratio("l1d_refill", "l1d_access"),
        ),
        Metric(
            "l1i_miss",
            "L1 instruction cache miss ratio",
            "",
            "lower",
            ("l1i_refill", "l1i_access"),
            "L1I_CACHE_REFILL / L1I_CACHE",
            _ratio("l1i_refill", "l1i_access"),
        ),
        Metric(
            "l2_miss",
            "L2 cache miss ratio",
            "",
            "lower",
            ("l2_refill", "l2_access"),
            "L2D_CACHE_REFILL / L2D_CACHE",
            _ratio("l2_refill", "l2_access"),
        ),
        Metric(
            "llc_miss",
            "last-level cache read miss ratio",
            "",
            "lower",
            ("llc_miss", "llc_read"),
            "LL_CACHE_MISS_RD / LL_CACHE_RD",
            _ratio("llc_miss", "llc_read"),
        ),
        Metric(
            "dtlb_miss",
            "data TLB walks per data TLB access",
            "",
            "lower",
            ("dtlb_walk", "dtlb_access"),
            "DTLB_WALK / L1D_TLB",
            _ratio("dtlb_walk", "dtlb_access"),
        ),
        Metric(
            "itlb_miss",
            "instruction TLB walks per instruction TLB access",
            "",
            "lower",
            ("itlb_walk", "itlb_access"),
            "ITLB_WALK / L1I_TLB",
            _ratio("itlb_walk", "itlb_access"),
        ),
        Metric(
            "branch_miss",
            "branch misprediction ratio",
            "",
            "lower",
            ("branch_misses", "branches"),
            "BR_MIS_PRED_RETIRED / BR_RETIRED",
            _ratio("branch_misses", "branches"),
        ),
        *(
            Metric(
                f"{short}_mpki",
                f"{what} per 1000 instructions",
                "MPKI",
                "lower",
                (event, "instructions"),
                _MPKI,
                _ratio(event, "instructions", 1000.0),
            )
            for short, event, what in (
                ("l1d", "l1d_refill", "L1D refills"),
                ("l1i", "l1i_refill", "L1I refills"),
                ("l2", "l2_refill", "L2 refills"),
                ("llc", "llc_miss", "LLC read misses"),
                ("l1d_tlb", "l1d_tlb_refill", "L1 DTLB refills"),
                ("dtlb", "dtlb_walk", "data TLB walks"),
                ("itlb", "itlb_walk", "instruction TLB walks"),
                ("branch", "branch_misses", "branch mispredictions"),
            )
        ),
        Metric(
            "frontend_stalled",
            "cycles stalled in the frontend",
            "",
            "lower",
            ("stall_frontend", "cycles"),
            "STALL_FRONTEND / CPU_CYCLES",
            _ratio("stall_frontend", "cycles"),
        ),
        Metric(
            "backend_stalled",
            "cycles stalled in the backend",
            "",
            "lower",
            ("stall_backend", "cycles"),
            "STALL_BACKEND / CPU_CYCLES",
            _ratio("stall_backend", "cycles"),
        ),
        Metric(
            "backend_mem_stalled",
            "cycles stalled in the backend on memory",
            "",
            "lower",
            ("stall_backend_mem", "cycles"),
            "STALL_BACKEND_MEM / CPU_CYCLES",
            _ratio("stall_backend_mem", "cycles"),
        ),
        Metric(
            "frontend_bound",
            "issue slots lost to the frontend",
            "",
            "lower",
            ("stall_slot_frontend", "cycles", "branch_misses"),
            _TD,
            _topdown("frontend"),
        ),
        Metric(
            "backend_bound",
            "issue slots lost to the backend",
            "",
            "lower",
            ("stall_slot_backend", "cycles", "branch_misses"),
            _TD,
            _topdown("backend"),
        ),
        Metric(
            "retiring",
            "issue slots that retired useful work",
            "",
            "higher",
            ("stall_slot", "op_retired", "op_spec", "cycles"),
            _TD,
            _topdown("retiring"),
        ),
        Metric(
            "bad_speculation",
            "issue slots lost to mis-speculation",
            "",
            "lower",
            ("stall_slot", "op_retired", "op_spec", "branch_misses", "cycles"),
            _TD,
            _topdown("bad_speculation"),
        ),
        Metric(
            "instructions_per_call",
            "instructions per call",
            "",
            "lower",
            ("instructions",),
            "INST_RETIRED / calls",
            _per_call("instructions"),
        ),
        Metric(
            "cycles_per_call",
            "cycles per call",
            "",
            "lower",
            ("cycles",),
            "CPU_CYCLES / calls",
            _per_call("cycles"),
        ),
        Metric(
            "cpu_ms_per_call",
            "CPU time per call, all threads",
            "ms",
            "lower",
            ("task_clock",),
            "task-clock / calls",
            _per_call("task_clock", 1e-6),
        ),
        Metric(
            "cpu_utilisation",
            "CPUs busy during the region (task-clock / wall time)",
            "CPUs",
            "lower",
            ("task_clock",),
            "task-clock / wall time",
            _cpu_utilisation,
        ),
        Metric(
            "page_faults_per_call",
            "page faults per call",
            "",
            "lower",
            ("page_faults",),
            "page-faults / calls",
            _per_call("page_faults"),
        ),
        Metric(
            "context_switches_per_call",
            "context switches per call",
            "",
            "lower",
            ("context_switches",),
            "context-switches / calls",
            _per_call("context_switches"),
        ),
        Metric(
            "cpu_migrations_per_call",
            "CPU migrations per call",
            "",
            "lower",
            ("cpu_migrations",),
            "cpu-migrations / calls",
            _per_call("cpu_migrations"),
        ),
        *(
            Metric(
                f"{event}_per_sec",
                f"{what} per second of CPU time",
                "/s",
                "lower",
                (event, "task_clock"),
                f"{perf_name} / task-clock seconds (perf stat /sec)",
                _per_cpu_second(event),
            )
            for event, perf_name, what in (
                ("page_faults", "page-faults", "page faults"),
                ("context_switches", "context-switches", "context switches"),
                ("cpu_migrations", "cpu-migrations", "CPU migrations"),
            )
        ),
        Metric(
            "l1d_tlb_miss",
            "L1 data TLB refills per L1 data TLB access",
            "",
            "lower",
            ("l1d_tlb_refill", "dtlb_access"),
            "L1D_TLB_REFILL / L1D_TLB",
            _ratio("l1d_tlb_refill", "dtlb_access"),
        ),
        Metric(
            "latency_mean_ms",
            "mean latency per call",
            "ms",
            "lower",
            (),
            "timer",
            _latency("mean_ms"),
        ),
        Metric(
            "latency_p50_ms",
            "median latency per call",
            "ms",
            "lower",
            (),
            "timer",
            _latency("p50_ms"),
        ),
        Metric(
            "latency_p95_ms",
            "95th percentile latency (nearest rank)",
            "ms",
            "lower",
            (),
            "timer",
            _latency("p95_ms"),
        ),
        Metric(
            "latency_p99_ms",
            "99th percentile latency (nearest rank)",
            "ms",
            "lower",
            (),
            "timer",
            _latency("p99_ms"),
        ),
        Metric(
            "latency_tail_ratio",
            "99th over 50th percentile latency",
            "",
            "lower",
            (),
            "p99 / p50 (timer)",
            _latency_tail,
        ),
        Metric(
            "peak_rss_mb",
            "peak resident memory of the region",
            "MiB",
            "lower",
            (),
            "VmHWM after clear_refs, or ru_maxrss",
            _peak_rss_mb,
        ),
        Metric(
            "rss_growth_mb",
            "resident memory the region added above its starting RSS",
            "MiB",
            "lower",
            (),
            "VmHWM after clear_refs - VmRSS at the region's start",
            _rss_growth_mb,
        ),
    )
}


def compute(counts: Counts, ctx: MetricContext) -> dict[str, float]:
    """Every metric whose inputs are present; absent metrics are left out."""
    out: dict[str, float] = {}
    for name, metric in METRICS.items():
        value = metric.compute(counts, ctx)
        if value is not None:
            out[name] = float(value)
    return out


def context_of(profile: Profile) -> MetricContext:
    machine = profile.machine
    cpu = machine.get("cpu", {}) if isinstance(machine.get("cpu"), Mapping) else {}
    return MetricContext(
        calls=profile.calls,
        wall_ns=float(sum(r.wall_ns for r in profile.repeats)),
        core=str(cpu.get("core_slug", "")),
        midr=cpu.get("midr"),
        latency={k: v for k, v in vars(profile.latency).items() if isinstance(v, float)},
        peak_rss_bytes=profile.memory.peak_rss_bytes,
        rss_growth_bytes=profile.memory.growth_bytes,
    )


def profile_metrics(profile: Profile) -> dict[str, float]:
    """All metrics of a Profile, from its totals over every repeat."""
    return compute(profile.totals, context_of(profile))


def per_repeat_metrics(profile: Profile) -> list[dict[str, float]]:
    """Metrics per repeat: counters, and the mean latency of the repeat's calls.

    Percentiles and memory exist for the whole profile only.
    """
    base = context_of(profile)
    out = []
    for rep in profile.repeats:
        mean_ms = rep.wall_ns / rep.calls / 1e6 if rep.calls else None
        ctx = MetricContext(
            calls=rep.calls,
            wall_ns=float(rep.wall_ns),
            core=base.core,
            midr=base.midr,
            latency=None if mean_ms is None else {"mean_ms": mean_ms},
        )
        counts = {n: c.value for n, c in rep.sample.counts.items()}
        out.append(compute(counts, ctx))
    return out


def missing_inputs(metric: str, unavailable: Mapping[str, str]) -> dict[str, str]:
    """The inputs of ``metric`` that were not counted, with their reasons."""
    return {e: unavailable[e] for e in METRICS[metric].inputs if e in unavailable}
