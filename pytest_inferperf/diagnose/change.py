"""What changed against a baseline, and what the change can be blamed on.

Owns: :func:`explain_change` (two sets of metrics) and :func:`explain_profiles` (two
Profiles: their metrics, ``region()`` stages, ONNX Runtime op types, and the settings
and inputs they ran with), the records they return (:class:`ChangeExplanation`,
:class:`MetricMove`, :class:`PartChange`, :class:`Cause`, :class:`Slowdown`), and
rendering them as text lines and plain data.

Must not: measure, read files, print, or import pytest. Pure functions of mappings and
Profiles; ``classify`` re-exports the names its callers know.

How a change is explained
-------------------------
0. **How it ran**, named first whatever follows: the session's settings, the inputs,
   the CPUs, the runner's pinning and the software versions that differ from the
   baseline's (:mod:`settings_change`). They are no share of anything: a setting is
   named because it changed, even where the rest is "unexplained", and a passing
   comparison still carries them.
1. **The slowdown**: ``latency_mean_ms`` (wall time per call), ``cpu_ms_per_call`` and
   ``cycles_per_call``, baseline against now. There is a slowdown to explain when one
   of them got worse credibly: the Mann-Whitney U test of :mod:`judge.comparison` over per-repeat
   values where the caller ran it, else a move beyond its tolerance.
2. **Candidates**, each with the share of the slowdown it can account for:

   * a stage (``region(name)``, and the time outside every region): its extra
     milliseconds per call over the extra wall milliseconds per call;
   * an op type (ONNX Runtime's profiler, a separate pass): its extra milliseconds
     per run over the extra wall milliseconds per call. It must also *stand out*: grow
     :data:`STANDS_OUT` times more than the other op types together, since a busy
     machine slows every op type alike;
   * a metric with a cost on record (its row's :attr:`core.metrics.Metric.cost`): the extra
     events times what one costs at most (extra context switches x 1 ms, extra page
     faults x 10 µs, extra L2 refills x 75 cycles, ...). Preemptions and migrations
     arrive at a rate per second, so a longer call has more of them: only those
     beyond the baseline's rate count.

3. A candidate is **named** only if its move is credible (rank test over repeats or
   runs, else beyond :data:`PART_TOLERANCE` / the metric's tolerance) *and* material
   (it can account for at least :data:`MATERIAL_SHARE` of the slowdown). Named causes
   are listed by share; a metric names its category (``points_to``). Where the stages
   and op types named already account for :data:`LOCATED_SHARE` of the slowdown, a
   metric's move is a consequence of where the time went (a pure-Python stage raises
   CPU utilisation), not another cause: it stays in "what moved" and points nowhere.
4. When nothing is named the change is "unexplained by the counters available here",
   and the summary shows what did move, each with its share or "within noise".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..core.metrics import METRICS
from ..core.numbers import reading as fmt  # the engine's sentences and the reports read alike
from ..measure.stages import REST_STAGE
from .settings_change import SettingChange, settings_changes, settings_text
from .thresholds_by_core import CATEGORIES

if TYPE_CHECKING:
    from ..core.profile import Profile
    from ..judge.comparison import Comparison

#: A move smaller than this (relative) is not reported as a move at all.
CHANGE_MIN_RELATIVE = 0.10
#: The share of the slowdown a candidate must be able to account for to be named
#: (engineering judgement: a fifth; a cause that explains less is a side effect).
MATERIAL_SHARE = 0.20
#: Stages and op types that account for this much of the slowdown leave no room for a
#: counter to be a cause of its own (engineering judgement: what MATERIAL_SHARE leaves).
LOCATED_SHARE = 1.0 - MATERIAL_SHARE
#: An op type stands out when (1 + its change) / (1 + the other op types' change) is at
#: least this: the 10-30% a shared 2-CPU machine moves every op type by stays below it.
STANDS_OUT = 1.25
#: A stage or op type without per-repeat values moves credibly beyond this (the 10-30%
#: a shared 2-CPU machine moves timings by, see ``core.metrics.Metric.tolerance``).
PART_TOLERANCE = 0.25
#: What the slowdown is measured in, the first one present is the headline.
SLOWDOWN_METRICS = ("latency_mean_ms", "cpu_ms_per_call", "cycles_per_call")


# -- records ----------------------------------------------------------------------


@dataclass(frozen=True)
class MetricMove:
    """One metric in the baseline and now, and what share of the slowdown its move can
    account for: a candidate cause.

    Not :class:`judge.comparison.MetricChange`, which *judges* a metric (its tolerance,
    absolute floor and rank test give ok / regressed / improved / noise, and a regression
    may fail a test). This one *weighs* a move as a cause: its category, its share of the
    slowdown at the cost on its row. It is built from two plain metric mappings where no
    Profile or per-repeat values exist (:func:`explain_change`), and takes the
    judgement's credibility where the caller has one (``credible``).
    """

    metric: str
    baseline: float
    current: float
    relative: float  # (current - baseline) / |baseline|; inf when the baseline was 0
    worse: bool | None  # None when the metric has no better direction on record
    category: str | None
    credible: bool | None = None  # None: not judged (no tolerance, no rank test)
    share: float | None = None  # of the slowdown it can account for at most; None: no cost
    cost: str = ""  # how the share was computed, and the cost's source


@dataclass(frozen=True)
class PartChange:
    """A stage (``region()``) or an op type, per call (stage) or per run (op type)."""

    kind: str  # "stage" | "op_type"
    name: str
    baseline_ms: float
    current_ms: float
    relative: float
    credible: bool
    share: float | None  # of the wall-time slowdown; None when there is none
    detail: str = ""  # how credibility was decided
    nodes: tuple[int, int] = (0, 0)  # op types: nodes in the baseline and now
    stands_out: bool = True  # op types: grew more than the other op types together

    @property
    def delta_ms(self) -> float:
        return self.current_ms - self.baseline_ms

    @property
    def label(self) -> str:
        if self.kind == "op_type":
            return self.name
        return "outside the region() stages" if self.name == REST_STAGE else self.name

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "baseline_ms": self.baseline_ms,
            "current_ms": self.current_ms,
            "relative": _json_float(self.relative),
            "credible": self.credible,
            "share": self.share,
            "detail": self.detail,
            "nodes": list(self.nodes),
            "stands_out": self.stands_out,
        }


@dataclass(frozen=True)
class Cause:
    """A credible, material explanation of (part of) the slowdown."""

    kind: str  # "stage" | "op_type" | "metric"
    name: str
    share: float
    text: str
    category: str | None = None  # metrics: the category it points to


@dataclass(frozen=True)
class Slowdown:
    """How much slower a call got, in each unit that was measured on both sides."""

    metric: str  # the headline: the first of SLOWDOWN_METRICS that got credibly worse
    baseline: float
    current: float
    wall_ms: float | None = None  # extra wall ms per call
    cpu_ms: float | None = None  # extra CPU ms per call
    cycles: float | None = None  # extra cycles per call
    credible: bool = False  # one of them got credibly worse

    @property
    def time_ms(self) -> float | None:
        """The larger extra time per call (wall or CPU), if any grew."""
        grown = [v for v in (self.wall_ms, self.cpu_ms) if v is not None and v > 0]
        return max(grown) if grown else None

    @property
    def relative(self) -> float:
        return _relative(self.current, self.baseline)

    def text(self) -> str:
        unit = METRICS[self.metric].unit if self.metric in METRICS else ""
        extra = self.current - self.baseline
        amount = (
            f"{extra:+.3g} ms per call"
            if unit == "ms"
            else f"{extra:+.3g} {self.metric.removesuffix('_per_call')} per call"
        )
        return (
            f"{self.metric} {fmt(self.baseline)} -> {fmt(self.current)}"
            f"{' ' + unit if unit else ''} ({amount}, {pct(self.relative)})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "baseline": self.baseline,
            "current": self.current,
            "wall_ms": self.wall_ms,
            "cpu_ms": self.cpu_ms,
            "cycles": self.cycles,
            "credible": self.credible,
        }


@dataclass(frozen=True)
class ChangeExplanation:
    """What moved against the baseline, and what the slowdown can be blamed on."""

    moved: tuple[MetricMove, ...]
    points_to: str | None
    summary: str
    causes: tuple[Cause, ...] = ()
    stages: tuple[PartChange, ...] = ()
    op_types: tuple[PartChange, ...] = ()
    slowdown: Slowdown | None = None
    unexplained: bool = False  # a credible slowdown that nothing credible and material explains
    settings: tuple[SettingChange, ...] = ()  # how the run was set up differently

    @property
    def settings_brief(self) -> str:
        """``intra-op threads 2 -> 1`` (``, 2 more``): the settings in a few words, or ""."""
        if not self.settings:
            return ""
        more = f", {len(self.settings) - 1} more" if len(self.settings) > 1 else ""
        return f"{self.settings[0].text}{more}"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types (a relative move from 0 is the string "inf")."""
        return {
            "summary": self.summary,
            "points_to": self.points_to,
            "unexplained": self.unexplained,
            "settings": [c.to_dict() for c in self.settings],
            "settings_text": settings_text(self.settings, limit=len(self.settings)) or None,
            "slowdown": None if self.slowdown is None else self.slowdown.to_dict(),
            "causes": [
                {
                    "kind": c.kind,
                    "name": c.name,
                    "share": c.share,
                    "text": c.text,
                    "category": c.category,
                }
                for c in self.causes
            ],
            "stages": [s.to_dict() for s in self.stages],
            "op_types": [o.to_dict() for o in self.op_types],
            "moved": [
                {
                    "metric": m.metric,
                    "baseline": m.baseline,
                    "current": m.current,
                    "relative": _json_float(m.relative),
                    "worse": m.worse,
                    "category": m.category,
                    "credible": m.credible,
                    "share": m.share,
                    "cost": m.cost,
                }
                for m in self.moved
            ],
        }


