"""Between-process noise: is a timing change larger than what another process would give?

Owns: :func:`judge_processes`, which decides whether a suspected timing regression
holds across *fresh processes*, against the baseline's own processes where it
recorded several, and :class:`ProcessJudgement`, the record it returns (with the
sentence a user reads).

Must not: start processes, measure, read files or import pytest. A pure function of
numbers (each process's value of one metric and how much slower the machine ran
for it).

Why processes, not repeats
--------------------------
Repeats inside one process share its address layout, hash seed, allocator state and
the placement of its code: a 25 µs call can run 10-15% slower in one process than in
the next for its whole life, so 30 repeats in one process are one sample of that
offset, not 30. Measurement bias of this kind is documented for compiled code
(Mytkowicz, Diwan, Hauswirth, Sweeney, "Producing wrong data without doing anything
obviously wrong!", ASPLOS 2009: the size of the environment and the link order moved
run times by 10% and more), and it is why pyperf spreads a benchmark over 20 worker
processes by default: "each process has different performance depending on many
things: environment variables, current working directory, address space layout (which
is randomized on Linux: ASLR), Python random hash seed" (Victor Stinner, psf/pyperf
issue #136). The within-process rank test of :mod:`comparison` says the two *processes*
differ; whether the *code* does needs values from several processes on both sides.

The rule
--------
Each process gives one value of the metric (its per-call CPU time or latency over all
its repeats) and a machine slowdown ``f`` (:meth:`noise.NoiseFloor.factor`, its own
calibration against the baseline's). In logs, ``x = ln(value / f)`` for the processes
measured now (fresh processes, never the one that raised the suspicion: the trigger
and the test stay apart) and ``y = ln(value)`` for the baseline's processes (one value
where the baseline was recorded in one process). The change holds when

1. ``exp(mean(x) - mean(y)) - 1`` exceeds the metric's tolerance (the size that
   matters), and
2. a one-sided t test says the baseline's processes and the new ones cannot come from
   one distribution of process values: ``t = (mean(x) - mean(y)) / (s *
   sqrt(1/n + 1/m))`` above the critical value at :data:`ALPHA` with the degrees of
   freedom of the pooled standard deviation ``s`` (both groups, ``n + m - 2``). With a
   single baseline value ``s`` is the new processes' own (``n - 1`` degrees of
   freedom): the prediction interval of one further observation of a normal sample
   (Hahn and Meeker, *Statistical Intervals*, 1991).

Logs make a process offset multiplicative, as it is (the same layout costs a fixed
share of every call), and the t test is what a handful of values per side allows: 3
baseline processes and 5 new ones give 6 degrees of freedom.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: One-sided significance of the between-process test. A test that reaches it was
#: already suspected by the within-process rank test, so the chance that an unchanged
#: test fails is at most this per suspicion (the fresh processes are independent of
#: the one that raised it).
ALPHA = 0.005
#: Upper 0.5% points of Student's t by degrees of freedom (one-sided alpha 0.005; the
#: two-sided 0.01 column of NIST/SEMATECH e-Handbook of Statistical Methods, section
#: 1.3.6.7.2, "Critical values of the Student's t distribution"). Above 30: 2.750.
T_CRITICAL: dict[int, float] = {
    1: 63.657,
    2: 9.925,
    3: 5.841,
    4: 4.604,
    5: 4.032,
    6: 3.707,
    7: 3.499,
    8: 3.355,
    9: 3.250,
    10: 3.169,
    11: 3.106,
    12: 3.055,
    13: 3.012,
    14: 2.977,
    15: 2.947,
    16: 2.921,
    17: 2.898,
    18: 2.878,
    19: 2.861,
    20: 2.845,
    21: 2.831,
    22: 2.819,
    23: 2.807,
    24: 2.797,
    25: 2.787,
    26: 2.779,
    27: 2.771,
    28: 2.763,
    29: 2.756,
    30: 2.750,
}


def t_critical(df: int) -> float:
    """The one-sided :data:`ALPHA` point of Student's t with ``df`` degrees of freedom."""
    if df < 1:
        raise ValueError("a t test needs at least one degree of freedom")
    return T_CRITICAL.get(df, T_CRITICAL[30])


