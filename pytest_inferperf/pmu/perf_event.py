"""The perf_event_open system call, through ctypes.

Owns: the ``perf_event_attr`` layout, the syscall numbers per architecture,
opening one counter, group reads (GROUP | TOTAL_TIME_ENABLED |
TOTAL_TIME_RUNNING | ID), one at a time or many into one preallocated
buffer, the enable/disable/reset ioctls on whole groups, enabling or
disabling every counter the calling thread opened with one ``prctl``, and
turning an errno into a reason a user can act on.

Must not: decide which events to count or how to combine them; that is
``events`` (what) and ``counters`` (how many threads, which groups).

Layout and constants: Linux ``include/uapi/linux/perf_event.h``;
syscall numbers: ``arch/x86/entry/syscalls/syscall_64.tbl`` (298) and
``include/uapi/asm-generic/unistd.h`` (241, used by arm64).
"""

from __future__ import annotations

import ctypes
import errno
import io
import os
import platform
import struct
from dataclasses import dataclass

from ..core.errors import InferperfError

# perf_type_id
PERF_TYPE_HARDWARE = 0
PERF_TYPE_SOFTWARE = 1
PERF_TYPE_TRACEPOINT = 2
PERF_TYPE_HW_CACHE = 3
PERF_TYPE_RAW = 4

# perf_event_read_format
PERF_FORMAT_TOTAL_TIME_ENABLED = 1 << 0
PERF_FORMAT_TOTAL_TIME_RUNNING = 1 << 1
PERF_FORMAT_ID = 1 << 2
PERF_FORMAT_GROUP = 1 << 3
READ_FORMAT = (
    PERF_FORMAT_GROUP
    | PERF_FORMAT_TOTAL_TIME_ENABLED
    | PERF_FORMAT_TOTAL_TIME_RUNNING
    | PERF_FORMAT_ID
)

# perf_event_attr flag bits (the bitfield after read_format)
FLAG_DISABLED = 1 << 0
FLAG_INHERIT = 1 << 1
FLAG_EXCLUDE_KERNEL = 1 << 5
FLAG_EXCLUDE_HV = 1 << 6

# ioctls: _IO('$', n)
PERF_EVENT_IOC_ENABLE = 0x2400
PERF_EVENT_IOC_DISABLE = 0x2401
PERF_EVENT_IOC_RESET = 0x2403
PERF_IOC_FLAG_GROUP = 1

PERF_FLAG_FD_CLOEXEC = 1 << 3

# prctl options (include/uapi/linux/prctl.h): enable or disable every event the
# calling task created (its perf_event_list, kernel/events/core.c
# perf_event_task_enable), whichever thread the event counts.
PR_TASK_PERF_EVENTS_DISABLE = 31
PR_TASK_PERF_EVENTS_ENABLE = 32

SYSCALL_NUMBERS = {"x86_64": 298, "aarch64": 241, "arm64": 241}


class PerfEventAttr(ctypes.Structure):
    """``struct perf_event_attr`` up to ``config3`` (PERF_ATTR_SIZE_VER8, 136 bytes).

    Older kernels accept a larger struct as long as the bytes they do not
    know are zero, which they are unless a newer field is set.
    """

    _fields_ = [
        ("type", ctypes.c_uint32),
        ("size", ctypes.c_uint32),
        ("config", ctypes.c_uint64),
        ("sample_period", ctypes.c_uint64),
        ("sample_type", ctypes.c_uint64),
        ("read_format", ctypes.c_uint64),
        ("flags", ctypes.c_uint64),
        ("wakeup_events", ctypes.c_uint32),
        ("bp_type", ctypes.c_uint32),
        ("config1", ctypes.c_uint64),
        ("config2", ctypes.c_uint64),
        ("branch_sample_type", ctypes.c_uint64),
        ("sample_regs_user", ctypes.c_uint64),
        ("sample_stack_user", ctypes.c_uint32),
        ("clockid", ctypes.c_int32),
        ("sample_regs_intr", ctypes.c_uint64),
        ("aux_watermark", ctypes.c_uint32),
        ("sample_max_stack", ctypes.c_uint16),
        ("reserved_2", ctypes.c_uint16),
        ("aux_sample_size", ctypes.c_uint32),
        ("reserved_3", ctypes.c_uint32),
        ("sig_data", ctypes.c_uint64),
        ("config3", ctypes.c_uint64),
    ]


