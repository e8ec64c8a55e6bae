"""The CPU features a process sees, and those valgrind's emulated CPU hides.

Owns: :func:`seen_features`, the instruction-set extensions this process can use as
numpy's runtime dispatch detected them (``__cpu_features__`` of numpy's
``_multiarray_umath``: CPUID and the OS's register state on x86, HWCAP on Arm), and
:func:`hidden_features`, those a native process has and the simulation child has not.
Under valgrind the child sees the CPU valgrind emulates: valgrind 3.19 runs no AVX-512
on x86-64 (nor SVE on arm64), and reports a CPU without it, so libraries that choose
their kernels by CPU feature (ONNX Runtime's MLAS, numpy, OpenBLAS) run others there:
on a Zen 5 VM with AVX-512 VNNI, the example's int8 MobileNetV2 returned outputs up to
14% apart from the native run's. Then the simulated counts are those of the other
kernels, and the summary must say so.

Must not: import numpy where the process has not (a pure-Python workload's child under
valgrind would pay ~1 s for it); judge or render.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence

#: Where numpy keeps its dispatch table: numpy 2 (``numpy._core``) and numpy 1.
_TABLES = ("numpy._core._multiarray_umath", "numpy.core._multiarray_umath")


def seen_features(import_numpy: bool = False) -> frozenset[str] | None:
    """The CPU features numpy found available here; None where numpy is not imported
    (and ``import_numpy`` is false) or has no dispatch table."""
    if "numpy" not in sys.modules:
        if not import_numpy:
            return None
        try:
            import numpy  # noqa: F401
        except ImportError:
            return None
    for name in _TABLES:
        table = getattr(sys.modules.get(name), "__cpu_features__", None)
        if isinstance(table, dict):
            return frozenset(str(k) for k, on in table.items() if on)
    return None


#: Named first where hidden: the extensions inference kernels dispatch on (numpy's names).
_KERNEL_FEATURES = (
    "AVX512F",
    "AVX512VNNI",
    "AVX512BW",
    "AVX512BF16",
    "AVX512FP16",
    "AVX512_SPR",
    "AVX512_ICL",
    "AVX512_SKX",
    "AVX2",
    "FMA3",
    "SVE",
    "SVE2",
    "ASIMDDP",
    "ASIMDFHM",
    "ASIMDHP",
)


def hidden_features(native: Iterable[str] | None, child: Iterable[str] | None) -> list[str]:
    """Features the native process has and the child has not, those kernels dispatch on
    first, the rest alphabetical; [] when either side is unknown."""
    if native is None or child is None:
        return []
    hidden = set(native) - set(child)
    first = [f for f in _KERNEL_FEATURES if f in hidden]
    return first + sorted(hidden - set(first))


def features_text(features: Sequence[str], shown: int = 5) -> str:
    """``AVX512BF16, AVX512BITALG, ... and 13 more`` for a long list."""
    head = ", ".join(features[:shown])
    return head if len(features) <= shown else f"{head} and {len(features) - shown} more"
