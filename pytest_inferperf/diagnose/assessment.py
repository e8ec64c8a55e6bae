"""The Assessment: one measured workload judged once - the value every renderer takes.

Owns: building the :class:`Assessment` of one Profile in one place (:func:`assess`):
its metrics (the built-in ones and those the ``pytest_inferperf_metrics`` hooks
added), its budgets checked against the ``perf`` marker, the comparison with its
baseline (or why there is none), the diagnosis (counters, stages, operators, the
hooks' findings, the change against the baseline and what it is blamed on) and the
outcome - passed / regressed / inconclusive (a timing change the noise floor cannot
tell from the machine's state), failed under ``strict`` - or not checkable, with the
metric that carried it (counted instructions before timings); folding a
re-measurement in (:func:`with_confirmation`); the Assessment of a lone Profile
(:func:`assess_profile`, for ``inferperf analyse`` and the HTML report); and the one
way a Profile's CPU facts become the classifier's context (:func:`rule_context`,
:func:`diagnose_profile`).

Must not: read files, measure, or render text (``report`` does: the failure block,
the summary cell, the records the summary table is drawn from). It is handed the
baseline, or the error loading it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..core.metrics import METRICS, profile_metrics
from ..core.profile import Profile
from ..judge.budgets import BudgetResult, PerfSpec, check_budgets
from ..judge.comparison import Comparison, IncomparableError, MetricChange, compare_profiles
from ..judge.noise import (
    NoiseFloor,
    TimingJudgement,
    clock_of,
    contended_stretch,
    floor_of,
    judge_timing,
    pooled,
    saturated,
)
from ..measure.conditions import busy_reasons
from ..measure.stages import StageTime, metric_label, stage_metric, stage_times
from ..pmu.trust import unjudgeable_metrics
from .change import ChangeExplanation, explain_profiles
from .classify import Diagnosis, diagnose_in, rule_context

# Metrics whose change against the baseline fails a test by default: the rows with
# ``gates`` (``core.metrics.Metric``; the rule, counted by a PMU or the time a call
# costs, is held by tests/test_metric_rows.py). They are judged on per-repeat
# distributions (a rank test), so noise alone rarely trips them. Percentiles, tail
# ratios, OS event rates and memory vary run to run on shared machines: they are
# reported, and gate only when a test names them in ``tolerance={...}`` (or sets a
# budget on them). Every ``region()`` stage compared (``stage:<name>``) gates too: a
# stage is judged on its per-repeat times as well, and a slower stage is what its test
# was written to catch (``assess``).
GATED_METRICS = frozenset(name for name, m in METRICS.items() if m.gates)


@dataclass(frozen=True)
class StageRow:
    """One ``region()`` stage as judged: its time now, and against the baseline."""

    time: StageTime
    baseline_ms: float | None  # ms per call in the baseline; None: no baseline has it
    delta: float | None  # relative to the baseline
    change: MetricChange | None  # the stage's comparison row (None: not compared)
    # "regressed" (fails the test) | "inconclusive" | "ok" | "improved" | "noise" |
    # "accepted" (a regression, under --update-baselines); None:
    # not judged (no baseline, or the time outside the regions, which the whole call's
    # metrics judge)
    verdict: str | None
    budget_ms: float | None  # the marker's stage_ms_max for it

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types (a move from a zero baseline is ``"inf"``)."""
        t, c = self.time, self.change
        return {
            "name": t.name,
            "region": t.named,
            "entered": t.entered,
            "ms_per_call": t.ms_per_call,
            "share": t.share,
            "baseline_ms_per_call": self.baseline_ms,
            "delta": None if self.delta is None else _json_float(self.delta),
            "tolerance": None if c is None else c.tolerance,
            "verdict": self.verdict,
            "detail": None if c is None else c.detail,
            "budget_ms_max": self.budget_ms,
        }


def _json_float(value: float) -> float | str:
    return value if math.isfinite(value) else ("inf" if value > 0 else "-inf")


