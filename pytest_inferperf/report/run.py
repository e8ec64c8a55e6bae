"""A whole ``pytest --inferperf`` run for CI: one JSON document and one Markdown summary.

Owns: :func:`run_document` (schema-versioned: the commit, the machine, every test's
verdict, metrics and ``region()`` stages, and a ``benchmarks`` list in github-action-benchmark's
``customSmallerIsBetter`` / ``customBiggerIsBetter`` shape) and :func:`run_markdown` (the
table, each failure with its diagnosis, the flamegraph links) for
``$GITHUB_STEP_SUMMARY``. Both work on the plain records that reach the controller, so
``-n 0`` and ``-n 2`` give the same output.

Must not: measure, judge or write files (the plugin writes what these return).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core.metrics import METRICS
from ..core.partial import partial_label
from .markdown import md
from .terminal import columns, summary_rows

RUN_SCHEMA = "pytest-inferperf/run"
RUN_SCHEMA_VERSION = 1
#: Metrics exported for trend tools, in this order (each row's ``export_unit`` names the
#: unit, its ``better`` the direction: ``core.metrics``).
TREND_METRICS = (
    "latency_p50_ms",
    "latency_p99_ms",
    "cpu_ms_per_call",
    "instructions_per_call",
    "ipc",
    "peak_rss_mb",
    "rss_growth_mb",
)


def commit_of(root: Path, env: Mapping[str, str] | None = None) -> str | None:
    """The commit being tested: ``$GITHUB_SHA`` in GitHub Actions, else ``git rev-parse``."""
    env = os.environ if env is None else env
    if env.get("GITHUB_SHA"):
        return env["GITHUB_SHA"]
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return (done.stdout.strip() or None) if done.returncode == 0 else None


def run_document(
    records: Sequence[Mapping[str, Any]],
    *,
    commit: str | None,
    written: Sequence[str] = (),
    exit_status: int | None = None,
) -> dict:
    """The run as one JSON-ready document."""
    ordered = sorted(records, key=lambda r: r["key"])
    machine = next(((r.get("profile") or {}).get("machine") for r in ordered), None) or {}
    machine_class = next(((r.get("profile") or {}).get("machine_class") for r in ordered), None)
    tests = [
        {
            "key": r["key"],
            "nodeid": r.get("nodeid", r["key"]),
            "outcome": r.get("outcome"),
            "status": r["status"],
            "failed": r["failed"],
            "backend": (r.get("profile") or {}).get("backend"),
            "metrics": dict(r["metrics"]),
            "vs_baseline": r["change"],
            "baseline": r.get("baseline_note"),
            "diagnosis": r.get("diagnosis") or None,
            "failure": r.get("failure"),
            "unchecked": list(r.get("unchecked", ())),
            "partial": bool((r.get("profile") or {}).get("partial")),
            "partial_label": partial_label(r.get("profile")),
            "artifacts": dict(r.get("artifacts", {})),
            "verdict": r.get("verdict"),
            "inconclusive": list(r.get("inconclusive") or ()),
            "carried_by": r.get("carried_by") or None,
            "confirmation": r.get("confirmation"),
            "noise_floor": r.get("noise_floor"),
            "conditions": (r.get("profile") or {}).get("conditions"),
            "busy": list(r.get("busy") or ()),
            "baseline_busy": list(r.get("baseline_busy") or ()),
            # each region() stage: ms per call, share of the call, against the baseline
            "stages": [dict(s) for s in r.get("stages") or ()],
        }
        for r in ordered
    ]
    benchmarks = []
    for test in tests:
        for metric in TREND_METRICS:
            unit, smaller = METRICS[metric].export_unit, METRICS[metric].better == "lower"
            value = test["metrics"].get(metric)
            if value is not None:
                benchmarks.append(
                    {
                        "name": f"{test['key']} {metric}",
                        "unit": unit,
                        "value": value,
                        "smaller_is_better": smaller,
                    }
                )
        for stage in test["stages"]:
            if stage.get("region") and stage.get("ms_per_call") is not None:
                benchmarks.append(
                    {
                        "name": f"{test['key']} stage {stage['name']}",
                        "unit": "ms",
                        "value": stage["ms_per_call"],
                        "smaller_is_better": True,
                    }
                )
    return {
        "schema": RUN_SCHEMA,
        "schema_version": RUN_SCHEMA_VERSION,
        "commit": commit,
        "machine_class": machine_class,
        "machine": dict(machine),
        "exit_status": exit_status,
        "tests": tests,
        "baselines_written": list(written),
        "benchmarks": benchmarks,
    }


def run_markdown(
    records: Sequence[Mapping[str, Any]],
    *,
    title: str = "pytest --inferperf",
    written: Sequence[str] = (),
) -> str:
    """The run as a GitHub job summary: the table, the failures, the flamegraphs."""
    if not records:
        return ""
    failed = [r for r in records if r["failed"] or r.get("outcome") == "failed"]
    doubtful = [r for r in records if r.get("inconclusive") and not r["failed"]]
    machine = next(((r.get("profile") or {}).get("machine_class") for r in records), "?")
    counts = f"{len(records)} profiled, {len(failed)} failed"
    if doubtful:
        counts += f", {len(doubtful)} inconclusive"
    lines = [f"### {md(title)}: {counts}", "", f"Machine class `{md(machine)}`.", ""]
    headers = ["test", *(t for _, t, _ in columns(records)), "vs baseline", "verdict", "diagnosis"]
    lines.append("| " + " | ".join(md(h) for h in headers) + " |")
    lines.append("|" + "|".join("---" for _ in headers) + "|")
    for row in summary_rows(records):
        lines.append("| " + " | ".join(md(c) for c in row) + " |")
    for record in sorted(failed, key=lambda r: r["key"]):
        text = record.get("failure") or record.get("diagnosis") or record["status"]
        lines += [
            "",
            f"<details><summary>FAILED {md(record['key'])}</summary>",
            "",
            "```",
            str(text).replace("```", "'''"),
            "```",
            "",
            "</details>",
        ]
    if doubtful:
        lines += [
            "",
            "Inconclusive (a warning: the change cannot be told apart from the "
            "machine's state; `--inferperf-strict` fails it):",
            "",
        ]
        lines += [
            f"- {md(r['key'])}: {md(reason)}"
            for r in sorted(doubtful, key=lambda r: r["key"])
            for reason in r["inconclusive"]
        ]
    busy = [r for r in sorted(records, key=lambda r: r["key"]) if r.get("baseline_busy")]
    if busy:
        lines += ["", "Baselines recorded on a busy machine:", ""]
        lines += [f"- {md(r['key'])}: {md('; '.join(r['baseline_busy']))}" for r in busy]
    graphs = [
        (r["key"], kind, path)
        for r in sorted(records, key=lambda r: r["key"])
        for kind, path in r.get("artifacts", {}).items()
    ]
    if graphs:
        lines += ["", "Flamegraphs (in the uploaded report folder):", ""]
        lines += [f"- {md(key)}: {md(kind)} `{md(path)}`" for key, kind, path in graphs]
    if written:
        lines += ["", "Baselines written:", ""]
        lines += [f"- {md(w)}" for w in written]
    return "\n".join(lines) + "\n"
