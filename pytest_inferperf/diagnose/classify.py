"""Why is it slow: from metrics to a diagnosis with evidence and recommendations.

Owns: the judging rules (which thresholds of :mod:`thresholds_by_core` crossed, how confident
that makes us, what share of the cycles each cause explains and so which one wins),
what could not be judged and why, the recommendations for CPU inference with ONNX
Runtime, and a :class:`Diagnosis` as plain data (its text is :mod:`report.diagnosis`'s).
The explanation of a change against a baseline is :mod:`change`'s (re-exported here:
``explain_change``, ``ChangeExplanation``).

Must not: read counters or files, compute metrics (``metrics`` does), render text, or
import pytest.
Pure functions over mappings: the plugin, the CLI and hook implementations call them.

How a category is judged:

* Each row of :data:`thresholds_by_core.THRESHOLDS` for the category and the core's family is a
  signal. ``key`` signals can make the category fire; ``support`` signals only add
  confidence once a key fired.
* A crossed signal's strength grows with how far past the threshold it is:
  ``0.4 + 0.6 * min(1, log(r) / log(4))`` where ``r`` is value/threshold (``>``) or
  threshold/value (``<``): 0.4 at the threshold, 1.0 at four times past it.
* Independent signals combine: ``confidence = 1 - prod(1 - 0.85 * w * strength)``
  with ``w`` 1 for keys and 0.5 for supports, so one key alone reaches at most 0.85
  and each agreeing signal adds to it.
* A level-1 category whose more specific child also fired (Arm's top-down decision
  tree: backend -> L1D / L2 / LLC / DTLB; frontend -> branch; IPC collapse -> any)
  has its confidence halved (:data:`thresholds_by_core.CHILD_DISCOUNT`).
* Low IPC alone is never a diagnosis: IPC collapse (ILP-limited compute) stands only
  when memory/backend metrics (:data:`thresholds_by_core.MEMORY_EVIDENCE`) were measured and
  none of the memory or backend categories fired; when one fired it explains the low
  IPC and IPC collapse is dropped; when none was measured IPC collapse goes to
  ``not_judged`` saying what to count. L1D refills alone rule memory out only when,
  each charged at a miss to DRAM, they could take less than a fifth of the cycles.
* IPC near the core's width (or top-down retiring) is its own finding, ``retiring``:
  the core is busy with useful work and the fix is less work.
* A cause that is a count of events must be material. Where every key signal that
  fired is a count with a per-event cost in its metric's row (``core.metrics``, ``cost``) (page
  faults, migrations, cache and TLB refills, mispredicted branches), the finding
  carries an :class:`EstimatedCost`: the events x that cost, over the call's time
  (per call: the shorter of its CPU and wall time, so threads do not dilute it; per
  CPU-second: the rate itself; per 1000 instructions: the cycles of 1000 instructions
  at the measured IPC). L1 refills with nothing below L1 counted are charged at a miss
  to DRAM, as the IPC-collapse gate charges them. The costs are upper bounds, so the
  share is too: a finding whose share stays below :data:`change.MATERIAL_SHARE` (a
  fifth, the same as for a change) cannot explain the call and goes to
  :attr:`Diagnosis.small` ("present but small"), not to the findings; it then neither
  halves a parent nor explains low IPC. A finding that also rests on a ratio, a
  fraction or a session setting (IPC, miss ratios, stall fractions, spinning) keeps
  its logic and carries no estimate, and so does one whose cost cannot be estimated
  (a count with no cost on record, no clock, or no IPC).
* Findings are ranked by the share of the cycles they explain (:class:`CycleShare`,
  :func:`cycle_share`, :func:`rank`): counted events x the core's typical penalty per
  event (:mod:`cycle_costs`) over the cycles of 1000 instructions, or a measured
  top-down / stall fraction, capped by what else was measured. Material shares first,
  then findings without a share by confidence, then small shares; a top-down parent
  measured as a fraction ranks right after its material child. Confidence breaks
  ties. Mispredicted branches, whose penalty is paid in series, name the cause by a
  material share alone; cache and TLB misses, which an out-of-order core overlaps,
  only through their thresholds.
* IPC below 0.75 x the width with no cause explaining a material share: the issue
  slots left unused less what the specific counted causes explain is the remainder; a
  material remainder is ILP-limited compute (``ipc_collapse``), under the same memory
  gate as the IPC-collapse rule, else ``not_judged`` says what to count. "Nothing
  crossed" is left for IPC near the width (or unmeasured).
* The higher measured stall fraction (STALL_FRONTEND / STALL_BACKEND of the cycles),
  when material, names its part by share (AWS perfrunbook top-down step 2); a backend
  share defers where L2/LLC refills or memory stalls split it (:func:`_stall_share_fired`).
  IPC collapse is a symptom: where counted causes explain the unused slots, the largest
  of them is named instead (:func:`_defer_ipc_collapse`).
* No core named: rows relative to the width are judged against every core of the
  instruction set (``<`` at the narrowest, ``>`` at the widest:
  :func:`thresholds_by_core.generic_facts`), at half the weight (:data:`GENERIC_DISCOUNT`).
* The primary finding is the first in rank. A category none of whose key
  signals could be evaluated goes to ``not_judged`` with the reason (missing events,
  unknown core width, no session settings). A core not on record is judged with every
  row (the generic fallback) and the diagnosis says so in ``notes``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.metrics import BOTTLENECK_VIEW, METRICS, TOPDOWN_MODELS, ChangeCost
from ..pmu.events import CATALOGUE
from .change import (  # the explanation of a change lives there; re-exported here
    CHANGE_MIN_RELATIVE,
    MATERIAL_SHARE,
    ChangeExplanation,
    MetricMove,
    explain_change,
    fmt,
)
from .cycle_costs import KINDS
from .cycle_costs import penalties as cycle_penalties

if TYPE_CHECKING:
    from ..core.profile import Profile

from .thresholds_by_core import (
    CATEGORIES,
    CHILD_DISCOUNT,
    CHILD_ONLY_BY,
    CHILDREN,
    ISA_GENERIC,
    JUDGEMENT,
    L1_ONLY_EXONERATES_BELOW,
    MEMORY_CATEGORIES,
    MEMORY_EVIDENCE,
    MEMORY_LEVEL3,
    SEVERAL_CPUS_BUSY,
    SPIN_PAUSES,
    THRESHOLDS,
    CoreFacts,
    Threshold,
    core_facts,
)

__all__ = [
    "CHANGE_MIN_RELATIVE",
    "ChangeExplanation",
    "CycleShare",
    "Diagnosis",
    "EstimatedCost",
    "Evidence",
    "Finding",
    "MetricMove",
    "RuleContext",
    "cycle_share",
    "diagnose",
    "explain_change",
]

KEY_WEIGHT, SUPPORT_WEIGHT, SIGNAL_CEILING = 1.0, 0.5, 0.85
# A finding that rests on IPC against a generic width (no core named: every core of the
# instruction set, thresholds.generic_facts) is judged for any such core, not this one:
# its confidence is halved (engineering judgement, as CHILD_DISCOUNT) and it says so.
GENERIC_DISCOUNT = 0.5
GENERIC_TEXT = "generic judgement: no core named, so it holds for any core on record"
_CACHE_MPKI = ("l1d_mpki", "l2_mpki", "llc_mpki")


# -- records ----------------------------------------------------------------------


@dataclass(frozen=True)
class Evidence:
    """One measured value against one threshold, and where the threshold comes from."""

    metric: str
    value: float
    threshold: float
    comparison: str  # ">" | "<"
    source: str

    @property
    def crossed(self) -> bool:
        if self.comparison == ">":
            return self.value > self.threshold
        return self.value < self.threshold

    def line(self) -> str:
        return f"{self.metric} = {_fmt(self.value)} {self.comparison} {_fmt(self.threshold)}"


@dataclass(frozen=True)
class EstimatedCost:
    """What the counted events of a finding can cost, at most, as a share of the call.

    ``share`` is an upper bound (the per-event costs of the metrics' rows, ``core.metrics`` ``cost``
    are); ``formula`` is how it was computed, in numbers the reader can check
    (``42 page faults x <=10 µs / 1.2 ms CPU time per call``); ``source`` is the
    per-event cost's source; ``metric`` the signal it was computed from.
    """

    metric: str
    share: float
    formula: str
    source: str = ""

    @property
    def material(self) -> bool:
        """Whether it can account for :data:`change.MATERIAL_SHARE` of the call."""
        return self.share >= MATERIAL_SHARE

    @property
    def text(self) -> str:
        """``up to 35% of the call: 42 page faults x <=10 µs / 1.2 ms CPU time per call``."""
        return f"up to {share_text(self.share)}: {self.formula}"


@dataclass(frozen=True)
class CycleShare:
    """The estimated share of the cycles one cause explains: what ranks the findings.

    From counts: events per 1000 instructions x the core's penalty per event
    (:mod:`cycle_costs`) over the cycles of 1000 instructions (1000 / IPC); from a
    top-down or stall fraction: the fraction itself (it is a share of slots or
    cycles). A typical estimate, not a bound: an out-of-order core overlaps misses, so
    shares of different causes can overlap and add up to more than the whole; each is
    capped at 1. ``formula`` shows the numbers (``718 LLC read misses/KI x 200 cycles
    (Neoverse N1: AnandTech) / 2000 cycles/KI``); ``source`` the penalties' sources.
    """

    share: float
    formula: str
    source: str = ""
    metric: str = ""  # the metric (or metrics, comma-separated) it was computed from

    @property
    def material(self) -> bool:
        """Whether it explains :data:`change.MATERIAL_SHARE` of the cycles or more."""
        return self.share >= MATERIAL_SHARE

    @property
    def short(self) -> str:
        """``~62% of cycles``."""
        return f"~{_percent(self.share)} of cycles"

    @property
    def text(self) -> str:
        """``~62% of cycles: 718 LLC read misses/KI x 200 cycles (...) / 2000 cycles/KI``."""
        return f"{self.short}: {self.formula}"


def _percent(share: float) -> str:
    percent = share * 100.0
    return f"{percent:.0f}%" if percent >= 10 or percent == 0 else f"{percent:.2g}%"


def share_text(share: float) -> str:
    """``35% of the call``, ``0.043% of the call``; an upper bound past the whole call
    (the per-event costs are bounds, not measurements) is ``the whole call``."""
    if share >= 1.0:
        return "the whole call"
    percent = share * 100.0
    return f"{percent:.0f}% of the call" if percent >= 10 else f"{percent:.2g}% of the call"


@dataclass(frozen=True)
class Finding:
    """One category that fired, how sure we are, why, and what to try."""

    category: str
    title: str
    confidence: float  # 0..1
    evidence: tuple[Evidence, ...] = ()
    recommendations: tuple[str, ...] = ()
    explanation: str = ""
    cost: EstimatedCost | None = None  # None: not a count of events, or not estimable
    share: CycleShare | None = None  # None: no share of cycles can be estimated


@dataclass(frozen=True)
class Diagnosis:
    """The verdict: the primary finding, the others, what could not be judged.

    ``small`` holds the findings that crossed their thresholds but whose estimated
    cost is below :data:`change.MATERIAL_SHARE` of the call ("present but small"):
    never the primary finding, shown in the full reasoning only.
    """

    primary: Finding | None
    secondary: tuple[Finding, ...] = ()
    not_judged: Mapping[str, str] = field(default_factory=dict)
    change: ChangeExplanation | None = None
    core: str = ""
    notes: tuple[str, ...] = ()  # what the reader must know about how it was judged
    small: tuple[Finding, ...] = ()  # fired, but can cost less than MATERIAL_SHARE

    @property
    def findings(self) -> tuple[Finding, ...]:
        return ((self.primary,) if self.primary else ()) + self.secondary


@dataclass(frozen=True)
class RuleContext:
    """What a rule (built in, or a ``pytest_inferperf_rules`` hook) may look at."""

    core: str
    facts: CoreFacts
    unavailable: Mapping[str, str] = field(default_factory=dict)
    session: Mapping[str, Any] | None = None
    cpu_count: int | None = None

    @classmethod
    def of(
        cls,
        core: str,
        *,
        unavailable: Mapping[str, str] | None = None,
        session: Mapping[str, Any] | None = None,
        cpu_count: int | None = None,
    ) -> RuleContext:
        """The context ``diagnose`` builds, for callers of the rules hook."""
        return cls(core, core_facts(core), dict(unavailable or {}), session, cpu_count)

    @property
    def configured_threads(self) -> int | None:
        """Intra-op threads (+ inter-op threads in parallel mode); None if unknown/auto."""
        if not self.session:
            return None
        intra = self.session.get("intra_op_threads")
        if not isinstance(intra, int) or isinstance(intra, bool) or intra <= 0:
            return None
        inter = self.session.get("inter_op_threads")
        if (
            self.session.get("execution_mode") == "parallel"
            and isinstance(inter, int)
            and inter > 0
        ):
            return intra + inter
        return intra

    @property
    def useful_threads(self) -> int | None:
        """Threads expected to do the work: the configured count, or all CPUs for auto."""
        configured = self.configured_threads
        if configured is not None:
            return configured
        if self.session and self.session.get("intra_op_threads") == 0 and self.cpu_count:
            return self.cpu_count  # ORT's default: one thread per (physical) core
        return None


# -- evaluation ------------------------------------------------------------------------


_fmt = fmt  # one number format for diagnoses and changes (change.fmt)


def strength(value: float, threshold: float, comparison: str) -> float:
    """How far past ``threshold`` a crossed value is: 0.4 at it, 1.0 at 4x past it."""
    if comparison == ">":
        ratio = value / threshold if threshold > 0 else math.inf
    else:
        ratio = threshold / value if value > 0 else math.inf
    if ratio <= 1.0:
        return 0.0
    return 0.4 + 0.6 * min(1.0, math.log(ratio) / math.log(4.0))


def combine(strengths: Iterable[tuple[float, float]]) -> float:
    """``1 - prod(1 - ceiling * weight * strength)`` over (weight, strength) pairs."""
    miss = 1.0
    for weight, s in strengths:
        miss *= 1.0 - SIGNAL_CEILING * weight * s
    return 1.0 - miss


def _session_value(metric: str, ctx: RuleContext) -> float | None:
    session = ctx.session
    if session is None:
        return None
    if metric == "session.allow_spinning":
        spin = session.get("allow_spinning")
        if not isinstance(spin, bool):
            return None
        # A single intra-op thread means no pool: nothing to spin.
        return 1.0 if spin and session.get("intra_op_threads") != 1 else 0.0
    if metric == "session.enable_mem_arena":
        arena = session.get("enable_mem_arena")
        return None if not isinstance(arena, bool) else float(arena)
    if metric == "session.threads":
        threads = ctx.configured_threads
        return None if threads is None else float(threads)
    return None


def _scale(row: Threshold, ctx: RuleContext) -> float | None:
    if row.relative_to is None:
        return 1.0
    if row.relative_to == "width":
        return ctx.facts.width_for(row.comparison)
    if row.relative_to == "useful_threads":
        return None if ctx.useful_threads is None else float(ctx.useful_threads)
    if row.relative_to == "cpu_count":
        return None if not ctx.cpu_count else float(ctx.cpu_count)
    raise ValueError(f"unknown relative_to {row.relative_to!r} in thresholds")


def _event_name(event: str) -> str:
    spec = CATALOGUE.get(event)
    if spec is None:
        return event
    if spec.arm:
        return "/".join(name.upper() for name, _ in spec.arm)
    return event.replace("_", "-")


def why_missing(metric: str, ctx: RuleContext) -> str:
    """Why ``metric`` has no value here, as specifically as the facts allow."""
    if metric.startswith("session."):
        if ctx.session is None:
            return f"{metric}: no ONNX Runtime session settings given"
        return f"{metric}: the session settings do not say (or ORT chooses the thread count)"
    spec = METRICS.get(metric)
    if spec is None:
        return f"{metric}: not measured"
    if not spec.inputs:
        return f"{metric}: not measured (no latency statistics)"
    reasons: list[str] = []
    uncounted: dict[str, list[str]] = {}  # the reason's headline -> events
    for event in spec.inputs:
        if event in ctx.facts.lacks:
            reasons.append(
                f"no {_event_name(event)} on {ctx.facts.name} ({ctx.facts.lacks_source})"
            )
        elif event in ctx.unavailable:
            headline = ctx.unavailable[event].split(":", 1)[0]  # full text: inferperf doctor
            uncounted.setdefault(headline, []).append(_event_name(event))
    reasons.extend(
        f"{', '.join(events)} not counted: {headline}" for headline, events in uncounted.items()
    )
    level1 = metric in ("frontend_bound", "backend_bound", "retiring", "bad_speculation")
    model = TOPDOWN_MODELS.get(ctx.facts.slug)
    if not reasons and level1 and model is not None and model.dispatched_ops:
        reasons.append(
            f"not measured (on {ctx.facts.name} it needs AMD's dispatch-slot events: "
            "perf stat -M PipelineL1)"
        )
    elif not reasons and level1 and ctx.facts.family != "arm-topdown":
        reasons.append(f"no level-1 top-down formula for {ctx.facts.name}")
    if not reasons:
        reasons.append(f"not measured (needs {', '.join(spec.inputs)})")
    return f"{metric}: {'; '.join(dict.fromkeys(reasons))}"


@dataclass(frozen=True)
class _Signal:
    row: Threshold
    evidence: Evidence | None  # None when it could not be evaluated
    missing: str | None

    @property
    def crossed(self) -> bool:
        return self.evidence is not None and self.evidence.crossed


def _signal(row: Threshold, metrics: Mapping[str, float], ctx: RuleContext) -> _Signal:
    if row.metric.startswith("session."):
        value = _session_value(row.metric, ctx)
    else:
        value = metrics.get(row.metric)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return _Signal(row, None, why_missing(row.metric, ctx))
    scale = _scale(row, ctx)
    if scale is None:
        what = {
            "width": f"issue width of {ctx.facts.name} unknown",
            "useful_threads": "threads configured for the work unknown (no session "
            "settings, or ORT chooses and the CPU count is unknown)",
            "cpu_count": "CPU count unknown",
        }[row.relative_to or ""]
        return _Signal(row, None, f"{row.metric}: {what}")
    source = row.source if not row.judgement else f"{row.source}: {row.why}"
    if row.relative_to == "width":
        source += f" (width {_fmt(scale)}: {ctx.facts.width_source})"
        if ctx.facts.widest is not None:
            source += f"; {GENERIC_TEXT}"
    return _Signal(
        row, Evidence(row.metric, float(value), row.value * scale, row.comparison, source), None
    )


# -- what a finding's events cost -------------------------------------------------------

# Metrics below L1: with one of them counted, an L1 refill is charged as an L2 hit (a
# deeper miss is the L2/LLC finding's); without, it may be a miss to DRAM.
_BELOW_L1 = ("l2_mpki", "llc_mpki")
_L1_REFILLS = ("l1d_mpki", "l1i_mpki")
_PER_SECOND = "_per_sec"


def _cost_row(metric: str) -> ChangeCost | None:
    """The per-event cost of a count metric; None for ratios, fractions and settings.

    A rate per CPU-second (``page_faults_per_sec``) is the same event as its per-call
    metric (``page_faults_per_call``) and costs the same."""
    if metric.endswith(_PER_SECOND):
        metric = metric[: -len(_PER_SECOND)] + "_per_call"
    row = _cost_of(metric)
    return row if row is not None and row.kind in ("event_us", "mpki_cycles") else None


def _cost_of(metric: str) -> ChangeCost | None:
    """What one more unit of ``metric`` costs at most: its row's (``core.metrics``)."""
    row = METRICS.get(metric)
    return None if row is None else row.cost


