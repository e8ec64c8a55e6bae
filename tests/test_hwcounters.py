"""Hardware counters on a real PMU: threads, multiplexing, inherit and thread pools.

These open real ``perf_event`` hardware counters, so they run only where the
machine exposes a PMU that counts instructions (CI runs them in an emulated
Arm guest with Linux's own ``armv8_pmuv3`` driver, see ``.ci/arm-guest``).
Elsewhere every test here skips with the reason the event cannot be opened.
Select them with ``-m hwcounters``.

Workloads are Python loops: their instruction counts are not exact, so the
assertions compare counts of one region with each other (a thread that did
the work shows it; multiplexed copies of one event agree), never with a
constant measured elsewhere.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from pytest_inferperf.pmu import perf_event as pe
from pytest_inferperf.pmu.cpu import identify
from pytest_inferperf.pmu.events import resolve
from pytest_inferperf.pmu.perf_backend import PerfEventCounters, needs_exclude_kernel, probe_event

pytestmark = pytest.mark.hwcounters

LOOPS = 200_000  # a few tens of millions of instructions in CPython


def spin(n: int = LOOPS) -> int:
    total = 0
    for i in range(n):
        total += i * i
    return total


@pytest.fixture(scope="module")
def hw():
    """The CPU facts and its resolved ``instructions`` counter, or a skip with the reason."""
    cpu = identify()
    res = resolve(["instructions"], cpu)
    if "instructions" in res.unavailable:
        pytest.skip(f"no hardware PMU here: instructions {res.unavailable['instructions']}")
    (event, *_) = res.events["instructions"]
    reason = probe_event(event, exclude_kernel=needs_exclude_kernel(cpu), paranoid=cpu.paranoid)
    if reason:
        pytest.skip(f"no hardware PMU here: instructions: {reason}")
    return cpu, event


def count_region(cpu, work, events=("instructions", "cycles", "task_clock")):
    counters = PerfEventCounters(events=events, cpu=cpu)
    counters.open()
    try:
        counters.start()
        work()
        return counters.stop(), counters
    finally:
        counters.close()


def test_thread_started_before_the_region_is_counted_on_its_own_tid(hw):
    cpu, _ = hw
    go, tid = threading.Event(), []

    def worker():
        tid.append(threading.get_native_id())
        go.wait()
        spin()

    thread = threading.Thread(target=worker)
    thread.start()
    while not tid:
        pass
    counters = PerfEventCounters(events=("instructions",), cpu=cpu)
    counters.open()
    try:
        assert tid[0] in counters.threads  # its own counter set, opened by tid
        counters.start()
        go.set()
        thread.join()
        sample = counters.stop()
    finally:
        counters.close()
    worker_count = sample.per_thread[tid[0]]["instructions"]
    main = os.getpid()
    assert worker_count > 5_000_000
    # The main thread only waited on join: the worker did most of the region's work.
    assert worker_count > sample.per_thread[main]["instructions"]
    assert sample.counts["instructions"].value >= worker_count


def test_thread_started_inside_the_region_is_counted_by_inherit(hw):
    cpu, _ = hw
    alone, _ = count_region(cpu, spin)
    idle, _ = count_region(cpu, lambda: None)

    def in_thread():
        thread = threading.Thread(target=spin)
        thread.start()
        thread.join()

    inherited, _ = count_region(cpu, in_thread)
    main_only = alone.counts["instructions"].value
    assert main_only > 5_000_000
    # The new thread had no counter of its own: inherit carried its work into the
    # main thread's counters (summed when the thread exited).
    got = inherited.counts["instructions"].value - idle.counts["instructions"].value
    assert got > 0.7 * main_only, (got, main_only)
    # ... once: not also on a counter of its own, nor twice through the sum over threads.
    assert got < 1.3 * main_only, (got, main_only)


def test_a_thread_pool_created_before_the_region_counts_every_worker(hw):
    cpu, _ = hw
    with ThreadPoolExecutor(max_workers=2) as pool:
        barrier = threading.Barrier(2)
        tids = set(pool.map(lambda _: (barrier.wait(), threading.get_native_id())[1], range(2)))
        assert len(tids) == 2  # both workers exist before counting opens
        counters = PerfEventCounters(events=("instructions", "task_clock"), cpu=cpu)
        counters.open()
        try:
            assert tids <= set(counters.threads)
            counters.start()
            busy = threading.Barrier(2)
            done = set(
                pool.map(lambda _: (busy.wait(), spin(), threading.get_native_id())[2], range(2))
            )
            sample = counters.stop()
        finally:
            counters.close()
    assert done == tids
    for tid in tids:
        assert sample.per_thread[tid]["instructions"] > 5_000_000, sample.per_thread
    total = sample.counts["instructions"].value
    assert total >= sum(sample.per_thread[t]["instructions"] for t in tids)


def test_more_counters_than_the_pmu_has_multiplex_and_scale(hw):
    cpu, event = hw
    exclude = needs_exclude_kernel(cpu)
    counters = PerfEventCounters(events=("instructions",), cpu=cpu)
    counters.open()
    capacity = counters.capacities[event.pmu]
    counters.close()
    copies = capacity + 3  # more than the programmable counters: they must take turns
    fds = [
        pe.open_event(event.type, event.config, tid=0, inherit=False, exclude_kernel=exclude)
        for _ in range(copies)
    ]
    try:
        for fd in fds:
            pe.ioctl_group(fd, pe.PERF_EVENT_IOC_ENABLE)
        spin(LOOPS * 4)  # long enough for several rotations of the multiplexing timer
        for fd in fds:
            pe.ioctl_group(fd, pe.PERF_EVENT_IOC_DISABLE)
        reads = [pe.read_group(fd, 1) for fd in fds]
    finally:
        for fd in fds:
            os.close(fd)
    assert all(r.time_enabled > 0 for r in reads)
    multiplexed = [r for r in reads if r.time_running < r.time_enabled]
    assert multiplexed, f"{copies} counters on a PMU of {capacity} never took turns"
    scaled = sorted(
        next(iter(r.values.values())) * r.time_enabled / r.time_running
        for r in reads
        if r.time_running > 0
    )
    median = scaled[len(scaled) // 2]
    # Each estimate is the same event over the same region: they agree after scaling.
    assert all(abs(s - median) < 0.25 * median for s in scaled), scaled


def test_a_group_larger_than_the_pmu_is_refused_or_never_runs(hw):
    cpu, event = hw
    exclude = needs_exclude_kernel(cpu)
    counters = PerfEventCounters(events=("instructions",), cpu=cpu)
    counters.open()
    capacity = counters.capacities[event.pmu]
    counters.close()
    fds: list[int] = []
    refused = None
    try:
        for _ in range(capacity + 1):
            try:
                fds.append(
                    pe.open_event(
                        event.type,
                        event.config,
                        tid=0,
                        group_fd=fds[0] if fds else -1,
                        inherit=False,
                        exclude_kernel=exclude,
                    )
                )
            except pe.PerfOpenError as exc:
                refused = exc
                break
        if refused is None:
            pe.ioctl_group(fds[0], pe.PERF_EVENT_IOC_ENABLE)
            spin(LOOPS // 4)
            pe.ioctl_group(fds[0], pe.PERF_EVENT_IOC_DISABLE)
            assert pe.read_group(fds[0], len(fds)).time_running == 0
        else:
            assert len(fds) == capacity  # the one past the capacity was refused
    finally:
        for fd in fds:
            os.close(fd)


def test_the_backend_splits_events_into_groups_that_fit(hw):
    cpu, event = hw
    sample, counters = count_region(cpu, spin)
    capacity = counters.capacities[event.pmu]
    for group in counters._plan:
        hardware = [e for e in group if e.hardware]
        assert len(hardware) <= capacity
    count = sample.counts["instructions"]
    assert count.raw > 5_000_000
    assert count.running_fraction > 0.99  # fitted groups never multiplex


def test_flamegraph_draws_native_stacks_or_says_in_one_line_that_perf_sampled_nothing(hw, tmp_path):
    """On a PMU that counts, ``perf record`` either samples (native view) or, as on
    GitHub's Arm runners, collects nothing: then one line says so and the Python
    sampler's view is drawn instead."""
    import shutil

    from pytest_inferperf.measure.flame import capture

    if shutil.which("perf") is None:
        pytest.skip("perf is not installed (linux-perf)")
    graphs = capture(spin, name="hw::spin", out_dir=tmp_path, seconds=1.0)
    native = graphs.native
    assert native is not None
    if native.folded:
        assert graphs.view == "native" and "native.svg" in graphs.paths
        assert native.samples > 0
    else:
        reason = graphs.reasons["native"]
        assert "\n" not in reason
        assert reason.startswith("not available: perf record collected no samples"), reason
        assert graphs.view == "python" and "python.svg" in graphs.paths
        assert any(":spin" in k for k in graphs.folded)
