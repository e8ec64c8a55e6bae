"""What one counted repeat costs, against the physical limit: one raw group ``read()``.

Owns: timing, side by side in one run and interleaved round by round (so a
busy machine loads every variant alike), the ways of bracketing a region
with counters on 1, 4 and 16 threads:

- ``raw read``: one ``os.read`` of one group leader, the unit every other
  figure is divided by (a repeat cannot cost less than reading the counters);
- ``free-running`` (the default): ``start()`` + ``stop()``, a read of every
  group at each end, no enable/disable;
- ``toggled``: ``PerfEventCounters(free_running=False)``, one ``prctl`` to
  enable and one to disable every group, one read of each group at ``stop``;
- ``per-group ioctls``: the way it was done before, rebuilt here from the same
  primitives for the comparison: a read of every group, an enable ioctl per
  group at start, a disable ioctl per group, a read of every group and the
  decode at stop;
- ``decode``: what the deferred arithmetic costs when a sample is first
  looked at (after the region, outside the repeat loop).

Also the counted cost of an empty region (its ``task_clock``), the part of
the bracketing that lands inside every measured repeat.

Must not: change how counting works; it only times the public classes.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from pytest_inferperf.pmu import perf_event as pe
from pytest_inferperf.pmu.perf_backend import PerfEventCounters, decode, thread_ids

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")


@contextlib.contextmanager
def idle_threads(total: int) -> Iterator[None]:
    """Idle threads (blocked on an Event) until ``total`` threads are alive in the process."""
    stop = threading.Event()
    threads: list[threading.Thread] = []
    try:
        for _ in range(3):  # top up: a thread that was ending when counted is gone
            for _ in range(max(0, total - len(thread_ids()))):
                t = threading.Thread(target=stop.wait, daemon=True, name="cost-idle")
                t.start()
                threads.append(t)
            time.sleep(0.05)
        yield
    finally:
        stop.set()
        for t in threads:
            t.join()


def _old_way(counters: PerfEventCounters) -> Callable[[], Any]:
    """start + stop as before: per-group enable/disable ioctls, reads parsed, eager decode."""
    groups = list(counters._groups)  # a toggled set: the task clock in its own group, as before
    layout = counters._layout

    def snapshot() -> list[pe.GroupRead]:
        return [pe.read_group(g.leader, len(g.fds)) for g in groups]

    reader = pe.GroupReader([(g.leader, len(g.fds)) for g in groups])

    def region() -> Any:
        begin = snapshot()
        for g in groups:
            pe.ioctl_group(g.leader, pe.PERF_EVENT_IOC_ENABLE)
        for g in groups:
            pe.ioctl_group(g.leader, pe.PERF_EVENT_IOC_DISABLE)
        end = snapshot()
        # The old decode worked on the parsed reads; decode() does the same sums.
        data = reader.read()
        return begin, end, decode(layout, data, data).counts

    return region


def _timed(fn: Callable[[], Any], n: int) -> list[float]:
    out = []
    clock = time.perf_counter_ns
    for _ in range(n):
        t0 = clock()
        fn()
        out.append((clock() - t0) / 1e3)
    return out


def _start_stop(counters: PerfEventCounters) -> Callable[[], Any]:
    def region() -> Any:
        counters.start()
        return counters.stop()

    return region


def _empty_regions(counters: PerfEventCounters, n: int = 20) -> list[float]:
    """task_clock µs counted by empty regions: the bracketing's share inside a repeat."""
    out = []
    for _ in range(n):
        counters.start()
        out.append(counters.stop().counts["task_clock"].value / 1e3)
    return out


def _one_round(
    kind: str,
    n: int,
    times: dict[str, list[float]],
    empty: dict[str, list[float]],
    info: dict[str, tuple[int, int, int]],
) -> None:
    """Open the counters ``kind`` needs (only they are open), warm up, time ``n`` repeats."""
    counters = PerfEventCounters(free_running=kind == "free_running")
    counters.open()
    try:
        info[kind] = (len(counters.threads), counters.groups, counters.open_fds)
        if kind == "raw_read":
            leader = counters._groups[0]
            size = pe.read_size(len(leader.fds))
            times[kind].extend(_timed(lambda: os.read(leader.leader, size), n))
            return
        region = _old_way(counters) if kind == "old_per_group_ioctls" else _start_stop(counters)
        for _ in range(20):
            region()
        if kind == "free_running":
            kept: list[Any] = []
            times[kind].extend(_timed(lambda: kept.append(region()), n))
            it = iter(kept)
            times["decode"].extend(_timed(lambda: len(next(it).counts), n))
        else:
            times[kind].extend(_timed(region, n))
        if kind != "old_per_group_ioctls":
            empty[kind].extend(_empty_regions(counters))
    finally:
        counters.close()


KINDS = ("raw_read", "free_running", "toggled", "old_per_group_ioctls")


def measure(
    thread_counts: Sequence[int] = (1, 4, 16), samples: int = 2000, rounds: int = 10
) -> list[dict[str, Any]]:
    """Median µs per variant, per number of threads alive; ratios to one raw read.

    Rounds rotate the variants' order; each round opens only the set it times,
    so the toggled set is the only one of its thread (the one-prctl path).
    """
    rows = []
    per_round = max(1, samples // rounds)
    for wanted in thread_counts:
        with idle_threads(wanted):
            times: dict[str, list[float]] = {k: [] for k in (*KINDS, "decode")}
            empty: dict[str, list[float]] = {"free_running": [], "toggled": []}
            info: dict[str, tuple[int, int, int]] = {}
            for r in range(rounds):
                for kind in KINDS[r % 4 :] + KINDS[: r % 4]:
                    _one_round(kind, per_round, times, empty, info)
            load = list(os.getloadavg())
        med = {k: statistics.median(v) for k, v in times.items()}
        raw = med["raw_read"]
        threads = info["free_running"][0]
        variants = KINDS[1:]
        rows.append(
            {
                "threads_alive": threads,
                "groups": {k: info[k][1] for k in variants},
                "open_fds": {k: info[k][2] for k in variants},
                "samples": per_round * rounds,
                "median_us": med,
                "p90_us": {k: sorted(v)[int(0.9 * (len(v) - 1))] for k, v in times.items()},
                "raw_reads_per_repeat": {k: med[k] / raw for k in variants},
                "raw_reads_per_thread": {k: med[k] / raw / threads for k in variants},
                "empty_region_task_clock_us": {k: statistics.median(v) for k, v in empty.items()},
                "load_avg_after": load,
            }
        )
    return rows


def format_rows(rows: Sequence[dict[str, Any]]) -> list[str]:
    head = (
        "threads | raw read µs | free-running µs (raw reads) | toggled µs (raw reads) | "
        "per-group ioctls µs (raw reads) | decode µs | free-running per thread (raw reads)"
    )
    out = [head]
    for r in rows:
        m, x = r["median_us"], r["raw_reads_per_repeat"]
        out.append(
            f"{r['threads_alive']} | {m['raw_read']:.2f} | {m['free_running']:.1f} "
            f"({x['free_running']:.1f}) | {m['toggled']:.1f} ({x['toggled']:.1f}) | "
            f"{m['old_per_group_ioctls']:.1f} ({x['old_per_group_ioctls']:.1f}) | "
            f"{m['decode']:.1f} | {r['raw_reads_per_thread']['free_running']:.2f}"
        )
    return out


if __name__ == "__main__":
    for line in format_rows(measure()):
        print(line)
