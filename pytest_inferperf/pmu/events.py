"""The event catalogue: logical event names and how each maps onto this machine.

Owns: the logical names the rest of the product speaks (``cycles``,
``l1d_refill``, ``stall_backend`` ...), their Arm PMUv3 sysfs names and
codes, their x86 generic hardware / hw-cache encodings, software events,
the ratio families that must share a counter group, and resolving a name
to concrete ``(pmu type, config)`` pairs for the CPU at hand.

Also owns the wording of why an event has no counter (a true cause: "not
implemented on <core>" only where Arm's event list says so, "not listed by
this PMU" where the real core has it) and :func:`reason_group`, the cause one
reason shares with others, which reports group their not-counted lines by.

Must not: open anything. Resolution only reads the facts ``cpu`` gathered;
whether an event really opens is the counting code's question.

Arm event codes: Arm ARM PMUv3 common events, as listed in Linux
``tools/perf/pmu-events/arch/arm64/common-and-microarch.json`` and
ARM-software/data ``pmu/*.json``. The sysfs names are the lower-case
architectural names published by ``drivers/perf/arm_pmuv3.c``. x86 generic
encodings: ``include/uapi/linux/perf_event.h`` (perf_hw_id, perf_hw_cache_id).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..core.errors import InferperfError
from .arm_data import core_implements
from .cpu import CpuInfo, PmuInfo
from .perf_event import PERF_TYPE_HARDWARE, PERF_TYPE_HW_CACHE, PERF_TYPE_SOFTWARE

# perf_sw_ids
SW_TASK_CLOCK = 1
SW_PAGE_FAULTS = 2
SW_CONTEXT_SWITCHES = 3
SW_CPU_MIGRATIONS = 4
SW_PAGE_FAULTS_MAJ = 6

# perf_hw_id
HW_CPU_CYCLES = 0
HW_INSTRUCTIONS = 1
HW_BRANCH_INSTRUCTIONS = 4
HW_BRANCH_MISSES = 5
HW_STALLED_CYCLES_FRONTEND = 7
HW_STALLED_CYCLES_BACKEND = 8

# perf_hw_cache_id / op / result
CACHE_L1D, CACHE_L1I, CACHE_LL, CACHE_DTLB, CACHE_ITLB = 0, 1, 2, 3, 4
OP_READ = 0
RESULT_ACCESS, RESULT_MISS = 0, 1


def hw_cache(cache: int, op: int, result: int) -> tuple[int, int]:
    """(type, config) of a generic hw-cache event."""
    return PERF_TYPE_HW_CACHE, cache | (op << 8) | (result << 16)


@dataclass(frozen=True)
class EventSpec:
    """One logical event and its encodings.

    ``arm`` lists (sysfs name, code) alternatives in order of preference;
    ``arm_pair`` names another event whose alternative must have the same
    index (branch counts and misses must come from the same pair).
    ``counted`` is False for an event that is read from ``perf stat`` files but
    not opened by default: every default event shares the core's few counters.
    """

    name: str
    description: str
    software: int | None = None
    arm: tuple[tuple[str, int], ...] = ()
    arm_pair: str | None = None
    x86: tuple[int, int] | None = None
    counted: bool = True

    @property
    def is_software(self) -> bool:
        return self.software is not None


CATALOGUE: dict[str, EventSpec] = {
    spec.name: spec
    for spec in (
        EventSpec(
            "cycles",
            "CPU cycles",
            arm=(("cpu_cycles", 0x11),),
            x86=(PERF_TYPE_HARDWARE, HW_CPU_CYCLES),
        ),
        EventSpec(
            "instructions",
            "instructions retired",
            arm=(("inst_retired", 0x08),),
            x86=(PERF_TYPE_HARDWARE, HW_INSTRUCTIONS),
        ),
        EventSpec(
            "l1d_access",
            "L1 data cache accesses",
            arm=(("l1d_cache", 0x04),),
            x86=hw_cache(CACHE_L1D, OP_READ, RESULT_ACCESS),
        ),
        EventSpec(
            "l1d_refill",
            "L1 data cache refills (misses)",
            arm=(("l1d_cache_refill", 0x03),),
            x86=hw_cache(CACHE_L1D, OP_READ, RESULT_MISS),
        ),
        EventSpec(
            "l1i_access",
            "L1 instruction cache accesses",
            arm=(("l1i_cache", 0x14),),
            x86=hw_cache(CACHE_L1I, OP_READ, RESULT_ACCESS),
        ),
        EventSpec(
            "l1i_refill",
            "L1 instruction cache refills (misses)",
            arm=(("l1i_cache_refill", 0x01),),
            x86=hw_cache(CACHE_L1I, OP_READ, RESULT_MISS),
        ),
        EventSpec("l2_access", "L2 cache accesses", arm=(("l2d_cache", 0x16),)),
        EventSpec("l2_refill", "L2 cache refills (misses)", arm=(("l2d_cache_refill", 0x17),)),
        EventSpec(
            "llc_read",
            "last-level cache reads",
            arm=(("ll_cache_rd", 0x36),),
            x86=hw_cache(CACHE_LL, OP_READ, RESULT_ACCESS),
        ),
        EventSpec(
            "llc_miss",
            "last-level cache read misses",
            arm=(("ll_cache_miss_rd", 0x37),),
            x86=hw_cache(CACHE_LL, OP_READ, RESULT_MISS),
        ),
        EventSpec(
            "dtlb_access",
            "data TLB accesses",
            arm=(("l1d_tlb", 0x25),),
            x86=hw_cache(CACHE_DTLB, OP_READ, RESULT_ACCESS),
        ),
        EventSpec("l1d_tlb_refill", "L1 data TLB refills", arm=(("l1d_tlb_refill", 0x05),)),
        EventSpec(
            "dtlb_walk",
            "data TLB misses that walked the page table",
            arm=(("dtlb_walk", 0x34),),
            x86=hw_cache(CACHE_DTLB, OP_READ, RESULT_MISS),
        ),
        EventSpec(
            "itlb_access",
            "instruction TLB accesses",
            arm=(("l1i_tlb", 0x26),),
            x86=hw_cache(CACHE_ITLB, OP_READ, RESULT_ACCESS),
        ),
        EventSpec(
            "itlb_walk",
            "instruction TLB misses that walked the page table",
            arm=(("itlb_walk", 0x35),),
            x86=hw_cache(CACHE_ITLB, OP_READ, RESULT_MISS),
        ),
        # What perf's generic iTLB-load-misses counts on Arm (armv8_pmuv3_perf_cache_map
        # in drivers/perf/arm_pmuv3.c), and Cortex-A53/A72's only instruction-TLB miss
        # event (no ITLB_WALK there). Read from files; not opened by default, so the
        # plugin's events keep their share of the counters.
        EventSpec(
            "l1i_tlb_refill",
            "L1 instruction TLB refills",
            arm=(("l1i_tlb_refill", 0x02),),
            counted=False,
        ),
        EventSpec(
            "branches",
            "branches (retired, or predicted where retired is absent)",
            arm=(("br_retired", 0x21), ("br_pred", 0x12)),
            arm_pair="branch_misses",
            x86=(PERF_TYPE_HARDWARE, HW_BRANCH_INSTRUCTIONS),
        ),
        EventSpec(
            "branch_misses",
            "mispredicted branches",
            arm=(("br_mis_pred_retired", 0x22), ("br_mis_pred", 0x10)),
            arm_pair="branches",
            x86=(PERF_TYPE_HARDWARE, HW_BRANCH_MISSES),
        ),
        EventSpec(
            "stall_frontend",
            "cycles with no operation issued: frontend",
            arm=(("stall_frontend", 0x23),),
            x86=(PERF_TYPE_HARDWARE, HW_STALLED_CYCLES_FRONTEND),
        ),
        EventSpec(
            "stall_backend",
            "cycles with no operation issued: backend",
            arm=(("stall_backend", 0x24),),
            x86=(PERF_TYPE_HARDWARE, HW_STALLED_CYCLES_BACKEND),
        ),
        EventSpec(
            "stall_backend_mem",
            "backend stall cycles waiting on memory",
            arm=(("stall_backend_mem", 0x4005),),
        ),
        # Intel (Skylake on: CYCLE_ACTIVITY.STALLS_L3_MISS; Golden Cove on:
        # MEMORY_ACTIVITY.STALLS_L3_MISS): "execution stalls while L3 cache miss demand load
        # is outstanding" (Intel perfmon event lists). Read from perf stat files only.
        EventSpec(
            "stall_l3_miss",
            "cycles stalled with a demand load that missed the L3 outstanding",
            counted=False,
        ),
        # The same for a load that missed the L1D, and the L2 (CYCLE_ACTIVITY /
        # MEMORY_ACTIVITY .STALLS_L1D_MISS, .STALLS_L2_MISS); their differences are
        # Intel TMA's L2_Bound and L3_Bound (core.metrics). Read from perf stat files only.
        EventSpec(
            "stall_l1d_miss",
            "cycles stalled with a demand load that missed the L1D outstanding",
            counted=False,
        ),
        EventSpec(
            "stall_l2_miss",
            "cycles stalled with a demand load that missed the L2 outstanding",
            counted=False,
        ),
        # AMD Zen 4 on (amdzen4/amdzen5 pipeline.json, ex_no_retire.*): cycles with no
        # retirement while the oldest op waits on load data, and for any reason. Their
        # ratio splits the backend's slots into memory and core (backend_bound_memory).
        # Read from perf stat files only.
        EventSpec(
            "no_retire_load",
            "cycles retiring nothing while the oldest op waits on load data",
            counted=False,
        ),
        EventSpec(
            "no_retire_any",
            "cycles retiring nothing while the oldest op is not complete",
            counted=False,
        ),
        # AMD Zen 4 on: pipeline restarts (resyncs_or_nc_redirects; Zen 5
        # bp_redirects.resync), the bad speculation that is not a mispredicted branch
        # (amdzen4/amdzen5 pipeline.json, bad_speculation_pipeline_restarts).
        EventSpec("pipeline_restarts", "pipeline restarts (resyncs)", counted=False),
        EventSpec("stall_slot", "issue slots not used", arm=(("stall_slot", 0x3F),)),
        EventSpec(
            "stall_slot_frontend",
            "issue slots not used: frontend",
            arm=(("stall_slot_frontend", 0x3E),),
        ),
        EventSpec(
            "stall_slot_backend",
            "issue slots not used: backend",
            arm=(("stall_slot_backend", 0x3D),),
        ),
        EventSpec("op_retired", "micro-operations retired", arm=(("op_retired", 0x3A),)),
        EventSpec("op_spec", "micro-operations speculatively executed", arm=(("op_spec", 0x3B),)),
        EventSpec("task_clock", "time on CPU (ns)", software=SW_TASK_CLOCK),
        EventSpec("page_faults", "page faults", software=SW_PAGE_FAULTS),
        EventSpec("major_faults", "page faults that needed I/O", software=SW_PAGE_FAULTS_MAJ),
        EventSpec("context_switches", "context switches", software=SW_CONTEXT_SWITCHES),
        EventSpec("cpu_migrations", "moves of a thread to another CPU", software=SW_CPU_MIGRATIONS),
    )
}

# Software events the kernel raises from the scheduler, with kernel registers: a counter
# that excludes the kernel (``:u``, or ``exclude_kernel`` where perf_event_paranoid >= 2
# keeps an unprivileged user out of it) never counts them (perf_exclude_event() in
# kernel/events/core.c), so it reads 0 whatever the program did. Page faults taken in
# user mode carry the user's registers and still count; task-clock counts time.
KERNEL_ONLY_SOFTWARE: tuple[str, ...] = ("context_switches", "cpu_migrations")


def kernel_only_reason(paranoid: int | None) -> str:
    """Why a kernel-only software event is not counted by a counter that excludes the
    kernel, and the fix (``paranoid``: perf_event_paranoid where the plugin opened it)."""
    where = (
        f"perf_event_paranoid is {paranoid}, so this user's counters exclude the kernel"
        if paranoid is not None
        else "the counter excludes the kernel (:u)"
    )
    return (
        f"counted in user mode only: {where}, and the scheduler switches and migrates "
        "threads in the kernel, so it would read 0 whatever the run did. Run `sudo sysctl "
        "kernel.perf_event_paranoid=1` or grant CAP_PERFMON to count it"
    )


DEFAULT_EVENTS: tuple[str, ...] = tuple(n for n, s in CATALOGUE.items() if s.counted)
SOFTWARE_EVENTS: tuple[str, ...] = tuple(n for n, s in CATALOGUE.items() if s.is_software)

# Events that are read together in one ratio or formula share a counter group,
# so multiplexing scales numerator and denominator over the same time.
FAMILIES: tuple[tuple[str, ...], ...] = (
    ("cycles", "instructions", "stall_frontend", "stall_backend", "stall_backend_mem"),
    ("l1d_access", "l1d_refill"),
    ("l1i_access", "l1i_refill"),
    ("l2_access", "l2_refill"),
    ("llc_read", "llc_miss"),
    ("branches", "branch_misses"),
    ("dtlb_access", "dtlb_walk", "l1d_tlb_refill"),
    ("itlb_access", "itlb_walk"),
    ("stall_slot", "stall_slot_frontend", "stall_slot_backend", "op_retired", "op_spec"),
)
# Software events never multiplex. task_clock lives on its own kernel PMU (the task
# clock), the others on the software-event PMU; a group mixing the two lost page
# faults after its first disable/enable cycle (seen on Linux 6.18), so they are apart.
SOFTWARE_GROUPS: tuple[tuple[str, ...], ...] = (
    ("task_clock",),
    ("page_faults", "major_faults", "context_switches", "cpu_migrations"),
)


@dataclass(frozen=True)
class ResolvedEvent:
    """A logical event as one concrete counter on one PMU."""

    name: str
    pmu: str
    type: int
    config: int
    source: str

    @property
    def hardware(self) -> bool:
        return self.type != PERF_TYPE_SOFTWARE


@dataclass(frozen=True)
class Resolution:
    """Every requested event: the counters it needs, or why it has none."""

    events: dict[str, tuple[ResolvedEvent, ...]]
    unavailable: dict[str, str]


class UnknownEventError(InferperfError, ValueError):
    pass


def check_names(names: Iterable[str]) -> list[str]:
    names = list(dict.fromkeys(names))
    unknown = [n for n in names if n not in CATALOGUE]
    if unknown:
        raise UnknownEventError(
            f"unknown event(s) {', '.join(unknown)}: known events are {', '.join(CATALOGUE)}"
        )
    return names


def _arm_choice(spec: EventSpec, pmu: PmuInfo) -> tuple[str, int] | None:
    """The first alternative this PMU lists (and whose pair it lists at the same index)."""
    pair = CATALOGUE[spec.arm_pair] if spec.arm_pair else None
    for index, (sysfs_name, _code) in enumerate(spec.arm):
        if sysfs_name not in pmu.events:
            continue
        if pair is not None and pair.arm[index][0] not in pmu.events:
            continue
        return sysfs_name, pmu.events[sysfs_name]
    return None


def _arm_missing_reason(spec: EventSpec, cpu: CpuInfo, pmu: PmuInfo) -> str:
    """Why ``pmu`` has no counter for ``spec``: a true cause, from Arm's event lists.

    The text is ``<cause> (<this event's detail>)``; :func:`reason_group` strips the
    detail so one cause covering many events is said once.
    """
    wanted = " or ".join(f"{name.upper()} ({code:#x})" for name, code in spec.arm)
    detail = (
        f"({pmu.name} lists no {wanted} in sysfs; a raw code it does not list "
        "would open and silently read 0)"
    )
    core, slugs = cpu.core, cpu.core_slug.split("+")
    known = [core_implements(slug, code) for slug in slugs for _, code in spec.arm]
    if known and all(k is False for k in known):
        return f"not implemented on {core} {detail}"
    if any(k is True for k in known):
        return (
            f"not listed by this PMU ({pmu.name}); real {core} cores implement it: "
            f"the hypervisor or kernel hides it {detail}"
        )
    return (
        f"not listed by this PMU ({pmu.name}); Arm publishes no event list for {core} "
        f"to say whether the core has it {detail}"
    )


_DETAIL = re.compile(r"\s*\(\S+ lists no .*\)$", re.S)


def reason_cause(reason: str) -> str:
    """A reason without its per-event detail: the whole cause and fix, said once."""
    return _DETAIL.sub("", reason)


def reason_group(reason: str) -> str:
    """The cause a reason shares with other events: its per-event detail removed.

    ``"not implemented on Cortex-A72 (armv8_cortex_a72 lists no STALL_FRONTEND ...)"``
    -> ``"not implemented on Cortex-A72"``. Other reasons: their part before the
    first ``":"`` (the cause; the fix follows it), as the reports always showed them.
    """
    if reason.startswith("emulated PMU ("):  # the evidence is said once, on its own line
        return "emulated PMU, so its cycles are not a CPU's"
    stripped = _DETAIL.sub("", reason)
    if stripped != reason:
        return stripped
    head, _, rest = reason.partition(":")
    if head.strip() == "not available" and rest:  # "not available: <cause>: <detail>"
        return "not available: " + rest.split(":", 1)[0].split(" (")[0].strip()
    return head


def resolve(names: Sequence[str], cpu: CpuInfo) -> Resolution:
    """Map logical names to counters for ``cpu``; unavailable ones get a reason."""
    events: dict[str, tuple[ResolvedEvent, ...]] = {}
    unavailable: dict[str, str] = {}
    for name in check_names(names):
        spec = CATALOGUE[name]
        if spec.software is not None:
            events[name] = (
                ResolvedEvent(name, "software", PERF_TYPE_SOFTWARE, spec.software, "software"),
            )
            continue
        if cpu.arch in ("aarch64", "arm64"):
            _resolve_arm(spec, cpu, events, unavailable)
        elif cpu.arch == "x86_64":
            if spec.x86 is None:
                unavailable[name] = (
                    "no generic x86 event: Linux has no generic encoding for it, and the "
                    f"model-specific raw events are not mapped for {cpu.core}"
                )
            else:
                type_, config = spec.x86
                kind = "generic hardware" if type_ == PERF_TYPE_HARDWARE else "generic hw-cache"
                events[name] = (ResolvedEvent(name, "cpu", type_, config, f"{kind} {config:#x}"),)
        else:
            unavailable[name] = (
                f"not available: hardware events are mapped for x86_64 and aarch64, "
                f"this machine is {cpu.arch}"
            )
    return Resolution(events, unavailable)


def _resolve_arm(
    spec: EventSpec,
    cpu: CpuInfo,
    events: dict[str, tuple[ResolvedEvent, ...]],
    unavailable: dict[str, str],
) -> None:
    if not cpu.pmus:
        unavailable[spec.name] = (
            "no PMU exposed (no Arm core PMU under /sys/bus/event_source/devices): typical "
            "of VMs and CI runners; run on bare metal or an instance size that passes the "
            "PMU through, or use the simulate backend"
        )
        return
    found: list[ResolvedEvent] = []
    missing: list[str] = []
    for pmu in cpu.pmus:
        choice = _arm_choice(spec, pmu)
        if choice is None:
            missing.append(_arm_missing_reason(spec, cpu, pmu))
            continue
        sysfs_name, code = choice
        found.append(
            ResolvedEvent(
                spec.name,
                pmu.name,
                pmu.type,
                code,
                f"{pmu.name}/events/{sysfs_name} ({code:#x})",
            )
        )
    if found and not missing:
        events[spec.name] = tuple(found)
    elif found:
        # big.LITTLE with the event on one core type only: counting it would miss
        # the work done on the other cores, so it is not counted at all.
        unavailable[spec.name] = "only on some core types: " + "; ".join(missing)
    else:
        unavailable[spec.name] = missing[0]


def pack_groups(names: Sequence[str], capacity: int | None) -> list[list[str]]:
    """Pack events into groups of at most ``capacity``, keeping each family together.

    Families larger than ``capacity`` are split in order. Software events
    form the groups of ``SOFTWARE_GROUPS``. ``capacity=None``
    means unknown: one group per family.
    """
    wanted = set(names)
    groups: list[list[str]] = []
    hw_families: list[list[str]] = []
    placed: set[str] = set()
    for family in FAMILIES + SOFTWARE_GROUPS:
        members = [n for n in family if n in wanted and n not in placed]
        placed.update(members)
        if not members:
            continue
        if family in SOFTWARE_GROUPS:
            groups.append(members)
        else:
            hw_families.append(members)
    rest = [n for n in names if n not in placed]
    if rest:
        hw_families.append(rest)
    if capacity is None:
        return hw_families + groups
    capacity = max(1, capacity)
    chunks: list[list[str]] = []
    for kept in hw_families:
        chunks.extend(kept[i : i + capacity] for i in range(0, len(kept), capacity))
    bins: list[list[str]] = []
    for chunk in sorted(chunks, key=len, reverse=True):  # first-fit decreasing
        for b in bins:
            if len(b) + len(chunk) <= capacity:
                b.extend(chunk)
                break
        else:
            bins.append(list(chunk))
    return bins + groups
