"""The ``perf_event`` backend: count every thread of this process, in-process.

Owns: probing which events open here (and why not), the per-PMU group
capacity probe, one set of counter groups per thread that exists when
counting opens (as ``perf stat -p`` does) with ``inherit`` so threads
created later are counted too, bracketing a region at the cost of one
group read per group and end (free-running groups) or one ``prctl`` and one
read per group (toggled groups), and turning two snapshots into a
:class:`~pytest_inferperf.pmu.base.CounterSample` delta after the region
(:func:`decode`, pure; a stopped region's sample decodes on first use).

Why both: ``inherit`` only follows threads created *after* the open, but
ONNX Runtime's intra-op pool is created with the session, long before the
measured region; its threads need counters of their own.

Must not: decide warm-up, repeats or what a sample means.
"""

from __future__ import annotations

import contextlib
import errno
import os
import struct
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from . import perf_event as pe
from .base import Count, CounterSample, CountersError, EventStatus
from .cpu import CpuInfo, identify
from .events import (
    DEFAULT_EVENTS,
    KERNEL_ONLY_SOFTWARE,
    ResolvedEvent,
    kernel_only_reason,
    pack_groups,
    resolve,
)

_SPIN_NS = 2_000_000  # work done while probing a group's capacity


def thread_ids() -> list[int]:
    """Every thread of this process, from ``/proc/self/task``."""
    try:
        return sorted(int(t) for t in os.listdir("/proc/self/task"))
    except OSError:
        return [pe_gettid()]


def thread_gone(tid: int) -> bool:
    """True once thread ``tid`` of this process has ended or is ending (zombie, dead).

    An open on such a thread fails with ESRCH, or, for a member of a group whose
    leader was opened just before the thread exited, with other errors (ENODEV seen).
    """
    try:
        stat = Path(f"/proc/self/task/{tid}/stat").read_text()
    except OSError:
        return True
    state = stat.rsplit(")", 1)[-1].split()[:1]
    return state in (["Z"], ["X"], ["x"])


def pe_gettid() -> int:
    return getattr(os, "gettid", os.getpid)()


def needs_exclude_kernel(cpu: CpuInfo) -> bool:
    """perf_event_paranoid >= 2 refuses kernel counting to unprivileged users."""
    return not cpu.privileged and (cpu.paranoid is None or cpu.paranoid >= 2)


