"""Reading a file the tool was pointed at, without hanging or running out of memory.

Owns: :func:`read_limited`, the one way every input file is read (baselines, the
``report.json`` targets of ``validate`` / ``compare``, cache entries, ``perf stat``
outputs for ``explain``). The file is opened with ``O_NONBLOCK`` (so a FIFO with no
writer does not block the open), checked with ``fstat`` to be a regular file (a FIFO,
a device such as ``/dev/zero``, a socket or a folder is refused by name), and read
up to a limit, never trusting ``st_size`` alone: a file that grows past the limit
while read is refused too.

Must not: parse or validate what it reads.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from .errors import InferperfError

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
)


class UnreadableFile(InferperfError, OSError):
    """A file that cannot be read as input: missing, special, too large, or an OS error.

    ``missing`` is True when the file does not exist (callers often treat that apart).
    """

    def __init__(self, message: str, *, missing: bool = False) -> None:
        super().__init__(message)
        self.missing = missing

    def __str__(self) -> str:
        return str(self.args[0])


def read_limited(path: str | os.PathLike[str], limit: int, *, what: str = "file") -> bytes:
    """The bytes of the regular file ``path``, at most ``limit``; else :class:`UnreadableFile`."""
    path = Path(path)
    flags = (
        os.O_RDONLY
        | getattr(os, "O_NONBLOCK", 0)
        | getattr(os, "O_CLOEXEC", 0)
        | getattr(os, "O_NOCTTY", 0)
    )
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise UnreadableFile(f"{path} does not exist", missing=True) from None
    except OSError as exc:
        raise UnreadableFile(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        for test, kind in _KINDS:
            if test(info.st_mode):
                raise UnreadableFile(
                    f"{path} is {kind}, not a regular file: give the {what} itself"
                )
        if info.st_size > limit:
            raise UnreadableFile(_too_large(path, info.st_size, limit, what))
        with contextlib.suppress(OSError, AttributeError):
            os.set_blocking(fd, True)  # a regular file: plain reads from here
        chunks, total = [], 0
        while True:
            try:
                chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            except OSError as exc:
                raise UnreadableFile(f"cannot read {what} {path}: {exc.strerror or exc}") from None
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise UnreadableFile(_too_large(path, total, limit, what))
        return b"".join(chunks)
    finally:
        os.close(fd)


def _too_large(path: Path, size: int, limit: int, what: str) -> str:
    return (
        f"{path} is {size / 2**20:.0f} MiB or more, far larger than any {what} "
        f"(limit {limit >> 20} MiB): it is not a {what}"
    )
