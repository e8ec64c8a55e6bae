"""The Verdict: budgets + baseline comparison + diagnosis for one Profile.

Owns: judging one Profile against its ``perf`` marker and its baseline,
deciding the outcome - passed / regressed / inconclusive (a timing change the noise
floor cannot tell from the machine's state, ``noise``), failed under ``strict`` - or
not checkable, which metric carried the verdict (counted instructions before timings),
folding a re-measurement into the verdict (:func:`with_confirmation`), the change
against the baseline with what it is blamed on (:func:`change.explain_profiles`, attached to the
diagnosis), the one-cell change summary, and the readable failure block a
user sees. Pure: it is handed the baseline (or the error loading it); it never
reads files or measures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .budgets import BudgetResult, PerfSpec, check_budgets
from .change import ChangeExplanation, explain_profiles
from .classify import Diagnosis, diagnose, render
from .compare import Comparison, IncomparableError, compare_profiles
from .conditions import busy_reasons
from .metrics import METRICS, profile_metrics
from .noise import TIMING_CLOCK, NoiseFloor, TimingJudgement, floor_of, judge_timing
from .pmu.events import SOFTWARE_EVENTS
from .pmu.trust import unjudgeable_metrics
from .profile import Profile

# Metrics whose change against the baseline fails a test by default. They are
# judged on per-repeat distributions (a rank test), so noise alone rarely trips
# them. Percentiles, tail ratios, OS event rates and memory vary run to run on
# shared machines: they are reported, and gate only when a test names them in
# ``tolerance={...}`` (or sets a budget on them).
GATED_METRICS = frozenset(
    name for name, m in METRICS.items() if any(e not in SOFTWARE_EVENTS for e in m.inputs)
) | {"cpu_ms_per_call", "latency_mean_ms"}


@dataclass(frozen=True)
class Verdict:
    """What one measured workload of a test was judged to be."""

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
        return tuple(b for b in self.budgets if b.failed)

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
        return tuple(c for c in self.suspected if c.metric not in TIMING_CLOCK)

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
            if c.metric in TIMING_CLOCK
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
        return tuple(
            c for c in self.suspected if c.metric not in TIMING_CLOCK or c.metric in beyond
        )

    @property
    def inconclusive(self) -> tuple[str, ...]:
        """Why a timing change can be neither passed nor failed (empty: it can)."""
        out = [
            f"{j.metric}: {j.reason}" for j in self.timing_judgements if j.outcome == "inconclusive"
        ]
        if self.unconfirmed and self.confirmation is not None:
            out.append(str(self.confirmation.get("text")))
        return tuple(out)

    @property
    def needs_confirmation(self) -> bool:
        """A timing regression alone would fail this test: measure it again first."""
        return bool(
            self.compare_fails
            and self.confirmation is None
            and self.regressions
            and not self.counted_regressions
            and not self.budget_failures
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
            return f"{worst.metric} (timing, beyond the noise floor)"
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

    def summary_dict(self) -> dict:
        """What travels from an xdist worker to the controller (plain JSON types)."""
        return {
            "key": self.key,
            "status": self.status,
            "failed": self.failed,
            "nothing_checked": self.nothing_checked,
            "metrics": dict(self.metrics),
            "baseline_note": self.baseline_note,
            "baseline_error": self.baseline_error,
            "change": change_summary(self),
            "unchecked": [b.describe() for b in self.unchecked],
            "unavailable": self.profile.unavailable,
            "diagnosis": _headline(self.diagnosis),
            "change_explanation": None if self.change is None else self.change.to_dict(),
            "profile": self.profile.to_dict(),
            "artifacts": dict(self.artifacts),
            "artifact_notes": dict(self.artifact_notes),
            "verdict": self.outcome,
            "inconclusive": list(self.inconclusive),
            "carried_by": self.carried_by,
            "confirmation": None if self.confirmation is None else dict(self.confirmation),
            "noise_floor": None if self.noise is None else self.noise.to_dict(),
            "busy": list(self.busy),
            "baseline_busy": list(self.baseline_busy),
        }


def judge(
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
) -> Verdict:
    """Judge ``profile``; ``extra_*`` are what the user's hooks added.

    ``strict``: an inconclusive change (within the noise floor) fails the test.
    """
    metrics = {**profile_metrics(profile), **(extra_metrics or {})}
    budgets = check_budgets(
        spec.budgets,
        metrics,
        profile.unavailable,
        not_judged=unjudgeable_metrics(profile.machine, profile.unavailable),
    )
    comparison = None
    if baseline is not None:
        try:
            comparison = compare_profiles(profile, baseline, tolerances=spec.tolerances())
        except IncomparableError as exc:
            baseline_note = f"not compared: {exc}"
    gated = GATED_METRICS | frozenset(spec.tolerance if isinstance(spec.tolerance, Mapping) else ())
    cpu = profile.machine.get("cpu") or {}
    diagnosis = diagnose(
        metrics,
        core=str(cpu.get("core_slug", "")),
        unavailable=profile.unavailable,
        session=profile.session,
        cpu_count=cpu.get("cpu_count"),
        extra_findings=extra_findings,
    )
    if comparison is not None and baseline is not None:
        change = explain_profiles(
            profile,
            baseline,
            metrics=metrics,
            baseline_metrics=profile_metrics(baseline),
            comparison=comparison,
        )
        diagnosis = replace(diagnosis, change=change)
    return Verdict(
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
        else floor_of(profile.conditions, baseline.conditions),
        strict=strict,
    )


def with_confirmation(first: Verdict, again: Verdict, *, pause_s: float) -> Verdict:
    """The verdict once a suspected timing regression was measured again.

    It fails only if the same metric regressed beyond the noise floor both times:
    then the second measurement's verdict stands, marked confirmed. Otherwise the
    first verdict stands with its timing regressions turned inconclusive.
    """
    suspects = {c.metric: c for c in first.regressions if c.metric in TIMING_CLOCK}
    repeated = {c.metric: c for c in again.regressions if c.metric in TIMING_CLOCK}
    held = [m for m in suspects if m in repeated]
    shown = held or list(suspects)
    second = {
        m: (
            again.comparison.get(m).delta
            if again.comparison is not None and again.comparison.get(m) is not None
            else None
        )
        for m in shown
    }
    parts = ", ".join(f"{m} {_pct(second[m])} (first {suspects[m].delta:+.1%})" for m in shown)
    if held:
        text = f"confirmed: measured again after a {pause_s:g} s pause: {parts}"
        base = again
    else:
        text = (
            f"not confirmed: measured again after a {pause_s:g} s pause: {parts}; "
            "a change that does not hold is the machine, not the code"
        )
        base = first
    record = {
        "held": bool(held),
        "pause_s": pause_s,
        "first": {m: suspects[m].delta for m in shown},
        "second": second,
        "text": text,
    }
    return replace(base, confirmation=record)


def _pct(delta: float | None) -> str:
    return "not compared" if delta is None else f"{delta:+.1%}"


def _headline(diagnosis: Diagnosis | None) -> str:
    if diagnosis is None or diagnosis.primary is None:
        return ""
    return f"{diagnosis.primary.title} ({diagnosis.primary.confidence:.0%})"


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def change_summary(verdict: Verdict) -> str:
    """One cell for the summary table: how this run compares with its baseline."""
    if verdict.baseline_error:
        return "baseline unreadable"
    comparison = verdict.comparison
    if comparison is None:
        return verdict.baseline_note
    busy = " [baseline recorded on a busy machine]" if verdict.baseline_busy else ""
    if verdict.regressions:
        worst = max(verdict.regressions, key=lambda c: abs(c.delta))
        held = (
            ", confirmed"
            if str((verdict.confirmation or {}).get("text", "")).startswith("confirmed")
            else ""
        )
        return (
            f"REGRESSED {worst.metric} {worst.delta:+.1%}{_blamed_on(verdict.change)}{held}{busy}"
        )
    if verdict.inconclusive and verdict.compare_fails:
        worst = max(
            (c for c in verdict.suspected if c.metric in TIMING_CLOCK), key=lambda c: abs(c.delta)
        )
        why = (
            "not confirmed"
            if verdict.unconfirmed
            else f"machine {verdict.noise.factor(worst.metric):.2g}x slower"
            if verdict.noise is not None and verdict.noise.factor(worst.metric) > 1
            else "busy machine"
        )
        return f"inconclusive: {worst.metric} {worst.delta:+.1%} ({why}){busy}"
    if verdict.stale:
        best = max(verdict.stale, key=lambda c: abs(c.delta))
        return f"stale: {best.metric} {best.delta:+.1%}{busy}"
    key = [c for c in comparison.changes if c.metric in HEADLINE_METRICS]
    movers = sorted(key, key=lambda c: -abs(c.delta))[:1] or list(comparison.movers(1))
    if not movers:
        return "nothing to compare"
    return f"ok ({movers[0].metric} {movers[0].delta:+.1%}){busy}"


def _blamed_on(change: ChangeExplanation | None) -> str:
    """`` (stage preprocess)``: the first named cause, in a few words."""
    if change is None or change.slowdown is None or not change.slowdown.credible:
        return ""
    if change.unexplained:
        return " (unexplained)"
    cause = change.causes[0]
    what = {"stage": "stage ", "op_type": "op type "}.get(cause.kind, "")
    return f" ({what}{cause.category or cause.name})"


# The metrics a reader looks at first; the summary cell shows the largest of these.
HEADLINE_METRICS = (
    "ipc",
    "instructions_per_call",
    "cpu_ms_per_call",
    "latency_mean_ms",
    "l1_miss",
    "l2_miss",
    "branch_miss",
)


def failure_text(verdict: Verdict) -> str:
    """The block shown for a failed perf test: what failed, by how much, and why."""
    profile = verdict.profile
    lines = [f"inferperf: {verdict.key} on {profile.machine_class} (backend {profile.backend})"]
    for result in verdict.budget_failures:
        lines.append(f"  budget   {result.describe()}")
    if verdict.baseline_error:
        lines.append(f"  baseline {verdict.baseline_error}")
    if verdict.compare_fails:
        for change in verdict.regressions:
            unit = METRICS[change.metric].unit
            lines.append(
                f"  baseline {change.metric}: {_fmt(change.baseline)} -> {_fmt(change.current)}"
                f"{' ' + unit if unit else ''} ({change.delta:+.1%}, tolerance "
                f"{change.tolerance:.0%}; {change.detail})"
            )
        for judgement in verdict.timing_judgements:
            if judgement.metric in {c.metric for c in verdict.regressions}:
                lines.append(f"  noise    {judgement.reason}")
        if verdict.strict:
            for reason in verdict.inconclusive:
                lines.append(f"  inconclusive (fails under --inferperf-strict) {reason}")
        if verdict.confirmation is not None:
            lines.append(f"  {verdict.confirmation['text']}")
        if verdict.carried_by and (verdict.regressions or verdict.inconclusive):
            lines.append(f"  verdict carried by {verdict.carried_by}")
    if verdict.baseline_busy:
        lines.append(
            f"  baseline recorded on a busy machine ({'; '.join(verdict.baseline_busy)})"
            ": its timings are slow; re-record it on a quiet machine"
        )
    if verdict.stale_fails:
        for change in verdict.stale:
            lines.append(
                f"  stale    {change.metric}: {_fmt(change.baseline)} -> {_fmt(change.current)} "
                f"({change.delta:+.1%}): baseline stale, run with --update-baselines to accept"
            )
    for result in verdict.unchecked:
        lines.append(f"  skipped  {result.describe()}")
    if verdict.diagnosis is not None:
        lines.append("")
        lines.append(render(verdict.diagnosis, verbose=verdict.verbose))
    if verdict.artifacts or verdict.artifact_notes:
        lines.append("")
    for kind, path in verdict.artifacts.items():
        lines.append(f"  flamegraph {kind}: {path}")
    for kind, note in verdict.artifact_notes.items():
        lines.append(f"  flamegraph {kind}: {note}")
    return "\n".join(lines)