@dataclass(frozen=True)
class ProcessJudgement:
    """One metric judged over processes: does the change hold in fresh processes?"""

    metric: str
    held: bool
    change: float  # exp(mean(x) - mean(y)) - 1: the change between the groups' centres
    t: float | None  # None: too few values for a t test
    t_critical: float | None
    now: tuple[float, ...]  # each fresh process's value, machine slowdown removed
    baseline: tuple[float, ...]  # the baseline's process values
    tolerance: float
    reason: str

    @property
    def low_high(self) -> tuple[float, float]:
        """The smallest and largest change of one fresh process against the baseline."""
        centre = _geomean(self.baseline)
        return min(self.now) / centre - 1, max(self.now) / centre - 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "held": self.held,
            "change": self.change,
            "t": self.t,
            "t_critical": self.t_critical,
            "now": list(self.now),
            "baseline": list(self.baseline),
            "tolerance": self.tolerance,
            "reason": self.reason,
        }


def judge_processes(
    metric: str,
    now: Sequence[float],
    factors: Sequence[float],
    baseline: Sequence[float],
    tolerance: float,
) -> ProcessJudgement:
    """Whether ``metric`` regressed across processes (see the module doc).

    ``now``: the metric's value in each fresh process; ``factors``: how much slower
    the machine ran for each of them (>= 1; 1 where nothing was slower);
    ``baseline``: the baseline's value in each process it was recorded in (one or
    more). Lower is better for every timing metric.
    """
    if len(now) != len(factors):
        raise ValueError("one machine slowdown per fresh process")
    if not now or not baseline:
        raise ValueError("values on both sides are needed")
    if any(not _positive(v) for v in (*now, *baseline, *factors)):
        raise ValueError("process values and slowdowns must be finite and > 0")
    adjusted = tuple(v / max(1.0, f) for v, f in zip(now, factors, strict=True))
    x = [math.log(v) for v in adjusted]
    y = [math.log(v) for v in baseline]
    n, m = len(x), len(y)
    diff = _mean(x) - _mean(y)
    change = math.exp(diff) - 1.0
    if m > 1:
        df = n + m - 2
        pooled = (_ss(x) + _ss(y)) / df if df > 0 else 0.0
        scale = math.sqrt(pooled * (1.0 / n + 1.0 / m))
    else:
        df = n - 1
        scale = math.sqrt(_ss(x) / df * (1.0 / n + 1.0)) if df > 0 else 0.0
    t = crit = None
    if df >= 1:
        crit = t_critical(df)
        t = math.inf if scale == 0 else diff / scale
    beyond = change > tolerance
    separated = t is not None and crit is not None and t > crit
    held = beyond and separated
    where = f"{n} fresh process{'es' if n != 1 else ''}"
    against = (
        f"the baseline's {m} processes"
        if m > 1
        else "the baseline's one process (no spread "
        "recorded with it: the fresh processes' own spread stands for it)"
    )
    spread = f"{_pct(min(adjusted) / _geomean(baseline) - 1)} .. " + _pct(
        max(adjusted) / _geomean(baseline) - 1
    )
    stat = "too few values for a t test" if t is None else f"t = {_num(t)}, needs > {crit:.2f}"
    if held:
        reason = (
            f"holds in {where}: {_pct(change)} against {against} (each {spread}; {stat}, "
            f"one-sided {ALPHA:g})"
        )
    elif not beyond:
        reason = (
            f"does not hold in {where}: {_pct(change)} against {against} (each {spread}), "
            f"within the tolerance of {tolerance:.0%}: the first process was slow, not the code"
        )
    else:
        reason = (
            f"not separated from process-to-process variation in {where}: {_pct(change)} "
            f"against {against} (each {spread}; {stat}, one-sided {ALPHA:g})"
        )
    return ProcessJudgement(
        metric, held, change, t, crit, adjusted, tuple(baseline), tolerance, reason
    )


def _positive(value: float) -> bool:
    return isinstance(value, int | float) and math.isfinite(value) and value > 0


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _ss(values: Sequence[float]) -> float:
    mid = _mean(values)
    return sum((v - mid) ** 2 for v in values)


def _geomean(values: Sequence[float]) -> float:
    return math.exp(_mean([math.log(v) for v in values]))


def _pct(relative: float) -> str:
    return f"{relative:+.1%}"


def _num(value: float) -> str:
    return "inf" if math.isinf(value) else f"{value:.2f}"
