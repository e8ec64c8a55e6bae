"""The machine's state while a workload was measured, and a fixed calibration workload.

Owns: reading what the rest of the machine did during a measurement - steal time and
the other CPUs' busy time (``/proc/stat``), the load average, this process's
involuntary context switches and CPU time against wall time (``getrusage``), the
clock frequency where ``cpufreq`` is readable - as :class:`Snapshot` pairs turned into
one plain ``conditions`` mapping (stored in the Profile); the calibration workload
(:func:`calibration_round`: fixed hashing and sorting in compiled code, about 2 ms of
one CPU a round) timed next to every measurement; and :func:`busy_reasons`, which says in words
whether those conditions were contended.

Must not: judge a test (that is ``judge.noise`` and ``diagnose.assessment``) or measure the
workload.
Everything it cannot read is recorded as ``None`` with the reason, never as 0.

The calibration's work never changes within one ``CALIBRATION_VERSION``: its timings
from two runs, on the same machine class, say how much slower the machine was at one
time than at the other. Wall time follows time slicing (other runnable processes), CPU
time follows steal, shared caches and the clock.
"""

from __future__ import annotations

import contextlib
import os
import resource
import statistics
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONDITIONS_VERSION = 1
#: Version 2 (0.1): compiled work only, into buffers allocated once. Version 1 timed a
#: pure-Python loop and freshly allocated numpy arrays: on the 2-vCPU VM, quiet, the
#: fastest of four rounds moved 4.5-7.3 ms between processes (the interpreter's loop
#: speed follows the process's memory layout; new arrays cost page faults), so one
#: run read "the machine 1.5x slower" against another with nothing else running. This
#: work's fastest round moved 1.17-1.32 ms over the same eight processes.
CALIBRATION_VERSION = 2
CALIBRATION_WORK = (
    "SHA-256 of a fixed 64 KiB block 24 times (hashlib), then 6 in-place sorts of a "
    "fixed 40,000-element float64 array copied into a buffer allocated once "
    "(numpy, one thread)"
)
#: Rounds of the calibration around each measurement, half before and half after (about
#: 2 ms of CPU each); a process's first round is run once, untimed, before any is timed.
CALIBRATION_ROUNDS = 4

#: A measurement is contended when any of these holds (``busy_reasons``).
STEAL_BUSY = 0.05  # 5% of all CPU time stolen by the hypervisor
OTHERS_BUSY_CPUS = 0.5  # other processes kept half a CPU busy on average
CALIBRATION_SHARE_BUSY = 0.85  # the single-threaded calibration got < 85% of a CPU

_PROC_STAT = "/proc/stat"
_LOADAVG = "/proc/loadavg"
_CPUFREQ = "/sys/devices/system/cpu/cpu{n}/cpufreq/scaling_cur_freq"


# -- the calibration workload ----------------------------------------------------------
_BUFFERS: dict[str, Any] = {}  # the calibration's inputs and buffer, made once per process


def _work() -> int:
    import hashlib

    import numpy as np

    if not _BUFFERS:
        _BUFFERS["block"] = bytes(range(256)) * 256  # 64 KiB
        _BUFFERS["values"] = (np.arange(40_000, dtype=np.float64) * 7919.0) % 10_007.0
        _BUFFERS["sorted"] = np.empty(40_000, dtype=np.float64)
    block, values, buffer = _BUFFERS["block"], _BUFFERS["values"], _BUFFERS["sorted"]
    digest = hashlib.sha256()
    for _ in range(24):
        digest.update(block)
    for _ in range(6):
        np.copyto(buffer, values)
        buffer.sort()
    return int.from_bytes(digest.digest()[:8], "big") + int(buffer[-1]) + int(buffer[20_000])


_EXPECTED = None  # the work's result, checked once: deterministic work or no calibration


def calibration_round() -> tuple[int, int]:
    """One round of the fixed work: (wall ns, CPU ns of this thread)."""
    global _EXPECTED
    if _EXPECTED is None:  # first use in this process: buffers, caches, lazy imports
        _EXPECTED = _work()
    wall0, cpu0 = time.perf_counter_ns(), time.thread_time_ns()
    result = _work()
    wall, cpu = time.perf_counter_ns() - wall0, time.thread_time_ns() - cpu0
    if result != _EXPECTED:  # pragma: no cover - a broken numpy or interpreter
        raise RuntimeError("the calibration workload gave another result: not deterministic")
    return wall, cpu


#: Most threads a parallel calibration round runs (each the same work on its own CPU).
PARALLEL_THREADS_MAX = 4


