"""Real counting on this machine with the events it has (software events here).

These open real perf events: task-clock, page-faults and friends work in
VMs without a PMU, so the whole perf_event_open path runs for real.
"""

from __future__ import annotations

import hashlib
import mmap
import threading
import time

import pytest

from pytest_inferperf.pmu import make_backend
from pytest_inferperf.pmu.base import CountersError
from pytest_inferperf.pmu.cpu import identify
from pytest_inferperf.pmu.events import resolve
from pytest_inferperf.pmu.perf_backend import PerfEventCounters, fd_count

PAGE = mmap.PAGESIZE
SOFTWARE = ("task_clock", "page_faults", "context_switches", "cpu_migrations")


def spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def measure(counters: PerfEventCounters, work) -> dict[str, float]:
    counters.start()
    work()
    sample = counters.stop()
    return {name: count.value for name, count in sample.counts.items()}


@pytest.fixture
def counters():
    with PerfEventCounters(events=SOFTWARE) as c:
        yield c


def test_software_events_are_available(counters):
    statuses = counters.statuses()
    assert all(statuses[name].available for name in SOFTWARE), statuses


def test_task_clock_grows_with_the_work_done(counters):
    # Fixed amounts of work, not of time: on a loaded machine a timed spin is preempted.
    small = measure(counters, lambda: hash_work(10))["task_clock"]
    large = measure(counters, lambda: hash_work(50))["task_clock"]
    assert small > 0.5e6  # ten 1 MiB SHA-256s take milliseconds
    assert 3.0 < large / small < 8.0


def test_page_faults_grow_when_new_memory_is_touched(counters):
    quiet = measure(counters, lambda: None)["page_faults"]
    pages = 2048

    def touch():
        buf = mmap.mmap(-1, pages * PAGE)  # fresh mapping: one fault per page on first touch
        buf.madvise(mmap.MADV_NOHUGEPAGE)  # transparent huge pages would fault 2 MiB at a time
        for offset in range(0, pages * PAGE, PAGE):
            buf[offset] = 1
        buf.close()

    assert quiet < 50
    # Every region counts its own faults: a group mixing task_clock with page_faults
    # once lost them after the first disable/enable cycle.
    for _ in range(3):
        touched = measure(counters, touch)["page_faults"]
        assert pages * 0.95 <= touched <= pages * 1.2


def hash_work(rounds: int = 40) -> None:
    """CPU work that releases the GIL (hashlib does for large buffers)."""
    data = b"x" * (1 << 20)
    for _ in range(rounds):
        hashlib.sha256(data).digest()


def test_threads_started_before_and_inside_the_region_are_counted(counters):
    reference = measure(counters, hash_work)["task_clock"]
    ready, go = threading.Event(), threading.Event()

    def pool_thread():  # like ONNX Runtime's pool: exists before counting opens
        ready.set()
        go.wait()
        hash_work()

    before = threading.Thread(target=pool_thread)
    before.start()
    ready.wait()
    with PerfEventCounters(events=SOFTWARE) as c:
        assert before.native_id in c.threads
        c.start()
        go.set()
        inside = threading.Thread(target=hash_work)
        inside.start()
        inside.join()
        before.join()
        sample = c.stop()
    total = sample.counts["task_clock"].value
    assert total >= 1.7 * reference, (total, reference)
    # The pre-existing thread has counters of its own ...
    assert sample.per_thread[before.native_id]["task_clock"] >= 0.8 * reference
    # ... the thread created inside the region inherits its creator's (this thread's).
    assert sample.per_thread[threading.get_native_id()]["task_clock"] >= 0.8 * reference


def test_each_region_is_a_delta(counters):
    first = measure(counters, lambda: spin(0.02))["task_clock"]
    idle = measure(counters, lambda: None)["task_clock"]
    assert idle < 0.1 * first


def test_no_descriptor_leak_after_1000_cycles():
    before = fd_count()
    for _ in range(1000):
        c = PerfEventCounters(events=("task_clock", "page_faults"))
        c.open()
        c.start()
        c.stop()
        c.close()
    assert fd_count() == before


def test_descriptors_are_closed_when_open_fails(monkeypatch):
    before = fd_count()
    c = PerfEventCounters(events=SOFTWARE)
    from pytest_inferperf.pmu import perf_backend

    calls = {"n": 0}
    real = perf_backend.pe.open_event

    def flaky(*args, **kwargs):
        calls["n"] += 1
        if kwargs.get("inherit") and calls["n"] > 3:
            import errno

            raise perf_backend.pe.PerfOpenError(
                errno.EMFILE, perf_backend.pe.errno_reason(errno.EMFILE)
            )
        return real(*args, **kwargs)

    monkeypatch.setattr(perf_backend.pe, "open_event", flaky)
    with pytest.raises(CountersError, match="ulimit -n"):
        c.open()
    assert fd_count() == before


def test_hardware_events_are_never_silently_zero():
    with PerfEventCounters(events=("cycles", "instructions", "task_clock")) as counters:
        statuses = counters.statuses()
        sample = measure(counters, lambda: spin(0.005))
    for name in ("cycles", "instructions"):
        if statuses[name].available:
            assert sample[name] > 0
        else:
            assert name not in sample
            assert statuses[name].reason


def test_unavailable_hardware_on_this_vm_says_why():
    cpu = identify()
    if cpu.pmus:
        pytest.skip("this machine exposes a PMU")
    with PerfEventCounters(events=("cycles",), cpu=cpu) as counters:
        reason = counters.statuses()["cycles"].reason
    assert reason is not None
    if cpu.arch == "x86_64":
        assert reason.startswith("no PMU exposed (ENOENT)")
    else:
        assert "no PMU exposed" in reason
    assert resolve(["task_clock"], cpu).events["task_clock"][0].source == "software"


def test_null_backend_counts_nothing_and_says_so():
    backend = make_backend("none", events=("cycles", "task_clock"))
    backend.open()
    backend.start()
    assert backend.stop().counts == {}
    assert all("none" in s.reason for s in backend.statuses().values())


def test_unknown_backend_is_a_clear_error():
    with pytest.raises(CountersError, match="choose one of"):
        make_backend("magic")
