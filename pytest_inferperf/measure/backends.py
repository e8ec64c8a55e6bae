"""The backends a workload can be measured with, one row each: the one list every
front-end reads.

Owns: :class:`Backend` (a name, a one-line description, whether it can run here and
why not, which kind of measurer measures with it and, for one that counts in this
process, its counter backend) and :data:`BACKENDS`, the rows: ``auto``, ``perf``,
``simulate``, ``none``; what ``auto`` stands for (:func:`stands_for`,
:func:`has_hardware_counters`). The plugin's ``--inferperf-backend`` choices and help,
the command line's ``--backend``, ``inferperf validate``'s choice for a baseline,
:func:`.measurer.measurer_for` and ``inferperf doctor``'s list of backends
(:func:`statuses`) all read it. A new backend is one row here plus its implementation.

Must not: import anything but the standard library when loaded (the plugin reads
:func:`names` while loading with every pytest run); each row's functions import the
engine when called. Import :mod:`.measurer` (which reads this) or the Runner (the
simulate row's check reaches :mod:`.simulate`, which imports the Runner). Measure,
judge or render.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.errors import InferperfError

if TYPE_CHECKING:
    from ..pmu.base import CounterBackend

__all__ = [
    "BACKENDS",
    "Backend",
    "UnknownBackend",
    "described",
    "has_hardware_counters",
    "names",
    "row",
    "stands_for",
    "statuses",
]


class UnknownBackend(InferperfError, ValueError):
    """A name that is no row of :data:`BACKENDS`."""


@dataclass(frozen=True)
class Backend:
    """One way of measuring a workload.

    ``why_not``: None where it can run on this machine, else why not, worded
    "not available: <reason>" (the simulate backend's own words,
    :func:`.simulate.valgrind.available`). ``measurer``: the kind of
    :class:`~.measurer.Measurer` that measures with it (``native``: the Runner in
    this process, counting with ``counters``; ``simulate``: the region under
    valgrind in a child); None for a backend that stands for another.
    ``counters``: for a native backend, its counter backend for the events.
    ``stands_for``: for a backend that is a choice among the others (``auto``), the
    one it means here, given whether simulating without a PMU is allowed.
    ``shared_children``: its regions run in valgrind children a whole session can
    share (the plugin starts them early, ``inferperf_simulate_shared``).
    """

    name: str
    description: str
    why_not: Callable[[], str | None]
    measurer: str | None
    counters: Callable[[Sequence[str]], CounterBackend] | None = None
    stands_for: Callable[[bool], str] | None = None
    shared_children: bool = False


# -- each row's functions (the engine imported when called) -----------------------------
def _always() -> str | None:
    return None


def _perf_why_not() -> str | None:
    from ..pmu.perf_event import syscall_number

    try:
        syscall_number()
    except OSError as exc:
        return f"not available: perf_event_open does not exist here ({exc})"
    return None


def _simulate_why_not() -> str | None:
    from .simulate.valgrind import available

    return available()


def _auto(simulate_without_pmu: bool) -> str:
    """perf, none where perf_event_open does not exist, or simulate where
    ``simulate_without_pmu`` and no hardware counter opens."""
    if _perf_why_not() is not None:
        return "none"
    if simulate_without_pmu and not has_hardware_counters():
        return "simulate"
    return "perf"


@functools.lru_cache(maxsize=1)
def has_hardware_counters() -> bool:
    """True when an ``instructions`` counter opens here (probed once per process)."""
    from ..pmu.events import resolve
    from ..pmu.perf_backend import probe_event
    from .machine import this_cpu

    cpu = this_cpu()
    for event in resolve(["cycles", "instructions"], cpu).events.get("instructions", ()):
        if probe_event(event, exclude_kernel=True, paranoid=cpu.paranoid) is None:
            return True
    return False


def _perf_counters(events: Sequence[str]) -> CounterBackend:
    from ..pmu.perf_backend import PerfEventCounters

    return PerfEventCounters(events=events)


def _null_counters(events: Sequence[str]) -> CounterBackend:
    from ..pmu.null_backend import NullCounters

    return NullCounters(events=events)


# -- the rows: the order is the order of every list of choices ----------------------------
BACKENDS: tuple[Backend, ...] = (
    Backend(
        "auto",
        "perf, or none where perf_event_open does not exist; simulate instead where the "
        "machine has no hardware counters and inferperf_simulate_without_pmu is set",
        _always,
        None,
        stands_for=_auto,
    ),
    Backend("perf", "perf_event_open on every thread", _perf_why_not, "native", _perf_counters),
    Backend(
        "simulate",
        "deterministic counts from valgrind's callgrind, for machines without a PMU",
        _simulate_why_not,
        "simulate",
        shared_children=True,
    ),
    Backend("none", "timing and memory only", _always, "native", _null_counters),
)


def names() -> tuple[str, ...]:
    """Every backend's name, in the registry's order (the choices of every front-end)."""
    return tuple(b.name for b in BACKENDS)


def described() -> str:
    """Every backend as ``name (description)``, for a front-end's help: one that stands
    for one of the others (``auto``) after them."""
    ordered = sorted(BACKENDS, key=lambda b: b.stands_for is not None)
    return ", ".join(f"{b.name} ({b.description})" for b in ordered)


def row(name: str) -> Backend:
    """The row named ``name``; :class:`UnknownBackend` (naming the choices) for another."""
    for backend in BACKENDS:
        if backend.name == name:
            return backend
    raise UnknownBackend(f"unknown backend {name!r}: choose one of {', '.join(names())}")


def stands_for(name: str, *, simulate_without_pmu: bool = False) -> Backend:
    """The row that measures for choice ``name``: its own, or the one it stands for."""
    chosen = row(name)
    if chosen.stands_for is None:
        return chosen
    return row(chosen.stands_for(simulate_without_pmu))


def statuses() -> list[dict[str, Any]]:
    """Every backend with whether it can run here and, where not, why (doctor's list)."""
    rows = []
    for backend in BACKENDS:
        reason = backend.why_not()
        rows.append(
            {
                "name": backend.name,
                "description": backend.description,
                "available": reason is None,
                "reason": reason,
            }
        )
    return rows
