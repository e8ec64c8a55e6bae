"""Whether generated model inputs fit in memory, checked before a byte is allocated.

Owns: :func:`check_inputs_fit`: the bytes of every input (shape x item size, in exact
integer arithmetic, so ``batch=10**30`` is a number, not an overflow) against the memory
this process can still get (``MemAvailable`` and the address-space limit). Inputs that
would take more than :data:`SHARE` of it are refused with a message naming the input,
its shape, the bytes it needs and what is available.

Must not: allocate, import numpy or ONNX, or choose shapes.
"""

from __future__ import annotations

import math
import resource
from collections.abc import Mapping, Sequence

from ..core.errors import InferperfError

#: Largest fraction of the available memory the inputs may take (the model needs the rest).
SHARE = 0.5
#: The fix, in the engine's words (a front-end names its own option instead).
FIX = "Lower the input sizes (e.g. batch=1, sequence=128)"


class InputsTooLarge(InferperfError, ValueError):
    """The requested inputs cannot fit in memory; the message says which and how much."""


def available_bytes(meminfo: str = "/proc/meminfo") -> int | None:
    """Memory this process can still allocate: MemAvailable, capped by RLIMIT_AS."""
    found: int | None = None
    try:
        with open(meminfo, encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    found = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        found = None
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (OSError, ValueError):
        soft = resource.RLIM_INFINITY
    if soft != resource.RLIM_INFINITY and soft > 0:
        found = soft if found is None else min(found, soft)
    return found


def _size(n: float) -> str:
    for unit, scale in (("EB", 1e18), ("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n / 1e3:.3g} kB"


def check_inputs_fit(
    inputs: Mapping[str, tuple[Sequence[int], int]], available: int | None = None
) -> None:
    """Raise :class:`InputsTooLarge` unless ``{name: (shape, item bytes)}`` fits in memory."""
    needed = {
        name: math.prod(int(d) for d in shape) * int(item) for name, (shape, item) in inputs.items()
    }
    total = sum(needed.values())
    limit = available if available is not None else available_bytes()
    if limit is None or total <= limit * SHARE:
        return
    name = max(needed, key=lambda n: needed[n])
    shape = "x".join(str(d) for d in inputs[name][0])
    too_big = f"{total:.3e} bytes" if total >= 1e21 else _size(total)
    raise InputsTooLarge(
        f"the inputs would need {too_big} ({name} alone is [{shape}]), more than "
        f"{SHARE:.0%} of the {_size(limit)} of memory available here: nothing was allocated. " + FIX
    )
