"""Thresholds of concern, as data: one table, per core family, each row with its source.

Owns: :data:`THRESHOLDS` (which metric, which way, how far, for which category, for
which core families, and where the number comes from), :data:`CORES` (one
:class:`CoreFacts` row per core, every per-core fact on it: issue width and its source,
the logical events the core does not implement, the names users type for it with the
source that maps a product to it, the x86 micro-architectures detection names that are
it, and the cycles one event costs on it where a source gives its own figure, which
``cycle_costs`` reads; a family fallback row where no source gives a core's width, which
says it is one; for no core named, :func:`generic_facts`: the narrowest and widest width
of the instruction set's cores on record), resolving the names a user may type for a
core (:data:`CORE_ALIASES`, an index of the rows; :func:`resolve_core`,
:func:`check_core`), the evidence that
separates memory stalls from ILP-limited compute (:data:`MEMORY_EVIDENCE`), the
category names and titles (:data:`CATEGORIES`; which category a moving metric points
to, and what one more unit of it can cost at most, are facts of the metric: its row in
``core.metrics``, ``points_to`` and ``cost``).

Must not: compute metrics (``metrics``) or judge (``classify``). Changing a number
here changes every diagnosis; a number that is engineering judgement says so
(``judgement=True``) and why.

Sources (quoted in each row):

* AWS Graviton performance runbook, ``perfrunbook/debug_hw_perf.md``
  (aws/aws-graviton-getting-started): branch-mpki > 10, inst-l1-mpki > 20,
  data-l1-mpki > 20, l2-mpki > 10, l3-mpki > 10, TLB MPKI / walks > 0 worth noting.
* Linux perf ``tools/perf/util/stat-shadow.c`` ``get_ratio_color()``: stalled-cycles
  frontend 50/30/10 %, backend 75/50/20 %, cache and branch miss ratios 20/10/5 %
  (red/magenta/yellow). We use the middle ("magenta") level. perf colours every miss
  ratio per access it prints with the cache level (``GRC_CACHE_MISSES``: L1-dcache,
  L1-icache, LLC, dTLB and iTLB misses "of all ... accesses"), so these ratios carry a
  threshold of their own: where no instructions were counted (no MPKI), a miss ratio
  stands in as the key (``key_without``) at that level.
* Intel top-down (TMA) level-1 thresholds as shipped in Linux perf
  ``tools/perf/pmu-events/arch/x86/*/*metrics.json`` ``MetricThreshold``:
  frontend_bound > 0.15, backend_bound > 0.2, bad_speculation > 0.15, retiring > 0.7.
  They apply wherever the level-1 fractions exist (Arm slot formulas, or perf's own
  ``--topdown`` / ``TopdownL1`` output on x86). Arm's Neoverse
  telemetry specifications give the level-1 formulas and the decision tree but no
  numeric thresholds, so these are borrowed for the same four level-1 fractions.
* Issue widths: ``product_configuration.num_slots`` of Arm's telemetry specifications
  (Neoverse N1 5, V1 8, N2 5, V2 8, V3 10); the Cortex cores' technical reference
  manuals / software optimisation guides for the rest; AMD Zen to Zen 3 4 and Zen 4 6
  (Bakhvalov, *Performance Analysis and Tuning on Modern CPUs*, "Pipeline Slot").
* Which core lacks which event: ARM-software/data ``pmu/<core>.json``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..core.metrics import CONTEXT_SWITCH_COST, METRICS
from ..core.metrics import JUDGEMENT as JUDGEMENT  # threshold rows cite it; classify too
from ..pmu.cpu import INTEL_MODELS

# -- categories -------------------------------------------------------------

CATEGORIES: dict[str, str] = {
    "retiring": "compute-bound, retiring near the core's width (less work is the fix)",
    "ipc_collapse": "IPC collapse (ILP-limited compute)",
    "l1d_residency": "L1D residency (working set spills L1 data cache)",
    "l2_llc_residency": "L2/LLC residency (memory-bound)",
    "tlb_churn": "TLB churn (page walks)",
    "branch_misprediction": "branch misprediction",
    "frontend_bound": "frontend bound (I-cache / ITLB)",
    "backend_bound": "backend bound (execution resources)",
    "thread_spinning": "thread spinning / oversubscription",
    "page_faults": "page-fault / allocator overhead",
    "noisy_machine": "noisy machine (migrations, preemption)",
    "extra_work": "more work per call (instruction count grew)",
}

# Stage-2 children of a level-1 category, after the ``next_items`` of the decision tree in
# Arm's telemetry specifications (``methodologies.topdown_methodology.decision_tree``):
# backend_bound -> DTLB, L1D, L2, LL effectiveness; frontend_bound -> branch, ITLB, L1I,
# L2, LL effectiveness. IPC collapse is explained by any of the CPU categories. When a
# child fires, the parent is the less specific explanation and its confidence is halved.
CHILDREN: dict[str, tuple[str, ...]] = {
    # ... and threads spin-waiting, measured as cycles stalled on PAUSE (CHILD_ONLY_BY).
    "backend_bound": ("l1d_residency", "l2_llc_residency", "tlb_churn", "thread_spinning"),
    "frontend_bound": ("branch_misprediction",),
    "ipc_collapse": (
        "l1d_residency",
        "l2_llc_residency",
        "tlb_churn",
        "branch_misprediction",
        "frontend_bound",
        "backend_bound",
    ),
    # Misses in L2 are misses in L1 too: the deeper level is the better explanation.
    "l1d_residency": ("l2_llc_residency",),
}
CHILD_DISCOUNT = 0.5  # engineering judgement: a fired child halves its parent's confidence
# Children that are part of their parent only where their share is this measured
# fraction: spinning threads are the backend's where they stall on PAUSE (Intel TMA
# counts those cycles under Core_Bound, Serializing_Operation: tma_slow_pause, Linux perf
# x86 metrics), not where only the CPU time or the session settings show them.
CHILD_ONLY_BY: dict[str, str] = {"thread_spinning": "slow_pause"}

# Level 3 of the memory part: where any of it was measured, it says which level served
# the loads (or that they hit L1D), and the memory part only supports what it names.
MEMORY_LEVEL3 = ("l1_bound", "l2_bound", "l3_bound")

# Low IPC alone never says why: a core waiting on memory and a core starved of
# independent instructions both retire little. IPC collapse (ILP-limited compute) may be
# named only when at least one of these memory/backend metrics was measured and none of
# the categories they feed fired (engineering judgement, after the top-down method's
# order: rule out backend memory stalls before calling a core-bound dependency chain).
# Only evidence that bounds the cost of memory rules it out: stall counts, or refills
# below L1. An L1D refill count alone cannot tell an L2 hit (~10 cycles) from a line
# fetched from DRAM or from another core's cache (hundreds), and TLB counts say nothing
# about the caches.
MEMORY_EVIDENCE: tuple[str, ...] = (
    "l2_mpki",
    "llc_mpki",
    "llc_miss",
    "backend_stalled",
    "backend_bound",
    "backend_mem_stalled",
    "memory_bound",
    *MEMORY_LEVEL3,
    "bottleneck_memory_bandwidth",
    "bottleneck_memory_latency",
)
# With nothing below L1 counted, L1D refills rule memory out only when, each charged
# at the cost of a miss to DRAM (``llc_mpki``'s ``cost`` in core.metrics), they could
# still take less than this share of the cycles (engineering judgement: the same fifth
# that makes a moved counter material in a change).
L1_ONLY_EXONERATES_BELOW = 0.20
MEMORY_CATEGORIES: tuple[str, ...] = (
    "l1d_residency",
    "l2_llc_residency",
    "tlb_churn",
    "backend_bound",
)

# -- sources ------------------------------------------------------------------

AWS = "AWS Graviton perfrunbook (debug_hw_perf.md)"
PERF_GRC = "Linux perf stat-shadow.c get_ratio_color, 'magenta' level"
TMA_RAW = "Intel TMA level-1 MetricThreshold (Linux perf x86 metrics.json)"
TMA = f"{TMA_RAW}, applied to any level-1 top-down"
TMA_L3 = "Intel TMA level-3 MetricThreshold (Linux perf x86 metrics.json)"
TMA_L4 = "Intel TMA level-4 MetricThreshold (Linux perf x86 metrics.json)"
TMA_L2 = (
    "Intel TMA level-2 MetricThreshold (Linux perf x86 metrics.json), applied to AMD's "
    "PipelineL2 parts too"
)
TMA_BN = (
    "Intel TMA bottleneck-view MetricThreshold (Linux perf x86 metrics.json: "
    "tma_bottleneck_*; pmu-tools' Info.Bottleneck classes)"
)
_UNDER_L1 = "(tma_l1_bound > 0.1 & (tma_memory_bound > 0.2 & tma_backend_bound > 0.2))"
# The parents of the deeper nodes (Intel TMA 5.2: a node's threshold holds with its
# parent's, "& P"), as Linux perf's x86 metrics write them.
_UNDER_L3 = "(tma_l3_bound > 0.05 & (tma_memory_bound > 0.2 & tma_backend_bound > 0.2))"
_UNDER_STORES = "(tma_store_bound > 0.2 & (tma_memory_bound > 0.2 & tma_backend_bound > 0.2))"
_UNDER_PORTS = "(tma_ports_utilization > 0.15 & (tma_core_bound > 0.1 & tma_backend_bound > 0.2))"
_UNDER_FETCH = "(tma_fetch_latency > 0.1 & tma_frontend_bound > 0.15)"
_UNDER_RESTEERS = f"(tma_branch_resteers > 0.05 & {_UNDER_FETCH})"
_UNDER_FETCH_BW = "tma_fetch_bandwidth > 0.2"
ORT_THREADS = (
    "ONNX Runtime threading docs (session.intra_op.allow_spinning; spinning is on by default)"
)
ORT_ARENA = "ONNX Runtime SessionOptions.enable_cpu_mem_arena"
# Why a spin-waiting thread shows as a low IPC with nothing missed on x86, not on Arm:
# ONNX Runtime's pool threads pause in every iteration of their wait, with TPAUSE where
# the CPU has WAITPKG (1000 TSC cycles) and PAUSE otherwise, and do nothing there on Arm
# (onnxruntime/core/common/spin_pause.cc, SpinPause); a PAUSE takes about 10 cycles
# before Skylake and up to 140 from Skylake on (Intel 64 and IA-32 Architectures
# Optimization Reference Manual, Skylake's pause latency; Intel TMA charges each retired
# PAUSE 140 cycles on Ice Lake, Tiger Lake, Rocket Lake and Coffee Lake in tma_slow_pause,
# 37 on Ice Lake-SP, 40 on Cascade Lake: intel/perfmon TMA_Metrics-full.csv 5.2).
# Kernel spin locks pause the same way (cpu_relax() is PAUSE on x86:
# arch/x86/include/asm/vdso/processor.h).
SPIN_PAUSES = (
    "ONNX Runtime's SpinPause (core/common/spin_pause.cc): TPAUSE for up to 1000 TSC "
    "cycles or PAUSE in every spin on x86, nothing on Arm; PAUSE takes up to 140 cycles "
    "from Skylake on (Intel Optimization Reference Manual, Skylake's pause latency; "
    "Intel TMA's Slow_Pause on Ice Lake: 140 * MISC_RETIRED.PAUSE_INST / CLKS)"
)


@dataclass(frozen=True)
class Threshold:
    """One threshold of concern.

    ``relative_to`` scales ``value`` by a fact of the run: ``"width"`` (the core's issue
    width), ``"useful_threads"`` (threads expected to do work, from the session),
    ``"cpu_count"``; ``None`` means ``value`` is absolute. ``role`` is ``"key"`` (can make
    the category fire) or ``"support"`` (adds confidence only when a key fired).
    ``families`` limits the row to core families (``"*"``: all). ``key_without`` names
    the metric a ratio row stands in for: a ``"support"`` row is a key where that metric
    could not be formed (a miss ratio per access where no instructions were counted, so
    no MPKI), judged on its own cited ratio threshold, never an MPKI one in disguise.
    ``key_with_cpus`` makes a ``"support"`` row a key where the run kept more CPUs busy
    on average (``cpu_utilisation``) than that: a fact only several threads running at
    once can show (:data:`SEVERAL_CPUS_BUSY`). ``support_with`` makes a ``"key"`` row a
    support where any of those finer metrics was measured, which judges the
    category instead (the level-1 backend share, where level 2 split it into memory and
    core; the memory part, where level 3 said which level served the loads).
    """

    metric: str
    comparison: str  # ">" | "<"
    value: float
    category: str
    role: str
    source: str
    judgement: bool = False
    why: str = ""
    relative_to: str | None = None
    families: tuple[str, ...] = ("*",)
    key_without: str | None = None
    key_with_cpus: float | None = None
    support_with: tuple[str, ...] = ()

    def applies_to(self, family: str) -> bool:
        # An unknown core gets every row: a row whose metric was not counted simply
        # cannot be evaluated (the generic fallback).
        return "*" in self.families or family in self.families or family == "unknown"

    def describe(self) -> str:
        scale = f" x {self.relative_to}" if self.relative_to else ""
        return f"{self.metric} {self.comparison} {self.value:g}{scale}"

    def in_force(self, metrics: Mapping[str, float]) -> Threshold:
        """The row as it applies to ``metrics``: a ``key_without`` row is a key where the
        metric it stands in for is absent, a ``key_with_cpus`` row where more CPUs were
        busy than it names; a support otherwise."""
        if self.role == "key":
            if any(n in metrics for n in self.support_with):
                return replace(self, role="support")
            return self
        if self.key_without is not None and self.key_without not in metrics:
            return replace(self, role="key")
        busy = metrics.get("cpu_utilisation")
        if self.key_with_cpus is not None and busy is not None and busy > self.key_with_cpus:
            return replace(self, role="key")
        return self


#: More CPUs busy on average (task-clock / wall, ``cpu_utilisation``) than one thread can
#: keep busy, past the slack of perf's own start-up and exit: several of the program's
#: threads ran at once. The scheduler then moves them by itself: a thread that blocks
#: and is woken is placed on an idle CPU (try_to_wake_up -> select_task_rq; set_task_cpu
#: counts the migration, perf_event_task_migrate: Linux kernel/sched/core.c), so its
#: migrations and switches are the program's own hand-offs as much as other load.
#: Engineering judgement (the margin over 1.0).
SEVERAL_CPUS_BUSY = 1.1
#: Switches per CPU-second whose direct cost (3.8 µs each: CONTEXT_SWITCH_COST) is 5% of
#: the CPU time.
SWITCHES_COSTING_A_TWENTIETH = 0.05 / 3.8e-6

_SW = ("*",)
_ARM = ("arm-basic", "arm-cycles", "arm-topdown")
_STALLS = ("arm-cycles", "arm-topdown", "x86")  # STALL_FRONTEND/BACKEND or generic stalls

THRESHOLDS: tuple[Threshold, ...] = (
    # --- retiring near the width: compute-bound ---------------------------------
    Threshold(
        "ipc",
        ">",
        0.75,
        "retiring",
        "key",
        JUDGEMENT,
        True,
        "three quarters of the core's issue width retire every cycle: the pipeline "
        "is near its peak, so only less work makes the run faster",
        "width",
    ),
    Threshold("retiring", ">", 0.70, "retiring", "key", f"{TMA_RAW}: tma_retiring > 0.7"),
    # Below it (Linux perf x86 metrics): tma_retiring's own threshold adds "|
    # tma_heavy_operations > 0.1"; heavy operations alone say the retired work is
    # costlier per instruction, so they support the finding, as do the uops the
    # microcode sequencer fed: those of CISC instructions (tma_cisc = microcode
    # sequencer - assists: SHA rounds, string moves) are work the program asked for.
    # Assists (denormal floats, SSE/AVX mixes) are not: they name the category.
    Threshold(
        "heavy_operations",
        ">",
        0.10,
        "retiring",
        "support",
        f"{TMA_RAW}: tma_retiring > 0.7 | tma_heavy_operations > 0.1",
        families=("x86",),
    ),
    Threshold(
        "microcode_sequencer",
        ">",
        0.05,
        "retiring",
        "support",
        f"{TMA_L3}: tma_microcode_sequencer > 0.05 & tma_heavy_operations > 0.1",
        families=("x86",),
    ),
    Threshold(
        "assists",
        ">",
        0.10,
        "retiring",
        "key",
        f"{TMA_L4}: tma_assists > 0.1 & (tma_microcode_sequencer > 0.05 & "
        "tma_heavy_operations > 0.1)",
        families=("x86",),
    ),
    # --- IPC relative to the core's width -----------------------------------
    Threshold(
        "ipc",
        "<",
        0.25,
        "ipc_collapse",
        "key",
        JUDGEMENT,
        True,
        "retiring under a quarter of the core's issue width per cycle; named only "
        "when memory/backend metrics were measured and none fired (MEMORY_EVIDENCE)",
        "width",
    ),
    # --- L1D ------------------------------------------------------------------
    Threshold("l1d_mpki", ">", 20.0, "l1d_residency", "key", f"{AWS}: data-l1-mpki > 20"),
    Threshold(
        "l1_miss",
        ">",
        0.10,
        "l1d_residency",
        "support",
        f"{PERF_GRC}: L1-dcache-load-misses > 10% of loads",
        key_without="l1d_mpki",
    ),
    Threshold(
        "ipc",
        "<",
        0.25,
        "l1d_residency",
        "support",
        JUDGEMENT,
        True,
        "low IPC agrees with a stall on data",
        "width",
    ),
    Threshold(
        "backend_stalled",
        ">",
        0.50,
        "l1d_residency",
        "support",
        f"{PERF_GRC}: stalled-cycles-backend > 50%",
        families=_STALLS,
    ),
    Threshold(
        "backend_bound", ">", 0.20, "l1d_residency", "support", f"{TMA}: backend_bound > 0.2"
    ),
    Threshold(
        "l2_bound",
        ">",
        0.05,
        "l1d_residency",
        "key",
        f"{TMA_L3}: tma_l2_bound > 0.05 & (tma_memory_bound > 0.2 & tma_backend_bound > 0.2)",
        families=("x86",),
    ),
    # --- L2 / LLC -------------------------------------------------------------
    Threshold("l2_mpki", ">", 10.0, "l2_llc_residency", "key", f"{AWS}: l2-mpki > 10"),
    Threshold("llc_mpki", ">", 10.0, "l2_llc_residency", "key", f"{AWS}: l3-mpki > 10"),
    Threshold(
        "ipc",
        "<",
        0.25,
        "l2_llc_residency",
        "support",
        JUDGEMENT,
        True,
        "low IPC agrees with a stall on memory",
        "width",
    ),
    Threshold(
        "backend_stalled",
        ">",
        0.50,
        "l2_llc_residency",
        "support",
        f"{PERF_GRC}: stalled-cycles-backend > 50%",
        families=_STALLS,
    ),
    Threshold(
        "backend_bound", ">", 0.20, "l2_llc_residency", "support", f"{TMA}: backend_bound > 0.2"
    ),
    Threshold(
        "llc_miss",
        ">",
        0.10,
        "l2_llc_residency",
        "support",
        f"{PERF_GRC}: LLC-load-misses > 10% of LLC loads",
        key_without="llc_mpki",
    ),
    Threshold(
        "backend_mem_stalled",
        ">",
        0.20,
        "l2_llc_residency",
        "support",
        JUDGEMENT,
        True,
        "a fifth of all cycles stalled on memory (STALL_BACKEND_MEM, V1/N2/V2)",
        families=("arm-topdown",),
    ),
    Threshold(
        "dram_stalled",
        ">",
        0.10,
        "l2_llc_residency",
        "key",
        "Intel TMA level-3 MetricThreshold 'tma_dram_bound > 0.1' (Linux perf x86 metrics.json)",
        families=("x86",),
    ),
    # Top-down level 2: the backend's slots that waited on memory (a load or store in
    # flight); which level served it is level 3's question, so it names the memory
    # category ("fraction of slots the Memory subsystem within the Backend was a
    # bottleneck": tma_memory_bound's description, Linux perf x86 metrics).
    # tma_memory_bound never exceeds tma_backend_bound, so the threshold's second term
    # holds with the first.
    Threshold(
        "memory_bound",
        ">",
        0.20,
        "l2_llc_residency",
        "key",
        f"{TMA_L2}: tma_memory_bound > 0.2 & tma_backend_bound > 0.2",
        support_with=MEMORY_LEVEL3,
    ),
    # Level 3 says which level served the loads the memory part waited on: L3 hits (or
    # lines another core held: "contended with a sibling Core", tma_l3_bound's
    # description) here, L2 hits under L1D. Where it was measured, the memory part only
    # supports them.
    Threshold(
        "l3_bound",
        ">",
        0.05,
        "l2_llc_residency",
        "key",
        f"{TMA_L3}: tma_l3_bound > 0.05 & (tma_memory_bound > 0.2 & tma_backend_bound > 0.2)",
        families=("x86",),
    ),
    # Level 4 under L3_Bound: lines another core wrote (locks, shared data, false
    # sharing); L3_Bound names the category, this says why the lines moved.
    Threshold(
        "contested_accesses",
        ">",
        0.05,
        "l2_llc_residency",
        "support",
        f"{TMA_L4}: tma_contested_accesses > 0.05 & (tma_l3_bound > 0.05 & "
        "(tma_memory_bound > 0.2 & tma_backend_bound > 0.2))",
        families=("x86",),
    ),
    # Level 4 under DRAM_Bound: whether DRAM's bandwidth or its latency held the loads
    # up. DRAM_Bound names the category; these say which fix fits (they support it).
    Threshold(
        "mem_bandwidth",
        ">",
        0.20,
        "l2_llc_residency",
        "support",
        f"{TMA_L4}: tma_mem_bandwidth > 0.2 & (tma_dram_bound > 0.1 & (tma_memory_bound "
        "> 0.2 & tma_backend_bound > 0.2))",
        families=("x86",),
    ),
    Threshold(
        "mem_latency",
        ">",
        0.10,
        "l2_llc_residency",
        "support",
        f"{TMA_L4}: tma_mem_latency > 0.1 & (tma_dram_bound > 0.1 & (tma_memory_bound > "
        "0.2 & tma_backend_bound > 0.2))",
        families=("x86",),
    ),
    # --- TLB --------------------------------------------------------------------
    Threshold(
        "dtlb_mpki",
        ">",
        1.0,
        "tlb_churn",
        "key",
        JUDGEMENT,
        True,
        "AWS notes any data-TLB walk (> 0); one walk per 1000 instructions costs "
        "several percent at tens of cycles per walk",
    ),
    Threshold(
        "l1d_tlb_mpki",
        ">",
        5.0,
        "tlb_churn",
        "key",
        JUDGEMENT,
        True,
        "Cortex-A15/A53/A72 have no DTLB_WALK: L1 DTLB refills stand in for "
        "walks (AWS: data-tlb-mpki > 0 worth noting)",
        families=("arm-basic",),
    ),
    Threshold(
        "l1d_tlb_mpki",
        ">",
        5.0,
        "tlb_churn",
        "support",
        JUDGEMENT,
        True,
        "L1 DTLB refills (many hit the L2 TLB) agree with walks",
        families=("arm-cycles", "arm-topdown"),
    ),
    Threshold(
        "backend_stalled",
        ">",
        0.50,
        "tlb_churn",
        "support",
        f"{PERF_GRC}: stalled-cycles-backend > 50%",
        families=_STALLS,
    ),
    Threshold("backend_bound", ">", 0.20, "tlb_churn", "support", f"{TMA}: backend_bound > 0.2"),
    Threshold(
        "dtlb_miss",
        ">",
        0.10,
        "tlb_churn",
        "support",
        f"{PERF_GRC}: dTLB-load-misses > 10% of dTLB loads",
        key_without="dtlb_mpki",
    ),
    # Level 4: the cycles loads and stores spent on first-level DTLB misses, which TMA
    # splits off L1_Bound and Store_Bound.
    Threshold(
        "dtlb_load_bound",
        ">",
        0.10,
        "tlb_churn",
        "key",
        f"{TMA_L4}: tma_dtlb_load > 0.1 & (tma_l1_bound > 0.1 & (tma_memory_bound > 0.2 & "
        "tma_backend_bound > 0.2))",
        families=("x86",),
    ),
    Threshold(
        "dtlb_store_bound",
        ">",
        0.05,
        "tlb_churn",
        "key",
        f"{TMA_L4}: tma_dtlb_store > 0.05 & (tma_store_bound > 0.2 & (tma_memory_bound > 0.2 & "
        "tma_backend_bound > 0.2))",
        families=("x86",),
    ),
    # --- branches -----------------------------------------------------------------
    Threshold("branch_mpki", ">", 10.0, "branch_misprediction", "key", f"{AWS}: branch-mpki > 10"),
    Threshold(
        "branch_miss",
        ">",
        0.10,
        "branch_misprediction",
        "key",
        f"{PERF_GRC}: branch-misses > 10% of branches",
    ),
    Threshold(
        "bad_speculation",
        ">",
        0.15,
        "branch_misprediction",
        "key",
        f"{TMA}: bad_speculation > 0.15",
        support_with=("branch_mispredicts",),
    ),
    # Top-down level 2 of bad speculation: the part lost to mispredicted branches (the
    # rest are machine clears: memory-ordering nukes, self-modifying code, which no
    # branch fix helps), so where it was measured it judges the category.
    Threshold(
        "branch_mispredicts",
        ">",
        0.10,
        "branch_misprediction",
        "key",
        f"{TMA_L2}: tma_branch_mispredicts > 0.1 & tma_bad_speculation > 0.15",
    ),
    # --- frontend -----------------------------------------------------------------
    Threshold("l1i_mpki", ">", 20.0, "frontend_bound", "key", f"{AWS}: inst-l1-mpki > 20"),
    Threshold(
        "l1i_miss",
        ">",
        0.10,
        "frontend_bound",
        "support",
        f"{PERF_GRC}: L1-icache-load-misses > 10% of L1-icache loads",
        key_without="l1i_mpki",
    ),
    Threshold(
        "itlb_miss",
        ">",
        0.10,
        "frontend_bound",
        "support",
        f"{PERF_GRC}: iTLB-load-misses > 10% of iTLB loads",
        key_without="itlb_mpki",
    ),
    Threshold(
        "itlb_mpki",
        ">",
        1.0,
        "frontend_bound",
        "key",
        JUDGEMENT,
        True,
        "AWS notes any instruction-TLB walk (> 0); one per 1000 instructions "
        "means the code footprint outgrows the ITLB",
    ),
    Threshold(
        "l1i_tlb_mpki",
        ">",
        5.0,
        "frontend_bound",
        "key",
        JUDGEMENT,
        True,
        "Cortex-A15/A53/A72 have no ITLB_WALK: L1 ITLB refills stand in for walks, "
        "at the L1 DTLB refills' level",
        families=("arm-basic",),
    ),
    Threshold(
        "l1i_tlb_mpki",
        ">",
        5.0,
        "frontend_bound",
        "support",
        JUDGEMENT,
        True,
        "L1 ITLB refills (many hit the L2 TLB) agree with walks",
        families=("arm-cycles", "arm-topdown"),
    ),
    Threshold(
        "frontend_stalled",
        ">",
        0.30,
        "frontend_bound",
        "key",
        f"{PERF_GRC}: stalled-cycles-frontend > 30%",
        families=_STALLS,
    ),
    Threshold(
        "frontend_bound", ">", 0.15, "frontend_bound", "key", f"{TMA}: frontend_bound > 0.15"
    ),
    # Level 3 of its fetch latency: the cycles stalled on I-cache and on ITLB misses,
    # the two causes this category names.
    Threshold(
        "icache_misses",
        ">",
        0.05,
        "frontend_bound",
        "key",
        f"{TMA_L3}: tma_icache_misses > 0.05 & (tma_fetch_latency > 0.1 & "
        "tma_frontend_bound > 0.15)",
        families=("x86",),
    ),
    Threshold(
        "itlb_misses",
        ">",
        0.05,
        "frontend_bound",
        "key",
        f"{TMA_L3}: tma_itlb_misses > 0.05 & (tma_fetch_latency > 0.1 & tma_frontend_bound > 0.15)",
        families=("x86",),
    ),
    Threshold(
        "ipc",
        "<",
        0.25,
        "frontend_bound",
        "support",
        JUDGEMENT,
        True,
        "low IPC agrees with a starved frontend",
        "width",
    ),
    # --- backend (core-bound) ---------------------------------------------------
    # Where level 2 split the backend, its core part judges this category: "Shortage in
    # hardware compute resources; or dependencies in software's instructions are both
    # categorized under Core Bound" (tma_core_bound's description, Linux perf x86
    # metrics); the whole backend's share then only supports it (a memory-bound
    # backend is the memory category's).
    Threshold(
        "backend_stalled",
        ">",
        0.50,
        "backend_bound",
        "key",
        f"{PERF_GRC}: stalled-cycles-backend > 50%",
        families=_STALLS,
        support_with=("core_bound",),
    ),
    Threshold(
        "backend_bound",
        ">",
        0.20,
        "backend_bound",
        "key",
        f"{TMA}: backend_bound > 0.2",
        support_with=("core_bound",),
    ),
    Threshold(
        "core_bound",
        ">",
        0.10,
        "backend_bound",
        "key",
        f"{TMA_L2}: tma_core_bound > 0.1 & tma_backend_bound > 0.2",
    ),
    # Level 3: loads that hit L1D and still waited (blocked by older stores, split, 4K
    # aliased; tma_l1_bound's description): the data was in the nearest cache, so the
    # wait is the core's, not the working set's.
    Threshold(
        "l1_bound",
        ">",
        0.10,
        "backend_bound",
        "key",
        f"{TMA_L3}: tma_l1_bound > 0.1 & (tma_memory_bound > 0.2 & tma_backend_bound > 0.2)",
        families=("x86",),
    ),
    # Level 3 of the core part: the divider busy, the execution ports the limit (low
    # ILP or one unit oversubscribed); and the memory part's stores held up by a full
    # store buffer (RFO misses, false sharing, split stores: tma_store_bound's
    # children). None is a wait on the caches' capacity for loads.
    Threshold(
        "divider",
        ">",
        0.20,
        "backend_bound",
        "key",
        f"{TMA_L3}: tma_divider > 0.2 & (tma_core_bound > 0.1 & tma_backend_bound > 0.2)",
        families=("x86",),
    ),
    Threshold(
        "ports_utilization",
        ">",
        0.15,
        "backend_bound",
        "key",
        f"{TMA_L3}: tma_ports_utilization > 0.15 & (tma_core_bound > 0.1 & "
        "tma_backend_bound > 0.2)",
        families=("x86",),
    ),
    Threshold(
        "store_bound",
        ">",
        0.20,
        "backend_bound",
        "key",
        f"{TMA_L3}: tma_store_bound > 0.2 & (tma_memory_bound > 0.2 & tma_backend_bound > 0.2)",
        families=("x86",),
    ),
    Threshold(
        "false_sharing",
        ">",
        0.05,
        "backend_bound",
        "support",
        f"{TMA_L4}: tma_false_sharing > 0.05 & (tma_store_bound > 0.2 & (tma_memory_bound > "
        "0.2 & tma_backend_bound > 0.2))",
        families=("x86",),
    ),
    # Level 4 under L1_Bound and L3_Bound, level 3 under the fetch latency: each says
    # why its parent's cycles went (aliasing, locks, split loads, fill buffers, shared
    # lines, resteers) and brings the advice that fits; they support the finding their
    # parent names, on TMA's own thresholds.
    *(
        Threshold(
            metric,
            ">",
            bar,
            category,
            "support",
            # the name perf prints, from the metric's row (three are named in words there)
            f"{level}: {METRICS[metric].inputs[0]} > {bar:g}" + (f" & {parent}" if parent else ""),
            families=("x86",),
        )
        for metric, bar, category, level, parent in (
            ("4k_aliasing", 0.20, "backend_bound", TMA_L4, _UNDER_L1),
            ("lock_latency", 0.20, "backend_bound", TMA_L4, _UNDER_L1),
            ("split_loads", 0.20, "backend_bound", TMA_L4, _UNDER_L1),
            ("fb_full", 0.30, "backend_bound", TMA_L4, ""),
            (
                "data_sharing",
                0.05,
                "l2_llc_residency",
                TMA_L4,
                "(tma_l3_bound > 0.05 & (tma_memory_bound > 0.2 & tma_backend_bound > 0.2))",
            ),
            ("branch_resteers", 0.05, "frontend_bound", TMA_L3, _UNDER_FETCH),
            ("l3_hit_latency", 0.10, "l2_llc_residency", TMA_L4, _UNDER_L3),
            ("sq_full", 0.30, "l2_llc_residency", TMA_L4, _UNDER_L3),
            ("store_latency", 0.10, "backend_bound", TMA_L4, _UNDER_STORES),
            ("store_fwd_blk", 0.10, "backend_bound", TMA_L4, _UNDER_L1),
            ("ports_utilized_0", 0.20, "backend_bound", TMA_L4, _UNDER_PORTS),
            ("ports_utilized_1", 0.20, "backend_bound", TMA_L4, _UNDER_PORTS),
            ("ports_utilized_2", 0.15, "backend_bound", TMA_L4, _UNDER_PORTS),
            ("ports_utilized_3m", 0.40, "backend_bound", TMA_L4, _UNDER_PORTS),
            ("unknown_branches", 0.05, "frontend_bound", TMA_L4, _UNDER_RESTEERS),
            ("dsb_switches", 0.05, "frontend_bound", TMA_L3, _UNDER_FETCH),
            ("ms_switches", 0.05, "frontend_bound", TMA_L3, _UNDER_FETCH),
            ("legacy_decode", 0.10, "frontend_bound", TMA_L3, _UNDER_FETCH_BW),
            ("uop_cache_fetch", 0.15, "frontend_bound", TMA_L3, _UNDER_FETCH_BW),
            ("length_changing_prefixes", 0.05, "frontend_bound", TMA_L3, _UNDER_FETCH),
            ("mispredicts_resteers", 0.05, "frontend_bound", TMA_L4, _UNDER_RESTEERS),
            ("clears_resteers", 0.05, "frontend_bound", TMA_L4, _UNDER_RESTEERS),
            ("split_stores", 0.20, "backend_bound", TMA_L4, _UNDER_STORES),
            ("streaming_stores", 0.20, "backend_bound", TMA_L4, _UNDER_STORES),
        )
    ),
    # --- Intel's bottleneck view -----------------------------------------------------
    # Each entry is a cause's total pipeline cost (ingest.tma_bottlenecks), flagged by
    # Intel at 20% of the slots (10% for memory synchronization: lines moving between
    # cores), so it names its category on its own. Useful work is part of Retiring, so
    # it is judged on Retiring's own threshold (tma_retiring > 0.7): the view's generic
    # 20 would call a quarter of the slots retiring useful work a bottleneck.
    *(
        Threshold(
            f"bottleneck_{entry}",
            ">",
            bar,
            category,
            "key",
            f"{TMA_BN}: tma_bottleneck_{printed} > {bar * 100:g}",
            families=("x86",),
        )
        for entry, printed, bar, category in (
            ("mispredictions", "mispredictions", 0.20, "branch_misprediction"),
            ("big_code", "big_code", 0.20, "frontend_bound"),
            ("fetch_bandwidth", "instruction_fetch_bw", 0.20, "frontend_bound"),
            ("memory_bandwidth", "data_cache_memory_bandwidth", 0.20, "l2_llc_residency"),
            ("memory_latency", "data_cache_memory_latency", 0.20, "l2_llc_residency"),
            ("memory_sync", "memory_synchronization", 0.10, "l2_llc_residency"),
            ("data_tlbs", "memory_data_tlbs", 0.20, "tlb_churn"),
            ("compute", "compute_bound_est", 0.20, "backend_bound"),
        )
    ),
    Threshold(
        "bottleneck_useful_work",
        ">",
        0.70,
        "retiring",
        "key",
        f"{TMA_RAW}: tma_retiring > 0.7, of which useful work is a part",
        families=("x86",),
    ),
    # --- threads ----------------------------------------------------------------------
    Threshold(
        "session.allow_spinning",
        ">",
        0.5,
        "thread_spinning",
        "key",
        f"{ORT_THREADS}: pool threads busy-wait between parallel sections",
    ),
    Threshold(
        "cpu_utilisation",
        ">",
        1.5,
        "thread_spinning",
        "key",
        JUDGEMENT,
        True,
        "CPUs busy exceed the threads configured to do the work by half again",
        "useful_threads",
    ),
    Threshold(
        "session.threads",
        ">",
        1.0,
        "thread_spinning",
        "key",
        JUDGEMENT,
        True,
        "more intra-op (+ inter-op) threads than CPUs: oversubscription",
        "cpu_count",
    ),
    Threshold(
        "slow_pause",
        ">",
        0.05,
        "thread_spinning",
        "key",
        f"{TMA_L4}: tma_slow_pause > 0.05 & (tma_serializing_operation > 0.1 & "
        "(tma_core_bound > 0.1 & tma_backend_bound > 0.2)): cycles stalled on PAUSE, the "
        "spin-wait hint",
        families=("x86",),
    ),
    Threshold(
        "context_switches_per_sec",
        ">",
        5000.0,
        "thread_spinning",
        "support",
        JUDGEMENT,
        True,
        "thousands of switches per CPU-second: threads contend for CPUs",
    ),
    Threshold(
        "context_switches_per_sec",
        ">",
        SWITCHES_COSTING_A_TWENTIETH,
        "thread_spinning",
        "support",
        JUDGEMENT,
        True,
        f"{CONTEXT_SWITCH_COST}: where the direct cost alone takes 5% of the CPU time, "
        "the total (the caches refilled after each switch) is a material share; a key "
        "where several CPUs were busy at once, so the program's own threads block, "
        "wake and yield to each other (lock contention, hand-offs, sched_yield)",
        key_with_cpus=SEVERAL_CPUS_BUSY,
    ),
    # --- page faults -------------------------------------------------------------
    Threshold(
        "page_faults_per_call",
        ">",
        10.0,
        "page_faults",
        "key",
        JUDGEMENT,
        True,
        "a steady-state call with an arena should fault ~0 times; 10 faults is "
        "40 KiB of freshly mapped 4 KiB pages every call",
    ),
    Threshold(
        "page_faults_per_sec",
        ">",
        50000.0,
        "page_faults",
        "key",
        JUDGEMENT,
        True,
        "at ~1 us per minor fault (trap plus zeroing a 4 KiB page) this is >= 5% of "
        "CPU time; fewer faults cannot explain a slow run",
    ),
    Threshold(
        "session.enable_mem_arena",
        "<",
        0.5,
        "page_faults",
        "support",
        f"{ORT_ARENA}: without the arena every call allocates from the system",
    ),
    # --- noise -------------------------------------------------------------------------
    Threshold(
        "cpu_migrations_per_sec",
        ">",
        100.0,
        "noisy_machine",
        "key",
        JUDGEMENT,
        True,
        "a quiet, pinned run migrates a few times per second at most",
    ),
    Threshold(
        "cpu_migrations_per_call",
        ">",
        1.0,
        "noisy_machine",
        "key",
        JUDGEMENT,
        True,
        "every call is moved to another CPU at least once (cold caches each call)",
    ),
    Threshold(
        "context_switches_per_sec",
        ">",
        5000.0,
        "noisy_machine",
        "support",
        JUDGEMENT,
        True,
        "thousands of switches per CPU-second: preemption",
    ),
    Threshold(
        "latency_tail_ratio",
        ">",
        1.5,
        "noisy_machine",
        "support",
        JUDGEMENT,
        True,
        "p99 half again above p50 for identical calls",
    ),
)


def thresholds_for(category: str, family: str) -> tuple[Threshold, ...]:
    """The rows of ``category`` that apply to a core ``family``."""
    return tuple(t for t in THRESHOLDS if t.category == category and t.applies_to(family))


# -- cores ------------------------------------------------------------------------
#
# One row per core (:data:`CORES`): the Arm cores detection names from their MIDR
# (``pmu.cpu.ARM_PARTS``) and the x86 cores behind the micro-architectures it names
# (``pmu.cpu.x86_core_name``), each with its issue width and where the number comes
# from. A core whose width no source gives is a *family fallback* row: it borrows the
# narrowest width of its family on record and says so (``fallback``). Names as users
# type them (products, short forms, other spellings) are on the row (``typed_as``) and
# resolve to it (:func:`resolve_core`); so are the core's own cycle costs
# (``penalties``). tests/test_core_names.py checks that the rows agree with detection
# (pmu.cpu), Arm's event lists, the top-down models and the docs.

_NO_BASIC = (
    "llc_read",
    "llc_miss",
    "dtlb_access",
    "dtlb_walk",
    "itlb_access",
    "itlb_walk",
    "stall_frontend",
    "stall_backend",
    "stall_backend_mem",
    "stall_slot",
    "stall_slot_frontend",
    "stall_slot_backend",
    "op_retired",
    "op_spec",
)
_NO_SLOTS = (
    "stall_backend_mem",
    "stall_slot",
    "stall_slot_frontend",
    "stall_slot_backend",
    "op_retired",
    "op_spec",
)

# Apple's PMU as Linux drives it maps four generic events (drivers/perf/apple_m1_cpu_pmu.c
# m1_pmu_perf_map: cycles, instructions, branches, branch misses) and no cache map.
_NO_APPLE = (
    "l1d_access",
    "l1d_refill",
    "l1i_access",
    "l1i_refill",
    "l2_access",
    "l2_refill",
    "l1d_tlb_refill",
    *_NO_BASIC,
)
_APPLE_PMU = (
    "Linux drivers/perf/apple_m1_cpu_pmu.c, m1_pmu_perf_map: cycles, instructions, "
    "branches and branch misses only"
)
_DOUGALLJ = (
    "Dougall Johnson, 'Apple Microarchitecture Research' (dougallj.github.io/applecpu/{}.html)"
)
_ASAHI_PMU = (
    "Linux drivers/perf/apple_m1_cpu_pmu.c names the PMUs apple_icestorm_pmu and "
    "apple_firestorm_pmu"
)

#: Families of threshold rows, from the core that can count least to the one that can
#: count most (a family fallback takes the least capable family of its members).
CORE_FAMILIES: tuple[str, ...] = ("arm-basic", "arm-cycles", "arm-topdown", "x86", "unknown")


@dataclass(frozen=True)
class CoreAlias:
    """A name users type for a core. ``source`` says where a product name maps to its
    core; it is empty for another spelling of the core's own name."""

    name: str
    slug: str
    source: str = ""


