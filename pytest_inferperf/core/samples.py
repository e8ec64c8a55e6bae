"""The values a measurement is made of: event statuses, counts, counter samples.

Owns: :class:`EventStatus` (counted, or not and why), :class:`Count` (one event over
one region, with its multiplexing) and :class:`CounterSample` (one measured region's
totals and per-thread values), and their JSON forms. They are part of the Profile,
so they live in the core beside it; every counter backend produces them.

Must not: know how anything is counted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class EventStatus:
    """Whether a logical event is counted here; ``reason`` when it is not."""

    name: str
    available: bool
    source: str | None = None
    reason: str | None = None

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "available": self.available,
            "source": self.source,
            "reason": self.reason,
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> EventStatus:
        return cls(
            name=str(data["name"]),
            available=bool(data["available"]),
            source=data.get("source"),
            reason=data.get("reason"),
        )


@dataclass(frozen=True)
class Count:
    """One event over one region, summed over threads.

    ``value`` is the estimate (scaled by enabled/running when the counter was
    multiplexed); ``raw`` what the counters read. ``running_fraction`` is 1.0
    when the event had a counter all the time it was enabled.
    """

    value: float
    raw: int
    enabled_ns: int = 0
    running_ns: int = 0

    @property
    def running_fraction(self) -> float:
        if self.enabled_ns <= 0:
            return 1.0
        return min(1.0, self.running_ns / self.enabled_ns)

    @property
    def multiplexed(self) -> bool:
        return self.running_fraction < 0.999

    def to_dict(self) -> dict:
        return {
            "value": self.value,
            "raw": self.raw,
            "enabled_ns": self.enabled_ns,
            "running_ns": self.running_ns,
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> Count:
        return cls(
            value=float(data["value"]),
            raw=int(data["raw"]),
            enabled_ns=int(data.get("enabled_ns", 0)),
            running_ns=int(data.get("running_ns", 0)),
        )


@dataclass(frozen=True)
class CounterSample:
    """Counts of one measured region: totals, and per thread id."""

    counts: Mapping[str, Count]
    per_thread: Mapping[int, Mapping[str, float]] = field(default_factory=dict)

    def value(self, name: str) -> float | None:
        count = self.counts.get(name)
        return None if count is None else count.value

    def to_dict(self) -> dict:
        return {
            "counts": {name: c.to_dict() for name, c in self.counts.items()},
            "per_thread": {str(tid): dict(values) for tid, values in self.per_thread.items()},
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> CounterSample:
        return cls(
            counts={name: Count.from_dict(c) for name, c in data["counts"].items()},
            per_thread={
                int(tid): {k: float(v) for k, v in values.items()}
                for tid, values in data.get("per_thread", {}).items()
            },
        )
