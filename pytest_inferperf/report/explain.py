"""``inferperf explain``'s output: a ``perf stat`` file's metrics and their diagnosis.

Owns: :func:`explain_text` (how the runs were used, combined or kept apart, with
``verbose`` every event with its
logical name and how long it was counted; the metric table with the share of time its
inputs were counted; what was not counted or not mapped; the diagnosis) and
:func:`explain_json` (the same as plain data). Moved here from ``cli``.

Must not: parse the file (:mod:`..ingest.perf_stat`), compute metrics or diagnose: it is
handed them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tabulate import tabulate

from ..core.metrics import METRICS
from ..diagnose.classify import diagnosis_as_dict
from .diagnosis import render

if TYPE_CHECKING:
    from ..diagnose.classify import Diagnosis


def explain_text(
    file: str,
    report: Any,
    core: str,
    metrics: Mapping[str, float],
    diagnosis: Diagnosis,
    *,
    verbose: bool = False,
) -> str:
    """``inferperf explain``: the file's runs (with ``verbose`` every event), the metrics
    with how long each input was counted, what was not counted, then the diagnosis."""
    from ..ingest.perf_stat import source_label

    where = f"{file} ({report.format}"
    where += f", {report.elapsed_s:.3f} s elapsed" if report.elapsed_s else ""
    where += f", {report.runs_note}" if report.runs_note else ""
    source = f"{label}: " if (label := source_label(report.format)) else ""
    lines = [f"{source}{where}); core: {core or 'unknown (pass --cpu)'}"]
    if verbose:
        lines.extend(_runs_text(report.runs))
    multiplexed = report.multiplexed
    task_clock = any("task_clock" in r.counts for r in report.runs)
    rows = []
    for name, value in metrics.items():
        spec = METRICS.get(name)
        if spec is None:
            continue
        mux = [multiplexed[i] for i in spec.inputs if i in multiplexed]
        what = spec.description
        if name == "cpu_utilisation" and not task_clock:
            what = "CPUs busy during the run (perf's seconds user + sys / elapsed)"
        rows.append((name, _value(value), spec.unit, what, f"{min(mux):.0f}%" if mux else ""))
    lines.append(
        tabulate(
            rows, headers=("metric", "value", "unit", "what", "running"), disable_numparse=True
        )
    )
    if report.unavailable:
        lines.append(
            "not counted: " + "; ".join(f"{k} ({v})" for k, v in report.unavailable.items())
        )
    if report.unmapped:
        lines.append("ignored (no logical name): " + ", ".join(report.unmapped))
    if report.revision:
        lines.append(f"revision read from the file: {report.revision}")
    if report.ambiguous:
        lines.append(
            "read as Arm's events (no name in the file shows the instruction set; x86 counts "
            "fewer, farther events under these names, so Arm's reading does not overstate; "
            "pass --cpu to read x86's): " + ", ".join(report.ambiguous)
        )
    if verbose and report.apart:
        lines.append("runs not combined: " + "; ".join(report.apart))
    limits = report.limits()
    if limits:
        lines.append("not judged from this file: " + "; ".join(limits))
        rates = report.rates()
        if rates:
            lines.append(
                "per second of elapsed time: "
                + ", ".join(f"{name} {_value(rate)}/s" for name, rate in sorted(rates.items()))
            )
    return "\n".join(lines) + "\n\n" + render(diagnosis, verbose=verbose)


def _runs_text(runs: Sequence[Any]) -> list[str]:
    """``inferperf explain -v``: each run's events as read, and what was not used."""
    from ..ingest.perf_stat import E_CORE_PMU, TOOL_FORMATS, source_label

    lines: list[str] = []
    for i, run in enumerate(runs, 1):
        if len(runs) > 1:
            lines.append(f"run {i}: {run.title or source_label(run.format) or run.format}")
        rows = [
            (
                e.event.text,
                "-" if (n := _logical(e, run.arch)) is None else n,
                e.status if e.value is None else f"{e.value:,.2f}".rstrip("0").rstrip("."),
                e.unit,
                "" if e.running_pct is None else f"{e.running_pct:.2f}%",
            )
            for e in run.entries
        ]
        if rows:
            lines.append(
                tabulate(
                    rows,
                    headers=("perf event", "logical", "value", "unit", "running"),
                    disable_numparse=True,
                )
            )
        if run.superseded:
            lines.append(
                "not used (another name of the same logical event was): "
                + ", ".join(run.superseded)
            )
        if run.other_cores and run.counts_every_cpu:
            which = (
                "the E-cores' events"
                if E_CORE_PMU in run.other_cores
                else "another kind of core's events"
            )
            read = (
                "the P-cores are read, as toplev reads them"
                if E_CORE_PMU in run.other_cores
                else "the kind that counted the most of them is read"
            )
            lines.append(
                f"not used ({which}: counting CPUs, each kind of core counts "
                "its own CPUs, and here the kinds counted different events, so a ratio "
                f"would mix them; {read}): " + ", ".join(run.other_cores)
            )
        elif run.other_cores:
            lines.append(
                "not used (another kind of core, which this task hardly ran on: perf "
                "scales such a count up from the time it ran, Linux perf "
                "intel-hybrid.txt): "
                + ", ".join(
                    f"{p} (counted {pct:g}% of the time)" for p, pct in run.other_cores.items()
                )
            )
        if run.perf_metrics:
            lines.append(
                (
                    f"metrics {run.format} computed: "
                    if run.format in TOOL_FORMATS
                    else "perf's own top-down fractions: "
                )
                + ", ".join(f"{k} {v:.3f}" for k, v in run.perf_metrics.items())
            )
        lines.append("")
    return lines


def explain_json(
    file: str,
    report: Any,
    core: str,
    metrics: Mapping[str, float],
    diagnosis: Diagnosis,
    *,
    core_given: bool,
) -> dict[str, object]:
    """``inferperf explain --json``: docs/diagnosis.md describes every field.

    ``core_given``: the core was named by the user rather than found in the file.
    """
    runs = []
    for run in report.runs:
        runs.append(
            {
                "title": run.title,
                "elapsed_s": run.elapsed_s,
                "counts": run.counts,
                "perf_metrics": run.perf_metrics,
                "unavailable": run.unavailable,
                "unmapped": list(run.unmapped),
                "ambiguous": list(run.ambiguous),
                "superseded": list(run.superseded),
                "other_cores": run.other_cores,
                "multiplexed": run.multiplexed,
                "events": [
                    {
                        "event": e.event.text,
                        "logical": _logical(e, run.arch),
                        "value": e.value,
                        "unit": e.unit,
                        "status": e.status,
                        "running_pct": e.running_pct,
                    }
                    for e in run.entries
                ],
            }
        )
    return {
        "schema": "inferperf-explain/1",
        "file": file,
        "format": report.format,
        "arch": report.arch,
        "core": core,
        "core_from": "--cpu" if core_given else ("file" if report.core_hint else "none"),
        "runs": runs,
        "metrics": dict(metrics),
        "metrics_combined": (
            "one result per group of combined runs (each metric from the run that counted "
            "its inputs); median over the results that have each"
        ),
        "combined": [list(g) for g in report.combined],
        "apart": list(report.apart),
        "revision": report.revision,
        "limits": list(report.limits()),
        "rates_per_s": report.rates(),
        "diagnosis": diagnosis_as_dict(diagnosis),
    }


def _logical(entry, arch: str) -> str | None:
    from ..ingest.perf_stat import logical_name

    return logical_name(entry.event, arch)


def _value(value: float) -> str:
    if abs(value) >= 1e6:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:,.1f}"
    return f"{value:.3f}"
