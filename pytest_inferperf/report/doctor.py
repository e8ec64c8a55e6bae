"""``inferperf doctor``'s report as text and as JSON.

Owns: :func:`render_text` (the machine's facts, every catalogued event counted or not
with one numbered note per cause however many events share it, the self-test, what
no hardware event means for budgets, and the measuring backends: whether each runs
here or why not), :func:`render_json`, and
:func:`emulation_line` (an emulated PMU in one line, for doctor and report footers).
Moved here from ``doctor``.

Must not: probe the machine (:func:`doctor.run_doctor` does) or change anything on it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tabulate import tabulate

from ..pmu.events import CATALOGUE, reason_cause, reason_group

if TYPE_CHECKING:
    from ..pmu.doctor import DoctorReport


def _size(n: int) -> str:
    for unit, scale in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return str(n)


def render_text(report: DoctorReport) -> str:
    cpu = report.cpu
    if cpu.pmus:
        pmus = "; ".join(
            f"{p.name} (type {p.type}, cpus {_cpu_range(p.cpus)}"
            + (
                f", {report.capacities[p.name]} counters per group"
                if p.name in report.capacities
                else ""
            )
            + ")"
            for p in cpu.pmus
        )
    else:
        pmus = "none exposed (no core PMU under /sys/bus/event_source/devices)"
    paranoid = "unknown" if cpu.paranoid is None else str(cpu.paranoid)
    facts = [
        ("Machine class", cpu.machine_class),
        ("CPU", f"{cpu.core} [{cpu.vendor}{', MIDR ' + cpu.midr if cpu.midr else ''}]"),
        ("CPUs", str(cpu.cpu_count)),
        ("Caches", ", ".join(f"{c.label} {_size(c.size_bytes)}" for c in cpu.caches) or "unknown"),
        ("Kernel", cpu.kernel),
        (
            "perf_event_paranoid",
            f"{paranoid} ({'privileged' if cpu.privileged else 'unprivileged'}"
            f", kernel {'excluded' if report.exclude_kernel else 'counted'})",
        ),
        ("PMUs", pmus),
    ]
    if report.emulation:
        facts.append(("PMU", emulation_line(report.emulation)))
    lines = [tabulate(facts, tablefmt="plain"), ""]
    notes: dict[str, int] = {}
    table = []
    for row in report.statuses:
        if row["available"]:
            table.append((row["name"], "yes", row["source"]))
            continue
        number = notes.setdefault(reason_cause(row["reason"]), len(notes) + 1)
        counted = "listed, unused" if row.get("listed") else "no"
        table.append((row["name"], counted, f"{_headline(reason_group(row['reason']))} [{number}]"))
    lines.append(
        tabulate(table, headers=("event", "counted", "source / reason"), tablefmt="simple")
    )
    if notes:
        lines.append("")
        lines.extend(f"[{number}] {reason}" for reason, number in notes.items())
    available = sum(row["available"] for row in report.statuses)
    lines.append("")
    lines.append(f"{available} of {len(report.statuses)} events can be counted here.")
    task_clock = report.self_test["counted"].get("task_clock")
    if task_clock is not None:
        lines.append(
            f"Self-test: a {report.self_test['busy_loop_ns'] / 1e6:.0f} ms busy loop counted "
            f"{task_clock / 1e6:.2f} ms of task_clock."
        )
    if not any(row["available"] for row in report.statuses if not _software(row["name"])):
        lines.append(
            "No hardware event can be counted: budgets on IPC, caches, TLB and branches will be "
            "skipped with this reason. Time, page faults and context switches still work."
        )
    if report.backends is not None:
        lines.append("")
        lines.append(backends_table(report.backends))
    return "\n".join(lines)


def backends_table(backends: Sequence[Mapping[str, Any]]) -> str:
    """The measuring backends (``measure.backends.statuses()``): each one's name and
    whether it runs here ("yes") or why not (its "not available: <reason>")."""
    rows = [(b["name"], "yes" if b["available"] else b["reason"]) for b in backends]
    return tabulate(rows, headers=("backend", "runs here"), tablefmt="simple")


def emulation_line(evidence: str) -> str:
    """What an emulated PMU means for the user, in one line (doctor and report footers)."""
    return (
        f"emulated ({evidence}): instruction counts are exact; cycles, IPC, "
        "cycle-based and time budgets are not judged here"
    )


def _headline(reason: str) -> str:
    """The part of a reason before its explanation: 'no PMU exposed (ENOENT)'."""
    return reason.split(":", 1)[0]


def _software(name: str) -> bool:
    return CATALOGUE[name].is_software


def _cpu_range(cpus: tuple[int, ...]) -> str:
    if not cpus:
        return "?"
    if list(cpus) == list(range(cpus[0], cpus[-1] + 1)):
        return f"{cpus[0]}-{cpus[-1]}" if len(cpus) > 1 else str(cpus[0])
    return ",".join(map(str, cpus))


def render_json(report: DoctorReport) -> str:
    return json.dumps(report.to_dict(), indent=2, sort_keys=False)
