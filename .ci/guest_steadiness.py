"""How steady instruction counts are on this machine: a native loop and ONNX Runtime calls.

Run by ``.ci/arm-guest`` inside the emulated Arm machine (docs/counting.md quotes its
output). Counts ``instructions`` on every thread with the product's own perf_event
backend, one region per call, and prints min, max and spread per workload. Exits 0
when counting is unavailable (it says why) so it never hides the real checks' status.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import shutil
import subprocess
import sys

from pytest_inferperf.pmu.cpu import identify
from pytest_inferperf.pmu.perf_backend import PerfEventCounters

REPEATS = 10


def spread(values: list[float]) -> str:
    lo, hi = min(values), max(values)
    return f"min {lo:,.0f}  max {hi:,.0f}  spread {(hi - lo) / lo:.4%}  ({len(values)} regions)"


def count(counters: PerfEventCounters, work, repeats: int = REPEATS) -> list[float]:
    work()  # warm: first calls pay page faults and lazy binding
    values = []
    for _ in range(repeats):
        counters.start()
        work()
        values.append(counters.stop().counts["instructions"].raw)
    return values


def perf_stat_user(argv: list[str], runs: int = REPEATS) -> list[float] | None:
    """User-space instructions of a whole native program, per run, from ``perf stat``."""
    perf = shutil.which("perf")
    if perf is None:
        return None
    values = []
    for _ in range(runs):
        out = subprocess.run(
            [perf, "stat", "-x,", "-e", "instructions:u", *argv],
            capture_output=True,
            text=True,
            check=False,
        )
        field = out.stderr.strip().splitlines()[-1].split(",")[0] if out.stderr else ""
        if not field.isdigit():
            return None
        values.append(float(field))
    return values


def main() -> int:
    native_program = perf_stat_user(["busybox", "seq", "1", "20000"])
    if native_program:
        print("native program (busybox seq 1 20000, static), user-space:", spread(native_program))
    # User space only (what an unprivileged user counts), so timer interrupts are left out.
    cpu = dataclasses.replace(identify(), privileged=False, paranoid=2)
    counters = PerfEventCounters(events=("instructions",), cpu=cpu)
    counters.open()
    status = counters.statuses()["instructions"]
    if not status.available:
        print(f"instructions not counted here: {status.reason}")
        counters.close()
        return 0
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        buf = ctypes.create_string_buffer(1 << 20)

        def native():  # one call into libc: memset of 1 MiB, 8 times
            for _ in range(8):
                libc.memset(buf, 1, len(buf))

        print(
            "native call (libc memset 8 x 1 MiB via ctypes), user-space:",
            spread(count(counters, native)),
        )

        import numpy as np
        import onnx
        import onnxruntime as ort
        from onnx import TensorProto, helper

        rng = np.random.default_rng(0)
        weight = rng.standard_normal((256, 256)).astype(np.float32)
        graph = helper.make_graph(
            [helper.make_node("MatMul", ["x", "w"], ["y"])],
            "mm",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 256])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 256])],
            [onnx.numpy_helper.from_array(weight, "w")],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        session = ort.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        x = rng.standard_normal((64, 256)).astype(np.float32)
        print(
            f"onnxruntime {ort.__version__} MatMul 64x256x256, 1 thread, user-space:",
            spread(count(counters, lambda: session.run(None, {"x": x}))),
        )
    finally:
        counters.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
