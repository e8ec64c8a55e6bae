"""The terminal summary of a ``pytest --inferperf`` run.

Owns: the one table of every profiled test (key metrics, change against
the baseline, verdict), the line saying what this machine could not count,
and the baseline write lines. Works on the plain records that travel from
xdist workers, so the controller renders the same table for ``-n 0`` and
``-n 2``.
"""

from __future__ import annotations

from collections.abc import Sequence

from tabulate import tabulate

COLUMNS = (
    ("latency_p50_ms", "p50 ms"),
    ("latency_p99_ms", "p99 ms"),
    ("cpu_ms_per_call", "CPU ms/call"),
    ("ipc", "IPC"),
    ("l1_miss", "L1D miss"),
    ("peak_rss_mb", "peak MiB"),
)


def _cell(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"


def summary_rows(records: Sequence[dict]) -> list[list[str]]:
    rows = []
    for record in sorted(records, key=lambda r: r["key"]):
        metrics = record["metrics"]
        status = record["status"] if record["outcome"] != "failed" or record["failed"] else "FAILED"
        rows.append([record["key"], *(_cell(metrics.get(k)) for k, _ in COLUMNS),
                     record["change"], status, record.get("diagnosis", "")])
    return rows


def headline(reason: str) -> str:
    """The cause part of a reason: 'no PMU exposed (ENOENT)'; the fix is in the full text."""
    head, _, rest = reason.partition(":")
    if head.strip() == "not available" and rest:  # "not available: <cause>: <detail>"
        return "not available: " + rest.split(":", 1)[0].split(" (")[0].strip()
    return head


def not_counted_line(records: Sequence[dict]) -> str | None:
    """What this machine could not count, grouped by reason."""
    by_reason: dict[str, list[str]] = {}
    for record in records:
        for event, reason in record["unavailable"].items():
            names = by_reason.setdefault(headline(reason), [])
            if event not in names:
                names.append(event)
    if not by_reason:
        return None
    parts = [f"{', '.join(events)} ({reason})" for reason, events in by_reason.items()]
    return "Not counted here: " + "; ".join(parts) + ". Run `inferperf doctor` for the fixes."


def render_summary(records: Sequence[dict], written: Sequence[str], errors: Sequence[str],
                   warnings: Sequence[str], *, update: bool) -> str:
    if not records:
        return ""
    headers = ["test", *(title for _, title in COLUMNS), "vs baseline", "verdict", "diagnosis"]
    lines = [tabulate(summary_rows(records), headers=headers, tablefmt="simple",
                      disable_numparse=True)]
    graphs = [f"  {r['key']}: {path}" for r in sorted(records, key=lambda r: r["key"])
              for path in r.get("artifacts", {}).values()]
    if graphs:
        lines.append("")
        lines.append("Flamegraphs:")
        lines.extend(graphs)
    missing = not_counted_line(records)
    if missing:
        lines.append("")
        lines.append(missing)
    if update:
        lines.append("")
        if not written and not errors:
            lines.append("no baseline written (no test ran cleanly)")
        lines.extend(written)
        lines.extend(f"ERROR {e}" for e in errors)
    lines.extend(f"WARNING {w}" for w in warnings)
    return "\n".join(lines)
