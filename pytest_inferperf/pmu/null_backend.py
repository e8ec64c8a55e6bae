"""The ``none`` backend: count nothing, say so for every event.

Owns: a backend for timing and memory only, where the user asked for no
counters. Every requested event is reported unavailable with the reason,
never as 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from .base import CounterSample, EventStatus
from .events import DEFAULT_EVENTS, check_names

REASON = "not available: the 'none' backend counts nothing (timing and memory only)"


@dataclass
class NullCounters:
    events: Sequence[str] = DEFAULT_EVENTS
    name: str = "none"
    needs_screening: ClassVar[bool] = False  # it counts nothing to screen

    def open(self) -> None:
        check_names(self.events)

    def start(self) -> None:
        pass

    def stop(self) -> CounterSample:
        return CounterSample(counts={})

    def snapshot(self) -> dict[str, float]:
        return {}

    def delta(self, begin: dict[str, float], end: dict[str, float]) -> CounterSample:
        return CounterSample(counts={})

    def close(self) -> None:
        pass

    def statuses(self) -> dict[str, EventStatus]:
        return {name: EventStatus(name, False, reason=REASON) for name in self.events}