@dataclass(frozen=True)
class Assessment:
    """What one measured workload was judged to be: built once, rendered everywhere."""

    key: str  # test node id, plus "@name" for a named pmu_profile call
    profile: Profile
    metrics: Mapping[str, float]
    budgets: tuple[BudgetResult, ...]
    comparison: Comparison | None
    baseline_note: str  # "no baseline for <class>", "baseline <path>", ...
    baseline_error: str | None = None
    compare_fails: bool = True  # False under --update-baselines: changes are reported only
    stale_fails: bool = False
    diagnosis: Diagnosis | None = None
    artifacts: Mapping[str, str] = field(default_factory=dict)  # view -> file
    artifact_notes: Mapping[str, str] = field(default_factory=dict)  # view -> why missing
    gated: frozenset[str] = frozenset()
    verbose: bool = False  # the full reasoning of the diagnosis in the failure text
    noise: NoiseFloor | None = None  # the machine now and at baseline time
    strict: bool = False  # an inconclusive change fails (--inferperf-strict)
    # A suspected timing regression measured again: {"held", "pause_s", "first",
    # "second", "text"}; None: not measured again.
    confirmation: Mapping[str, Any] | None = None

    @property
    def change(self) -> ChangeExplanation | None:
        """What the change against the baseline is blamed on (None: nothing compared)."""
        return self.diagnosis.change if self.diagnosis is not None else None

    @property
    def budget_failures(self) -> tuple[BudgetResult, ...]:
        """Budgets that fail the test: a timing budget measured again fails only if it
        failed again (:attr:`unconfirmed_budgets` are those that did not)."""
        unconfirmed = set(self.unconfirmed_budgets)
        return tuple(b for b in self.budgets if b.failed and b not in unconfirmed)

    @property
    def timing_budget_failures(self) -> tuple[BudgetResult, ...]:
        """Failed budgets on a timing (latency, CPU time, a stage's time): the machine
        can fail them as well as the code, so they are measured again before failing,
        as a timing regression is. A stage never entered has no value: it fails as is."""
        return tuple(
            b
            for b in self.budgets
            if b.failed and b.value is not None and clock_of(b.budget.metric) is not None
        )

    @property
    def unconfirmed_budgets(self) -> tuple[BudgetResult, ...]:
        """Timing budgets that failed, were measured again, and did not fail again."""
        if self.confirmation is None or "budgets_held" not in self.confirmation:
            return ()
        held = set(self.confirmation["budgets_held"])
        return tuple(b for b in self.timing_budget_failures if b.budget.keyword not in held)

    @property
    def unchecked(self) -> tuple[BudgetResult, ...]:
        return tuple(b for b in self.budgets if b.status == "unavailable")

    @property
    def suspected(self) -> tuple:
        """Credible changes beyond tolerance in a gated metric, before the noise floor."""
        if self.comparison is None:
            return ()
        return tuple(c for c in self.comparison.regressions if c.metric in self.gated)

    @property
    def counted_regressions(self) -> tuple:
        """Regressions in counted work (instructions, misses, ...): no noise floor applies."""
        return tuple(c for c in self.suspected if clock_of(c.metric) is None)

    @property
    def timing_judgements(self) -> tuple[TimingJudgement, ...]:
        """Each suspected timing regression against the noise floor."""
        floor = self.noise or NoiseFloor(None, None, (), ())
        cpu_judged = (
            self.comparison is not None
            and self.comparison.get("cpu_ms_per_call") is not None
            and "cpu_ms_per_call" in self.gated
        )
        return tuple(
            judge_timing(c.metric, c.delta, c.tolerance, floor, cpu_time_judged=cpu_judged)
            for c in self.suspected
            if clock_of(c.metric) is not None
        )

    @property
    def unconfirmed(self) -> bool:
        return self.confirmation is not None and not self.confirmation.get("held")

    @property
    def regressions(self) -> tuple:
        """What fails the test: counted regressions, and timing regressions beyond the
        noise floor that held when measured again (where they were)."""
        beyond = {j.metric for j in self.timing_judgements if j.outcome == "regressed"}
        if self.unconfirmed:
            beyond = set()
        elif self.confirmation is not None and "held_metrics" in self.confirmation:
            beyond &= set(self.confirmation["held_metrics"])  # fresh processes decided
        return tuple(c for c in self.suspected if clock_of(c.metric) is None or c.metric in beyond)

    @property
    def inconclusive(self) -> tuple[str, ...]:
        """Why a timing change can be neither passed nor failed (empty: it can)."""
        out = [
            f"{j.metric}: {j.reason}" for j in self.timing_judgements if j.outcome == "inconclusive"
        ]
        if self.confirmation is not None and (self.unconfirmed or self.unconfirmed_budgets):
            out.append(str(self.confirmation.get("text")))
        return tuple(out)

    @property
    def needs_confirmation(self) -> bool:
        """A timing regression or a timing budget alone would fail this test: measure it
        again first. (Under --update-baselines, ``compare_fails`` off, budgets fail as
        measured: a baseline is written only for a test that met them.)"""
        timing_budgets = set(self.timing_budget_failures)
        other_budgets = [b for b in self.budget_failures if b not in timing_budgets]
        return bool(
            self.compare_fails
            and self.confirmation is None
            and (self.regressions or timing_budgets)
            and not self.counted_regressions
            and not other_budgets
            and not self.baseline_error
        )

    @property
    def outcome(self) -> str:
        """``regressed`` | ``inconclusive`` | ``passed`` (budgets and baseline errors too)."""
        if self.budget_failures or self.baseline_error or (self.compare_fails and self.regressions):
            return "regressed"
        if self.compare_fails and self.inconclusive:
            return "inconclusive"
        return "passed"

    @property
    def carried_by(self) -> str:
        """Which metric carried the verdict on the baseline, in a few words."""
        if self.comparison is None:
            return ""
        if self.counted_regressions:
            worst = max(self.counted_regressions, key=lambda c: abs(c.delta))
            return f"{worst.metric} (counted)"
        if self.regressions:
            cpu = [c for c in self.regressions if c.metric == "cpu_ms_per_call"]
            worst = cpu[0] if cpu else max(self.regressions, key=lambda c: abs(c.delta))
            return f"{metric_label(worst.metric)} (timing, beyond the noise floor)"
        work = self.comparison.get("instructions_per_call")
        if work is not None:
            return (
                f"instructions_per_call (counted, {work.delta:+.1%}, tolerance "
                f"{work.tolerance:.0%}); timings against the noise floor"
            )
        timing = self.comparison.get("cpu_ms_per_call") or self.comparison.get("latency_mean_ms")
        if timing is not None:
            return f"{timing.metric} (timing, against the noise floor: nothing counted)"
        return ""

    @property
    def baseline_busy(self) -> tuple[str, ...]:
        """Why the baseline's own measurement was contended (empty: it was not)."""
        return self.noise.busy_baseline if self.noise is not None else ()

    @property
    def busy(self) -> tuple[str, ...]:
        """Why this run's measurement was contended (empty: it was not)."""
        return tuple(busy_reasons(self.profile.conditions))

    @property
    def stale(self) -> tuple:
        if self.comparison is None:
            return ()
        return tuple(c for c in self.comparison.improvements if c.metric in self.gated)

    @property
    def stages(self) -> tuple[StageRow, ...]:
        """Each ``region()`` stage (the time outside them last): its time per call, its
        share of the call, and against the baseline where there is one."""
        judged = {c.metric for c in self.regressions}
        doubtful = {c.metric for c in self.suspected} - judged
        moves = {p.name: p for p in self.change.stages} if self.change is not None else {}
        limits = {b.budget.metric: b.budget.limit for b in self.budgets}
        rows = []
        for time in stage_times(self.profile):
            metric = stage_metric(time.name)
            change = self.comparison.get(metric) if self.comparison is not None else None
            verdict = None
            if change is not None and not self.compare_fails:  # --update-baselines
                verdict = "accepted" if change.status == "regressed" else change.status
            elif change is not None:
                verdict = (
                    "regressed"
                    if metric in judged
                    else "inconclusive"
                    if metric in doubtful
                    else change.status
                )
            part = None if time.named else moves.get(time.name)  # outside: not judged
            rows.append(
                StageRow(
                    time,
                    change.baseline if change is not None else part.baseline_ms if part else None,
                    change.delta if change is not None else part.relative if part else None,
                    change,
                    verdict,
                    limits.get(metric),
                )
            )
        return tuple(rows)

    @property
    def failed(self) -> bool:
        return bool(
            self.budget_failures
            or self.baseline_error
            or (self.compare_fails and self.regressions)
            or (self.stale_fails and self.stale)
            or (self.strict and self.compare_fails and self.inconclusive)
        )

    @property
    def nothing_checked(self) -> bool:
        """Budgets were asked for, none could be checked, and no baseline was compared."""
        return (
            bool(self.budgets)
            and len(self.unchecked) == len(self.budgets)
            and (self.comparison is None or not self.comparison.changes)
        )

    @property
    def status(self) -> str:
        if self.failed:
            return "FAILED"
        if self.nothing_checked:
            return "not checked"
        if self.outcome == "inconclusive":
            return "inconclusive"
        notes = []
        if self.stale:
            notes.append("baseline stale")
        if self.unchecked:
            notes.append(
                f"{len(self.unchecked)} budget{'s' if len(self.unchecked) > 1 else ''} not checked"
            )
        return f"passed ({', '.join(notes)})" if notes else "passed"