@dataclass(frozen=True)
class Penalty:
    """Cycles one event costs, and where the figure comes from.

    ``label`` is the short source a formula shows (``Neoverse N1: AnandTech``);
    ``source`` the full citation; ``fallback`` is empty when the figure is this core's
    own, else what it falls back to (``Arm family``)."""

    cycles: float
    label: str
    source: str
    fallback: str = ""


@dataclass(frozen=True)
class CoreFacts:
    """What the rules need to know about one core.

    ``fallback`` is empty for a core on record; for a family fallback it names the
    family whose narrowest width on record stands in (``"Neoverse N"``), and
    ``width_source`` says so.
    """

    slug: str
    name: str
    family: str  # arm-basic | arm-cycles | arm-topdown | x86 | unknown
    width: float | None
    width_source: str
    lacks: tuple[str, ...] = ()  # logical events the core does not implement
    lacks_source: str = ""
    notes: Mapping[str, str] = field(default_factory=dict)
    fallback: str = ""
    # A generic row (no core named, :func:`generic_facts`): ``width`` is the narrowest
    # width of the cores it may be and ``widest`` the widest; None for a core on record.
    widest: float | None = None
    # Names users type for it beside its slug, each with the source that maps a product
    # to the core ("" for another spelling of its own name): (name, source).
    typed_as: tuple[tuple[str, str], ...] = ()
    # x86 micro-architectures as pmu.cpu.x86_core_name names them (the <uarch> of
    # intel-<line>-<uarch>) that are this core.
    detected_as: tuple[str, ...] = ()
    # Cycles one event costs on this core where a source gives its own figure (a kind
    # of cycle_costs.KINDS -> Penalty); the kinds not here are its family's.
    penalties: Mapping[str, Penalty] = field(default_factory=dict)

    @property
    def aliases(self) -> tuple[CoreAlias, ...]:
        """The names users type for this core, as :class:`CoreAlias` rows."""
        return tuple(CoreAlias(name, self.slug, source) for name, source in self.typed_as)

    def width_for(self, comparison: str) -> float | None:
        """The width a threshold relative to the width is checked against: for a
        generic row, ``<`` at the narrowest width (below a fraction of the narrowest
        core is below it on every core) and ``>`` at the widest; else ``width``."""
        if comparison == ">" and self.widest is not None:
            return self.widest
        return self.width