def probe_event(event: ResolvedEvent, *, exclude_kernel: bool, paranoid: int | None) -> str | None:
    """Open ``event`` alone on this thread and close it; the reason if it fails."""
    try:
        fd = pe.open_event(
            event.type,
            event.config,
            tid=0,
            inherit=False,
            exclude_kernel=exclude_kernel,
            hardware=event.hardware,
            paranoid=paranoid,
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
                        event.type,
                        event.config,
                        tid=0,
                        group_fd=fds[0] if fds else -1,
                        inherit=False,
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


@dataclass(frozen=True)
class _Layout:
    """Where one group's read lies in a snapshot, and what its ids mean."""

    tid: int
    offset: int
    reader: struct.Struct  # (nr, enabled, running, (value, id) * nr)
    ids: dict[int, tuple[str, str]]  # kernel id -> (event name, pmu)


# Open counter sets per thread that opened them (threading.get_ident()): the
# one-call prctl toggles every event a thread opened, so it is used only where
# this thread has no other open set whose counters it would also toggle.
_OPEN_BY_THREAD: dict[int, int] = {}
_OPEN_LOCK = threading.Lock()


def decode(layout: Sequence[_Layout], begin: bytes | None, end: bytes) -> CounterSample:
    """What was counted between two snapshots, summed over threads.

    ``begin`` None means from zero (the counters' open). Pure: every scaling,
    delta and per-thread sum of a region happens here, after the region.
    """
    totals: dict[str, list[float]] = {}
    per_thread: dict[int, dict[str, float]] = {}
    instances: dict[str, set[str]] = {}
    for group in layout:
        last = group.reader.unpack_from(end, group.offset)
        first = group.reader.unpack_from(begin, group.offset) if begin else None
        enabled = last[1] - (first[1] if first else 0)
        running = last[2] - (first[2] if first else 0)
        last_values = dict(zip(last[4::2], last[3::2], strict=True))
        first_values = dict(zip(first[4::2], first[3::2], strict=True)) if first else {}
        thread = per_thread.setdefault(group.tid, {})
        for id_, (name, pmu) in group.ids.items():
            delta = last_values.get(id_, 0) - first_values.get(id_, 0)
            instances.setdefault(name, set()).add(pmu)
            scaled = delta * enabled / running if running > 0 else float(delta)
            acc = totals.setdefault(name, [0.0, 0, 0, 0])
            acc[0] += scaled
            acc[1] += delta
            acc[2] += enabled
            acc[3] += running
            thread[name] = thread.get(name, 0.0) + scaled
    counts: dict[str, Count] = {}
    for name, (scaled, raw, enabled, running) in totals.items():
        if len(instances[name]) > 1:
            # big.LITTLE: a task counts only while on that PMU's cores, so
            # running < enabled is not multiplexing; sum what was counted.
            counts[name] = Count(float(raw), int(raw), int(running), int(running))
        else:
            counts[name] = Count(float(scaled), int(raw), int(enabled), int(running))
    return CounterSample(counts=counts, per_thread=per_thread)


class DeferredSample(CounterSample):
    """A :class:`CounterSample` of two snapshots, decoded when first looked at.

    ``counts`` and ``per_thread`` are the decoded sample's (the decode runs once
    and is kept). It equals, prints, pickles and copies as the plain
    ``CounterSample`` it stands for, so nothing downstream can tell them apart;
    built through the class (``dataclasses.replace``), it is already decoded.
    """

    __slots__ = ("_decoded", "_snapshots")
    _decoded: CounterSample
    _snapshots: tuple[tuple[_Layout, ...], bytes | None, bytes]

    def __init__(
        self,
        counts: Mapping[str, Count],
        per_thread: Mapping[int, Mapping[str, float]] | None = None,
    ) -> None:
        _set_decoded(self, CounterSample(counts, dict(per_thread or {})))

    @property
    def counts(self) -> Mapping[str, Count]:
        return self.decoded().counts

    @property
    def per_thread(self) -> Mapping[int, Mapping[str, float]]:
        return self.decoded().per_thread

    def decoded(self) -> CounterSample:
        """The plain sample: decoded now if this is its first use."""
        try:
            sample: CounterSample = self._decoded
        except AttributeError:
            sample = decode(*self._snapshots)
            _set_decoded(self, sample)
            del self._snapshots  # kept no longer than needed
        return sample

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DeferredSample):
            other = other.decoded()
        return self.decoded() == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self.decoded())

    def __reduce__(self) -> tuple[Any, ...]:
        sample = self.decoded()
        return (CounterSample, (dict(sample.counts), dict(sample.per_thread)))


_new_deferred = DeferredSample.__new__
_set_snapshots = DeferredSample._snapshots.__set__  # type: ignore[attr-defined]
_set_decoded = DeferredSample._decoded.__set__  # type: ignore[attr-defined]


def deferred_sample(layout: tuple[_Layout, ...], begin: bytes | None, end: bytes) -> CounterSample:
    """A :class:`DeferredSample` of two snapshots: its arithmetic runs on first use.

    Made with ``__new__`` and one slot write (the frozen dataclass's ``__init__``
    would cost an ``object.__setattr__`` per field): this runs in every counted
    repeat's ``stop()``. On the 2-vCPU Intel VM it took 0.20 µs against 0.72 µs for
    a plain ``CounterSample`` holding two lazy mappings over a shared decode (the
    way before; best of 7 x 2,000, three rounds alternating)."""
    sample = _new_deferred(DeferredSample)
    _set_snapshots(sample, (layout, begin, end))
    return sample