def _dram_miss() -> ChangeCost:
    """The cost of a miss to DRAM: ``llc_mpki``'s."""
    cost = METRICS["llc_mpki"].cost
    assert cost is not None  # the row holds one (tests/test_metric_rows.py)
    return cost


def _events(metric: str) -> str:
    """``page faults`` from "page faults per call": what the metric counts."""
    spec = METRICS.get(metric)
    return spec.description.split(" per ", 1)[0] if spec else metric


def _call_clock(metrics: Mapping[str, float]) -> tuple[float, str] | None:
    """The call's time in ms: the shorter of its CPU time (all threads) and wall time,
    so a cause on the critical path is not diluted by other threads' CPU time."""
    clocks = [
        (float(metrics[name]), what)
        for name, what in (("cpu_ms_per_call", "CPU"), ("latency_mean_ms", "wall"))
        if metrics.get(name) is not None and float(metrics[name]) > 0
    ]
    return min(clocks) if clocks else None


def estimate_cost(metric: str, value: float, metrics: Mapping[str, float]) -> EstimatedCost | None:
    """What ``value`` of the count ``metric`` can cost, as a share of the call.

    None when ``metric`` is not a count with a per-event cost on record, or the clock
    it is measured against (the call's time, or the IPC) was not measured.
    """
    row = _cost_row(metric)
    if row is None:
        return None
    events = _events(metric)
    if row.kind == "event_us":
        if metric.endswith(_PER_SECOND):
            per_call = metric[: -len(_PER_SECOND)] + "_per_call"
            if metrics.get(per_call) is not None:  # the same events, read per call
                estimate = estimate_cost(per_call, float(metrics[per_call]), metrics)
                if estimate is not None:
                    return estimate
            # per CPU-second (perf stat without --calls): the rate is the share
            share = value * row.cost * 1e-6
            formula = f"{fmt(value)} {events} per CPU-second x <={fmt(row.cost)} µs"
            return EstimatedCost(metric, share, formula, row.source)
        clock = _call_clock(metrics)
        if clock is None:
            return None
        ms, what = clock
        share = value * row.cost / 1000.0 / ms
        formula = (
            f"{fmt(value)} {events} x <={fmt(row.cost)} µs / {fmt(ms)} ms {what} time per call"
        )
        return EstimatedCost(metric, share, formula, row.source)
    ipc = metrics.get("ipc")
    if ipc is None or not ipc > 0:
        return None
    cost, charged, source = row.cost, "", row.source
    if metric in _L1_REFILLS and not any(m in metrics for m in _BELOW_L1):
        dram = _dram_miss()
        cost, source = dram.cost, dram.source
        charged = " (charged as a miss to DRAM: nothing below L1 was counted)"
    share = value * cost * float(ipc) / 1000.0
    formula = (
        f"{fmt(value)} {events} per 1000 instructions x <={fmt(cost)} cycles{charged} / "
        f"{fmt(1000.0 / float(ipc))} cycles (1000 instructions at IPC {fmt(float(ipc))})"
    )
    return EstimatedCost(metric, share, formula, source)


def _finding_cost(signals: Iterable[_Signal], metrics: Mapping[str, float]) -> EstimatedCost | None:
    """The largest estimate over the key signals that fired, when each of them is a
    count whose cost could be estimated; else None (the finding keeps its logic).

    The largest, not the sum: the keys of one category count the same events two ways
    (faults per call and per CPU-second) or nested events (L2 refills and LLC misses).
    """
    estimates: list[EstimatedCost] = []
    for sig in signals:
        if sig.row.role != "key" or not sig.crossed or sig.evidence is None:
            continue
        estimate = estimate_cost(sig.row.metric, sig.evidence.value, metrics)
        if estimate is None:
            return None
        estimates.append(estimate)
    return max(estimates, key=lambda e: e.share) if estimates else None


def _stalled_cost(
    category: str, cost: EstimatedCost | None, metrics: Mapping[str, float], ctx: RuleContext
) -> EstimatedCost | None:
    """A count's cost bounded by the evidence of stalls (:func:`_stall_cap`).

    Events x latency assumes each miss stalls the core for its whole latency. A miss the
    core never waits on costs nothing: a hardware prefetcher running ahead of a
    sequential or unit-stride stream turns the demand accesses into hits while the
    refills it caused are still counted. Arm's Neoverse N1 counts them in
    L2D_CACHE_REFILL ("any cacheable transaction from L1 which causes data to be read
    from outside the core", only stashes excluded; the Cortex-A76 and Neoverse V1 lists
    exclude "stashes and prefetches that target this level of cache"; ARM-software/data
    pmu/neoverse-n1.json, cortex-a76.json, neoverse-v1.json), and Intel's
    LONGEST_LAT_CACHE.MISS (x86 ``cache-misses``) counts hardware prefetches with the
    demand requests (Intel perfmon event lists). So the cycles a miss count can cost are
    at most the cycles the core was measured to stall: the issue slots IPC leaves
    unused (1 - IPC / width) and, for data-side misses, the backend (memory) stall
    fraction. A count whose cost so bounded falls below
    :data:`change.MATERIAL_SHARE` is present but small, whatever its rate per 1000
    instructions. Only per-1000-instruction costs are bounded (per-call OS events are
    time, not stalls); without IPC, a width or a stall count nothing bounds it."""
    row = None if cost is None else _cost_of(cost.metric)
    if cost is None or row is None or row.kind != "mpki_cycles":
        return cost
    ipc = _value(metrics, "ipc")
    if ipc is None or not ipc > 0:
        return cost
    cap = _stall_cap(category, ipc, metrics, ctx)
    if cap is None or cost.share <= cap[0]:
        return cost
    return EstimatedCost(
        cost.metric,
        cap[0],
        f"{cost.formula} = {share_text(cost.share)}, capped at the measured stalls: "
        f"{cap[1]} (a miss costs cycles only while the core waits on it)",
        cost.source,
    )


# -- what share of the cycles a cause explains (the ranking) ---------------------------

