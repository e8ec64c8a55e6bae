"""Reading ``perf stat`` output into our logical counts.

Owns: parsing ``perf stat -x<sep>`` CSV (``-x,``, ``-x;`` ...), ``perf stat -j`` JSON
lines and the plain text report (locale digit grouping ``1,234`` / ``1.234`` /
``1 234`` with narrow or plain no-break spaces, ``(57.14%)`` multiplexing,
``<not supported>`` / ``<not counted>``, ``# ...`` shadow comments, ``seconds time
elapsed``; two numbers of one line never read as one); mapping perf's event names
(generic names, perf's hardware-cache names in every form perf decodes, Arm sysfs names,
``pmu/event/`` and ``pmu/event=0x11/`` forms, raw ``r11`` codes, ``:u``-style
modifiers, LL/L3 names) to the logical names of :mod:`pmu.events`; the level-1
top-down fractions perf prints itself (``--topdown`` tables, ``-M TopdownL1`` and
perf 6.x ``TopdownL1`` shadow comments, Intel ``topdown-*``/``slots`` events); handing
Arm topdown-tool output to :mod:`topdown_tool` and its runs' metrics on; keeping
several runs of one file apart (one :class:`PerfStat` per ``Performance counter stats
for`` block, never summed); combining runs of one command whose events were split
between them (:func:`combine_runs`: same target, instructions agreeing within
:data:`BORROW_TOLERANCE`, a run lending the counts it has to the others); and turning a
run into counts, unavailable reasons, a :class:`core.metrics.MetricContext` and its metrics,
and several runs into one set of metrics (each metric derived within a run or a combined
group, then the median over them), with what the counts cannot support in words
(:meth:`PerfStatReport.limits`).

Must not: run perf, or judge anything.

Facts used: on Arm, Linux maps the generic events onto PMUv3 events as
``drivers/perf/arm_pmuv3.c`` says (``cache-references`` = L1D_CACHE,
``cache-misses`` = L1D_CACHE_REFILL, ``branches`` = PC_WRITE_RETIRED,
``branch-misses`` = BR_MIS_PRED, ``dTLB-load-misses`` = L1D_TLB_REFILL); on x86
``cache-*`` count the LLC and ``dTLB-load-misses`` the walks. perf prints counts
already scaled by time_enabled/time_running, with the running percentage beside them.
perf stat printed task-clock / cpu-clock in milliseconds: as ``msec task-clock`` (perf
4.14+), ``task-clock (msec)`` (perf 3.13-4.13) and a bare ``task-clock`` with six
decimals (perf 3.x and older, ``13141.967743``). Some recent builds print it bare as an
integer count of **nanoseconds** (``2,868,419,549  task-clock  # 0.999 CPUs
utilized`` over a 2.87 s run). A bare value is therefore ms when it has a fraction and
ns when it is an integer, and where perf printed "CPUs utilized" and the elapsed time,
the unit that reproduces perf's own figure decides.
"""

from __future__ import annotations

import itertools
import json
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..core.errors import InferperfError
from ..core.metrics import (
    METRICS,
    N2_REVISION_EVENTS,
    N2_REVISION_ROWS,
    MetricContext,
    compute,
    n2_revision,
)
from ..pmu.events import CATALOGUE, KERNEL_ONLY_SOFTWARE, kernel_only_reason
from ..pmu.trust import overcounted_stalls, silent_zeros, unsupported_stalls
from .tma_bottlenecks import PRINTED as BOTTLENECK_NAMES
from .tma_bottlenecks import fraction as bottleneck_fraction
from .tma_bottlenecks import metric_of as bottleneck_metric

NOT_SUPPORTED = "<not supported>"
NOT_COUNTED = "<not counted>"
NO_RUN_TIME = "<no run time>"  # simpleperf's 0 with an empty comment (ingest.simpleperf)
REASONS = {
    NO_RUN_TIME: "simpleperf stat: 0 with no run time (never got a counter: more hardware "
    "events than counters, or the task never ran on that PMU's CPUs)",
    NOT_SUPPORTED: "perf stat: <not supported> (the kernel or this CPU has no such event)",
    NOT_COUNTED: "perf stat: <not counted> (never got a counter: the group did not fit, or "
    "the task never ran on that PMU's CPUs)",
}


class PerfStatError(InferperfError, ValueError):
    """Text that is not perf stat output, or a file that cannot be read."""


#: What a file without one counter line (or topdown-tool metric) gets told.
NO_COUNTERS = (
    "no perf stat counter lines found (expected 'perf stat' text output, "
    "'perf stat -x,' CSV, 'perf stat -j' JSON, simpleperf stat's text or --csv, Arm "
    "topdown-tool's or Intel toplev's output)"
)


# -- event names -----------------------------------------------------------------------

_GENERIC: dict[str, str] = {
    "cycles": "cycles",
    "cpu-cycles": "cycles",
    "instructions": "instructions",
    "branches": "branches",
    "branch-instructions": "branches",
    "branch-misses": "branch_misses",
    "stalled-cycles-frontend": "stall_frontend",
    "idle-cycles-frontend": "stall_frontend",
    "stalled-cycles-backend": "stall_backend",
    "idle-cycles-backend": "stall_backend",
    # The one generic stall event of April 2011 (perf of the 2.6.39/3.0 merge window),
    # before Linux commit 8f622422 split it: on Nehalem it was UOPS_EXECUTED
    # .CORE_ACTIVE_CYCLES,c=1,i=1 (cycles with no uop executed), which that commit made
    # PERF_COUNT_HW_STALLED_CYCLES_BACKEND; perf printed it as "of all cycles are idle".
    "stalled-cycles": "stall_backend",
    "task-clock": "task_clock",
    "cpu-clock": "task_clock",
    "page-faults": "page_faults",
    "faults": "page_faults",
    "major-faults": "major_faults",
    "context-switches": "context_switches",
    "cs": "context_switches",
    "cpu-migrations": "cpu_migrations",
    "migrations": "cpu_migrations",
    "task-clock-msecs": "task_clock",  # perf 2.6.3x printed the unit in the name
    # Arm PMUv3 LL/L3 names that are not in the catalogue's preferred list: L3D_CACHE
    # (0x2B) and L3D_CACHE_REFILL (0x2A) count the L3 of cores with one, LL_CACHE (0x32) /
    # LL_CACHE_MISS (0x33) the last level (Linux common-and-microarch.json); perf lists
    # them as l3d_cache, l3d_cache_refill, ll_cache, ll_cache_miss.
    "l3d_cache": "llc_read",
    "l3d_cache_rd": "llc_read",
    "ll_cache": "llc_read",
    "l3d_cache_refill": "llc_miss",
    "l3d_cache_refill_rd": "llc_miss",
    "ll_cache_miss": "llc_miss",
    "l3d_cache_lmiss_rd": "llc_miss",
    # Intel named events that are the generic counts (Intel SDM vol. 3B: CPU_CLK_UNHALTED
    # .THREAD, INST_RETIRED.ANY; RESOURCE_STALLS.ANY counts "resource-related stall
    # cycles" at allocation, i.e. cycles the backend refused new uops).
    "cpu_clk_unhalted.thread": "cycles",
    "cpu_clk_unhalted.core": "cycles",
    "inst_retired.any": "instructions",
    "resource_stalls.any": "stall_backend",
    # Cycles stalled on a demand load that missed the L3 (Intel perfmon: Skylake to Ice
    # Lake CYCLE_ACTIVITY.STALLS_L3_MISS, Golden Cove on MEMORY_ACTIVITY.STALLS_L3_MISS).
    "cycle_activity.stalls_l3_miss": "stall_l3_miss",
    "memory_activity.stalls_l3_miss": "stall_l3_miss",
    # ... and on a load that missed the L1D, the L2 (the same event lists).
    "cycle_activity.stalls_l1d_miss": "stall_l1d_miss",
    "memory_activity.stalls_l1d_miss": "stall_l1d_miss",
    "cycle_activity.stalls_l2_miss": "stall_l2_miss",
    "memory_activity.stalls_l2_miss": "stall_l2_miss",
    # Haswell's and Broadwell's names of the L1D and L2 ones (*_PENDING: a demand load
    # miss outstanding), and the cycles stalled with any load outstanding (Skylake on
    # CYCLE_ACTIVITY.STALLS_MEM_ANY, Golden Cove on EXE_ACTIVITY.BOUND_ON_LOADS; Haswell
    # STALLS_LDM_PENDING): Intel TMA L1_Bound is that less the L1D misses' stalls (Linux
    # perf x86 hsw/skl/icl/spr metrics: tma_l1_bound).
    "cycle_activity.stalls_l1d_pending": "stall_l1d_miss",
    "cycle_activity.stalls_l2_pending": "stall_l2_miss",
    "cycle_activity.stalls_mem_any": "stall_mem_any",
    "exe_activity.bound_on_loads": "stall_mem_any",
    "cycle_activity.stalls_ldm_pending": "stall_mem_any",
    # Cycles a page walk for a load / a store was active (Intel perfmon, Skylake on):
    # the walk term of Intel TMA's DTLB_Load / DTLB_Store (tma_dtlb_load = (9 x
    # DTLB_LOAD_MISSES.STLB_HIT + DTLB_LOAD_MISSES.WALK_ACTIVE) / CLKS, capped).
    "dtlb_load_misses.walk_active": "dtlb_load_walk_cycles",
    "dtlb_store_misses.walk_active": "dtlb_store_walk_cycles",
    # ... their names before Skylake (Sandy Bridge to Broadwell: DTLB_LOAD_MISSES /
    # DTLB_STORE_MISSES.WALK_DURATION, "cycles when PMH is busy with page walks", the
    # term of those cores' TMA DTLB_Load / DTLB_Store; Intel perfmon event lists).
    "dtlb_load_misses.walk_duration": "dtlb_load_walk_cycles",
    "dtlb_store_misses.walk_duration": "dtlb_store_walk_cycles",
    # Cycles the divider was busy (Intel perfmon: Skylake to Ice Lake ARITH.DIVIDER_ACTIVE,
    # Golden Cove on ARITH.DIV_ACTIVE, Haswell / Broadwell ARITH.FPU_DIV_ACTIVE) and
    # cycles the store buffer held the core up (Skylake on EXE_ACTIVITY.BOUND_ON_STORES,
    # Haswell / Broadwell RESOURCE_STALLS.SB): Intel TMA's Divider and Store_Bound over
    # the cycles (Linux perf x86 metrics: tma_divider, tma_store_bound).
    "arith.divider_active": "divider_active",
    "arith.div_active": "divider_active",
    "arith.fpu_div_active": "divider_active",
    # Cycles stalled on PAUSE, the spin-wait hint (Golden Cove on: CPU_CLK_UNHALTED.PAUSE,
    # Intel TMA's Slow_Pause over CLKS in Linux perf's x86 metrics; Skylake's is
    # MISC_RETIRED.PAUSE_INST x a per-core cost, read as printed only).
    "cpu_clk_unhalted.pause": "pause_cycles",
    "exe_activity.bound_on_stores": "store_bound_cycles",
    "resource_stalls.sb": "store_bound_cycles",
    # AMD Zen core events (Linux tools/perf/pmu-events/arch/x86/amdzen4/, amdzen5/:
    # core.json, branch.json, pipeline.json). ls_not_halted_cyc counts core cycles not
    # in halt, ex_ret_instr retired instructions, ex_ret_brn / ex_ret_brn_misp retired
    # branches and mispredicted ones. Zen 4 on, the dispatch slots: ex_ret_ops retired
    # ops, de_src_op_disp.all ops dispatched, de_no_dispatch_per_slot.* the slots left
    # empty by reason; core.metrics.TOPDOWN_MODELS turns them into level-1 shares with
    # the core's dispatch width (their slot events stand where Arm's STALL_SLOT_* do).
    # ex_no_retire.load_not_complete / ex_no_retire.not_complete split the backend's
    # slots into memory and core (amdzen4/amdzen5 pipeline.json, backend_bound_memory).
    "ls_not_halted_cyc": "cycles",
    "ex_ret_instr": "instructions",
    "ex_ret_brn": "branches",
    "ex_ret_brn_misp": "branch_misses",
    "ex_ret_ops": "op_retired",
    "de_src_op_disp.all": "op_spec",
    "de_no_dispatch_per_slot.no_ops_from_frontend": "stall_slot_frontend",
    "de_no_dispatch_per_slot.backend_stalls": "stall_slot_backend",
    "ex_no_retire.load_not_complete": "no_retire_load",
    "ex_no_retire.not_complete": "no_retire_any",
    # Pipeline restarts (Zen 4 resyncs_or_nc_redirects, Zen 5 bp_redirects.resync): with
    # the mispredicted branches they split bad speculation (bad_speculation_mispredicts).
    "resyncs_or_nc_redirects": "pipeline_restarts",
    "bp_redirects.resync": "pipeline_restarts",
    # Ops retired from microcode: with ex_ret_ops they split retiring (retiring_microcode,
    # amdzen4/amdzen5 pipeline.json).
    "ex_ret_ucode_ops": "op_retired_ucode",
}
# AMD's names without a dot, which only AMD's x86 PMU has (the ones with a dot are read
# as x86 already, see EventName.arch_hint).
_AMD_NAMES = frozenset(
    (
        "ls_not_halted_cyc",
        "ex_ret_instr",
        "ex_ret_brn",
        "ex_ret_brn_misp",
        "ex_ret_ops",
        "ex_ret_ucode_ops",
        "resyncs_or_nc_redirects",
    )
)
_GENERIC_BY_ARCH: dict[str, dict[str, str]] = {
    # drivers/perf/arm_pmuv3.c armv8_pmuv3_perf_map
    "arm": {"cache-references": "l1d_access", "cache-misses": "l1d_refill"},
    # x86: generic cache-* are LLC (arch/x86/events/intel/core.c intel_perfmon_event_map)
    "x86": {"cache-references": "llc_read", "cache-misses": "llc_miss"},
}
# Where a run counted both, a read event of the same logical name wins over these: on
# x86 cache-misses is LONGEST_LAT_CACHE.MISS, which counts code reads, RFOs and hardware
# prefetches with the demand loads (Intel perfmon event lists), while LLC-load-misses
# counts the data reads the MPKI thresholds are about (the AWS perfrunbook's LLC MPKI
# is LL_CACHE_MISS_RD, reads); on Arm cache-misses is L1D_CACHE_REFILL and
# L1-dcache-load-misses the same event, or its read-only _RD form where the core's
# cache map has one (armv8_a57_perf_cache_map in drivers/perf/arm_pmuv3.c).
_GENERIC_CACHE = frozenset(("cache-references", "cache-misses"))

