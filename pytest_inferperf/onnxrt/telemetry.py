"""Keeping ONNX Runtime's telemetry uploads out of measured regions.

Owns: the decision to set ``ORT_DISABLE_TELEMETRY=1`` before ONNX Runtime is
imported, and the warning when that is too late.

ONNX Runtime 1.29 and later upload telemetry on Linux and macOS: a few seconds
after import a background thread starts three more, which resolve and contact
``mobile.events.data.microsoft.com``; later events follow at a low rate. Those
threads belong to the measured process, so the ``perf`` backend counts their
CPU time and instructions when they fire inside a region, and under the
``simulate`` backend they ran through the simulated caches. ONNX Runtime reads
the variable once, when it initialises; set after that it changes nothing.

Must not: override a value the user set (``ORT_DISABLE_TELEMETRY=0`` keeps
telemetry on), or import ONNX Runtime.
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping

ENV = "ORT_DISABLE_TELEMETRY"


def keep_out_of_measurements(environ: MutableMapping[str, str] | None = None) -> str | None:
    """Set ``ORT_DISABLE_TELEMETRY=1`` unless the user chose; None, or a warning to show."""
    environ = os.environ if environ is None else environ
    if ENV in environ:
        return None  # the user's choice
    if "onnxruntime" in sys.modules:
        return (
            "ONNX Runtime was imported before pytest-inferperf could switch its telemetry "
            f"off, so its upload threads may run inside measured regions and be counted: "
            f"set {ENV}=1 in the environment (or keep it on with {ENV}=0 to silence this)"
        )
    environ[ENV] = "1"
    return None
