"""Comparing a Profile with its baseline: which metrics moved, and is the move real.

Owns: reading the relative tolerance of every metric from its row
(:attr:`core.metrics.Metric.tolerance`, :func:`tolerance_of`) and that of
every ``region()`` stage (:data:`STAGE_TOLERANCE`), the direction-aware judgement
of each metric and stage (ok / regressed / improved / noise), the two-sided
Mann-Whitney U test that decides whether a change beyond tolerance is
statistically credible, and :class:`Comparison`.

Must not: read or write files (that is ``baseline_store``), measure, print, or
import pytest. Pure functions of two Profiles.

How one metric is judged
------------------------
``delta = (current - baseline) / |baseline|``. Within ``tolerance`` it is
"ok". Beyond it, the change must also be credible: when both Profiles have
at least :data:`MIN_REPEATS` per-repeat values of the metric
(:func:`core.metrics.per_repeat_metrics`), a two-sided Mann-Whitney U test (normal
approximation, tie and continuity correction) must give ``p < ALPHA`` and the
per-repeat medians must move the same way as ``delta``; otherwise it is
"noise". Metrics without a per-repeat distribution (latency percentiles, peak
RSS) or with too few repeats are judged on the point values alone, and such a
change beyond tolerance counts as credible. A credible change in the bad
direction is "regressed", in the good direction "improved" (the baseline is
stale: the caller suggests ``--update-baselines``).

A change no larger than the metric's absolute floor (:attr:`core.metrics.Metric.floor`)
is no change: ``delta`` is 0. So a stray event in thousands of calls is not a
regression, nor is a cache that almost never misses missing a few more times
(a 480 MiB last-level cache simulated for a 20-million-instruction call: 0.0028
LLC misses per 1000 instructions in the baseline, 0.0040 the next run, +41%).
Beyond the floor, a zero baseline gives ``+inf``/``-inf``, so "no page faults"
becoming "one fault every few calls" is a change.

Stages
------
Each ``region()`` stage the workload entered in both Profiles is one more row,
named ``stage:<name>`` (:func:`measure.stages.stage_metric`): its wall ms per measured call,
judged as a metric is, on the per-repeat values (the stage's wall time in a repeat
over that repeat's calls), lower is better, with :data:`STAGE_TOLERANCE` unless the
test names ``stage:<name>`` (or ``stage:*``, every stage) in its tolerances, and
:data:`STAGE_FLOOR_MS` as its absolute floor. A stage entered on one side only, and
the time outside every region, are not rows: the whole call's metrics judge that time.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core import metrics as metrics_mod
from ..core.errors import InferperfError
from ..core.profile import Profile
from ..measure.simulate.noise import noise_tolerances
from ..measure.stages import EVERY_STAGE, stage_metric, stage_of, stage_times

if TYPE_CHECKING:  # numpy is imported where the rank test runs: importing the plugin stays light
    import numpy as np

#: Significance level of the rank test.
ALPHA = 0.01
#: Fewest per-repeat values on each side for the rank test; fewer: point values decide.
MIN_REPEATS = 5
#: Tolerance of a metric with no row in :data:`core.metrics.METRICS` (one a hook adds).
FALLBACK_TOLERANCE = 0.10


def tolerance_of(name: str) -> float:
    """The default relative tolerance of metric ``name``: its row's
    (:attr:`core.metrics.Metric.tolerance`), :data:`FALLBACK_TOLERANCE` for a name with no
    row (a metric added by a hook)."""
    row = metrics_mod.METRICS.get(name)
    return FALLBACK_TOLERANCE if row is None else row.tolerance


def floor_of(name: str) -> float:
    """The absolute change of metric ``name`` that is no change: its row's
    (:attr:`core.metrics.Metric.floor`), 0 for a name with no row."""
    row = metrics_mod.METRICS.get(name)
    return 0.0 if row is None else row.floor


#: Relative tolerance per metric, a view of the rows (:attr:`core.metrics.Metric.tolerance`,
#: the change worth a look on a quiet machine, each with its reason) for the readers that
#: list them all (``inferperf metrics``).
DEFAULT_TOLERANCES: Mapping[str, float] = {n: m.tolerance for n, m in metrics_mod.METRICS.items()}

#: Relative tolerance of a ``region()`` stage's wall ms per call. A stage is a part of
#: the call, so noisier than the whole call's latency (10%): the same disturbance (an
#: interrupt, a page fault, a context switch, the region's own counter reads on entry
#: and exit) is a larger fraction of a shorter interval, and a stage shares its caches
#: with the stages around it. Engineering judgement: 25%, the tolerance the change
#: explanation already gives a part of the call (``change.PART_TOLERANCE``: the 10-30% a
#: shared 2-CPU machine moves timings by) and above the 20% of the noisiest latency
#: metric here (``latency_p99_ms``); it still catches a stage 1.5 times slower. A stage
#: fails a test only when the change is also credible (the rank test), beyond the noise
#: floor (``noise``: wall time) and holds when measured again.
STAGE_TOLERANCE = 0.25
#: A stage that moved by at most this much (ms per call) did not move. A region's own
#: bookkeeping is a read of every counter group on entry and on exit, as a repeat's: 1.5
#: µs with one thread, 3.7 µs with four on a 2-vCPU Xeon VM (docs/counting.md), and an
#: interrupt or a context switch costs µs too. Engineering judgement: 10 µs, a few times
#: that, so a stage of a few µs is not failed for a few µs more.
STAGE_FLOOR_MS = 0.01

Status = str  # "ok" | "regressed" | "improved" | "noise"


class IncomparableError(InferperfError, ValueError):
    """Two Profiles that must not be compared (another machine class or backend)."""


@dataclass(frozen=True)
class MetricChange:
    """How one metric moved from the baseline to the current Profile, judged.

    The judgement (tolerance, absolute floor, rank test: ok / regressed / improved /
    noise) a test's verdict rests on. Not :class:`diagnose.change.MetricMove`, which
    weighs a move as a *cause* of a slowdown (its category and share of the slowdown)
    and exists where only two metric mappings do (no per-repeat values to judge).
    """

    metric: str
    baseline: float
    current: float
    delta: float  # (current - baseline) / |baseline|, signed; +-inf from a zero baseline
    tolerance: float
    better: str  # "higher" | "lower"
    status: Status
    credible: bool  # rank test passed, or (no distribution) point values alone decide
    detail: str
    p_value: float | None = None  # None: no rank test (point values only)

    @property
    def regressed(self) -> bool:
        return self.status == "regressed"

    @property
    def improved(self) -> bool:
        return self.status == "improved"


@dataclass(frozen=True)
class Comparison:
    """Every compared metric of one Profile against its baseline."""

    changes: tuple[MetricChange, ...]

    @property
    def regressions(self) -> tuple[MetricChange, ...]:
        return tuple(c for c in self.changes if c.status == "regressed")

    @property
    def improvements(self) -> tuple[MetricChange, ...]:
        """Credible improvements: the baseline is stale (consider --update-baselines)."""
        return tuple(c for c in self.changes if c.status == "improved")

    @property
    def noise(self) -> tuple[MetricChange, ...]:
        return tuple(c for c in self.changes if c.status == "noise")

    @property
    def ok(self) -> bool:
        """No regression (improvements and noise do not fail a test)."""
        return not self.regressions

    def movers(self, n: int = 5) -> tuple[MetricChange, ...]:
        """The ``n`` changes with the largest ``|delta|``, largest first."""
        ranked = sorted(self.changes, key=lambda c: (-abs(c.delta), c.metric))
        return tuple(ranked[: max(0, n)])

    def get(self, metric: str) -> MetricChange | None:
        return next((c for c in self.changes if c.metric == metric), None)

    @property
    def stages(self) -> tuple[MetricChange, ...]:
        """The ``region()`` stages' rows (``stage:<name>``), in the order first entered."""
        return tuple(c for c in self.changes if stage_of(c.metric) is not None)