# perf's generic hardware-cache events. perf reads such a name as
# <cache>[-<op>][-<result>], op and result each optional and in either order, a missing
# op meaning a read and a missing result an access (tools/perf/util/parse-events.c,
# parse_events__decode_legacy_cache(): "Fall back to reads" / "Fall back to accesses").
# So "L1-icache-misses" is the L1I read-miss counter that "L1-icache-load-misses"
# opens, and "LLC-misses", "dTLB-misses", "L1-dcache" are LLC-load-misses,
# dTLB-load-misses, L1-dcache-loads. The aliases of each part are perf's own tables
# (tools/perf/util/evsel.c: evsel__hw_cache, evsel__hw_cache_op, evsel__hw_cache_result),
# matched without case as perf's parse_aliases() does (strncasecmp); "L2" is perf's
# alias of the last-level cache, not the L2.
_HW_CACHE: dict[str, str] = {
    **dict.fromkeys(("l1-dcache", "l1-d", "l1d", "l1-data"), "l1d"),
    **dict.fromkeys(("l1-icache", "l1-i", "l1i", "l1-instruction"), "l1i"),
    **dict.fromkeys(("llc", "l2"), "ll"),
    **dict.fromkeys(("dtlb", "d-tlb", "data-tlb"), "dtlb"),
    **dict.fromkeys(("itlb", "i-tlb", "instruction-tlb"), "itlb"),
    **dict.fromkeys(("branch", "branches", "bpu", "btb", "bpc"), "bpu"),
    "node": "node",
}
_HW_CACHE_OP: dict[str, str] = {
    **dict.fromkeys(("load", "loads", "read"), "read"),
    **dict.fromkeys(("store", "stores", "write"), "write"),
    **dict.fromkeys(("prefetch", "prefetches", "speculative-read", "speculative-load"), "prefetch"),
}
_HW_CACHE_RESULT: dict[str, str] = {
    **dict.fromkeys(("refs", "reference", "ops", "access"), "access"),
    **dict.fromkeys(("misses", "miss"), "miss"),
}
# What the kernel counts for a read of (cache, result), per architecture. Arm:
# drivers/perf/arm_pmuv3.c armv8_pmuv3_perf_cache_map (L1D_CACHE / L1D_CACHE_REFILL,
# L1I_CACHE / L1I_CACHE_REFILL, LL_CACHE_RD / LL_CACHE_MISS_RD, L1D_TLB /
# L1D_TLB_REFILL, L1I_TLB / L1I_TLB_REFILL, BR_PRED / BR_MIS_PRED; the Cortex-A53/A57/
# A72 maps count the _RD forms of the same events). x86 (arch/x86/events/intel/core.c,
# arch/x86/events/amd/core.c hw_cache_event_ids): the DTLB / ITLB read misses are page
# walks, while Arm's are L1 TLB refills (many of them hit the L2 TLB: l1d_tlb_refill,
# l1i_tlb_refill). Only reads are mapped: stores and prefetches count other things.
_HW_CACHE_READS: dict[str, dict[tuple[str, str], str]] = {
    "arm": {
        ("l1d", "access"): "l1d_access",
        ("l1d", "miss"): "l1d_refill",
        ("l1i", "access"): "l1i_access",
        ("l1i", "miss"): "l1i_refill",
        ("ll", "access"): "llc_read",
        ("ll", "miss"): "llc_miss",
        ("dtlb", "access"): "dtlb_access",
        ("dtlb", "miss"): "l1d_tlb_refill",
        ("itlb", "access"): "itlb_access",
        ("itlb", "miss"): "l1i_tlb_refill",
        ("bpu", "access"): "branches",
        ("bpu", "miss"): "branch_misses",
    },
    "x86": {
        ("l1d", "access"): "l1d_access",
        ("l1d", "miss"): "l1d_refill",
        ("l1i", "access"): "l1i_access",
        ("l1i", "miss"): "l1i_refill",
        ("ll", "access"): "llc_read",
        ("ll", "miss"): "llc_miss",
        ("dtlb", "access"): "dtlb_access",
        ("dtlb", "miss"): "dtlb_walk",
        ("itlb", "access"): "itlb_access",
        ("itlb", "miss"): "itlb_walk",
        ("bpu", "access"): "branches",
        ("bpu", "miss"): "branch_misses",
    },
}


def _longest_prefix(text: str, table: Mapping[str, str]) -> tuple[str, str] | None:
    """(value, rest) of the longest alias of ``table`` that ``text`` starts with as a
    whole ``-``-separated part; None when none does."""
    for alias in sorted(table, key=len, reverse=True):
        if text == alias:
            return table[alias], ""
        if text.startswith(alias + "-"):
            return table[alias], text[len(alias) + 1 :]
    return None


def decode_hw_cache(name: str) -> tuple[str, str, str] | None:
    """(cache, op, result) of a perf generic hardware-cache event name as perf decodes it
    (``L1-icache-misses`` -> ``("l1i", "read", "miss")``); None for any other name."""
    found = _longest_prefix(name.lower(), _HW_CACHE)
    if found is None:
        return None
    cache, rest = found
    op: str | None = None
    result: str | None = None
    while rest:
        step = _longest_prefix(rest, _HW_CACHE_OP) if op is None else None
        if step is not None:
            op, rest = step
            continue
        step = _longest_prefix(rest, _HW_CACHE_RESULT) if result is None else None
        if step is None:
            return None  # a part that is neither (or a second op / result)
        result, rest = step
    return cache, op or "read", result or "access"


def _hw_cache_logical(name: str, arch: str) -> str | None:
    """Our logical name of a hw-cache event read (see _HW_CACHE_READS), else None."""
    decoded = decode_hw_cache(name)
    if decoded is None or decoded[1] != "read":
        return None
    return _HW_CACHE_READS.get(arch, _HW_CACHE_READS["arm"]).get((decoded[0], decoded[2]))


_ARM_NAMES: dict[str, str] = {}
_ARM_CODES: dict[int, str] = {}
for _logical, _spec in CATALOGUE.items():
    for _name, _code in _spec.arm:
        _ARM_NAMES.setdefault(_name, _logical)
        _ARM_CODES.setdefault(_code, _logical)
# Raw codes of the LL/L3 names above (Arm ARM PMUv3 common events).
for _code, _logical in (
    (0x2B, "llc_read"),
    (0x2A, "llc_miss"),
    (0x32, "llc_read"),
    (0x33, "llc_miss"),
):
    _ARM_CODES.setdefault(_code, _logical)

# Intel top-down level-1 events. Ice Lake and later: slots and the topdown-* fractions of
# it (Linux tools/perf/Documentation/topdown.txt). Sandy Bridge to Skylake: the generic
# topdown-* slot counts of perf 4.6+ (Andi Kleen, "perf stat: Add computation of TopDown
# formulas", lkml 2016-01): FrontendBound = fetch-bubbles / total-slots, BadSpeculation =
# (slots-issued - slots-retired + recovery-bubbles) / total-slots, Retiring =
# slots-retired / total-slots, BackendBound = 1 - the other three. Sapphire Rapids and
# Alder Lake's P-cores add level 2 in the same slots (topdown.txt, "Topdown Level 2"):
# tma_memory_bound = topdown-mem-bound over the slots, tma_core_bound = max(0,
# tma_backend_bound - tma_memory_bound), tma_branch_mispredicts = topdown-br-mispredict
# over the slots, tma_machine_clears = max(0, tma_bad_speculation -
# tma_branch_mispredicts) (Linux perf x86 sapphirerapids metrics).
_TOPDOWN_EVENTS = frozenset(
    (
        "slots",
        "topdown-mem-bound",
        "topdown-br-mispredict",
        "topdown-fetch-lat",
        "topdown-retiring",
        "topdown-bad-spec",
        "topdown-fe-bound",
        "topdown-be-bound",
        "topdown-total-slots",
        "topdown-slots-issued",
        "topdown-slots-retired",
        "topdown-fetch-bubbles",
        "topdown-recovery-bubbles",
    )
)

# perf -M prints the slots by Intel's name (Ice Lake on: TOPDOWN.SLOTS, event 0x00 umask
# 0x4, the fixed counter that perf's "slots" opens: arch/x86/events/intel/core.c,
# EVENT_ATTR_STR(slots, slots, "event=0x00,umask=0x4")).
_TOPDOWN_ALIASES = {"topdown.slots": "slots"}

# Terms of a pmu/event,term=.../ event that change what it counts (x86 format
# attributes in /sys/bus/event_source/devices/cpu/format: cmask, inv, edge, any, umask;
# Intel's ldlat and frontend; perf's own "name=" and "period=" change nothing counted).
_COUNT_CHANGING = frozenset(("cmask", "inv", "edge", "any", "umask", "ldlat", "frontend"))
_PMU_EVENT = re.compile(r"(?P<pmu>[A-Za-z0-9_.\-]+)/(?P<terms>[^/]*)/(?P<mods>[A-Za-z]*)")
_RAW = re.compile(r"r(?P<code>[0-9a-fA-F]{1,4})")
# Arm's PMUs name their core (armv8_cortex_a72); Apple's as Linux registers them too
# (drivers/perf/apple_m1_cpu_pmu.c: apple_icestorm_pmu, apple_firestorm_pmu, and M2's
# apple_blizzard_pmu, apple_avalanche_pmu).
_ARM_PMU = re.compile(
    r"armv[89]_(?P<core>(?:cortex|neoverse)_[a-z]\d+[a-z]?)"
    r"|(?P<apple>apple_(?:icestorm|firestorm|blizzard|avalanche))_pmu"
)
#: Intel hybrid's two kinds of core, as perf names their PMUs; the P-cores are the kind
#: read where the two cannot be added up (toplev reads the same, :mod:`toplev`).
P_CORE_PMU, E_CORE_PMU = "cpu_core", "cpu_atom"
_X86_PMUS = ("cpu", P_CORE_PMU, E_CORE_PMU)
# PMUs that only x86 kernels register (arch/x86/events/): msr.c "msr", rapl.c and
# amd/power.c "power", intel/cstate.c "cstate_core"/"cstate_pkg"/"cstate_module",
# intel/uncore*.c "uncore_*", amd/uncore.c and amd/iommu.c "amd_*", amd/ibs.c
# "ibs_fetch"/"ibs_op", intel/pt.c and bts.c "intel_pt"/"intel_bts".
_X86_ONLY_PMUS = ("msr", "power", "cstate_", "uncore_", "amd_", "ibs_", "intel_")


@dataclass(frozen=True)
class EventName:
    """A perf event name taken apart."""

    text: str  # as printed
    pmu: str | None
    base: str  # lower case, modifiers and PMU removed ("cpu_cycles", "r11", "event=0x11")
    modifiers: str
    code: int | None  # raw Arm event code, for rNNNN and pmu/event=0xNN/

    @property
    def arch_hint(self) -> str | None:
        pmu = (self.pmu or "").lower()
        if pmu.startswith(("armv8_", "armv9_", "arm_", "apple_")):
            return "arm"
        if pmu in _X86_PMUS or pmu.startswith(_X86_ONLY_PMUS):
            return "x86"
        if self.pmu is None and self.base in _ARM_NAMES:
            return "arm"
        if self.base in _AMD_NAMES:
            return "x86"
        if self.base in _TOPDOWN_EVENTS or re.fullmatch(r"[a-z0-9_]+\.[a-z0-9_.]+", self.base):
            return "x86"  # Intel's EVENT.UMASK names (uops_issued.any) and topdown events
        return None

    @property
    def core_hint(self) -> str | None:
        match = _ARM_PMU.match((self.pmu or "").lower())
        if not match:
            return None
        return (match.group("core") or match.group("apple")).replace("_", "-")


def split_event(text: str) -> EventName:
    """``armv8_pmuv3_0/l1d_cache_refill/u`` -> pmu, base, modifiers (and a code if raw)."""
    name = text.strip()
    match = _PMU_EVENT.fullmatch(name)
    if match:
        pmu, terms, mods = match.group("pmu"), match.group("terms").lower(), match.group("mods")
        code = None
        term = re.search(r"(?:^|,)(?:event|config)=(0x[0-9a-f]+|\d+)", terms)
        if term:
            code = int(term.group(1), 0)
        base = terms.split(",", 1)[0]
        if any(t.partition("=")[0].strip() in _COUNT_CHANGING for t in terms.split(",")[1:]):
            # cpu/de_no_dispatch_per_slot.no_ops_from_frontend,cmask=0x6/ counts cycles
            # with all six slots empty, not the slots: another event than its first term
            base = terms
        # perf names an event of a hybrid x86 machine by each core PMU with the
        # modifiers inside the slashes: `-e cycles:u` prints cpu_core/cycles:u/ and
        # cpu_atom/cycles:u/ (tools/perf/util/parse-events.c, hybrid PMU wildcarding).
        base, _, inner = base.partition(":")
        return EventName(name, pmu, base, inner + (mods or ""), code)
    base, _, mods = name.partition(":")
    base = base.lower()
    raw = _RAW.fullmatch(base)
    return EventName(name, None, base, mods, int(raw.group("code"), 16) if raw else None)


