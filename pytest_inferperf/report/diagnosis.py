"""A diagnosis as text: the short block under a failure and the full reasoning.

Owns: :func:`render` (moved here from ``classify``), the text of one
:class:`~pytest_inferperf.diagnose.classify.Diagnosis`: the primary finding with its evidence,
its estimated share of cycles (with the formula) and first recommendations, the
change against the baseline, notes, what else fired with what it was ranked by
(share, or confidence), what fired but is too small to matter and what could not be
judged; with ``verbose`` every finding's reasoning and the largest metric moves.

Must not: diagnose (``classify`` does, once, inside the Assessment) or compute metrics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..diagnose.change import MATERIAL_SHARE, metric_lines, part_lines
from ..diagnose.classify import LOW_IPC_ALONE, SPIN_NOT_RULED_OUT
from ..diagnose.thresholds_by_core import CATEGORIES

if TYPE_CHECKING:
    from ..diagnose.classify import Diagnosis, Finding


def _short_source(source: str) -> str:
    return source.split(":", 1)[0].split(" (", 1)[0]


def _evidence_line(finding: Finding, limit: int = 3) -> str:
    items = [f"{e.line()} ({_short_source(e.source)})" for e in finding.evidence[:limit]]
    return "; ".join(items)


def _ranked(finding: Finding) -> str:
    """``branch_misprediction ~3.2% of cycles`` where it has a share, else its
    confidence (``thread_spinning 0.85``): what it was ranked by."""
    if finding.share is not None:
        return f"{finding.category} {finding.share.short}"
    return f"{finding.category} {finding.confidence:.2f}"


def _nothing_judged(diagnosis: Diagnosis) -> bool:
    """Whether no category of one run could be judged (``extra_work`` needs a baseline)."""
    return set(CATEGORIES) - {"extra_work"} <= set(diagnosis.not_judged)


def render(diagnosis: Diagnosis, verbose: bool = False) -> str:
    """The diagnosis as text: short by default, the full reasoning with ``verbose``."""
    lines: list[str] = []
    head = f"Diagnosis ({diagnosis.core or 'unknown core'})"
    primary = diagnosis.primary
    if primary is None:
        ipc_reason = diagnosis.not_judged.get("ipc_collapse", "")
        if LOW_IPC_ALONE in ipc_reason and not diagnosis.small:
            nothing = (
                "no counted cause explains the IPC below the core's width, and what "
                "limits it was not counted (ipc_collapse not judged)"
            )
        elif SPIN_NOT_RULED_OUT in ipc_reason and not diagnosis.small:
            nothing = (
                "no counted cause explains the IPC below the core's width, and threads "
                "spin-waiting are not ruled out (ipc_collapse not judged)"
            )
        elif _nothing_judged(diagnosis):
            nothing = "nothing could be judged from what was counted (-v for why)"
        else:
            nothing = (
                f"no cause that can take {MATERIAL_SHARE:.0%} of the call"
                if diagnosis.small
                else "no threshold of concern crossed"
            )
        lines.append(f"{head}: {nothing}.")
    else:
        lines.append(
            f"{head}: {primary.title} [{primary.category}], confidence {primary.confidence:.2f}"
        )
        lines.append(f"  evidence: {_evidence_line(primary)}")
        if primary.share is not None:
            lines.append(f"  share: {primary.share.text}")
        if primary.cost is not None and (verbose or primary.share is None):
            # the share is the estimate; the cost is the upper bound that made it material
            lines.append(f"  cost: {primary.cost.text}")
        recs = primary.recommendations if verbose else primary.recommendations[:2]
        for i, rec in enumerate(recs, 1):
            lines.append(f"  {'try' if i == 1 else '   '} {i}. {rec}")
    if diagnosis.change is not None:
        lines.append(f"  change vs baseline: {diagnosis.change.summary}")
        lines.extend(f"    {line}" for line in part_lines(diagnosis.change))
    lines.extend(f"  note: {note}" for note in diagnosis.notes)
    if not verbose:
        if diagnosis.secondary:
            others = ", ".join(_ranked(f) for f in diagnosis.secondary)
            lines.append(f"  also: {others}")
        if diagnosis.small:
            small = ", ".join(f.category for f in diagnosis.small)
            lines.append(f"  present but small: {small} (-v for why)")
        if diagnosis.not_judged:
            lines.append(f"  not judged: {', '.join(diagnosis.not_judged)} (-v for why)")
        return "\n".join(lines)
    if primary is not None:
        lines.append("")
        lines.append(f"Why {primary.category}: {primary.explanation}")
    for finding in diagnosis.secondary:
        lines.append("")
        share = f", {finding.share.short}" if finding.share else ""
        lines.append(
            f"Also {finding.title} [{finding.category}], confidence {finding.confidence:.2f}"
            + share
        )
        if finding.explanation:
            lines.append(f"  {finding.explanation}")
        else:
            lines.extend(f"  {ev.line()}  ({ev.source})" for ev in finding.evidence)
        for i, rec in enumerate(finding.recommendations, 1):
            lines.append(f"  {i}. {rec}")
    if diagnosis.small:
        lines.append("")
        lines.append(
            f"Present but small (their events can cost less than {MATERIAL_SHARE:.0%} of the call):"
        )
        for finding in diagnosis.small:
            cost = finding.cost.text if finding.cost is not None else ""
            lines.append(f"  {finding.title} [{finding.category}]: {cost}")
            lines.append(f"    {_evidence_line(finding)}")
    if diagnosis.not_judged:
        lines.append("")
        lines.append("Not judged:")
        for category, why in diagnosis.not_judged.items():
            lines.append(f"  {category}: {why}")
    if diagnosis.change is not None and diagnosis.change.moved:
        lines.append("")
        lines.append(
            "Change against the baseline (largest relative moves; noise: within "
            "the run-to-run spread; share: what the move can cost at most):"
        )
        lines.extend(f"  {line}" for line in metric_lines(diagnosis.change))
    return "\n".join(lines)