# -- comparing ---------------------------------------------------------------
def compare_profiles(
    current: Profile,
    baseline: Profile,
    *,
    tolerances: Mapping[str, float] | None = None,
    metrics: Iterable[str] | None = None,
) -> Comparison:
    """Judge every metric and ``region()`` stage present in both Profiles (or only
    ``metrics``: metric names, and ``stage:<name>`` for a stage)."""
    check_comparable(current, baseline)
    # Simulated counts bring their own measured noise (measure/simulate/noise.py); the
    # user's tolerances still win.
    tols = _tolerances(tolerances, noise_tolerances(current, baseline))
    cur_values = metrics_mod.profile_metrics(current)
    base_values = metrics_mod.profile_metrics(baseline)
    wanted = _wanted(metrics)
    cur_rep = metrics_mod.per_repeat_metrics(current)
    base_rep = metrics_mod.per_repeat_metrics(baseline)
    changes = []
    for name in metrics_mod.METRICS:
        if name not in cur_values or name not in base_values:
            continue
        if wanted is not None and name not in wanted:
            continue
        changes.append(
            judge_metric(
                name,
                base_values[name],
                cur_values[name],
                tolerance=tols.get(name, tolerance_of(name)),
                baseline_repeats=[r[name] for r in base_rep if name in r],
                current_repeats=[r[name] for r in cur_rep if name in r],
            )
        )
    changes.extend(
        c for c in compare_stages(current, baseline, tols) if wanted is None or c.metric in wanted
    )
    return Comparison(tuple(changes))