def logical_name(event: str | EventName, arch: str = "arm") -> str | None:
    """Our logical name for a perf event name, or None when we have none for it.

    Raw codes (``r11``, ``pmu/event=0x11/``) are read with the Arm PMUv3 code table and
    only when ``arch`` is ``"arm"``: on x86 the same digits mean another event.
    """
    ev = split_event(event) if isinstance(event, str) else event
    if ev.base in _GENERIC:
        return _GENERIC[ev.base]
    if ev.base in _GENERIC_BY_ARCH.get(arch, {}):
        return _GENERIC_BY_ARCH[arch][ev.base]
    hw_cache = _hw_cache_logical(ev.base, arch)
    if hw_cache is not None:
        return hw_cache
    if ev.base in _ARM_NAMES:
        return _ARM_NAMES[ev.base]
    if ev.code is not None and arch == "arm":
        return _ARM_CODES.get(ev.code)
    return None


# -- numbers ----------------------------------------------------------------------------

# Marks that only ever group digits: no-break and narrow spaces, and the apostrophes of
# the Swiss locales (glibc localedata de_CH, fr_CH, it_CH: thousands_sep "<U2019>",
# earlier "<U0027>").
_GROUPING_ONLY = ("\u00a0", "\u202f", "\u2009", "'", "\u2019", " ")


def parse_number(token: str, decimal: str | None = None) -> float:
    """A number as perf prints it in any locale: ``1,234,567``, ``1.234.567,89``, ``1 234``.

    ``decimal`` is the locale's decimal mark when known (``.`` or ``,``). Without it, a
    single separator followed by exactly three digits is read as digit grouping (perf
    prints counts as integers), anything else as the decimal mark.
    """
    text = token.strip()
    for ch in _GROUPING_ONLY:
        text = text.replace(ch, "")
    if not text or not re.fullmatch(r"[0-9.,]+", text) or not text[0].isdigit():
        raise ValueError(f"not a number: {token!r}")
    if decimal is None:
        if "." in text and "," in text:
            decimal = "." if text.rfind(".") > text.rfind(",") else ","
        elif text.count(".") + text.count(",") == 0:
            decimal = "."
        else:
            sep = "." if "." in text else ","
            tail = text.rpartition(sep)[2]
            decimal = "" if (text.count(sep) > 1 or len(tail) == 3) else sep
    grouping = {".": ",", ",": ".", "": ".,"}[decimal]
    for ch in grouping:
        text = text.replace(ch, "")
    if decimal == ",":
        text = text.replace(",", ".")
    if text.count(".") > 1:
        raise ValueError(f"not a number: {token!r}")
    return float(text)


def _is_number(token: str) -> bool:
    try:
        parse_number(token)
    except ValueError:
        return False
    return True


def _is_value(token: str) -> bool:
    return token.strip() in (NOT_SUPPORTED, NOT_COUNTED) or _is_number(token)


def _looks_like_event(token: str) -> bool:
    token = token.strip()
    return bool(token) and not token[0].isdigit() and token[0] not in "<(#%"


# -- records ------------------------------------------------------------------------------

_MS_EVENTS = ("task-clock", "cpu-clock", "task-clock-msecs")
_TIME_SCALE = {
    "msec": 1e6,
    "ms": 1e6,
    "us": 1e3,
    "usec": 1e3,
    "ns": 1.0,
    "nsec": 1.0,
    "s": 1e9,
    "sec": 1e9,
    "seconds": 1e9,
}


@dataclass(frozen=True)
class PerfStatEntry:
    """One counter line of a perf stat report."""

    event: EventName
    value: float | None  # perf's (already scaled) value; None when not counted/supported
    unit: str
    status: str  # "counted" | NOT_SUPPORTED | NOT_COUNTED
    running_pct: float | None = None  # share of the time the event had a counter
    # A text line repeating an event of the same run (perf -M prints an event once per
    # metric group that needs it): the copies count one thing, so they are averaged.
    repeated: bool = False

    @property
    def value_in_base_units(self) -> float | None:
        """Times in ns, everything else as printed.

        perf prints task-clock / cpu-clock in ms; the text reader gives a bare one its unit
        (ms or ns, see the module docstring); any other bare one is read as ms.
        """
        if self.value is None:
            return None
        unit = self.unit.strip().lower()
        if not unit and self.event.base in _MS_EVENTS:
            unit = "msec"
        return self.value * _TIME_SCALE.get(unit, 1.0)


@dataclass(frozen=True)
class PerfStat:
    """One parsed perf stat run, and its counts under our logical names."""

    format: str  # "csv" | "json" | "text" | one of TOOL_FORMATS
    entries: tuple[PerfStatEntry, ...]
    arch: str  # "arm" | "x86"
    elapsed_s: float | None = None
    user_s: float | None = None
    sys_s: float | None = None
    separator: str | None = None
    counts: dict[str, float] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)
    multiplexed: dict[str, float] = field(default_factory=dict)  # logical -> running %
    unmapped: tuple[str, ...] = ()
    # events that count different things on Arm and x86, in a file that shows neither,
    # read as Arm's, which does not overstate either (ARCH_DEPENDENT): "cache-misses (on
    # x86: last-level misses)"
    ambiguous: tuple[str, ...] = ()
    superseded: tuple[str, ...] = ()  # events whose logical name another event gave first
    # the core PMUs of a hybrid machine whose lines were not read, with the share of the
    # time they counted (_minor_cores)
    other_cores: dict[str, float] = field(default_factory=dict)
    # Metrics the tool computed itself, under our names: perf's top-down fractions
    # (0..1; levels 1 to 3, :data:`_TOPDOWN_NAMES`), or those derived from Intel's
    # topdown-* events; every metric Arm's topdown-tool or Intel's toplev printed that we
    # have (:mod:`topdown_tool`, :mod:`toplev`).
    perf_metrics: dict[str, float] = field(default_factory=dict)
    title: str = ""  # "Performance counter stats for './stride'"
    core_named: str | None = None  # the core the output names in words ("neoverse-v3")
    # the instruction set the output shows other than by its event names: the tool that
    # wrote it (TOOL_FORMATS), or Intel's tma_ metric names perf printed
    printed_isa: str | None = None
    # what the tool that wrote the counts said they cannot support, in words (simpleperf's
    # warning that its events outnumbered the counters, with no share printed)
    tool_limits: tuple[str, ...] = ()
    # what a counting tool's command line above its output counted (simpleperf's:
    # "system-wide", "attached"), where perf's title says it (run_target)
    scope: str | None = None
    # The row of a Neoverse N2 revision the file showed (PerfStatReport.on_core), whose
    # level-1 formula the counts take when the run is read as "neoverse-n2", and why.
    revision_row: str = ""
    revision_why: str = ""

    @property
    def counts_every_cpu(self) -> bool:
        """Whether perf counted CPUs (``-a``, ``-C``) rather than a task (its title)."""
        return _counts_every_cpu(self.title)

    @property
    def core_hint(self) -> str | None:
        """The core named by a PMU in the event names (``armv8_cortex_a72`` -> cortex-a72)."""
        hints = [
            e.event.core_hint
            for e in self.entries
            if e.event.core_hint and e.event.pmu not in self.other_cores
        ]
        if not hints and self.core_named:
            hints = [self.core_named]
        return "+".join(dict.fromkeys(hints)) if hints else None

    @property
    def wall_ns(self) -> float:
        if self.elapsed_s is not None:
            return self.elapsed_s * 1e9
        duration = next(
            (e for e in self.entries if e.event.base == "duration_time" and e.value is not None),
            None,
        )
        if duration is not None:
            return float(duration.value_in_base_units or 0.0)
        return 0.0

    def context(self, core: str = "", calls: int = 1) -> MetricContext:
        """The MetricContext of this run (a perf stat run knows no latency); a Neoverse N2
        takes the row of the revision the file showed (:attr:`revision_row`)."""
        core = core or self.core_hint or ""
        if core == "neoverse-n2" and self.revision_row:
            core = self.revision_row
        return MetricContext(calls=calls, wall_ns=self.wall_ns, core=core)

    def metrics(
        self, core: str = "", calls: int = 1, borrowed: Mapping[str, float] | None = None
    ) -> dict[str, float]:
        """Every metric of this run; perf's own top-down fractions fill what the counts
        cannot give (our formulas from the counts win where both exist).

        ``borrowed``: counts this run lacks, taken from other runs of the same command
        (:func:`combine_runs`); the run's own counts always win.

        A level-1 fraction of slots the counts put outside 0..1 is impossible: one of its
        events miscounts (Neoverse N2 r0p0 counts one STALL_SLOT per cycle too many, Arm
        erratum notice SDEN1982442, which perf corrects from the MIDR a saved file does
        not carry). It is dropped, and perf's own value, when printed, stands instead.
        """
        counts = {**borrowed, **self.counts} if borrowed else self.counts
        if "task_clock" not in counts and (cpu_ns := self._footer_cpu_ns()) is not None:
            counts = {**counts, "task_clock": cpu_ns}
        ctx = self.context(core, calls)
        out = compute(self._cache_level_of_generic_events(counts, ctx.core), ctx)
        for name in _LEVEL1:
            value = out.get(name)
            if value is not None and not -_FRACTION_SLACK <= value <= 1 + _FRACTION_SLACK:
                del out[name]
        for name, value in self.perf_metrics.items():
            out.setdefault(name, value)
        if self.counts_every_cpu:
            # Counting CPUs (-a, -C), task-clock / cpu-clock runs on each counted CPU for
            # the whole window, idle or not, so perf's "CPUs utilized" is the number of
            # CPUs counted ('perf stat -a sleep 1' prints the machine's CPU count): not
            # the CPUs a program kept busy, which the rules on threads read it as.
            out.pop("cpu_utilisation", None)
        if (cpu_ns := self._footer_cpu_ns()) is not None and self.sys_s is not None:
            out["kernel_share"] = self.sys_s * 1e9 / cpu_ns
        return out

    def _cache_level_of_generic_events(
        self, counts: Mapping[str, float], core: str
    ) -> Mapping[str, float]:
        """``counts`` with perf's generic cache-references / cache-misses at the level
        the named core counts them. On AMD cores they are L2 events, not last-level ones
        as on Intel (LONGEST_LAT_CACHE): PMCx060, L2 cache requests, and PMCx064 umask
        0x09, L2 misses of data reads and instruction fills (Zen 1 to 5: 0xff60 /
        0x0964; families 10h to 16h: 0x077d / 0x077e, requests to and misses of the L2;
        Linux arch/x86/events/amd/core.c, amd_*_perfmon_event_map)."""
        if self.arch != "x86" or not core.startswith("amd"):
            return counts
        generic = {
            logical_name(e.event, "x86")
            for e in self.entries
            if e.event.base in _GENERIC_CACHE and e.event.text not in self.superseded
        }
        out = dict(counts)
        for llc, l2 in (("llc_read", "l2_access"), ("llc_miss", "l2_refill")):
            if llc in generic and llc in out and l2 not in out:
                out[l2] = out.pop(llc)
        return out

    def _footer_cpu_ns(self) -> float | None:
        """The CPU time task-clock would have counted, from perf's footer (user + sys, ns),
        where it stands for the counted work: a command perf started and counted alone.

        perf prints ``seconds user`` and ``seconds sys`` only for a command it started,
        from the rusage of that child, all its threads (``print_footer`` in
        tools/perf/util/stat-display.c, ``ru_utime`` / ``ru_stime`` of wait4): the CPU
        time task-clock counts, over the same window. Not for CPUs counted whole (``-a``,
        ``-C``), whose counts are every task's while the footer is the command's rusage
        only (``perf stat -a sleep 1``'s footer is sleep's, nearly all sys). It stands in
        for task-clock where the run did not count it (the CPUs busy, the rates per
        CPU-second) and gives the kernel's share of the CPU time."""
        if self.user_s is None or self.sys_s is None or self.counts_every_cpu:
            return None
        cpu_ns = (self.user_s + self.sys_s) * 1e9
        return cpu_ns if cpu_ns > 0 else None


_LEVEL1 = ("retiring", "bad_speculation", "frontend_bound", "backend_bound")
# How far outside 0..1 a level-1 fraction from the counts may fall before it is taken for
# a miscounting event rather than rounding (the branch terms of Arm's formulas and
# multiplexed estimates can push a true 0 or 1 slightly past the edge).
_FRACTION_SLACK = 0.05

# Why a Neoverse N2's slot events are not used where the file does not show its revision.
N2_REVISION_UNKNOWN = (
    "not known to count the slots of its name: Neoverse N2 r0p0 counts one STALL_SLOT and "
    "one STALL_SLOT_FRONTEND per cycle too many and r0p3 does not (Arm erratum notice "
    "SDEN1982442), and nothing in the file shows which revision counted it (no level-1 "
    "fraction perf printed that tells the two apart, no count beyond 5 slots a cycle); "
    "pass --cpu neoverse-n2-r0p0 (MIDR 0x410fd490: Alibaba Yitian 710, and Azure Cobalt "
    "100 as Azure's virtual machines show it) or --cpu neoverse-n2-r0p3"
)
N2_SAME = "not known to count the slots of its name either: the same revision"