# A fraction that is itself a share of slots (top-down level 1) or of cycles (stalls),
# per category, most specific first. Where the output has one, it is the share.
# Where top-down level 2 split the backend, the backend category (core-bound) is its
# core part, and the memory category takes the memory part: the whole of it, before
# DRAM's part (tma_dram_bound), which leaves out the loads served by the L3 (a memory
# part of 95% with 0% from DRAM is a wait on the L3, not no wait). A tuple is parts that
# add up to the share, counted where its first part was measured: level 3 of the memory
# part splits it by the level that served the loads (Intel TMA), so the L2's part is
# L1D residency's share and the L3's and DRAM's, together, L2/LLC residency's.
#
# Intel's bottleneck view, where it was printed, comes first: each entry is already a
# cause's total pipeline cost across the tree (ingest.tma_bottlenecks), the share the
# ranking asks for, computed by Intel's own formulas from nodes a perf stat output
# rarely holds (the front end's resteers after a misprediction are the misprediction's).
_FRACTIONS: dict[str, tuple[str | tuple[str, ...], ...]] = {
    "retiring": ("bottleneck_useful_work", "retiring"),
    "thread_spinning": ("slow_pause",),
    "l1d_residency": ("l2_bound",),
    "tlb_churn": (
        "bottleneck_data_tlbs",
        ("dtlb_load_bound", "dtlb_store_bound"),
        ("dtlb_store_bound",),
    ),
    "branch_misprediction": ("bottleneck_mispredictions", "branch_mispredicts", "bad_speculation"),
    "frontend_bound": (
        ("bottleneck_big_code", "bottleneck_fetch_bandwidth"),
        ("bottleneck_fetch_bandwidth",),
        "frontend_bound",
        "frontend_stalled",
        ("icache_misses", "itlb_misses"),
        ("itlb_misses",),
    ),
    "backend_bound": (
        "bottleneck_compute",
        ("core_bound", "l1_bound", "store_bound"),
        ("l1_bound", "store_bound"),
        ("store_bound",),
        "backend_bound",
        "backend_stalled",
        ("divider", "ports_utilization"),
        ("ports_utilization",),
    ),
    "l2_llc_residency": (
        ("bottleneck_memory_bandwidth", "bottleneck_memory_latency", "bottleneck_memory_sync"),
        ("bottleneck_memory_latency", "bottleneck_memory_sync"),
        ("bottleneck_memory_sync",),
        "backend_mem_stalled",
        ("l3_bound", "dram_stalled"),
        "memory_bound",
        "dram_stalled",
    ),
}


# A level-3 share less its level-4 part that another category takes (core.metrics'
# ``within``): the loads that hit L1D but waited, less those that waited on a DTLB miss
# (Intel TMA: DTLB_Load is a child of L1_Bound), which are the TLB's; the stores' wait
# less its DTLB part (DTLB_Store, a child of Store_Bound).
_LESS_CHILD = {m.within: m.name for m in METRICS.values() if m.within is not None}


def _parts(entry: str | tuple[str, ...]) -> tuple[str, ...]:
    """The metrics a :data:`_FRACTIONS` entry adds up (one for a single fraction)."""
    return (entry,) if isinstance(entry, str) else entry


# Every metric a fraction of _FRACTIONS reads, per category.
_FRACTION_METRICS = {
    category: tuple(dict.fromkeys(n for e in entries for n in _parts(e)))
    for category, entries in _FRACTIONS.items()
}
# Top-down level-2 fractions (shares of all the slots), each with the level-1 fraction
# it is part of (core.metrics, ``parts``): the backend's memory and core, bad
# speculation's mispredicted branches and machine clears, disjoint from each other.
_LEVEL2: dict[str, str] = {part: m.name for m in METRICS.values() for part in m.parts}
_BACKEND_PARTS = METRICS["backend_bound"].parts
# Shares that hold none of their category's children: a level-2 or level-3 part.
_LEAF_SHARES = (
    *_LEVEL2,
    *MEMORY_LEVEL3,
    "dtlb_load_bound",
    "dtlb_store_bound",
    "store_bound",
    "divider",
    "ports_utilization",
    "icache_misses",
    "itlb_misses",
    *BOTTLENECK_VIEW,
)


def _level1_of(fraction: str | None) -> str | None:
    """The level-1 top-down fraction ``fraction`` is or is part of; None for any other."""
    if fraction in _LEVEL1:
        return fraction
    return _LEVEL2.get(fraction or "")


# Counted events, per category: (metric, penalty kind); the nested cache levels are
# split so that each miss is charged once, at the level that served it.
_COUNTS: dict[str, tuple[tuple[str, str], ...]] = {
    "l1d_residency": (("l1d_mpki", "l2_hit"),),
    "l2_llc_residency": (("l2_mpki", "llc_hit"), ("llc_mpki", "dram")),
    "tlb_churn": (("dtlb_mpki", "walk"),),
    "branch_misprediction": (("branch_mpki", "mispredict"),),
    "frontend_bound": (("l1i_mpki", "l2_hit"), ("itlb_mpki", "walk")),
}
# Causes whose counted cycles are not ILP-limited compute: subtracted from the issue
# slots an IPC below the width leaves unused before the rest is called ILP-limited.
# Backend stalls are not: a core waiting on a dependency chain stalls its backend too.
_SPECIFIC_CAUSES = (
    "l1d_residency",
    "l2_llc_residency",
    "tlb_churn",
    "branch_misprediction",
    "frontend_bound",
)


def _value(metrics: Mapping[str, float], name: str) -> float | None:
    value = metrics.get(name)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return float(value)


def _own_value(metrics: Mapping[str, float], name: str) -> float | None:
    """``name``'s value less its child of :data:`_LESS_CHILD`, where that was measured."""
    value = _value(metrics, name)
    child = _value(metrics, _LESS_CHILD.get(name, ""))
    return value if value is None or child is None else max(0.0, value - child)


def _served(metrics: Mapping[str, float], metric: str) -> tuple[float, str] | None:
    """Events per 1000 instructions of ``metric`` served at its own level: L1D refills
    less the L2 refills (or LLC misses) counted below them, L2 refills less the LLC
    misses; with ``what`` it counts, for the formula."""
    value = _value(metrics, metric)
    if value is None:
        return None
    below = METRICS[metric].beneath if metric in METRICS else ()
    deeper = next((m for m in below if _value(metrics, m) is not None), None)
    what = _events(metric)
    if deeper is None:
        return value, f"{fmt(value)} {what}"
    served = max(0.0, value - float(metrics[deeper]))
    return served, f"({fmt(value)} - {fmt(float(metrics[deeper]))} {_events(deeper)}) {what}"


def cycle_share(category: str, metrics: Mapping[str, float], ctx: RuleContext) -> CycleShare | None:
    """The estimated share of the cycles ``category`` explains here, or None.

    A top-down or stall fraction of :data:`_FRACTIONS` is the share itself; else the
    counts of :data:`_COUNTS` x the core's penalties (:func:`cycle_costs.penalties`)
    over 1000 / IPC cycles per 1000 instructions; ``retiring`` without a top-down
    fraction is IPC / the core's width; ``thread_spinning`` the CPU time beyond the
    threads configured to work. None when nothing it needs was measured, or when that
    excess is small while the session lets its pool spin (then it is only a lower
    bound: configured threads spin-waiting between parallel sections burn CPU that
    task-clock cannot tell from work)."""
    for entry in _FRACTIONS.get(category, ()):
        names = _parts(entry)
        parts = [(n, v) for n in names if (v := _own_value(metrics, n)) is not None]
        if not parts or parts[0][0] != names[0]:
            continue
        name = names[0]
        of = (
            "issue slots (Intel's bottleneck view: the cause's total pipeline cost)"
            if name in BOTTLENECK_VIEW
            else "issue slots (top-down level 1)"
            if name in _LEVEL1
            else "issue slots (top-down level 2)"
            if name in _LEVEL2
            else "cycles"
        )
        return CycleShare(
            min(sum(max(v, 0.0) for _, v in parts), 1.0),
            " + ".join(f"{n} {fmt(v)}" for n, v in parts)
            + f" (a fraction of {of}: the share itself)",
            METRICS[name].source if name in METRICS else "",
            ",".join(n for n, _ in parts),
        )
    if category == "thread_spinning":
        return _spinning_share(metrics, ctx)
    ipc = _value(metrics, "ipc")
    if category == "retiring":
        width = ctx.facts.width_for(">")
        if ipc is None or not width:
            return None
        return CycleShare(
            min(ipc / width, 1.0),
            f"IPC {fmt(ipc)} / width {fmt(width)}",
            f"width: {ctx.facts.width_source}",
            "ipc",
        )
    if ipc is None or not ipc > 0:
        return None
    table = cycle_penalties(ctx.core)
    terms: list[str] = []
    sources: list[str] = []
    used: list[str] = []
    cycles = 0.0
    for metric, kind in _COUNTS.get(category, ()):
        served = _served(metrics, metric)
        if served is None:
            continue
        count, what = served
        penalty = table.of(kind)
        cycles += count * penalty.cycles
        label = f"{penalty.fallback}: {penalty.label}" if penalty.fallback else penalty.label
        terms.append(f"{what}/KI x {fmt(penalty.cycles)} cycles ({label})")
        sources.append(f"{KINDS[kind]}: {penalty.source}")
        used.append(metric)
    if not terms:
        return None
    per_ki = 1000.0 / ipc
    share, formula = cycles / per_ki, f"{' + '.join(terms)} / {fmt(per_ki)} cycles/KI"
    cap = _stall_cap(category, ipc, metrics, ctx)
    if cap is not None and share > cap[0]:
        share, formula = cap[0], f"{formula} = {_percent(share)}, capped at {cap[1]}"
    return CycleShare(min(share, 1.0), formula, "; ".join(dict.fromkeys(sources)), ",".join(used))


def _spinning_share(metrics: Mapping[str, float], ctx: RuleContext) -> CycleShare | None:
    """The CPU time beyond the threads configured to do the work: busy CPUs less the
    useful threads, over the busy CPUs (the cycles of every thread, as the counters
    count them). None without the CPU utilisation or the session's threads."""
    busy, useful = _value(metrics, "cpu_utilisation"), ctx.useful_threads
    if busy is None or not busy > 0 or useful is None:
        return None
    share = min(max(0.0, (busy - useful) / busy), 1.0)
    if share < MATERIAL_SHARE and _session_value("session.allow_spinning", ctx) == 1.0:
        return None
    return CycleShare(
        share,
        f"({fmt(busy)} CPUs busy - {useful} threads configured) / {fmt(busy)} CPUs busy",
        "task-clock / wall time, against the session's intra-op (+ inter-op) threads",
        "cpu_utilisation",
    )


def _stall_cap(
    category: str, ipc: float, metrics: Mapping[str, float], ctx: RuleContext
) -> tuple[float, str] | None:
    """What bounds a counted share where more was measured: a cycle in which a miss
    stalls the core retires nothing, so stalls take at most the issue slots IPC leaves
    unused (1 - IPC / width); and data-side misses stall the backend, so they take at
    most the measured backend stall (or top-down backend) fraction. Events x latency
    alone over-states what an out-of-order core, which overlaps misses, loses."""
    caps: list[tuple[float, str]] = []
    # A bound must hold on every core the run may be from: where none is named, the
    # widest on record leaves the most slots unused (the narrowest can be narrower than
    # the IPC measured, which bounds nothing).
    width = ctx.facts.widest or ctx.facts.width
    if width:
        lost = max(0.0, 1.0 - ipc / width)
        caps.append((lost, f"1 - IPC {fmt(ipc)} / width {fmt(width)} = {_percent(lost)}"))
    if category in MEMORY_CATEGORIES:
        # a miss stalls the backend's memory part, where top-down level 2 split it
        whole = ("backend_bound", "backend_stalled")
        for name in whole if category == "backend_bound" else ("memory_bound", *whole):
            value = _value(metrics, name)
            if value is not None:
                caps.append((max(0.0, value), f"{name} {fmt(value)}"))
                break
    if category in _CACHE_CATEGORIES:
        # Arm STALL_BACKEND_MEM (V1, N2, V2): cycles the backend stalled with a demand
        # load waiting on memory (ARM-software/data pmu/neoverse-v1.json).
        value = _value(metrics, "backend_mem_stalled")
        if value is not None:
            caps.append((max(0.0, value), f"backend_mem_stalled {fmt(value)}"))
    return min(caps) if caps else None


_CACHE_CATEGORIES = ("l1d_residency", "l2_llc_residency")


_LEVEL1 = ("frontend_bound", "backend_bound", "retiring", "bad_speculation")


# Causes whose penalty is paid in series, one event after the other: a mispredicted
# branch flushes the pipeline, and refilling it cannot overlap with the work it
# replaces (Agner Fog, 'The microarchitecture of Intel, AMD and VIA CPUs', on the
# misprediction penalty: the time to refill the pipeline). Their count x penalty is a
# share of the cycles, and one past the share at which the top-down method flags that
# cause names it even below the threshold on its rate: for mispredicted branches, a
# tenth of the slots (Intel TMA level 2, tma_branch_mispredicts > 0.1, Linux perf x86
# metrics.json; the slots of a flushed pipeline are its cycles' slots). Cache and TLB
# misses are not serial: an out-of-order core overlaps them with each other and with
# independent work (memory-level parallelism, prefetching), so count x latency
# over-states them; they name a cause through their thresholds only.
_SERIAL: dict[str, tuple[float, str]] = {
    "branch_misprediction": (
        0.10,
        "Intel TMA level-2 MetricThreshold 'tma_branch_mispredicts > 0.1' (Linux perf x86 "
        "metrics.json)",
    ),
}


# Stall counts that are a share of the cycles by definition: Arm's STALL_FRONTEND /
# STALL_BACKEND count "every cycle counted by the CPU_CYCLES event on that no operation
# was issued because ..." (Arm PMUv3 common events, ARM-software/data pmu/*.json), perf's
# stalled-cycles-frontend/-backend the same on x86. The AWS Graviton perfrunbook's
# top-down step 2 (debug_hw_perf.md): "measure stall_frontend_pkc and stall_backend_pkc
# (pkc = per kilo cycle) and determine which is higher ... If stalls in the backend are
# higher, it indicates the machinery that executes the instructions and reads data from
# memory is causing slow-downs". So the higher of the two, when it is a material share of
# the cycles (a fifth: also perf's lowest colour level for backend stalls, 20%,
# stat-shadow.c get_ratio_color), names its part of the core though perf's middle level
# (50% / 30%) was not crossed. Measured cycles, not counts x latency: no overlap to
# over-state.
_STALL_SHARES = {"frontend_bound": "frontend_stalled", "backend_bound": "backend_stalled"}
# What splits a backend stall into memory and core: refills below L1, memory stalls.
_MEMORY_SPLIT = (
    "l2_mpki",
    "llc_mpki",
    "llc_miss",
    "backend_mem_stalled",
    "dram_stalled",
    "memory_bound",
    *MEMORY_LEVEL3,
)
AWS_STALLS = (
    "AWS Graviton perfrunbook (debug_hw_perf.md), top-down step 2: of stall_frontend and "
    "stall_backend per kilo cycle, the higher names the part that slows the core"
)