def _arm(
    slug: str,
    name: str,
    family: str,
    width: float,
    width_source: str,
    lacks: tuple[str, ...] = (),
    **more: Any,
) -> CoreFacts:
    source = (
        "Arm Cortex-A15 TRM PMU event list (ARMv7)"
        if slug == "cortex-a15"
        else f"ARM-software/data pmu/{slug}.json"
    )
    return CoreFacts(
        slug, name, family, width, width_source, lacks, source if lacks else "", **more
    )


def _x86(slug: str, name: str, width: float, width_source: str, **more: Any) -> CoreFacts:
    return CoreFacts(slug, name, "x86", width, width_source, **more)


def _llvm_4_wide(slug: str, name: str, model: str, short: str, **more: Any) -> CoreFacts:
    """An Intel core as LLVM's scheduling model file ``model`` gives it: ``IssueWidth =
    4`` ("``short`` can decode 4 instructions per cycle") and ``MispredictPenalty = 16``."""
    label = f"{name.removeprefix('Intel ').split(' / ')[0]}: LLVM"
    return _x86(
        slug,
        name,
        4,
        _LLVM_WIDTH.format(model, short),
        penalties={"mispredict": Penalty(16.0, label, _LLVM.format(model, 16))},
        **more,
    )


def _typed(source: str, *names: str) -> tuple[tuple[str, str], ...]:
    return tuple((n, source) for n in names)