# -- formatting -----------------------------------------------------------------------


def pct(relative: float) -> str:
    """``+31,600%``; a move from zero is "from 0"."""
    if math.isinf(relative):
        return "from 0"
    return f"{relative * 100:+,.0f}%"


def share_text(share: float | None) -> str:
    if share is None:
        return "no cost on record"
    if share >= 0.995:
        return "all of the slowdown"
    return (
        f"{share:.0%} of the slowdown"
        if share >= 0.01
        else f"{share:.1%} of the slowdown"
        if share >= 0.001
        else "<0.1% of the slowdown"
    )


def _json_float(value: float) -> float | str:
    return value if math.isfinite(value) else ("inf" if value > 0 else "-inf")


def _relative(current: float, baseline: float) -> float:
    if baseline == 0:
        return 0.0 if current == 0 else math.copysign(math.inf, current)
    return (current - baseline) / abs(baseline)


# -- credibility --------------------------------------------------------------------------


def _tolerance(metric: str) -> float:
    from ..judge.comparison import tolerance_of

    return tolerance_of(metric)


def _credible_metric(
    metric: str, baseline: float, current: float, credible: Mapping[str, bool] | None
) -> bool:
    """The caller's judgement (rank test) where given, else a move beyond the tolerance."""
    if credible is not None and metric in credible:
        return bool(credible[metric])
    from ..judge.comparison import floor_of, relative_delta

    delta = relative_delta(baseline, current, floor_of(metric))
    return abs(delta) > _tolerance(metric)