def _stall_share_fired(
    category: str, share: CycleShare | None, metrics: Mapping[str, float]
) -> Evidence | None:
    """Evidence that a measured stall fraction (:data:`_STALL_SHARES`) is a material
    share of the cycles and the higher of the two measured; None otherwise."""
    name = _STALL_SHARES.get(category)
    if name is None or share is None or share.metric != name or not share.material:
        return None
    if category == "backend_bound" and any(_value(metrics, m) is not None for m in _MEMORY_SPLIT):
        # Backend stalls are memory-bound or core-bound (Yasin, ISPASS 2014: Backend
        # Bound = Memory Bound + Core Bound). With memory below L1 measured, the split
        # is known: a memory cause fires on its own rows, and a core-bound stall is the
        # ILP verdict's (ipc_collapse), the more specific finding.
        return None
    other = _value(metrics, next(n for c, n in _STALL_SHARES.items() if c != category))
    if other is not None and other > share.share:
        return None
    versus = "" if other is None else f"; the other stall fraction is {fmt(other)}"
    return Evidence(
        name,
        share.share,
        MATERIAL_SHARE,
        ">",
        f"{AWS_STALLS}: a measured share of the cycles, {MATERIAL_SHARE:.0%} of them "
        f"material (change.MATERIAL_SHARE; perf stat-shadow.c colours backend stalls "
        f"from 20%){versus}",
    )


def _share_fired(
    category: str, share: CycleShare | None, metrics: Mapping[str, float]
) -> Evidence | None:
    """Evidence that a counted cause with a serial penalty (:data:`_SERIAL`) explains
    the share of the cycles at which the top-down method flags it, though no threshold
    of its own crossed: its count against the count at which it would take that share;
    or that a measured stall fraction explains a material share
    (:func:`_stall_share_fired`). None unless the share rests on counts or stall cycles
    (top-down slot fractions keep their thresholds)."""
    stalls = _stall_share_fired(category, share, metrics)
    if stalls is not None:
        return stalls
    if share is None or category not in _SERIAL:
        return None
    bar, bar_source = _SERIAL[category]
    if share.share < bar:
        return None
    metric = share.metric.split(",")[0]
    if metric not in dict(_COUNTS[category]):
        return None
    value = _value(metrics, metric)
    if value is None or value <= 0:
        return None
    at_bar = value * bar / share.share
    return Evidence(
        metric,
        value,
        at_bar,
        ">",
        f"estimated share of cycles: {share.text}; {bar:.0%} of the cycles at "
        f"{fmt(at_bar)} ({bar_source})",
    )


# -- explanations and recommendations ------------------------------------------------

_EXPLAIN: dict[str, str] = {
    "retiring": "The core retires close to its issue width every cycle: nothing stalls it, "
    "the instructions themselves are the cost. Memory, threading or layout tuning will not "
    "help; only doing less work will.",
    "ipc_collapse": "The core retires few instructions per cycle for its width. With no "
    "cache, TLB, branch or frontend signal to explain it, the likely cause is long "
    "dependency chains: scalar or reference kernels, reductions, operators without a "
    "vectorised implementation for this CPU.",
    "l1d_residency": "Loads miss the L1 data cache often: the tiles the kernels work on do "
    "not stay in L1D, so the core waits on L2.",
    "l2_llc_residency": "Misses leave L2 (and the LLC): the working set - weights plus "
    "activations of a layer - does not fit and streams from the last-level cache or DRAM. "
    "The backend stalls on memory.",
    "tlb_churn": "Address translation misses the TLBs and walks the page tables: the data "
    "is spread over more 4 KiB pages than the TLBs cover.",
    "branch_misprediction": "Branches are mispredicted often enough to flush the pipeline "
    "regularly: data-dependent control flow, many small operators, or dispatch overhead.",
    "frontend_bound": "The frontend cannot deliver instructions: the code footprint per "
    "call (many distinct kernels) misses the L1 instruction cache or the ITLB.",
    "backend_bound": "The backend cannot accept more work: execution units or their queues "
    "are full. When no cache or TLB signal fires as well, the compute itself is the limit "
    "(core-bound).",
    "thread_spinning": "More CPU time is burnt than the configured threads can use: pool "
    "threads spin-wait between parallel sections, or more threads than CPUs compete.",
    "page_faults": "Calls keep touching freshly mapped memory: tensors are allocated from "
    "the system every call (no arena, no preallocated outputs) and each new page faults.",
    "noisy_machine": "The scheduler moves or preempts the threads: other load on the "
    "machine, no pinning. Counters of a noisy run describe the machine, not the model.",
}


def _fired(finding_evidence: tuple[Evidence, ...], metric: str) -> bool:
    return any(e.metric == metric and e.crossed for e in finding_evidence)


# Stand-ins in _RECOMMEND for texts worded for the session at hand (_recommend fills them in).
_OPT_ALL = "<graph_optimization_level all>"
_INT8 = "<int8>"
_DO_LESS = "<do less work: int8>"
_EXTRAS = "<the extras the evidence asks for>"  # where _extras' texts go
_CPUS = "{cpus}"  # " (N CPUs here)" when the CPU count is known, else nothing

_INT8_TEXT = (
    "Quantise to int8 (onnxruntime.quantization.quantize_dynamic / quantize_static): "
    "weights and activations shrink 4x, and int8 dot-product kernels do 4x the "
    "multiply-accumulates per instruction."
)

#: The recommendations of each category, in the order they are shown (a text repeated
#: by an extra is shown once, where it first appears).
_RECOMMEND: dict[str, tuple[str, ...]] = {
    "retiring": (
        _EXTRAS,
        _DO_LESS,
        _OPT_ALL,
        "Use a smaller or distilled model, or a shorter input, if the accuracy "
        "budget allows: the core is already near its peak rate.",
    ),
    "ipc_collapse": (
        "Profile operators (SessionOptions.enable_profiling) and find the ones that "
        "take the time at low throughput: they are likely scalar/reference kernels; "
        "replace, fuse or quantise them.",
        _OPT_ALL,
        _INT8,
        "Batch more inputs per call so each kernel has independent rows to overlap.",
    ),
    "l1d_residency": (
        "Shrink the per-kernel working set: a smaller batch or shorter sequence "
        "keeps each tile within L1D.",
        _OPT_ALL,
        _INT8,
    ),
    "l2_llc_residency": (
        _EXTRAS,
        "Use a shorter sequence length or a smaller batch so one layer's activations fit in L2.",
        _INT8,
        _OPT_ALL,
    ),
    "tlb_churn": (
        "Back tensors with huge pages: set transparent huge pages to 'madvise' or "
        "'always' (/sys/kernel/mm/transparent_hugepage/enabled) and run with "
        "GLIBC_TUNABLES=glibc.malloc.hugetlb=1.",
        "Keep the ORT memory arena on (enable_cpu_mem_arena) so tensors come from a "
        "few large blocks instead of scattered allocations.",
        _INT8,
    ),
    "branch_misprediction": (
        _OPT_ALL,
        "Batch inputs per call: per-operator dispatch and shape checks are amortised "
        "over more rows.",
        "Keep data-dependent control flow (If/Loop, NonZero, dynamic shapes) out of "
        "the hot path; tree ensembles are branchy by nature.",
    ),
    "frontend_bound": (
        _OPT_ALL,
        "Batch more work per call so each kernel's code stays hot in L1I.",
        "Use static input shapes so ORT reuses one kernel variant per operator.",
        _EXTRAS,
    ),
    "backend_bound": (
        _EXTRAS,
        _INT8,
        f"Match intra_op_num_threads to the physical cores{_CPUS}.",
        _OPT_ALL,
    ),
    "thread_spinning": (
        _EXTRAS,
        "Pin the pool (session.intra_op_thread_affinities, or taskset/numactl) "
        "so threads do not contend for the same CPUs.",
    ),
    "page_faults": (
        _EXTRAS,
        "Preallocate outputs and bind them with IOBinding (session.io_binding(), "
        "bind_ortvalue_output) so outputs are not allocated every call.",
        "Keep glibc from handing memory back between calls (MALLOC_TRIM_THRESHOLD_, "
        "MALLOC_MMAP_THRESHOLD_) or preload a caching allocator (jemalloc, mimalloc).",
        "Warm up longer so the arena reaches its steady size before measuring.",
    ),
    "noisy_machine": (
        "Pin the process and ORT's threads to dedicated cores (taskset -c / numactl "
        "--physcpubind, session.intra_op_thread_affinities).",
        "Stop other load on the machine (or isolate CPUs) and use the 'performance' "
        "cpufreq governor.",
        "Repeat the measurement: a noisy run's counters describe the machine, not the model.",
    ),
}


# Intel TMA Contested_Accesses / False_Sharing: cache lines moving between cores.
_LINES_MOVE = (
    "Cache lines move between cores: threads write data that others read or write "
    "(a lock, a shared counter, or neighbouring elements of one line: false sharing). "
    "Give each thread its own cache-line-aligned (64-byte) block of outputs and "
    "accumulators, and use fewer threads where they share one tensor's rows."
)


# The advice a category's deeper top-down nodes (or the rates beside them) call for, in
# the order it is given: the metrics any of which, crossed, calls for it, and the advice.
# The front end's are sized by their nodes (:func:`_node_advice`) for :func:`_drill_down`.
_NODE_ADVICE: dict[str, tuple[tuple[tuple[str, ...], str], ...]] = {
    "l2_llc_residency": (
        (
            ("mem_bandwidth", "bottleneck_memory_bandwidth", "sq_full"),
            "DRAM bandwidth is the limit: each call streams the weights through it, so fewer bytes"
            " per weight help most (int8, or 4-bit MatMulNBits for LLMs), as does reusing each "
            "weight for more rows (a larger batch).",
        ),
        (
            ("mem_latency", "bottleneck_memory_latency"),
            "DRAM latency is the limit: loads the prefetchers cannot foresee (gathers, embedding "
            "lookups, scattered tensors) wait on memory one by one; keep the memory arena on and "
            "tensors contiguous (huge pages help the TLB side).",
        ),
        (
            ("l3_hit_latency",),
            "Loads wait on the L3's latency: each kernel's working set spills the L2 but fits the "
            "L3; smaller tiles (a smaller batch or sequence per call, or fewer threads sharing one"
            " tensor) keep it in the L2.",
        ),
        (
            ("contested_accesses", "data_sharing", "bottleneck_memory_sync"),
            _LINES_MOVE,
        ),
        (
            ("llc_mpki", "mem_bandwidth", "bottleneck_memory_bandwidth"),
            "LLC misses go to DRAM: try intra_op_num_threads = physical cores of one NUMA node; "
            "more threads only add bandwidth pressure.",
        ),
    ),
    "backend_bound": (
        (
            ("divider",),
            "The divider is busy: divisions and square roots (Softmax, LayerNorm / RMSNorm, Erf). "
            "Keep ORT's fused kernels (graph_optimization_level all fuses LayerNorm and GELU); in "
            "custom operators multiply by a reciprocal computed once per row.",
        ),
        (
            ("store_bound", "store_latency"),
            "Stores hold the core up (store buffer full): intermediate tensors written past the "
            "caches, or threads writing neighbouring cache lines (false sharing). Fuse operators "
            "so intermediates stay in cache; give each thread its own cache-line-aligned output "
            "block.",
        ),
        (
            ("false_sharing",),
            _LINES_MOVE,
        ),
        (
            ("4k_aliasing",),
            "Loads wait on stores 4 KiB apart (4K aliasing): buffers whose addresses differ by a "
            "multiple of 4096, such as tensors with power-of-two row strides or same-sized inputs "
            "and outputs read and written together; pad the leading dimension (by a cache line) or"
            " offset one of the buffers.",
        ),
        (
            ("split_loads",),
            "Loads cross cache lines (split loads): tensors or fields not aligned to their vector "
            "width; align buffers to 64 bytes (numpy arrays passed to ORT may not be) and keep row"
            " strides a multiple of the vector width.",
        ),
        (
            ("lock_latency",),
            "Locked instructions (atomics, mutexes) wait on their cache lines: a shared counter, a"
            " queue or an allocator lock; fewer threads, or per-thread state merged once at the "
            "end.",
        ),
        (
            ("fb_full",),
            "L1D misses wait for a free fill buffer: more misses are in flight than the core "
            "tracks, a bandwidth limit; fewer bytes per weight (int8) and tiling that keeps a "
            "block of the weights in cache help.",
        ),
        (
            ("ports_utilization",),
            "The execution ports are the limit (low ILP or one kind of unit oversubscribed): "
            "kernels that do more per uop (wider SIMD, int8 dot products) help; scalar reference "
            "kernels are the usual culprit.",
        ),
        (
            ("ports_utilized_3m",),
            "Three or more uops execute most cycles: the kernels are compute-bound at the ports, "
            "so only fewer instructions per result help: wider vectors (AVX-512, AMX, SVE), int8 "
            "dot products (VNNI, SDOT), quantisation.",
        ),
        (
            ("ports_utilized_1", "ports_utilized_2"),
            "One or two uops execute per cycle: dependency chains, or one kind of unit "
            "oversubscribed; vectorised kernels take pressure off the ports (Intel TMA: loop "
            "vectorisation), and fused operators shorten the chains.",
        ),
        (
            ("ports_utilized_0",),
            "No uop executes in many cycles: long-latency instructions (divides, square roots) or "
            "operands that are not ready; see the divider's advice.",
        ),
        (
            ("split_stores",),
            "Stores cross cache lines (split stores): align output buffers to 64 bytes and keep "
            "row strides a multiple of the vector width.",
        ),
        (
            ("streaming_stores",),
            "Streaming (non-temporal) stores hold the core up: outputs read again soon are better "
            "written with plain stores, which keep them in cache.",
        ),
        (
            ("store_fwd_blk",),
            "Loads cannot take their data from the stores before them (store forwarding blocked): "
            "a value written in narrow parts and read back whole, or read at an offset; write and "
            "read each element at the same width.",
        ),
    ),
    "frontend_bound": (
        (
            ("itlb_mpki", "l1i_tlb_mpki", "itlb_misses"),
            "ITLB misses: back the onnxruntime library text with huge pages (THP for read-only "
            "file mappings).",
        ),
        (
            ("branch_resteers", "unknown_branches", "mispredicts_resteers"),
            "The front end refetches after mispredicted or unknown branches (branch resteers): the"
            " branch advice applies, and a smaller hot code path (fewer operator kinds per call, "
            "fused graphs) leaves fewer branches unknown.",
        ),
        (
            ("dsb_switches",),
            "The decoded-uop cache misses (DSB switches): the hot loops span more code than it "
            "holds; a smaller hot path (fused graphs, fewer operator kinds per call) or a "
            "layout-optimised build (PGO, BOLT) keeps them in it.",
        ),
        (
            ("legacy_decode",),
            "The legacy decoders (MITE) feed the core, not the decoded-uop cache: the hot code "
            "does not stay in the DSB; a smaller hot path (fused graphs) or a layout-optimised "
            "build (PGO, BOLT) helps.",
        ),
        (
            ("length_changing_prefixes",),
            "The decoders stall on length-changing prefixes (16-bit immediates): rebuild the hot "
            "code with the compiler's default code generation for the target (Intel TMA: proper "
            "compiler flags avoid them).",
        ),
        (
            ("clears_resteers",),
            "The front end refetches after machine clears: memory-ordering clears (threads writing"
            " lines others read: give each thread its own cache-line-aligned block) or "
            "self-modifying code (a JIT).",
        ),
        (
            ("ms_switches",),
            "The microcode sequencer interrupts uop delivery (MS switches): instructions the "
            "decoders cannot handle, or assists such as denormal floats; set ONNX Runtime's "
            "session.set_denormal_as_zero = 1 where small weights or activations underflow.",
        ),
    ),
}


