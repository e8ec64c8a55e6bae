"""The noise floor: can a timing change be told apart from the machine's own state?

Owns: which metrics are timings (and whether they follow wall or CPU time:
:func:`clock_of`, read from each metric's row, ``core.metrics.Metric.clock``; a
``region()`` stage is wall time),
:class:`NoiseFloor` - how much slower the machine ran now than when the baseline was
recorded (the calibration workload measured next to both), and whether either run was
contended (``conditions.busy_reasons``) - and :func:`judge_timing`, which turns a
timing regression into "regressed" (beyond the floor) or "inconclusive" (within it,
with the reason in words); and, for an absolute budget, which has no baseline,
:func:`contended_stretch`: how far one busy run's state can stretch a wall time.

Must not: measure or read files. Pure functions of two Profiles' ``conditions``.

The rule
--------
A timing metric moved by ``ratio = current / baseline``. The machine itself ran
``f = max(1, calibration now / calibration at baseline)`` times slower (wall time of
the calibration for latencies, its CPU time for CPU time and cycles; each run's
*fastest* round, :data:`CALIBRATION_STATISTIC`). The change is
beyond the floor when ``ratio > f * (1 + tolerance)`` (``f`` below
:data:`CALIBRATION_NOISE` counts as 1). A wall-time metric (latency) measured on a
contended machine must also go beyond a further :data:`CONTENDED_MARGIN`: time
slicing inflates wall time by however many processes happened to be runnable, and
the calibration (one thread, about 8 ms around the measurement) samples that only
briefly. CPU time is not inflated by time slicing - measured under two competing
CPU-bound processes on the 2-vCPU VM, unchanged tests' CPU time stayed within 5% of
a baseline recorded without them while their latency tripled
(docs/benchmarks/noisy-verdicts.md) - so it gets no margin beyond what the
calibration's own CPU time says (steal, shared caches, the clock). And where CPU
time is judged, a latency change on a contended machine is inconclusive on its own:
more work shows in CPU time. A baseline that
was recorded busy reads slow, so it hides regressions rather than inventing them: it
is named in every comparison (``verdict``), and adds no margin. A change within the
floor is *inconclusive*, never *passed*: the data cannot say either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.metrics import METRICS
from ..measure.conditions import CALIBRATION_VERSION, busy_reasons
from ..measure.stages import metric_label, stage_of


def clock_of(metric: str) -> str | None:
    """Which of the calibration's clocks a timing follows ("wall" | "cpu"): its row's
    ``clock``; None for a metric that is no timing (or has no row: a hook's).

    A ``region()`` stage (``stage:<name>``) is wall time, as latency is.
    """
    if stage_of(metric) is not None:
        return "wall"
    row = METRICS.get(metric)
    return row.clock if row is not None else None


#: Extra headroom of wall-time metrics when this run was measured on a contended machine.
CONTENDED_MARGIN = 0.5
#: Which of a run's calibration rounds stands for the machine: ``"fastest"`` (the
#: round least disturbed: interference only ever adds time, so the minimum is the
#: steadiest reading of a short fixed workload) or ``"median"`` (the rule before;
#: measured side by side in docs/benchmarks/noisy-verdicts.md).
CALIBRATION_STATISTIC = "fastest"
#: A calibration slowdown below this is the calibration's own run-to-run noise (a few %
#: on a quiet 2-vCPU VM): the machine counts as no slower.
CALIBRATION_NOISE = 1.10
#: A region is run by a thread pool when more than this many CPUs were busy per call on
#: average (``cpu_utilisation``, task-clock / wall) now or at baseline time: work ran on
#: other threads beside the caller. One thread alone reads at most 1.0; the margin
#: leaves room for a helper thread's bookkeeping (engineering judgement).
POOLED_UTILISATION = 1.15


def saturated(busy_threads: int | None, cpus: int | None) -> str | None:
    """Why a pool's latency cannot be judged here, or None: ``busy_threads`` (now or at
    baseline time, the larger) took a share of every CPU the process may run on.

    Such a pool waits at every operator for its slowest thread, so its wall time
    follows whichever other thread becomes runnable on any of those CPUs, for
    microseconds at a time, which no calibration of a few milliseconds samples.
    ONNX Runtime's default is exactly this: one intra-op thread per physical core,
    with its threads pinned ("Leaving at default also enables some affinitization",
    onnxruntime.ai, Performance > Thread management). Measured on the 2-vCPU VM
    (docs/benchmarks/process-noise.md): the MiniLM-L3 export under default threads
    ran 35-85% slower for tens of seconds at a time with nothing else running, and
    all four fresh processes with it.
    """
    if busy_threads is None or cpus is None or cpus < 1 or busy_threads < cpus:
        return None
    threads = f"{busy_threads} busy thread{'s' if busy_threads != 1 else ''}"
    return f"{threads} on {cpus} CPU{'s' if cpus != 1 else ''}"


def contended_stretch(conditions: Mapping[str, Any] | None) -> float | None:
    """How far the machine's state can stretch a wall time measured under
    ``conditions``, with no baseline to compare it to (an absolute budget): the
    calibration's wall time per CPU time while it ran (1 / its ``cpu_share``: a
    CPU-bound thread's stretch), times the :data:`CONTENDED_MARGIN` the floor gives wall
    time on a contended machine; None where the machine was not busy (``busy_reasons``)."""
    if not busy_reasons(conditions):
        return None
    cal = (conditions or {}).get("calibration")
    share = cal.get("cpu_share") if isinstance(cal, Mapping) else None
    stretch = 1.0
    if isinstance(share, int | float) and not isinstance(share, bool) and 0 < share <= 1:
        stretch = 1.0 / share
    return stretch * (1.0 + CONTENDED_MARGIN)


def pooled(utilisation_now: float | None, utilisation_baseline: float | None) -> bool:
    """Whether a region ran on a thread pool, now or at baseline time."""
    return any(
        isinstance(u, int | float) and u > POOLED_UTILISATION
        for u in (utilisation_now, utilisation_baseline)
    )


@dataclass(frozen=True)
class NoiseFloor:
    """What the machine did at baseline time and now, reduced to what a verdict needs."""

    slowdown_wall: float | None  # calibration wall now / at baseline; None: not comparable
    slowdown_cpu: float | None
    busy_now: tuple[str, ...]
    busy_baseline: tuple[str, ...]
    note: str | None = None  # why there is no slowdown (calibration missing or changed)
    # the parallel calibration's slowest thread now / at baseline (conditions.parallel_round)
    slowdown_parallel: float | None = None
    pooled: bool = False  # the region ran on a thread pool (:func:`pooled`)
    # the pool kept every CPU the process may use busy ("2 busy threads on 2 CPUs");
    # None: it did not, or it is not known (:func:`saturated`)
    saturated: str | None = None

    @property
    def contended(self) -> bool:
        return bool(self.busy_now or self.busy_baseline)

    def factor(self, metric: str) -> float:
        """How much slower the machine ran for this metric's clock (at least 1). A pooled
        region's wall time waits for its slowest thread: the parallel calibration's
        slowdown counts for it where it is the larger."""
        clock = clock_of(metric) or "cpu"
        value = self.slowdown_wall if clock == "wall" else self.slowdown_cpu
        if clock == "wall" and self.pooled and self.slowdown_parallel is not None:
            value = max(value or 0.0, self.slowdown_parallel)
        return value if value is not None and value > CALIBRATION_NOISE else 1.0

    def allowed_ratio(self, metric: str, tolerance: float) -> float:
        """The largest current/baseline ratio the machine's state can explain."""
        wall = clock_of(metric) == "wall"
        margin = 1.0 + CONTENDED_MARGIN if self.busy_now and wall else 1.0
        return self.factor(metric) * (1.0 + tolerance) * margin

    def to_dict(self) -> dict[str, Any]:
        return {
            "slowdown_wall": self.slowdown_wall,
            "slowdown_cpu": self.slowdown_cpu,
            "busy_now": list(self.busy_now),
            "busy_baseline": list(self.busy_baseline),
            "contended": self.contended,
            "note": self.note,
            "slowdown_parallel": self.slowdown_parallel,
            "pooled": self.pooled,
            "saturated": self.saturated,
        }


