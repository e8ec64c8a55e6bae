"""The ``perf_event`` backend: count every thread of this process, in-process.

Owns: probing which events open here (and why not), the per-PMU group
capacity probe, one set of counter groups per thread that exists when
counting opens (as ``perf stat -p`` does) with ``inherit`` so threads
created later are counted too, and turning group reads into
:class:`~pytest_inferperf.pmu.base.CounterSample` deltas.

Why both: ``inherit`` only follows threads created *after* the open, but
ONNX Runtime's intra-op pool is created with the session, long before the
measured region; its threads need counters of their own.

Must not: decide warm-up, repeats or what a sample means.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from . import perf_event as pe
from .base import Count, CounterSample, CountersError, EventStatus
from .cpu import CpuInfo, identify
from .events import DEFAULT_EVENTS, ResolvedEvent, pack_groups, resolve

_SPIN_NS = 2_000_000  # work done while probing a group's capacity


def thread_ids() -> list[int]:
    """Every thread of this process, from ``/proc/self/task``."""
    try:
        return sorted(int(t) for t in os.listdir("/proc/self/task"))
    except OSError:
        return [pe_gettid()]


def pe_gettid() -> int:
    return getattr(os, "gettid", os.getpid)()


def needs_exclude_kernel(cpu: CpuInfo) -> bool:
    """perf_event_paranoid >= 2 refuses kernel counting to unprivileged users."""
    return not cpu.privileged and (cpu.paranoid is None or cpu.paranoid >= 2)


def probe_event(event: ResolvedEvent, *, exclude_kernel: bool, paranoid: int | None) -> str | None:
    """Open ``event`` alone on this thread and close it; the reason if it fails."""
    try:
        fd = pe.open_event(
            event.type, event.config, tid=0, inherit=False, exclude_kernel=exclude_kernel,
            hardware=event.hardware, paranoid=paranoid,
        )
    except pe.PerfOpenError as exc:
        return exc.reason
    os.close(fd)
    return None


def probe_capacity(event: ResolvedEvent, *, exclude_kernel: bool, limit: int = 12) -> int:
    """How many copies of ``event`` one group can hold and really count.

    Opens growing groups on this thread until the kernel refuses the group
    (EINVAL) or, after a short busy spin, the group never got onto the PMU
    (time_running == 0). VMs may give fewer counters than the core has.
    """
    best = 1
    for size in range(2, limit + 1):
        fds: list[int] = []
        try:
            for _ in range(size):
                fds.append(
                    pe.open_event(
                        event.type, event.config, tid=0,
                        group_fd=fds[0] if fds else -1, inherit=False,
                        exclude_kernel=exclude_kernel,
                    )
                )
            pe.ioctl_group(fds[0], pe.PERF_EVENT_IOC_ENABLE)
            end = time.perf_counter_ns() + _SPIN_NS
            while time.perf_counter_ns() < end:
                pass
            pe.ioctl_group(fds[0], pe.PERF_EVENT_IOC_DISABLE)
            if pe.read_group(fds[0], size).time_running == 0:
                break
            best = size
        except (pe.PerfOpenError, OSError):
            break
        finally:
            for fd in fds:
                os.close(fd)
    return best


@dataclass
class _Group:
    tid: int
    leader: int
    fds: list[int]
    ids: dict[int, ResolvedEvent]  # kernel id -> event
    last: pe.GroupRead | None = None


@dataclass
class PerfEventCounters:
    """Counts the requested events on every thread of this process."""

    events: Sequence[str] = DEFAULT_EVENTS
    cpu: CpuInfo | None = None
    name: str = "perf"
    _statuses: dict[str, EventStatus] = field(default_factory=dict, init=False)
    _plan: list[list[ResolvedEvent]] = field(default_factory=list, init=False)
    _groups: list[_Group] = field(default_factory=list, init=False)
    _start: dict[int, pe.GroupRead] = field(default_factory=dict, init=False)
    exclude_kernel: bool = field(default=True, init=False)
    capacities: dict[str, int] = field(default_factory=dict, init=False)

    # -- set-up ---------------------------------------------------------
    def open(self) -> None:
        cpu = self.cpu = self.cpu or identify()
        self.exclude_kernel = needs_exclude_kernel(cpu)
        resolution = resolve(self.events, cpu)
        statuses: dict[str, EventStatus] = {
            name: EventStatus(name, False, reason=reason)
            for name, reason in resolution.unavailable.items()
        }
        usable: dict[str, tuple[ResolvedEvent, ...]] = {}
        for name, instances in resolution.events.items():
            reason = None
            for inst in instances:
                reason = probe_event(
                    inst, exclude_kernel=self.exclude_kernel, paranoid=cpu.paranoid
                )
                if reason:
                    break
            if reason:
                statuses[name] = EventStatus(name, False, reason=reason)
            else:
                statuses[name] = EventStatus(
                    name, True, source="; ".join(i.source for i in instances)
                )
                usable[name] = instances
        self._statuses = {n: statuses[n] for n in self.events if n in statuses}
        self._plan = self._make_plan(usable)
        try:
            self._open_groups()
        except BaseException:
            self.close()
            raise

    def _make_plan(self, usable: dict[str, tuple[ResolvedEvent, ...]]) -> list[list[ResolvedEvent]]:
        """Groups of concrete events, per PMU, sized to the PMU's probed capacity."""
        by_pmu: dict[str, dict[str, ResolvedEvent]] = {}
        for name, instances in usable.items():
            for inst in instances:
                by_pmu.setdefault(inst.pmu, {})[name] = inst
        plan: list[list[ResolvedEvent]] = []
        for pmu, members in by_pmu.items():
            capacity = None
            if pmu != "software":
                first = next(iter(members.values()))
                capacity = probe_capacity(first, exclude_kernel=self.exclude_kernel)
                self.capacities[pmu] = capacity
            for names in pack_groups(list(members), capacity):
                plan.append([members[n] for n in names])
        return plan

    def _open_groups(self) -> None:
        seen: set[int] = set()
        # Threads may start while we open; go round until no new thread appears.
        while True:
            new = [tid for tid in thread_ids() if tid not in seen]
            if not new:
                break
            for tid in new:
                seen.add(tid)
                for events in self._plan:
                    self._groups.extend(self._open_group(tid, events))

    def _open_group(self, tid: int, events: list[ResolvedEvent]) -> list[_Group]:
        """Open ``events`` as one group on ``tid``; split it if the PMU refuses the group."""
        fds: list[int] = []
        ids: dict[int, ResolvedEvent] = {}
        try:
            for event in events:
                fd = pe.open_event(
                    event.type, event.config, tid=tid, group_fd=fds[0] if fds else -1,
                    inherit=True, exclude_kernel=self.exclude_kernel,
                    hardware=event.hardware, paranoid=self.cpu.paranoid if self.cpu else None,
                )
                fds.append(fd)
                ids[pe.event_id(fd)] = event
        except pe.PerfOpenError as exc:
            for fd in fds:
                os.close(fd)
            if exc.errno == errno.ESRCH:  # the thread ended meanwhile
                return []
            if exc.errno == errno.EINVAL and len(events) > 1:
                return [g for e in events for g in self._open_group(tid, [e])]
            if exc.errno in (errno.EMFILE, errno.ENFILE):
                raise CountersError(
                    f"cannot count thread {tid}: {exc.reason} "
                    f"({len(self._groups)} groups already open)"
                ) from exc
            raise CountersError(
                f"cannot open the group {[e.name for e in events]} on thread {tid}: {exc.reason}"
            ) from exc
        return [_Group(tid, fds[0], fds, ids)]

    # -- one region -----------------------------------------------------
    def start(self) -> None:
        if not self._groups and self._plan:
            raise CountersError("counters are not open: call open() first")
        self._start = self.snapshot()
        for group in self._groups:
            pe.ioctl_group(group.leader, pe.PERF_EVENT_IOC_ENABLE)

    def stop(self) -> CounterSample:
        for group in self._groups:
            pe.ioctl_group(group.leader, pe.PERF_EVENT_IOC_DISABLE)
        return self.delta(self._start, self.snapshot())

    def snapshot(self) -> dict[int, pe.GroupRead]:
        """Read every group without stopping it (stage boundaries use this)."""
        return {g.leader: self._read(g) for g in self._groups}

    def delta(self, begin: dict[int, pe.GroupRead], end: dict[int, pe.GroupRead]) -> CounterSample:
        """What was counted between two snapshots, summed over threads."""
        totals: dict[str, list[float]] = {}
        per_thread: dict[int, dict[str, float]] = {}
        instances: dict[str, set[str]] = {}
        for group in self._groups:
            last, first = end.get(group.leader), begin.get(group.leader)
            if last is None:
                continue
            enabled = last.time_enabled - (first.time_enabled if first else 0)
            running = last.time_running - (first.time_running if first else 0)
            for id_, event in group.ids.items():
                delta = last.values.get(id_, 0) - (first.values.get(id_, 0) if first else 0)
                instances.setdefault(event.name, set()).add(event.pmu)
                scaled = delta * enabled / running if running > 0 else float(delta)
                acc = totals.setdefault(event.name, [0.0, 0, 0, 0])
                acc[0] += scaled
                acc[1] += delta
                acc[2] += enabled
                acc[3] += running
                thread = per_thread.setdefault(group.tid, {})
                thread[event.name] = thread.get(event.name, 0.0) + scaled
        counts: dict[str, Count] = {}
        for name, (scaled, raw, enabled, running) in totals.items():
            if len(instances[name]) > 1:
                # big.LITTLE: a task counts only while on that PMU's cores, so
                # running < enabled is not multiplexing; sum what was counted.
                counts[name] = Count(float(raw), int(raw), int(running), int(running))
            else:
                counts[name] = Count(float(scaled), int(raw), int(enabled), int(running))
        return CounterSample(counts=counts, per_thread=per_thread)

    def _read(self, group: _Group) -> pe.GroupRead:
        return pe.read_group(group.leader, len(group.fds))

    def close(self) -> None:
        for group in self._groups:
            for fd in group.fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._groups = []
        self._start = {}

    def statuses(self) -> dict[str, EventStatus]:
        return dict(self._statuses)

    @property
    def threads(self) -> list[int]:
        return sorted({g.tid for g in self._groups})

    @property
    def open_fds(self) -> int:
        return sum(len(g.fds) for g in self._groups)

    def __enter__(self) -> PerfEventCounters:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def fd_count() -> int:
    """Open descriptors of this process (for leak tests and doctor)."""
    return len(os.listdir("/proc/self/fd")) if Path("/proc/self/fd").is_dir() else -1