def _with_level1(metrics: dict[str, float]) -> dict[str, float]:
    """``metrics`` with each level-1 share whose level-2 parts alone were printed (perf
    -M PipelineL2 on AMD, toplev with a node filter): their sum (Yasin, ISPASS 2014:
    Backend Bound = Memory Bound + Core Bound, Frontend Bound = Fetch Latency + Fetch
    Bandwidth, ...; core.metrics ``parts``)."""
    out = dict(metrics)
    for name in _LEVEL1:
        parts = METRICS[name].parts
        if name not in out and parts and all(p in out for p in parts):
            out[name] = sum(out[p] for p in parts)
    return out


def _user_only(entry: PerfStatEntry) -> bool:
    """The event was opened for user mode only (``:u``, without ``k``)."""
    mods = entry.event.modifiers.lower()
    return "u" in mods and "k" not in mods


def _topdown_fractions(raw: dict[str, float]) -> dict[str, float]:
    """Level-1 fractions from Intel's topdown events (formulas: see _TOPDOWN_EVENTS)."""
    out: dict[str, float] = {}
    slots = raw.get("slots", 0.0)
    if slots > 0:
        for event, metric in (
            ("topdown-retiring", "retiring"),
            ("topdown-bad-spec", "bad_speculation"),
            ("topdown-fe-bound", "frontend_bound"),
            ("topdown-be-bound", "backend_bound"),
        ):
            if event in raw:
                out[metric] = raw[event] / slots
        if "topdown-mem-bound" in raw and "backend_bound" in out:
            out["memory_bound"] = raw["topdown-mem-bound"] / slots
            out["core_bound"] = max(0.0, out["backend_bound"] - out["memory_bound"])
        if "topdown-fetch-lat" in raw and "frontend_bound" in out:
            out["fetch_latency"] = raw["topdown-fetch-lat"] / slots
            out["fetch_bandwidth"] = max(0.0, out["frontend_bound"] - out["fetch_latency"])
        if "topdown-br-mispredict" in raw and "bad_speculation" in out:
            out["branch_mispredicts"] = raw["topdown-br-mispredict"] / slots
            out["machine_clears"] = max(0.0, out["bad_speculation"] - out["branch_mispredicts"])
        return out
    total = raw.get("topdown-total-slots", 0.0)
    need = (
        "topdown-slots-issued",
        "topdown-slots-retired",
        "topdown-fetch-bubbles",
        "topdown-recovery-bubbles",
    )
    if total > 0 and all(n in raw for n in need):
        out["frontend_bound"] = raw["topdown-fetch-bubbles"] / total
        out["bad_speculation"] = (
            raw["topdown-slots-issued"]
            - raw["topdown-slots-retired"]
            + raw["topdown-recovery-bubbles"]
        ) / total
        out["retiring"] = raw["topdown-slots-retired"] / total
        out["backend_bound"] = (
            1.0 - out["frontend_bound"] - out["bad_speculation"] - out["retiring"]
        )
    return out


def _arch_of(entries: Iterable[PerfStatEntry]) -> str | None:
    """The instruction set the event names show; None when none shows one."""
    hints = {_entry_arch_hint(e) for e in entries} - {None}
    if not hints:
        return None
    return "x86" if hints == {"x86"} else "arm"


#: What a name counts on x86 where Arm's event of that name differs (see _GENERIC_BY_ARCH
#: and _HW_CACHE_READS). Where the file shows neither instruction set, such a name is
#: read as Arm's event, which does not overstate either: a demand last-level miss or
#: reference was an L1D refill or access first, and an x86 page walk follows an L1 TLB
#: miss, so, hardware prefetches to the last level aside, the x86 count is no larger than
#: the Arm event's count for the same run; a threshold crossed on Arm's reading is
#: crossed on x86's too, though the level named may be the nearer one.
ARCH_DEPENDENT: dict[str, str] = {
    "cache-references": "on x86: last-level references, on AMD the L2's",
    "cache-misses": "on x86: last-level misses, on AMD the L2's",
    "dtlb-miss": "on x86: page walks",
    "itlb-miss": "on x86: page walks",
}


def _arch_dependent(event: EventName) -> str | None:
    """What ``event`` counts on x86, where Arm's event of that name differs; else None."""
    if event.base in _GENERIC_CACHE:
        return ARCH_DEPENDENT[event.base]
    decoded = decode_hw_cache(event.base)
    if decoded is not None and decoded[1] == "read" and decoded[2] == "miss":
        return ARCH_DEPENDENT.get(f"{decoded[0]}-miss")
    return None


def _entry_arch_hint(entry: PerfStatEntry) -> str | None:
    """The instruction set an event line shows: its name's, or for a generic event that
    only one architecture counts, its having been counted. ``ref-cycles`` (perf's
    PERF_COUNT_HW_REF_CPU_CYCLES) is Intel's fixed counter 2 (intel_perfmon_event_map,
    arch/x86/events/intel/core.c: 0x0300) and absent from Arm's armv8_pmuv3_perf_map
    (drivers/perf/arm_pmuv3.c), where perf prints it <not supported>."""
    if entry.event.base == "ref-cycles":
        return "x86" if entry.status == "counted" else None
    return entry.event.arch_hint


def _first_counted(names: Sequence[list[PerfStatEntry]]) -> list[PerfStatEntry]:
    """Of the lines of several names for one count (each name's lines), those to use:
    the first name counted. A name that read 0 where another name of the same count
    did not was not counted by this core (Sapphire Rapids prints
    cycle_activity.stalls_l3_miss 0 beside memory_activity.stalls_l3_miss, its event):
    the other one is used."""
    return next(
        (g for g in names if any(e.status == "counted" and e.value for e in g)),
        next((g for g in names if any(e.status == "counted" for e in g)), names[0]),
    )


def _is_core_pmu(pmu: str | None) -> bool:
    """A PMU of one kind of core: Intel hybrid's cpu_core / cpu_atom, an Arm core's."""
    name = (pmu or "").lower()
    return name in (P_CORE_PMU, E_CORE_PMU) or _ARM_PMU.match(name) is not None


def _minor_cores(entries: Sequence[PerfStatEntry], title: str) -> dict[str, float]:
    """The core PMUs of a hybrid machine not to read, each with the largest share of the
    time its events counted: all but the one that counted longest.

    Counting a task, an event of one kind of core counts only while the task runs on
    such a core, and perf scales its count by the time enabled over the time running:
    "The percentage is the event's running time/enabling time. One example,
    'triad_loop' runs on cpu16 (atom core), while we can see the scaled value for core
    cycles is 160,444,092 and the percentage is 0.47%" (Linux
    tools/perf/Documentation/intel-hybrid.txt, thread mode). So the core that ran 0.02%
    of the time shows a count extrapolated from that sliver, and adding it to the other
    core's distorts every ratio; perf itself forms its ratios per PMU (commit 3612ca8e,
    "perf stat: ... check the PMU type as well"). The core the task ran on longest is
    read, as perf's per-PMU lines give it. Counting the whole system (or CPUs), each
    PMU counts its own CPUs all the time: the lines add up, nothing is left out, where
    both kinds counted the same events (:func:`_other_kinds_counting_other_events`)."""
    if _counts_every_cpu(title):
        return _other_kinds_counting_other_events(entries)
    share: dict[str, float] = {}
    total: dict[str, float] = {}
    for e in entries:
        if not _is_core_pmu(e.event.pmu) or e.status != "counted":
            continue
        pmu = str(e.event.pmu)
        running = 100.0 if e.running_pct is None else e.running_pct
        share[pmu] = max(share.get(pmu, 0.0), running)
        total[pmu] = total.get(pmu, 0.0) + float(e.value or 0.0)
    if len(share) < 2 or all(v >= 100.0 for v in share.values()):
        return {}
    read = max(share, key=lambda p: (share[p], total[p]))
    return {p: v for p, v in share.items() if p != read}


def _counts_every_cpu(title: str) -> bool:
    """Whether perf counted CPUs (``-a``, ``-C``) rather than a task."""
    return "system wide" in title or "CPU(s)" in title


def _other_kinds_counting_other_events(entries: Sequence[PerfStatEntry]) -> dict[str, float]:
    """Counting CPUs on a machine with more than one kind of core, the kinds not read
    where the kinds counted different events (mapped to ours); else nothing.

    Each kind's PMU counts its own CPUs, so one logical event counted on both adds up;
    but where the kinds count it under different names (CPU_CLK_UNHALTED.CORE on the
    E-cores, .THREAD on the P-cores) or only one kind has it (ARITH.DIV_ACTIVE,
    MEMORY_ACTIVITY.STALLS_L2_MISS: P-core events), a ratio would divide one kind's
    count by the other's cycles (perf -M TopdownL3 -a prints such groups for each kind:
    Linux perf's cpu_core and cpu_atom metric files). Then one kind is read and the
    others' events listed: on Intel's hybrid parts the P-cores, as toplev reads them; on
    Arm's big.LITTLE parts (one PMU per kind, armv8_cortex_a55 / armv8_cortex_a76: Linux
    drivers/perf/arm_pmuv3.c) the kind that counted the most of our events, so that the
    most ratios are formed within one kind, and of those the one that counted the most
    cycles, where the work ran."""
    kinds: dict[str, set[str]] = {}
    cycles: dict[str, float] = {}
    for e in entries:
        pmu = (e.event.pmu or "").lower()
        if not _is_core_pmu(pmu) or e.status != "counted":
            continue
        logical = logical_name(e.event, "x86" if pmu in (P_CORE_PMU, E_CORE_PMU) else "arm")
        if logical is not None:
            kinds.setdefault(pmu, set()).add(logical)
            if logical == "cycles":
                cycles[pmu] = cycles.get(pmu, 0.0) + float(e.value or 0.0)
    if len(kinds) < 2 or len({frozenset(v) for v in kinds.values()}) == 1:
        return {}
    if {P_CORE_PMU, E_CORE_PMU} <= kinds.keys():
        read = P_CORE_PMU
    else:
        read = max(kinds, key=lambda p: (len(kinds[p]), cycles.get(p, 0.0)))
    return {pmu: 100.0 for pmu in kinds if pmu != read}


def _kinds_not_read(title: str, entries: Sequence[PerfStatEntry]) -> tuple[str, ...]:
    """The kinds of core whose printed top-down values are not read: counting CPUs on
    Intel's hybrid parts, each kind prints its own model's nodes (Linux perf's cpu_core
    and cpu_atom metric files), and the P-cores' are read (toplev's choice too)."""
    pmus = {(e.event.pmu or "").lower() for e in entries}
    if _counts_every_cpu(title) and {P_CORE_PMU, E_CORE_PMU} <= pmus:
        return (E_CORE_PMU,)
    return ()


def _drop_uncounted(
    counted: dict[str, float],
    missing: dict[str, str],
    groups: Mapping[str, Mapping[tuple[str, str], list[PerfStatEntry]]],
) -> None:
    """Move the counts that are no count of the run from ``counted`` to ``missing``,
    with the reason.

    A hardware event that read 0 over millions of cycles did not count (a hypervisor
    that lists a PMU it does not count prints 0, not <not supported>): not a zero. Nor
    is a stall count above the run's cycles a share of them: the same rules as for the
    counters the plugin reads (pmu.trust). A user-only (:u) switch or migration count is
    0 by construction, not the run's (events.KERNEL_ONLY_SOFTWARE); perf adds :u itself
    where perf_event_paranoid keeps the kernel out."""
    for name, why in {**silent_zeros(counted), **overcounted_stalls(counted)}.items():
        del counted[name]
        missing[name] = why
    for name in KERNEL_ONLY_SOFTWARE:
        opened = [e for g in groups.get(name, {}).values() for e in g]
        if counted.get(name) == 0 and opened and all(_user_only(e) for e in opened):
            del counted[name]
            missing[name] = kernel_only_reason(None)


def _collect(
    fmt: str,
    entries: list[PerfStatEntry],
    arch: str | None,
    perf_metrics: dict[str, float] | None = None,
    *,
    elapsed_s: float | None = None,
    user_s: float | None = None,
    sys_s: float | None = None,
    separator: str | None = None,
    title: str = "",
    printed_isa: str | None = None,
) -> PerfStat:
    perf_metrics = dict(perf_metrics or {})
    arch = arch or printed_isa
    if not entries and not perf_metrics:
        raise PerfStatError(NO_COUNTERS)
    shown = arch if arch is not None else _arch_of(entries)
    arch = shown or "arm"  # raw codes are read as Arm's unless the file shows x86
    ambiguous: list[str] = []
    # Several perf names can give one logical event (branches and br_pred, cycles:u and
    # cycles:k). Lines of the same name are summed (one per core PMU counting the whole
    # system, per CPU with -A, per interval with -I); of different names, the first that
    # was counted is used (one that read more than 0, where another read 0:
    # _first_counted). A task's lines from the core it hardly ran on are not read
    # (_minor_cores).
    groups: dict[str, dict[tuple[str, str], list[PerfStatEntry]]] = {}
    unmapped: list[str] = []
    topdown: dict[str, float] = {}
    other_cores = _minor_cores(entries, title)
    for entry in entries:
        if entry.event.pmu in other_cores:
            continue
        base = _TOPDOWN_ALIASES.get(entry.event.base, entry.event.base)
        if base in _TOPDOWN_EVENTS:
            if entry.value is not None:
                topdown[base] = topdown.get(base, 0.0) + entry.value
            continue
        if shown is None and (x86 := _arch_dependent(entry.event)) is not None:
            ambiguous.append(f"{entry.event.text} ({x86})")
        logical = logical_name(entry.event, arch)
        if logical is None:
            if entry.event.base != "duration_time":
                unmapped.append(entry.event.text)
            continue
        key = (entry.event.base, entry.event.modifiers)
        groups.setdefault(logical, {}).setdefault(key, []).append(entry)
    counted: dict[str, float] = {}
    missing: dict[str, str] = {}
    running: dict[str, float] = {}
    superseded: list[str] = []
    for logical, by_name in groups.items():
        # the generic cache-references / cache-misses give way to a read event of the
        # same logical name (see _GENERIC_BY_ARCH)
        names = sorted(by_name.values(), key=lambda g: g[0].event.base in _GENERIC_CACHE)
        use = _first_counted(names)
        superseded.extend(e.event.text for g in names if g is not use for e in g)
        values = []
        for entry in use:
            if entry.status != "counted":
                missing.setdefault(logical, REASONS[entry.status])
                continue
            values.append(float(entry.value_in_base_units or 0))
            if entry.running_pct is not None and entry.running_pct < 100.0:
                running[logical] = min(running.get(logical, 100.0), entry.running_pct)
        if values:
            repeated = any(e.repeated for e in use)
            counted[logical] = statistics.fmean(values) if repeated else sum(values)
    for name, value in _topdown_fractions(topdown).items():
        perf_metrics.setdefault(name, value)
    perf_metrics = _with_level1(perf_metrics)
    _drop_uncounted(counted, missing, groups)
    unavailable = {k: v for k, v in missing.items() if k not in counted}
    return PerfStat(
        fmt,
        tuple(entries),
        arch,
        counts=counted,
        unavailable=unavailable,
        multiplexed={n: pct for n, pct in running.items() if n in counted},
        unmapped=tuple(dict.fromkeys(unmapped)),
        ambiguous=tuple(dict.fromkeys(ambiguous)),
        superseded=tuple(dict.fromkeys(superseded)),
        other_cores=other_cores,
        perf_metrics=perf_metrics,
        elapsed_s=elapsed_s,
        user_s=user_s,
        sys_s=sys_s,
        separator=separator,
        title=title,
        printed_isa=printed_isa,
    )