def floor_of(
    current: Mapping[str, Any] | None,
    baseline: Mapping[str, Any] | None,
    *,
    pooled: bool = False,
    saturated: str | None = None,
) -> NoiseFloor:
    """The noise floor between two Profiles' ``conditions`` (either may be missing);
    ``pooled``: the region ran on a thread pool (:func:`pooled`); ``saturated``: on
    every CPU it may use (:func:`saturated`)."""
    cur_cal = _calibration(current)
    base_cal = _calibration(baseline)
    wall = cpu = parallel = None
    note = None
    if cur_cal is None or base_cal is None:
        which = "the baseline" if base_cal is None else "this run"
        note = (
            f"no calibration recorded with {which} (recorded by pytest-inferperf 0.x "
            "before conditions were stored; re-record with --update-baselines)"
        )
    elif cur_cal.get("version") != base_cal.get("version"):
        note = "the calibration workload changed since the baseline; re-record it"
    else:
        wall = _ratio(_clock(cur_cal, "wall"), _clock(base_cal, "wall"))
        cpu = _ratio(_clock(cur_cal, "cpu"), _clock(base_cal, "cpu"))
        if cur_cal.get("parallel_threads") == base_cal.get("parallel_threads"):
            parallel = _ratio(
                _fastest(cur_cal, "parallel_wall"), _fastest(base_cal, "parallel_wall")
            )
    return NoiseFloor(
        wall,
        cpu,
        tuple(busy_reasons(current)),
        tuple(busy_reasons(baseline)),
        note,
        slowdown_parallel=parallel,
        pooled=pooled,
        saturated=saturated if pooled else None,
    )