def plan_groups(
    events: Sequence[str], cpu: CpuInfo, *, exclude_kernel: bool, free_running: bool
) -> tuple[dict[str, EventStatus], list[list[ResolvedEvent]], dict[str, int]]:
    """What of ``events`` counts here, before anything is opened for counting: a status
    per event (in the order asked; why not, where an event does not open), the counter
    groups of those that do (per PMU, sized to its probed capacity), and each hardware
    PMU's capacity."""
    resolution = resolve(events, cpu)
    statuses: dict[str, EventStatus] = {
        name: EventStatus(name, False, reason=reason)
        for name, reason in resolution.unavailable.items()
    }
    usable: dict[str, tuple[ResolvedEvent, ...]] = {}
    for name, instances in resolution.events.items():
        reason = None
        if exclude_kernel and name in KERNEL_ONLY_SOFTWARE:
            reason = kernel_only_reason(cpu.paranoid)  # it would open, and read 0
        for inst in () if reason else instances:
            reason = probe_event(inst, exclude_kernel=exclude_kernel, paranoid=cpu.paranoid)
            if reason:
                break
        if reason:
            statuses[name] = EventStatus(name, False, reason=reason)
        else:
            statuses[name] = EventStatus(name, True, source="; ".join(i.source for i in instances))
            usable[name] = instances
    ordered = {n: statuses[n] for n in events if n in statuses}
    capacities: dict[str, int] = {}
    plan = _pack_plan(usable, capacities, exclude_kernel=exclude_kernel, free_running=free_running)
    return ordered, plan, capacities


def _pack_plan(
    usable: dict[str, tuple[ResolvedEvent, ...]],
    capacities: dict[str, int],
    *,
    exclude_kernel: bool,
    free_running: bool,
) -> list[list[ResolvedEvent]]:
    """Groups of concrete events, per PMU, sized to the PMU's probed capacity (each
    probed capacity added to ``capacities``)."""
    by_pmu: dict[str, dict[str, ResolvedEvent]] = {}
    for name, instances in usable.items():
        for inst in instances:
            by_pmu.setdefault(inst.pmu, {})[name] = inst
    plan: list[list[ResolvedEvent]] = []
    for pmu, members in by_pmu.items():
        capacity = None
        if pmu != "software":
            first = next(iter(members.values()))
            capacity = probe_capacity(first, exclude_kernel=exclude_kernel)
            capacities[pmu] = capacity
        groups = pack_groups(list(members), capacity)
        if pmu == "software" and free_running:
            # The task clock and the other software events lose page faults
            # in one group only across disable/enable cycles (events.py);
            # free-running counters never cycle, so one group, one read.
            groups = [[n for g in groups for n in g]]
        for names in groups:
            plan.append([members[n] for n in names])
    return plan