def assess(
    key: str,
    profile: Profile,
    spec: PerfSpec,
    *,
    baseline: Profile | None,
    baseline_note: str,
    baseline_error: str | None = None,
    compare_fails: bool = True,
    stale_fails: bool = False,
    extra_metrics: Mapping[str, float] | None = None,
    extra_findings: Sequence[Any] = (),
    verbose: bool = False,
    strict: bool = False,
) -> Assessment:
    """Judge ``profile`` once: the one place its metrics, budgets, comparison and diagnosis
    are made. ``extra_*`` are what the user's hooks added.

    ``strict``: an inconclusive change (within the noise floor) fails the test.
    """
    metrics = {**profile_metrics(profile), **(extra_metrics or {})}
    budgets = check_budgets(
        spec.budgets,
        metrics,
        profile.unavailable,
        not_judged=unjudgeable_metrics(profile.machine, profile.unavailable),
        stages={t.name: t.ms_per_call for t in stage_times(profile) if t.named},
    )
    comparison = None
    if baseline is not None:
        try:
            comparison = compare_profiles(profile, baseline, tolerances=spec.tolerances())
        except IncomparableError as exc:
            baseline_note = f"not compared: {exc}"
    gated = GATED_METRICS | frozenset(spec.tolerance if isinstance(spec.tolerance, Mapping) else ())
    if comparison is not None:
        gated |= frozenset(c.metric for c in comparison.stages)
    diagnosis = diagnose_profile(profile, metrics, extra_findings)
    baseline_metrics = profile_metrics(baseline) if baseline is not None else {}
    if comparison is not None and baseline is not None:
        change = explain_profiles(
            profile,
            baseline,
            metrics=metrics,
            baseline_metrics=baseline_metrics,
            comparison=comparison,
        )
        diagnosis = replace(diagnosis, change=change)
    return Assessment(
        diagnosis=diagnosis,
        verbose=verbose,
        gated=gated,
        key=key,
        profile=profile,
        metrics=metrics,
        budgets=budgets,
        comparison=comparison,
        baseline_note=baseline_note,
        baseline_error=baseline_error,
        compare_fails=compare_fails,
        stale_fails=stale_fails,
        noise=None
        if comparison is None or baseline is None
        else floor_of(
            profile.conditions,
            baseline.conditions,
            pooled=pooled(metrics.get("cpu_utilisation"), baseline_metrics.get("cpu_utilisation")),
            saturated=saturated(_busy_threads(profile, baseline), _cpus(profile)),
        ),
        strict=strict,
    )