def compare_stages(
    current: Profile, baseline: Profile, tolerances: Mapping[str, float] | None = None
) -> tuple[MetricChange, ...]:
    """Each ``region()`` stage entered in both Profiles: its wall ms per call, judged.

    ``tolerances`` may name ``stage:<name>`` or ``stage:*`` (every stage); otherwise
    :data:`STAGE_TOLERANCE`.
    """
    tols = tolerances or {}
    before = {t.name: t for t in stage_times(baseline) if t.named}
    out = []
    for now in stage_times(current):
        then = before.get(now.name)
        if not now.named or then is None:
            continue
        name = stage_metric(now.name)
        out.append(
            judge_metric(
                name,
                then.ms_per_call,
                now.ms_per_call,
                tolerance=tols.get(name, tols.get(EVERY_STAGE, STAGE_TOLERANCE)),
                baseline_repeats=then.repeat_ms,
                current_repeats=now.repeat_ms,
                floor=STAGE_FLOOR_MS,
            )
        )
    return tuple(out)


def check_comparable(current: Profile, baseline: Profile) -> None:
    """Raise :class:`IncomparableError` unless both come from one machine class and backend."""
    if (current.machine_class, current.backend) != (baseline.machine_class, baseline.backend):
        raise IncomparableError(
            "Profiles from another machine class or backend are never compared: "
            f"{current.name!r} was measured on {current.machine_class} with the "
            f"{current.backend} backend, its baseline on {baseline.machine_class} with the "
            f"{baseline.backend} backend. Record a baseline for this machine class and "
            "backend with --update-baselines."
        )


def judge_metric(
    name: str,
    baseline: float,
    current: float,
    *,
    tolerance: float,
    baseline_repeats: Sequence[float] = (),
    current_repeats: Sequence[float] = (),
    floor: float | None = None,
) -> MetricChange:
    """One metric's :class:`MetricChange` from its point values and per-repeat values.

    ``floor``: the absolute change that is no change (default: :func:`floor_of`).
    """
    better = metrics_mod.METRICS[name].better if name in metrics_mod.METRICS else "lower"
    if floor is None:
        floor = floor_of(name)
    delta = relative_delta(baseline, current, floor)
    beyond = abs(delta) > tolerance
    worse = delta > 0 if better == "lower" else delta < 0
    p_value: float | None = None
    test = rank_test(current_repeats, baseline_repeats, delta)
    if test is not None:
        p_value = test.p_value
        credible = test.credible
        detail = (
            f"p={p_value:.3g}, Mann-Whitney U over {len(current_repeats)} vs "
            f"{len(baseline_repeats)} repeats"
        )
        if p_value < ALPHA and delta != 0 and not test.same_way:
            detail += "; per-repeat medians moved the other way"
    else:
        credible = beyond
        detail = (
            f"point values only: {len(current_repeats)} vs {len(baseline_repeats)} "
            f"repeats (rank test needs {MIN_REPEATS} each)"
        )
    if not beyond:
        status = "ok"
    elif not credible:
        status = "noise"
    else:
        status = "regressed" if worse else "improved"
    return MetricChange(
        name, baseline, current, delta, tolerance, better, status, credible, detail, p_value
    )


def relative_delta(baseline: float, current: float, floor: float = 0.0) -> float:
    """``(current - baseline) / |baseline|``; 0 for a change of at most ``floor``, and
    from a zero baseline +-inf beyond it (see module doc)."""
    if abs(current - baseline) <= floor:
        return 0.0
    if baseline != 0:
        return (current - baseline) / abs(baseline)
    return math.copysign(math.inf, current)


# -- the rank test -----------------------------------------------------------
@dataclass(frozen=True)
class RankTest:
    """The rank test of a move between two samples of per-repeat (or per-run) values."""

    p_value: float  # two-sided, :func:`mann_whitney_u`
    same_way: bool  # the samples' medians moved the way the point values did

    @property
    def credible(self) -> bool:
        """The move is beyond chance (``p <`` :data:`ALPHA`) and the medians agree on it."""
        return self.p_value < ALPHA and self.same_way