def credible_part(
    baseline_values: Sequence[float],
    current_values: Sequence[float],
    baseline: float,
    current: float,
) -> tuple[bool, str]:
    """Whether a stage's or op type's move is beyond its noise, and how that was decided.

    With :data:`judge.comparison.MIN_REPEATS` values on each side: the rank test (``p <
    compare.ALPHA``, medians moving the same way) and at least a 10% move; otherwise
    the point values must move by more than :data:`PART_TOLERANCE`.
    """
    from ..judge.comparison import rank_test

    rel = _relative(current, baseline)
    test = rank_test(current_values, baseline_values, current - baseline)
    if test is not None:
        return test.credible and abs(rel) >= CHANGE_MIN_RELATIVE, (
            f"p={test.p_value:.2g}, Mann-Whitney U over {len(current_values)} vs "
            f"{len(baseline_values)}"
        )
    return abs(rel) > PART_TOLERANCE, f"point values (tolerance {PART_TOLERANCE:.0%})"


# -- the slowdown and what a metric's move costs ------------------------------------------


def slowdown_of(
    metrics: Mapping[str, float],
    baseline: Mapping[str, float],
    credible: Mapping[str, bool] | None = None,
) -> Slowdown | None:
    """The slowdown per call in every unit measured on both sides; None if none was."""
    present = [m for m in SLOWDOWN_METRICS if m in metrics and m in baseline]
    if not present:
        return None

    def extra(name: str) -> float | None:
        return float(metrics[name]) - float(baseline[name]) if name in present else None

    worse = [
        m
        for m in present
        if float(metrics[m]) > float(baseline[m])
        and _credible_metric(m, float(baseline[m]), float(metrics[m]), credible)
    ]
    # the headline is a unit that got credibly worse: a latency that improved while CPU
    # time grew (a pool spinning more) never heads a slowdown
    head = worse[0] if worse else present[0]
    return Slowdown(
        head,
        float(baseline[head]),
        float(metrics[head]),
        wall_ms=extra("latency_mean_ms"),
        cpu_ms=extra("cpu_ms_per_call"),
        cycles=extra("cycles_per_call"),
        credible=bool(worse),
    )


