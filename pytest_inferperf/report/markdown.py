"""Markdown summaries of ``analyse``, ``validate`` and ``compare`` (GitHub job summaries).

Owns: the short Markdown rendering of one assessed Profile, of a validation verdict and of a
side-by-side comparison; escaping every name for Markdown tables (``|``, ``<``, ``>``,
backticks, brackets, backslashes, ``&`` and newlines); appending to the file named by
``$GITHUB_STEP_SUMMARY`` when that variable is set.

Must not: measure, judge or compute metrics (they are read from the Assessment).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.metrics import METRICS
from . import text as shared
from .headline import names

if TYPE_CHECKING:
    from ..cli.compare import SideBySide
    from ..diagnose.assessment import Assessment

ENV_VAR = "GITHUB_STEP_SUMMARY"
KEY_METRICS = names("summary")  # the one headline list, its summary view
_ESCAPES = {
    "\\": "\\\\",
    "|": "\\|",
    "`": "\\`",
    "[": "\\[",
    "]": "\\]",
    "*": "\\*",
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    "\r": " ",
    "\n": " ",
}


def md(value: Any) -> str:
    """Any value as inline Markdown text, safe inside a table cell."""
    return "".join(_ESCAPES.get(ch, ch) for ch in str(value))


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = [
        "| " + " | ".join(md(h) for h in headers) + " |",
        "|" + "|".join("---" for _ in headers) + "|",
    ]
    lines += ["| " + " | ".join(md(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def render_profile(assessment: Assessment) -> str:
    """A job-summary section for one analysed Profile, read from its Assessment."""
    profile, metrics, diagnosis = assessment.profile, assessment.metrics, assessment.diagnosis
    lines = [f"### inferperf analyse: {md(profile.name)}", ""]
    lines += [f"- **{md(k)}**: {md(v)}" for k, v in shared.facts(profile)]
    groups = shared.not_counted(profile)
    if groups:
        lines.append(
            "- **not counted**: "
            + "; ".join(f"{md(', '.join(ev))} ({md(reason)})" for reason, ev in groups.items())
        )
    lines += [
        "",
        _table(
            ("metric", "value", "unit"),
            [(n, shared.fmt(metrics[n]), METRICS[n].unit) for n in KEY_METRICS if n in metrics],
        ),
    ]
    ops = shared.top_operators(profile, 5)
    if ops:
        lines += [
            "",
            _table(
                ("operator", "type", "µs/call", "share"),
                [
                    (
                        o.get("node"),
                        o.get("op_type"),
                        shared.fmt(o.get("mean_us")),
                        f"{float(o.get('share') or 0):.1%}",
                    )
                    for o in ops
                ],
            ),
        ]
    primary = getattr(diagnosis, "primary", None)
    if primary is not None:
        lines += ["", f"**Diagnosis**: {md(primary.title)} (confidence {primary.confidence:.2f})"]
    return "\n".join(lines) + "\n"


def render_validation(label: str, baseline: str, verdict: Any) -> str:
    """The verdict of ``validate``: ok or what failed, one bullet per finding."""
    from .verdict import change_summary, failure_text

    status = (
        "FAILED"
        if verdict.failed
        else ("inconclusive" if verdict.outcome == "inconclusive" else "ok")
    )
    lines = [
        f"### inferperf validate: {md(label)}: {status}",
        "",
        f"- **baseline**: {md(baseline)}",
        f"- **against it**: {md(change_summary(verdict))}",
    ]
    if verdict.carried_by:
        lines.append(f"- **carried by**: {md(verdict.carried_by)}")
    lines += [f"- **inconclusive**: {md(reason)}" for reason in verdict.inconclusive]
    if verdict.failed:
        lines += [
            f"- {md(line.strip())}"
            for line in failure_text(verdict).splitlines()[1:]
            if line.strip()
        ]
    return "\n".join(lines) + "\n"


def render_comparison(side: SideBySide) -> str:
    """Key metrics of every compared variant, with deltas against the first."""
    labels = side.labels
    rows = []
    wanted = {r.metric: r for r in side.metrics}
    for name in KEY_METRICS:
        row = wanted.get(name)
        if row is None:
            continue
        rows.append(
            [
                name,
                *(
                    shared.fmt(v) + (f" ({shared.pct(d)})" if d is not None else "")
                    for v, d in zip(row.values, row.deltas, strict=True)
                ),
            ]
        )
    if side.quality:
        rows.append(["pareto front", *("yes" if x in side.front else "no" for x in labels)])
    lines = [
        f"### inferperf compare: {md(', '.join(labels))}",
        "",
        _table(("metric", *labels), rows),
    ]
    for label, change in side.regressions:
        lines.append(
            f"- **REGRESSED** {md(label)}: {md(change.metric)} {md(shared.pct(change.delta))}"
        )
    for entry, verdict in zip(side.entries[1:], side.verdicts[1:], strict=True):
        change = verdict.diagnosis.change if verdict is not None and verdict.diagnosis else None
        if change is not None:
            lines.append(f"- {md(entry.label)} vs {md(labels[0])}: {md(change.summary)}")
    return "\n".join(lines) + "\n"


def append_step_summary(markdown: str, env: Mapping[str, str] | None = None) -> Path | None:
    """Append to ``$GITHUB_STEP_SUMMARY`` when set; the file written, else None.

    A summary that cannot be written is not an error of the measurement: it is skipped.
    """
    target = (os.environ if env is None else env).get(ENV_VAR)
    if not target:
        return None
    try:
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(markdown if markdown.endswith("\n") else markdown + "\n")
    except OSError:
        return None
    return Path(target)
