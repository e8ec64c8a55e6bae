"""Which counted values may be used: an emulated PMU's cycles, events that never moved,
events a kernel backs with one the core lacks.

Owns: deciding, from the machine facts and what was counted, that a PMU is
emulated (``cpu.emulation``, or cycles equal to instructions exactly over
millions of them, which only QEMU's ``-icount`` produces) and that an event
the PMU lists read 0 over millions of instructions ("listed but did not
count"), that a stall event counted more cycles than the run had, and that a generic
stall event is backed on this core by an event the core does not have (AMD Zen 2 and
later) or by one that does not count its end's stalls (Intel Nehalem to Ivy Bridge);
and taking those values out of the
samples, with the reason in the event's status, so that no metric, budget or diagnosis
uses them as numbers.

Must not: open counters or judge budgets. A value taken out here is reported
as not counted, with its reason, never as 0.

Why cycles go on an emulated PMU: under ``qemu-system-aarch64 -icount shift=0``
the guest clock advances one tick per instruction, so ``cpu_cycles`` equals
``inst_retired`` exactly, IPC is 1.0 whatever the code does, and the stall events
QEMU lists always read 0 (measured, see docs/counting.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..core.metrics import METRICS
from .base import CounterSample, EventStatus
from .cpu import CpuInfo

#: Below this many instructions (or cycles) a zero count proves nothing.
SILENT_MIN = 1_000_000
#: Events measured in cycles: meaningless where cycles are emulated.
CYCLE_EVENTS = (
    "cycles",
    "stall_frontend",
    "stall_backend",
    "stall_backend_mem",
    "stall_slot",
    "stall_slot_frontend",
    "stall_slot_backend",
)
SOFTWARE = frozenset(
    {"task_clock", "page_faults", "major_faults", "context_switches", "cpu_migrations"}
)


def _total(samples: Sequence[CounterSample], name: str) -> tuple[float, int] | None:
    counts = [s.counts[name] for s in samples if name in s.counts]
    if not counts:
        return None
    return sum(c.value for c in counts), sum(c.raw for c in counts)


def emulated_reason(cpu: CpuInfo | None, samples: Sequence[CounterSample] = ()) -> str | None:
    """Why this PMU is emulated, or None: the machine's files, else cycles == instructions."""
    evidence = []
    if cpu is not None and cpu.emulation:
        evidence.append(cpu.emulation)
    cycles, instructions = _total(samples, "cycles"), _total(samples, "instructions")
    if (
        cycles
        and instructions
        and instructions[1] >= SILENT_MIN
        and all(
            s.counts["cycles"].raw == s.counts["instructions"].raw
            for s in samples
            if "cycles" in s.counts and "instructions" in s.counts
        )
    ):
        evidence.append(
            f"cycles equal instructions exactly ({instructions[1]:,} of each), "
            "as only an emulator's instruction clock (QEMU -icount) counts"
        )
    return "; ".join(evidence) or None


def emulated_event_reason(evidence: str) -> str:
    """The not-counted reason of a cycle-based event on an emulated PMU."""
    return (
        f"emulated PMU ({evidence}): its cycles are not a CPU's, so IPC "
        "and cycle-based ratios mean nothing there"
    )