# -- perf's own top-down metrics --------------------------------------------------------

_TOPDOWN_NAMES = {
    "retiring": "retiring",
    "bad_speculation": "bad_speculation",
    "frontend_bound": "frontend_bound",
    "backend_bound": "backend_bound",
    "bad speculation": "bad_speculation",
    "frontend bound": "frontend_bound",
    "backend bound": "backend_bound",
    # Level 2 of the backend: its slots split into memory and core. Intel TMA's
    # tma_memory_bound / tma_core_bound (perf -M TopdownL2, and perf 6.x's default
    # output on cores with level 2), AMD's backend_bound_memory / backend_bound_cpu
    # (amdzen4/amdzen5 PipelineL2). Both are fractions of all the slots, and the two sum
    # to the backend's (Linux perf x86 metrics: tma_core_bound = max(0,
    # tma_backend_bound - tma_memory_bound); amdzen4 pipeline.json: backend_bound x the
    # share of no-retire cycles waiting on a load, and backend_bound x the rest).
    "memory_bound": "memory_bound",
    "core_bound": "core_bound",
    "backend_bound_memory": "memory_bound",
    "backend_bound_cpu": "core_bound",
    # Level 2 of bad speculation: the slots lost to mispredicted branches, the rest
    # being machine clears (Intel tma_branch_mispredicts; AMD
    # bad_speculation_mispredicts, the pipeline restarts being the rest).
    "branch_mispredicts": "branch_mispredicts",
    "bad_speculation_mispredicts": "branch_mispredicts",
    "machine_clears": "machine_clears",
    "bad_speculation_pipeline_restarts": "machine_clears",
    # Level 2 of the front end: its slots split into fetch latency (i-cache and iTLB
    # misses, branch resteers: cycles with nothing delivered) and fetch bandwidth (the
    # decoders and the uop cache delivering too little). Intel TMA's tma_fetch_latency /
    # tma_fetch_bandwidth, AMD's frontend_bound_latency / frontend_bound_bandwidth
    # (amdzen4/amdzen5 PipelineL2); the two sum to the front end's share.
    "fetch_latency": "fetch_latency",
    "fetch_bandwidth": "fetch_bandwidth",
    "frontend_bound_latency": "fetch_latency",
    "frontend_bound_bandwidth": "fetch_bandwidth",
    # Level 3 of the memory part, by the level that served the loads (perf -M TopdownL3):
    # tma_l2_bound, tma_l3_bound, tma_dram_bound, shares of the cycles.
    "l2_bound": "l2_bound",
    "l3_bound": "l3_bound",
    "dram_bound": "dram_stalled",
    # ... and the loads that hit L1D but waited (tma_l1_bound: blocked by stores, DTLB
    # misses, 4K aliasing), and level 4's DTLB parts (tma_dtlb_load under L1_Bound,
    # tma_dtlb_store under Store_Bound), shares of the cycles.
    "l1_bound": "l1_bound",
    "dtlb_load": "dtlb_load_bound",
    "dtlb_store": "dtlb_store_bound",
    # Level 3 of the front end's fetch latency (tma_icache_misses, tma_itlb_misses) and
    # of the core part (tma_divider, tma_ports_utilization): shares of the cycles;
    # the stores of the memory part (tma_store_bound), and retiring's heavy operations
    # with the microcode sequencer's and the assists' part of them (shares of the slots):
    # Linux perf x86 metrics, printed by perf -M TopdownL3 / TopdownL4 and perf 6.x's
    # default output (tma_heavy_operations).
    # Level 4 under DRAM_Bound: its bandwidth and latency parts (shares of the cycles).
    "mem_bandwidth": "mem_bandwidth",
    "mem_latency": "mem_latency",
    # ... under L3_Bound and Store_Bound: lines other cores wrote (shares of the cycles).
    "contested_accesses": "contested_accesses",
    "false_sharing": "false_sharing",
    "icache_misses": "icache_misses",
    "itlb_misses": "itlb_misses",
    # ... level 4 under L1_Bound (tma_4k_aliasing, tma_lock_latency, tma_split_loads,
    # tma_fb_full) and L3_Bound (tma_data_sharing), level 3 under the fetch latency
    # (tma_branch_resteers): shares of the cycles.
    "4k_aliasing": "4k_aliasing",
    "lock_latency": "lock_latency",
    "split_loads": "split_loads",
    "fb_full": "fb_full",
    "data_sharing": "data_sharing",
    "branch_resteers": "branch_resteers",
    # ... under Core_Bound, Serializing_Operation: the cycles stalled on PAUSE, the
    # spin-wait hint (tma_slow_pause), a share of the cycles.
    "slow_pause": "slow_pause",
    "divider": "divider",
    "ports_utilization": "ports_utilization",
    "store_bound": "store_bound",
    "heavy_operations": "heavy_operations",
    "microcode_sequencer": "microcode_sequencer",
    "retiring_microcode": "microcode_sequencer",  # AMD's (amdzen4/amdzen5 PipelineL2)
    "assists": "assists",
    # Level 3 under the fetch latency (DSB and MS switches), level 4 under its resteers
    # (unknown branches), under L3_Bound (L3 hit latency, super queue full), under
    # Store_Bound (store latency), under L1_Bound (blocked store forwarding) and under
    # Ports_Utilization (cycles by the number of uops executed): shares of the cycles.
    "l3_hit_latency": "l3_hit_latency",
    "sq_full": "sq_full",
    "store_latency": "store_latency",
    "store_fwd_blk": "store_fwd_blk",
    "ports_utilized_0": "ports_utilized_0",
    "ports_utilized_1": "ports_utilized_1",
    "ports_utilized_2": "ports_utilized_2",
    "ports_utilized_3m": "ports_utilized_3m",
    "unknown_branches": "unknown_branches",
    "dsb_switches": "dsb_switches",
    "ms_switches": "ms_switches",
    # ... and the resteers' other two parts and two more under Store_Bound (split and
    # streaming stores): shares of the cycles.
    "mispredicts_resteers": "mispredicts_resteers",
    "clears_resteers": "clears_resteers",
    "split_stores": "split_stores",
    "streaming_stores": "streaming_stores",
    # ... and level 3 under the fetch bandwidth (MITE, DSB: shares of the slots) and the
    # decoders' length-changing prefixes, under names in words (core.metrics).
    "mite": "legacy_decode",
    "dsb": "uop_cache_fetch",
    "lcp": "length_changing_prefixes",
}
# Every name of _TOPDOWN_NAMES (longest first, so no name stops at a shorter one's end)
# and every entry of Intel's bottleneck view, with or without Intel's tma_ prefix; an
# event named by the word and a dot (``assists.any``) is a count, not the node.
_PRINTED_NAME = (
    r"(?:tma_)?(?P<name>"
    + "|".join(sorted((n for n in _TOPDOWN_NAMES if " " not in n), key=len, reverse=True))
    + rf"|{BOTTLENECK_NAMES})\b(?!\.)"
)
# "# 0.91 Backend_Bound" (-M TopdownL1, perf 5.x) and "# 53.4 % tma_backend_bound"
# (perf 6.x default and --topdown output).
_SHADOW_TOPDOWN = re.compile(
    r"#\s*(?P<value>-?\d+(?:[.,]\d+)?)\s*(?P<pct>%)?\s*" + _PRINTED_NAME, re.IGNORECASE
)
# " 65.9 %  backend_bound   (20.00%)": a metric printed without its events, the value
# first (perf -M output with the event columns cut away, as books and posts quote it).
_METRIC_ONLY = re.compile(
    r"^\s*(?P<value>-?\d+(?:[.,]\d+)?)\s*(?P<pct>%)?\s+" + _PRINTED_NAME, re.IGNORECASE
)
_PERCENT = re.compile(r"(-?\d+(?:[.,]\d+)?)\s*%")


# perf prints Intel's top-down metrics with the tma_ prefix of their names in the x86
# metric files (tools/perf/pmu-events/arch/x86/*/*metrics.json); Arm's and AMD's
# metric files name theirs without it.
_TMA_NAME = re.compile(r"\btma_[a-z0-9_]+")


def _isa_of_printed(lines: Sequence[str]) -> str | None:
    """``"x86"`` where perf printed an Intel top-down metric by its tma_ name; else None."""
    return "x86" if any(_TMA_NAME.search(line) for line in lines) else None


def _fraction(value: str, percent: bool) -> float:
    number = float(value.replace(",", "."))
    return number / 100.0 if percent else number


def _printed(name: str, number: float, percent: bool) -> tuple[str, float]:
    """A metric perf printed by ``name`` (:data:`_PRINTED_NAME`): ours, and its value
    as a fraction. An entry of Intel's bottleneck view is a percentage whether or not
    perf printed a ``%`` (its formulas are ``100 * ...`` with no ScaleUnit)."""
    bottleneck = bottleneck_metric(name)
    if bottleneck is not None:
        return bottleneck, bottleneck_fraction(number)
    return _TOPDOWN_NAMES[name.lower()], number / 100.0 if percent else number


def _table_columns(header: str) -> list[str]:
    """The level-1 names of a --topdown table header, in column order."""
    found = [
        (m.start(), _TOPDOWN_NAMES[m.group(0).lower().replace("tma_", "")])
        for m in re.finditer(
            r"(?:tma_)?(?:retiring|bad[ _]speculation|frontend[ _]bound"
            r"|backend[ _]bound)",
            header,
            re.IGNORECASE,
        )
    ]
    return [name for _, name in sorted(found)]


_LINE_PMU = re.compile(rf"\b({P_CORE_PMU}|{E_CORE_PMU})\b", re.IGNORECASE)
# A line that only says rows were left out ("...", as perf's own Documentation/topdown.txt
# ends its --topdown -I table, "…", "[...]"): it does not end a table.
_ELISION = re.compile(r"\.{3,}|…|\[\.{3}\]|\[…\]")


def topdown_from_text(lines: Sequence[str], skip_pmus: Sequence[str] = ()) -> dict[str, float]:
    """Top-down fractions perf printed in a text report, whatever its version: level 1,
    and levels 2 and 3 (:data:`_TOPDOWN_NAMES`) where perf printed them.

    ``perf stat --topdown`` tables (a header naming the four columns, then one line of
    percentages per CPU or core, or per interval with ``-I``: the mean of the lines is
    used), ``#`` shadow comments naming a level-1 metric, and metric-only lines
    (``65.9 %  backend_bound``: the value first, no event).

    A metric printed more than once in a run is taken where its group counted longest:
    a hybrid machine prints the group once per kind of core (``TopdownL1 (cpu_core)``,
    then cpu_atom's), each scaled up from the time the task ran on that kind
    (:func:`_minor_cores`); perf closes each group's lines with its running share.
    Values printed for a PMU of ``skip_pmus`` (on its event's line, the comment lines
    under it, or under a ``TopdownL1 (cpu_atom)`` header) are not read.
    """
    out: dict[str, float] = {}
    # each printed value with how long its group counted (the "(x%)" perf prints at the
    # end of a group's last line; 100 where it printed none)
    counted: dict[str, float] = {}
    pending: list[tuple[str, float]] = []

    def keep(running: float) -> None:
        for name, value in pending:
            if running >= counted.get(name, -1.0):
                out[name], counted[name] = value, running
        pending.clear()

    rows: dict[str, list[float]] = {}
    columns: list[str] = []
    header_pct = False
    skip = {p.lower() for p in skip_pmus}
    pmu = ""  # the PMU the line's values belong to: its own, or the line's above
    for line in lines:
        if (named := _LINE_PMU.search(line)) is not None:
            pmu = named.group(1).lower()
        elif line.strip() and not line.lstrip().startswith("#"):
            pmu = ""
        if pmu in skip:
            continue
        if columns and _ELISION.fullmatch(line.strip()):
            continue  # rows left out by whoever quoted the table
        if columns:
            numbers = _PERCENT.findall(line) or re.findall(r"(?<![\w.])-?\d+[.,]\d+", line)
            if len(numbers) >= len(columns):
                percent = header_pct or "%" in line
                for name, value in zip(columns, numbers[-len(columns) :], strict=True):
                    rows.setdefault(name, []).append(_fraction(value, percent))
                continue
            if line.strip():
                columns = []
        header = _table_columns(line)
        if len(header) == 4 and not _SHADOW_TOPDOWN.search(line):
            columns, header_pct = header, "%" in line
            continue
        for match in (*_SHADOW_TOPDOWN.finditer(line), *_METRIC_ONLY.finditer(line)):
            pending.append(
                _printed(
                    match.group("name"),
                    float(match.group("value").replace(",", ".")),
                    bool(match.group("pct")),
                )
            )
        if (running := _RUNNING.search(line)) is not None:
            keep(float(running.group("pct").replace(",", ".")))
    keep(100.0)
    for name, values in rows.items():
        out[name] = statistics.fmean(values)
    return out