_AWS_CORES = (
    "aws/aws-graviton-getting-started README.md, 'Building for Graviton' table: "
    "Graviton2 Neoverse-N1, Graviton3(E) Neoverse-V1, Graviton4 Neoverse-V2"
)
_RPI = (
    "Raspberry Pi documentation, 'Processors' (raspberrypi.com/documentation/computers/"
    "processors.html): BCM2837 (Pi 3) Cortex-A53, BCM2711 (Pi 4) Cortex-A72, BCM2712 "
    "(Pi 5) Cortex-A76"
)
_ALTRA = (
    "Chips and Cheese, 'LLVM's Ampere1B Commit' (chipsandcheese.com/p/llvms-ampere1b-"
    "commit): 'For Altra, Ampere used Arm Ltd's Neoverse N1 core design'"
)
_GRACE = "NVIDIA Grace CPU Superchip datasheet: 72 Arm Neoverse V2 cores per Grace CPU"
_COBALT = (
    "Azure Cobalt 100 reports implementer 0x6D (Microsoft), part 0xD49 (Neoverse N2), "
    "variant 0 revision 0 (pmu.cpu.ARM_PARTS; telemetry-solution neoverse-n2 r0p0)"
)
_YITIAN = (
    "Chips and Cheese, 'ARM's Neoverse N2: Cortex A710 for Servers' (2023): 'The Yitian "
    "710 uses ARM's Neoverse N2 cores'; an r0p0: Alibaba's own N2 metrics for Linux perf "
    "subtract CPU_CYCLES from STALL_SLOT and STALL_SLOT_FRONTEND (Jing Zhang, '[PATCH v4 "
    "0/6] Add metrics for neoverse-n2', linux-kernel, 2022-12-23; Arm erratum notice "
    "SDEN1982442), which Linux later applies to MIDR 0x410fd490 (r0p0) only"
)
_N2_PENALTIES = {
    "mispredict": Penalty(
        10.0,
        "Neoverse N2: Chips and Cheese",
        "Chips and Cheese, 'ARM's Neoverse N2: Cortex A710 for Servers' (2023), measured on "
        "a Yitian 710: 'According to ARM, N2 has a 10 cycle pipeline', the minimum "
        "mispredict penalty",
    ),
}
_KUNPENG = (
    "Linux tools/perf/pmu-events/arch/arm64/mapfile.csv: MIDR 0x480fd010 (HiSilicon "
    "part 0xD01, TSV110 in arch/arm64/include/asm/cputype.h) -> hisilicon/hip08; "
    "WikiChip 'TaiShan v110': 'TaiShan-based CPUs are branded as the Kunpeng 920 series'"
)
_SKYLAKE_X_STEPPINGS = (
    "Linux arch/x86/include/asm/intel-family.h: 'CASCADELAKE_X 0x55 Sky Lake -- s: 7', "
    "'COOPERLAKE_X 0x55 Sky Lake -- s: 11' (Skylake-X's model, later steppings: the "
    "same core)"
)
_SKYLAKE_LINE = (
    "WikiChip, 'Sunny Cove - Microarchitectures - Intel': 'a number of improvised "
    "derivatives of Skylake including Kaby Lake, Coffee Lake, and Comet Lake'"
)
_ICELAKE = "WikiChip, 'Sunny Cove': core names Ice Lake (Client), Ice Lake (Server)"
_WILLOW_CYPRESS = (
    "Linux arch/x86/include/asm/intel-family.h: 'TIGERLAKE 0x8D /* Willow Cove */', "
    "'ROCKETLAKE 0xA7 /* Cypress Cove */'; LLVM X86.td schedules 'tigerlake' and "
    "'rocketlake' with IceLakeModel, the Sunny Cove model"
)
_LLVM_WIDTH = "LLVM {} IssueWidth = 4 ('{} can decode 4 instructions per cycle')"
_SNB_MODEL = (
    "LLVM X86.td schedules 'nehalem', 'westmere', 'sandybridge' and 'ivybridge' with "
    "SandyBridgeModel"
)
_GOLDEN_COVE = (
    "Intel Architecture Day 2021: the Performance-core (Golden Cove) of Alder Lake "
    "and of Sapphire Rapids"
)
_GOLDEN_COVE_LINE = (
    "Chips and Cheese, 'Intel's Redwood Cove: Baby Steps are Still Steps' (2024): "
    "'Redwood Cove is a minor upgrade over Intel's prior Raptor Cove architecture ... "
    "Raptor Cove is a nearly the same as 2021's Golden Cove ... Intel has not changed "
    "any major core structure sizes'"
)
_GOLDEN_COVE_PRODUCTS = (
    "Linux arch/x86/include/asm/intel-family.h: 'RAPTORLAKE 0xB7 /* Raptor Cove / "
    "Enhanced Gracemont */', 'METEORLAKE 0xAC /* Redwood Cove / Crestmont */', "
    "'EMERALDRAPIDS_X 0xCF /* Raptor Cove */', 'GRANITERAPIDS_X 0xAD /* Redwood Cove */'"
)
_LION_COVE = (
    "Linux arch/x86/include/asm/intel-family.h: 'INTEL_ARROWLAKE_H IFM(6, 0xC5) /* Lion "
    "Cove / Skymont */', 'INTEL_LUNARLAKE_M IFM(6, 0xBD) /* Lion Cove / Skymont */' "
    "(INTEL_ARROWLAKE 0xC6 is the desktop part of the same line)"
)
_LION_COVE_WIDTH = (
    "Intel's Lunar Lake architecture disclosure (2024), as tabulated in Wikipedia's "
    "'Lion Cove': 'Allocation/Rename 8-way', up from Redwood Cove's 6-way"
)
_CRESTMONT = (
    "Linux drivers/idle/intel_idle.c: 'ICPU(ATOM_CRESTMONT, grr)', "
    "'ICPU(ATOM_CRESTMONT_X, srf)' (Grand Ridge, Sierra Forest); intel-family.h: "
    "ATOM_CRESTMONT_X 0xAF, ATOM_CRESTMONT 0xB6"
)
_CRESTMONT_SLOTS = (
    "Linux perf pmu-events/arch/x86/grandridge/grr-metrics.json (Intel TMA 5.02): "
    "Crestmont's top-down counts 6 slots per cycle ('TOPDOWN_BE_BOUND.ALLOC_RESTRICTIONS "
    "/ (6 * CPU_CLK_UNHALTED.CORE)', tma_core_bound)"
)
_ZEN_PLUS = (
    "AMD family 17h: Zen+ (Pinnacle Ridge, Picasso) is the Zen core on 12 nm "
    "(pmu.cpu: family 17h models below 30h are Zen/Zen+)"
)