def _node_advice(category: str, evidence: tuple[Evidence, ...]) -> list[tuple[float, str]]:
    """``category``'s advice (:data:`_NODE_ADVICE`) that ``evidence`` calls for, each with
    the largest share its deeper nodes (:data:`_BELOW`) crossed at (0 where only a rate
    beside them called for it)."""
    below = {name for name, _ in _BELOW.get(category, ())}
    return [
        (max((_crossed_value(evidence, m) for m in metrics if m in below), default=0.0), text)
        for metrics, text in _NODE_ADVICE.get(category, ())
        if any(_fired(evidence, m) for m in metrics)
    ]


def _drill_down(category: str, recs: list[str], evidence: tuple[Evidence, ...]) -> list[str]:
    """``recs`` with the front end's node advice first, largest first, where its node was
    measured larger than the I-cache misses the opening advice is for: the top-down
    method follows the largest node at each level (Yasin, 'A Top-Down method for
    performance analysis and counters architecture', ISPASS 2014)."""
    if category != "frontend_bound":
        return recs
    floor = _crossed_value(evidence, "icache_misses")
    sized = _node_advice(category, evidence)
    larger = sorted(s for s in sized if s[0] > floor and s[1] in recs)
    lead = [text for _, text in reversed(larger)]
    return lead + [text for text in recs if text not in lead]


def _recommend(category: str, evidence: tuple[Evidence, ...], ctx: RuleContext) -> list[str]:
    """``category``'s recommendations (:data:`_RECOMMEND`) worded for the session at hand."""
    session = ctx.session or {}
    level = session.get("graph_optimization_level")
    not_all = level is not None and level != "all"
    cpus = f" ({ctx.cpu_count} CPUs here)" if ctx.cpu_count else ""
    worded = {
        _OPT_ALL: "Set graph_optimization_level to ORT_ENABLE_ALL"
        + (f" (it is '{level}')" if not_all else "")
        + ": operator fusion and the NCHWc layout transformer cut intermediate "
        "tensors and kernel count.",
        _INT8: _INT8_TEXT,
        _DO_LESS: "Do less work: q" + _INT8_TEXT[1:],
    }
    recs: list[str] = []
    for text in _RECOMMEND.get(category, ()):
        if text == _EXTRAS:
            recs += _extras(category, evidence, session, cpus)
        else:
            recs.append(worded[text] if text in worded else text.replace(_CPUS, cpus))
    return _drill_down(category, list(dict.fromkeys(recs)), evidence)


def _extras(
    category: str, evidence: tuple[Evidence, ...], session: Mapping[str, Any], cpus: str
) -> list[str]:
    """The recommendations of ``category`` that only some evidence or settings call for."""
    extras = [text for _, text in _node_advice(category, evidence)]
    if category == "thread_spinning":
        if _fired(evidence, "slow_pause"):
            extras.append(
                "Threads stall on PAUSE, the spin-wait hint: ONNX Runtime's pool spinning "
                "between operators (session.intra_op.allow_spinning), OpenMP or BLAS "
                "pools waiting actively (OMP_WAIT_POLICY=PASSIVE), or a spin lock; turn "
                "spinning off and count again to see the kernels' own time."
            )
        if _fired(evidence, "session.allow_spinning"):
            extras.append(
                "Set session.intra_op.allow_spinning=0 (and session.inter_op."
                "allow_spinning=0): sess_options.add_session_config_entry("
                "'session.intra_op.allow_spinning', '0')."
            )
        if _fired(evidence, "session.threads"):
            extras.append(
                f"Use at most one intra-op thread per CPU{cpus}; with several sessions "
                "or pytest-xdist workers, divide the cores between them."
            )
        if _fired(evidence, "cpu_utilisation") and not _fired(evidence, "session.allow_spinning"):
            extras.append(
                "Other threads are busy too (other sessions, OpenMP/BLAS pools): set "
                "OMP_NUM_THREADS=1 when ORT owns the threads."
            )
    elif category == "retiring" and _fired(evidence, "assists"):
        extras.append(
            "Microcode assists retire in place of work: in inference the usual cause is "
            "denormal floats (tiny activations or weights). Set "
            "sess_options.add_session_config_entry('session.set_denormal_as_zero', '1') "
            "so ORT's threads flush them to zero, or clamp the values that decay there."
        )
    elif category == "page_faults" and (
        _fired(evidence, "session.enable_mem_arena") or session.get("enable_mem_arena") is False
    ):
        extras.append(
            "Turn the CPU memory arena on (SessionOptions.enable_cpu_mem_arena = "
            "True): without it every call maps fresh pages."
        )
    return extras


def _crossed_value(evidence: tuple[Evidence, ...], metric: str) -> float:
    """The value of ``metric`` where it crossed its threshold in ``evidence``, else 0."""
    return next((e.value for e in evidence if e.metric == metric and e.crossed), 0.0)


def _weight(sig: _Signal, ctx: RuleContext) -> float:
    """A signal's weight in :func:`combine`: 1 for keys, 0.5 for supports, halved again
    (:data:`GENERIC_DISCOUNT`) where it was judged against a generic width."""
    weight = KEY_WEIGHT if sig.row.role == "key" else SUPPORT_WEIGHT
    if ctx.facts.widest is not None and sig.row.relative_to == "width":
        weight *= GENERIC_DISCOUNT
    return weight


def _explanation(category: str, crossed: list[_Signal], discounted_by: list[str]) -> str:
    parts = [_EXPLAIN.get(category, "")]
    for sig in crossed:
        ev = sig.evidence
        assert ev is not None
        parts.append(f"{ev.line()} [{sig.row.role}; {ev.source}].")
    if discounted_by:
        parts.append(
            "Confidence halved: the more specific "
            f"{', '.join(discounted_by)} also fired (top-down decision tree)."
        )
    return " ".join(p for p in parts if p)


# -- the verdict --------------------------------------------------------------------------


@dataclass
class _Judged:
    category: str
    signals: list[_Signal]
    confidence: float = 0.0
    fired: bool = False
    evaluable: bool = False
    cost: EstimatedCost | None = None  # of a count finding that fired; None: not estimated
    share: CycleShare | None = None  # the share of cycles it explains; None: not estimable
    unconfirmed: str = ""  # why crossed refill counts are not named (_unconfirmed)

    @property
    def material(self) -> bool:
        """Fired, and not shown by its estimated cost to be too small to matter."""
        return self.fired and (self.cost is None or self.cost.material)


def _judge(category: str, metrics: Mapping[str, float], ctx: RuleContext) -> _Judged:
    rows = [
        r.in_force(metrics)
        for r in THRESHOLDS
        if r.category == category and r.applies_to(ctx.facts.family)
    ]
    signals = [_signal(r, metrics, ctx) for r in rows]
    keys = [s for s in signals if s.row.role == "key"]
    # Keys of other core families say what this core would need (e.g. STALL_BACKEND).
    seen = {s.row.metric for s in keys}
    for row in THRESHOLDS:
        if (
            row.category == category
            and row.role == "key"
            and row.metric not in seen
            and row.metric not in metrics
            and not row.applies_to(ctx.facts.family)
        ):
            seen.add(row.metric)
            signals.append(_Signal(row, None, why_missing(row.metric, ctx)))
    judged = _Judged(category, signals)
    if category != "ipc_collapse":  # its share is the remainder (diagnose_in)
        judged.share = cycle_share(category, metrics, ctx)
    judged.evaluable = any(s.evidence is not None for s in keys)
    judged.fired = any(s.crossed for s in keys)
    if not judged.fired:
        # A counted cause that explains a material share of the cycles is a cause,
        # whether or not the rule-of-thumb threshold on its rate crossed.
        by_share = _share_fired(category, judged.share, metrics)
        if by_share is not None:
            row = Threshold(by_share.metric, ">", by_share.threshold, category, "key", "")
            signals.append(_Signal(row, by_share, None))
            judged.evaluable = judged.fired = True
    if judged.fired:
        judged.confidence = combine(
            (
                _weight(s, ctx),
                strength(s.evidence.value, s.evidence.threshold, s.evidence.comparison),
            )
            for s in signals
            if s.crossed and s.evidence is not None
        )
        judged.cost = _stalled_cost(category, _finding_cost(signals, metrics), metrics, ctx)
        judged.unconfirmed = _unconfirmed(signals) or _own_wakeups(category, signals, metrics)
        if judged.unconfirmed:
            judged.fired = False
    return judged


# Refill counts that can include the refills a hardware prefetcher caused: Neoverse N1's
# L2D_CACHE_REFILL counts "any cacheable transaction from L1 which causes data to be
# read from outside the core" (only stashes excluded, ARM-software/data
# pmu/neoverse-n1.json), and LL_CACHE_MISS_RD duplicates the last level's
# L*D_CACHE_REFILL_RD where the core has no external LLC (same lists); Intel's
# LONGEST_LAT_CACHE.MISS, the x86 ``cache-misses``, counts hardware prefetches with the
# demand reads. L1D_CACHE_REFILL counts load, store and walk refills only ("prefetches"
# not counted, pmu/neoverse-n1.json): the demand-side count.
_PREFETCH_COUNTED = ("l2_mpki", "llc_mpki")
# Measured evidence that the core stalled: IPC against the width, stall fractions.
_STALL_EVIDENCE = ("ipc", "backend_stalled", "backend_bound", "backend_mem_stalled")


def _unconfirmed(signals: Iterable[_Signal]) -> str:
    """Why crossed L2/LLC refill counts do not name a memory-bound run here, or "".

    A sequential or unit-stride stream that the hardware prefetcher runs ahead of
    refills L2 (and the LLC) as fast as it reads, and those refills are counted
    (:data:`_PREFETCH_COUNTED`), yet the demand loads hit and the core does not wait. So
    where every key that fired is such a count and the stall evidence that was measured
    (low IPC against the width, backend or memory stall fractions: the support rows
    on :data:`_STALL_EVIDENCE`) all stayed under its threshold, the count alone names
    nothing: the category goes to ``not_judged`` with what to count. Where no stall
    evidence was measured at all, the count keeps its rule (nothing contradicts it)."""
    signals = list(signals)
    keys = [s for s in signals if s.row.role == "key" and s.crossed]
    if not keys or any(s.row.metric not in _PREFETCH_COUNTED for s in keys):
        return ""
    stalls = [
        s
        for s in signals
        if s.row.role == "support" and s.row.metric in _STALL_EVIDENCE and s.evidence is not None
    ]
    if not stalls or any(s.crossed for s in stalls):
        return ""
    counted = ", ".join(s.evidence.line() for s in keys if s.evidence is not None)
    measured = ", ".join(
        f"{s.evidence.metric} = {_fmt(s.evidence.value)}, not "
        f"{s.evidence.comparison} {_fmt(s.evidence.threshold)}"
        for s in stalls
        if s.evidence is not None
    )
    return (
        f"{counted}, but no measured stall agrees ({measured}): L2/LLC refill counts "
        "include the refills a hardware prefetcher makes ahead of a sequential or "
        "unit-stride stream, which the core never waits on (Neoverse N1 "
        "L2D_CACHE_REFILL, x86 LONGEST_LAT_CACHE.MISS), so the count alone does not make "
        "the run memory-bound; count stall_backend (stalled-cycles-backend), "
        "STALL_BACKEND_MEM or top-down slots to judge"
    )