# -- CSV ----------------------------------------------------------------------------------

_CSV_SEPARATORS = (",", ";", "\t", "|")
_CPU_PREFIX = re.compile(r"CPU\d+")


def _csv_fields(line: str, sep: str) -> list[str]:
    fields = [f.strip() for f in line.split(sep)]
    if fields and _CPU_PREFIX.fullmatch(fields[0]):
        fields = fields[1:]  # perf stat -A: one line per CPU, summed below
    if (
        len(fields) >= 4
        and _is_number(fields[0])
        and _is_value(fields[1])
        and not _looks_like_event(fields[2])
        and _looks_like_event(fields[3])
    ):
        fields = fields[1:]  # perf stat -I: a timestamp first; intervals are summed
    return fields


def _csv_score(lines: list[str], sep: str) -> int:
    score = 0
    for line in lines:
        fields = _csv_fields(line, sep)
        if len(fields) >= 3 and _is_value(fields[0]) and _looks_like_event(fields[2]):
            score += 1
    return score


def _csv_value(token: str, sep: str) -> float:
    # -x, output has no digit grouping; with another separator a comma is a decimal mark
    # (perf prints %f in the user's locale: "12,34;msec;task-clock" under de_DE).
    return parse_number(token, "," if (sep != "," and "," in token and "." not in token) else ".")


def parse_csv(text: str, sep: str | None = None, *, arch: str | None = None) -> PerfStat:
    """``perf stat -x<sep>``: value, unit, event, run time, running %, metric, metric unit."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if sep is None:
        scores = {s: _csv_score(lines, s) for s in _CSV_SEPARATORS}
        sep = max(scores, key=lambda s: scores[s])
        if scores[sep] == 0:
            raise PerfStatError("no perf stat CSV lines found")
    entries: list[PerfStatEntry] = []
    perf_metrics: dict[str, float] = {}
    for line in lines:
        fields = _csv_fields(line, sep)
        if len(fields) > 6:
            perf_metrics.update(_csv_topdown(fields[5], fields[6], sep))
        if len(fields) < 3 or not _looks_like_event(fields[2]) or not fields[0]:
            continue  # metric-only lines (",,,,,1.23,insn per cycle") and noise
        raw = fields[0]
        if raw in (NOT_SUPPORTED, NOT_COUNTED):
            value, status = None, raw
        else:
            try:
                value, status = _csv_value(raw, sep), "counted"
            except ValueError:
                continue
        pct = None
        if len(fields) > 4 and fields[4]:
            try:
                pct = _csv_value(fields[4], sep)
            except ValueError:
                pct = None
        entries.append(PerfStatEntry(split_event(fields[2]), value, fields[1], status, pct))
    return _collect(
        "csv", entries, arch, perf_metrics, separator=sep, printed_isa=_isa_of_printed(lines)
    )


def _csv_topdown(value: str, unit: str, sep: str) -> dict[str, float]:
    """A top-down metric in the metric columns of a CSV line ("53.4", "%  tma_retiring")."""
    match = re.fullmatch(r"\s*(%)?\s*" + _PRINTED_NAME + r"\s*", unit, re.IGNORECASE)
    if not match or not value.strip():
        return {}
    try:
        number = _csv_value(value, sep)
    except ValueError:
        return {}
    name, fraction = _printed(match.group("name"), number, bool(match.group(1)))
    return {name: fraction}


# -- JSON lines (perf stat -j) ------------------------------------------------------------


def parse_json_lines(text: str, *, arch: str | None = None) -> PerfStat:
    """``perf stat -j``: one JSON object per counter."""
    entries: list[PerfStatEntry] = []
    perf_metrics: dict[str, float] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        metric = obj.get("metric-value")
        if isinstance(metric, (int, float)) or (isinstance(metric, str) and metric.strip()):
            perf_metrics.update(_csv_topdown(str(metric), str(obj.get("metric-unit", "")), ","))
        if "event" not in obj or "counter-value" not in obj:
            continue
        raw = str(obj["counter-value"]).strip()
        if raw in (NOT_SUPPORTED, NOT_COUNTED):
            value, status = None, raw
        else:
            try:
                value, status = float(raw), "counted"
            except ValueError:
                continue
        pct = obj.get("pcnt-running")
        entries.append(
            PerfStatEntry(
                split_event(str(obj["event"])),
                value,
                str(obj.get("unit", "")),
                status,
                float(pct) if isinstance(pct, (int, float)) else None,
            )
        )
    return _collect(
        "json", entries, arch, perf_metrics, printed_isa=_isa_of_printed(text.splitlines())
    )


# -- plain text ---------------------------------------------------------------------------

# Digits with grouping marks. perf prints counts with printf's "%'" flag, which groups
# the integer part with the locale's thousands separator (tools/perf/util/stat-display.c;
# --no-big-num / -B turns it off): ",", ".", "'" or "’" (U+2019, the Swiss locales), a
# no-break space (U+00A0) or a narrow one (U+202F, U+2009). A plain space groups only an
# integer part made of one to three digits and then groups of exactly three, before any
# decimal mark: so the time and the count of "perf stat -I" ("1.001 123 cycles",
# "1,001 123 cycles") stay two numbers.
_NUM = (
    r"(?:\d{1,3}(?: \d{3})+(?:[.,]\d+)?(?![\d.,'\u2019\u00a0\u202f\u2009])"
    r"|\d[\d.,'\u2019\u00a0\u202f\u2009]*)"
)
_LINE = re.compile(
    rf"^\s*(?P<value>{NOT_SUPPORTED}|{NOT_COUNTED}|{_NUM})\s+"
    r"(?:(?P<unit>msec|ms|usec|us|nsec|ns|seconds|sec|MiB|Joules)\s+)?"
    r"(?P<event>[^\s#(]+)(?P<rest>.*)$"
)
_TIMES = re.compile(
    rf"^\s*(?P<value>{_NUM})\s+(?:\+-\s+\S+\s+)?seconds\s+(?P<what>time elapsed?|user|sys)\b"
)
_RUNNING = re.compile(r"\((?P<pct>\d+(?:[.,]\d+)?)\s*%\)")
_CPUS_UTILIZED = re.compile(r"#\s*(?P<cpus>\d+(?:[.,]\d+)?)\s+CPUs utilized")
_TITLE = re.compile(r"Performance counter stats for")
_UNIT_AFTER = re.compile(r"^\s*\((?P<unit>msec|ms|usec|us|nsec|ns)\)")  # perf 3.13-4.13


def _text_decimal(lines: Iterable[str]) -> str | None:
    """The locale's decimal mark, from a time line (perf always prints it with a fraction)."""
    for line in lines:
        match = _TIMES.match(line)
        if match:
            token = match.group("value")
            marks = [i for i, ch in enumerate(token) if ch in ".,"]
            if marks:
                return token[marks[-1]]
    return None


def _counter_line(line: str) -> tuple[re.Match[str], bool] | None:
    """The counter part of a text line, and whether a ``-I`` timestamp came first."""
    match = _LINE.match(line)
    interval = False
    if match and not _looks_like_event(match.group("event")) and match.group("unit") is None:
        match, interval = _LINE.match(line[match.start("event") :]), True
    if match is None or not _looks_like_event(match.group("event")):
        return None
    return match, interval


def _text_entry(line: str, decimal: str | None) -> tuple[PerfStatEntry, bool] | None:
    """A counter line as an entry, and whether it was an interval (-I) line."""
    found = _counter_line(line)
    if found is None:
        return None
    match, interval = found
    raw, unit, rest = match.group("value"), match.group("unit") or "", match.group("rest")
    after = _UNIT_AFTER.match(rest)
    if after and not unit:
        unit = after.group("unit")
    if (
        not unit
        and split_event(match.group("event")).base in _MS_EVENTS
        and raw not in (NOT_SUPPORTED, NOT_COUNTED)
    ):
        # bare: old perf's "%18.6f" milliseconds, or a recent perf's integer nanoseconds
        unit = "msec" if (decimal or ".") in raw else "nsec"
    if raw in (NOT_SUPPORTED, NOT_COUNTED):
        value, status = None, raw
    else:
        try:
            value, status = parse_number(raw, decimal), "counted"
        except ValueError:
            return None
    comment = rest.find("#")
    running = _RUNNING.search(rest if comment < 0 else rest[comment:])
    pct = float(running.group("pct").replace(",", ".")) if running else None
    return PerfStatEntry(split_event(match.group("event")), value, unit, status, pct), interval


def _bare_clock_unit(entry: PerfStatEntry, line: str, elapsed_s: float | None) -> PerfStatEntry:
    """A bare task-clock / cpu-clock whose unit perf's own "CPUs utilized" settles."""
    found = _CPUS_UTILIZED.search(line)
    value = entry.value
    if value is None or not elapsed_s or found is None:
        return entry
    cpus = float(found.group("cpus").replace(",", "."))
    wall_ns = elapsed_s * 1e9
    unit = min(("msec", "nsec"), key=lambda u: abs(value * _TIME_SCALE[u] / wall_ns - cpus))
    return replace(entry, unit=unit)


def _text_block(lines: Sequence[str], arch: str | None, decimal: str | None) -> PerfStat:
    times: dict[str, float] = {}
    entries: list[tuple[PerfStatEntry, bool]] = []
    bare_clocks: dict[int, str] = {}  # entry index -> its line, for _bare_clock_unit
    title = ""
    # a block with a title reads no counter above it: that is the workload's output
    # (_blocks)
    above_title = any(_TITLE.search(line) for line in lines)
    for line in lines:
        stripped = line.strip()
        if _TITLE.search(line) and not title:
            title = stripped.rstrip(":")
            above_title = False
        if not stripped or stripped.startswith("#") or above_title:
            continue
        times_match = _TIMES.match(line)
        if times_match:
            what = times_match.group("what")
            what = "time elapsed" if what.startswith("time") else what
            times[what] = parse_number(times_match.group("value"), decimal)
            continue
        found = _text_entry(line, decimal)
        if found is not None:
            entry = found[0]
            if entry.event.base in _MS_EVENTS and not _has_unit(line, entry):
                bare_clocks[len(entries)] = line
            entries.append(found)
    for index, line in bare_clocks.items():
        entry, interval = entries[index]
        entries[index] = (_bare_clock_unit(entry, line, times.get("time elapsed")), interval)
    return _collect(
        "text",
        _mark_repeats(entries),
        arch,
        topdown_from_text(lines, _kinds_not_read(title, [e for e, _ in entries])),
        elapsed_s=times.get("time elapsed"),
        user_s=times.get("user"),
        sys_s=times.get("sys"),
        title=title,
        printed_isa=_isa_of_printed(lines),
    )


def _has_unit(line: str, entry: PerfStatEntry) -> bool:
    """Whether the line itself names the clock's unit (before the name, or after it)."""
    found = _counter_line(line)
    if found is None:
        return True
    match = found[0]
    return bool(match.group("unit") or _UNIT_AFTER.match(match.group("rest")))


def _mark_repeats(entries: list[tuple[PerfStatEntry, bool]]) -> list[PerfStatEntry]:
    """Flag events printed more than once in one run outside interval mode (-I lines of
    one event are summed: each counts its own interval)."""
    seen: dict[str, int] = {}
    for entry, interval in entries:
        if not interval:
            seen[entry.event.text] = seen.get(entry.event.text, 0) + 1
    return [
        replace(e, repeated=not interval and seen.get(e.event.text, 0) > 1)
        for e, interval in entries
    ]


def _blocks(
    lines: Sequence[str], found: Sequence[tuple[PerfStatEntry, bool] | None]
) -> list[list[str]]:
    """The file cut into one block per run: at each ``Performance counter stats for``
    line, and at a counter line that follows a run's footer with no title between.

    perf prints a run's counters, then its footer (``seconds time elapsed``, ``user``,
    ``sys``: ``print_footer`` in tools/perf/util/stat-display.c), and nothing of that
    run after it; ``-I`` intervals print no footer. So counters after a footer are
    another run whose header was cut (``pre:`` / ``post:`` blocks pasted into a commit
    message), never more of the same run: averaging them with it would mix two builds.
    perf prints a run's report after its workload exits, so lines above a title with no
    footer between are the workload's own output (``6.51 GB/sec`` of ``perf bench``),
    which may look like counter lines: they go with the run the title opens
    (:func:`_text_block` reads no counter above its title). ``found``: each line read as
    a counter line (:func:`_text_entry`), None where not.
    """
    cuts = [0]
    # since the last cut: a title, a counter line, a footer line
    titled = counted = after_footer = False
    for index, (line, entry) in enumerate(zip(lines, found, strict=True)):
        is_title, is_footer = bool(_TITLE.search(line)), bool(_TIMES.match(line))
        is_counter = not (is_title or is_footer) and entry is not None
        if (is_title and (titled or after_footer)) or (after_footer and is_counter):
            cuts.append(index)
            titled = counted = after_footer = False
        after_footer = after_footer or is_footer
        titled, counted = titled or is_title, counted or is_counter
    cuts.append(len(lines))
    return [list(lines[a:b]) for a, b in itertools.pairwise(cuts)]


