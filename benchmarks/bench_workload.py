"""The workload the measurement-quality benchmark measures, shared by every tool it compares.

A small int8 CNN: three 3x3 convolutions, global pooling and a Gemm, built in float32
with ``onnx.helper`` and then statically quantised (``quantize_static``, QOperator
format: ``QLinearConv``, per-channel int8 weights, uint8 activations, calibrated on
seeded random inputs). ONNX Runtime runs it with one intra-op thread and spinning off:
about 2 ms per call on a 2-vCPU cloud VM.

Why int8: the simulate backend re-runs the test under valgrind, and ONNX Runtime's
float32 kernels use AVX2 FMA, which valgrind 3.19 executes about 1000x slower than
native even without instrumentation (the float32 CNN: 3 ms per call natively, 4 s per
call under ``valgrind --tool=none``), so a simulated profile took about a minute. The
int8 kernels (integer SIMD) run about 55 ms per call under valgrind, which makes 20
simulated trials affordable. Every tool measures this same int8 model, so all detectors
see exactly the same code.

A synthetic slowdown is *extra real work* inside the call: a pure-Python integer loop
of ``n`` iterations after the inference (the kind of cost Python pre- and
post-processing adds), ``n`` calibrated once so that it costs the wanted share of a
call. Nothing sleeps. Numpy work was tried first and rejected: right after an inference
has filled the caches, even one small numpy call costs about 20 µs (1% of a call)
before doing anything, so levels below 1% could not be set; the interpreter loop has no
such fixed cost (its code stays hot), and its cost grows linearly with ``n``.

This module is imported by ``measurement_quality.py`` and by the test files it
generates (pytest-benchmark, simulate), so that every tool measures exactly the same
code.
"""

from __future__ import annotations

import os

# One BLAS thread: numpy must not start a thread pool here (every thread of the process
# is counted, and the overhead benchmark counts the threads alive).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
# ONNX Runtime's telemetry upload threads would be counted too; `pytest --inferperf`
# switches them off the same way (pytest_inferperf/onnxrt/telemetry.py).
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

import time  # noqa: E402
from collections.abc import Callable, Mapping, Sequence  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

IMAGE = 168  # input side: about 2 ms per int8 call on the project's CI VM
EXTRA_MAX = 10_000_000  # most extra iterations
CAL_QUANTILE = 0.10  # the statistic calibration uses (see interleaved_quantiles)
CALIBRATION_SAMPLES = 2  # seeded random inputs the static quantiser calibrates on


def build_float_model(path: str | os.PathLike[str], *, image: int = IMAGE, seed: int = 0) -> Path:
    """Write the float32 benchmark CNN to ``path``; input ``image`` float32 [1, 3, S, S]."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    nodes: list[Any] = []
    inits: list[Any] = []

    def const(name: str, array: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    x = "image"
    c_in = 3
    for i, (c_out, stride) in enumerate(((16, 1), (32, 2), (64, 2))):
        w = const(f"w{i}", rng.standard_normal((c_out, c_in, 3, 3)) * np.sqrt(2 / (9 * c_in)))
        b = const(f"b{i}", rng.standard_normal(c_out) * 0.01)
        conv = f"conv{i}"
        nodes.append(
            helper.make_node(
                "Conv",
                [x, w, b],
                [conv],
                name=conv,
                kernel_shape=[3, 3],
                strides=[stride, stride],
                pads=[1, 1, 1, 1],
            )
        )
        x = f"relu{i}"
        nodes.append(helper.make_node("Relu", [conv], [x], name=x))
        c_in = c_out
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["pool"], name="pool"))
    nodes.append(helper.make_node("Flatten", ["pool"], ["flat"], name="flat", axis=1))
    fc_w = const("fc_w", rng.standard_normal((10, c_in)) * np.sqrt(1 / c_in))
    fc_b = const("fc_b", np.zeros(10))
    nodes.append(helper.make_node("Gemm", ["flat", fc_w, fc_b], ["logits"], name="fc", transB=1))
    graph = helper.make_graph(
        nodes,
        "bench_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, image, image])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])],
        inits,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17)],
        ir_version=8,
        producer_name="pytest-inferperf benchmarks",
    )
    onnx.checker.check_model(model)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(out))
    return out


class RandomCalibration:
    """The static quantiser's calibration data: seeded standard-normal images."""

    def __init__(self, image: int, *, samples: int = CALIBRATION_SAMPLES, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self._batches = iter(
            [
                {"image": rng.standard_normal((1, 3, image, image)).astype(np.float32)}
                for _ in range(samples)
            ]
        )

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._batches, None)


