"""Valgrind client requests from Python: callgrind's instrumentation switched without vgdb.

Owns: :func:`client_requests`, valgrind.h's client-request sequence as machine code in
an executable page, called through ctypes, and the request codes the simulation child
sends (callgrind.h's START_INSTRUMENTATION and STOP_INSTRUMENTATION, valgrind.h's
RUNNING_ON_VALGRIND). A switch this way costs microseconds; through vgdb it costs a
process start and a poll handshake, 0.25-0.45 s under valgrind on a 2-vCPU VM.

The sequence is the one ``VALGRIND_DO_CLIENT_REQUEST_EXPR`` emits for amd64 Linux
(valgrind/valgrind.h, the "special instruction preamble"): four rotates of ``rdi`` by 3,
13, 61 and 51 bits (128 in all: ``rdi`` is unchanged) and ``xchg rbx, rbx``, with ``rax``
pointing at six words (request code and five arguments) and the default result in
``rdx``. Natively it does nothing and returns the default (0); valgrind recognises it
and puts the tool's answer in ``rdx``. Checked against gcc's code for callgrind.h's
macros (objdump). Other architectures have sequences of their own; they get None here
and the caller keeps vgdb.

Must not: decide when instrumentation switches (the child does), or run valgrind.
"""

from __future__ import annotations

import ctypes
import functools
import mmap
import platform
from collections.abc import Callable

# valgrind.h: VG_USERREQ__RUNNING_ON_VALGRIND = 0x1001; callgrind.h: the tool's requests
# start at VG_USERREQ_TOOL_BASE('C','T') = 'C' << 24 | 'T' << 16, in the order DUMP_STATS,
# ZERO_STATS, TOGGLE_COLLECT, DUMP_STATS_AT, START_INSTRUMENTATION, STOP_INSTRUMENTATION.
RUNNING_ON_VALGRIND = 0x1001
CALLGRIND_BASE = ord("C") << 24 | ord("T") << 16
START_INSTRUMENTATION = CALLGRIND_BASE + 4
STOP_INSTRUMENTATION = CALLGRIND_BASE + 5

#: ``unsigned long request(unsigned long *args)`` for x86-64 (System V: args in rdi).
_AMD64 = bytes.fromhex(
    "4889f8"  # mov rax, rdi        rax: the request block
    "31d2"  # xor edx, edx          the default result, 0
    "48c1c703"  # rol rdi, 3
    "48c1c70d"  # rol rdi, 13
    "48c1c73d"  # rol rdi, 61
    "48c1c733"  # rol rdi, 51
    "4887db"  # xchg rbx, rbx       rdx = client_request(rax)
    "4889d0"  # mov rax, rdx
    "c3"  # ret
)
_CODE = {"x86_64": _AMD64, "amd64": _AMD64}

_Request = Callable[[ctypes.Array], int]


class ClientRequests:
    """A callable client-request sequence; keeps its executable page alive."""

    def __init__(self, page: mmap.mmap, function: _Request) -> None:
        self._page = page
        self._function = function

    def send(self, code: int, *args: int) -> int:
        """The tool's answer to request ``code`` (0 when not under valgrind)."""
        block = (ctypes.c_ulong * 6)(code, *args[:5])
        return int(self._function(block))

    def running_on_valgrind(self) -> int:
        """How many valgrinds this process runs under: 0 natively."""
        return self.send(RUNNING_ON_VALGRIND)


@functools.lru_cache(maxsize=1)
def client_requests() -> ClientRequests | None:
    """The client-request sequence of this machine, or None (unknown architecture, or no
    writable and executable page: SELinux ``execmem``, PaX and the like refuse one)."""
    code = _CODE.get(platform.machine().lower())
    if code is None:
        return None
    try:
        page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    except (OSError, ValueError, AttributeError):
        return None
    page.write(code)
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))
    prototype = ctypes.CFUNCTYPE(ctypes.c_ulong, ctypes.POINTER(ctypes.c_ulong))
    return ClientRequests(page, prototype(address))