# Cycle costs of a core's own (cycle_costs reads them; sources in its docstring).
_LLVM = (
    "LLVM scheduling model {} MispredictPenalty = {} "
    "(from the vendor's software optimisation guide)"
)
_N1_ANANDTECH = "AnandTech, 'Cloud Clash: Amazon Graviton2 Arm against Intel and AMD' (2020), p. 3"
_ZEN_ANANDTECH = (
    "AnandTech, 'AMD Ryzen 7 2700X, 2700, Ryzen 5 2600X and 2600 review' (2018), p. 3, "
    "AMD's latency figures"
)

_TS = "telemetry-solution neoverse-{}.json product_configuration.num_slots"
_AT_A73 = (
    "AnandTech, 'ARM Cortex-A73 Artemis Unveiled', p. 2 (anandtech.com/show/10347/2): "
    "'ARM's current Austin family of 3-wide decode microarchitectures'"
)
_AT_A75 = (
    "AnandTech, 'Exploring DynamIQ and ARM's New CPUs: Cortex-A75, Cortex-A55', p. 3 "
    "(anandtech.com/show/11441/3)"
)
_AT_A77 = (
    "AnandTech, 'Arm's New Cortex-A77 CPU Micro-architecture', p. 2 "
    "(anandtech.com/show/14384/2), 'Going For A 6-Wide* Front-End'"
)
_AT_V9 = (
    "AnandTech, 'Arm Announces Mobile Armv9 CPU Microarchitectures: Cortex-X2, "
    "Cortex-A710 & Cortex-A510' (anandtech.com/show/16693)"
)
_PERF_BOOK_SLOTS = (
    "Bakhvalov, 'Performance Analysis and Tuning on Modern CPUs' (2nd ed.), "
    "'Pipeline Slot': 'Intel's Skylake and AMD Zen3 cores have a 4-wide "
    "allocation ... Golden Cove and Zen4 architectures both have a 6-wide "
    "allocation'"
)