def silent_zeros(
    totals: Mapping[str, float], sources: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Hardware events of ``totals`` (logical name -> count over the run) that read 0
    while the core did at least :data:`SILENT_MIN` instructions or cycles of work, with
    the reason each is not a zero: a counter that did not count (an emulated or hidden
    one; a hypervisor that lists a PMU it does not count), never a measured 0.
    ``sources`` names each event's PMU for the reason. Software events never qualify."""
    work = max(totals.get("instructions", 0.0), totals.get("cycles", 0.0))
    if work < SILENT_MIN:
        return {}
    return {
        name: (
            f"listed but did not count: {(sources or {}).get(name) or 'the PMU'} read 0 "
            f"over {int(work):,} instructions or cycles (an emulated or hidden "
            "counter), so it is not used as a zero"
        )
        for name, value in totals.items()
        if name not in SOFTWARE and value == 0
    }


#: Events counted in cycles of the run that counted ``cycles``: a share of them at most.
STALL_EVENTS = ("stall_frontend", "stall_backend", "stall_backend_mem")
#: How far past the cycles a stall count may go before it is not a share of them:
#: multiplexed estimates scale two counters over slightly different windows.
STALL_SLACK = 0.05


def overcounted_stalls(totals: Mapping[str, float]) -> dict[str, str]:
    """Stall events of ``totals`` (logical name -> count over the run) that counted more
    cycles than the run's cycles, over at least :data:`SILENT_MIN` of them, with the
    reason: such an event counts something else on that machine (151% "frontend cycles
    idle" on a published system-wide run), so it is not a share of the cycles."""
    cycles = totals.get("cycles", 0.0)
    if cycles < SILENT_MIN:
        return {}
    return {
        name: (
            f"{stalled / cycles:.0%} of the cycles counted: more stall cycles than "
            "cycles is not a share of them (the event counts something else here)"
        )
        for name in STALL_EVENTS
        if (stalled := totals.get(name)) and stalled > cycles * (1 + STALL_SLACK)
    }


#: AMD cores from Zen 2 on, as slugs name them (``amd-zen3``, ``amd-epyc-zen4``).
_AMD_ZEN2_ON = re.compile(r"^amd-(?:[a-z]+-)?zen(?:[2-9]|1\d)$")
_ZEN_PMC087 = (
    "AMD Zen 2 and later do not have PMCx087 (instruction pipe stalls), which Linux "
    "used for stalled-cycles-frontend and -backend until commit c7b2edd8377b (Linux 6.9) "
    "removed the backend event and moved the frontend one to PMCx0A9"
)


#: Intel cores from Nehalem to Ivy Bridge, as slugs name them (``intel-sandybridge``,
#: ``intel-core-ivybridge-x``, ``intel-nehalem``).
_INTEL_NHM_TO_IVB = re.compile(
    r"^intel-(?:[a-z]+-)?(?:nehalem|westmere|sandybridge|ivybridge)(?:-[a-z]+)?$"
)
_ISSUE_STALLS = (
    "on Nehalem to Ivy Bridge Linux counts stalled-cycles-frontend as cycles with no "
    "micro-op issued (UOPS_ISSUED.ANY, cmask=1 inv=1) and stalled-cycles-backend as "
    "cycles with none executed (UOPS_EXECUTED / UOPS_DISPATCHED, cmask=1 inv=1: "
    "arch/x86/events/intel/core.c, intel_pmu_init): issue stops when the backend is "
    "full as much as when the frontend is empty, and nothing executes when nothing was "
    "issued, so the two overlap and neither is a share of its end"
)


def unsupported_stalls(
    core_slug: str, counted: Iterable[str], refused: Iterable[str]
) -> dict[str, str]:
    """Stall events of ``counted`` that a core's kernel backed with an event the core does
    not have, or with one that does not count its end's stalls, with the reason for each:
    they are not stall counts of their name.

    On Intel Nehalem to Ivy Bridge both generic stall events count cycles of no issue
    and no execution, for any reason (:data:`_ISSUE_STALLS`): not used as frontend or
    backend shares.

    On AMD Zen 2 and later, a kernel that opens ``stall_backend`` at all predates the fix
    and counted both from PMCx087; a kernel with the fix refuses ``stall_backend``
    (``refused``: <not supported>, ENOENT) and counts ``stall_frontend`` from PMCx0A9,
    cycles the micro-op queue was empty. Without that refusal the frontend count's
    kernel is unknown, so it is not used either.
    """
    counted = set(counted)
    if _INTEL_NHM_TO_IVB.match(core_slug or ""):
        return {
            name: f"not a stall share of its end: {_ISSUE_STALLS}"
            for name in ("stall_frontend", "stall_backend")
            if name in counted
        }
    if not _AMD_ZEN2_ON.match(core_slug or ""):
        return {}
    out: dict[str, str] = {}
    if "stall_backend" in counted:
        out["stall_backend"] = f"not a stall count: {_ZEN_PMC087}"
    if "stall_frontend" in counted and "stall_backend" in out:
        out["stall_frontend"] = "not a stall count: PMCx087 too, on the same kernel"
    elif "stall_frontend" in counted and "stall_backend" not in set(refused):
        out["stall_frontend"] = (
            f"not known to be a stall count: {_ZEN_PMC087}, and nothing shows a kernel "
            "with that fix (it refuses stalled-cycles-backend)"
        )
    return out


def distrusted(
    cpu: CpuInfo | None, statuses: Mapping[str, EventStatus], samples: Sequence[CounterSample]
) -> dict[str, str]:
    """Events whose counted values must not be used, with the reason for each."""
    totals = {
        name: float(total[1])
        for name, status in statuses.items()
        if status.available and (total := _total(samples, name)) is not None
    }
    out = silent_zeros(totals, {n: s.source or "" for n, s in statuses.items()})
    scaled = {n: total[0] for n in totals if (total := _total(samples, n)) is not None}
    for name, why in overcounted_stalls(scaled).items():
        out.setdefault(name, why)
    if cpu is not None:
        refused = [n for n, status in statuses.items() if not status.available]
        for name, why in unsupported_stalls(cpu.core_slug, totals, refused).items():
            out.setdefault(name, why)
    evidence = emulated_reason(cpu, samples)
    if evidence:
        for name in CYCLE_EVENTS:
            listed = statuses.get(name)
            if name not in out and listed is not None and listed.available:
                out[name] = emulated_event_reason(evidence)
    return out


def screen(
    cpu: CpuInfo | None, statuses: Mapping[str, EventStatus], samples: Sequence[CounterSample]
) -> tuple[dict[str, EventStatus], list[CounterSample]]:
    """``statuses`` and ``samples`` with the distrusted events taken out, reasons kept."""
    drop = distrusted(cpu, statuses, samples)
    if not drop:
        return dict(statuses), list(samples)
    new_statuses = {
        name: (
            EventStatus(name, False, source=status.source, reason=drop[name])
            if name in drop
            else status
        )
        for name, status in statuses.items()
    }
    new_samples = [
        replace(
            s,
            counts={n: c for n, c in s.counts.items() if n not in drop},
            per_thread={
                t: {n: v for n, v in vals.items() if n not in drop}
                for t, vals in s.per_thread.items()
            },
        )
        for s in samples
    ]
    return new_statuses, new_samples


#: Metrics measured on the machine's clock: under an emulator that clock is the
#: emulator's (QEMU -icount shift=0 ticks once per instruction), not a CPU's. Read from
#: the rows: a timing (``Metric.clock``) whose value is a time (``ms``). Cycles per call
#: go with the cycle events (:data:`CYCLE_EVENTS`); the tail ratio, one time over
#: another of the same clock, carries no unit of it.
CLOCK_METRICS = tuple(n for n, m in METRICS.items() if m.clock and m.unit == "ms")


def unjudgeable_metrics(
    machine: Mapping[str, Any], unavailable: Mapping[str, str]
) -> dict[str, str]:
    """Budget metrics that cannot be judged on this machine, with the reason for each.

    On an emulated machine (its files say so, or its cycles were found to be
    instructions) times are the emulator's clock: a latency budget written for a real
    core would judge an instruction count against milliseconds.
    """
    cpu = machine.get("cpu") if isinstance(machine, Mapping) else None
    evidence = cpu.get("emulation") if isinstance(cpu, Mapping) else None
    cycles = unavailable.get("cycles", "")
    if not evidence and cycles.startswith("emulated PMU ("):
        evidence = cycles[len("emulated PMU (") :].split("): ", 1)[0]
    if not evidence:
        return {}
    reason = (
        f"emulated machine ({evidence}): its clock is the emulator's, not a CPU's, so "
        "times are not judged against budgets written for real cores"
    )
    return dict.fromkeys(CLOCK_METRICS, reason)