def _busy_threads(profile: Profile, baseline: Profile) -> int | None:
    """The larger count of busy threads, now or at baseline time (None: not counted)."""
    counts = [n for n in (profile.busy_threads(), baseline.busy_threads()) if n is not None]
    return max(counts) if counts else None


def _cpus(profile: Profile) -> int | None:
    """The CPUs the process could run on (its affinity), else the CPUs online."""
    machine = profile.machine
    cpu = machine.get("cpu")
    value = machine.get("cpus_available") or (
        cpu.get("cpu_count") if isinstance(cpu, Mapping) else None
    )
    return value if isinstance(value, int) and not isinstance(value, bool) else None


#: Seconds between a suspected timing regression and its measurement again in the same
#: process (where no fresh process can measure it): long enough for a burst on the machine
#: that raised the suspicion to end, short beside a test's own time.
CONFIRM_PAUSE_S = 0.5


def with_confirmation(first: Assessment, again: Assessment, *, pause_s: float) -> Assessment:
    """The verdict once a suspected timing regression was measured again.

    It fails only if the same metric regressed beyond the noise floor both times, or a
    timing budget failed both times where a busy machine does not explain it
    (:func:`budget_holds`): then the second measurement's verdict stands, marked
    confirmed. Otherwise the first verdict stands with its timing regressions and
    budgets turned inconclusive.
    """
    suspects = {c.metric: c for c in first.regressions if clock_of(c.metric) is not None}
    repeated = {c.metric: c for c in again.regressions if clock_of(c.metric) is not None}
    held = [m for m in suspects if m in repeated]
    shown = held or list(suspects)
    compared = {m: again.comparison.get(m) if again.comparison is not None else None for m in shown}
    second = {m: None if c is None else c.delta for m, c in compared.items()}
    parts = [f"{m} {_pct(second[m])} (first {suspects[m].delta:+.1%})" for m in shown]
    budgets = first.timing_budget_failures
    verdicts = {b.budget.keyword: budget_holds(b, first, [again]) for b in budgets}
    budgets_held = [k for k, (holds, _) in verdicts.items() if holds]
    parts += [_budget_again(b, again) for b in budgets]
    parts += [f"{k} missed both times on a {why}" for k, (_, why) in verdicts.items() if why]
    said = ", ".join(parts)
    if held or budgets_held:
        text = f"confirmed: measured again after a {pause_s:g} s pause: {said}"
        base = again
    else:
        text = (
            f"not confirmed: measured again after a {pause_s:g} s pause: {said}; "
            "a change that does not hold is the machine, not the code"
        )
        base = first
    record = {
        "held": bool(held or budgets_held),
        "held_metrics": held,
        "budgets_held": budgets_held,
        "pause_s": pause_s,
        "first": {m: suspects[m].delta for m in shown},
        "second": second,
        "text": text,
    }
    return replace(base, confirmation=record)