# Migration counts, which follow a thread's own blocking and waking as much as other load.
_MIGRATION_COUNTS = ("cpu_migrations_per_sec", "cpu_migrations_per_call")


def _own_wakeups(category: str, signals: Iterable[_Signal], metrics: Mapping[str, float]) -> str:
    """Why crossed migration counts do not name a noisy machine in a run that kept
    several CPUs busy at once, or "".

    Migrations alone cannot tell other load from the program's own threads there: a
    thread that blocks (a lock, a queue, sched_yield) and is woken is placed on an idle
    CPU, and that placement is counted as a migration
    (:data:`thresholds_by_core.SEVERAL_CPUS_BUSY`). A single-threaded run has no such
    hand-offs, so its migrations keep their rule; so does noise shown another way (the
    latency tail)."""
    if category != "noisy_machine":
        return ""
    busy = metrics.get("cpu_utilisation")
    if busy is None or not busy > SEVERAL_CPUS_BUSY:
        return ""
    keys = [s for s in signals if s.row.role == "key" and s.crossed]
    if not keys or any(s.row.metric not in _MIGRATION_COUNTS for s in keys):
        return ""
    counted = ", ".join(s.evidence.line() for s in keys if s.evidence is not None)
    return (
        f"{counted}, but the run kept {_fmt(busy)} CPUs busy on average: several of its "
        "threads ran at once, and a thread that blocks and is woken is placed on an "
        "idle CPU, which counts as a migration (try_to_wake_up, set_task_cpu: Linux "
        "kernel/sched/core.c), so the migrations are the program's own hand-offs as "
        "much as other load; pin the threads (taskset, OMP_PROC_BIND) or compare with "
        "the machine idle to judge"
    )


def diagnose(
    metrics: Mapping[str, float],
    *,
    core: str,
    unavailable: Mapping[str, str] | None = None,
    session: Mapping[str, Any] | None = None,
    cpu_count: int | None = None,
    baseline_metrics: Mapping[str, float] | None = None,
    extra_findings: Iterable[Finding] = (),
) -> Diagnosis:
    """Judge ``metrics`` (as :func:`core.metrics.compute` returns them) for ``core``.

    ``unavailable`` maps logical events to why they were not counted; ``session`` is the
    ONNX Runtime session description (``onnxrt.sessions.describe_session``); ``cpu_count`` the CPUs
    the run could use; ``baseline_metrics`` the same metrics of a baseline run, to explain
    a change; ``extra_findings`` are merged in (``pytest_inferperf_rules`` hook results).
    """
    ctx = RuleContext.of(core, unavailable=unavailable, session=session, cpu_count=cpu_count)
    return diagnose_in(
        ctx, metrics, baseline_metrics=baseline_metrics, extra_findings=extra_findings
    )


def diagnose_in(
    ctx: RuleContext,
    metrics: Mapping[str, float],
    *,
    baseline_metrics: Mapping[str, float] | None = None,
    extra_findings: Iterable[Finding] = (),
) -> Diagnosis:
    """:func:`diagnose` for a context already built (the one the rules hook was given)."""
    judged = {c: _judge(c, metrics, ctx) for c in CATEGORIES if c != "extra_work"}
    findings: list[Finding] = []
    small: list[Finding] = []
    not_judged: dict[str, str] = {}
    _defer_ipc_collapse(judged, metrics, ctx)
    ipc_gate = _ipc_collapse_gate(judged, metrics, ctx)
    if ipc_gate is not None:
        judged["ipc_collapse"].fired = False
        if ipc_gate:
            not_judged["ipc_collapse"] = ipc_gate
    for category, j in judged.items():
        if category in not_judged:
            continue
        if j.unconfirmed:
            not_judged[category] = j.unconfirmed
            continue
        if not j.evaluable:
            reasons = [s.missing for s in j.signals if s.row.role == "key" and s.missing]
            not_judged[category] = "; ".join(dict.fromkeys(reasons)) or (
                f"no threshold on record for {ctx.facts.name} ({ctx.facts.family})"
            )
            continue
        if not j.fired:
            continue
        children = _material_children(category, judged)
        if j.share is not None and j.share.metric in _BACKEND_PARTS:
            children = []  # the core part is not the memory children's parent
        confidence = j.confidence * (CHILD_DISCOUNT if children else 1.0)
        # each crossed signal with its evidence (never None there), key signals first,
        # then the strongest
        pairs = sorted(
            ((s, s.evidence) for s in j.signals if s.crossed and s.evidence is not None),
            key=lambda pair: (
                pair[0].row.role != "key",
                -strength(pair[1].value, pair[1].threshold, pair[1].comparison),
                pair[0].row.metric,
            ),
        )
        crossed = [s for s, _ in pairs]
        evidence = tuple(e for _, e in pairs)
        explanation = (
            _explanation(category, crossed, children)
            + _backend_note(category, j.share, metrics)
            + _below_note(category, metrics)
        )
        if j.cost is not None:
            small_note = "" if j.cost.material else "present but small, "
            explanation += f" Estimated cost: {small_note}{j.cost.text} [{j.cost.source}]."
        share = j.share
        if category == "ipc_collapse":
            share = _remainder(judged, metrics, ctx)
            if share is not None:
                explanation += f" {_counted_text(metrics)}"
        if share is not None:
            explanation += f" Estimated share: {share.text} [{share.source}]."
        (findings if j.material else small).append(
            Finding(
                category=category,
                title=CATEGORIES[category],
                confidence=round(confidence, 3),
                evidence=evidence,
                recommendations=tuple(_recommend(category, evidence, ctx)),
                explanation=explanation,
                cost=j.cost,
                share=share,
            )
        )
    if not any(f.share is not None and f.share.material for f in findings):
        ilp = _ilp_limited(judged, metrics, ctx, findings, not_judged)
        if ilp is not None:
            findings.append(ilp)
        inferred = _backend_inferred(judged, metrics, ctx, findings, ipc_gate)
        if inferred is not None:
            findings.append(inferred)
            not_judged.pop("backend_bound", None)
    findings.extend(extra_findings)
    findings = rank(findings)
    change = None
    if baseline_metrics is not None:
        change = explain_change(metrics, baseline_metrics)
    return Diagnosis(
        primary=findings[0] if findings else None,
        secondary=tuple(findings[1:]),
        not_judged=not_judged,
        change=change,
        core=ctx.core,
        notes=_notes(ctx) + _ratio_only_note(judged, metrics) + _kernel_time_note(metrics),
        small=tuple(sorted(small, key=lambda f: (-(f.cost.share if f.cost else 0.0), f.category))),
    )


def _backend_note(category: str, share: CycleShare | None, metrics: Mapping[str, float]) -> str:
    """What a backend or memory finding's explanation adds about the backend's split:
    how top-down level 2 split it where that is the share, and which counts would
    locate it further where they are missing; "" otherwise."""
    refills = any(m in metrics for m in _CACHE_MPKI)
    if share is not None and share.metric in _BACKEND_PARTS:
        note = f" {_level2_split(metrics)}"
        if category != "backend_bound" and not refills:
            note += (
                " Which level served the loads was not counted: count L1D, L2 and "
                "LL refills (or perf stat -M TopdownL3 where the core has it)."
            )
        return note
    if category == "backend_bound" and not refills:
        return (
            " No cache refills were counted: waiting on memory and busy "
            "execution units both look like this; count L1D/L2/LL refills "
            "to tell them apart."
        )
    return ""


# What level 3 (and below) of the top-down tree says about a finding's part, where it
# was measured (Intel TMA nodes, Linux perf x86 metrics): shares of the cycles, but
# retiring's Heavy_Operations with their Microcode_Sequencer and Assists, shares of the
# slots.
_BELOW = {
    "l2_llc_residency": (
        ("contested_accesses", "contested accesses"),
        ("data_sharing", "data sharing"),
        ("mem_bandwidth", "DRAM bandwidth"),
        ("mem_latency", "DRAM latency"),
        ("l3_hit_latency", "L3 hit latency"),
        ("sq_full", "super queue full"),
    ),
    "frontend_bound": (
        ("icache_misses", "I-cache misses"),
        ("itlb_misses", "ITLB misses"),
        ("branch_resteers", "branch resteers"),
        ("unknown_branches", "unknown branches"),
        ("dsb_switches", "DSB switches"),
        ("ms_switches", "MS switches"),
        ("legacy_decode", "legacy decode (MITE, slots)"),
        ("uop_cache_fetch", "uop-cache fetch (DSB, slots)"),
        ("length_changing_prefixes", "length-changing prefixes"),
        ("mispredicts_resteers", "mispredict resteers"),
        ("clears_resteers", "clear resteers"),
    ),
    "backend_bound": (
        ("divider", "divider busy"),
        ("ports_utilization", "ports utilisation"),
        ("false_sharing", "false sharing"),
        ("4k_aliasing", "4K aliasing"),
        ("lock_latency", "lock latency"),
        ("split_loads", "split loads"),
        ("fb_full", "fill buffers full"),
        ("store_latency", "store latency"),
        ("store_fwd_blk", "store forwarding blocked"),
        ("ports_utilized_0", "no port busy"),
        ("ports_utilized_1", "1 port busy"),
        ("ports_utilized_2", "2 ports busy"),
        ("ports_utilized_3m", "3+ ports busy"),
        ("split_stores", "split stores"),
        ("streaming_stores", "streaming stores"),
    ),
    "retiring": (
        ("heavy_operations", "heavy operations"),
        ("microcode_sequencer", "microcode sequencer"),
        ("assists", "assists"),
    ),
}


def _below_note(category: str, metrics: Mapping[str, float]) -> str:
    """The deeper top-down nodes measured under ``category`` (:data:`_BELOW`), or ""."""
    parts = [
        f"{label} {_percent(value)}"
        for name, label in _BELOW.get(category, ())
        if (value := _value(metrics, name)) is not None
    ]
    if not parts:
        return ""
    of = {
        "l2_llc_residency": "the L3 and DRAM (cycles)",
        "frontend_bound": "the front end (cycles; MITE and DSB: issue slots)",
        "backend_bound": "the backend (cycles)",
    }.get(category, "the retired slots")
    return f" Deeper top-down nodes under {of}: {', '.join(parts)} (Intel TMA)."


def _level2_split(metrics: Mapping[str, float]) -> str:
    """How top-down level 2 split the backend's slots, for a backend or memory finding."""
    core, memory = _value(metrics, "core_bound"), _value(metrics, "memory_bound")
    backend = _value(metrics, "backend_bound")
    whole = "the backend's share" if backend is None else f"the backend's {_percent(backend)}"
    parts = ", ".join(
        f"{name} {_percent(value)}"
        for name, value in (("core-bound", core), ("memory-bound", memory))
        if value is not None
    )
    return (
        f"Top-down level 2 splits {whole} of the slots: {parts} (Backend Bound = Memory "
        "Bound + Core Bound; Yasin, ISPASS 2014)."
    )


def _children(category: str, share_metric: Mapping[str, str]) -> list[str]:
    """The children of ``category`` in the top-down tree (:data:`CHILDREN`) that are its
    parts here: of those :data:`CHILD_ONLY_BY` names, only one whose share is that
    measured fraction (``share_metric``: each category's share metric)."""
    return [
        c
        for c in CHILDREN.get(category, ())
        if c not in CHILD_ONLY_BY or share_metric.get(c) == CHILD_ONLY_BY[c]
    ]


def _material_children(category: str, judged: Mapping[str, _Judged]) -> list[str]:
    """The children of ``category`` that fired here with a share that matters: a child
    too small to matter explains nothing about its parent."""
    share_metric = {c: j.share.metric for c, j in judged.items() if j.share is not None}
    return [c for c in _children(category, share_metric) if c in judged and judged[c].material]