def _text_runs(text: str, arch: str | None) -> list[PerfStat]:
    lines = text.splitlines()
    decimal = _text_decimal(lines)
    found = [_text_entry(line, decimal) for line in lines]
    if arch is None:
        arch = _arch_of(f[0] for f in found if f is not None)
    runs = []
    for block in _blocks(lines, found):
        try:
            runs.append(_text_block(block, arch, decimal))
        except PerfStatError:
            continue  # a title with nothing under it (a run that printed no counters)
    if not runs:
        raise PerfStatError(NO_COUNTERS)
    return runs


def parse_text(text: str, *, arch: str | None = None) -> PerfStat:
    """The plain ``perf stat`` report of one run, in any locale."""
    return _single(_text_runs(text, arch))


# -- several runs ------------------------------------------------------------------------

# Runs of one command are combined when their counts can share normalisers: people split
# their events over several ``perf stat`` runs of one program because the PMU has few
# counters (Cortex-A72: 6 + the cycle counter).
#
# A borrowed normaliser (run 2's L1I refills over run 1's instructions) moves a metric by
# the ratio of the two runs' true counts, so runs that counted a normaliser twice must
# agree on it. Retired instructions are architectural: a re-run of one program on one
# input retires the same instructions, give or take an overcount of about one per
# hardware interrupt and per first-touch page fault (Weaver, Terpstra, Moore,
# "Non-determinism and overcount on modern hardware performance counter
# implementations", ISPASS 2013, doi:10.1109/ISPASS.2013.6557172): thousands on a run of
# billions. A gap past BORROW_TOLERANCE is therefore other work (another input, another
# thread count, ONNX Runtime's pool threads spinning a different time), and the runs stay
# apart. 2% is the error accepted in a metric divided by a borrowed count, far above that
# overcount. Cycles, cache, stall and software counts legitimately differ between runs of
# one program (frequency, cache state, scheduling), so their differences prove nothing:
# each run keeps its own where it has one.
#
# Where no command is named ('system wide', 'CPU(s) 0-3', a process id) the runs are the
# same only when they cover time windows of the same length: elapsed times must agree
# within the same tolerance, as a per-second rate would otherwise move by their ratio.
#
# perf prints the header as " Performance counter stats for '<argv>'" with " (N runs)"
# after -r, or for 'system wide', 'CPU(s) <list>', process id '<pid>', thread id '<tid>'
# (tools/perf/util/stat-display.c, print_header()).

#: Largest relative gap between two runs' instructions (or elapsed times, where no command
#: is named) for the runs to share normalisers (reasoning above).
BORROW_TOLERANCE = 0.02
# Counts fixed by the program and its input (architectural), checked where runs overlap.
_DETERMINISTIC = ("instructions",)
_TARGET = re.compile(r"Performance counter stats for\s+(?P<target>.*?)(?:\s*\(\d+ runs\))?\s*$")
_NO_COMMAND = re.compile(r"^(?:'system wide'|'CPU\(s\) [^']*'|process id '|thread id ')")
# Modifiers that change what is counted (user, kernel, hypervisor, guest, host); others
# (p, P, S, D, W, e, I ...) change how.
_PRIVILEGE = frozenset("ukhGH")
_SOFTWARE = frozenset(n for n, spec in CATALOGUE.items() if spec.is_software)


@dataclass(frozen=True)
class RunTarget:
    """What a run measured, from its header: a command, or a target with no command."""

    text: str  # "'./stride'", "'system wide'", "process id '8113'"
    command: bool  # a command line was named
    attached: bool = False  # the tasks attached to (-p, -t), not a command or the system

    @property
    def label(self) -> str:
        return self.text if self.command else f"no command ({self.text})"


# What a simpleperf stat command line's scope (ingest.simpleperf) says it counted.
_SIMPLEPERF_TARGETS = {
    "system-wide": RunTarget("simpleperf stat -a (its command line above the report)", False),
    "attached": RunTarget(
        "simpleperf stat -p / -t / --app (its command line above the report)", False, True
    ),
}


def run_target(run: PerfStat) -> RunTarget | None:
    """The target of a run's ``Performance counter stats for`` header (``(N runs)`` of
    ``-r`` removed), or of simpleperf's command line above its report; None where the run
    shows neither (CSV, JSON, a tool's output, a simpleperf command it ran)."""
    if run.format in TOOL_FORMATS:
        return None
    if run.format in COUNTING_TOOLS:
        return _SIMPLEPERF_TARGETS.get(run.scope or "")
    match = _TARGET.search(run.title)
    if match is None or not match.group("target"):
        return None
    target = match.group("target").strip()
    # -p wins over -a: 'PID/TID switch overriding SYSTEM', util/target.c
    attached = target.startswith(("process id", "thread id"))
    return RunTarget(target, not _NO_COMMAND.match(target), attached)


def _privilege(run: PerfStat) -> frozenset[str]:
    """The privilege filters of a run's counted hardware events ("u" for ``:u``, "" for
    none): runs that count different privilege levels count different things."""
    out = set()
    for entry in run.entries:
        logical = logical_name(entry.event, run.arch)
        if entry.status != "counted" or logical is None or logical in _SOFTWARE:
            continue
        out.add("".join(sorted(set(entry.event.modifiers) & _PRIVILEGE)))
    return frozenset(out)


def _gap(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b)) if max(abs(a), abs(b)) > 0 else 0.0


def _conflict(a: PerfStat, b: PerfStat, target: RunTarget) -> str | None:
    """Why two runs of one target cannot share normalisers, or None when they can."""
    if not target.command:
        if a.elapsed_s is None or b.elapsed_s is None:
            return "no elapsed time to compare their windows"
        gap = _gap(a.elapsed_s, b.elapsed_s)
        if gap > BORROW_TOLERANCE:
            return (
                f"elapsed {a.elapsed_s:g} s and {b.elapsed_s:g} s differ "
                f"by {gap:.1%} (> {BORROW_TOLERANCE:.0%})"
            )
    pa, pb = _privilege(a), _privilege(b)
    if pa and pb and pa != pb:
        shown = ", ".join(":" + p if p else "all levels" for p in sorted(pa))
        other = ", ".join(":" + p if p else "all levels" for p in sorted(pb))
        return f"different privilege levels counted ({shown} vs {other})"
    for name in _DETERMINISTIC:
        if name in a.counts and name in b.counts:
            gap = _gap(a.counts[name], b.counts[name])
            if gap > BORROW_TOLERANCE:
                return (
                    f"{name} {a.counts[name]:,.0f} and {b.counts[name]:,.0f} differ by "
                    f"{gap:.1%} (> {BORROW_TOLERANCE:.0%}): not the same work"
                )
    return None


@dataclass(frozen=True)
class Combination:
    """How the runs of one file were put together.

    ``groups``: the runs (indices into the report's runs) whose counts are combined into
    one result; every run is in exactly one group, a run kept alone in its own.
    ``apart``: why runs were not combined, in words, one line each.
    """

    groups: tuple[tuple[int, ...], ...]
    apart: tuple[str, ...] = ()


def combine_runs(runs: Sequence[PerfStat]) -> Combination:
    """Which runs of a file are runs of one command with events split between them.

    Runs are combined when they have the same target (the command line of the header;
    with no command, time windows of one length), count the same privilege levels, agree
    on instructions where both counted them (:data:`BORROW_TOLERANCE`), and do not all
    count the same events (runs with one event set are repeats: kept apart, the metrics
    their median). A target whose runs conflict anywhere keeps all of them apart, so the
    result never depends on the order of the runs.
    """
    by_target: dict[RunTarget | None, list[int]] = {}
    for index, run in enumerate(runs):
        by_target.setdefault(run_target(run), []).append(index)
    groups: list[tuple[int, ...]] = []
    apart: list[str] = []
    for target, members in by_target.items():
        if target is None or len(members) < 2:
            groups.extend((i,) for i in members)
            continue
        conflicts = [
            f"runs {i + 1} and {j + 1} of {target.label}: {why}"
            for i, j in itertools.combinations(members, 2)
            if (why := _conflict(runs[i], runs[j], target)) is not None
        ]
        if conflicts or len({frozenset(runs[i].counts) for i in members}) == 1:
            groups.extend((i,) for i in members)
            apart.extend(conflicts)
        else:
            groups.append(tuple(members))
    if len(by_target) > 1 and any(len(g) > 1 for g in groups):
        names = ", ".join(
            f"run{'s' if len(m) > 1 else ''} {'+'.join(str(i + 1) for i in m)}: "
            f"{t.label if t else 'no header'}"
            for t, m in by_target.items()
        )
        apart.append(f"different targets ({names})")
    return Combination(tuple(sorted(groups)), tuple(apart))


def _own_inputs(run: PerfStat, metric: str) -> int:
    """How many of a metric's inputs the run counted itself (perf's own metric: all)."""
    spec = METRICS.get(metric)
    if spec is None:
        return 1
    own = sum(1 for name in spec.inputs if name in run.counts)
    if own == 0 and metric in run.perf_metrics:
        return len(spec.inputs)
    return own


