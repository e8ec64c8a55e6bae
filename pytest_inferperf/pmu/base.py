"""The counter-backend protocol.

Owns: :class:`CounterBackend` (open / start / stop / close, the same for
``perf_event`` and ``none``, the backends the Runner counts a region with in
this process) and :func:`needs_screening` (whether a backend's counts must be
screened before use). The values every backend produces (:class:`EventStatus`,
:class:`Count`, :class:`CounterSample`) are the Profile's, in :mod:`..core.samples`;
they are re-exported here. The simulate backend is no CounterBackend: it re-runs the region in a
valgrind child and is a measurer of its own (``measure.measurer.SimulateMeasurer``); it
builds its Profiles from these same values.

Must not: know how any backend counts.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ..core.errors import InferperfError
from ..core.samples import Count, CounterSample, EventStatus

__all__ = [
    "Count",
    "CounterBackend",
    "CounterSample",
    "CountersError",
    "EventStatus",
    "needs_screening",
]


class CountersError(InferperfError, RuntimeError):
    """Counting cannot go on (e.g. out of file descriptors); the message says why."""


@runtime_checkable
class CounterBackend(Protocol):
    """How a measured region is counted.

    ``open`` prepares (and probes) the counters, ``start``/``stop`` bracket
    one region and ``stop`` returns its counts, ``close`` releases every
    resource; ``statuses`` says, per requested event, whether it is counted.
    ``snapshot``/``delta`` read running counters at stage boundaries inside
    a region (the snapshot is opaque to callers).

    A backend whose counts come from a hardware PMU sets ``needs_screening = True``
    (the perf backend): a PMU may be emulated (its cycles an instruction clock) or list
    events that never count, so the Runner screens what it counted
    (:func:`needs_screening`, ``pmu.trust.screen``) before any metric reads it. A
    backend without the attribute (``none``, which counts nothing) needs no screening.
    """

    name: str

    def open(self) -> None: ...

    def start(self) -> None: ...

    def stop(self) -> CounterSample: ...

    def snapshot(self) -> Any: ...

    def delta(self, begin: Any, end: Any) -> CounterSample: ...

    def close(self) -> None: ...

    def statuses(self) -> dict[str, EventStatus]: ...


def needs_screening(backend: object) -> bool:
    """Whether ``backend``'s counts must be screened before use (``pmu.trust.screen``):
    its ``needs_screening`` attribute, False where it has none (:class:`CounterBackend`)."""
    return getattr(backend, "needs_screening", False) is True