def _share(extra: float, of: float | None) -> float | None:
    if of is None or of <= 0:
        return None
    return max(0.0, extra) / of


def metric_share(
    metric: str,
    metrics: Mapping[str, float],
    baseline: Mapping[str, float],
    slowdown: Slowdown | None,
) -> tuple[float | None, str]:
    """The share of the slowdown ``metric``'s move can account for at most, and how.

    ``(None, why)`` when the metric has no cost on record or the slowdown is not
    measured in the unit its cost is in.
    """
    row = METRICS.get(metric)
    cost = None if row is None else row.cost
    if cost is None or slowdown is None or metric not in metrics or metric not in baseline:
        return None, ""
    cur, base = float(metrics[metric]), float(baseline[metric])

    def both(name: str) -> tuple[float, float] | None:
        if name in metrics and name in baseline:
            return float(metrics[name]), float(baseline[name])
        return None

    if cost.kind == "event_us":
        extra = cur - base
        note = ""
        clock = both("latency_mean_ms") or both("cpu_ms_per_call")
        if cost.time_driven and clock and clock[1] > 0:
            expected = base * clock[0] / clock[1]  # the baseline's rate over the longer call
            extra = cur - expected
            note = f" beyond the {fmt(expected)} the baseline's rate gives a call this long"
        extra_ms = max(0.0, extra) * cost.cost / 1000.0
        share = _share(extra_ms, slowdown.time_ms)
        return share, (
            f"{fmt(max(0.0, extra))} more per call{note} x {fmt(cost.cost)} "
            f"{cost.unit} = {fmt(extra_ms)} ms [{cost.source}]"
        )
    cycles = both("cycles_per_call")
    if cost.kind == "mpki_cycles":
        instr = both("instructions_per_call")
        if instr is None:
            return None, "instructions not counted"
        extra_events = (cur - base) / 1000.0 * instr[0]
        extra = extra_events * cost.cost
        return _share(extra, slowdown.cycles), (
            f"{fmt(extra_events)} more per call x {fmt(cost.cost)} {cost.unit} = "
            f"{fmt(extra)} cycles [{cost.source}]"
        )
    if cost.kind == "cycle_fraction":
        if cycles is None:
            return None, "cycles not counted"
        extra = cur * cycles[0] - base * cycles[1]
        return _share(extra, slowdown.cycles), f"{fmt(extra)} more stalled cycles per call"
    if cost.kind == "instructions":
        ipc = both("ipc")
        if ipc is None or ipc[1] <= 0:
            return None, "IPC not counted"
        extra = (cur - base) / ipc[1]
        return _share(extra, slowdown.cycles), (
            f"{fmt(cur - base)} more instructions per call at the baseline's IPC "
            f"{fmt(ipc[1])} = {fmt(extra)} cycles"
        )
    if cost.kind == "ipc":
        instr = both("instructions_per_call")
        if instr is None or cur <= 0 or base <= 0:
            return None, "instructions not counted"
        extra = instr[0] / cur - instr[0] / base
        return _share(extra, slowdown.cycles), (
            f"{fmt(instr[0])} instructions per call at IPC {fmt(cur)} instead of "
            f"{fmt(base)} = {fmt(extra)} more cycles"
        )
    if cost.kind == "utilisation":
        wall = both("latency_mean_ms")
        if wall is None:
            return None, "wall time not measured"
        if cur <= 1.0:  # spinning threads keep more than one CPU busy
            return None, (
                f"{fmt(base)} -> {fmt(cur)} busy CPUs stays within one CPU: a thread that "
                "waited less (for a CPU, or for I/O), not threads spinning"
            )
        extra_ms = (cur - base) * wall[0]
        return _share(extra_ms, slowdown.cpu_ms), (
            f"{fmt(cur - base)} more busy CPUs x {fmt(wall[0])} ms per call = "
            f"{fmt(extra_ms)} CPU ms"
        )
    raise ValueError(f"unknown cost kind {cost.kind!r} for {metric} in thresholds")