def parallel_threads() -> int:
    """Threads of a parallel calibration round: the CPUs this process may run on (its
    affinity), at most :data:`PARALLEL_THREADS_MAX`; 1 (no parallel round) on one CPU."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, PARALLEL_THREADS_MAX))


def parallel_round(threads: int) -> int:
    """The calibration's work run at once in ``threads`` threads (hashing and sorting
    release the GIL), started together: the slowest thread's wall ns.

    A thread pool (ONNX Runtime's intra-op threads) needs that many CPUs at once; one
    taken by another process, or not scheduled by the hypervisor, holds every thread
    that waits for it. The single-threaded rounds cannot see that: on the 2-vCPU VM a
    default-threaded ONNX Runtime model ran at 3.0 or 8.1 ms per call, switching over
    minutes, while they read the same.
    """
    import threading

    if _EXPECTED is None:  # buffers and the expected result made before any thread starts
        calibration_round()
    barrier = threading.Barrier(threads)
    walls = [0] * threads

    def run(index: int) -> None:
        barrier.wait()
        begin = time.perf_counter_ns()
        _work()
        walls[index] = time.perf_counter_ns() - begin

    workers = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return max(walls)


def calibrate(
    rounds: int = CALIBRATION_ROUNDS, round_fn: Callable[[], tuple[int, int]] = calibration_round
) -> list[list[int]]:
    """``rounds`` timed rounds of the calibration: ``[[wall_ns, cpu_ns], ...]``."""
    return [list(round_fn()) for _ in range(rounds)]


def calibration_summary(rounds: Sequence[Sequence[int]]) -> dict[str, Any]:
    """The calibration's medians (ms) and the share of a CPU it got while it ran."""
    walls = [r[0] / 1e6 for r in rounds]
    cpus = [r[1] / 1e6 for r in rounds]
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    return {
        "version": CALIBRATION_VERSION,
        "work": CALIBRATION_WORK,
        "rounds_wall_ms": [round(v, 4) for v in walls],
        "rounds_cpu_ms": [round(v, 4) for v in cpus],
        "wall_ms": round(wall, 4),
        "cpu_ms": round(cpu, 4),
        "cpu_share": round(min(1.0, cpu / wall), 4) if wall > 0 else None,
    }


# -- machine state ------------------------------------------------------------------------
@dataclass(frozen=True)
class Snapshot:
    """What the machine and this process had done up to one instant."""

    wall_ns: int
    cpu_jiffies: tuple[tuple[int, ...], ...] | None  # per CPU: /proc/stat "cpuN" fields
    process_cpu_s: float
    involuntary_switches: int
    voluntary_switches: int


def parse_proc_stat(text: str) -> tuple[tuple[int, ...], ...]:
    """The per-CPU counters of ``/proc/stat`` (``cpu0``, ``cpu1``, ...; not the total)."""
    rows = []
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if name.startswith("cpu") and name[3:].isdigit():
            rows.append(tuple(int(v) for v in rest.split()))
    return tuple(rows)


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text()
    except OSError:
        return None


def snapshot(read: Callable[[str], str | None] = _read) -> Snapshot:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    text = read(_PROC_STAT)
    return Snapshot(
        wall_ns=time.monotonic_ns(),
        cpu_jiffies=parse_proc_stat(text) if text else None,
        process_cpu_s=usage.ru_utime + usage.ru_stime,
        involuntary_switches=usage.ru_nivcsw,
        voluntary_switches=usage.ru_nvcsw,
    )


# /proc/stat columns (proc(5)): user nice system idle iowait irq softirq steal guest guest_nice
_BUSY = (0, 1, 2, 5, 6)  # guest time is already inside user
_STEAL = 7


def between(
    before: Snapshot,
    after: Snapshot,
    *,
    clock_ticks: int | None = None,
    read: Callable[[str], str | None] = _read,
) -> dict[str, Any]:
    """The conditions of the interval from ``before`` to ``after`` (plain JSON types)."""
    wall_s = max(1e-9, (after.wall_ns - before.wall_ns) / 1e9)
    own_cpu = max(0.0, after.process_cpu_s - before.process_cpu_s)
    out: dict[str, Any] = {
        "version": CONDITIONS_VERSION,
        "wall_s": round(wall_s, 4),
        "process_cpu_s": round(own_cpu, 4),
        "cpu_per_wall": round(own_cpu / wall_s, 4),
        "involuntary_switches": after.involuntary_switches - before.involuntary_switches,
        "involuntary_switches_per_s": round(
            (after.involuntary_switches - before.involuntary_switches) / wall_s, 2
        ),
        "voluntary_switches": after.voluntary_switches - before.voluntary_switches,
    }
    notes: dict[str, str] = {}
    if (
        before.cpu_jiffies
        and after.cpu_jiffies
        and len(before.cpu_jiffies) == len(after.cpu_jiffies)
    ):
        hz = clock_ticks or _clock_ticks()
        deltas = [
            [a - b for a, b in zip(ra, rb, strict=False)]
            for ra, rb in zip(after.cpu_jiffies, before.cpu_jiffies, strict=True)
        ]
        total = sum(sum(d[:8]) for d in deltas)
        busy = sum(d[i] for d in deltas for i in _BUSY if i < len(d))
        steal = sum(d[_STEAL] for d in deltas if len(d) > _STEAL)
        out["cpus"] = len(deltas)
        out["steal"] = round(steal / total, 4) if total > 0 else 0.0
        out["busy_cpus"] = round(busy / hz / wall_s, 3)
        # Jiffies are coarse (10 ms at USER_HZ 100): a short interval may read up to one
        # tick per CPU too much, so that much is given to the others' benefit.
        slack = len(deltas) / hz
        out["others_busy_cpus"] = round(max(0.0, busy / hz - own_cpu - slack) / wall_s, 3)
    else:
        out["cpus"] = os.cpu_count()
        out["steal"] = out["busy_cpus"] = out["others_busy_cpus"] = None
        notes["proc_stat"] = f"not available: {_PROC_STAT} is not readable"
    load = read(_LOADAVG)
    try:
        out["load_avg_1m"] = float(load.split()[0]) if load else None
    except (ValueError, IndexError):
        out["load_avg_1m"] = None
    if out["load_avg_1m"] is None:
        notes["load_avg"] = f"not available: {_LOADAVG} is not readable"
    freq, why = frequency_mhz(read)
    out["freq_mhz"] = freq
    if why:
        notes["freq"] = why
    out["notes"] = notes
    return out


def frequency_mhz(read: Callable[[str], str | None] = _read) -> tuple[float | None, str | None]:
    """The mean current clock of this process's CPUs, or None and why."""
    values = []
    for cpu in sorted(os.sched_getaffinity(0)):
        text = read(_CPUFREQ.format(n=cpu))
        if text is None:
            continue
        with contextlib.suppress(ValueError):
            values.append(int(text.strip()) / 1000.0)  # kHz
    if not values:
        return None, (
            "not available: no cpufreq in sysfs (common in VMs: the hypervisor owns the clock)"
        )
    return round(statistics.fmean(values), 1), None


def _clock_ticks() -> int:
    try:
        return int(os.sysconf("SC_CLK_TCK"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not Linux
        return 100


# -- around one measurement ---------------------------------------------------------------
@contextlib.contextmanager
def recorded(
    out: dict[str, Any],
    *,
    calibrate_rounds: int = CALIBRATION_ROUNDS,
    round_fn: Callable[[], tuple[int, int]] = calibration_round,
) -> Iterator[None]:
    """Fill ``out`` with the conditions of the enclosed block, calibrated before and after.

    The calibration runs just outside the block (half before, half after), so it sees
    the machine as the measurement did and never lands inside the counted region.
    """
    half = max(1, calibrate_rounds // 2) if calibrate_rounds else 0
    threads = parallel_threads() if calibrate_rounds and round_fn is calibration_round else 1
    before = snapshot()
    rounds = calibrate(half, round_fn) if half else []
    parallel = [parallel_round(threads) for _ in range(half)] if threads > 1 else []
    try:
        yield
    finally:
        if calibrate_rounds:
            rounds += calibrate(max(1, calibrate_rounds - half), round_fn)
            if threads > 1:
                parallel += [
                    parallel_round(threads) for _ in range(max(1, calibrate_rounds - half))
                ]
        after = snapshot()
        out.update(between(before, after))
        if rounds:
            out["calibration"] = calibration_summary(rounds)
            if parallel:
                out["calibration"]["parallel_threads"] = threads
                out["calibration"]["rounds_parallel_wall_ms"] = [
                    round(v / 1e6, 4) for v in parallel
                ]
        out["busy_reasons"] = busy_reasons(out)


def busy_reasons(conditions: Mapping[str, Any] | None) -> list[str]:
    """Why the machine counts as contended during a measurement (empty: quiet enough)."""
    if not conditions:
        return []
    reasons = []
    steal = conditions.get("steal")
    if isinstance(steal, int | float) and steal >= STEAL_BUSY:
        reasons.append(f"{steal:.0%} of CPU time stolen by the hypervisor")
    others = conditions.get("others_busy_cpus")
    cpus = conditions.get("cpus")
    if isinstance(others, int | float) and others >= OTHERS_BUSY_CPUS:
        of = f" of {cpus}" if cpus else ""
        reasons.append(f"other processes kept {others:.1f}{of} CPUs busy")
    cal = conditions.get("calibration") or {}
    share = cal.get("cpu_share") if isinstance(cal, Mapping) else None
    if isinstance(share, int | float) and share < CALIBRATION_SHARE_BUSY:
        reasons.append(f"the calibration workload got {share:.0%} of a CPU")
    return reasons


def summary(conditions: Mapping[str, Any] | None) -> str:
    """One line: ``load 2.3, others kept 1.6 CPUs busy, steal 0%, calibration 11.2 ms``."""
    if not conditions:
        return "not recorded"
    parts = []
    if conditions.get("load_avg_1m") is not None:
        parts.append(f"load {conditions['load_avg_1m']:.2f}")
    if conditions.get("others_busy_cpus") is not None:
        parts.append(
            f"others kept {conditions['others_busy_cpus']:.1f} of "
            f"{conditions.get('cpus')} CPUs busy"
        )
    if conditions.get("steal") is not None:
        parts.append(f"steal {conditions['steal']:.0%}")
    cal = conditions.get("calibration")
    if isinstance(cal, Mapping) and cal.get("wall_ms") is not None:
        parts.append(f"calibration {cal['wall_ms']:.3g} ms wall / {cal['cpu_ms']:.3g} ms CPU")
    return ", ".join(parts) or "not recorded"