def budget_holds(
    result: BudgetResult, first: Assessment, again: Sequence[Assessment]
) -> tuple[bool, str | None]:
    """Whether a timing budget that failed in ``first`` holds over the measurements
    ``again`` (the same process after a pause, or fresh processes): it failed in each,
    and the machine cannot explain at least one of those failures, the first included
    (:func:`busy_excuse`). Where it failed each time but a busy machine explains every
    failure, it does not hold, and the second value says why."""
    results = [
        (a, r) for a in again for r in a.budgets if r.budget.keyword == result.budget.keyword
    ]
    if not results or not all(r.failed for _, r in results):
        return False, None
    whys = [busy_excuse(result, first), *(busy_excuse(r, a) for a, r in results)]
    if any(why is None for why in whys):
        return True, None
    return False, whys[-1]


def busy_excuse(result: BudgetResult, measured: Assessment) -> str | None:
    """Why a wall-clock budget that failed in ``measured`` is not shown to be the code's:
    that measurement ran on a busy machine (``measured.busy``), where a call's wall time
    includes the time it waited for a CPU, and it missed by no more than the machine's
    state can stretch a wall time (:func:`judge.noise.contended_stretch`: the
    calibration's stretch, with the floor's contended margin). None where the failure
    stands: a quiet measurement, a budget on CPU time or counts, or a miss beyond it."""
    stretch = contended_stretch(measured.profile.conditions)
    b, value = result.budget, result.value
    if stretch is None or value is None or clock_of(b.metric) != "wall" or b.limit <= 0:
        return None
    within = value <= b.limit * stretch if b.kind == "max" else value * stretch >= b.limit
    if not within:
        return None
    return (
        f"busy machine ({'; '.join(measured.busy)}), within the x{stretch:.2g} it can "
        "stretch a wall time"
    )


def _budget_again(first: BudgetResult, again: Assessment) -> str:
    """A timing budget as measured the first time and again: ``latency_p99_ms 95.1
    (first 107.6, budget <= 100)``."""
    b = first.budget
    second = next((r.value for r in again.budgets if r.budget.keyword == b.keyword), None)
    op = ">=" if b.kind == "min" else "<="
    now = "not measured" if second is None else f"{second:.4g}"
    return f"{b.metric} {now} (first {first.value:.4g}, budget {op} {b.limit:g})"


def replace_confirmation(verdict: Assessment, text: str) -> Assessment:
    """``verdict`` with its confirmation's text replaced."""
    return replace(verdict, confirmation={**(verdict.confirmation or {}), "text": text})