def rank(findings: Iterable[Finding]) -> list[Finding]:
    """The findings, the largest share of cycles first.

    Three groups: findings that explain a material share of the cycles
    (:data:`change.MATERIAL_SHARE`), largest first; then those with no share (a ratio,
    a setting, an OS count, a hook's finding), most confident first; then those whose
    share is below material, largest first. A parent of the top-down tree
    (:data:`thresholds_by_core.CHILDREN`) whose share is a measured fraction (backend stalls,
    top-down slots) and whose child explains a material share ranks by that child's
    share and right after it: the child's cycles are part of the parent's, and the
    child is the more specific cause. IPC collapse is every cause's parent: its
    share is the remainder no counted cause explains, which is no evidence of its own,
    so a counted cause with a material share always ranks above it. Ties go to the
    more confident finding."""
    findings = list(findings)
    shares = {f.category: f.share.share for f in findings if f.share is not None}
    share_of = {f.category: f.share.metric for f in findings if f.share is not None}
    ranked_by: dict[str, float] = {}
    fractions = {n for names in _FRACTION_METRICS.values() for n in names} | {"ipc"}
    for f in findings:
        # Only a measured fraction (or the remainder) contains its children's cycles; a
        # share counted from the parent's own events (L1I refills) does not.
        if f.share is None or f.share.metric not in fractions:
            continue
        # A level-2 or level-3 share (the backend's core part, the L2's part of memory)
        # holds none of its children: they are the other parts.
        if f.share.metric.split(",")[0] in _LEAF_SHARES:
            continue
        # Two level-1 fractions are disjoint: the four level-1 categories partition the
        # issue slots (Yasin, 'A Top-Down method for performance analysis and counters
        # architecture', ISPASS 2014; Arm's Neoverse telemetry specifications use the
        # same four), so a child measured by another level-1 fraction, or by a part of
        # one (branch misprediction by bad_speculation or its mispredicted branches),
        # is not part of its parent's slots.
        children = [
            shares[c]
            for c in _children(f.category, share_of)
            if shares.get(c, 0.0) >= MATERIAL_SHARE
            and not (
                _level1_of(share_of.get(c)) is not None
                and _level1_of(f.share.metric) not in (None, _level1_of(share_of.get(c)))
            )
        ]
        if children:
            ranked_by[f.category] = min(f.share.share, max(children))

    def key(f: Finding) -> tuple[int, float, bool, float, str]:
        share = ranked_by.get(f.category, shares.get(f.category))
        if share is None:
            return (1, 0.0, False, -f.confidence, f.category)
        group = 0 if share >= MATERIAL_SHARE else 2
        return (group, -share, f.category in ranked_by, -f.confidence, f.category)

    return sorted(findings, key=key)


def _near_width() -> float:
    """The fraction of the width at which IPC is "near the width" (the retiring row)."""
    return next(
        r.value
        for r in THRESHOLDS
        if r.category == "retiring" and r.metric == "ipc" and r.relative_to == "width"
    )


def _remainder(
    judged: Mapping[str, _Judged], metrics: Mapping[str, float], ctx: RuleContext
) -> CycleShare | None:
    """The issue slots an IPC below the width leaves unused (1 - IPC / width), less the
    shares the specific counted causes explain (:data:`_SPECIFIC_CAUSES`): what is left
    for ILP-limited compute. None without IPC or a width."""
    ipc, width = _value(metrics, "ipc"), ctx.facts.width
    if ipc is None or not width:
        return None
    lost = max(0.0, 1.0 - ipc / width)
    explained = {
        c: judged[c].share.share  # type: ignore[union-attr]
        for c in _SPECIFIC_CAUSES
        if c in judged and judged[c].share is not None
    }
    total = min(sum(explained.values()), 1.0)
    less = (
        ", ".join(f"{c} {_percent(v)}" for c, v in explained.items())
        if explained
        else "none counted"
    )
    return CycleShare(
        max(0.0, lost - total),
        f"1 - IPC {fmt(ipc)} / width {fmt(width)} = {_percent(lost)} of issue slots "
        f"unused, less {_percent(total)} explained by counted causes ({less})",
        f"width: {ctx.facts.width_source}",
        "ipc",
    )


def _counted_text(metrics: Mapping[str, float]) -> str:
    """Which counted causes were weighed against the remainder, and which were not
    counted (so the reader knows what the ILP verdict rests on)."""
    counted = [m for c in _SPECIFIC_CAUSES for m, _ in _COUNTS.get(c, ()) if m in metrics]
    counted += [m for c in _SPECIFIC_CAUSES for m in _FRACTION_METRICS.get(c, ()) if m in metrics]
    missing = [m for c in _SPECIFIC_CAUSES for m, _ in _COUNTS.get(c, ()) if m not in metrics]
    text = f"Weighed: {', '.join(dict.fromkeys(counted)) or 'nothing'}"
    if missing:
        text += f"; not counted: {', '.join(dict.fromkeys(missing))}"
    return text + "."


def _ilp_limited(
    judged: Mapping[str, _Judged],
    metrics: Mapping[str, float],
    ctx: RuleContext,
    findings: list[Finding],
    not_judged: dict[str, str],
) -> Finding | None:
    """IPC below "near the width" with no cause explaining a material share: the
    remainder is ILP-limited compute (``ipc_collapse``), when memory was measured and
    is fine (:func:`_memory_gate`); else the reason goes to ``not_judged``. None when
    the threshold rule already named it, IPC is near the width, or the remainder is
    not material either."""
    if any(f.category == "ipc_collapse" for f in findings) or "ipc_collapse" in not_judged:
        return None
    ipc, width = _value(metrics, "ipc"), ctx.facts.width
    if ipc is None or not width:
        return None
    limit = _near_width() * width
    if ipc >= limit:
        return None
    share = _remainder(judged, metrics, ctx)
    if share is None or not share.material:
        return None
    evidence = Evidence(
        "ipc",
        ipc,
        limit,
        "<",
        f"{JUDGEMENT}: below {fmt(_near_width())} x the width, where the retiring "
        f"row calls IPC near it, and no counted cause explains "
        f"{MATERIAL_SHARE:.0%} of the cycles (width {fmt(width)}: {ctx.facts.width_source})",
    )
    gate = _memory_gate(judged, metrics, f"IPC {evidence.line()}")
    if gate is None:
        gate = _spin_gate(metrics, ctx, f"IPC {evidence.line()}")
    if gate is not None:
        if gate:
            not_judged["ipc_collapse"] = gate
        return None
    confidence = combine([(KEY_WEIGHT, strength(ipc, limit, "<"))])
    if ctx.facts.widest is not None:
        confidence *= GENERIC_DISCOUNT
        evidence = Evidence(
            evidence.metric,
            evidence.value,
            evidence.threshold,
            evidence.comparison,
            f"{evidence.source}; {GENERIC_TEXT}",
        )
    explanation = (
        f"{_EXPLAIN['ipc_collapse']} {evidence.line()} [key; {evidence.source}]. "
        f"{_counted_text(metrics)} Estimated share: {share.text} [{share.source}]."
    )
    return Finding(
        category="ipc_collapse",
        title=CATEGORIES["ipc_collapse"],
        confidence=round(confidence, 3),
        evidence=(evidence,),
        recommendations=tuple(_recommend("ipc_collapse", (evidence,), ctx)),
        explanation=explanation,
        share=share,
    )


def _not_ruled_out(metrics: Mapping[str, float]) -> str:
    """Which other level-1 causes a backend verdict inferred from IPC leaves open."""
    front = any(m in metrics for m in ("frontend_stalled", "frontend_bound", "l1i_mpki"))
    branch = any(m in metrics for m in ("branch_mpki", "bad_speculation"))
    if front and branch:
        return "Front-end and branch counts were taken and explain little."
    if branch:
        return (
            "Mispredicted branches were counted and explain little; front-end stalls "
            "were not counted, so this is inferred, not measured."
        )
    if front:
        return (
            "Front-end counts were taken and explain little; mispredicted branches were "
            "not counted, so this is inferred, not measured."
        )
    return (
        "Front-end stalls and mispredicted branches were not counted either, so this is "
        "inferred, not measured."
    )


# A backend verdict that rests on IPC alone is weaker than a measured one: its confidence
# is halved (engineering judgement, as GENERIC_DISCOUNT), and the title says it.
INFERRED_DISCOUNT = 0.5
INFERRED_TITLE = "backend bound, inferred from IPC alone (memory or a dependency chain)"
SPIN_INFERRED_TITLE = (
    "backend bound, core-bound, inferred from IPC (a dependency chain or spin-waiting)"
)


def _backend_inferred(
    judged: Mapping[str, _Judged],
    metrics: Mapping[str, float],
    ctx: RuleContext,
    findings: list[Finding],
    ipc_gate: str | None,
) -> Finding | None:
    """IPC under a quarter of the width (the IPC-collapse row crossed) that nothing
    counted explains and nothing counted locates: ``backend_bound``, inferred.

    The IPC-collapse rule cannot name ILP-limited compute there, because a wait on
    memory reads the same in these counts (:func:`_memory_gate`). But the two readings
    are the two halves of one level-1 category: Backend Bound is Memory Bound plus Core
    Bound, a dependency chain's latency being core-bound (Yasin, 'A Top-Down method for
    performance analysis and counters architecture', ISPASS 2014), and a core this far
    below its width is most likely stalled in the backend (Brendan Gregg, 'CPU
    Utilization is Wrong', 2017: "If your IPC is < 1.0, you are likely memory
    stalled"). So the parent is named, at half the confidence and titled as inferred,
    with the counts that would confirm it and split it. Not where the backend stall or
    top-down backend share was measured (it speaks for itself), nor where a counted
    cause that matters fired, nor for an IPC only below 0.75 x the width.

    Where memory was measured and explains little but threads may have spin-waited
    (:func:`_spin_gate`), the two readings left, a dependency chain and a spin that
    pauses, are both Core Bound: Intel's TMA counts the cycles stalled on PAUSE under
    Core_Bound, Serializing_Operation (tma_slow_pause, e.g. ``140 *
    MISC_RETIRED.PAUSE_INST / CLKS`` on Ice Lake: Linux perf x86 metrics). So the
    backend is named the same way, titled core-bound (:data:`SPIN_INFERRED_TITLE`)."""
    spin = SPIN_NOT_RULED_OUT in (ipc_gate or "")
    if not ipc_gate or (LOW_IPC_ALONE not in ipc_gate and not spin):
        return None  # IPC collapse was not crossed, or memory was measured and is fine
    backend = judged.get("backend_bound")
    if backend is None or backend.evaluable or backend.fired:
        return None  # measured: the stall fraction judges the backend, not IPC
    if findings:
        return None  # a counted cause that matters (page faults, spinning) is named instead
    if any(judged[c].material for c in ("frontend_bound", "branch_misprediction") if c in judged):
        return None  # a counted front-end or speculation cause that matters: not only the backend
    j = judged["ipc_collapse"]
    ipc = next((s.evidence for s in j.signals if s.crossed and s.evidence), None)
    share = _remainder(judged, metrics, ctx)
    if ipc is None or share is None or not share.material:
        return None
    evidence = Evidence(
        ipc.metric,
        ipc.value,
        ipc.threshold,
        ipc.comparison,
        f"{ipc.source}; inferred: Yasin, ISPASS 2014 (Backend Bound = Memory Bound + "
        "Core Bound); "
        + (
            "Intel TMA, tma_slow_pause under tma_serializing_operation, Core_Bound "
            "(Linux perf x86 metrics)"
            if spin
            else "Gregg, 'CPU Utilization is Wrong', 2017 (IPC < 1.0, likely memory stalled)"
        ),
    )
    confidence = j.confidence * INFERRED_DISCOUNT
    if spin:
        explanation = (
            f"IPC {ipc.line()}: {share.text}. Memory was counted and explains little, so "
            "the core waits on itself: on a dependency chain's latency (long-latency "
            "operations in series) or, with several CPUs busy, in threads that "
            f"spin-wait and pause in every spin ({SPIN_PAUSES}). Both are core-bound, "
            "Intel's top-down method counting PAUSE stalls under Core_Bound "
            "(tma_slow_pause), and these counts cannot tell which. "
            f"{_counted_text(metrics)}"
        )
    else:
        explanation = (
            f"IPC {ipc.line()}: {share.text}, and nothing counted says where the slots "
            "go. A core this far below its width is most likely waiting in the backend, "
            "on memory (cache or TLB misses) or on a dependency chain's latency "
            "(long-latency operations in series): both are backend bound, and these "
            f"counts cannot tell which. {_not_ruled_out(metrics)} "
            f"{_counted_text(metrics)}"
        )
    first = (
        "Tell the two apart: measure with spinning off (ONNX Runtime: "
        "session.intra_op.allow_spinning = 0), or say that it was (inferperf explain "
        "--spinning off); what stays is the kernels' dependency chains."
        if spin
        else "Count what confirms and splits it: stall_backend and stall_frontend "
        "(stalled-cycles-backend/-frontend), L1D/L2/LLC refills, or top-down slots "
        "(perf stat -M TopdownL1 where the core has them); memory stalls point to "
        "the working set, a dependency chain to the kernels."
    )
    return Finding(
        category="backend_bound",
        title=SPIN_INFERRED_TITLE if spin else INFERRED_TITLE,
        confidence=round(confidence, 3),
        evidence=(evidence,),
        recommendations=(first, *_recommend("backend_bound", (evidence,), ctx)),
        explanation=explanation,
        share=share,
    )


