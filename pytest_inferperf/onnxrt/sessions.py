"""ONNX Runtime helpers: session settings, sessions, synthetic inputs and operator profiles.

This module owns everything pytest-inferperf does with ONNX Runtime itself:

* :class:`SessionSettings` - the session knobs a measurement depends on (threads, execution
  mode, spinning, memory arena, graph optimisation level, providers), validated and
  serialisable, and :func:`make_session_options` / :func:`make_session` that apply them.
* :func:`make_inputs` / :func:`default_dims` - deterministic, *valid* inputs built from a
  model's graph inputs (token ids stay inside their embedding table, masks are all ones).
* :func:`parse_ort_profile` and :func:`profile_operators` - per-node time from ONNX
  Runtime's own profiler trace as :class:`~pytest_inferperf.onnxrt.operators.OperatorStat` rows
  (that module holds the row, the node-name variants and the errors, re-exported here),
  with warm-up runs excluded;
  :func:`op_type_runs` - per-op-type time in each profiled run.
* :func:`find_session_calls` and :func:`operator_times` - the operator pass of a measured
  workload: every session it runs (``session.run`` itself, or found by watching
  ``InferenceSession.run`` during one more call, whatever wraps it) with every feed it
  got in that call, each profiled again in a second session made with the first one's
  own options and providers (:func:`replica_session`) and labelled by its model
  (``measure.operator_pass`` puts the result in a Profile).

It never imports pytest, nor ``onnx``: :func:`make_inputs` and :func:`default_dims`
read the graph with :mod:`pytest_inferperf.onnxrt.graph`, so a suite's processes (xdist
workers, simulation children) do not pay onnx's import (0.8 s, 4 s under valgrind).
"""

from __future__ import annotations

import bisect
import contextlib
import json
import math
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import onnxruntime as ort

from ..core.errors import InferperfError
from ..core.watchdog import PASS_TIMEOUT_S, PassStopped, Watchdog, bounded_call, pass_guard
from .graph import ELEMENT_TYPE_NAMES, Graph, GraphFormatError, Node, ValueInfo, read_graph
from .input_memory import InputsTooLarge, check_inputs_fit
from .operators import InputSpecError, ModelError, OperatorStat, node_name_variants

if TYPE_CHECKING:
    import onnx as onnx_pkg  # the name the annotations use

ModelSource = str | os.PathLike | bytes
"""A model as a file path or serialized ``ModelProto`` bytes."""

__all__ = [
    "InputSpecError",
    "ModelError",
    "OperatorStat",
    "SessionSettings",
    "SessionSettingsError",
    "check_session_threads",
    "default_dims",
    "make_inputs",
    "make_session",
    "make_session_options",
    "parse_ort_profile",
    "profile_operators",
]