def metric_changes(
    metrics: Mapping[str, float],
    baseline: Mapping[str, float],
    *,
    credible: Mapping[str, bool] | None = None,
    slowdown: Slowdown | None = None,
) -> tuple[MetricMove, ...]:
    """Every metric of both sides that moved by :data:`CHANGE_MIN_RELATIVE`, largest first."""
    changes: list[MetricMove] = []
    for name in sorted(set(metrics) & set(baseline)):
        cur, base = float(metrics[name]), float(baseline[name])
        if any(math.isnan(v) for v in (cur, base)):
            continue
        rel = _relative(cur, base)
        if abs(rel) < CHANGE_MIN_RELATIVE:
            continue
        spec = METRICS.get(name)
        worse: bool | None = None
        if spec is not None and rel != 0:
            worse = (rel > 0) == (spec.better == "lower")
        share, cost = metric_share(name, metrics, baseline, slowdown)
        changes.append(
            MetricMove(
                name,
                base,
                cur,
                rel,
                worse,
                None if spec is None else spec.points_to,
                _credible_metric(name, base, cur, credible),
                share,
                cost,
            )
        )
    return tuple(sorted(changes, key=lambda c: (-abs(c.relative), c.metric)))


# -- stages and op types --------------------------------------------------------------------


def stage_changes(
    current: Profile, baseline: Profile, slowdown: Slowdown | None = None
) -> tuple[PartChange, ...]:
    """Each ``region()`` stage (and the time outside them), ms per call, largest move first."""
    now, before = _stages_ms(current), _stages_ms(baseline)
    if not now or not before:
        return ()
    wall = slowdown.wall_ms if slowdown is not None else None
    out = []
    for name in list(dict.fromkeys([*before, *now])):
        base_ms, base_runs = before.get(name, (0.0, []))
        cur_ms, cur_runs = now.get(name, (0.0, []))
        credible, detail = credible_part(base_runs, cur_runs, base_ms, cur_ms)
        out.append(
            PartChange(
                "stage",
                name,
                base_ms,
                cur_ms,
                _relative(cur_ms, base_ms),
                credible,
                _share(cur_ms - base_ms, wall),
                detail,
            )
        )
    return tuple(sorted(out, key=lambda p: (-abs(p.delta_ms), p.name)))


def _stages_ms(profile: Profile) -> dict[str, tuple[float, list[float]]]:
    """Stage -> (ms per measured call, ms per call of each repeat where recorded)."""
    calls = profile.calls
    if not calls:
        return {}
    out = {}
    for stage in profile.stages:
        runs: list[float] = []
        if len(stage.repeat_wall_ns) == len(profile.repeats):
            runs = [
                w / r.calls / 1e6
                for w, r in zip(stage.repeat_wall_ns, profile.repeats, strict=True)
                if r.calls
            ]
        out[stage.name] = (stage.wall_ns / calls / 1e6, runs)
    return out


def op_type_table(profile: Profile) -> dict[str, tuple[int, float, list[float]]]:
    """Op type -> (nodes, ms per run, ms of each profiled run where recorded).

    From ``Profile.op_types`` (the plugin's operator pass) or, for Profiles that only
    have the per-node table (``inferperf analyse``, older baselines), from
    ``Profile.operators`` without per-run values.
    """
    out: dict[str, tuple[int, float, list[float]]] = {}
    if profile.op_types:
        for row in profile.op_types:
            runs = [float(v) / 1000.0 for v in row.get("runs_us") or ()]
            out[str(row.get("op_type") or "?")] = (
                int(row.get("nodes") or 0),
                float(row.get("mean_us") or 0.0) / 1000.0,
                runs,
            )
        return out
    for op in profile.operators:
        op_type = str(op.get("op_type") or "?")
        nodes, ms, _ = out.get(op_type, (0, 0.0, []))
        out[op_type] = (nodes + 1, ms + float(op.get("mean_us") or 0.0) / 1000.0, [])
    return out


