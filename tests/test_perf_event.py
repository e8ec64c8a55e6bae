"""The syscall layer: attr layout, read-format decoding, errno -> reason."""

from __future__ import annotations

import ctypes
import errno
import os
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_inferperf.pmu import perf_event as pe


def test_attr_layout_matches_the_kernel_header():
    # PERF_ATTR_SIZE_VER8 = 136; offsets from include/uapi/linux/perf_event.h
    assert ctypes.sizeof(pe.PerfEventAttr) == 136
    assert pe.PerfEventAttr.config.offset == 8
    assert pe.PerfEventAttr.read_format.offset == 32
    assert pe.PerfEventAttr.flags.offset == 40
    assert pe.PerfEventAttr.config1.offset == 56
    assert pe.PerfEventAttr.sample_regs_intr.offset == 96
    assert pe.PerfEventAttr.config3.offset == 128


def test_make_attr_sets_the_flag_bits():
    attr = pe.make_attr(1, 2, disabled=True, inherit=True, exclude_kernel=True)
    assert attr.size == 136 and attr.type == 1 and attr.config == 2
    assert attr.read_format == 0b1111  # GROUP | ID | TOTAL_TIME_RUNNING | TOTAL_TIME_ENABLED
    assert attr.flags == (1 << 0) | (1 << 1) | (1 << 5) | (1 << 6)
    attr = pe.make_attr(1, 2, disabled=False, inherit=False, exclude_kernel=False)
    assert attr.flags == 0


def test_syscall_numbers_per_architecture():
    assert pe.syscall_number("x86_64") == 298
    assert pe.syscall_number("aarch64") == 241
    with pytest.raises(pe.PerfOpenError, match="riscv64"):
        pe.syscall_number("riscv64")


@given(
    enabled=st.integers(0, 2**64 - 1),
    running=st.integers(0, 2**64 - 1),
    values=st.dictionaries(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1), max_size=8),
)
def test_group_read_round_trip(enabled, running, values):
    data = struct.pack("=QQQ", len(values), enabled, running)
    for id_, value in values.items():
        data += struct.pack("=QQ", value, id_)
    read = pe.parse_group_read(data)
    assert (read.time_enabled, read.time_running, read.values) == (enabled, running, values)


@given(st.binary(max_size=64))
def test_group_read_never_crashes_on_garbage(data):
    try:
        read = pe.parse_group_read(data)
    except ValueError as exc:
        assert "short perf group read" in str(exc)
    else:
        assert len(data) >= 24 + 16 * len(read.values)


@pytest.mark.parametrize(
    ("err", "words"),
    [
        (errno.ENOENT, ["no PMU exposed", "ENOENT", "VMs and CI runners", "simulate"]),
        (
            errno.EACCES,
            [
                "perf_event_paranoid is 3",
                "EACCES",
                "sysctl kernel.perf_event_paranoid",
                "CAP_PERFMON",
            ],
        ),
        (errno.EPERM, ["seccomp", "EPERM", "--cap-add PERFMON"]),
        (errno.EMFILE, ["file descriptors", "EMFILE", "ulimit -n"]),
        (errno.EINVAL, ["EINVAL", "counters"]),
        (errno.ENOSYS, ["ENOSYS", "CONFIG_PERF_EVENTS"]),
        (errno.EBUSY, ["EBUSY"]),
        (errno.ENODEV, ["ENODEV"]),
        (errno.EOPNOTSUPP, ["EOPNOTSUPP"]),
    ],
)
def test_errno_reasons_name_the_cause_and_the_fix(err, words):
    reason = pe.errno_reason(err, paranoid=3)
    for word in words:
        assert word in reason


def test_software_enoent_is_not_blamed_on_the_pmu():
    assert "PMU" not in pe.errno_reason(errno.ENOENT, hardware=False)


def test_open_failure_carries_the_reason():
    # PERF_TYPE_SOFTWARE with a config no kernel defines.
    with pytest.raises(pe.PerfOpenError) as info:
        pe.open_event(pe.PERF_TYPE_SOFTWARE, 0xFFFF, hardware=False)
    assert info.value.errno in (errno.ENOENT, errno.EINVAL, errno.EOPNOTSUPP)
    assert info.value.reason


def test_group_reader_fills_one_buffer_with_every_group():
    fds = [
        pe.open_event(pe.PERF_TYPE_SOFTWARE, config, inherit=False, hardware=False)
        for config in (1, 2)
    ]  # task clock, page faults: two groups of one
    try:
        for fd in fds:
            pe.ioctl_group(fd, pe.PERF_EVENT_IOC_ENABLE)
        reader = pe.GroupReader([(fd, 1) for fd in fds])
        assert reader.offsets == [0, pe.read_size(1)] and reader.size == 2 * 40
        data = reader.read()
        assert isinstance(data, bytes) and len(data) == reader.size
        ids = [pe.event_id(fd) for fd in fds]
        for offset, id_ in zip(reader.offsets, ids, strict=True):
            read = pe.parse_group_read(data[offset:])
            assert list(read.values) == [id_]
            assert read.time_enabled > 0
        assert reader.read() != data  # a copy per read: the task clock moved
    finally:
        for fd in fds:
            os.close(fd)


def test_task_events_toggles_what_this_thread_opened():
    fd = pe.open_event(pe.PERF_TYPE_SOFTWARE, 1, inherit=False, hardware=False)
    try:
        pe.task_events(True)
        first = pe.read_group(fd, 1).time_enabled
        assert first > 0
        pe.task_events(False)
        stopped = pe.read_group(fd, 1).time_enabled
        assert pe.read_group(fd, 1).time_enabled == stopped
    finally:
        os.close(fd)


def test_a_counter_that_excludes_the_kernel_never_counts_context_switches():
    # The mechanism behind events.KERNEL_ONLY_SOFTWARE, on this machine's kernel: the
    # same thread sleeps 20 times; the counter that excludes the kernel stays at 0.
    import time

    from pytest_inferperf.pmu.events import SW_CONTEXT_SWITCHES

    def switches(exclude_kernel: bool) -> int:
        fd = pe.open_event(
            pe.PERF_TYPE_SOFTWARE,
            SW_CONTEXT_SWITCHES,
            inherit=False,
            exclude_kernel=exclude_kernel,
            hardware=False,
        )
        try:
            pe.ioctl_group(fd, pe.PERF_EVENT_IOC_ENABLE)
            for _ in range(20):
                time.sleep(0.001)
            return next(iter(pe.read_group(fd, 1).values.values()))
        finally:
            os.close(fd)

    assert switches(exclude_kernel=False) >= 20
    assert switches(exclude_kernel=True) == 0


def test_an_unprivileged_plan_does_not_count_kernel_only_software_events():
    from pytest_inferperf.pmu.cpu import identify
    from pytest_inferperf.pmu.perf_backend import plan_groups

    cpu = identify()
    names = ["task_clock", "page_faults", "context_switches", "cpu_migrations"]
    statuses, _, _ = plan_groups(names, cpu, exclude_kernel=True, free_running=False)
    for name in ("context_switches", "cpu_migrations"):
        assert not statuses[name].available
        assert statuses[name].reason.startswith("counted in user mode only: ")
        assert "kernel.perf_event_paranoid=1" in statuses[name].reason
    assert statuses["task_clock"].available and statuses["page_faults"].available
    kept, _, _ = plan_groups(names, cpu, exclude_kernel=False, free_running=False)
    assert all(s.available for s in kept.values())