CORES: dict[str, CoreFacts] = {
    c.slug: c
    for c in (
        # ARMv7 Cortex-A15 (Tegra K1, Exynos 5): no stall, walk or LL events in its PMU.
        _arm(
            "cortex-a15",
            "Cortex-A15",
            "arm-basic",
            3,
            "Cortex-A15 MPCore TRM: decodes up to three instructions per cycle",
            _NO_BASIC,
        ),
        _arm(
            "cortex-a53",
            "Cortex-A53",
            "arm-basic",
            2,
            "Cortex-A53 TRM: dual-issue, in order",
            _NO_BASIC,
            typed_as=_typed(_RPI, "raspberry-pi-3", "rpi3", "pi3"),
        ),
        _arm(
            "cortex-a55",
            "Cortex-A55",
            "arm-cycles",
            2,
            "Cortex-A55 TRM: dual-issue, in order",
            _NO_SLOTS,
        ),
        _arm(
            "cortex-a57",
            "Cortex-A57",
            "arm-basic",
            3,
            f"{_AT_A73}, the A57 and A72 ({_AT_A75}: 'the A72 and A57 ... belong to "
            "the Austin CPU family')",
            _NO_BASIC,
        ),
        _arm(
            "cortex-a72",
            "Cortex-A72",
            "arm-basic",
            3,
            "Cortex-A72 software optimisation guide: 3-wide decode",
            _NO_BASIC,
            typed_as=_typed(_RPI, "raspberry-pi-4", "rpi4", "pi4"),
        ),
        _arm(
            "cortex-a73",
            "Cortex-A73",
            "arm-basic",
            2,
            f"{_AT_A75}: 'moving to 3-wide decode makes the A75 ... a wider machine than "
            "A73' (A73: 2 instructions decoded per cycle)",
            _NO_BASIC,
        ),
        _arm(
            "cortex-a75",
            "Cortex-A75",
            "arm-cycles",
            3,
            f"{_AT_A75}: 'The ability to decode up to 3 instructions/cycle'",
            _NO_SLOTS,
        ),
        _arm(
            "cortex-a76",
            "Cortex-A76",
            "arm-cycles",
            4,
            "Cortex-A76 software optimisation guide: 4-wide decode",
            _NO_SLOTS,
            typed_as=_typed(_RPI, "raspberry-pi-5", "rpi5", "pi5"),
        ),
        _arm(
            "cortex-a77",
            "Cortex-A77",
            "arm-cycles",
            4,
            f"{_AT_A77}: the A76 is its baseline; 6 macro-ops per cycle come only from "
            "the new macro-op cache, instructions are decoded 4 per cycle as on the A76",
            _NO_SLOTS,
        ),
        # A78, A710 and X1 implement the slot events, but no level-1 formula for them is
        # in metrics: cycle accounting only.
        _arm(
            "cortex-a78",
            "Cortex-A78",
            "arm-cycles",
            4,
            "WikiChip, 'Cortex-A78 - Microarchitectures - ARM' "
            "(en.wikichip.org/wiki/arm_holdings/microarchitectures/cortex-a78): Decode 4-way",
        ),
        _arm(
            "cortex-a710",
            "Cortex-A710",
            "arm-cycles",
            5,
            f"{_AT_V9}, p. 3: 'Arm has reduced the macro-OP cache and dispatch stage "
            "throughputs from 6-wide to 5-wide'",
        ),
        _arm(
            "cortex-x1",
            "Cortex-X1",
            "arm-cycles",
            5,
            "Cortex-X1 software optimisation guide: 5-wide decode",
        ),
        _arm(
            "neoverse-n1",
            "Neoverse N1",
            "arm-cycles",
            5,
            _TS.format("n1"),
            _NO_SLOTS,
            typed_as=(
                *_typed(_AWS_CORES, "graviton2", "aws-graviton2"),
                *_typed(_ALTRA, "altra", "ampere-altra"),
            ),
            penalties={
                "l2_hit": Penalty(
                    11.0, "Neoverse N1: AnandTech", f"{_N1_ANANDTECH}: L2 access latency 11 cycles"
                ),
                "dram": Penalty(
                    200.0,
                    "Neoverse N1: AnandTech",
                    f"{_N1_ANANDTECH}: DRAM 81 ns structural latency (Arm: 83 ns) x 2.5 GHz",
                ),
                "mispredict": Penalty(
                    11.0, "Neoverse N1 SOG", _LLVM.format("AArch64SchedNeoverseN1.td", 11)
                ),
            },
        ),
        _arm(
            "neoverse-v1",
            "Neoverse V1",
            "arm-topdown",
            8,
            _TS.format("v1"),
            typed_as=_typed(_AWS_CORES, "graviton3", "graviton3e", "aws-graviton3"),
        ),
        # Neoverse N2 with its revision open: a saved file's level-1 shares take the
        # revision the file shows (core.metrics.n2_revision), the machine its MIDR.
        _arm(
            "neoverse-n2",
            "Neoverse N2",
            "arm-topdown",
            5,
            _TS.format("n2-r0p3"),
            penalties=_N2_PENALTIES,
        ),
        _arm(
            "neoverse-n2-r0p0",
            "Neoverse N2 r0p0 (Alibaba Yitian 710)",
            "arm-topdown",
            5,
            _TS.format("n2-r0p0"),
            typed_as=_typed(_YITIAN, "yitian-710", "yitian", "alibaba-yitian-710"),
            penalties=_N2_PENALTIES,
        ),
        _arm(
            "neoverse-n2-r0p3",
            "Neoverse N2 r0p3",
            "arm-topdown",
            5,
            _TS.format("n2-r0p3"),
            penalties=_N2_PENALTIES,
        ),
        _arm(
            "azure-cobalt-100",
            "Azure Cobalt 100 (Neoverse N2 r0p0)",
            "arm-topdown",
            5,
            _TS.format("n2-r0p0"),
            typed_as=_typed(_COBALT, "cobalt-100", "cobalt100"),
        ),
        _arm(
            "neoverse-v2",
            "Neoverse V2",
            "arm-topdown",
            8,
            _TS.format("v2"),
            typed_as=(
                *_typed(_AWS_CORES, "graviton4", "aws-graviton4"),
                *_typed(_GRACE, "grace", "nvidia-grace"),
            ),
        ),
        # V3's level-1 formulas are not in metrics yet: cycle accounting only.
        _arm("neoverse-v3", "Neoverse V3", "arm-cycles", 10, _TS.format("v3")),
        # Arm publishes no event list for these two (not in ARM-software/data): nothing
        # is known to be missing, and an event that was not counted is simply not judged.
        CoreFacts(
            "ampereone",
            "AmpereOne",
            "arm-cycles",
            4,
            "Chips and Cheese, 'LLVM's Ampere1B Commit' (chipsandcheese.com/p/"
            "llvms-ampere1b-commit): 'Ampere One is a four-wide armv8.6-a core'",
            typed_as=_typed("", "ampere-one", "ampere1"),
        ),
        # Apple's cores under Linux (Asahi): the PMU driver maps cycles, instructions,
        # branches and branch misses and no cache event (drivers/perf/apple_m1_cpu_pmu.c,
        # m1_pmu_perf_map), so every other logical event is missing. No Arm event list.
        CoreFacts(
            "apple-firestorm",
            "Apple Firestorm (M1 P-core)",
            "arm-basic",
            8,
            _DOUGALLJ.format("firestorm")
            + ": uops 'count towards the \"pipeline width\" limit of 8 uops per cycle'",
            _NO_APPLE,
            _APPLE_PMU,
            typed_as=_typed(_ASAHI_PMU, "firestorm", "m1-firestorm", "apple-firestorm-pmu"),
        ),
        CoreFacts(
            "apple-icestorm",
            "Apple Icestorm (M1 E-core)",
            "arm-basic",
            4,
            _DOUGALLJ.format("icestorm") + ": 'Retires per cycle: 4'",
            _NO_APPLE,
            _APPLE_PMU,
            typed_as=_typed(_ASAHI_PMU, "icestorm", "m1-icestorm", "apple-icestorm-pmu"),
        ),
        CoreFacts(
            "hisilicon-tsv110",
            "HiSilicon TSV110 (Kunpeng 920)",
            "arm-cycles",
            4,
            "Linux tools/perf/pmu-events/arch/arm64/hisilicon/hip08/metrics.json: "
            "retiring = INST_RETIRED / (CPU_CYCLES * 4), frontend_bound = FETCH_BUBBLE "
            "/ (4 * CPU_CYCLES); WikiChip 'TaiShan v110': Decode 4-way",
            typed_as=(
                *_typed(_KUNPENG, "kunpeng-920", "kunpeng920", "taishan-v110"),
                *_typed("", "tsv110"),
            ),
        ),
        # x86, one row per core micro-architecture (pmu.cpu.x86_core_name names the
        # product line and micro-architecture; ``detected_as`` maps them here). Product
        # to core: Kaby Lake, Coffee Lake and Comet Lake are "improvised derivatives of
        # Skylake" (WikiChip, 'Sunny Cove - Microarchitectures - Intel'), Skylake-X the
        # same core; Ice Lake client and server are Sunny Cove (same page, "Core Names");
        # Sapphire Rapids and Alder Lake's P-cores are Golden Cove (Intel Architecture Day
        # 2021); Tiger Lake and Rocket Lake are Sunny Cove's derivatives (Willow Cove,
        # Cypress Cove); Raptor Lake, Emerald Rapids (Raptor Cove), Meteor Lake and Granite
        # Rapids (Redwood Cove) are Golden Cove's; Sierra Forest and Grand Ridge are
        # Crestmont. A micro-architecture no row names (Lunar Lake and Arrow Lake's Lion
        # Cove, ...) takes its vendor's family fallback.
        # Before Skylake: 4-wide since Nehalem. LLVM models Nehalem, Westmere, Sandy
        # Bridge and Ivy Bridge with one machine model (X86.td); its width and
        # misprediction penalty are the Sandy Bridge row's, Nehalem's stand in by it.
        _x86(
            "intel-nehalem",
            "Intel Nehalem / Westmere",
            4,
            f"{_SNB_MODEL}: " + _LLVM_WIDTH.format("X86SchedSandyBridge.td", "SB"),
            typed_as=(*_typed(_SNB_MODEL, "westmere"), *_typed("", "nhm", "wsm")),
            detected_as=(
                "nehalem",
                "nehalem-ep",
                "nehalem-ex",
                "westmere",
                "westmere-ep",
                "westmere-ex",
            ),
        ),
        _llvm_4_wide(
            "intel-sandybridge",
            "Intel Sandy Bridge / Ivy Bridge",
            "X86SchedSandyBridge.td",
            "SB",
            typed_as=(
                *_typed(_SNB_MODEL, "ivybridge", "ivybridge-x", "ivybridge-ep", "ivb"),
                *_typed("", "sandybridge-x", "sandybridge-ep", "snb"),
            ),
            detected_as=("sandybridge", "sandybridge-x", "ivybridge", "ivybridge-x"),
        ),
        _llvm_4_wide(
            "intel-haswell",
            "Intel Haswell",
            "X86SchedHaswell.td",
            "HW",
            typed_as=_typed("", "hsw", "haswell-x", "haswell-ep"),
            detected_as=("haswell", "haswell-x"),
        ),
        _llvm_4_wide(
            "intel-broadwell",
            "Intel Broadwell",
            "X86SchedBroadwell.td",
            "BW",
            typed_as=_typed("", "bdw", "broadwell-x", "broadwell-ep"),
            detected_as=("broadwell", "broadwell-x", "broadwell-d"),
        ),
        _x86(
            "intel-skylake",
            "Intel Skylake",
            4,
            _PERF_BOOK_SLOTS,
            typed_as=(
                *_typed(_SKYLAKE_LINE, "kabylake", "coffeelake", "cometlake"),
                *_typed("", "skl", "skylake-x", "skylake-sp", "skx"),
                *_typed(
                    _SKYLAKE_X_STEPPINGS,
                    "cascadelake",
                    "cascadelake-x",
                    "cascadelake-sp",
                    "clx",
                    "cooperlake",
                    "cooperlake-x",
                    "cpx",
                ),
            ),
            detected_as=("skylake", "skylake-x", "kabylake", "cometlake"),
            penalties={
                "mispredict": Penalty(
                    14.0, "Skylake: LLVM", _LLVM.format("X86SchedSkylakeClient.td", 14)
                ),
            },
        ),
        _x86(
            "intel-sunnycove",
            "Intel Sunny Cove (Ice Lake)",
            5,
            "WikiChip Fuse, 'Intel Sunny Cove Core To Deliver A Major Improvement In "
            "Single-Thread Performance' (fuse.wikichip.org/news/2371): 'Sunny Cove can "
            "now allocate up to five µOPs each cycle'",
            typed_as=(
                *_typed(_ICELAKE, "icelake", "icelake-x", "icelake-sp", "icx"),
                *_typed(_WILLOW_CYPRESS, "tigerlake", "rocketlake", "willowcove", "cypresscove"),
            ),
            detected_as=("icelake", "icelake-x", "icelake-d", "tigerlake", "rocketlake"),
        ),
        # Raptor Cove and Redwood Cove are Golden Cove with no major structure resized
        # (_GOLDEN_COVE_LINE): they stand in this row, width and all.
        _x86(
            "intel-goldencove",
            "Intel Golden Cove (Sapphire Rapids, Alder Lake P-core; Raptor Cove, Redwood Cove)",
            6,
            f"{_PERF_BOOK_SLOTS}; Raptor Cove and Redwood Cove: {_GOLDEN_COVE_LINE}",
            typed_as=(
                *_typed(_GOLDEN_COVE, "sapphirerapids", "spr", "alderlake", "adl"),
                *_typed(
                    _GOLDEN_COVE_PRODUCTS,
                    "raptorlake",
                    "rpl",
                    "meteorlake",
                    "mtl",
                    "emeraldrapids",
                    "emr",
                    "graniterapids",
                    "gnr",
                ),
                *_typed(_GOLDEN_COVE_LINE, "raptorcove", "redwoodcove"),
            ),
            detected_as=(
                "sapphirerapids",
                "alderlake",
                "alderlake-l",
                "raptorlake",
                "raptorlake-p",
                "meteorlake",
                "emeraldrapids",
                "graniterapids",
            ),
        ),
        # The P-core of Lunar Lake and Arrow Lake (their E-cores are Skymont, no row).
        _x86(
            "intel-lioncove",
            "Intel Lion Cove (Lunar Lake, Arrow Lake P-core)",
            8,
            _LION_COVE_WIDTH,
            typed_as=(
                *_typed(_LION_COVE, "lunarlake", "lnl", "arrowlake", "arl"),
                *_typed("", "lioncove"),
            ),
            detected_as=("lunarlake", "arrowlake"),
        ),
        # Intel's E-core of Sierra Forest and Grand Ridge, 6 slots per cycle.
        _x86(
            "intel-crestmont",
            "Intel Crestmont (Sierra Forest, Grand Ridge)",
            6,
            _CRESTMONT_SLOTS,
            typed_as=(
                *_typed(_CRESTMONT, "sierraforest", "srf", "grandridge", "grr"),
                *_typed("", "crestmont"),
            ),
            detected_as=("sierraforest", "grandridge"),
        ),
        # Zen and Zen 2 are no wider than Zen 3 (4 instructions decoded per cycle).
        _x86(
            "amd-zen",
            "AMD Zen",
            4,
            f"{_PERF_BOOK_SLOTS}; Zen / Zen+ are no wider than Zen 3",
            typed_as=_typed("", "zen1", "zen-1"),
            penalties={
                "l2_hit": Penalty(18.0, "Zen: AnandTech", f"{_ZEN_ANANDTECH}: L2 4.6 ns x 4.0 GHz"),
                "llc_hit": Penalty(
                    44.0, "Zen: AnandTech", f"{_ZEN_ANANDTECH}: L3 11.0 ns x 4.0 GHz"
                ),
                "dram": Penalty(
                    296.0, "Zen: AnandTech", f"{_ZEN_ANANDTECH}: memory 74 ns x 4.0 GHz"
                ),
            },
        ),
        _x86(
            "amd-zen+",
            "AMD Zen+",
            4,
            f"{_PERF_BOOK_SLOTS}; Zen / Zen+ are no wider than Zen 3",
            typed_as=_typed(_ZEN_PLUS, "zenplus", "zen-plus"),
            penalties={
                "l2_hit": Penalty(
                    13.0, "Zen+: AnandTech", f"{_ZEN_ANANDTECH}: L2 3.0 ns x 4.3 GHz"
                ),
                "llc_hit": Penalty(
                    40.0, "Zen+: AnandTech", f"{_ZEN_ANANDTECH}: L3 9.2 ns x 4.3 GHz"
                ),
                "dram": Penalty(
                    284.0, "Zen+: AnandTech", f"{_ZEN_ANANDTECH}: memory 66 ns x 4.3 GHz"
                ),
            },
        ),
        _x86("amd-zen2", "AMD Zen 2", 4, f"{_PERF_BOOK_SLOTS}; Zen 2 is no wider than Zen 3"),
        _x86("amd-zen3", "AMD Zen 3", 4, _PERF_BOOK_SLOTS),
        _x86(
            "amd-zen4",
            "AMD Zen 4",
            6,
            f"{_PERF_BOOK_SLOTS}; AMD Zen 4: 6 dispatch slots per cycle (slots = 6 x cycles)",
            penalties={
                "mispredict": Penalty(
                    13.0,
                    "Zen 4 SOG",
                    _LLVM.format("X86ScheduleZnver4.td", 13)
                    + ": AMD Zen 4 SOG 2.8, 'the common case penalty is 13 cycles'",
                ),
            },
        ),
        _x86(
            "amd-zen5",
            "AMD Zen 5",
            8,
            "AMD's Zen 5 architecture disclosure, as reported by PCMag, \"'Zen 5' "
            "Microarchitecture Explained\" (uk.pcmag.com/processors/153288): 'The number "
            "of dispatch and execution engines was also increased to an 8-wide design'",
        ),
    )
}