def op_type_changes(
    current: Profile, baseline: Profile, slowdown: Slowdown | None = None
) -> tuple[PartChange, ...]:
    """Each op type's time per run against the baseline, largest move first."""
    now, before = op_type_table(current), op_type_table(baseline)
    if not now or not before:
        return ()
    wall = slowdown.wall_ms if slowdown is not None else None
    total_now = sum(ms for _, ms, _ in now.values())
    total_before = sum(ms for _, ms, _ in before.values())
    out = []
    for name in sorted(set(now) | set(before)):
        base_nodes, base_ms, base_runs = before.get(name, (0, 0.0, []))
        cur_nodes, cur_ms, cur_runs = now.get(name, (0, 0.0, []))
        rel = _relative(cur_ms, base_ms)
        credible, detail = credible_part(base_runs, cur_runs, base_ms, cur_ms)
        rest_before, rest_now = total_before - base_ms, total_now - cur_ms
        stands_out = True
        if rest_before > 0 and base_ms > 0:
            rest_rel = _relative(rest_now, rest_before)
            stands_out = (1 + rel) >= STANDS_OUT * (1 + rest_rel)
        out.append(
            PartChange(
                "op_type",
                name,
                base_ms,
                cur_ms,
                rel,
                credible,
                _share(cur_ms - base_ms, wall),
                detail,
                (base_nodes, cur_nodes),
                stands_out,
            )
        )
    return tuple(sorted(out, key=lambda p: (-abs(p.delta_ms), p.name)))


# -- explaining -------------------------------------------------------------------------------


def _material(share: float | None) -> bool:
    return share is not None and share >= MATERIAL_SHARE


def _stage_cause(stage: PartChange, ops: Sequence[PartChange], slowdown_ms: float | None) -> Cause:
    text = (
        f"stage `{stage.label}` {stage.delta_ms:+.3g} ms per call "
        f"({pct(stage.relative)}, {share_text(stage.share)})"
    )
    if ops:  # the model's own time is known: did it take part?
        before = sum(o.baseline_ms for o in ops)
        now = sum(o.current_ms for o in ops)
        rel = _relative(now, before)
        model_share = _share(now - before, slowdown_ms)
        if abs(rel) <= PART_TOLERANCE:
            text += (
                f": the regression is outside the model (ONNX Runtime's operators "
                f"{pct(rel)} in total)"
            )
        elif model_share is not None and model_share < MATERIAL_SHARE:
            text += (
                f": the regression is mostly outside the model (ONNX Runtime's "
                f"operators {pct(rel)} in total, {share_text(model_share)})"
            )
    return Cause("stage", stage.name, stage.share or 0.0, text)


def _op_cause(op: PartChange, ops: Sequence[PartChange]) -> Cause:
    nodes = f"{op.nodes[1]} node{'s' if op.nodes[1] != 1 else ''}"
    if op.nodes[0] != op.nodes[1]:
        nodes += f", {op.nodes[0]} in the baseline"
    rest = [o for o in ops if o.name != op.name]
    text = (
        f"op type {op.name} {op.delta_ms:+.3g} ms per run ({pct(op.relative)}; {nodes}; "
        f"{share_text(op.share)})"
    )
    if rest:
        before = sum(o.baseline_ms for o in rest)
        now = sum(o.current_ms for o in rest)
        text += f", the other op types {pct(_relative(now, before))}"
    return Cause("op_type", op.name, op.share or 0.0, text)


def _metric_cause(change: MetricMove) -> Cause:
    text = (
        f"{change.metric} {pct(change.relative)} ({fmt(change.baseline)} -> "
        f"{fmt(change.current)}) can account for up to {share_text(change.share)}"
    )
    return Cause("metric", change.metric, change.share or 0.0, text, change.category)


def _symptom(metric: str) -> bool:
    """A consequence of a slowdown, never its cause (:attr:`core.metrics.Metric.symptom`):
    reported when it moves, never a pointer."""
    row = METRICS.get(metric)
    return row is not None and row.symptom


def _split_by_parts(
    metric: str, metrics: Mapping[str, float], baseline: Mapping[str, float]
) -> bool:
    """Both sides measured the parts that split ``metric`` (:attr:`core.metrics.Metric.
    parts`): the part that moved names the cause (a backend that waits longer on memory
    is memory-bound, not core-bound), so the whole is no cause of its own."""
    row = METRICS.get(metric)
    return (
        row is not None
        and bool(row.parts)
        and all(p in metrics and p in baseline for p in row.parts)
    )


def _cost_on_record(metric: str) -> bool:
    row = METRICS.get(metric)
    return row is not None and row.cost is not None