def quantize_int8(
    source: str | os.PathLike[str],
    target: str | os.PathLike[str],
    *,
    image: int = IMAGE,
    seed: int = 0,
) -> Path:
    """Write the statically quantised int8 copy of the float CNN ``source`` to ``target``.

    ``quantize_static`` in QOperator format (``QLinearConv``, ``QLinearGlobalAveragePool``,
    ``QGemm``), per-channel ``QInt8`` weights, ``QUInt8`` activations, calibrated on
    :data:`CALIBRATION_SAMPLES` seeded random inputs: the way a CNN is shipped in int8.
    """
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    from pytest_inferperf.onnxrt.quantize import quiet_quantization

    out = Path(target)
    out.parent.mkdir(parents=True, exist_ok=True)
    with quiet_quantization():
        quantize_static(
            str(source),
            str(out),
            RandomCalibration(image, seed=seed),
            quant_format=QuantFormat.QOperator,
            per_channel=True,
            activation_type=QuantType.QUInt8,
            weight_type=QuantType.QInt8,
        )
    return out


def build_model(path: str | os.PathLike[str], *, image: int = IMAGE, seed: int = 0) -> Path:
    """Write the benchmark model, the int8 CNN, to ``path`` (the float32 one beside it).

    Input ``image`` float32 [1, 3, S, S] (quantised inside the model), output float32
    logits [1, 10].
    """
    out = Path(path)
    source = build_float_model(
        out.with_name(f"{out.stem}_float32{out.suffix}"), image=image, seed=seed
    )
    return quantize_int8(source, out, image=image, seed=seed)


def describe_model(image: int = IMAGE) -> str:
    return (
        f"int8 CNN (float32 model statically quantised: QOperator, QLinearConv, "
        f"per-channel int8 weights, uint8 activations, {CALIBRATION_SAMPLES} seeded random "
        f"calibration inputs): 3x3 conv 3->16, 3x3/2 conv 16->32, 3x3/2 conv 32->64 "
        f"(each with a ReLU, fused into the QLinearConv), global average pool, Gemm "
        f"64->10; input 1x3x{image}x{image} "
        "float32; ONNX Runtime CPU, 1 intra-op thread, spinning off"
    )


def spin(n: int) -> int:
    """The extra work: ``n`` iterations of integer arithmetic in the interpreter."""
    x = 0
    for i in range(n):
        x = (x + i) & 0xFFFF
    return x


@dataclass
class Workload:
    """An ORT session and its input; :meth:`call` adds the calibrated extra work."""

    model: Path
    session: Any = field(init=False)
    feeds: dict[str, np.ndarray] = field(init=False)

    def __post_init__(self) -> None:
        from pytest_inferperf.onnxrt.sessions import SessionSettings, make_session

        self.session = make_session(
            self.model, SessionSettings(intra_op_threads=1, allow_spinning=False)
        )
        rng = np.random.default_rng(1)
        side = self.session.get_inputs()[0].shape[-1]
        self.feeds = {"image": rng.standard_normal((1, 3, side, side)).astype(np.float32)}

    def call(self, n: int = 0) -> Callable[[], Any]:
        """The measured call: one inference, plus ``n`` iterations of extra work."""
        session, feeds = self.session, self.feeds
        if n <= 0:

            def run() -> Any:
                return session.run(None, feeds)

            return run
        if n > EXTRA_MAX:
            raise ValueError(f"n={n} > {EXTRA_MAX}")

        def run_slower() -> Any:
            result = session.run(None, feeds)
            spin(n)
            return result

        return run_slower

    def extra(self, n: int) -> Callable[[], Any]:
        """The extra work alone (for calibration)."""

        def run() -> Any:
            return spin(n)

        return run