@dataclass(frozen=True)
class CoreFamily:
    """A family of cores whose narrowest width on record stands in for a member that
    has none (``members``: the slugs it takes the width from; ``covers``: the names it
    stands in for; both full-match regular expressions)."""

    slug: str  # the family's own name, which --cpu accepts ("neoverse")
    label: str  # "Neoverse"
    covers: str
    members: str
    members_label: str = ""  # "Neoverse N" where the members are a part of the family


CORE_FAMILY_FALLBACKS: tuple[CoreFamily, ...] = (
    CoreFamily("neoverse-n", "Neoverse N", r"neoverse-n[0-9a-z]*", r"neoverse-n\d+"),
    CoreFamily("neoverse-v", "Neoverse V", r"neoverse-v[0-9a-z]*", r"neoverse-v\d+"),
    # Any other Neoverse (an unnamed Neoverse server): the N line, the narrower one.
    CoreFamily("neoverse", "Neoverse", r"neoverse(-[0-9a-z]+)?", r"neoverse-n\d+", "Neoverse N"),
    CoreFamily("cortex-x", "Cortex-X", r"cortex-x[0-9a-z]*", r"cortex-x\d+"),
    # Armv9 little (A5xx) and big (A7xx) lines, then any Cortex-A.
    CoreFamily(
        "cortex-a5xx",
        "Cortex-A5xx",
        r"cortex-a5\d\d[a-z]*",
        r"cortex-a5([35]|\d\d)",
        "in-order little Cortex-A",
    ),
    CoreFamily("cortex-a7xx", "Cortex-A7xx", r"cortex-a7\d\d[a-z]*", r"cortex-a7\d\d"),
    CoreFamily("cortex-a", "Cortex-A", r"cortex-a[0-9a-z]*", r"cortex-a\d+"),
    CoreFamily("apple", "Apple", r"apple(-[0-9a-z]+)?", r"apple-(icestorm|firestorm)"),
    CoreFamily("intel", "Intel", r"intel(-[0-9a-z.+-]+)?", r"intel-[a-z0-9]+"),
    CoreFamily("amd", "AMD", r"amd(-[0-9a-z.+-]+)?", r"amd-[a-z0-9+]+"),
)


def family_fallback(slug: str, name: str = "") -> CoreFacts | None:
    """The facts of the family ``slug`` belongs to, marked as a fallback; None when no
    family covers it."""
    family = next((f for f in CORE_FAMILY_FALLBACKS if re.fullmatch(f.covers, slug)), None)
    return None if family is None else _family_facts(slug, name, family)


def _family_facts(slug: str, name: str, family: CoreFamily) -> CoreFacts:
    """``family``'s narrowest width on record, and its least capable rule family."""
    members = [
        c
        for c in CORES.values()
        if not c.fallback and c.width is not None and re.fullmatch(family.members, c.slug)
    ]
    narrowest = min(members, key=lambda c: (c.width or 0.0, c.slug))
    kinds = {c.family for c in members}
    least = next(f for f in CORE_FAMILIES if f in kinds)
    return CoreFacts(
        slug,
        name or f"{family.label} core ({slug})",
        least,
        narrowest.width,
        f"{family.label} family fallback: width {narrowest.width:g} from the narrowest "
        f"{family.members_label or family.label} core on record ({narrowest.name}: "
        f"{narrowest.width_source})",
        fallback=family.label,
    )


def _fallback_row(slug: str, name: str, family_slug: str, rules: str) -> CoreFacts:
    """A row for a core detection names: its family's width, its own rule family
    (``rules``, from the events Arm lists for it)."""
    family = next(f for f in CORE_FAMILY_FALLBACKS if f.slug == family_slug)
    return replace(_family_facts(slug, name, family), family=rules)


# Cores detection names whose width no source on record gives: family fallbacks, each
# saying so. ARM-software/data lists every catalogue event for them, slot events
# included; with no level-1 formula in metrics they count cycles only.
CORES.update(
    {
        c.slug: c
        for c in (
            _fallback_row("cortex-a510", "Cortex-A510", "cortex-a5xx", "arm-cycles"),
            _fallback_row("cortex-x2", "Cortex-X2", "cortex-x", "arm-cycles"),
            # Android phones' cores of 2020-2023 (ARM-software/data pmu/cortex-a78c.json,
            # cortex-x1c, cortex-a715, cortex-x3, cortex-a520, cortex-a720, cortex-x4: each
            # lists the slot and STALL_BACKEND_MEM events, as A510 and X2 do).
            _fallback_row("cortex-a78c", "Cortex-A78C", "cortex-a7xx", "arm-cycles"),
            _fallback_row("cortex-x1c", "Cortex-X1C", "cortex-x", "arm-cycles"),
            _fallback_row("cortex-a715", "Cortex-A715", "cortex-a7xx", "arm-cycles"),
            _fallback_row("cortex-x3", "Cortex-X3", "cortex-x", "arm-cycles"),
            _fallback_row("cortex-a520", "Cortex-A520", "cortex-a5xx", "arm-cycles"),
            _fallback_row("cortex-a720", "Cortex-A720", "cortex-a7xx", "arm-cycles"),
            _fallback_row("cortex-x4", "Cortex-X4", "cortex-x", "arm-cycles"),
            _fallback_row("neoverse-n3", "Neoverse N3", "neoverse-n", "arm-cycles"),
            # M2's cores: no width on record; Apple's PMU counts the same four events.
            replace(
                _fallback_row("apple-blizzard", "Apple Blizzard (M2 E-core)", "apple", "arm-basic"),
                lacks=_NO_APPLE,
                lacks_source=_APPLE_PMU,
            ),
            replace(
                _fallback_row(
                    "apple-avalanche", "Apple Avalanche (M2 P-core)", "apple", "arm-basic"
                ),
                lacks=_NO_APPLE,
                lacks_source=_APPLE_PMU,
            ),
        )
    }
)

# x86 micro-architectures as pmu.cpu.x86_core_name names them -> the row that names them
# (its ``detected_as``): an index of the rows.
_X86_DETECTED: dict[str, str] = {u: c.slug for c in CORES.values() for u in c.detected_as}

# x86 slugs as pmu.cpu.x86_core_name makes them: intel-<line>-<uarch>, amd-<line>-<uarch>.
_X86_SLUG = re.compile(r"(?P<vendor>intel|amd)-[a-z0-9]+-(?P<uarch>[a-z0-9][a-z0-9.+-]*)")
X86_EXAMPLES = ("intel-core-skylake", "intel-xeon-icelake-x", "amd-epyc-zen4")


