"""``inferperf doctor``: what this machine can count, what it cannot, and why.

Owns: gathering the machine facts and probing every catalogued event once
with the real backend, a short self-test that the counters move (which also
finds an emulated PMU, cycles equal to instructions, and listed events that
never count); beside them, the measuring backends a front-end hands in (the rows of
``measure.backends`` with whether each can run here and why not: that registry sits
above this layer, so the caller reads it). Its text and JSON are :mod:`report.doctor`'s.

Must not: change anything on the machine, or render the report.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .cpu import CpuInfo, identify
from .events import CATALOGUE, DEFAULT_EVENTS
from .perf_backend import PerfEventCounters
from .trust import distrusted, emulated_reason

SELF_TEST_NS = 5_000_000


@dataclass(frozen=True)
class DoctorReport:
    cpu: CpuInfo
    statuses: list[dict]
    capacities: dict[str, int]
    exclude_kernel: bool
    self_test: dict
    emulation: str | None = None  # why the PMU is emulated (files or the self-test)
    # the measuring backends (name, description, available, reason); None: not asked
    backends: tuple[dict, ...] | None = None

    def to_dict(self) -> dict:
        document = {
            "machine_class": self.cpu.machine_class,
            "cpu": self.cpu.to_dict(),
            "emulated_pmu": self.emulation,
            "exclude_kernel": self.exclude_kernel,
            "group_capacity": self.capacities,
            "events": self.statuses,
            "self_test": self.self_test,
        }
        if self.backends is not None:
            document["backends"] = [dict(b) for b in self.backends]
        return document


def run_doctor(
    cpu: CpuInfo | None = None, *, backends: Sequence[Mapping[str, Any]] | None = None
) -> DoctorReport:
    """Probe this machine (``cpu``: its identification, default :func:`cpu.identify`);
    ``backends``: the measuring backends to list with it (``measure.backends.statuses()``),
    None for none."""
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
        cpu,
        rows,
        dict(counters.capacities),
        counters.exclude_kernel,
        self_test,
        emulation,
        None if backends is None else tuple(dict(b) for b in backends),
    )