def interleaved_quantiles(
    calls: Sequence[Callable[[], Any]],
    rounds: int,
    per_round: int = 5,
    clock: Callable[[], int] = time.thread_time_ns,
    quantile: float = CAL_QUANTILE,
) -> list[float]:
    """A low quantile of ns per call of each callable, measured round-robin.

    Round-robin, so drift hits all alike. The clock is this thread's CPU time by default
    and the statistic the 10th percentile: on a shared machine a preempted call comes
    back to cold caches and its CPU time spreads by tens of percent upwards, while the
    low quantile (the undisturbed calls) moves by a few percent at most.
    """
    samples: list[list[int]] = [[] for _ in calls]
    for _ in range(rounds):
        for i, call in enumerate(calls):
            for _ in range(per_round):
                t0 = clock()
                call()
                samples[i].append(clock() - t0)
    return [float(np.quantile(s, quantile)) for s in samples]


@dataclass(frozen=True)
class Calibration:
    base_ns: float  # CPU ns of one plain call (10th percentile)
    intercept_ns: float  # fixed cost of the extra work
    ns_per_iteration: float
    counts: Mapping[str, int]  # level label -> iterations of extra work
    intended: Mapping[str, float]  # level label -> extra ns / base ns (calibrated)

    def to_dict(self) -> dict:
        return {
            "base_ms": self.base_ns / 1e6,
            "extra_intercept_us": self.intercept_ns / 1e3,
            "extra_ns_per_iteration": self.ns_per_iteration,
            "iterations": dict(self.counts),
            "intended_slowdown": {k: float(v) for k, v in self.intended.items()},
        }


def level_label(fraction: float) -> str:
    return f"{fraction * 100:g}%"


def calibrate(workload: Workload, levels: Sequence[float], *, quick: bool = False) -> Calibration:
    """Iterations of extra work per slowdown level: extra CPU time = level x a plain call's.

    Plain calls and the extra work alone at two iteration counts alternate call by
    call; a line through the two costs gives the fixed cost and the cost per iteration,
    and each level gets the iterations whose cost is that share of a plain call. Costs
    are 10th percentiles of the thread's CPU time, the statistic that a busy shared
    machine disturbs least. The re-measured slowdown (:func:`realised_slowdowns`) checks
    the result inside the workload, within the noise.
    """
    plain = workload.call(0)
    for _ in range(30):
        plain()
    n1, n2 = 100, 10_000
    base, t1, t2 = interleaved_quantiles(
        [plain, workload.extra(n1), workload.extra(n2)], rounds=40 if quick else 400, per_round=1
    )
    per_iter = max((t2 - t1) / (n2 - n1), 1.0)
    intercept = max(t1 - per_iter * n1, 0.0)
    counts: dict[str, int] = {}
    intended: dict[str, float] = {}
    for level in levels:
        label = level_label(level)
        if level <= 0:
            counts[label], intended[label] = 0, 0.0
            continue
        n = min(max(round((level * base - intercept) / per_iter), 1), EXTRA_MAX)
        counts[label] = n
        intended[label] = (intercept + per_iter * n) / base
    return Calibration(base, intercept, per_iter, counts, intended)


def realised_slowdowns(
    workload: Workload, counts: Mapping[str, int], *, rounds: int
) -> dict[str, float]:
    """Re-measured (with extra) / (plain) - 1 per level (10th percentiles of CPU time)."""
    labels = list(counts)
    calls = [workload.call(0)] + [workload.call(counts[label]) for label in labels]
    costs = interleaved_quantiles(calls, rounds=rounds, per_round=1)
    return {label: costs[i + 1] / costs[0] - 1 for i, label in enumerate(labels)}