def rank_test(current: Sequence[float], baseline: Sequence[float], move: float) -> RankTest | None:
    """Whether the move ``move`` (the point values' ``current - baseline``, or its relative
    delta: only its sign is read) stands out of the two samples' noise; None where a side
    has fewer than :data:`MIN_REPEATS` values (the point values alone decide then).

    The one rank test of a change: a metric against its baseline (:func:`judge_metric`)
    and a stage's or an operator type's time (``diagnose.change``) are judged by it.
    A rank test alone would take a shift of the distributions against the point values
    (a mean moved by one outlier) for the move: the medians must move the same way.
    """
    if len(current) < MIN_REPEATS or len(baseline) < MIN_REPEATS:
        return None
    median_move = statistics.median(current) - statistics.median(baseline)
    return RankTest(mann_whitney_u(current, baseline), median_move * move > 0)


def mann_whitney_u(x: Sequence[float], y: Sequence[float]) -> float:
    """Two-sided p-value of the Mann-Whitney U test of ``x`` against ``y``.

    Exact where no value is tied and the samples are small (``n1 * n2 <=``
    :data:`EXACT_MAX_PAIRS`), as ``scipy.stats.mannwhitneyu(x, y, method="exact")``:
    with 5 repeats a side the normal approximation's smallest p-value is 0.0122, above
    :data:`ALPHA`, so a complete separation could never count; exactly it is
    2 / C(10, 5) = 0.0079. Otherwise the normal approximation with tie and continuity
    correction (``method="asymptotic"``). 1.0 when every value is tied.
    """
    import numpy as np

    a = np.asarray(x, dtype=float)
    b = np.asarray(y, dtype=float)
    n1, n2 = a.size, b.size
    if n1 == 0 or n2 == 0:
        raise ValueError("Mann-Whitney U needs values on both sides")
    ranks, tie_sizes = _rank(np.concatenate([a, b]))
    u1 = float(ranks[:n1].sum()) - n1 * (n1 + 1) / 2.0
    n = n1 + n2
    if n1 * n2 <= EXACT_MAX_PAIRS and bool(np.all(tie_sizes == 1)):
        return _exact_two_sided(round(u1), n1, n2)
    mean = n1 * n2 / 2.0
    ties = float(np.sum(tie_sizes**3 - tie_sizes))
    var = n1 * n2 / 12.0 * ((n + 1) - ties / (n * (n - 1)))
    if var <= 0:
        return 1.0
    z = max(0.0, abs(u1 - mean) - 0.5) / math.sqrt(var)
    return min(1.0, math.erfc(z / math.sqrt(2.0)))


#: Largest ``n1 * n2`` for which :func:`mann_whitney_u` counts U's exact distribution.
EXACT_MAX_PAIRS = 400


def _exact_two_sided(u: int, n1: int, n2: int) -> float:
    """Exact two-sided p of U = ``u`` for samples of ``n1`` and ``n2`` untied values.

    The number of orderings giving each U is a coefficient of the Gaussian binomial
    [n1 + n2 choose n1]_q = prod_{i=1..n1} (1 - q^(n2+i)) / (1 - q^i) (Mann and Whitney,
    1947): built one factor at a time, each division exact.
    """
    top = n1 * n2
    counts = [1] + [0] * top
    for i in range(1, n1 + 1):
        k = n2 + i
        for v in range(top, k - 1, -1):  # times (1 - q^k)
            counts[v] -= counts[v - k]
        for v in range(i, top + 1):  # divided by (1 - q^i)
            counts[v] += counts[v - i]
    total = math.comb(n1 + n2, n1)
    low = sum(counts[: u + 1])
    high = sum(counts[u:])
    return min(1.0, 2 * min(low, high) / total)


def _rank(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Average ranks (1-based, ties share their mean rank) and the size of each tie group."""
    import numpy as np

    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    mean_rank = ends - (counts - 1) / 2.0
    return mean_rank[inverse], counts.astype(float)


def _tolerances(
    overrides: Mapping[str, float] | None, measured: Mapping[str, float] | None = None
) -> dict[str, float]:
    """The tolerances that differ from the rows' (:func:`tolerance_of`): measured noise,
    then the test's own."""
    tols = dict(measured or {})
    for name, value in (overrides or {}).items():
        value = float(value)
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"tolerance of {name} must be a finite number >= 0, got {value}")
        tols[name] = value
    return tols


def _wanted(names: Iterable[str] | None) -> set[str] | None:
    if names is None:
        return None
    wanted = set(names)
    unknown = sorted(n for n in wanted - set(metrics_mod.METRICS) if stage_of(n) is None)
    if unknown:
        raise ValueError(
            f"unknown metric(s) {', '.join(unknown)}; known: {', '.join(metrics_mod.METRICS)}"
        )
    return wanted