PERF_ATTR_SIZE = ctypes.sizeof(PerfEventAttr)
assert PERF_ATTR_SIZE == 136, PERF_ATTR_SIZE

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
# A second handle so these two can carry argtypes (ctypes then converts
# plain ints without guessing) while ``_libc.ioctl`` keeps taking pointers.
_fast = ctypes.CDLL(None, use_errno=True)
_fast_ioctl = _fast.ioctl
_fast_ioctl.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong)
_fast_ioctl.restype = ctypes.c_int
_fast_prctl = _fast.prctl
_fast_prctl.argtypes = (
    ctypes.c_int,
    ctypes.c_ulong,
    ctypes.c_ulong,
    ctypes.c_ulong,
    ctypes.c_ulong,
)
_fast_prctl.restype = ctypes.c_int


class PerfOpenError(InferperfError, OSError):
    """perf_event_open failed; ``reason`` says why in the user's terms."""

    def __init__(self, err: int, reason: str) -> None:
        super().__init__(err, reason)
        self.reason = reason


def syscall_number(machine: str | None = None) -> int:
    """The perf_event_open syscall number for this (or the named) architecture."""
    machine = machine or platform.machine()
    try:
        return SYSCALL_NUMBERS[machine]
    except KeyError:
        raise PerfOpenError(
            errno.ENOSYS,
            f"not available: perf_event_open is supported on x86_64 and aarch64, "
            f"this machine is {machine!r}",
        ) from None


def make_attr(
    type_: int, config: int, *, disabled: bool, inherit: bool, exclude_kernel: bool
) -> PerfEventAttr:
    """A counting (not sampling) attr with our read format."""
    attr = PerfEventAttr()
    attr.type = type_
    attr.size = PERF_ATTR_SIZE
    attr.config = config
    attr.read_format = READ_FORMAT
    flags = 0
    if disabled:
        flags |= FLAG_DISABLED
    if inherit:
        flags |= FLAG_INHERIT
    if exclude_kernel:
        flags |= FLAG_EXCLUDE_KERNEL | FLAG_EXCLUDE_HV
    attr.flags = flags
    return attr


def open_event(
    type_: int,
    config: int,
    *,
    tid: int = 0,
    cpu: int = -1,
    group_fd: int = -1,
    inherit: bool = True,
    exclude_kernel: bool = True,
    hardware: bool = True,
    paranoid: int | None = None,
) -> int:
    """Open one counter on thread ``tid`` (0 = the calling thread); return its fd.

    The leader of a group is opened disabled; members follow the leader.
    Raises :class:`PerfOpenError` with a user-facing reason.
    """
    attr = make_attr(
        type_, config, disabled=group_fd == -1, inherit=inherit, exclude_kernel=exclude_kernel
    )
    fd = _libc.syscall(
        syscall_number(),
        ctypes.byref(attr),
        ctypes.c_int(tid),
        ctypes.c_int(cpu),
        ctypes.c_int(group_fd),
        ctypes.c_ulong(PERF_FLAG_FD_CLOEXEC),
    )
    if fd < 0:
        err = ctypes.get_errno()
        raise PerfOpenError(err, errno_reason(err, hardware=hardware, paranoid=paranoid))
    return int(fd)


def ioctl_group(fd: int, request: int) -> None:
    """Apply ENABLE/DISABLE/RESET to the whole group led by ``fd``."""
    if _fast_ioctl(fd, request, PERF_IOC_FLAG_GROUP):
        err = ctypes.get_errno()
        raise OSError(err, f"perf_event ioctl {request:#x} failed: {os.strerror(err)}")


def task_events(enable: bool) -> None:
    """Enable (or disable) every perf event the *calling thread* opened, in one call.

    ``prctl(PR_TASK_PERF_EVENTS_ENABLE/DISABLE)`` walks the caller's own
    list of created events, including those that count other threads and
    their inherited copies; it does not touch events another thread opened,
    and it touches every event this thread opened, whoever uses it.
    """
    option = PR_TASK_PERF_EVENTS_ENABLE if enable else PR_TASK_PERF_EVENTS_DISABLE
    if _fast_prctl(option, 0, 0, 0, 0):
        err = ctypes.get_errno()
        raise OSError(err, f"prctl({option}) failed: {os.strerror(err)}")


@dataclass(frozen=True)
class GroupRead:
    """One read of a group: times in ns, and value per event id."""

    time_enabled: int
    time_running: int
    values: dict[int, int]


def read_size(members: int) -> int:
    """Bytes one READ_FORMAT read of a group of ``members`` events returns."""
    return 8 * (3 + 2 * members)


def read_group(fd: int, members: int) -> GroupRead:
    """Read a group leader with READ_FORMAT (``members`` events in the group)."""
    data = os.read(fd, read_size(members))
    return parse_group_read(data)


