"""Why an output file or folder could not be written, as one line a user can act on.

Owns: :func:`describe` (an exception met while writing a report, a run document or a
flamegraph, turned into ``cannot write PATH: <cause> (<ERRNO>): <hint>``) and
:func:`make_folder` (create an output folder, or say why not, never raise).

Must not: decide what a problem means for the run (the plugin decides whether it fails
the run: only when the user asked for that output by name), write anything but the
folder it is asked for, or import pytest.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

_HINTS = {
    errno.EEXIST: "a file stands where a folder is needed",
    errno.ENOTDIR: "a file stands where a folder is needed",
    errno.ELOOP: "a symbolic-link loop",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EROFS: "the file system is read-only",
    errno.ENOSPC: "the disk is full",
    errno.EISDIR: "a folder stands where a file is needed",
    errno.ENAMETOOLONG: "the path is too long",
}


def describe(exc: BaseException, path: str | os.PathLike[str] | None = None) -> str:
    """``cannot write PATH: <cause>``: one line, no traceback."""
    where = str(path if path is not None else getattr(exc, "filename", None) or "the output")
    if isinstance(exc, OSError) and exc.errno is not None:
        name = errno.errorcode.get(exc.errno, str(exc.errno))
        hint = _HINTS.get(exc.errno)
        cause = f"{exc.strerror or name} ({name})" + (f": {hint}" if hint else "")
        filename = getattr(exc, "filename", None)
        if filename and str(filename) != where:
            cause += f" at {filename}"
    else:
        cause = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return f"cannot write {where}: {cause}; choose another path"


def make_folder(path: str | os.PathLike[str]) -> str | None:
    """Create ``path`` (and its parents); None when it is a usable folder, else why not."""
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not os.access(folder, os.W_OK | os.X_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(folder))
    except (OSError, RuntimeError) as exc:
        return f"cannot create the folder {folder}: " + describe(exc, folder).split(": ", 1)[1]
    return None
