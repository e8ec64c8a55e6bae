"""What the simulate backend counts: callgrind's events as logical events, and modes.

Owns: the formulas from callgrind's events to the logical events (``instructions``
= Ir, ``l1d_access`` = Dr+Dw, ``l1d_refill`` = D1mr+D1mw, ``l1i_access`` = Ir,
``l1i_refill`` = I1mr, ``llc_read`` = I1mr+D1mr, ``llc_miss`` = ILmr+DLmr,
``branches`` = Bc+Bi, ``branch_misses`` = Bcm+Bim), why every other event is not
counted, and which mode ("full" or "instructions") a test's metrics need.

Must not: run valgrind or read its files.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ...pmu.base import EventStatus
from ...pmu.events import check_names

#: Events counted in instructions-only mode.
INSTRUCTION_EVENTS = ("instructions",)

#: logical event -> the callgrind events summed for it.
EVENT_FORMULAS: dict[str, tuple[str, ...]] = {
    "instructions": ("Ir",),
    "l1d_access": ("Dr", "Dw"),
    "l1d_refill": ("D1mr", "D1mw"),
    "l1i_access": ("Ir",),
    "l1i_refill": ("I1mr",),
    "llc_read": ("I1mr", "D1mr"),
    "llc_miss": ("ILmr", "DLmr"),
    "branches": ("Bc", "Bi"),
    "branch_misses": ("Bcm", "Bim"),
}

_NO_TIME = (
    "not available: the simulate backend counts instructions, cache and branch "
    "events, not cycles (no IPC)"
)
_REASONS: dict[str, str] = {
    "cycles": _NO_TIME,
    "stall_frontend": "not available: the simulate backend has no pipeline model (no stall cycles)",
    "l2_access": "not available: callgrind simulates L1 and the last level only, not a middle L2",
    "op_retired": "not available: the simulate backend counts instructions, not micro-ops",
    "dtlb_access": "not available: callgrind does not simulate TLBs",
    "task_clock": "not available: the simulated region runs under valgrind in a child "
    "process; software events would count valgrind, not the workload",
}
_REASON_OF = {
    "stall_backend": "stall_frontend",
    "stall_backend_mem": "stall_frontend",
    "stall_slot": "stall_frontend",
    "stall_slot_frontend": "stall_frontend",
    "stall_slot_backend": "stall_frontend",
    "l2_refill": "l2_access",
    "op_spec": "op_retired",
    "l1d_tlb_refill": "dtlb_access",
    "dtlb_walk": "dtlb_access",
    "itlb_access": "dtlb_access",
    "itlb_walk": "dtlb_access",
    "page_faults": "task_clock",
    "major_faults": "task_clock",
    "context_switches": "task_clock",
    "cpu_migrations": "task_clock",
}


def unavailable_reason(event: str) -> str:
    """Why the simulate backend does not count ``event``."""
    return _REASONS.get(
        _REASON_OF.get(event, event), f"not available: the simulate backend does not count {event}"
    )


def logical_counts(raw: Mapping[str, int]) -> dict[str, int]:
    """callgrind event totals -> logical event counts (only where every input is present)."""
    return {
        name: sum(raw[part] for part in parts)
        for name, parts in EVENT_FORMULAS.items()
        if all(part in raw for part in parts)
    }


def mode_for(metrics: Iterable[str] | None) -> str:
    """The cheapest mode that counts every input of ``metrics`` (None: all of them).

    "instructions" when none of the metrics needs a cache or branch event, else "full".
    """
    if metrics is None:
        return "full"
    from ...core import metrics as metrics_mod

    simulated = set(EVENT_FORMULAS) - set(INSTRUCTION_EVENTS)
    for name in metrics:
        metric = metrics_mod.METRICS.get(name)
        inputs = set(metric.inputs) if metric is not None else simulated
        if inputs & simulated:
            return "full"
    return "instructions"


def spec_metrics(spec: Any) -> list[str]:
    """The metrics a test's marker asks for: its budgets and its per-metric tolerances."""
    names = [b.metric for b in getattr(spec, "budgets", ())]
    tolerance = getattr(spec, "tolerance", None)
    if isinstance(tolerance, Mapping):
        names.extend(tolerance)
    return names


def session_mode(specs: Iterable[Any]) -> str:
    """The mode one child for many tests needs: "full" if any of them needs it."""
    modes = {mode_for(spec_metrics(spec)) for spec in specs}
    return "full" if "full" in modes or not modes else "instructions"


def event_statuses(
    events: Sequence[str], raw_names: Sequence[str] = (), mode: str = "full"
) -> dict[str, EventStatus]:
    """Per requested event: counted (and from which callgrind events), or why not."""
    present = set(raw_names)
    out: dict[str, EventStatus] = {}
    for name in check_names(events):
        parts = EVENT_FORMULAS.get(name)
        if parts is None:
            out[name] = EventStatus(name, False, reason=unavailable_reason(name))
        elif mode == "instructions" and name not in INSTRUCTION_EVENTS:
            out[name] = EventStatus(
                name,
                False,
                reason=(
                    "not simulated: instructions-only mode, chosen because no budget or "
                    "tolerance of this test needs a cache or branch event (a budget such as "
                    'l1_miss_max or branch_miss_max, or profile_via_child(mode="full"), '
                    "simulates them)"
                ),
            )
        elif present and not set(parts) <= present:
            missing = ", ".join(p for p in parts if p not in present)
            out[name] = EventStatus(
                name,
                False,
                reason=(
                    f"not available: callgrind did not report {missing} (cache or branch "
                    "simulation off?)"
                ),
            )
        else:
            out[name] = EventStatus(name, True, source=f"callgrind {'+'.join(parts)}")
    return out
