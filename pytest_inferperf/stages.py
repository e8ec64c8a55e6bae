"""Stages inside a workload: ``with region("preprocess"): ...``.

Owns: the ``region`` context manager users put inside their workload, and
the recorder the runner activates while it measures, which attributes
wall time and counter deltas to each named stage (sensor read,
preprocess, inference, postprocess: bottlenecks often live outside the
model), in total and per measured repeat (the distribution a change
against the baseline is judged on).

Outside a measured repeat (warm-up, smoke runs, plain calls) ``region``
does nothing and costs a context-variable lookup.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from .pmu.base import CounterBackend

#: The stage that holds a measured call's time outside every ``region()``.
REST_STAGE = "(outside regions)"


@dataclass
class _StageTotals:
    calls: int = 0
    wall_ns: int = 0
    counts: dict[str, float] = field(default_factory=dict)


@dataclass
class StageRecorder:
    """Accumulates per-stage time and counts for one profile."""

    backend: CounterBackend
    totals: dict[str, _StageTotals] = field(default_factory=dict)
    depth: int = 0
    marks: list[dict[str, int]] = field(default_factory=list)  # wall_ns so far, per repeat

    def end_repeat(self) -> None:
        """Close a measured repeat: its per-stage wall times become one comparable sample."""
        self.marks.append({name: t.wall_ns for name, t in self.totals.items()})

    def repeat_wall_ns(self, name: str) -> tuple[int, ...]:
        """Stage ``name``'s wall time in each closed repeat."""
        cumulative = [mark.get(name, 0) for mark in self.marks]
        return tuple(b - a for a, b in zip([0, *cumulative], cumulative, strict=False))

    def enter(self) -> tuple[int, Any]:
        return time.perf_counter_ns(), self.backend.snapshot()

    def leave(self, name: str, begin: tuple[int, Any]) -> None:
        end_ns, end_snap = time.perf_counter_ns(), self.backend.snapshot()
        start_ns, start_snap = begin
        stage = self.totals.setdefault(name, _StageTotals())
        stage.calls += 1
        stage.wall_ns += end_ns - start_ns
        for event, count in self.backend.delta(start_snap, end_snap).counts.items():
            stage.counts[event] = stage.counts.get(event, 0.0) + count.value


_active: ContextVar[StageRecorder | None] = ContextVar("inferperf_stage_recorder", default=None)


@contextmanager
def region(name: str) -> Iterator[None]:
    """Attribute the enclosed code's time and counters to stage ``name``.

    Stages should not nest; a nested region is counted in its own stage and
    in the enclosing one.
    """
    recorder = _active.get()
    if recorder is None:
        yield
        return
    begin = recorder.enter()
    try:
        yield
    finally:
        recorder.leave(name, begin)


@contextmanager
def recording(recorder: StageRecorder) -> Iterator[StageRecorder]:
    """Make ``recorder`` receive the regions entered in this context."""
    token = _active.set(recorder)
    try:
        yield recorder
    finally:
        _active.reset(token)
