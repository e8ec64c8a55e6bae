"""Comparing a Profile with its baseline: which metrics moved, and is the move real.

Owns: the relative tolerance of every metric (:data:`DEFAULT_TOLERANCES`) and of
every ``region()`` stage (:data:`STAGE_TOLERANCE`), the direction-aware judgement
of each metric and stage (ok / regressed / improved / noise), the two-sided
Mann-Whitney U test that decides whether a change beyond tolerance is
statistically credible, and :class:`Comparison`.

Must not: read or write files (that is ``baseline``), measure, print, or
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

A change no larger than the metric's :data:`ABSOLUTE_FLOORS` entry (default 0)
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
#: Tolerance of a metric missing from :data:`DEFAULT_TOLERANCES`.
FALLBACK_TOLERANCE = 0.10

_RATIO = 0.10  # cache / TLB / branch miss ratios: vary with what else shares the cache
_MPKI = 0.10  # same events per 1000 instructions: as noisy as the ratios
_SLOTS = 0.10  # stall and top-down fractions of cycles or slots: interrupt and SMT noise

#: Relative tolerance per metric: the change that is worth a look on a quiet machine.
DEFAULT_TOLERANCES: dict[str, float] = {
    # IPC is a ratio of two counters of the same run on one core; steady within a few %.
    "ipc": 0.05,
    "l1_miss": _RATIO,
    "l1i_miss": _RATIO,
    "l2_miss": _RATIO,
    "llc_miss": _RATIO,  # shared LLC: neighbours move it; 10% is above that noise
    "dtlb_miss": _RATIO,
    "itlb_miss": _RATIO,
    "branch_miss": _RATIO,
    "l1d_tlb_miss": _RATIO,
    "l1d_mpki": _MPKI,
    "l1i_mpki": _MPKI,
    "l2_mpki": _MPKI,
    "llc_mpki": _MPKI,
    "l1d_tlb_mpki": _MPKI,
    "dtlb_mpki": _MPKI,
    "itlb_mpki": _MPKI,
    "branch_mpki": _MPKI,
    "frontend_stalled": _SLOTS,
    "backend_stalled": _SLOTS,
    "backend_mem_stalled": _SLOTS,
    "frontend_bound": _SLOTS,
    "backend_bound": _SLOTS,
    "retiring": _SLOTS,
    "bad_speculation": _SLOTS,
    # Retired instructions are nearly deterministic for the same model and inputs: 2% is
    # already a code-path change (another kernel, another thread count). Two simulated
    # profiles use a tolerance measured from their own noise instead (simulate_noise).
    "instructions_per_call": 0.02,
    # Cycles do not depend on the clock frequency but do on cache and memory state.
    "cycles_per_call": 0.05,
    # CPU time follows the clock frequency (turbo, thermal limits) and, on shared VMs,
    # the neighbours: 10-15% between runs, and once 30%, was seen on a 2-vCPU cloud VM
    # (docs/plugin.md, "Baselines"). A regression must also stand above the noise floor
    # (``noise``: the calibration workload measured next to the test and the baseline,
    # the machine's contention) and hold when measured again before a test fails, so
    # 10% here catches a 20% slowdown on a quiet machine without failing a busy one.
    "cpu_ms_per_call": 0.10,
    # Busy CPUs during the region: thread-pool spinning varies with scheduling.
    "cpu_utilisation": 0.15,
    # Page faults come from the allocator reusing or returning memory: coarse, bursty.
    "page_faults_per_call": 0.25,
    # Scheduler events: small counts, driven by everything else on the machine.
    "context_switches_per_call": 0.50,
    "cpu_migrations_per_call": 0.50,
    # The same OS events per second of CPU time: as coarse as per call.
    "page_faults_per_sec": 0.25,
    "context_switches_per_sec": 0.50,
    "cpu_migrations_per_sec": 0.50,
    # Wall-clock latency: the median and mean are stable, the tail much less so.
    "latency_mean_ms": 0.10,  # as CPU time: judged against the noise floor (see above)
    "latency_p50_ms": 0.10,
    "latency_p95_ms": 0.15,
    "latency_p99_ms": 0.20,
    "latency_tail_ratio": 0.20,  # p99 / p50: as noisy as the p99 it is made of
    # Peak RSS moves with allocator arenas and page granularity.
    "peak_rss_mb": 0.10,
    "rss_growth_mb": 0.10,
}

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

#: Absolute change a metric may make and still count as unchanged (from any baseline,
#: zero included): below these the change is too small to cost anything.
ABSOLUTE_FLOORS: dict[str, float] = {
    "page_faults_per_call": 0.1,  # under one fault every ten calls
    "context_switches_per_call": 0.1,
    "cpu_migrations_per_call": 0.1,
    "rss_growth_mb": 1.0,  # a region that grew nothing, then under 1 MiB: unchanged
    **{n: 10.0 for n in metrics_mod.METRICS if n.endswith("_per_sec")},  # 10 per CPU second
    **{n: 0.01 for n in metrics_mod.METRICS if n.endswith("_mpki")},  # 1 per 10^5 instr.
    **{n: 0.001 for n in metrics_mod.METRICS if n.endswith("_miss")},  # 0.1% of accesses
}

Status = str  # "ok" | "regressed" | "improved" | "noise"


class IncomparableError(InferperfError, ValueError):
    """Two Profiles that must not be compared (another machine class or backend)."""


@dataclass(frozen=True)
class MetricChange:
    """How one metric moved from the baseline to the current Profile."""

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
    # Simulated counts bring their own measured noise (pmu/simulate_noise.py); the
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
                tolerance=tols.get(name, FALLBACK_TOLERANCE),
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

    ``floor``: the absolute change that is no change (default: :data:`ABSOLUTE_FLOORS`).
    """
    better = metrics_mod.METRICS[name].better if name in metrics_mod.METRICS else "lower"
    if floor is None:
        floor = ABSOLUTE_FLOORS.get(name, 0.0)
    delta = relative_delta(baseline, current, floor)
    beyond = abs(delta) > tolerance
    worse = delta > 0 if better == "lower" else delta < 0
    p_value: float | None = None
    if len(baseline_repeats) >= MIN_REPEATS and len(current_repeats) >= MIN_REPEATS:
        import numpy as np

        p_value = mann_whitney_u(current_repeats, baseline_repeats)
        med_move = float(np.median(current_repeats) - np.median(baseline_repeats))
        same_way = delta != 0 and med_move != 0 and (med_move > 0) == (delta > 0)
        credible = p_value < ALPHA and same_way
        detail = (
            f"p={p_value:.3g}, Mann-Whitney U over {len(current_repeats)} vs "
            f"{len(baseline_repeats)} repeats"
        )
        if p_value < ALPHA and delta != 0 and not same_way:
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
    tols = {**DEFAULT_TOLERANCES, **(measured or {})}
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
