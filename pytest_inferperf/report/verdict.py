"""The text of one Assessment: the failure block, the summary cell, the plain record.

Owns: :func:`failure_text` (what failed, by how much, and why: the block a user sees
under a failed test and from ``inferperf validate``), :func:`change_summary` (the one
cell saying how a run compares with its baseline), :func:`headline` (the diagnosis
in a few words), :func:`missing_baseline_text` (why a test without a baseline fails
under ``--inferperf-require-baseline``) and :func:`record_of` (the plain JSON record of
an Assessment that travels from an xdist worker to the controller and that the run's summary table,
JSON, Markdown and HTML are drawn from). Moved here from the old top-level ``verdict`` module.

Must not: judge, diagnose or compute metrics: everything it writes is read from the
Assessment.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.metrics import METRICS
from ..core.numbers import number
from ..diagnose.classify import diagnosis_as_dict
from ..judge.noise import clock_of
from ..measure.stages import metric_label
from .diagnosis import render
from .headline import diagnosis_headline, names

if TYPE_CHECKING:
    from ..diagnose.assessment import Assessment
    from ..diagnose.change import ChangeExplanation
    from ..diagnose.classify import Diagnosis


def record_of(verdict: Assessment) -> dict[str, Any]:
    """What travels from an xdist worker to the controller (plain JSON types)."""
    change = verdict.change
    return {
        "key": verdict.key,
        "status": verdict.status,
        "failed": verdict.failed,
        "nothing_checked": verdict.nothing_checked,
        "metrics": dict(verdict.metrics),
        "baseline_note": verdict.baseline_note,
        "baseline_error": verdict.baseline_error,
        "change": change_summary(verdict),
        "unchecked": [b.describe() for b in verdict.unchecked],
        "unavailable": verdict.profile.unavailable,
        "diagnosis": headline(verdict.diagnosis),
        # The whole diagnosis as judged here, so the controller's HTML never re-diagnoses.
        "diagnosis_detail": None
        if verdict.diagnosis is None
        else diagnosis_as_dict(verdict.diagnosis),
        "change_explanation": None if change is None else change.to_dict(),
        "profile": verdict.profile.to_dict(),
        "artifacts": dict(verdict.artifacts),
        "artifact_notes": dict(verdict.artifact_notes),
        "verdict": verdict.outcome,
        "inconclusive": list(verdict.inconclusive),
        "carried_by": verdict.carried_by,
        "confirmation": None if verdict.confirmation is None else dict(verdict.confirmation),
        "noise_floor": None if verdict.noise is None else verdict.noise.to_dict(),
        "busy": list(verdict.busy),
        "baseline_busy": list(verdict.baseline_busy),
        "stages": [row.to_dict() for row in verdict.stages],
    }


def headline(diagnosis: Diagnosis | None) -> str:
    """``"Memory-bound: L1D (72%)"``: the primary finding in a few words ("" for none)."""
    return diagnosis_headline(diagnosis)


def change_summary(verdict: Assessment) -> str:
    """One cell for the summary table: how this run compares with its baseline."""
    if verdict.baseline_error:
        return "baseline unreadable"
    comparison = verdict.comparison
    if comparison is None:
        return verdict.baseline_note
    busy = " [baseline recorded on a busy machine]" if verdict.baseline_busy else ""
    if verdict.regressions and not verdict.compare_fails:  # --update-baselines: accepted
        worst = max(verdict.regressions, key=lambda c: abs(c.delta))
        return f"accepted: {metric_label(worst.metric)} {worst.delta:+.1%} (new baseline)"
    if verdict.regressions:
        worst = max(verdict.regressions, key=lambda c: abs(c.delta))
        held = (
            ", confirmed"
            if str((verdict.confirmation or {}).get("text", "")).startswith("confirmed")
            else ""
        )
        return (
            f"REGRESSED {metric_label(worst.metric)} {worst.delta:+.1%}"
            f"{_blamed_on(verdict.change)}{held}{busy}"
        )
    timing = [c for c in verdict.suspected if clock_of(c.metric) is not None]
    if verdict.inconclusive and verdict.compare_fails and not timing:
        budget = next(iter(verdict.unconfirmed_budgets), None)
        if budget is not None:  # a timing budget that failed once, then was met
            return f"inconclusive: {budget.budget.label} budget (not confirmed){busy}"
    if verdict.inconclusive and verdict.compare_fails and timing:
        worst = max(timing, key=lambda c: abs(c.delta))
        why = (
            "not confirmed"
            if verdict.unconfirmed
            else "thread pool: latency carries it"
            if verdict.noise is not None
            and verdict.noise.pooled
            and clock_of(worst.metric) == "cpu"
            else f"machine {verdict.noise.factor(worst.metric):.2g}x slower"
            if verdict.noise is not None and verdict.noise.factor(worst.metric) > 1
            else "busy machine"
        )
        settings = _settings_note(verdict.change)
        return (
            f"inconclusive: {metric_label(worst.metric)} {worst.delta:+.1%} ({why}){settings}{busy}"
        )
    if verdict.stale:
        best = max(verdict.stale, key=lambda c: abs(c.delta))
        return f"stale: {best.metric} {best.delta:+.1%}{_settings_note(verdict.change)}{busy}"
    key = [c for c in comparison.changes if c.metric in names("mover")]
    movers = sorted(key, key=lambda c: -abs(c.delta))[:1] or list(comparison.movers(1))
    if not movers:
        return "nothing to compare"
    return f"ok ({movers[0].metric} {movers[0].delta:+.1%}){_settings_note(verdict.change)}{busy}"


def _blamed_on(change: ChangeExplanation | None) -> str:
    """`` (stage preprocess)``: the first named cause, in a few words; a setting or
    input that differs from the baseline's comes first (`` (settings changed: intra-op
    threads 2 -> 1; stage preprocess)``)."""
    if change is None or change.slowdown is None or not change.slowdown.credible:
        return _settings_note(change)
    settings = f"settings changed: {change.settings_brief}" if change.settings else ""
    if change.unexplained:
        return f" ({settings})" if settings else " (unexplained)"
    cause = change.causes[0]
    what = {"stage": "stage ", "op_type": "op type "}.get(cause.kind, "")
    named = f"{what}{cause.category or cause.name}"
    return f" ({settings}; {named})" if settings else f" ({named})"


def _settings_note(change: ChangeExplanation | None) -> str:
    """`` [settings changed: intra-op threads 2 -> 1]``, or "" when none differs."""
    return f" [settings changed: {change.settings_brief}]" if change and change.settings else ""


def failure_text(verdict: Assessment) -> str:
    """The block shown for a failed perf test: what failed, by how much, and why."""
    profile = verdict.profile
    lines = [f"inferperf: {verdict.key} on {profile.machine_class} (backend {profile.backend})"]
    for result in verdict.budget_failures:
        lines.append(f"  budget   {result.describe()}")
    if verdict.baseline_error:
        lines.append(f"  baseline {verdict.baseline_error}")
    if verdict.compare_fails:
        for change in verdict.regressions:
            unit = METRICS[change.metric].unit if change.metric in METRICS else "ms"  # a stage
            lines.append(
                f"  baseline {metric_label(change.metric)}: {number(change.baseline)} -> "
                f"{number(change.current)}"
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
                f"  stale    {change.metric}: {number(change.baseline)} -> "
                f"{number(change.current)} "
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


def missing_baseline_text(key: str, machine_class: str, backend: str, path: str) -> str:
    """The one paragraph a test fails with under ``--inferperf-require-baseline`` when
    ``path``, the baseline of ``key`` for this machine class and backend, does not exist:
    what was expected where, and the ways to record it on a machine of that class."""
    return (
        f"inferperf: {key} has no baseline for machine class {machine_class} (backend "
        f"{backend}) and --inferperf-require-baseline asks for one: expected {path}. "
        "Nothing was compared. Record it on a machine of this class, with this backend: "
        "`pytest --inferperf --update-baselines` there, the baseline workflow "
        "(examples/ci/github/inferperf-baselines.yml, docs/ci.md) run on a runner of "
        "this class, or `inferperf accept` on this run's report folder "
        "(--inferperf-report) to take what it measured; then commit the file."
    )