def _defer_ipc_collapse(
    judged: Mapping[str, _Judged], metrics: Mapping[str, float], ctx: RuleContext
) -> None:
    """IPC collapse is a symptom: where its threshold crossed but the counted causes
    explain the issue slots IPC leaves unused (no material remainder, :func:`_remainder`),
    the low IPC is theirs, not ILP-limited compute, and the counted cause with the
    largest material share is named (fired by its share) in its place.

    Sources: the top-down method treats low IPC as the symptom and names the category
    that takes the slots (Yasin, 'A Top-Down method for performance analysis and
    counters architecture', ISPASS 2014; the AWS Graviton perfrunbook's top-down
    checklist: IPC says *that* there is a problem, the stall and miss counts say where);
    Brendan Gregg, 'CPU Utilization is Wrong' (brendangregg.com, 2017): "If your IPC is
    < 1.0, you are likely memory stalled". The share is capped by the unused slots
    (:func:`_stall_cap`), so it never claims more than the low IPC shows."""
    j = judged.get("ipc_collapse")
    if j is None or not j.fired:
        return
    if any(judged[c].material for c in _SPECIFIC_CAUSES if c in judged):
        return  # a counted cause already fired: the memory gate drops IPC collapse
    remainder = _remainder(judged, metrics, ctx)
    if remainder is None or remainder.material:
        return
    shares = [
        (judged[c].share, c)
        for c in _SPECIFIC_CAUSES
        if c in judged and judged[c].share is not None and judged[c].share.material  # type: ignore[union-attr]
    ]
    if not shares:
        return
    share, category = max(shares, key=lambda pair: pair[0].share)  # type: ignore[union-attr]
    assert share is not None
    ipc = next((s.evidence for s in j.signals if s.crossed and s.evidence), None)
    evidence = Evidence(
        share.metric.split(",")[0],
        share.share,
        MATERIAL_SHARE,
        ">",
        f"IPC collapse is the symptom ({ipc.line() if ipc else 'low IPC'}) and this cause "
        f"explains the unused issue slots: {share.text}; remainder {remainder.text} "
        "(top-down: low IPC says that, the counts say where; Gregg, 'CPU Utilization "
        "is Wrong': IPC < 1.0, likely memory stalled)",
    )
    target = judged[category]
    row = Threshold(evidence.metric, ">", MATERIAL_SHARE, category, "key", "")
    target.signals.append(_Signal(row, evidence, None))
    target.evaluable = target.fired = True
    target.unconfirmed = ""
    target.confidence = combine(
        (
            _weight(s, ctx),
            strength(s.evidence.value, s.evidence.threshold, s.evidence.comparison),
        )
        for s in target.signals
        if s.crossed and s.evidence is not None
    )


def _ipc_collapse_gate(
    judged: Mapping[str, _Judged], metrics: Mapping[str, float], ctx: RuleContext
) -> str | None:
    """Why IPC collapse may not be named here: None when it may, "" when a memory or
    backend category explains the low IPC, else the not-judged reason."""
    j = judged.get("ipc_collapse")
    if j is None or not j.fired:
        return None
    ipc = next((s.evidence for s in j.signals if s.crossed and s.evidence), None)
    low = f"IPC {ipc.line()}" if ipc else "low IPC"
    gate = _memory_gate(judged, metrics, low)
    return _spin_gate(metrics, ctx, low) if gate is None else gate


def _spin_gate(metrics: Mapping[str, float], ctx: RuleContext, low: str) -> str | None:
    """Why an IPC below the width (``low`` says how) may not be called ILP-limited
    compute in a run that kept several CPUs busy: None when it may.

    Threads that spin-wait retire few instructions per cycle with nothing missed, as a
    dependency chain does, where their loop pauses (:data:`SPIN_PAUSES`: on x86, not on
    Arm, whose spinning threads retire at speed); ONNX Runtime's pool spins between
    parallel sections by default. With several CPUs busy (:data:`SEVERAL_CPUS_BUSY`)
    and spinning not known to be off, the two cannot be told apart from the counts."""
    if ctx.facts.family.startswith("arm"):
        return None
    busy = metrics.get("cpu_utilisation")
    if busy is None or not busy > SEVERAL_CPUS_BUSY:
        return None
    if _session_value("session.allow_spinning", ctx) == 0.0:
        return None
    pause = metrics.get("slow_pause")
    if pause is not None and pause <= SLOW_PAUSE_MATERIAL:
        return None  # the cycles stalled on PAUSE were counted and are few
    return (
        f"{low}, but the run kept {_fmt(busy)} CPUs busy on average, and threads that "
        "spin-wait retire few instructions per cycle with nothing missed, as a "
        f"dependency chain does: {SPIN_NOT_RULED_OUT} ({SPIN_PAUSES}); to judge, "
        "measure with spinning off (ONNX Runtime: session.intra_op.allow_spinning = 0) "
        "or say that it was (inferperf explain --spinning off)"
    )


def _memory_gate(
    judged: Mapping[str, _Judged], metrics: Mapping[str, float], low: str
) -> str | None:
    """Whether an IPC below the width (``low`` says how) may be called ILP-limited
    compute: None when it may, "" when a memory or backend category explains it, else
    why it cannot be judged (nothing counted that bounds what memory costs)."""
    if any(judged[c].material for c in MEMORY_CATEGORIES if c in judged):
        return ""  # the memory/backend finding is the explanation
    if any(m in metrics for m in MEMORY_EVIDENCE):
        return None  # memory was measured and is fine: ILP-limited compute
    l1d, rate = metrics.get("l1d_mpki"), metrics.get("ipc")
    if l1d is not None and rate:
        cost = _dram_miss().cost
        share = l1d * cost * rate / 1000.0  # worst-case refill cycles / cycles
        if share < L1_ONLY_EXONERATES_BELOW:
            return None  # even at DRAM latency the L1D refills cannot explain it
        return (
            f"{low}, and the only memory count is L1D refills: {l1d:.3g} MPKI; "
            f"were each a {cost:.0f}-cycle miss to DRAM or to another core's cache, "
            f"they would take {min(share, 1.0):.0%} of the cycles, so memory stalls "
            f"are not ruled out ({LOW_IPC_ALONE}): count stall_backend "
            "(stalled-cycles-backend), L2/LLC refills or top-down slots too"
        )
    return (
        f"{low}, but nothing was counted that tells memory stalls from ILP-limited "
        f"compute ({LOW_IPC_ALONE}): count stall_backend "
        "(stalled-cycles-backend), L1D/L2/LLC refills or top-down slots too"
    )


# Words every reason that keeps IPC collapse from being named (memory not ruled out)
# carries: report.diagnosis tells that case from "nothing crossed" by them.
LOW_IPC_ALONE = "low IPC alone is not enough"
# The share of the cycles stalled on PAUSE at which Intel's TMA flags Slow_Pause (the
# slow_pause row of THRESHOLDS): below it, counted, spin-waiting is ruled out
# (:func:`_spin_gate`).
SLOW_PAUSE_MATERIAL = next(r.value for r in THRESHOLDS if r.metric == "slow_pause")
# ... and the words of the reason that keeps it from being named where threads may have
# spin-waited (:func:`_spin_gate`).
SPIN_NOT_RULED_OUT = "spin-waiting not ruled out"


def _ratio_only_note(
    judged: Mapping[str, _Judged], metrics: Mapping[str, float]
) -> tuple[str, ...]:
    """What a run without an instruction count was judged on, and what it was not.

    With no instructions there is no IPC and no rate per 1000 instructions, but a miss
    ratio per access and a stall share of cycles are still measured and judged on their
    own thresholds (``Threshold.key_without``): the note names them, so "nothing
    crossed" is never read as "nothing could be judged". Not where the output has the
    level-1 top-down fractions, which account for every issue slot without IPC."""
    if "ipc" in metrics or any(m.endswith("_mpki") or m in _LEVEL1 for m in metrics):
        return ()  # level-1 top-down fractions split every slot: nothing is left out
    judged_on = dict.fromkeys(
        s.row.metric
        for j in judged.values()
        for s in j.signals
        if s.evidence is not None
        and not s.row.metric.startswith("session.")
        and s.row.metric in METRICS
        and METRICS[s.row.metric].inputs
        and not set(METRICS[s.row.metric].inputs) <= _SOFTWARE_EVENTS
    )
    if not judged_on:
        return ()
    return (
        "no instructions counted: judged on ratios per access and shares of cycles only "
        f"({', '.join(judged_on)}); the rules on MPKI and IPC (caches and TLBs per 1000 "
        "instructions, IPC against the width) were not judged",
    )


_SOFTWARE_EVENTS = frozenset(n for n, spec in CATALOGUE.items() if spec.is_software)

# More of the CPU time in the kernel than in the program: what the counters of user code
# say is then the lesser part of the story (engineering judgement: half of the time).
KERNEL_TIME_NOTED = 0.5


def _kernel_time_note(metrics: Mapping[str, float]) -> tuple[str, ...]:
    """A note where most of the CPU time was the kernel's (perf's footer): page faults
    and page-table work, system calls, or locks in the kernel, which the hardware
    counters of the program attribute to no cause of their own."""
    share = _value(metrics, "kernel_share")
    if share is None or share <= KERNEL_TIME_NOTED:
        return ()
    return (
        f"{_percent(share)} of the CPU time was spent in the kernel (perf's footer: sys / "
        "(user + sys)): page faults and page-table work, system calls or kernel locks; "
        "the counts above describe the rest. perf trace -s or perf record -g shows which",
    )


def _notes(ctx: RuleContext) -> tuple[str, ...]:
    if ctx.facts.family != "unknown":
        return ()
    facts = ctx.facts
    widths = (
        f"IPC judged against every such core's width ({_fmt(facts.width or 0.0)} to "
        f"{_fmt(facts.widest or 0.0)}: below a quarter of the narrowest, above three "
        "quarters of the widest), at half the confidence"
    )
    if not ctx.core or ctx.core in ISA_GENERIC:
        which = f"{ISA_GENERIC[ctx.core]} names in the file" if ctx.core else "no instruction set"
        return (
            f"no core named ({which}): judged with the generic rules (every threshold "
            f"whose metric was counted; {widths}); pass --cpu",
        )
    return (
        f"core '{ctx.core}' is not on record: judged with the generic rules (every "
        f"threshold whose metric was counted; {widths})",
    )


# -- rendering --------------------------------------------------------------------------


def _finding_as_dict(finding: Finding) -> dict[str, Any]:
    return {
        "category": finding.category,
        "title": finding.title,
        "confidence": finding.confidence,
        "evidence": [
            {
                "metric": e.metric,
                "value": e.value,
                "threshold": e.threshold,
                "comparison": e.comparison,
                "crossed": e.crossed,
                "source": e.source,
            }
            for e in finding.evidence
        ],
        "recommendations": list(finding.recommendations),
        "explanation": finding.explanation,
        "cost": None
        if finding.cost is None
        else {
            "metric": finding.cost.metric,
            "share": finding.cost.share,
            "formula": finding.cost.formula,
            "source": finding.cost.source,
        },
        "share": None
        if finding.share is None
        else {
            "metric": finding.share.metric,
            "share": finding.share.share,
            "formula": finding.share.formula,
            "text": finding.share.text,
            "source": finding.share.source,
        },
    }


def diagnosis_as_dict(diagnosis: Diagnosis) -> dict[str, Any]:
    """The diagnosis as plain data (``inferperf explain --json``)."""
    out: dict[str, Any] = {
        "core": diagnosis.core,
        "primary": None if diagnosis.primary is None else _finding_as_dict(diagnosis.primary),
        "secondary": [_finding_as_dict(f) for f in diagnosis.secondary],
        "not_judged": dict(diagnosis.not_judged),
        "notes": list(diagnosis.notes),
        "small": [_finding_as_dict(f) for f in diagnosis.small],
    }
    if diagnosis.change is not None:
        out["change"] = {"summary": diagnosis.change.summary}
    return out


def diagnosis_from_dict(data: Mapping[str, Any]) -> Diagnosis:
    """The Diagnosis back from :func:`diagnosis_as_dict` (the change is not carried).

    A diagnosis written before costs or shares were estimated (no ``cost``, ``share``
    or ``small``) loads with none."""

    def cost(row: Mapping[str, Any] | None) -> EstimatedCost | None:
        if not row:
            return None
        return EstimatedCost(
            str(row["metric"]),
            float(row["share"]),
            str(row.get("formula") or ""),
            str(row.get("source") or ""),
        )

    def share(row: Mapping[str, Any] | None) -> CycleShare | None:
        if not row:
            return None
        return CycleShare(
            float(row["share"]),
            str(row.get("formula") or ""),
            str(row.get("source") or ""),
            str(row.get("metric") or ""),
        )

    def finding(row: Mapping[str, Any]) -> Finding:
        return Finding(
            category=str(row["category"]),
            title=str(row["title"]),
            confidence=float(row["confidence"]),
            evidence=tuple(
                Evidence(
                    e["metric"],
                    float(e["value"]),
                    float(e["threshold"]),
                    e["comparison"],
                    e["source"],
                )
                for e in row.get("evidence") or ()
            ),
            recommendations=tuple(row.get("recommendations") or ()),
            explanation=str(row.get("explanation") or ""),
            cost=cost(row.get("cost")),
            share=share(row.get("share")),
        )

    primary = data.get("primary")
    return Diagnosis(
        primary=None if primary is None else finding(primary),
        secondary=tuple(finding(f) for f in data.get("secondary") or ()),
        not_judged=dict(data.get("not_judged") or {}),
        core=str(data.get("core") or ""),
        notes=tuple(data.get("notes") or ()),
        small=tuple(finding(f) for f in data.get("small") or ()),
    )


def rule_context(profile: Profile) -> RuleContext:
    """What the rules may look at for ``profile``: its core, what it could not count, its
    ONNX Runtime session and the CPUs it could use (the one reading of its CPU facts)."""
    cpu = profile.machine.get("cpu") or {}
    return RuleContext.of(
        str(cpu.get("core_slug", "")),
        unavailable=profile.unavailable,
        session=profile.session,
        cpu_count=cpu.get("cpu_count"),
    )