def _detected_x86(slug: str) -> CoreFacts | None:
    """Facts for a slug in detection's x86 form; None when it is not in that form."""
    match = _X86_SLUG.fullmatch(slug)
    if not match:
        return None
    vendor, uarch = match["vendor"], match["uarch"]
    row = _X86_DETECTED.get(uarch)
    if row is None:  # a micro-architecture as users type it ('intel-xeon-cascadelake')
        typed = [s for s in core_candidates(uarch) if s.startswith(f"{vendor}-")]
        row = typed[0] if len(typed) == 1 else f"{vendor}-{uarch}"
    if row in CORES:
        return CORES[row]
    return family_fallback(slug, slug)


# -- naming a core -------------------------------------------------------------------


#: What users type -> the core's slug: every row's ``typed_as``, an index of the rows.
#: Spellings that only differ in case, spaces, underscores, dashes or a vendor / line
#: prefix ("A72", "cortex a72", "amd-zen4", "zen 4", "neoverse_n1") need no name:
#: :func:`resolve_core` folds them.
CORE_ALIASES: tuple[CoreAlias, ...] = tuple(a for c in CORES.values() for a in c.aliases)

#: Names that fit several cores: refused, with the choices.
AMBIGUOUS_CORE_NAMES: dict[str, tuple[str, ...]] = {
    "graviton": ("neoverse-n1", "neoverse-v1", "neoverse-v2"),
    "raspberry-pi": ("cortex-a53", "cortex-a72", "cortex-a76"),
    "rpi": ("cortex-a53", "cortex-a72", "cortex-a76"),
    "ampere": ("neoverse-n1", "ampereone"),
    "m1": ("apple-icestorm", "apple-firestorm"),
    "apple-m1": ("apple-icestorm", "apple-firestorm"),
}

#: What the --cpu help shows (each resolves; tests/test_core_names.py checks).
CORE_NAME_EXAMPLES: tuple[str, ...] = (
    "cortex-a72",
    "a72",
    "n1",
    "graviton3",
    "altra",
    "kunpeng920",
    "zen4",
    "zen+",
    "skylake",
    "icelake",
)

# Prefixes a name may carry or leave out (a vendor, a product line, a PMU's name).
_PREFIXES = (
    "armv8",
    "armv9",
    "arm",
    "cortex",
    "neoverse",
    "intel",
    "amd",
    "hisilicon",
    "aws",
    "nvidia",
    "azure",
    "microsoft",
    "huawei",
)


def _fold(name: str) -> str:
    """Lower case, spaces and underscores as dashes: 'Cortex A72' -> 'cortex-a72'."""
    return re.sub(r"-+", "-", re.sub(r"[\s_]+", "-", (name or "").strip().lower())).strip("-")


def _keys(name: str) -> set[str]:
    """The forms a name is found under: without separators, and without each leading
    vendor or line prefix ('amd-zen4' -> 'amdzen4', 'zen4')."""
    compact = re.sub(r"[^a-z0-9+]", "", _fold(name))
    keys = {compact}
    changed = True
    while changed:
        changed = False
        for key in list(keys):
            for prefix in _PREFIXES:
                if key.startswith(prefix) and len(key) > len(prefix):
                    short = key[len(prefix) :]
                    if short not in keys:
                        keys.add(short)
                        changed = True
    return keys


def _index() -> dict[str, frozenset[str]]:
    index: dict[str, set[str]] = {}
    names = [(slug, slug) for slug in CORES] + [(a.name, a.slug) for a in CORE_ALIASES]
    names += [(f.slug, f.slug) for f in CORE_FAMILY_FALLBACKS]
    for name, slug in names:
        for key in _keys(name):
            index.setdefault(key, set()).add(slug)
    for name, choices in AMBIGUOUS_CORE_NAMES.items():
        for key in _keys(name):
            index.setdefault(key, set()).update(choices)
    return {k: frozenset(v) for k, v in index.items()}


_INDEX = _index()


def _parts(name: str) -> list[str]:
    """big.LITTLE parts of a name: 'cortex-a55+cortex-a76'; a trailing '+' is part of
    the name ('zen+')."""
    return [p for p in re.split(r"\+(?=[a-z0-9])", _fold(name)) if p]


def core_candidates(name: str) -> tuple[str, ...]:
    """The slugs one name (no '+' between cores) could mean: none (unknown), one, or
    several (ambiguous)."""
    folded = _fold(name)
    if not folded:
        return ()
    if folded in CORES or any(f.slug == folded for f in CORE_FAMILY_FALLBACKS):
        return (folded,)
    if _X86_SLUG.fullmatch(folded):
        return (folded,)
    found: set[str] = set()
    for key in _keys(folded):
        found |= _INDEX.get(key, frozenset())
    if not found:  # an Intel micro-architecture detection names, typed bare: 'raptorlake'
        uarch = _INTEL_DETECTED.get(re.sub(r"[^a-z0-9]", "", folded))
        if uarch is not None:  # its row where detection has one, else the family's
            return (_X86_DETECTED.get(uarch, f"intel-{uarch}"),)
    return tuple(sorted(found))


#: The micro-architectures detection names on Intel (pmu.cpu), by their compact form.
_INTEL_DETECTED = {re.sub(r"[^a-z0-9]", "", u): u for u in INTEL_MODELS.values()}


def resolve_core(name: str) -> str | None:
    """The slug a name means ('graviton2' -> 'neoverse-n1', 'A72' -> 'cortex-a72',
    'zen 4' -> 'amd-zen4'; 'a+b' part by part); None when unknown or ambiguous."""
    slugs = []
    for part in _parts(name):
        found = core_candidates(part)
        if len(found) != 1:
            return None
        slugs.append(found[0])
    return "+".join(slugs) or None


def core_facts(slug: str) -> CoreFacts:
    """Facts for a core slug or a name users type; big.LITTLE slugs (``a+b``) take the
    widest core. A core with no row of its own takes its family's fallback; only a core
    of no family on record is "unknown"."""
    parts = _parts(slug)
    if len(parts) > 1:
        facts = [core_facts(p) for p in parts]
        known = [p for p in facts if p.width is not None]
        if known:
            best = max(known, key=lambda p: p.width or 0.0)
            lacks = tuple(sorted({e for p in facts for e in p.lacks}))
            joined = "+".join(parts)
            return CoreFacts(
                joined,
                " + ".join(p.name for p in facts),
                best.family,
                best.width,
                f"{best.width_source} (widest core of {joined})",
                lacks,
                "; ".join(p.lacks_source for p in facts if p.lacks_source),
                fallback=best.fallback,
            )
    folded = parts[0] if parts else ""
    resolved = resolve_core(folded) or folded
    if resolved in CORES:
        return CORES[resolved]
    detected = _detected_x86(resolved)
    if detected is not None:
        return detected
    named = next((f for f in CORE_FAMILY_FALLBACKS if f.slug == resolved), None)
    if named is not None:  # a family named as such: --cpu neoverse
        return _family_facts(resolved, f"any {named.label} core", named)
    fallback = family_fallback(resolved, resolved)
    if fallback is not None:
        return fallback
    if folded in ISA_GENERIC:
        return generic_facts(folded)
    return generic_facts("", folded)


# -- no core named: what holds for any core of the instruction set ---------------------
#
# An output that names no core still shows, often, which instruction set ran it: Arm
# PMUv3 event names (l1d_cache_refill, armv8_pmuv3_0/...) or x86 ones (EVENT.UMASK
# names, the cpu/.../ PMU). A threshold relative to the issue width can still be judged
# for every core of that set: IPC below a quarter of the narrowest core's width is below
# a quarter of every core's width, and IPC above three quarters of the widest core's is
# above it on every core (:meth:`CoreFacts.width_for`). Where the output shows no
# instruction set, the bounds are those of every core on record. A judgement on these
# bounds is generic: classify halves its confidence and says so. The rows are those of
# :data:`CORES` (each width cited there); cores narrower than any on record (scalar
# in-order designs) are outside what the bound covers, which the note says.

#: The instruction-set names a file's events can show (``uname -m`` spellings, folded).
ISA_GENERIC: dict[str, str] = {"aarch64": "Arm (AArch64/AArch32)", "x86-64": "x86"}


def generic_facts(isa: str, slug: str = "") -> CoreFacts:
    """Facts for an unnamed core of ``isa`` (a key of :data:`ISA_GENERIC`, or "" when
    the instruction set is not known either): family ``unknown`` (every threshold row
    applies), the narrowest and widest widths of that set's cores on record."""
    if isa == "aarch64":
        members = [c for c in CORES.values() if c.family.startswith("arm") and not c.fallback]
    elif isa == "x86-64":
        members = [c for c in CORES.values() if c.family == "x86" and not c.fallback]
    else:
        members = [c for c in CORES.values() if not c.fallback and c.width is not None]
    narrow = min(members, key=lambda c: (c.width or 0.0, c.slug))
    wide = max(members, key=lambda c: (c.width or 0.0, c.slug))
    what = f"{ISA_GENERIC[isa]} core" if isa else "core of any instruction set on record"
    name = slug or isa
    return CoreFacts(
        name,
        f"an unnamed {what}" if not slug else name,
        "unknown",
        narrow.width,
        f"generic, no core named: widths of every {what} on record, {narrow.width:g} "
        f"({narrow.name}: {narrow.width_source}) to {wide.width:g} ({wide.name}: "
        f"{wide.width_source}); '<' rows at the narrowest, '>' rows at the widest",
        widest=wide.width,
    )


def known_core(slug: str) -> bool:
    """Whether ``slug`` names one core on record, or a family (``a+b`` for big.LITTLE:
    each part)."""
    parts = _parts(slug)
    return bool(parts) and all(len(core_candidates(p)) == 1 for p in parts)


def check_core(slug: str) -> str | None:
    """None when ``slug`` names one known core; else a one-paragraph message with the fix."""
    if known_core(slug):
        return None
    parts = _parts(slug) or [_fold(slug)]
    for part in parts:
        choices = core_candidates(part)
        if len(choices) > 1:
            return (
                f"core name '{part}' is ambiguous: it could be {', '.join(choices[:-1])} "
                f"or {choices[-1]}. Pass one of them to --cpu (docs/diagnosis.md, "
                "'Naming a core', lists every name)."
            )
    bad = next((p for p in parts if not core_candidates(p)), _fold(slug))
    # x86 rows also under their micro-architecture alone ('haswell' for intel-haswell),
    # as users type them
    bare = [slug.split("-", 1)[1] for slug in CORES if slug.startswith(("intel-", "amd-"))]
    names = [*CORES, *bare, *(a.name for a in CORE_ALIASES), *X86_EXAMPLES]
    # Swapped characters (a27 for a72) first, then difflib's closest spellings.
    swapped = [n for n in CORES if sorted(n) == sorted(bad)]
    close = difflib.get_close_matches(bad, names, n=3, cutoff=0.6)
    guesses = list(dict.fromkeys([*swapped, *close]))[:3]
    hint = f" Did you mean {' or '.join(guesses)}?" if guesses else ""
    return (
        f"unknown core '{slug}'.{hint} Known cores: {', '.join(CORES)}; also product "
        f"names and short forms (e.g. {', '.join(CORE_NAME_EXAMPLES)}), a family "
        f"({', '.join(f.slug for f in CORE_FAMILY_FALLBACKS)}), or x86 cores as "
        f"detection names them, intel-<line>-<uarch> or amd-<line>-<uarch> (e.g. "
        f"{', '.join(X86_EXAMPLES)}). Pass one of them to --cpu, or leave --cpu out to "
        "use the core named in the file or the generic rules."
    )
