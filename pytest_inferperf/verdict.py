"""The Verdict: budgets + baseline comparison + diagnosis for one Profile.

Owns: judging one Profile against its ``perf`` marker and its baseline,
deciding pass / fail / not checkable, the change against the baseline with
what it is blamed on (:func:`change.explain_profiles`, attached to the
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
from .metrics import METRICS, profile_metrics
from .pmu.events import SOFTWARE_EVENTS
from .pmu.trust import unjudgeable_metrics
from .profile import Profile

# Metrics whose change against the baseline fails a test by default. They are
# judged on per-repeat distributions (a rank test), so noise alone rarely trips
# them. Percentiles, tail ratios, OS event rates and memory vary run to run on
# shared machines: they are reported, and gate only when a test names them in
# ``tolerance={...}`` (or sets a budget on them).
GATED_METRICS = frozenset(
    name for name, m in METRICS.items()
    if any(e not in SOFTWARE_EVENTS for e in m.inputs)
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
    def regressions(self) -> tuple:
        """Credible regressions beyond tolerance in a gated metric."""
        if self.comparison is None:
            return ()
        return tuple(c for c in self.comparison.regressions if c.metric in self.gated)

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
        )

    @property
    def nothing_checked(self) -> bool:
        """Budgets were asked for, none could be checked, and no baseline was compared."""
        return bool(self.budgets) and len(self.unchecked) == len(self.budgets) and (
            self.comparison is None or not self.comparison.changes
        )

    @property
    def status(self) -> str:
        if self.failed:
            return "FAILED"
        if self.nothing_checked:
            return "not checked"
        notes = []
        if self.stale:
            notes.append("baseline stale")
        if self.unchecked:
            notes.append(f"{len(self.unchecked)} budget{'s' if len(self.unchecked) > 1 else ''} "
                         "not checked")
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
) -> Verdict:
    """Judge ``profile``; ``extra_*`` are what the user's hooks added."""
    metrics = {**profile_metrics(profile), **(extra_metrics or {})}
    budgets = check_budgets(spec.budgets, metrics, profile.unavailable,
                            not_judged=unjudgeable_metrics(profile.machine, profile.unavailable))
    comparison = None
    if baseline is not None:
        try:
            comparison = compare_profiles(profile, baseline, tolerances=spec.tolerances())
        except IncomparableError as exc:
            baseline_note = f"not compared: {exc}"
    gated = GATED_METRICS | frozenset(
        spec.tolerance if isinstance(spec.tolerance, Mapping) else ()
    )
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
        change = explain_profiles(profile, baseline, metrics=metrics,
                                  baseline_metrics=profile_metrics(baseline),
                                  comparison=comparison)
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
    )


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
    if verdict.regressions:
        worst = max(verdict.regressions, key=lambda c: abs(c.delta))
        return f"REGRESSED {worst.metric} {worst.delta:+.1%}{_blamed_on(verdict.change)}"
    if verdict.stale:
        best = max(verdict.stale, key=lambda c: abs(c.delta))
        return f"stale: {best.metric} {best.delta:+.1%}"
    key = [c for c in comparison.changes if c.metric in HEADLINE_METRICS]
    movers = sorted(key, key=lambda c: -abs(c.delta))[:1] or list(comparison.movers(1))
    if not movers:
        return "nothing to compare"
    return f"ok ({movers[0].metric} {movers[0].delta:+.1%})"


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
HEADLINE_METRICS = ("ipc", "instructions_per_call", "cpu_ms_per_call", "latency_mean_ms",
                    "l1_miss", "l2_miss", "branch_miss")


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
