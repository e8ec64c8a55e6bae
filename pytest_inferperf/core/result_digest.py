"""A digest of what a workload returned, to tell whether two processes did the same work.

Owns: :func:`result_digest`: SHA-256 over the workload's result (arrays by dtype, shape
and bytes; numbers, strings, lists, tuples and dicts by their JSON-like form), or None
where the result holds something else (then nothing can be said). The simulate
backend compares the digest of the native run with the child's: a workload that
returns different results under valgrind (pid-, time- or environment-dependent) did
different work, and its simulated counts do not describe the native run.

Must not: import numpy (an array is recognised by its attributes) or judge anything.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

_MAX_DEPTH = 32


def result_digest(result: Any) -> str | None:
    """A stable hex digest of ``result``, or None when it holds an unsupported object."""
    digest = hashlib.sha256()
    try:
        if not _feed(digest, result, 0):
            return None
    except (TypeError, ValueError, AttributeError, BufferError, RecursionError):
        return None
    return digest.hexdigest()[:16]


def _feed(digest: Any, value: Any, depth: int) -> bool:
    if depth > _MAX_DEPTH:
        return False
    if value is None or isinstance(value, bool | int | str):
        digest.update(f"{type(value).__name__}:{value!r};".encode("utf-8", "surrogatepass"))
        return True
    if isinstance(value, float):
        text = "nan" if math.isnan(value) else repr(value)
        digest.update(f"float:{text};".encode())
        return True
    if isinstance(value, bytes):
        digest.update(b"bytes:" + value + b";")
        return True
    if hasattr(value, "dtype") and hasattr(value, "shape") and hasattr(value, "tobytes"):
        digest.update(f"array:{value.dtype}:{tuple(value.shape)}:".encode())
        digest.update(value.tobytes())
        return True
    if isinstance(value, list | tuple):
        digest.update(f"{type(value).__name__}[{len(value)}]".encode())
        return all(_feed(digest, item, depth + 1) for item in value)
    if isinstance(value, dict):
        digest.update(f"dict[{len(value)}]".encode())
        for key in sorted(value, key=repr):
            if not _feed(digest, key, depth + 1) or not _feed(digest, value[key], depth + 1):
                return False
        return True
    return False
