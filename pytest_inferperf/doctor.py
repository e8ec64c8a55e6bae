"""``inferperf doctor``: what this machine can count, what it cannot, and why.

Owns: gathering the machine facts and probing every catalogued event once
with the real backend, a short self-test that the counters move (which also
finds an emulated PMU, cycles equal to instructions, and listed events that
never count), and the text / JSON rendering of that report, with one note
per cause however many events share it.

Must not: change anything on the machine.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from tabulate import tabulate

from .pmu.cpu import CpuInfo, identify
from .pmu.events import CATALOGUE, DEFAULT_EVENTS, reason_cause, reason_group
from .pmu.perf_backend import PerfEventCounters
from .pmu.trust import distrusted, emulated_reason

SELF_TEST_NS = 5_000_000


@dataclass(frozen=True)
class DoctorReport:
    cpu: CpuInfo
    statuses: list[dict]
    capacities: dict[str, int]
    exclude_kernel: bool
    self_test: dict
    emulation: str | None = None  # why the PMU is emulated (files or the self-test)

    def to_dict(self) -> dict:
        return {
            "machine_class": self.cpu.machine_class,
            "cpu": self.cpu.to_dict(),
            "emulated_pmu": self.emulation,
            "exclude_kernel": self.exclude_kernel,
            "group_capacity": self.capacities,
            "events": self.statuses,
            "self_test": self.self_test,
        }


def run_doctor(cpu: CpuInfo | None = None) -> DoctorReport:
    cpu = cpu or identify()
    counters = PerfEventCounters(events=DEFAULT_EVENTS, cpu=cpu)
    counters.open()
    try:
        counters.start()
        begin = time.perf_counter_ns()
        while time.perf_counter_ns() - begin < SELF_TEST_NS:
            pass
        sample = counters.stop()
        statuses = counters.statuses()
    finally:
        counters.close()
    hardware = any(s.available and not CATALOGUE[n].is_software for n, s in statuses.items())
    emulation = emulated_reason(cpu, [sample]) if hardware else None
    drop = distrusted(cpu, statuses, [sample])
    rows = []
    for name in DEFAULT_EVENTS:
        status = statuses[name]
        rows.append(
            {
                "name": name,
                "description": CATALOGUE[name].description,
                "available": status.available and name not in drop,
                "source": status.source,
                "reason": drop.get(name, status.reason),
                "listed": status.available,
            }
        )
    self_test = {
        "busy_loop_ns": SELF_TEST_NS,
        "counted": {name: count.value for name, count in sample.counts.items()},
    }
    return DoctorReport(
        cpu, rows, dict(counters.capacities), counters.exclude_kernel, self_test, emulation
    )


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
    return "\n".join(lines)


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