def _what_moved(moved: Sequence[MetricMove], parts: Sequence[PartChange], limit: int = 4) -> str:
    items: list[tuple[int, float, str]] = []
    for c in moved:
        if _symptom(c.metric):
            continue
        if not c.credible:
            tag = "within noise"
        elif c.share is not None:
            tag = f"at most {share_text(c.share)}"
        elif _cost_on_record(c.metric):
            tag = "credible"  # nothing to weigh it against: no slowdown in its unit
        else:
            tag = "credible, no cost on record"
        items.append(
            (
                0 if c.credible else 1,
                -abs(c.relative),
                f"{c.metric} {pct(c.relative)} ({fmt(c.baseline)} -> {fmt(c.current)}; {tag})",
            )
        )
    for p in parts:
        if abs(p.relative) < CHANGE_MIN_RELATIVE:
            continue
        tag = share_text(p.share) if p.credible else "within noise"
        if p.kind == "op_type" and p.credible and not p.stands_out:
            tag += ", as much as the other op types"
        what = "op type" if p.kind == "op_type" else "stage"
        items.append(
            (
                0 if p.credible else 1,
                -abs(p.relative),
                f"{what} {p.label} {p.delta_ms:+.3g} ms ({pct(p.relative)}; {tag})",
            )
        )
    items.sort(key=lambda t: (t[0], t[1]))
    return ", ".join(t[2] for t in items[:limit]) or "nothing beyond 10%"


#: Settings and inputs the summary names one by one; the rest are counted.
SETTINGS_IN_SUMMARY = 4


def explain_change(
    metrics: Mapping[str, float],
    baseline: Mapping[str, float],
    *,
    credible: Mapping[str, bool] | None = None,
    stages: Sequence[PartChange] = (),
    op_types: Sequence[PartChange] = (),
    settings: Sequence[SettingChange] = (),
) -> ChangeExplanation:
    """Explain the change from ``baseline`` to ``metrics`` (see the module doc).

    ``credible`` maps a metric to whether its move is beyond its noise (the rank test of
    :func:`judge.comparison.compare_profiles`); metrics it does not name are judged on their point
    values against their tolerance. ``stages`` and ``op_types`` are
    :func:`stage_changes` / :func:`op_type_changes` of the same two runs, ``settings``
    their :func:`settings_change.settings_changes`: the summary names those first.
    """
    change = _explain(metrics, baseline, credible, stages, op_types)
    if not settings:
        return change
    head = settings_text(settings, limit=SETTINGS_IN_SUMMARY)
    return replace(change, settings=tuple(settings), summary=f"{head}. {change.summary}")


def _explain(
    metrics: Mapping[str, float],
    baseline: Mapping[str, float],
    credible: Mapping[str, bool] | None,
    stages: Sequence[PartChange],
    op_types: Sequence[PartChange],
) -> ChangeExplanation:
    """:func:`explain_change` without the settings."""
    slowdown = slowdown_of(metrics, baseline, credible)
    moved = metric_changes(metrics, baseline, credible=credible, slowdown=slowdown)
    if not moved and not any(abs(p.relative) >= CHANGE_MIN_RELATIVE for p in (*stages, *op_types)):
        return ChangeExplanation(
            (),
            None,
            f"no metric moved by {CHANGE_MIN_RELATIVE:.0%} or more against the baseline",
            stages=tuple(stages),
            op_types=tuple(op_types),
            slowdown=slowdown,
        )
    if slowdown is None or not slowdown.credible:
        head = (
            "no credible slowdown"
            if slowdown is not None
            else "no time or cycles measured on both sides"
        )
        return ChangeExplanation(
            moved,
            None,
            f"{head}; moved most: {_what_moved(moved, [*stages, *op_types])}",
            stages=tuple(stages),
            op_types=tuple(op_types),
            slowdown=slowdown,
        )
    causes: list[Cause] = []
    for op in op_types:
        if op.credible and op.stands_out and op.delta_ms > 0 and _material(op.share):
            causes.append(_op_cause(op, op_types))
    for stage in stages:
        if stage.credible and stage.delta_ms > 0 and _material(stage.share):
            causes.append(_stage_cause(stage, op_types, slowdown.wall_ms))
    located = sum(c.share for c in causes)
    for c in moved:
        if (
            c.worse
            and c.credible
            and c.category
            and not _symptom(c.metric)
            and not _split_by_parts(c.metric, metrics, baseline)
            and _material(c.share)
            and located < LOCATED_SHARE
        ):
            causes.append(_metric_cause(c))
    causes.sort(key=lambda c: (-c.share, c.kind, c.name))
    by_category: dict[str, float] = {}
    for cause in causes:
        if cause.category:
            by_category[cause.category] = max(by_category.get(cause.category, 0.0), cause.share)
    points_to = max(sorted(by_category), key=lambda k: by_category[k]) if by_category else None
    if causes:
        summary = f"{slowdown.text()}: {'; '.join(c.text for c in causes[:3])}"
        if points_to:
            summary += f"; points to {points_to} ({CATEGORIES[points_to]})"
    else:
        summary = (
            f"{slowdown.text()}, unexplained by the counters available here; what "
            f"moved: {_what_moved(moved, [*stages, *op_types])}"
        )
    return ChangeExplanation(
        moved,
        points_to,
        summary,
        tuple(causes),
        tuple(stages),
        tuple(op_types),
        slowdown,
        unexplained=not causes,
    )