@dataclass(frozen=True)
class PerfStatReport:
    """Every run of one perf stat file.

    Counts are never added across runs. Runs of one command with their events split
    between them (:func:`combine_runs`) are combined: a metric comes from the run(s) that
    counted the most of its inputs, each run lending the counts it has to the others
    (L1I refills of run 2 over the instructions of run 1). Every other run is kept apart:
    each derives its metrics from its own counts, and :meth:`metrics` takes the median
    over the results that have the metric (for two, their mean).
    """

    runs: tuple[PerfStat, ...]
    combination: Combination | None = None  # None: each run alone

    @property
    def groups(self) -> tuple[tuple[int, ...], ...]:
        if self.combination is None:
            return tuple((i,) for i in range(len(self.runs)))
        return self.combination.groups

    @property
    def combined(self) -> tuple[tuple[int, ...], ...]:
        """The groups of two runs or more that were combined."""
        return tuple(g for g in self.groups if len(g) > 1)

    @property
    def apart(self) -> tuple[str, ...]:
        """Why runs of the file were not combined (empty where there was nothing to say)."""
        return () if self.combination is None else self.combination.apart

    @property
    def runs_note(self) -> str:
        """How the runs were used, for a report's header ("" for one run)."""
        runs, combined = len(self.runs), self.combined
        if runs < 2:
            return ""
        if not combined:
            return f"{runs} runs kept apart: metrics are the median over the runs"
        if len(self.groups) == 1:
            return f"combined {runs} runs of the same command"
        parts = ", ".join("+".join(str(i + 1) for i in g) for g in combined)
        return (
            f"combined runs {parts} of the same command; {len(self.groups)} results kept "
            "apart: metrics are the median over them"
        )

    @property
    def format(self) -> str:
        return self.runs[0].format

    @property
    def arch(self) -> str:
        return self.runs[0].arch

    @property
    def elapsed_s(self) -> float | None:
        times = [r.elapsed_s for r in self.runs if r.elapsed_s is not None]
        return sum(times) if times else None

    @property
    def core_hint(self) -> str | None:
        """The core the runs name; where none does, the instruction set their event names
        show (``aarch64`` for Arm PMUv3 names, ``x86-64`` for Intel EVENT.UMASK names or
        the ``cpu/.../`` PMU: :attr:`isa_hint`), which ``thresholds_by_core.core_facts`` reads as
        "an unnamed core of that set" (generic widths); None when neither shows."""
        hints = [h for r in self.runs if (h := r.core_hint)]
        if hints:
            return "+".join(dict.fromkeys(hints))
        return self.isa_hint

    @property
    def isa_hint(self) -> str | None:
        """``aarch64`` / ``x86-64`` when every event name that shows an instruction set
        shows the same one (:attr:`EventName.arch_hint`); None when none shows one or
        they disagree. Not the parser's default: generic names (cycles, cache-misses)
        show nothing, and a file of only those gets None."""
        hints = {e.event.arch_hint for e in self.entries} | {r.printed_isa for r in self.runs}
        hints -= {None}
        isa = {"arm": "aarch64", "x86": "x86-64"}
        return isa[hints.pop() or ""] if len(hints) == 1 else None

    @property
    def entries(self) -> tuple[PerfStatEntry, ...]:
        return tuple(e for r in self.runs for e in r.entries)

    @property
    def unavailable(self) -> dict[str, str]:
        """Events not counted in any run, with perf's reason."""
        counted = {name for r in self.runs for name in r.counts}
        out: dict[str, str] = {}
        for run in self.runs:
            for name, why in run.unavailable.items():
                if name not in counted:
                    out.setdefault(name, why)
        return out

    @property
    def multiplexed(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for run in self.runs:
            for name, pct in run.multiplexed.items():
                out[name] = min(out.get(name, 100.0), pct)
        return out

    @property
    def unmapped(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(u for r in self.runs for u in r.unmapped))

    @property
    def ambiguous(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(u for r in self.runs for u in r.ambiguous))

    def borrowed(self) -> dict[int, dict[str, tuple[int, ...]]]:
        """Per run (index) of a combined group: each count it lacks -> the runs lending it."""
        out: dict[int, dict[str, tuple[int, ...]]] = {}
        for group in self.combined:
            for i in group:
                lent: dict[str, tuple[int, ...]] = {}
                for j in group:
                    for name in self.runs[j].counts:
                        if j != i and name not in self.runs[i].counts:
                            lent[name] = (*lent.get(name, ()), j)
                if lent:
                    out[i] = lent
        return out

    def on_core(self, core: str) -> PerfStatReport:
        """The report with the counts ``core``'s kernel backs with an event the core does
        not have taken out, each with its reason (``pmu.trust.unsupported_stalls``): a
        saved file does not say which core counted it, so this waits for the core. The
        running shares of AMD's generic cache events move to the L2 names their counts
        take on that core (:meth:`PerfStat._cache_level_of_generic_events`).

        A Neoverse N2 (the row that leaves the revision open) takes the revision the file
        shows (:func:`core.metrics.n2_revision`, one for every run: they ran on one
        machine); where it shows none, or runs disagree, the slot events whose meaning
        depends on it are taken out with the reason (:data:`N2_REVISION_UNKNOWN`)."""
        revision, revision_why = self._n2_revision() if core == "neoverse-n2" else (None, "")
        runs = []
        for run in self.runs:
            refused = [n for n, why in run.unavailable.items() if why == REASONS[NOT_SUPPORTED]]
            drop = unsupported_stalls(core, run.counts, refused)
            if core == "neoverse-n2" and revision is not None:
                row = N2_REVISION_ROWS[revision]
                run = replace(run, revision_row=row, revision_why=revision_why)
            elif core == "neoverse-n2":
                slots = [n for n in N2_REVISION_EVENTS if n in run.counts]
                drop |= {n: N2_REVISION_UNKNOWN if n == slots[0] else N2_SAME for n in slots}
            if drop:
                counts = {n: v for n, v in run.counts.items() if n not in drop}
                run = replace(run, counts=counts, unavailable={**run.unavailable, **drop})
            shares = run._cache_level_of_generic_events(run.multiplexed, core)
            if shares != run.multiplexed:
                run = replace(run, multiplexed=dict(shares))
            runs.append(run)
        return replace(self, runs=tuple(runs))

    def _n2_revision(self) -> tuple[str | None, str]:
        """The Neoverse N2 revision the runs show, with why; None where none shows one or
        two runs show different ones."""
        shown: dict[str, str] = {}
        for run in self.runs:
            revision, why = n2_revision(run.counts, run.perf_metrics)
            if revision is not None:
                shown.setdefault(revision, why)
        return next(iter(shown.items())) if len(shown) == 1 else (None, "")

    @property
    def revision(self) -> str:
        """How a Neoverse N2's revision was read from the file ("" where it was not)."""
        run = next((r for r in self.runs if r.revision_row), None)
        return f"{run.revision_row}: {run.revision_why}" if run else ""

    def per_run_metrics(self, core: str = "", calls: int = 1) -> list[dict[str, float]]:
        return [run.metrics(core, calls) for run in self.runs]

    def _group_metrics(self, group: tuple[int, ...], core: str, calls: int) -> dict[str, float]:
        if len(group) == 1:
            return self.runs[group[0]].metrics(core, calls)
        runs = [self.runs[i] for i in group]
        # A count several runs have: their median (they agree on instructions within
        # BORROW_TOLERANCE; the median keeps the result independent of the run order).
        shared = {
            name: float(statistics.median(r.counts[name] for r in runs if name in r.counts))
            for name in {n for r in runs for n in r.counts}
        }
        results = [
            (r, r.metrics(core, calls, {k: v for k, v in shared.items() if k not in r.counts}))
            for r in runs
        ]
        names = {n for _, m in results for n in m}
        out: dict[str, float] = {}
        for name in sorted(names, key=_metric_order):
            scored = [(_own_inputs(r, name), m[name]) for r, m in results if name in m]
            best = max(s for s, _ in scored)
            out[name] = float(statistics.median(v for s, v in scored if s == best))
        return out

    def metrics(self, core: str = "", calls: int = 1) -> dict[str, float]:
        """Each metric derived within each result (a run, or runs combined), then the
        median over the results that have it.

        ``calls`` is the calls of each run.
        """
        per_result = [self._group_metrics(g, core, calls) for g in self.groups]
        names = dict.fromkeys(n for m in per_result for n in m)
        return {n: float(statistics.median(m[n] for m in per_result if n in m)) for n in names}

    def limits(self) -> tuple[str, ...]:
        """What the counts cannot support, in words: the normalisers no run counted, and
        a system-wide scope. Only facts about the file; judging is the classifier's."""
        counted = {n for r in self.runs for n in r.counts}
        hardware = counted - _SOFTWARE
        out: list[str] = []
        if hardware and "instructions" not in counted:
            out.append(
                "no instructions counted: no rate per 1,000 instructions (MPKI) and no IPC "
                f"can be formed from {', '.join(sorted(hardware))}, so the causes judged on "
                "MPKI or IPC (caches, TLBs, branches, front end, IPC collapse) are not judged; "
                "miss ratios per access and stall shares of cycles still are"
            )
        if hardware and "cycles" not in counted:
            out.append("no cycles counted: no IPC and no share of cycles stalled")
        out.extend(dict.fromkeys(note for r in self.runs for note in r.tool_limits))
        targets = {
            (t, source_label(r.format).split()[0])
            for r in self.runs
            if (t := run_target(r)) and not t.command
        }
        for target, tool in sorted(targets, key=lambda item: item[0].text):
            if target.attached:  # the attached tasks over the window the tool was attached
                what = f"the attached tasks' while {tool} was attached, not a whole run"
            else:
                what = "every task's on the counted CPUs, not one program's"
            out.append(f"{target.text}: the counts are {what}")
        return tuple(out)

    def rates(self) -> dict[str, float]:
        """Every hardware count per second of elapsed time (the median over the runs that
        have it and their elapsed time): what a run without instructions still gives."""
        per: dict[str, list[float]] = {}
        for run in self.runs:
            if not run.elapsed_s:
                continue
            for name, value in run.counts.items():
                if name not in _SOFTWARE:
                    per.setdefault(name, []).append(value / run.elapsed_s)
        return {n: float(statistics.median(v)) for n, v in per.items()}


def _metric_order(name: str) -> tuple[int, str]:
    order = list(METRICS)
    return (order.index(name), "") if name in METRICS else (len(order), name)


def _single(runs: Sequence[PerfStat]) -> PerfStat:
    if len(runs) > 1:
        raise PerfStatError(
            f"the text holds {len(runs)} separate perf stat runs; read it with parse_report, "
            "which keeps the runs apart"
        )
    return runs[0]


# -- entry points ------------------------------------------------------------------------


def _format(text: str) -> str:
    body = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if body and sum(ln.lstrip().startswith("{") for ln in body) * 2 > len(body):
        return "json"
    text_score = sum(1 for ln in body if _TIMES.match(ln) or _counter_line(ln) is not None)
    csv_scores = {s: _csv_score(body, s) for s in _CSV_SEPARATORS}
    sep = max(csv_scores, key=lambda s: csv_scores[s])
    if csv_scores[sep] > 0 and csv_scores[sep] >= text_score:
        return "csv"
    return "text"


#: Tools that print counts as perf stat does, by format, with the name the output gives.
COUNTING_TOOLS = {"simpleperf": "simpleperf stat"}


def source_label(fmt: str) -> str:
    """What wrote a run of this format, for the header of an explanation: "" for the
    tools that print their own metrics (they name themselves in the format)."""
    return "" if fmt in TOOL_FORMATS else COUNTING_TOOLS.get(fmt, "perf stat")


#: Tools that drive the counters and print the metrics they computed, not perf stat's
#: counts, with the instruction set they count on: Arm's topdown-tool reads Arm PMUs only
#: (its README), Intel's toplev Intel's (pmu-tools).
TOOL_FORMATS = {"topdown-tool": "arm", "toplev": "x86"}


def _toplev_run(text: str) -> PerfStat:
    from .toplev import read

    run = read(text)
    if not run.values:
        raise PerfStatError("toplev output without a single top-down node we read")
    return PerfStat(
        format="toplev",
        entries=(),
        arch="x86",
        perf_metrics=_with_level1(run.metrics),
        unmapped=(
            (f"the E-core's (atom) {len(run.e_core)} nodes: another core type, not judged",)
            if run.e_core
            else ()
        ),
        title="toplev",
        core_named=run.cpu,
        printed_isa=TOOL_FORMATS["toplev"],
    )


def _simpleperf_runs(text: str, arch: str | None) -> list[PerfStat]:
    from .simpleperf import perf_name, read_reports

    runs = []
    for report in read_reports(text):
        entries = [
            PerfStatEntry(
                # read as perf's name, shown as the file printed it
                replace(split_event(perf_name(row.event)), text=row.event),
                row.count,
                row.unit,
                "counted" if row.count is not None else NO_RUN_TIME,
                row.running_pct,
            )
            for row in report.rows
        ]
        run = _collect("simpleperf", entries, arch, elapsed_s=report.elapsed_s)
        limits = (
            (
                "simpleperf warned that the events outnumbered the hardware counters "
                "and printed no share of the time each ran: every hardware count covers "
                "only part of the run, by an unknown share (count fewer events per run, "
                "or use --group)",
            )
            if report.multiplexed_unknown
            else ()
        )
        runs.append(replace(run, tool_limits=limits, scope=report.scope))
    if not runs:
        raise PerfStatError(NO_COUNTERS)
    return runs


def _topdown_tool_runs(text: str) -> list[PerfStat]:
    from .topdown_tool import core_slug, read_runs

    runs = [
        PerfStat(
            format="topdown-tool",
            entries=(),
            arch="arm",
            perf_metrics=run.metrics,
            unmapped=tuple(f"{title} ({value:g})" for title, value in run.unmapped.items()),
            title=run.title,
            core_named=core_slug(run.cpu),
            printed_isa=TOOL_FORMATS["topdown-tool"],
        )
        for run in read_runs(text)
    ]
    if not runs:
        raise PerfStatError("topdown-tool output without a single metric line")
    return runs


# A block quoted as a whole: by a mail reader ("> ", nested "> > "), as a shell or
# markdown comment ("# "), in a C or Java comment ("// ", " * "). perf prints no line of
# its own that way at the start of every line (its "# started on" header and its
# shadow comments leave the count lines unmarked), so a mark on every line is a quote.
_QUOTE = re.compile(r"^[ \t]*(?:(?:>[ \t]?)+|#+(?=[ \t]|$)|//+|\*(?=[ \t]|$))[ \t]?")


def _unquoted(text: str) -> str:
    """``text`` without the quote marks that begin every one of its non-blank lines."""
    lines = text.splitlines()
    marks = [_QUOTE.match(line) for line in lines if line.strip()]
    if not marks or not all(marks):
        return text
    if len({m.group(0).strip()[:1] for m in marks if m}) != 1:
        return text
    return "\n".join(_QUOTE.sub("", line, count=1) for line in lines)


def parse_report(text: str, *, arch: str | None = None) -> PerfStatReport:
    """Every run of a perf stat output, in whichever format it is (CSV, JSON lines, text,
    or Arm's topdown-tool, which drives perf stat and prints the metrics it computed).

    ``arch`` (``"arm"`` / ``"x86"``) decides the arch-specific generic names and raw codes;
    by default it is read from the event names in the file, else Arm. Text files are cut
    into runs at each ``Performance counter stats for`` title; CSV and JSON output (which
    print no title) are one run.
    """
    if not text.strip():
        raise PerfStatError("empty file: no perf stat output")
    text = _unquoted(text)
    from .simpleperf import looks_like_simpleperf
    from .topdown_tool import looks_like_topdown_tool
    from .toplev import looks_like_toplev

    if looks_like_topdown_tool(text.splitlines()):
        return PerfStatReport(tuple(_topdown_tool_runs(text)))
    if looks_like_toplev(text.splitlines()):
        return PerfStatReport((_toplev_run(text),))
    if looks_like_simpleperf(text.splitlines()):
        return PerfStatReport(tuple(_simpleperf_runs(text, arch)))
    fmt = _format(text)
    if fmt == "json":
        return PerfStatReport((parse_json_lines(text, arch=arch),))
    if fmt == "csv":
        return PerfStatReport((parse_csv(text, arch=arch),))
    runs = tuple(_text_runs(text, arch))
    return PerfStatReport(runs, combine_runs(runs) if len(runs) > 1 else None)


def parse(text: str, *, arch: str | None = None) -> PerfStat:
    """Parse the perf stat output of one run (see :func:`parse_report` for several)."""
    return _single(parse_report(text, arch=arch).runs)


MAX_PERF_STAT_BYTES = 64 << 20  # perf stat output is a few KiB; refuse anything huge


def _read(path: Path) -> str:
    from ..core.safe_read import UnreadableFile, read_limited

    try:
        data = read_limited(path, MAX_PERF_STAT_BYTES, what="perf stat output")
    except UnreadableFile as exc:
        text = str(exc)
        raise PerfStatError(
            text
            if text.startswith("cannot read")
            else f"cannot read the perf stat output: {text} (write it with perf stat -o FILE)"
        ) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")  # old locales' no-break space is 0xA0


def load_report(path: str | Path, *, arch: str | None = None) -> PerfStatReport:
    """Read and parse a perf stat output file, every run of it."""
    path = Path(path)
    text = _read(path)
    try:
        return parse_report(text, arch=arch)
    except PerfStatError as exc:
        raise PerfStatError(f"{path}: {exc}") from None


def load(path: str | Path, *, arch: str | None = None) -> PerfStat:
    """Read and parse a perf stat output file of one run."""
    path = Path(path)
    try:
        return _single(load_report(path, arch=arch).runs)
    except PerfStatError as exc:
        if str(exc).startswith(str(path)) or str(exc).startswith("cannot read"):
            raise
        raise PerfStatError(f"{path}: {exc}") from None
