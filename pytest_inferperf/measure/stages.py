"""Stages inside a workload: ``with region("preprocess"): ...``.

Owns: the ``region`` context manager users put inside their workload, and
the recorder the runner activates while it measures, which attributes
wall time and counter deltas to each named stage (sensor read,
preprocess, inference, postprocess: bottlenecks often live outside the
model), in total and per measured repeat (the distribution a change
against the baseline is judged on).

Outside a measured repeat (warm-up, smoke runs, plain calls) ``region``
does nothing and costs a context-variable lookup.

Also owns how a Profile's stages read per call (:func:`stage_times`: wall ms per
measured call of the workload, the share of the call, the value of each repeat) and
the one name a stage has where it sits beside the metrics (``stage:<name>``, see
:func:`stage_metric`). Must not: judge a stage (``judge.budgets``, ``judge.comparison``) or
render it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..pmu.base import CounterBackend

if TYPE_CHECKING:
    from ..core.profile import Profile

#: The stage that holds a measured call's time outside every ``region()``.
REST_STAGE = "(outside regions)"
#: How a stage is named beside the metrics (a comparison row, a tolerance key):
#: ``stage:preprocess``. ``stage:*`` in a tolerance stands for every stage.
STAGE_PREFIX = "stage:"
EVERY_STAGE = f"{STAGE_PREFIX}*"


def stage_metric(name: str) -> str:
    """``preprocess`` -> ``stage:preprocess``: the stage's name beside the metrics."""
    return f"{STAGE_PREFIX}{name}"


def stage_of(metric: str) -> str | None:
    """``stage:preprocess`` -> ``preprocess``; None for a metric that is not a stage."""
    return metric[len(STAGE_PREFIX) :] if metric.startswith(STAGE_PREFIX) else None


def metric_label(metric: str) -> str:
    """A metric's name as output shows it: ``stage preprocess`` for a stage, else the name."""
    stage = stage_of(metric)
    return metric if stage is None else f"stage {stage}"


@dataclass(frozen=True)
class StageTime:
    """One stage of a Profile, per measured call of the workload."""

    name: str
    entered: int  # times the region was entered while measuring (outside: the calls)
    ms_per_call: float  # wall ms spent in the stage per measured call
    share: float | None  # of the measured calls' wall time; None: no time measured
    repeat_ms: tuple[float, ...] = ()  # ms per call in each repeat; () where not recorded

    @property
    def named(self) -> bool:
        """A ``region()`` the workload entered (not the time outside every region)."""
        return self.name != REST_STAGE


def stage_times(profile: Profile) -> tuple[StageTime, ...]:
    """Each stage of ``profile`` (the time outside the regions last), per measured call.

    Per call means per call of the measured workload, whatever the number of times the
    region was entered in it: the stages of one call then add up to the call. The calls
    are those the stage recorder saw (the time outside the regions counts them): under
    the simulate backend the stages come from the native run, not the simulated repeats.
    """
    if not profile.stages:
        return ()
    rest = next((s for s in profile.stages if s.name == REST_STAGE), None)
    calls = rest.calls if rest is not None and rest.calls else profile.calls
    if not calls:
        return ()
    total_ns = sum(s.wall_ns for s in profile.stages)
    per_repeat = _calls_per_repeat(profile, calls)
    out = []
    for stage in profile.stages:
        runs: tuple[float, ...] = ()
        if per_repeat and len(stage.repeat_wall_ns) == len(per_repeat):
            runs = tuple(
                w / n / 1e6 for w, n in zip(stage.repeat_wall_ns, per_repeat, strict=True) if n
            )
        out.append(
            StageTime(
                stage.name,
                stage.calls,
                stage.wall_ns / calls / 1e6,
                stage.wall_ns / total_ns if total_ns > 0 else None,
                runs,
            )
        )
    out.sort(key=lambda t: not t.named)  # stable: the regions in the order first entered
    return tuple(out)


def _calls_per_repeat(profile: Profile, calls: int) -> tuple[float, ...]:
    """The measured calls in each repeat the stages were recorded over (() if unknown)."""
    if sum(r.calls for r in profile.repeats) == calls:
        return tuple(float(r.calls) for r in profile.repeats)
    rest = next((s for s in profile.stages if s.name == REST_STAGE), None)
    if rest is not None and rest.repeat_wall_ns:  # another run's repeats (simulate): even
        return (calls / len(rest.repeat_wall_ns),) * len(rest.repeat_wall_ns)
    return ()


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