def _calibration(conditions: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    if not conditions:
        return None
    cal = conditions.get("calibration")
    if not isinstance(cal, Mapping) or cal.get("version") is None:
        return None
    if cal.get("version") != CALIBRATION_VERSION:
        return {"version": cal.get("version")}
    return cal


def _clock(cal: Mapping[str, Any], clock: str, statistic: str | None = None) -> Any:
    """A run's calibration time on ``clock`` ("wall" | "cpu") by :data:`CALIBRATION_STATISTIC`:
    its fastest round, else (no usable rounds, or ``"median"``) the stored median."""
    if (statistic or CALIBRATION_STATISTIC) == "fastest":
        fastest = _fastest(cal, clock)
        if fastest is not None:
            return fastest
    return cal.get(f"{clock}_ms")


def _fastest(cal: Mapping[str, Any], name: str) -> float | None:
    """The fastest of ``rounds_<name>_ms`` (None: none recorded, or one is not a time)."""
    rounds = cal.get(f"rounds_{name}_ms")
    if isinstance(rounds, list | tuple):
        usable = [
            float(v)
            for v in rounds
            if isinstance(v, int | float) and not isinstance(v, bool) and 0 < v < 1e12
        ]
        if usable and len(usable) == len(rounds):
            return min(usable)
    return None


def _ratio(now: Any, then: Any) -> float | None:
    if not isinstance(now, int | float) or not isinstance(then, int | float) or then <= 0:
        return None
    return float(now) / float(then)


@dataclass(frozen=True)
class TimingJudgement:
    metric: str
    outcome: str  # "regressed" | "inconclusive"
    reason: str


def judge_timing(
    metric: str, delta: float, tolerance: float, floor: NoiseFloor, *, cpu_time_judged: bool = False
) -> TimingJudgement:
    """A credible timing regression of ``delta`` against the noise floor.

    ``cpu_time_judged``: CPU time was measured too. Then on a contended machine a
    latency change alone is inconclusive: wall time there follows the scheduler, and
    more work shows in CPU time, which is judged on its own floor.
    """
    ratio = 1.0 + delta
    allowed = floor.allowed_ratio(metric, tolerance)
    clock = clock_of(metric) or "cpu"
    what = _what(metric)
    factor = floor.factor(metric)
    machine = (
        f"the machine ran {factor:.2g}x slower ({clock} time of the calibration) than "
        "at baseline time"
        if factor > 1.0
        else "the calibration ran no slower than at baseline time"
    )
    busy = "; ".join(
        ([f"now {', '.join(floor.busy_now)}"] if floor.busy_now else [])
        + ([f"at baseline time {', '.join(floor.busy_baseline)}"] if floor.busy_baseline else [])
    )
    if clock == "cpu" and floor.pooled:
        return TimingJudgement(
            metric,
            "inconclusive",
            (
                f"{what} {delta:+.0%} of a region run by a thread pool: its CPU time grows "
                "with how long the pool's threads spin and wait, not only with the work, "
                "so latency carries the verdict"
            ),
        )
    if clock == "wall" and floor.saturated:
        return TimingJudgement(
            metric,
            "inconclusive",
            (
                f"{what} {delta:+.0%} of a thread pool on every CPU this process may use "
                f"({floor.saturated}): its latency follows whatever else becomes runnable "
                "on any of them, which nothing measured here can bound; give the session "
                "fewer intra-op threads than CPUs (or 1) for a latency that can be judged"
            ),
        )
    if clock == "wall" and floor.busy_now and cpu_time_judged and not floor.pooled:
        return TimingJudgement(
            metric,
            "inconclusive",
            (
                f"{what} {delta:+.0%} on a contended machine ({busy}): wall time there follows "
                "the scheduler, so CPU time carries the verdict"
            ),
        )
    if ratio > allowed:
        return TimingJudgement(
            metric,
            "regressed",
            (
                f"{what} {delta:+.0%} is beyond the noise floor ({machine}"
                f"{'; ' + busy if busy else ''}; up to {allowed:.2f}x could be the machine)"
            ),
        )
    return TimingJudgement(
        metric,
        "inconclusive",
        (
            f"{machine}{'; ' + busy if busy else ''}; {what} {delta:+.0%} is within that "
            f"(up to {allowed:.2f}x could be the machine)"
        ),
    )


def _what(metric: str) -> str:
    """The metric in a sentence: its row's words (``Metric.said``); a stage as output
    shows it (``stage preprocess``)."""
    row = METRICS.get(metric)
    return row.said if row is not None else metric_label(metric)