EXECUTION_MODES: dict[str, ort.ExecutionMode] = {
    "sequential": ort.ExecutionMode.ORT_SEQUENTIAL,
    "parallel": ort.ExecutionMode.ORT_PARALLEL,
}
GRAPH_OPTIMIZATION_LEVELS: dict[str, ort.GraphOptimizationLevel] = {
    "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}
INTRA_SPINNING_KEY = "session.intra_op.allow_spinning"
INTER_SPINNING_KEY = "session.inter_op.allow_spinning"

KERNEL_SUFFIX = "_kernel_time"
BATCH_DIM_DEFAULT = 1
SEQUENCE_DIM_DEFAULT = 128
_SMALL_INT_BOUND = 8  # exclusive upper bound for integer inputs with nothing to bound them
_TOKEN_TYPE_BOUND = 2
# Ops an integer index passes through unchanged (values kept) on its way to a Gather.
_VALUE_PRESERVING_OPS = frozenset(
    {"Cast", "Unsqueeze", "Squeeze", "Reshape", "Flatten", "Identity", "Expand", "Transpose"}
)
# Ops that hand a constant table through to a Gather (e.g. quantised embeddings).
_TABLE_PASSTHROUGH_OPS = frozenset({"Cast", "Identity", "DequantizeLinear"})


# --------------------------------------------------------------------------- settings


def _check_choice(field_name: str, value: object, allowed: Iterable[str]) -> None:
    choices = tuple(allowed)
    if value not in choices:
        raise ValueError(
            f"SessionSettings.{field_name} must be one of {', '.join(map(repr, choices))}; "
            f"got {value!r}."
        )


class SessionSettingsError(InferperfError, ValueError):
    """Session settings ONNX Runtime cannot honour here (too many threads for the limits)."""


#: The most threads one session may ask ONNX Runtime for. ONNX Runtime starts one OS
#: thread per intra-op thread (and per inter-op thread in parallel mode) while the
#: session is created, and a thread it cannot create kills the process (a segfault
#: under an address-space limit: ``--threads 100000``), not a Python error.
MAX_SESSION_THREADS = 1024
#: Address space one pool thread needs beyond its stack (``ulimit -s``). Measured on the
#: 2-vCPU development VM under ``ulimit -v 4000000`` (3.8 GiB), 8 MiB stacks: a session of
#: 250 intra-op threads was created, one of 350 hung; 4 MiB + the stack puts the line
#: between them.
THREAD_OVERHEAD_BYTES = 4 << 20
_DEFAULT_STACK_BYTES = 8 << 20


def _check_thread_count(field_name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(
            f"SessionSettings.{field_name} must be a non-negative int "
            f"(0 lets ONNX Runtime choose); got {value!r}."
        )
    if value > MAX_SESSION_THREADS:
        raise SessionSettingsError(
            f"{field_name}={value} is more than one session may start "
            f"(at most {MAX_SESSION_THREADS}): ONNX Runtime creates one OS thread each while "
            "the session is made, and a thread it cannot create crashes the process instead "
            f"of raising. This machine has {os.cpu_count() or '?'} CPUs, and more threads "
            "than CPUs never make one inference faster: give at most the CPU count, or 0 to "
            "let ONNX Runtime choose."
        )


def session_threads(settings: SessionSettings) -> int:
    """The OS threads a session of ``settings`` starts (0 = ONNX Runtime's own choice: the
    CPUs of this process)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    intra = settings.intra_op_threads or (cpus or 1)
    inter = settings.inter_op_threads or (cpus or 1)
    return intra + (inter if settings.execution_mode == "parallel" else 0)


def thread_space_problem(
    threads: int, *, limit: int | None, used: int | None, stack: int | None
) -> str | None:
    """Why ``threads`` pool threads do not fit in the address-space limit, or None.

    ``limit``: ``RLIMIT_AS`` in bytes (None: unlimited); ``used``: the process's address
    space now (``VmSize``); ``stack``: ``RLIMIT_STACK`` (None: unlimited, taken as 8 MiB).
    The threads may take at most 90% of what is left.
    """
    if limit is None or threads <= 1:
        return None
    per_thread = (stack or _DEFAULT_STACK_BYTES) + THREAD_OVERHEAD_BYTES
    free = max(0, limit - (used or 0))
    fit = int(free * 0.9 // per_thread)
    if threads <= fit:
        return None
    gib = 1 << 30
    return (
        f"{threads} ONNX Runtime threads do not fit in this process's address-space limit "
        f"(ulimit -v: {limit / gib:.1f} GiB, {free / gib:.1f} GiB of it free): each thread "
        f"reserves its stack (ulimit -s: {(stack or _DEFAULT_STACK_BYTES) >> 20} MiB) and "
        f"about {THREAD_OVERHEAD_BYTES >> 20} MiB more, and ONNX Runtime crashes or hangs "
        f"when it cannot create one. Use at most {max(1, fit)} threads (--threads, the "
        "marker's threads=), or raise the limit (ulimit -v) or lower the stack size "
        "(ulimit -s)."
    )


def _address_space() -> tuple[int | None, int | None, int | None]:
    """(RLIMIT_AS, VmSize, RLIMIT_STACK) in bytes; None where unlimited or unknown."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return None, None, None

    def soft(which: int) -> int | None:
        value = resource.getrlimit(which)[0]
        return None if value == resource.RLIM_INFINITY or value < 0 else int(value)

    used = None
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("VmSize:"):
                    used = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return soft(resource.RLIMIT_AS), used, soft(resource.RLIMIT_STACK)


def check_session_threads(settings: SessionSettings) -> None:
    """Refuse, before ONNX Runtime starts them, threads this process cannot create.

    Raises :class:`SessionSettingsError` (one paragraph: cause and fix).
    """
    threads = session_threads(settings)
    if threads > MAX_SESSION_THREADS:
        _check_thread_count("intra_op_threads + inter_op_threads", threads)
    limit, used, stack = _address_space()
    problem = thread_space_problem(threads, limit=limit, used=used, stack=stack)
    if problem:
        raise SessionSettingsError(problem)


def _check_bool(field_name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"SessionSettings.{field_name} must be True or False; got {value!r}.")


def _check_providers(value: object) -> None:
    if (
        not isinstance(value, tuple)
        or not value
        or not all(isinstance(p, str) and p for p in value)
    ):
        raise ValueError(
            "SessionSettings.providers must be a non-empty tuple of execution provider names "
            f"such as ('CPUExecutionProvider',); got {value!r}."
        )


@dataclass(frozen=True)
class SessionSettings:
    """The ONNX Runtime session knobs a measurement depends on.

    Thread counts of 0 let ONNX Runtime choose. The defaults (one intra-op and one
    inter-op thread, sequential execution, no spinning) give the most repeatable timings.
    """

    intra_op_threads: int = 1
    inter_op_threads: int = 1
    execution_mode: str = "sequential"
    allow_spinning: bool = False
    enable_mem_arena: bool = True
    graph_optimization_level: str = "all"
    providers: tuple[str, ...] = ("CPUExecutionProvider",)

    def __post_init__(self) -> None:
        _check_thread_count("intra_op_threads", self.intra_op_threads)
        _check_thread_count("inter_op_threads", self.inter_op_threads)
        _check_choice("execution_mode", self.execution_mode, EXECUTION_MODES)
        _check_bool("allow_spinning", self.allow_spinning)
        _check_bool("enable_mem_arena", self.enable_mem_arena)
        _check_choice(
            "graph_optimization_level", self.graph_optimization_level, GRAPH_OPTIMIZATION_LEVELS
        )
        _check_providers(self.providers)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (providers as a list)."""
        data = asdict(self)
        data["providers"] = list(self.providers)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SessionSettings:
        """Inverse of :meth:`to_dict`; missing keys take their defaults, unknown keys fail."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(
                f"SessionSettings got unknown key(s) {', '.join(map(repr, unknown))}; "
                f"allowed keys are {', '.join(sorted(known))}."
            )
        kwargs = dict(data)
        if isinstance(kwargs.get("providers"), list):
            kwargs["providers"] = tuple(kwargs["providers"])
        return cls(**kwargs)


def make_session_options(
    settings: SessionSettings, *, profile_prefix: str | None = None
) -> ort.SessionOptions:
    """Build ``SessionOptions`` applying every field of ``settings``.

    With ``profile_prefix`` ONNX Runtime's profiler is on and writes
    ``<profile_prefix>_<timestamp>.json`` (see ``InferenceSession.end_profiling``).
    """
    options = ort.SessionOptions()
    options.intra_op_num_threads = settings.intra_op_threads
    options.inter_op_num_threads = settings.inter_op_threads
    options.execution_mode = EXECUTION_MODES[settings.execution_mode]
    options.graph_optimization_level = GRAPH_OPTIMIZATION_LEVELS[settings.graph_optimization_level]
    options.enable_cpu_mem_arena = settings.enable_mem_arena
    spinning = "1" if settings.allow_spinning else "0"
    options.add_session_config_entry(INTRA_SPINNING_KEY, spinning)
    options.add_session_config_entry(INTER_SPINNING_KEY, spinning)
    if profile_prefix is not None:
        options.enable_profiling = True
        options.profile_file_prefix = profile_prefix
    return options


def _describe_source(model: ModelSource | onnx_pkg.ModelProto) -> str:
    if isinstance(model, bytes):
        return f"<{len(model)} bytes of serialized model>"
    if isinstance(model, (str, os.PathLike)):
        return os.fspath(model)
    return "<the given ModelProto>"


def _check_model_file(model: ModelSource) -> None:
    if isinstance(model, bytes):
        return
    path = Path(model)
    if not path.exists():
        raise ModelError(f"ONNX model file {os.fspath(model)!r} does not exist.")
    if not path.is_file():
        raise ModelError(f"ONNX model path {os.fspath(model)!r} is not a file.")


def make_session(
    model: ModelSource,
    settings: SessionSettings | None = None,
    *,
    profile_prefix: str | None = None,
) -> ort.InferenceSession:
    """Create an ``InferenceSession`` for ``model`` (a path or serialized bytes).

    Raises :class:`ModelError` naming the model and the cause when it is missing or
    ONNX Runtime cannot load it, and :class:`SessionSettingsError` (before any thread
    starts) for more threads than the process can create (:func:`check_session_threads`).
    """
    settings = settings if settings is not None else SessionSettings()
    check_session_threads(settings)
    _check_model_file(model)
    options = make_session_options(settings, profile_prefix=profile_prefix)
    source = model if isinstance(model, bytes) else os.fspath(model)
    try:
        return ort.InferenceSession(source, options, providers=list(settings.providers))
    except Exception as exc:  # ORT raises its own pybind exception types
        raise ModelError(
            f"ONNX Runtime could not load model {_describe_source(model)!r}: {exc}"
        ) from exc


# --------------------------------------------------------------------------- inputs


def _load_graph(model: ModelSource | onnx_pkg.ModelProto) -> Graph:
    """The graph's inputs, initializers and nodes, read without importing onnx."""
    if isinstance(model, (str, os.PathLike)):
        _check_model_file(model)
    try:
        return read_graph(model)
    except (GraphFormatError, OSError) as exc:
        raise ModelError(
            f"{_describe_source(model)} is not an ONNX model that can be read: {exc}. "
            "Pass a complete .onnx file (a serialized ModelProto)."
        ) from None


def _is_batch_name(name: str) -> bool:
    lowered = name.lower()
    return "batch" in lowered or lowered in {"n", "b", "bs"}


def _is_sequence_name(name: str) -> bool:
    lowered = name.lower()
    return "seq" in lowered or lowered in {"length", "len", "num_tokens", "tokens"}


def default_dims(model: ModelSource | onnx_pkg.ModelProto) -> dict[str, int]:
    """Suggested values for the model's symbolic dims: batch-like -> 1, sequence-like -> 128.

    Other symbolic dims are left out, so :func:`make_inputs` still reports them. Use as
    ``make_inputs(model, dims={**default_dims(model), **my_dims})``.
    """
    dims: dict[str, int] = {}
    for vi in _load_graph(model).fed_inputs():
        for dim in vi.tensor.shape or () if vi.tensor else ():
            if dim.param is None:
                continue
            if _is_batch_name(dim.param):
                dims[dim.param] = BATCH_DIM_DEFAULT
            elif _is_sequence_name(dim.param):
                dims[dim.param] = SEQUENCE_DIM_DEFAULT
    return dims


def _resolve_shape(vi: ValueInfo, dims: Mapping[str, int]) -> tuple[int, ...]:
    if vi.tensor is None or vi.tensor.shape is None:
        raise InputSpecError(
            f"input {vi.name!r} has no shape in the model, so inputs cannot be made for it; "
            "feed this model your own arrays."
        )
    shape: list[int] = []
    for axis, dim in enumerate(vi.tensor.shape):
        if dim.fixed is not None:
            shape.append(dim.fixed)
            continue
        key = dim.key(vi.name, axis)
        if key not in dims:
            raise InputSpecError(
                f"input {vi.name!r} has symbolic dimension {key!r} (axis {axis}) and no value "
                "was given for it;",
                # a hint is a format string ({setting}); these braces are the dict's
                hint=f"pass it, e.g. make_inputs(model, dims={{{{{key!r}: 128}}}}).",
                dimension=key,
            )
        value = dims[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputSpecError(
                f"dimension {key!r} of input {vi.name!r} must be a positive int; got {value!r}."
            )
        shape.append(value)
    return tuple(shape)


def _check_dim_names(graph: Graph, dims: Mapping[str, int]) -> None:
    """Refuse a dimension name the model does not have (a typo would be silently unused)."""
    import difflib

    known = [
        dim.key(vi.name, axis)
        for vi in graph.fed_inputs()
        for axis, dim in enumerate(vi.tensor.shape or () if vi.tensor else ())
        if dim.fixed is None
    ]
    unknown = [name for name in dims if name not in known]
    if unknown:
        name = unknown[0]
        guesses = difflib.get_close_matches(str(name), list(dict.fromkeys(known)), n=2, cutoff=0.5)
        hint = f" Did you mean {' or '.join(repr(g) for g in guesses)}?" if guesses else ""
        raise InputSpecError(
            f"dimension {name!r} is not a symbolic dimension of this model.{hint} Its "
            f"symbolic dimensions are: {', '.join(dict.fromkeys(known)) or 'none (all fixed)'}."
        )


@dataclass(frozen=True)
class _GraphIndex:
    """Producers/consumers and constant shapes of a graph, for tracing index inputs."""

    consumers: Mapping[str, tuple[Node, ...]]
    producers: Mapping[str, Node]
    constant_shapes: Mapping[str, tuple[int, ...]]


def _index_graph(graph: Graph) -> _GraphIndex:
    consumers: dict[str, list[Node]] = {}
    producers: dict[str, Node] = {}
    shapes: dict[str, tuple[int, ...]] = {t.name: t.dims for t in graph.initializers}
    for node in graph.nodes:
        for name in node.inputs:
            consumers.setdefault(name, []).append(node)
        for name in node.outputs:
            producers[name] = node
        value = node.tensor_attribute("value") if node.op_type == "Constant" else None
        if value is not None and node.outputs:
            shapes[node.outputs[0]] = value.dims
    return _GraphIndex(
        consumers={k: tuple(v) for k, v in consumers.items()},
        producers=producers,
        constant_shapes=shapes,
    )


def _table_shape(index: _GraphIndex, name: str) -> tuple[int, ...] | None:
    """Shape of a constant Gather table, looking through Cast/Identity/DequantizeLinear."""
    seen: set[str] = set()
    while name not in index.constant_shapes:
        node = index.producers.get(name)
        if node is None or node.op_type not in _TABLE_PASSTHROUGH_OPS or not node.inputs:
            return None
        if name in seen:
            return None
        seen.add(name)
        name = node.inputs[0]
    return index.constant_shapes[name]


def _gather_bound(index: _GraphIndex, start: str) -> int | None:
    """Smallest table size of the constant-table Gathers ``start`` indexes, if any."""
    bound: int | None = None
    pending, seen = [start], {start}
    while pending:
        name = pending.pop()
        for node in index.consumers.get(name, ()):
            if node.op_type == "Gather" and len(node.inputs) > 1 and node.inputs[1] == name:
                shape = _table_shape(index, node.inputs[0])
                if shape:
                    rows = shape[node.int_attribute("axis", 0) % len(shape)]
                    bound = rows if bound is None else min(bound, rows)
            elif node.op_type in _VALUE_PRESERVING_OPS and node.inputs and node.inputs[0] == name:
                for out in node.outputs:
                    if out not in seen:
                        seen.add(out)
                        pending.append(out)
    return bound


#: ONNX element types inputs can be generated for (onnx.proto, TensorProto.DataType).
_NUMPY_DTYPES = {
    1: "float32",
    2: "uint8",
    3: "int8",
    4: "uint16",
    5: "int16",
    6: "int32",
    7: "int64",
    9: "bool",
    10: "float16",
    11: "float64",
    12: "uint32",
    13: "uint64",
}


def _numpy_dtype(vi: ValueInfo) -> np.dtype:
    elem_type = vi.tensor.elem_type if vi.tensor else 0
    if elem_type in _NUMPY_DTYPES:
        return np.dtype(_NUMPY_DTYPES[elem_type])
    if elem_type in ELEMENT_TYPE_NAMES:
        raise InputSpecError(
            f"input {vi.name!r} has element type {ELEMENT_TYPE_NAMES[elem_type]}; only "
            "numeric and bool inputs can be generated, feed this one yourself."
        )
    raise InputSpecError(
        f"input {vi.name!r} has element type {elem_type} which cannot be generated"
    )


def _is_mask_name(name: str) -> bool:
    return "mask" in name.lower()


def _is_token_type_name(name: str) -> bool:
    lowered = name.lower()
    return "token_type" in lowered or "segment" in lowered


def _is_position_name(name: str) -> bool:
    return "position" in name.lower()


def _integer_values(
    name: str,
    shape: tuple[int, ...],
    dtype: np.dtype,
    bound: int | None,
    rng: np.random.Generator,
) -> np.ndarray:
    high = bound if bound is not None else _SMALL_INT_BOUND
    if _is_token_type_name(name):
        high = min(high, _TOKEN_TYPE_BOUND)
    high = max(1, min(high, int(np.iinfo(dtype).max) + 1))
    if _is_position_name(name) and shape:
        positions = np.arange(shape[-1]) % (bound if bound is not None else shape[-1])
        return np.broadcast_to(positions, shape).astype(dtype)
    return rng.integers(0, high, size=shape).astype(dtype)


def _input_values(
    vi: ValueInfo,
    shape: tuple[int, ...],
    index: _GraphIndex,
    rng: np.random.Generator,
) -> np.ndarray:
    dtype = _numpy_dtype(vi)
    if _is_mask_name(vi.name):
        return np.ones(shape, dtype)
    if dtype.kind == "f":
        return rng.standard_normal(shape, dtype=np.float32).astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, size=shape).astype(dtype)
    return _integer_values(vi.name, shape, dtype, _gather_bound(index, vi.name), rng)


def make_inputs(
    model: ModelSource | onnx_pkg.ModelProto,
    dims: Mapping[str, int] | None = None,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """Deterministic, valid inputs for every graph input of ``model`` (path, bytes, ModelProto).

    Symbolic dims take their values from ``dims`` (see :func:`default_dims`); a dim with
    no name at all can be given as ``"<input>:<axis>"``. Floats are seeded standard normal.
    Integers that index a constant-table ``Gather`` (possibly through Cast/Unsqueeze/
    Reshape...) stay within the table, ``*mask*`` inputs are all ones, token-type ids stay
    below 2, ``*position*`` ids count up along the last axis, other integers are small
    non-negative values. Raises :class:`InputSpecError` when a dimension is missing.
    """
    graph = _load_graph(model)
    dims = dict(dims or {})
    _check_dim_names(graph, dims)
    index = _index_graph(graph)
    rng = np.random.default_rng(seed)
    shapes: dict[str, tuple[int, ...]] = {}
    fed = graph.fed_inputs()
    for vi in fed:
        if vi.tensor is None:
            raise InputSpecError(f"input {vi.name!r} is not a tensor; feed it yourself.")
        shapes[vi.name] = _resolve_shape(vi, dims)
    try:  # before any allocation: batch=10**12 is a clear refusal, not a MemoryError
        check_inputs_fit({vi.name: (shapes[vi.name], _numpy_dtype(vi).itemsize) for vi in fed})
    except InputsTooLarge as exc:
        raise InputSpecError(str(exc)) from None
    return {vi.name: _input_values(vi, shapes[vi.name], index, rng) for vi in fed}


# --------------------------------------------------------------------------- profiles


def _iter_json_events(text: str) -> Iterator[Any]:
    """Decode the objects of a JSON array one by one, stopping quietly at a truncated tail."""
    decoder = json.JSONDecoder()
    pos = text.find("[")
    if pos < 0:
        return
    pos += 1
    length = len(text)
    while pos < length:
        while pos < length and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= length or text[pos] == "]":
            return
        try:
            event, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            return  # a trace cut short mid-event: keep what was complete
        yield event


def _load_trace(
    trace: str | os.PathLike[str] | Sequence[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    if isinstance(trace, (str, os.PathLike)):
        text = Path(trace).read_text(encoding="utf-8", errors="replace")
        try:
            events = json.loads(text)
        except json.JSONDecodeError:
            events = list(_iter_json_events(text))
    else:
        events = list(trace)
    if isinstance(events, dict):  # Chrome trace "object" form
        events = events.get("traceEvents", [])
    return [e for e in events if isinstance(e, dict)]


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _run_windows(events: Sequence[Mapping[str, Any]]) -> list[tuple[float, float]]:
    windows = []
    for event in events:
        if event.get("cat") == "Session" and event.get("name") == "model_run":
            start, dur = _number(event.get("ts")), _number(event.get("dur"))
            if start is not None and dur is not None:
                windows.append((start, start + dur))
    return sorted(windows)


def _kernel_events(events: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [
        e
        for e in events
        if e.get("cat") == "Node"
        and str(e.get("name", "")).endswith(KERNEL_SUFFIX)
        and _number(e.get("dur")) is not None
        and _number(e.get("ts")) is not None
    ]


def _run_of(
    ts: float, windows: Sequence[tuple[float, float]], starts: Sequence[float]
) -> int | None:
    i = bisect.bisect_right(starts, ts) - 1
    if i >= 0 and ts <= windows[i][1]:
        return i
    return None


def _kept_kernel_events(
    events: Sequence[Mapping[str, Any]], skip_runs: int
) -> list[Mapping[str, Any]]:
    """Kernel events inside ``model_run`` windows after the first ``skip_runs`` runs.

    A trace with no ``model_run`` events counts as a single run.
    """
    kernels = _kernel_events(events)
    windows = _run_windows(events)
    if not windows:
        return kernels if skip_runs == 0 else []
    starts = [w[0] for w in windows]
    kept = []
    for event in kernels:
        run = _run_of(float(event["ts"]), windows, starts)
        if run is not None and run >= skip_runs:
            kept.append(event)
    return kept


def _format_shapes(entries: Any) -> tuple[str, ...]:
    """``[{"float": [1, 3]}, ...]`` -> ``("float[1,3]", ...)``."""
    if not isinstance(entries, list):
        return ()
    shapes = []
    for entry in entries:
        if isinstance(entry, dict):
            for dtype, dims in entry.items():
                dims_text = ",".join(str(d) for d in dims) if isinstance(dims, list) else ""
                shapes.append(f"{dtype}[{dims_text}]")
    return tuple(shapes)


def _int_arg(args: Mapping[str, Any], key: str) -> int | None:
    value = _number(args.get(key))
    return None if value is None else int(value)


def _node_key(event: Mapping[str, Any]) -> tuple[str, str]:
    args = event.get("args") or {}
    op_type = str(args.get("op_name", ""))
    node = str(event["name"])[: -len(KERNEL_SUFFIX)]
    if not node:
        node = f"{op_type or 'node'}#{args.get('node_index', '?')}"
    return node, op_type


def _aggregate(kept: Sequence[Mapping[str, Any]]) -> list[OperatorStat]:
    totals: dict[tuple[str, str], list[float]] = {}
    first: dict[tuple[str, str], Mapping[str, Any]] = {}
    for event in kept:
        key = _node_key(event)
        totals.setdefault(key, []).append(float(event["dur"]))
        first.setdefault(key, event.get("args") or {})
    grand_total = sum(sum(d) for d in totals.values())
    stats = []
    for (node, op_type), durations in totals.items():
        args = first[(node, op_type)]
        total = sum(durations)
        stats.append(
            OperatorStat(
                node=node,
                op_type=op_type,
                calls=len(durations),
                total_us=total,
                mean_us=total / len(durations),
                share=total / grand_total if grand_total > 0 else 0.0,
                input_shapes=_format_shapes(args.get("input_type_shape")),
                output_shapes=_format_shapes(args.get("output_type_shape")),
                output_bytes=_int_arg(args, "output_size"),
                activation_bytes=_int_arg(args, "activation_size"),
                parameter_bytes=_int_arg(args, "parameter_size"),
            )
        )
    stats.sort(key=lambda s: (-s.total_us, s.node))
    return stats


def parse_ort_profile(
    trace: str | os.PathLike[str] | Sequence[Mapping[str, Any]], *, skip_runs: int = 0
) -> list[OperatorStat]:
    """Per-node statistics from an ONNX Runtime profiler trace, slowest node first.

    ``trace`` is the JSON file ``end_profiling()`` wrote, or its list of events. Only
    ``cat == "Node"`` events named ``<node>_kernel_time`` count (fence events do not).
    They are bucketed into runs by the ``model_run`` Session event whose time window
    contains them; the first ``skip_runs`` runs (warm-up) and nodes outside any run are
    dropped. A trace cut short (truncated last line, no closing ``]``) is parsed up to
    its last complete event; a run whose ``model_run`` event was lost is dropped.
    """
    if isinstance(skip_runs, bool) or not isinstance(skip_runs, int) or skip_runs < 0:
        raise ValueError(f"skip_runs must be a non-negative int; got {skip_runs!r}.")
    return _aggregate(_kept_kernel_events(_load_trace(trace), skip_runs))


def _run_profiled(
    model: ModelSource,
    inputs: Mapping[str, np.ndarray],
    settings: SessionSettings,
    total_runs: int,
    workdir: Path,
    guard: Watchdog | None = None,
    timed: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext,
) -> Path:
    """The profiled runs (inside ``timed``, the session made before it); the trace."""
    session = make_session(model, settings, profile_prefix=str(workdir / "ort_profile"))
    feeds = dict(inputs)
    with timed():
        for _ in range(total_runs):
            bounded_call(guard, lambda: session.run(None, feeds))
    return Path(session.end_profiling())


def profile_operators(
    model: ModelSource,
    inputs: Mapping[str, np.ndarray],
    *,
    settings: SessionSettings | None = None,
    runs: int = 10,
    warmup: int = 2,
    workdir: str | os.PathLike[str] | None = None,
) -> list[OperatorStat]:
    """Run ``model`` ``warmup + runs`` times under ORT's profiler; per-node stats of ``runs``.

    The trace goes to ``workdir`` (kept) or to a temporary directory (removed afterwards).
    """
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ValueError(f"runs must be a positive int; got {runs!r}.")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be a non-negative int; got {warmup!r}.")
    settings = settings if settings is not None else SessionSettings()
    if workdir is not None:
        directory = Path(workdir)
        directory.mkdir(parents=True, exist_ok=True)
        trace = _run_profiled(model, inputs, settings, warmup + runs, directory)
        return with_weight_types(parse_ort_profile(trace, skip_runs=warmup), model)
    with tempfile.TemporaryDirectory(prefix="inferperf-ort-") as tmp:
        trace = _run_profiled(model, inputs, settings, warmup + runs, Path(tmp))
        return with_weight_types(parse_ort_profile(trace, skip_runs=warmup), model)


def with_weight_types(stats: list[OperatorStat], model: ModelSource) -> list[OperatorStat]:
    """``stats`` with ``weight_type`` set where the model stores a node's weight narrower
    than it uses it (:func:`pytest_inferperf.onnxrt.precision.stored_weight_types`)."""
    from .precision import stored_weight_types

    try:
        stored = stored_weight_types(model)
    except Exception:  # an unreadable graph only loses the annotation
        return stats
    if not stored:
        return stats
    out = []
    for stat in stats:
        weight = next((stored[n] for n in node_name_variants(stat.node) if n in stored), "")
        out.append(replace(stat, weight_type=weight) if weight else stat)
    return out


def describe_session(session: Any) -> dict[str, Any]:
    """The settings of a live ONNX Runtime session that a measurement depends on.

    Two profiles taken with different threading or spinning are not comparable,
    so these facts are stored in every Profile of a session's workload.
    """
    options = session.get_session_options()

    def config(key: str) -> str | None:
        try:
            return options.get_session_config_entry(key) or None
        except Exception:  # older ORT raises when the key is unset
            return None

    levels = {v: k for k, v in GRAPH_OPTIMIZATION_LEVELS.items()}
    modes = {v: k for k, v in EXECUTION_MODES.items()}
    intra_spin = config(INTRA_SPINNING_KEY)
    return {
        "onnxruntime": ort.__version__,
        "providers": list(session.get_providers()),
        "intra_op_threads": options.intra_op_num_threads,
        "inter_op_threads": options.inter_op_num_threads,
        "execution_mode": modes.get(options.execution_mode, str(options.execution_mode)),
        "graph_optimization_level": levels.get(
            options.graph_optimization_level, str(options.graph_optimization_level)
        ),
        "enable_mem_arena": bool(options.enable_cpu_mem_arena),
        # ORT spins by default: an unset key means spinning is on.
        "allow_spinning": intra_spin != "0",
    }


def session_of(fn: Any) -> Any | None:
    """The InferenceSession behind ``session.run`` (a bound method), if that is what fn is."""
    owner = getattr(fn, "__self__", None)
    return owner if isinstance(owner, ort.InferenceSession) else None


# -- the operator pass of a measured workload ------------------------------------------

#: The operator pass runs the model about this long (at least :data:`PASS_MIN_RUNS`
#: runs, at most :data:`PASS_MAX_RUNS`), after :data:`PASS_WARMUP` warm-up runs.
PASS_SECONDS = 0.2
PASS_MIN_RUNS = 8  # the rank test needs 6+ runs a side to reach p < 0.01; 8 leaves room
PASS_MAX_RUNS = 20
PASS_WARMUP = 2


def op_type_runs(
    trace: str | os.PathLike[str] | Sequence[Mapping[str, Any]],
    *,
    skip_runs: int = 0,
    runs_per_call: int = 1,
) -> list[dict[str, Any]]:
    """Per op type: nodes, mean µs per run and the µs of each kept run, slowest first.

    Runs are the ``model_run`` windows of :func:`parse_ort_profile`; the first
    ``skip_runs`` are warm-up. A trace without ``model_run`` events is one run. With
    ``runs_per_call`` > 1 each ``runs_per_call`` consecutive kept runs (one replayed
    workload call) count as one.
    """
    if isinstance(runs_per_call, bool) or not isinstance(runs_per_call, int) or runs_per_call < 1:
        raise ValueError(f"runs_per_call must be a positive int; got {runs_per_call!r}.")
    events = _load_trace(trace)
    kernels = _kernel_events(events)
    windows = _run_windows(events)
    starts = [w[0] for w in windows]
    kept = -(-max(1, len(windows) - skip_runs) // runs_per_call) if windows else 1
    runs: dict[str, list[float]] = {}
    nodes: dict[str, set[str]] = {}
    for event in kernels:
        index = 0
        if windows:
            run = _run_of(float(event["ts"]), windows, starts)
            if run is None or run < skip_runs:
                continue
            index = (run - skip_runs) // runs_per_call
        node, op_type = _node_key(event)
        runs.setdefault(op_type or "?", [0.0] * kept)[index] += float(event["dur"])
        nodes.setdefault(op_type or "?", set()).add(node)
    rows = [
        {
            "op_type": op_type,
            "nodes": len(nodes[op_type]),
            "mean_us": sum(values) / len(values),
            "runs_us": values,
        }
        for op_type, values in runs.items()
    ]
    return sorted(rows, key=lambda r: (-r["mean_us"], r["op_type"]))


def pass_runs(latency_ms: float) -> int:
    """Profiled runs for a model whose call takes ``latency_ms``: about PASS_SECONDS."""
    if not latency_ms or latency_ms <= 0 or not math.isfinite(latency_ms):
        return PASS_MIN_RUNS
    return max(PASS_MIN_RUNS, min(PASS_MAX_RUNS, math.ceil(PASS_SECONDS * 1000 / latency_ms)))


@dataclass(frozen=True)
class SessionCall:
    """The ONNX Runtime session a workload runs, and the feeds it gives it.

    ``runs`` is how often one call of the workload ran it, ``seconds`` how long those runs
    took, ``label`` names it for a reader (the model file's name, or ``session 2``).
    ``feeds`` is what its last run got; ``feed_runs`` what each run of that call got, in
    order (an OCR recogniser run on three crops: three feeds), () where only ``feeds``
    is known.
    """

    session: Any
    feeds: dict[str, Any]
    how: str  # "direct" (the workload is session.run) | "found" (seen during one call)
    runs: int = 1
    seconds: float = 0.0
    label: str = "model"
    feed_runs: tuple[dict[str, Any], ...] = ()

    @property
    def replayed(self) -> tuple[dict[str, Any], ...]:
        """The feeds one profiled call replays, in order."""
        return self.feed_runs or (self.feeds,)


def session_label(session: Any, index: int = 1) -> str:
    """The model file's stem (``minilm``), else ``session <index>`` (a model from bytes)."""
    path = getattr(session, "_model_path", None)
    if isinstance(path, str) and path:
        return Path(path).stem
    return f"session {index}"


def direct_call(call: Any) -> SessionCall | None:
    """The session and feeds of a workload that is ``session.run(None, feeds)`` itself."""
    fn = getattr(call, "func", call)
    session = session_of(fn)
    if session is None:
        return None
    args: Sequence[Any] = getattr(call, "args", ())
    feeds = args[1] if len(args) > 1 else getattr(call, "keywords", {}).get("input_feed")
    if not isinstance(feeds, dict):
        return None
    return SessionCall(session, feeds, "direct", label=session_label(session))


@dataclass(frozen=True)
class SessionSearch:
    """What one watched call of a workload ran: its sessions, largest first, or why none."""

    sessions: tuple[SessionCall, ...]
    reason: str | None = None  # why no session can be profiled; None when sessions were found


_WATCHED_OTHER = ("run_with_iobinding", "run_with_ort_values")


def find_session_calls(call: Any, guard: Watchdog | None = None) -> SessionSearch:
    """Every ONNX Runtime session a workload runs, whatever wraps it, largest first.

    ``session.run`` itself (a bound method, or a ``functools.partial`` of it) is used as
    it is. Any other callable is called once more while ``InferenceSession.run`` (and
    ``run_with_iobinding`` / ``run_with_ort_values``, which cannot be replayed) are
    watched: each session seen, with the feeds of every run in order, how often it ran
    and how long. Sessions created during that call are found too. ``guard`` (a
    :func:`~pytest_inferperf.core.watchdog.pass_guard`) bounds that call.
    """
    direct = direct_call(call)
    if direct is not None:
        return SessionSearch((direct,))
    if not callable(call):
        return SessionSearch((), "not available: the workload is not callable")
    seen: dict[int, list[Any]] = {}  # id(session) -> [session, [feeds of each run], runs, ns]
    unreplayable: list[str] = []
    cls = ort.InferenceSession
    originals = {
        name: (name in cls.__dict__, getattr(cls, name))
        for name in ("run", *_WATCHED_OTHER)
        if hasattr(cls, name)
    }

    def watched(self: Any, output_names: Any, input_feed: Any, *args: Any, **kw: Any) -> Any:
        begin = time.perf_counter_ns()
        try:
            return originals["run"][1](self, output_names, input_feed, *args, **kw)
        finally:
            entry = seen.setdefault(id(self), [self, [], 0, 0])
            # the dict as it was now: a workload may refill one dict for every run
            entry[1].append(dict(input_feed) if isinstance(input_feed, Mapping) else input_feed)
            entry[2] += 1
            entry[3] += time.perf_counter_ns() - begin

    def other(name: str) -> Any:
        def run_other(self: Any, *args: Any, **kw: Any) -> Any:
            unreplayable.append(name)
            return originals[name][1](self, *args, **kw)

        return run_other

    cls.run = watched
    for name in _WATCHED_OTHER:
        if name in originals:
            setattr(cls, name, other(name))
    try:
        bounded_call(guard, call)
    finally:
        for name, (had_own, original) in originals.items():
            if had_own:
                setattr(cls, name, original)
            else:
                delattr(cls, name)
    entries = sorted(seen.values(), key=lambda e: -e[3])
    calls = []
    for index, (session, feeds, runs, ns) in enumerate(entries, start=1):
        feed_runs = tuple(dict(f) for f in feeds if isinstance(f, Mapping))
        if feed_runs:
            calls.append(
                SessionCall(
                    session,
                    feed_runs[-1],
                    "found",
                    runs=runs,
                    seconds=ns / 1e9,
                    label=session_label(session, index),
                    feed_runs=feed_runs,
                )
            )
    found = tuple(calls)
    found = _unique_labels(found)
    if found:
        return SessionSearch(found)
    if unreplayable:
        return SessionSearch(
            (),
            f"not available: the workload runs its session through "
            f"{unreplayable[0]}, whose inputs cannot be replayed; profile "
            "a call of session.run instead",
        )
    return SessionSearch(
        (),
        "not available: no ONNX Runtime session ran in one watched call "
        "of the workload (InferenceSession.run was never called)",
    )


def _unique_labels(found: tuple[SessionCall, ...]) -> tuple[SessionCall, ...]:
    counts: dict[str, int] = {}
    for s in found:
        counts[s.label] = counts.get(s.label, 0) + 1
    if all(n == 1 for n in counts.values()):
        return found
    seen: dict[str, int] = {}
    out = []
    for s in found:
        if counts[s.label] > 1:
            seen[s.label] = seen.get(s.label, 0) + 1
            s = replace(s, label=f"{s.label} #{seen[s.label]}")
        out.append(s)
    return tuple(out)


#: ``SessionOptions`` attributes a replica copies from the session it stands for: every
#: one that changes how the model runs. Not copied: the profiler's own (set for the
#: replica), ``optimized_model_filepath`` (it would write the model again) and the
#: logger's id.
REPLICA_ATTRIBUTES = (
    "intra_op_num_threads",
    "inter_op_num_threads",
    "execution_mode",
    "execution_order",
    "graph_optimization_level",
    "enable_cpu_mem_arena",
    "enable_mem_pattern",
    "enable_mem_reuse",
    "use_deterministic_compute",
    "use_per_session_threads",
    "log_severity_level",
)
#: Session config entries a replica copies where the session has them: those of
#: ``onnxruntime_session_options_config_keys.h`` (ONNX Runtime's C API headers) that
#: change how kernels or the thread pools run. ``SessionOptions`` cannot list its
#: entries, so the keys are named; an entry not named here is not copied.
REPLICA_CONFIG_KEYS = (
    INTRA_SPINNING_KEY,
    INTER_SPINNING_KEY,
    "session.dynamic_block_base",
    "session.intra_op_thread_affinities",
    "session.set_denormal_as_zero",
    "session.disable_prepacking",
    "session.use_env_allocators",
    "session.x64quantprecision",
    "session.qdqisint8allowed",
    "session.disable_quant_qdq",
    "session.disable_double_qdq_remover",
    "session.enable_quant_qdq_cleanup",
    "session.disable_aot_function_inlining",
    "optimization.disable_specified_optimizers",
    "optimization.minimal_build_optimizations",
    "mlas.enable_gemm_fastmath_arm64_bfloat16",
)


def _config_entry(options: Any, key: str) -> str | None:
    try:
        value = options.get_session_config_entry(key)
    except Exception:  # ORT raises when the key is unset
        return None
    return value if isinstance(value, str) and value else None


def replica_options(session: Any, *, profile_prefix: str | None = None) -> ort.SessionOptions:
    """New ``SessionOptions`` as ``session``'s own (:data:`REPLICA_ATTRIBUTES`,
    :data:`REPLICA_CONFIG_KEYS`), with ONNX Runtime's profiler on where ``profile_prefix``
    is given. The session's options object is read, never changed."""
    source = session.get_session_options()
    options = ort.SessionOptions()
    for name in REPLICA_ATTRIBUTES:
        if hasattr(source, name):
            with contextlib.suppress(Exception):  # an attribute this ORT cannot set back
                setattr(options, name, getattr(source, name))
    for key in REPLICA_CONFIG_KEYS:
        value = _config_entry(source, key)
        if value is not None:
            options.add_session_config_entry(key, value)
    if profile_prefix is not None:
        options.enable_profiling = True
        options.profile_file_prefix = profile_prefix
    return options


def _thread_settings(facts: Mapping[str, Any]) -> SessionSettings:
    """The threads a session of these facts starts, as settings :func:`check_session_threads`
    reads (nothing else of them is used)."""
    mode = facts.get("execution_mode")
    return SessionSettings(
        intra_op_threads=int(facts.get("intra_op_threads") or 0),
        inter_op_threads=int(facts.get("inter_op_threads") or 0),
        execution_mode=mode if mode in EXECUTION_MODES else "sequential",
    )


def replica_session(session: Any, *, profile_prefix: str | None = None) -> Any:
    """A second session of ``session``'s model made as the first one was: its own options
    (:func:`replica_options`: threads, spinning, optimisation level, ...), its providers
    and their options (``get_providers()``, ``get_provider_options()``).

    Raises :class:`ModelError` when the model can be neither re-read nor re-used, and
    :class:`SessionSettingsError` when its threads do not fit in this process again.
    """
    model = getattr(session, "_model_path", None) or getattr(session, "_model_bytes", None)
    if not model:
        raise ModelError("the session's model can be neither re-read nor re-used")
    check_session_threads(_thread_settings(describe_session(session)))
    options = replica_options(session, profile_prefix=profile_prefix)
    providers = list(session.get_providers())
    try:
        provider_options = session.get_provider_options() or {}
    except Exception:  # a provider that cannot report its options runs with its defaults
        provider_options = {}
    return ort.InferenceSession(
        model,
        options,
        providers=providers,
        provider_options=[dict(provider_options.get(p) or {}) for p in providers],
    )


def feed_description(feeds: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each fed input's name, shape and dtype (the rows ``identity.describe_model`` stores)."""
    return [
        {
            "name": str(name),
            "shape": [int(d) for d in getattr(value, "shape", ())],
            "dtype": str(getattr(value, "dtype", type(value).__name__)),
        }
        for name, value in feeds.items()
    ]


#: Runs of one session per call whose inputs the operator pass stores (all of them are
#: replayed): enough for an OCR pipeline's crops or a decoder's first steps, while a
#: committed baseline stays small (engineering judgement).
STORED_INPUT_RUNS = 16


#: At most this many sessions of one workload get an operator table (largest first).
MAX_SESSIONS = 4


def _run_replayed(
    found: SessionCall,
    calls: int,
    workdir: Path,
    guard: Watchdog | None = None,
    timed: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext,
) -> Path:
    """``calls`` replayed calls of ``found`` in a profiled replica (inside ``timed``, the
    replica made before it), each running every feed of one workload call in order; the
    trace."""
    session = replica_session(found.session, profile_prefix=str(workdir / "ort_profile"))
    feeds = [dict(f) for f in found.replayed]

    def one_call() -> None:
        for feed in feeds:
            session.run(None, feed)

    with timed():
        for _ in range(calls):
            bounded_call(guard, one_call)
    return Path(session.end_profiling())


def _profile_session(
    found: SessionCall,
    runs: int,
    guard: Watchdog | None = None,
    timed: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext,
) -> tuple[list[OperatorStat], list[dict]]:
    """Per-node stats (per session run) and per-op-type times (per replayed call)."""
    session = found.session
    model = getattr(session, "_model_path", None) or getattr(session, "_model_bytes", None)
    if not model:
        raise ModelError("the session's model can be neither re-read nor re-used")
    per_call = len(found.replayed)
    with tempfile.TemporaryDirectory(prefix="inferperf-ort-") as tmp:
        trace = _run_replayed(found, PASS_WARMUP + runs, Path(tmp), guard, timed)
        events = _load_trace(trace)  # read and decoded once for both tables
        skip = PASS_WARMUP * per_call
        return (
            with_weight_types(parse_ort_profile(events, skip_runs=skip), model),
            op_type_runs(events, skip_runs=skip, runs_per_call=per_call),
        )


def _session_record(found: SessionCall) -> dict[str, Any]:
    """What the operator pass stores of one session it profiled: how it was found and
    run, its own options (:func:`describe_session`) and the inputs of each run."""
    record: dict[str, Any] = {
        "label": found.label,
        "how": found.how,
        "runs_per_call": found.runs,
        "seconds_per_call": round(found.seconds, 6),
    }
    with contextlib.suppress(Exception):  # a session that cannot describe itself
        record["options"] = describe_session(found.session)
    record["inputs"] = [feed_description(f) for f in found.replayed[:STORED_INPUT_RUNS]]
    return record


def _merge_op_types(tables: Sequence[Sequence[Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """Op-type rows of several sessions summed run by run (the runs are aligned)."""
    merged: dict[str, dict[str, Any]] = {}
    for rows in tables:
        for row in rows:
            into = merged.get(row["op_type"])
            if into is None:
                merged[row["op_type"]] = {**row, "runs_us": list(row["runs_us"])}
                continue
            into["nodes"] += row["nodes"]
            into["mean_us"] += row["mean_us"]
            runs = row["runs_us"]
            into["runs_us"] = [a + b for a, b in zip(into["runs_us"], runs, strict=False)]
    return sorted(merged.values(), key=lambda r: (-r["mean_us"], r["op_type"]))


def operator_times(
    call: Any,
    *,
    latency_ms: float | None = None,
    found: SessionCall | SessionSearch | None = None,
    timeout: float | None = PASS_TIMEOUT_S,
    timed: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext,
) -> tuple[dict[str, Any], str | None]:
    """Per-node and per-op-type times of the models a workload runs, or why not.

    For each session the workload runs (:func:`find_session_calls`; at most
    :data:`MAX_SESSIONS`, largest first) a second session of the same model, made with
    the first one's own options and providers (:func:`replica_session`), replays the
    feeds of one workload call, every run in order, under ONNX Runtime's profiler:
    :data:`PASS_WARMUP` + :func:`pass_runs` replayed calls. Returns the Profile fields
    to set and None, or ``({}, reason)``:

    * ``operators`` - every node of every session (its ``calls``, ``mean_us`` per
      session run), each with ``model`` (the session's label, :func:`session_label`)
      and ``session_runs_per_call``;
    * ``op_types`` - per op type, µs per replayed call, summed over the sessions call by
      call;
    * ``operator_pass`` - runs (replayed calls), warm-up, the pass's wall time,
      ``session`` ("direct" or "found") and ``sessions``: label, how, runs per call,
      seconds in one call, ``options`` (:func:`describe_session`) and ``inputs`` (each
      run's inputs: name, shape, dtype; the first :data:`STORED_INPUT_RUNS` runs).

    A session whose profile fails is named in ``operator_pass["failed"]``. The whole
    pass (the watched call of the workload and every profiled run) is bounded by
    ``timeout`` seconds (the marker's ``timeout=``; ``None``: unbounded): past it the pass
    stops and the reason says ``operator pass stopped after N s``. ``timed``: the context
    the profiled runs go in (the plugin's stops shared simulate children meanwhile);
    making the second session and reading its trace stay outside it.
    """
    try:
        with pass_guard(timeout, "operator pass") as guard:
            return _operator_times(
                call, latency_ms=latency_ms, found=found, guard=guard, timed=timed
            )
    except PassStopped as stopped:
        return {}, str(stopped)


def _operator_times(
    call: Any,
    *,
    latency_ms: float | None,
    found: SessionCall | SessionSearch | None,
    guard: Watchdog | None,
    timed: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext,
) -> tuple[dict[str, Any], str | None]:
    """:func:`operator_times` inside its bound (``guard`` arms each call)."""
    if isinstance(found, SessionCall):
        search = SessionSearch((found,))
    else:
        search = found if found is not None else find_session_calls(call, guard)
    if not search.sessions:
        return {}, search.reason
    runs = pass_runs(latency_ms or 0.0)
    begin = time.perf_counter()
    operators: list[dict[str, Any]] = []
    tables: list[list[dict]] = []
    failed: dict[str, str] = {}
    profiled: list[SessionCall] = []
    for session in search.sessions[:MAX_SESSIONS]:
        try:
            stats, op_types = _profile_session(session, runs, guard, timed)
        except Exception as exc:  # a second session can fail where the first did not
            failed[session.label] = str(exc)
            continue
        profiled.append(session)
        operators += [
            {**replace(op, model=session.label).to_dict(), "session_runs_per_call": session.runs}
            for op in stats
        ]
        tables.append(op_types)
    if not profiled:
        why = next(iter(failed.values()), "")
        if "neither re-read nor re-used" in why:
            return {}, "not available: the session's model can be neither re-read nor re-used"
        return {}, f"not available: ONNX Runtime's profiler failed: {why}"
    wall_ms = (time.perf_counter() - begin) * 1000.0
    operators.sort(key=lambda o: (-float(o["total_us"]), o["node"]))
    grand = sum(float(o["total_us"]) for o in operators)
    if len(profiled) > 1 and grand > 0:
        for o in operators:  # shares of the whole workload's operator time
            o["share"] = float(o["total_us"]) / grand
    record: dict[str, Any] = {
        "runs": runs,
        "warmup": PASS_WARMUP,
        "wall_ms": round(wall_ms, 1),
        "session": profiled[0].how,
        "sessions": [_session_record(s) for s in profiled],
    }
    if failed:
        record["failed"] = failed
    if len(search.sessions) > MAX_SESSIONS:
        record["not_profiled"] = [s.label for s in search.sessions[MAX_SESSIONS:]]
    return {
        "operators": tuple(operators),
        "op_types": tuple(_merge_op_types(tables)),
        "operator_pass": record,
    }, None


def operator_table(
    call: Any, *, timeout: float | None = PASS_TIMEOUT_S
) -> tuple[list[OperatorStat] | None, str | None]:
    """ONNX Runtime's per-operator times for a workload's sessions, or why not.

    ``(None, reason)`` when the workload runs no session it can profile; the stats of
    every session otherwise, each with its ``model`` label. ``timeout`` bounds the pass
    (:func:`operator_times`).
    """
    fields_, reason = operator_times(call, timeout=timeout)
    if reason:
        return None, reason
    return [OperatorStat.from_dict(o) for o in fields_["operators"]], None


def profiled_replica(found: SessionCall, workdir: str | os.PathLike[str]) -> Any:
    """A second session of ``found``'s model made as the first (:func:`replica_session`)
    with ONNX Runtime's profiler on, its trace under ``workdir`` (``end_profiling()``
    returns the path; its node events' ``ts`` count µs from
    ``get_profiling_start_time_ns()``, on the wall clock)."""
    return replica_session(found.session, profile_prefix=str(Path(workdir) / "ort_profile"))