def explain_profiles(
    current: Profile,
    baseline: Profile,
    *,
    metrics: Mapping[str, float] | None = None,
    baseline_metrics: Mapping[str, float] | None = None,
    comparison: Comparison | None = None,
) -> ChangeExplanation:
    """:func:`explain_change` of two Profiles, with their stages, op types and the
    settings and inputs they ran with (:func:`settings_change.settings_changes`).

    ``comparison`` (:func:`judge.comparison.compare_profiles` of the same two) supplies the rank
    test's judgement of each metric.
    """
    from ..core.metrics import profile_metrics

    now = dict(metrics) if metrics is not None else profile_metrics(current)
    before = dict(baseline_metrics) if baseline_metrics is not None else profile_metrics(baseline)
    credible = None
    if comparison is not None:
        credible = {c.metric: c.status in ("regressed", "improved") for c in comparison.changes}
    slowdown = slowdown_of(now, before, credible)
    return explain_change(
        now,
        before,
        credible=credible,
        stages=stage_changes(current, baseline, slowdown),
        op_types=op_type_changes(current, baseline, slowdown),
        settings=settings_changes(current, baseline),
    )


# -- rendering -----------------------------------------------------------------------------


def part_lines(change: ChangeExplanation, limit: int = 5) -> list[str]:
    """The settings and inputs that differ (all of them), then the stage and op-type
    tables of a change, one line each (largest moves first)."""
    lines = []
    if change.settings:
        lines.append(
            "settings and inputs (baseline -> now): " + "; ".join(c.text for c in change.settings)
        )
    for kind, parts, unit in (
        ("stages", change.stages, "ms per call"),
        ("op types", change.op_types, "ms per run, ONNX Runtime profiler"),
    ):
        if not parts:
            continue
        cells = []
        for p in parts[:limit]:
            tags = [pct(p.relative)]
            if p.kind == "op_type" and p.nodes[0] != p.nodes[1]:
                tags.append(f"{p.nodes[0]} -> {p.nodes[1]} nodes")
            elif p.kind == "op_type":
                tags.append(f"{p.nodes[1]} node{'s' if p.nodes[1] != 1 else ''}")
            if not p.credible and abs(p.relative) >= CHANGE_MIN_RELATIVE:
                tags.append("within noise")
            cells.append(
                f"{p.label} {fmt(p.baseline_ms)} -> {fmt(p.current_ms)} ({', '.join(tags)})"
            )
        more = f"; {len(parts) - limit} more" if len(parts) > limit else ""
        lines.append(f"{kind} ({unit}): {'; '.join(cells)}{more}")
    return lines


def metric_lines(change: ChangeExplanation, limit: int = 10) -> list[str]:
    """The moved metrics as a table: values, move, credible or noise, share, category."""
    lines = []
    for c in change.moved[:limit]:
        tag = {True: "worse", False: "better", None: ""}[c.worse]
        noise = "" if c.credible is None else ("credible" if c.credible else "noise")
        share = "" if c.share is None else f"<= {c.share:.0%} of slowdown"
        lines.append(
            f"{c.metric:<26} {fmt(c.baseline):>10} -> {fmt(c.current):<10} "
            f"{pct(c.relative):>8} {tag:<6} {noise:<8} {share:<20} "
            f"{('-> ' + c.category) if c.category else ''}".rstrip()
        )
    return lines