def with_process_confirmation(
    first: Assessment,
    fresh: Sequence[Assessment],
    baseline: Profile,
    *,
    failed: str | None = None,
) -> Assessment:
    """The verdict once a suspected timing regression was measured in fresh processes.

    Each suspected timing metric is judged over processes
    (:func:`judge.between_processes.judge_processes`): the fresh processes' values, each
    against its own noise floor, against the baseline's process values (its one value
    where it was recorded in one process). The test fails on the metrics that hold;
    when none does, the first verdict stands with its timing regressions inconclusive.
    ``failed``: why fewer processes than asked for measured (they still count, if any).
    """
    from ..judge.between_processes import judge_processes

    suspects = {c.metric: c for c in first.regressions if clock_of(c.metric) is not None}
    judged = []
    for metric, change in suspects.items():
        values = {id(a): _compared_value(a, metric) for a in fresh}
        runs = [a for a in fresh if (values[id(a)] or 0) > 0]
        if not runs:
            continue
        factors = [
            (a.noise or NoiseFloor(None, None, (), ())).allowed_ratio(metric, 0.0) for a in runs
        ]
        judged.append(
            judge_processes(
                metric,
                [float(values[id(a)] or 0) for a in runs],
                factors,
                baseline.processes.get(metric) or (change.baseline,),
                change.tolerance,
            )
        )
    held = [j.metric for j in judged if j.held]
    said = [f"{j.metric} {j.reason}" for j in judged]
    # A timing budget holds where it failed in every fresh process that measured it (one
    # that met it shows the machine can) and not only where a busy machine explains it.
    budgets_held = []
    for result in first.timing_budget_failures:
        keyword = result.budget.keyword
        measured = [
            r.value
            for a in fresh
            for r in a.budgets
            if r.budget.keyword == keyword and r.value is not None
        ]
        shown = ", ".join(f"{v:.4g}" for v in measured) or "not measured"
        holds, busy = budget_holds(result, first, fresh)
        if holds:
            budgets_held.append(keyword)
            verdict = "failed in each"
        elif busy is not None:
            verdict = f"failed in each, each time on a {busy}"
        else:
            verdict = "met in at least one"
        said.append(
            f"{result.budget.metric} {shown} in {len(measured)} fresh process"
            f"{'es' if len(measured) != 1 else ''} (first {result.value:.4g}): {verdict}"
        )
    parts = "; ".join(said) or "no fresh process measured the suspected metrics"
    if failed:
        parts += f" ({failed})"
    confirmed = held or budgets_held
    text = f"confirmed: {parts}" if confirmed else f"not confirmed: {parts}"
    record = {
        "held": bool(confirmed),
        "held_metrics": held,
        "budgets_held": budgets_held,
        "processes": len(fresh),
        "first": {m: c.delta for m, c in suspects.items()},
        "second": {j.metric: j.change for j in judged},
        "judgements": [j.to_dict() for j in judged],
        "text": text,
    }
    return replace(first, confirmation=record)


def _compared_value(verdict: Assessment, metric: str) -> float | None:
    """``metric``'s value in ``verdict`` as its comparison saw it (stages included)."""
    change = verdict.comparison.get(metric) if verdict.comparison is not None else None
    if change is not None:
        return float(change.current)
    value = verdict.metrics.get(metric)
    return None if value is None else float(value)


def _pct(delta: float | None) -> str:
    return "not compared" if delta is None else f"{delta:+.1%}"


def assess_profile(
    profile: Profile,
    *,
    extra_metrics: Mapping[str, float] | None = None,
    extra_findings: Sequence[Any] = (),
) -> Assessment:
    """A Profile judged on its own: no budgets, no baseline (``inferperf analyse``)."""
    metrics = {**profile_metrics(profile), **(extra_metrics or {})}
    return Assessment(
        key=profile.name,
        profile=profile,
        metrics=metrics,
        budgets=(),
        comparison=None,
        baseline_note="",
        diagnosis=diagnose_profile(profile, metrics, extra_findings),
    )


def diagnose_profile(
    profile: Profile, metrics: Mapping[str, float], extra_findings: Sequence[Any] = ()
) -> Diagnosis:
    """The classifier's diagnosis of ``metrics`` measured as ``profile`` was."""
    return diagnose_in(rule_context(profile), metrics, extra_findings=extra_findings)