class GroupReader:
    """Reads many groups, one ``read`` each, into one buffer allocated once.

    ``read()`` does only the system calls (``FileIO.readinto`` straight into
    a slice of the buffer: measured cheaper than ``os.readv`` or ``os.read``
    and a join) and one copy of the buffer; what it returns is decoded later
    (:func:`parse_group_read` on a slice, or ``struct.unpack_from`` at
    :attr:`offsets`), so no arithmetic runs while the counters count. The
    caller keeps the descriptors open while the reader is used and closes them.
    """

    def __init__(self, groups: list[tuple[int, int]]) -> None:
        """``groups``: (leader fd, number of events) per group, in buffer order."""
        self.offsets: list[int] = []
        size = 0
        for _, members in groups:
            self.offsets.append(size)
            size += read_size(members)
        self.size = size
        self._buffer = bytearray(size)
        view = memoryview(self._buffer)
        # closefd=False: the FileIO objects never close the counters' descriptors.
        self._files = [io.FileIO(fd, "r", closefd=False) for fd, _ in groups]
        self._plan = [
            (file.readinto, view[off : off + read_size(members)])
            for file, (_, members), off in zip(self._files, groups, self.offsets, strict=True)
        ]

    def read(self) -> bytes:
        got = 0
        for readinto, into in self._plan:
            got += readinto(into)
        if got != self.size:
            raise OSError(errno.EIO, f"short perf group read: {got} of {self.size} bytes")
        return bytes(self._buffer)


def parse_group_read(data: bytes) -> GroupRead:
    """Decode ``{nr, time_enabled, time_running, {value, id}[nr]}``."""
    if len(data) < 24:
        raise ValueError(f"short perf group read: {len(data)} bytes")
    nr, enabled, running = struct.unpack_from("=QQQ", data, 0)
    if len(data) < 24 + 16 * nr:
        raise ValueError(f"short perf group read: {len(data)} bytes for {nr} events")
    values = {}
    for i in range(nr):
        value, id_ = struct.unpack_from("=QQ", data, 24 + 16 * i)
        values[id_] = value
    return GroupRead(enabled, running, values)


def event_id(fd: int) -> int:
    """The kernel's id for an open event (PERF_EVENT_IOC_ID)."""
    # _IOR('$', 7, __u64)
    request = (2 << 30) | (8 << 16) | (ord("$") << 8) | 7
    out = ctypes.c_uint64()
    if _libc.ioctl(ctypes.c_int(fd), ctypes.c_ulong(request), ctypes.byref(out)):
        err = ctypes.get_errno()
        raise OSError(err, f"PERF_EVENT_IOC_ID failed: {os.strerror(err)}")
    return int(out.value)


def errno_reason(err: int, *, hardware: bool = True, paranoid: int | None = None) -> str:
    """Why perf_event_open said ``err``, and what to do about it."""
    if err == errno.ENOENT:
        if hardware:
            return (
                "no PMU exposed (ENOENT): this machine gives the kernel no hardware "
                "counters for this event, typical of VMs and CI runners. Run on bare metal "
                "or an instance size that passes the PMU through, or use the simulate backend"
            )
        return "not supported by this kernel (ENOENT)"
    if err == errno.EACCES:
        level = "?" if paranoid is None else str(paranoid)
        return (
            f"perf_event_paranoid is {level} (EACCES): this user may not count these events. "
            "Run `sudo sysctl kernel.perf_event_paranoid=1` (or 2 for user-space only), "
            "or grant CAP_PERFMON"
        )
    if err == errno.EPERM:
        return (
            "blocked by seccomp or a container policy (EPERM): allow perf_event_open, e.g. "
            "`docker run --cap-add PERFMON --security-opt seccomp=unconfined`, or run outside "
            "the container"
        )
    if err in (errno.EMFILE, errno.ENFILE):
        return (
            "out of file descriptors (EMFILE): every thread needs one descriptor per event. "
            "Raise the limit with `ulimit -n 4096` or count fewer events"
        )
    if err == errno.ENODEV:
        return "not supported on this CPU (ENODEV)"
    if err == errno.EOPNOTSUPP:
        return "not supported in this mode by this PMU (EOPNOTSUPP)"
    if err == errno.EINVAL:
        return (
            "rejected by the kernel (EINVAL): the event code or the group does not fit this "
            "PMU's counters"
        )
    if err == errno.EBUSY:
        return "the PMU is held exclusively by another user (EBUSY): stop the other profiler"
    if err == errno.ENOSYS:
        return (
            "perf_event_open does not exist in this kernel (ENOSYS): it was built without "
            "CONFIG_PERF_EVENTS"
        )
    if err == errno.E2BIG:
        return "this kernel rejects the perf_event_attr size (E2BIG)"
    return f"perf_event_open failed: {os.strerror(err)} ({errno.errorcode.get(err, err)})"
