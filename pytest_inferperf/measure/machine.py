"""Facts about this machine and software stack, gathered once per process.

Owns: the ``machine`` mapping stored in every Profile (CPU facts from
``pmu.cpu``, the CPUs this process may run on, Python, ONNX Runtime and numpy
versions, kernel, and the version of pytest-inferperf that measured) and the
machine class.
Gathered explicitly and stored with results so that a comparison can
refuse apples against oranges.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import sys
from typing import Any

from ..core.version import version
from ..pmu.cpu import CpuInfo, identify


@functools.lru_cache(maxsize=1)
def this_cpu() -> CpuInfo:
    """The CPU facts of this machine (read once: they do not change while we run)."""
    return identify()


def machine_facts(cpu: CpuInfo | None = None) -> dict[str, Any]:
    cpu = cpu or this_cpu()
    facts: dict[str, Any] = {
        "machine_class": cpu.machine_class,
        "cpu": cpu.to_dict(),
        "python": platform.python_version(),
        "implementation": sys.implementation.name,
        "kernel": cpu.kernel,
        "platform": platform.platform(),
        "inferperf": version(),  # which release wrote a baseline, read from package metadata
    }
    if hasattr(os, "sched_getaffinity"):  # ONNX Runtime's default pool size follows it
        facts["cpus_available"] = len(os.sched_getaffinity(0))
    for module in ("onnxruntime", "numpy"):
        mod = sys.modules.get(module)
        if mod is not None:
            facts[module] = getattr(mod, "__version__", "unknown")
    plain: dict[str, Any] = json.loads(json.dumps(facts))  # JSON types, as a loaded Profile has
    return plain