@dataclass
class PerfEventCounters:
    """Counts the requested events on every thread of this process.

    Two ways to bracket a region, the same counts either way:

    - ``free_running=True`` (default): the groups are enabled once, at
      ``open``, and a region is the delta of one read of every group at
      ``start`` and one at ``stop``: one ``read`` per group and end, no
      enable/disable at all (toggling costs the kernel more than reading:
      see docs/benchmarks). The software events then share one group per
      thread.
    - ``free_running=False``: the groups count only between ``start`` and
      ``stop``; both toggle every group with one ``prctl`` where this
      thread opened the counters and holds no other open set, else one
      ioctl per group leader. ``stop`` reads every group once; the next
      ``start`` reuses that read (stopped counters do not move).

    Either way ``stop`` returns a sample whose scaling, deltas and
    per-thread sums are computed when it is first looked at.
    """

    events: Sequence[str] = DEFAULT_EVENTS
    cpu: CpuInfo | None = None
    name: str = "perf"
    #: a hardware PMU's counts: screened before use (``base.needs_screening``)
    needs_screening: ClassVar[bool] = True
    free_running: bool = True
    _statuses: dict[str, EventStatus] = field(default_factory=dict, init=False)
    _plan: list[list[ResolvedEvent]] = field(default_factory=list, init=False)
    _groups: list[_Group] = field(default_factory=list, init=False)
    _layout: tuple[_Layout, ...] = field(default=(), init=False)
    _reader: pe.GroupReader | None = field(default=None, init=False)
    _begin: bytes | None = field(default=None, init=False)
    _last: bytes | None = field(default=None, init=False)  # stopped counters read this
    _running: bool = field(default=False, init=False)
    _owner: int | None = field(default=None, init=False)  # thread that opened them
    _prctl_ok: bool = field(default=True, init=False)
    exclude_kernel: bool = field(default=True, init=False)
    capacities: dict[str, int] = field(default_factory=dict, init=False)

    # -- set-up ---------------------------------------------------------
    def open(self) -> None:
        cpu = self.cpu = self.cpu or identify()
        self.exclude_kernel = needs_exclude_kernel(cpu)
        self._statuses, self._plan, capacities = plan_groups(
            self.events, cpu, exclude_kernel=self.exclude_kernel, free_running=self.free_running
        )
        self.capacities.update(capacities)
        try:
            self._open_groups()
            self._prepare_reads()
            if self.free_running:
                for group in self._groups:
                    pe.ioctl_group(group.leader, pe.PERF_EVENT_IOC_ENABLE)
        except BaseException:
            self.close()
            raise
        self._owner = threading.get_ident()
        with _OPEN_LOCK:
            _OPEN_BY_THREAD[self._owner] = _OPEN_BY_THREAD.get(self._owner, 0) + 1

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
                    event.type,
                    event.config,
                    tid=tid,
                    group_fd=fds[0] if fds else -1,
                    inherit=True,
                    exclude_kernel=self.exclude_kernel,
                    hardware=event.hardware,
                    paranoid=self.cpu.paranoid if self.cpu else None,
                )
                fds.append(fd)
                ids[pe.event_id(fd)] = event
        except pe.PerfOpenError as exc:
            for fd in fds:
                os.close(fd)
            if exc.errno == errno.ESRCH or thread_gone(tid):  # it ended meanwhile
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

    def _prepare_reads(self) -> None:
        """One buffer for every group's read, and how to decode it."""
        self._reader = pe.GroupReader([(g.leader, len(g.fds)) for g in self._groups])
        self._layout = tuple(
            _Layout(
                g.tid,
                offset,
                struct.Struct(f"={3 + 2 * len(g.fds)}Q"),
                {id_: (e.name, e.pmu) for id_, e in g.ids.items()},
            )
            for g, offset in zip(self._groups, self._reader.offsets, strict=True)
        )
        self._begin = self._last = None
        self._running = False

    # -- one region -----------------------------------------------------
    def start(self) -> None:
        if self._reader is None:
            if self._plan:
                raise CountersError("counters are not open: call open() first")
            return
        if self.free_running:
            self._begin = self._reader.read()
            return
        self._begin = (
            self._last if (self._last is not None and not self._running) else (self._reader.read())
        )
        self._toggle(True)
        self._running = True

    def stop(self) -> CounterSample:
        if self._reader is None:
            return CounterSample(counts={})
        if self.free_running:
            end = self._reader.read()
        else:
            self._toggle(False)
            self._running = False
            end = self._last = self._reader.read()
        return deferred_sample(self._layout, self._begin, end)

    def _toggle(self, enable: bool) -> None:
        """Enable or disable every group: one prctl where it touches only ours."""
        if (
            self._prctl_ok
            and self._owner == threading.get_ident()
            and _OPEN_BY_THREAD.get(self._owner) == 1
        ):
            try:
                pe.task_events(enable)
                return
            except OSError:
                self._prctl_ok = False
        request = pe.PERF_EVENT_IOC_ENABLE if enable else pe.PERF_EVENT_IOC_DISABLE
        for group in self._groups:
            pe.ioctl_group(group.leader, request)

    def snapshot(self) -> bytes | None:
        """Read every group without stopping it (stage boundaries use this)."""
        return self._reader.read() if self._reader is not None else None

    def delta(self, begin: bytes | None, end: bytes | None) -> CounterSample:
        """What was counted between two snapshots, summed over threads."""
        if end is None:
            return CounterSample(counts={})
        return decode(self._layout, begin, end)

    def close(self) -> None:
        for group in self._groups:
            for fd in group.fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
        if self._owner is not None:
            with _OPEN_LOCK:
                left = _OPEN_BY_THREAD.get(self._owner, 1) - 1
                if left > 0:
                    _OPEN_BY_THREAD[self._owner] = left
                else:
                    _OPEN_BY_THREAD.pop(self._owner, None)
            self._owner = None
        self._groups = []
        self._layout = ()
        self._reader = None
        self._begin = self._last = None
        self._running = False

    def statuses(self) -> dict[str, EventStatus]:
        return dict(self._statuses)

    @property
    def threads(self) -> list[int]:
        return sorted({g.tid for g in self._groups})

    @property
    def open_fds(self) -> int:
        return sum(len(g.fds) for g in self._groups)

    @property
    def groups(self) -> int:
        return len(self._groups)

    def __enter__(self) -> PerfEventCounters:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def fd_count() -> int:
    """Open descriptors of this process (for leak tests and doctor)."""
    return len(os.listdir("/proc/self/fd")) if Path("/proc/self/fd").is_dir() else -1
