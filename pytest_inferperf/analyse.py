"""The engine behind ``inferperf analyse | validate | compare``: targets in, Profiles out.

Owns:

* :func:`analyse_model` - one ONNX model measured the way the plugin measures a test:
  a session with the stated settings, valid inputs, :func:`runner.profile` over
  ``session.run``, then separate passes for the operator table (ONNX Runtime's
  profiler), the roofline, energy and, when asked, flamegraphs. A view that could not
  be made is left out with its reason in ``settings["analyse"]["notes"]``.
* :func:`analyse_callable` - a Python callable taking no arguments
  (``package.module:callable`` or ``path/to/file.py:callable``).
* :func:`analyse_target` - either of those behind the result cache (:mod:`.cache`).
* :func:`resolve_shapes` - ``--shape`` values (a symbolic dim or a whole input shape)
  checked against the model.
* :func:`validate_target` - a fresh (or saved) Profile judged against a baseline file by
  :func:`verdict.judge`, the plugin's own verdict logic and gating.
* :func:`side_by_side` - several Profiles compared with the first (metrics, operator
  types, Pareto front), and :func:`write_analysis` / :func:`write_comparison`, the files
  of a report folder.
* :func:`quantize_dynamic` - the int8 variant of a model.

Must not: parse arguments or print (``cli``), or format a report (``report``).
Anything the user asked for that cannot work raises :class:`UsageError` (exit 2).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import inspect
import json
import logging
import math
import os
import re
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .cache import CachedResult, CacheKey, ResultCache, file_sha256
from .compare import IncomparableError, check_comparable
from .machine import this_cpu
from .metrics import METRICS, profile_metrics
from .onnx import InputSpecError, ModelError, SessionSettings
from .profile import SCHEMA_VERSION, Profile, ProfileFormatError

Progress = Callable[[str], None]
"""Told what is being done now (``"warm-up…"``, ``"repeat 3/30"``); prints, never measures."""

STACKS_KEPT_BYTES = 256 << 10  # folded stacks kept in a Profile (as with a plugin baseline)
ENERGY_SECONDS = 0.5  # how long the energy pass runs the workload
OPERATOR_RUNS = 10  # profiled runs of the operator pass (fewer when --repeat is smaller)
CACHE_OPTIONS_VERSION = 1  # bump when what an analysis contains changes
# A credible change in a metric that does not gate (percentiles, memory, OS events) is
# reported as worse / better: only gated metrics regress (verdict.GATED_METRICS).
UNGATED_STATUS = {"regressed": "worse", "improved": "better"}


class UsageError(ValueError):
    """Something asked for cannot work: a missing file, a bad shape, an incomparable baseline.

    The message names the file or option and the fix; the CLI exits with status 2.
    """


# -- options -------------------------------------------------------------------------
@dataclass(frozen=True)
class Options:
    """How a target is measured: the CLI's measurement options."""

    shapes: tuple[tuple[str, str], ...] = ()  # --shape NAME=VALUE, unresolved
    threads: int = 1
    warmup: int = 3
    repeat: int = 30
    timeout: float = 60.0
    backend: str = "perf"
    flamegraph: bool = False
    details: bool = True  # operators, roofline, energy (validate needs none of them)

    def session_settings(self) -> SessionSettings:
        try:
            return SessionSettings(intra_op_threads=self.threads)
        except ValueError as exc:
            raise UsageError(f"--threads {self.threads}: {exc}") from None


@dataclass(frozen=True)
class Analysis:
    """One analysed target: its Profile, where it came from, and the cache's say."""

    label: str
    source: str
    profile: Profile
    cached: CachedResult | None = None
    notes: tuple[str, ...] = ()  # e.g. "result not cached: cannot write ..."


# -- shapes ----------------------------------------------------------------------------
_SIZES = re.compile(r"\d+(?:[x,]\d+)*")


def parse_shape_arg(text: str) -> tuple[str, str]:
    """``sequence=128`` -> ``("sequence", "128")``; ``input_ids=1x128`` is a whole input."""
    name, sep, value = text.partition("=")
    name, value = name.strip(), value.strip()
    if not sep or not name or not _SIZES.fullmatch(value):
        raise ValueError(
            f"--shape {text!r}: write NAME=N for a symbolic dimension (sequence=128, batch=1) "
            "or INPUT=AxB for a whole input (input_ids=1x128)"
        )
    return name, value


def _shape_facts(model: str | os.PathLike[str]) -> tuple[list[str], dict[str, list[tuple]]]:
    """The model's symbolic dim names and, per fed input, ``(axis, fixed, dim_param)``."""
    import onnx

    try:
        graph = onnx.load(os.fspath(model), load_external_data=False).graph
    except Exception as exc:  # onnx raises DecodeError, OSError, ... for a bad file
        raise UsageError(f"{model} is not an ONNX model onnx can read ({exc}). Pass a .onnx "
                         "file, or a report.json.") from None
    weights = {t.name for t in graph.initializer}
    symbolic: list[str] = []
    inputs: dict[str, list[tuple]] = {}
    for vi in graph.input:
        if vi.name in weights:
            continue
        axes = []
        for axis, dim in enumerate(vi.type.tensor_type.shape.dim):
            fixed = dim.dim_value if dim.HasField("dim_value") and dim.dim_value > 0 else None
            param = dim.dim_param if dim.HasField("dim_param") and dim.dim_param else None
            axes.append((axis, fixed, param))
            if param and param not in symbolic:
                symbolic.append(param)
        inputs[vi.name] = axes
    return symbolic, inputs


def _describe_axes(axes: Sequence[tuple]) -> str:
    return "[" + ", ".join(str(f) if f else (p or "?") for _, f, p in axes) + "]"


def resolve_shapes(model: str | os.PathLike[str],
                   shapes: Sequence[tuple[str, str]]) -> dict[str, int]:
    """``--shape`` values as the ``dims`` of :func:`onnx.make_inputs`, checked against the model.

    ``NAME=N`` sets a symbolic dimension; ``INPUT=AxB...`` (or ``A,B``) sets every axis of a
    graph input (its symbolic dims, or ``INPUT:axis`` for an unnamed one; a fixed axis
    must match). Anything else raises :class:`UsageError` listing what the model has.
    """
    if not shapes:
        return {}
    symbolic, inputs = _shape_facts(model)
    dims: dict[str, int] = {}
    for name, value in shapes:
        sizes = [int(s) for s in re.split(r"[x,]", value)]
        if name in inputs and (len(sizes) > 1 or name not in symbolic):
            axes = inputs[name]
            if len(sizes) != len(axes):
                raise UsageError(f"--shape {name}={value}: input {name} has {len(axes)} "
                                 f"dimensions {_describe_axes(axes)}, not {len(sizes)}.")
            for (axis, fixed, param), size in zip(axes, sizes, strict=True):
                if fixed is not None and fixed != size:
                    raise UsageError(f"--shape {name}={value}: axis {axis} of {name} is fixed "
                                     f"at {fixed} in the model {_describe_axes(axes)}.")
                if fixed is None:
                    dims[param or f"{name}:{axis}"] = size
        elif len(sizes) == 1 and (name in symbolic or ":" in name):
            dims[name] = sizes[0]
        else:
            raise UsageError(
                f"--shape {name}={value}: {model} has no symbolic dimension or input named "
                f"{name!r}. Symbolic dimensions: {', '.join(symbolic) or 'none'}; inputs: "
                + ", ".join(f"{n}{_describe_axes(a)}" for n, a in inputs.items()) + "."
            )
    return dims


# -- measuring ---------------------------------------------------------------------------
class _ProgressCounters:
    """A counter backend that says which repeat starts, just before its region starts."""

    def __init__(self, inner: Any, repeat: int, progress: Progress) -> None:
        from .runner import OVERHEAD_SAMPLES

        self._inner, self._repeat, self._progress = inner, repeat, progress
        self._skip = OVERHEAD_SAMPLES  # the empty start/stop pairs measuring the overhead
        self._starts = 0
        self.name = inner.name

    def open(self) -> None:
        self._inner.open()

    def start(self) -> None:
        self._starts += 1
        if self._starts > self._skip:
            self._progress(f"repeat {self._starts - self._skip}/{self._repeat}")
        self._inner.start()

    def stop(self) -> Any:
        return self._inner.stop()

    def snapshot(self) -> Any:
        return self._inner.snapshot()

    def delta(self, begin: Any, end: Any) -> Any:
        return self._inner.delta(begin, end)

    def close(self) -> None:
        self._inner.close()

    def statuses(self) -> Any:
        return self._inner.statuses()


def _counters(backend: str, repeat: int, progress: Progress | None) -> Any:
    from .pmu import make_backend
    from .pmu.base import CountersError

    try:
        inner = make_backend(backend)
    except CountersError as exc:
        raise UsageError(f"--backend {backend}: {exc}") from None
    return inner if progress is None else _ProgressCounters(inner, repeat, progress)


def _say(progress: Progress | None, text: str) -> None:
    if progress is not None:
        progress(text)


def _measure(fn: Callable[..., Any], args: tuple, *, name: str, warmup: int, repeat: int,
             timeout: float, backend: str, progress: Progress | None) -> Profile:
    from .runner import RunnerConfigError, profile

    _say(progress, "warm-up…")
    try:
        return profile(fn, *args, name=name, backend=_counters(backend, repeat, progress),
                       warmup=warmup, warmup_max=max(50, warmup), repeat=repeat,
                       timeout=timeout)
    except RunnerConfigError as exc:
        raise UsageError(str(exc)) from None


@functools.lru_cache(maxsize=8)
def _ceilings(threads: int) -> Any:
    """This machine's roofs, measured once per process and thread count."""
    from .roofline import measure_ceilings

    return measure_ceilings(seconds=0.3, threads=threads)


def _operators(path: Path, inputs: Mapping[str, Any], settings: SessionSettings,
               repeat: int) -> tuple[list[Any], str | None]:
    from .onnx import profile_operators

    try:
        return profile_operators(path, inputs, settings=settings,
                                 runs=max(1, min(repeat, OPERATOR_RUNS)), warmup=2), None
    except Exception as exc:  # an optional view: a failure is reported, never fatal
        return [], f"not available: ONNX Runtime's profiler failed: {exc}"


def _roofline(path: Path, dims: Mapping[str, int], operators: Sequence[Any],
              threads: int) -> tuple[dict | None, str | None]:
    from .roofline import op_costs, roofline_points, roofline_to_dict, unmatched_operators

    if not operators:
        return None, "not available: it needs the operator table"
    try:
        costs = op_costs(path, dims)
        ceilings = _ceilings(max(1, threads))
        points = roofline_points(costs, operators, ceilings)
        return roofline_to_dict(ceilings, points,
                                unmatched=unmatched_operators(costs, operators)), None
    except Exception as exc:  # an optional view: a failure is reported, never fatal
        return None, f"not available: {type(exc).__name__}: {exc}"


def _energy(call: Callable[[], Any], latency_ms: float) -> dict:
    from .energy import measure_energy

    calls = max(10, min(5000, math.ceil(ENERGY_SECONDS * 1e3 / max(latency_ms, 1e-3))))
    return measure_energy(call, calls=calls).to_dict()


def _flamegraphs(call: Callable[[], Any], *, name: str, out_dir: Path,
                 operators: Sequence[Any] | None) -> tuple[dict, dict, dict | None]:
    """Artifacts (view -> path relative to ``out_dir``), reasons, and the stacks kept."""
    from .flame import capture
    from .flame.fold import cap_folded

    graphs = capture(call, name=name, out_dir=out_dir / "flamegraphs",
                     operators=operators or None, model_name=name)
    artifacts = {kind: os.path.relpath(path, out_dir)
                 for kind, path in graphs.paths.items() if kind.endswith(".svg")}
    stacks = None
    if graphs.folded:
        stacks = {"view": graphs.view, "folded": cap_folded(graphs.folded, STACKS_KEPT_BYTES)}
    return artifacts, dict(graphs.reasons), stacks


def analyse_model(
    path: str | os.PathLike[str],
    *,
    dims: Mapping[str, int] | None = None,
    settings: SessionSettings | None = None,
    warmup: int = 3,
    repeat: int = 30,
    timeout: float = 60.0,
    backend: str = "perf",
    flamegraph: bool = False,
    out_dir: str | os.PathLike[str] = "inferperf-report",
    details: bool = True,
    progress: Progress | None = None,
) -> Profile:
    """Measure the ONNX model at ``path``; a Profile with operators, roofline and energy.

    ``dims`` are added to :func:`onnx.default_dims` (batch 1, sequence 128). The operator
    table, roofline, energy and flamegraphs each come from a separate pass after the
    counted one (with ``details=False`` only the counted pass runs). Raises
    :class:`UsageError` for a model that cannot be loaded or fed.
    """
    from .onnx import default_dims, make_inputs, make_session

    model = Path(path)
    settings = settings or SessionSettings()
    try:
        full_dims = {**default_dims(model), **(dims or {})}
        inputs = make_inputs(model, full_dims)
        session = make_session(model, settings)
    except InputSpecError as exc:
        raise UsageError(f"{model}: {exc}. Give it with --shape NAME=N.") from None
    except ModelError as exc:
        raise UsageError(f"{exc}. Pass a .onnx file ONNX Runtime can load.") from None
    name = model.stem
    profile = _measure(session.run, (None, inputs), name=name, warmup=warmup, repeat=repeat,
                       timeout=timeout, backend=backend, progress=progress)
    call = functools.partial(session.run, None, inputs)
    notes: dict[str, str] = {}
    changes: dict[str, Any] = {}
    operators: list[Any] = []
    if details:
        _say(progress, "operators (ONNX Runtime profiler)…")
        operators, reason = _operators(model, inputs, settings, repeat)
        if reason:
            notes["operators"] = reason
        changes["operators"] = tuple(op.to_dict() for op in operators)
        _say(progress, "roofline…")
        roofline, reason = _roofline(model, full_dims, operators, settings.intra_op_threads)
        changes["roofline"] = roofline
        if reason:
            notes["roofline"] = reason
        _say(progress, "energy…")
        changes["energy"] = _energy(call, profile.latency.mean_ms)
    else:
        notes["details"] = "not measured: operators, roofline and energy (validate)"
    if flamegraph:
        _say(progress, "flamegraphs…")
        artifacts, reasons, stacks = _flamegraphs(call, name=name, out_dir=Path(out_dir),
                                                  operators=operators)
        changes.update(artifacts=artifacts, stacks=stacks)
        notes.update({f"flamegraph {k}": v for k, v in reasons.items() if v != "not requested"})
    else:
        notes["flamegraphs"] = "not requested (--flamegraph)"
    facts = {
        "kind": "onnx",
        "target": os.fspath(path),
        "model_sha256": file_sha256(model),
        "dims": dict(full_dims),
        "session_settings": settings.to_dict(),
        "flamegraph": flamegraph,
        "notes": notes,
    }
    return profile.with_(settings={**profile.settings, "analyse": facts}, **changes)


def load_callable(spec: str) -> tuple[Callable[[], Any], str]:
    """``package.module:callable`` or ``path/to/file.py:callable`` (also ``obj.method``)."""
    module_part, sep, attr = spec.rpartition(":")
    if not sep or not module_part or not attr:
        raise UsageError(f"{spec!r} is neither a model file nor MODULE:CALLABLE "
                         "(e.g. mypkg.bench:run or path/to/bench.py:run).")
    try:
        module = _import(module_part)
    except UsageError:
        raise
    except Exception as exc:  # whatever the user's module raises while importing
        raise UsageError(f"cannot import {module_part!r} for {spec!r}: "
                         f"{type(exc).__name__}: {exc}") from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise UsageError(f"{module_part!r} has no attribute {attr!r} (from {spec!r}).")
        obj = getattr(obj, part)
    if not callable(obj):
        raise UsageError(f"{spec!r} is a {type(obj).__name__}, not a callable.")
    try:
        required = [p.name for p in inspect.signature(obj).parameters.values()
                    if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    except (TypeError, ValueError):
        required = []
    if required:
        raise UsageError(f"{spec!r} needs arguments ({', '.join(required)}); analyse calls it "
                         "with none. Wrap it in a function that takes no arguments.")
    return obj, spec


def _import(module_part: str) -> Any:
    if module_part.endswith(".py") or os.sep in module_part or "/" in module_part:
        path = Path(module_part)
        if not path.is_file():
            raise UsageError(f"{module_part} does not exist (from the target "
                             f"{module_part}:...).")
        name = f"_inferperf_target_{abs(hash(str(path.resolve())))}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise UsageError(f"{module_part} cannot be imported as a Python file.")
        module = importlib.util.module_from_spec(spec)
        with _on_sys_path(str(path.resolve().parent)):
            sys.modules[name] = module
            spec.loader.exec_module(module)
        return module
    with _on_sys_path(os.getcwd()):
        return importlib.import_module(module_part)


@contextlib.contextmanager
def _on_sys_path(folder: str) -> Iterator[None]:
    added = folder not in sys.path
    if added:
        sys.path.insert(0, folder)
    try:
        yield
    finally:
        if added:
            with contextlib.suppress(ValueError):
                sys.path.remove(folder)


def analyse_callable(
    spec: str,
    *,
    warmup: int = 3,
    repeat: int = 30,
    timeout: float = 60.0,
    backend: str = "perf",
    flamegraph: bool = False,
    out_dir: str | os.PathLike[str] = "inferperf-report",
    details: bool = True,
    progress: Progress | None = None,
) -> Profile:
    """Measure ``module:callable`` (called with no arguments); energy and flamegraphs too."""
    fn, name = load_callable(spec)
    profile = _measure(fn, (), name=name, warmup=warmup, repeat=repeat, timeout=timeout,
                       backend=backend, progress=progress)
    notes = {
        "operators": "not available: the target is a Python callable, not an ONNX model",
        "roofline": "not available: the target is a Python callable, not an ONNX model",
    }
    changes: dict[str, Any] = {}
    if details:
        _say(progress, "energy…")
        changes["energy"] = _energy(fn, profile.latency.mean_ms)
    if flamegraph:
        _say(progress, "flamegraphs…")
        artifacts, reasons, stacks = _flamegraphs(fn, name=name, out_dir=Path(out_dir),
                                                  operators=None)
        changes.update(artifacts=artifacts, stacks=stacks)
        notes.update({f"flamegraph {k}": v for k, v in reasons.items() if v != "not requested"})
    else:
        notes["flamegraphs"] = "not requested (--flamegraph)"
    facts = {"kind": "callable", "target": spec, "flamegraph": flamegraph, "notes": notes}
    return profile.with_(settings={**profile.settings, "analyse": facts}, **changes)


# -- targets and the cache -------------------------------------------------------------
def is_callable_target(target: str) -> bool:
    """``module:callable`` rather than a file: has a ``:``, is no file, does not end .onnx."""
    return ":" in target and not target.endswith(".onnx") and not Path(target).exists()


def cache_key(model: Path, options: Options, dims: Mapping[str, int]) -> CacheKey:
    import onnxruntime

    return CacheKey(
        model_sha256=file_sha256(model),
        machine_class=this_cpu().machine_class,
        options={
            "version": CACHE_OPTIONS_VERSION,
            "schema_version": SCHEMA_VERSION,
            "onnxruntime": onnxruntime.__version__,
            "dims": dict(sorted(dims.items())),
            "threads": options.threads,
            "warmup": options.warmup,
            "repeat": options.repeat,
            "timeout": options.timeout,
            "backend": options.backend,
            "flamegraph": options.flamegraph,
            "details": options.details,
        },
    )


def _full_dims(model: Path, dims: Mapping[str, int]) -> dict[str, int]:
    """``dims`` over the model's defaults: ``--shape sequence=128`` and no --shape agree."""
    from .onnx import default_dims

    try:
        return {**default_dims(model), **dims}
    except ModelError as exc:
        raise UsageError(f"{exc}. Pass a .onnx file ONNX Runtime can load.") from None


def _artifacts_present(profile: Profile, out_dir: Path) -> bool:
    return all((out_dir / rel).is_file() for rel in profile.artifacts.values())


def analyse_target(
    target: str,
    options: Options,
    *,
    out_dir: str | os.PathLike[str] = "inferperf-report",
    cache: ResultCache | None = None,
    force: bool = False,
    progress: Progress | None = None,
) -> Analysis:
    """Analyse a model file (through the cache unless ``force``) or a ``module:callable``.

    A cached result is used when the model's bytes, this machine class and ``options``
    match, and its flamegraph files (if any) are still under ``out_dir``.
    """
    out = Path(out_dir)
    if is_callable_target(target):
        profile = analyse_callable(
            target, warmup=options.warmup, repeat=options.repeat, timeout=options.timeout,
            backend=options.backend, flamegraph=options.flamegraph, out_dir=out,
            details=options.details, progress=progress)
        return Analysis(target, target, profile)
    model = Path(target)
    if not model.is_file():
        raise UsageError(f"{target} does not exist (or is not a file). Pass an ONNX model "
                         "file or MODULE:CALLABLE.")
    dims = resolve_shapes(model, options.shapes)
    settings = options.session_settings()
    key = cache_key(model, options, _full_dims(model, dims)) if cache is not None else None
    if cache is not None and key is not None and not force:
        hit = cache.load(key)
        if hit is not None and _artifacts_present(hit.profile, out):
            return Analysis(model.stem, target, hit.profile, cached=hit)
    profile = analyse_model(
        model, dims=dims, settings=settings, warmup=options.warmup, repeat=options.repeat,
        timeout=options.timeout, backend=options.backend, flamegraph=options.flamegraph,
        out_dir=out, details=options.details, progress=progress)
    notes: tuple[str, ...] = ()
    if cache is not None and key is not None:
        error = cache.store(key, profile)
        notes = (error,) if error else ()
    return Analysis(model.stem, target, profile, notes=notes)


def load_profile(path: str | os.PathLike[str], role: str) -> Profile:
    """A saved Profile (report.json, baseline) or :class:`UsageError` naming the file and fix."""
    path = Path(path)
    if not path.exists():
        raise UsageError(f"{role} {path} does not exist. Create one with "
                         f"`inferperf analyse MODEL --out DIR` and pass DIR/report.json.")
    try:
        return Profile.load(path)
    except ProfileFormatError as exc:
        text = str(exc).replace(
            "Restore it from version control, or delete it and re-create it with "
            "--update-baselines.", "").strip()
        text = text.removeprefix(str(path)).strip()
        raise UsageError(f"{role} {path} cannot be used: {text} Re-create it with "
                         "`inferperf analyse MODEL --out DIR` (DIR/report.json), or restore "
                         "it from version control.") from None


def options_like(baseline: Profile, overrides: Mapping[str, Any]) -> tuple[Options, dict]:
    """Measurement options matching how ``baseline`` was measured, then ``overrides``.

    Returns the options and the baseline's dims (already resolved).
    """
    facts = baseline.settings.get("analyse") or {}
    session = facts.get("session_settings") or {}
    base = {
        "threads": int(session.get("intra_op_threads", 1) or 1),
        "warmup": int(baseline.settings.get("warmup", 3)),
        "repeat": int(baseline.settings.get("repeat", 30)),
        "timeout": float(baseline.settings.get("timeout", 60.0)),
        "backend": baseline.backend if baseline.backend in ("perf", "none") else "perf",
    }
    base.update({k: v for k, v in overrides.items() if v is not None})
    dims = {str(k): int(v) for k, v in (facts.get("dims") or {}).items()}
    return Options(details=False, **base), dims


@dataclass(frozen=True)
class Validation:
    """A target judged against its baseline; ``verdict.failed`` is the exit status 1."""

    label: str
    baseline_path: str
    verdict: Any  # verdict.Verdict


def validate_target(
    target: str,
    baseline_file: str | os.PathLike[str],
    *,
    tolerance: float | None = None,
    overrides: Mapping[str, Any] | None = None,
    shapes: Sequence[tuple[str, str]] = (),
    progress: Progress | None = None,
) -> Validation:
    """Measure ``target`` again (or load it, a ``.json``) and judge it against the baseline.

    The measurement repeats the baseline's settings (dims, threads, warm-up, repeats,
    backend) unless ``overrides``/``shapes`` say otherwise. Same verdict as the plugin:
    :func:`verdict.judge` with ``tolerance`` for every metric (None: the defaults) and
    the default gating. Raises :class:`UsageError` for a missing or unreadable file, and
    for a baseline from another machine class or backend.
    """
    from .budgets import PerfSpec
    from .verdict import judge

    if tolerance is not None and (not math.isfinite(tolerance) or tolerance < 0):
        raise UsageError(f"--tolerance {tolerance}: a relative tolerance must be a finite "
                         "number >= 0 (0.25 is 25%).")
    baseline = load_profile(baseline_file, "baseline")
    if target.endswith(".json"):
        profile = load_profile(target, "report")
        label = target
    else:
        here = this_cpu().machine_class
        if baseline.machine_class != here:
            raise UsageError(_incomparable(baseline_file, (
                f"the baseline was measured on {baseline.machine_class}, this machine is "
                f"{here}")))
        options, dims = options_like(baseline, overrides or {})
        if shapes:
            options = replace(options, shapes=tuple(shapes))
        if is_callable_target(target):
            profile = analyse_callable(
                target, warmup=options.warmup, repeat=options.repeat,
                timeout=options.timeout, backend=options.backend, details=False,
                progress=progress)
        else:
            model = Path(target)
            if not model.is_file():
                raise UsageError(f"{target} does not exist (or is not a file). Pass an ONNX "
                                 "model, a report.json, or MODULE:CALLABLE.")
            dims = {**dims, **resolve_shapes(model, options.shapes)}
            profile = analyse_model(
                model, dims=dims, settings=options.session_settings(), warmup=options.warmup,
                repeat=options.repeat, timeout=options.timeout, backend=options.backend,
                details=False, progress=progress)
        label = target
    try:
        check_comparable(profile, baseline)
    except IncomparableError:
        raise UsageError(_incomparable(baseline_file, (
            f"{label} is from {profile.machine_class} with the {profile.backend} backend, "
            f"the baseline from {baseline.machine_class} with the {baseline.backend} "
            "backend"))) from None
    spec = PerfSpec(tolerance=tolerance)
    verdict = judge(label, profile, spec, baseline=baseline,
                    baseline_note=f"baseline {baseline_file}")
    return Validation(label, os.fspath(baseline_file), verdict)


def _incomparable(baseline_file: str | os.PathLike[str], why: str) -> str:
    return (f"baseline {os.fspath(baseline_file)} cannot be compared: {why}. Profiles from "
            "another machine class or counter backend are never compared; record a baseline "
            "on this machine with `inferperf analyse MODEL --out DIR` and pass "
            "DIR/report.json to --baseline.")


def diagnosis_of(profile: Profile) -> Any:
    """The classifier's diagnosis of one Profile on its own (as the plugin's verdict has it)."""
    from .classify import diagnose

    cpu = profile.machine.get("cpu") or {}
    return diagnose(profile_metrics(profile), core=str(cpu.get("core_slug", "")),
                    unavailable=profile.unavailable, session=profile.session,
                    cpu_count=cpu.get("cpu_count"))


# -- side by side ------------------------------------------------------------------------
@dataclass(frozen=True)
class MetricRow:
    """One metric across the profiles; deltas and statuses against the first."""

    metric: str
    unit: str
    better: str
    values: tuple[float | None, ...]
    deltas: tuple[float | None, ...]
    statuses: tuple[str, ...]  # "" for the first; ok / regressed / improved / noise / ""


@dataclass(frozen=True)
class OpTypeRow:
    """Time per inference of one operator type (sum of its nodes' mean times)."""

    op_type: str
    nodes: tuple[int, ...]
    us_per_call: tuple[float | None, ...]
    deltas: tuple[float | None, ...]


@dataclass(frozen=True)
class SideBySide:
    """Several analyses compared with the first: what ``compare`` prints and writes."""

    entries: tuple[Analysis, ...]
    metrics: tuple[MetricRow, ...]
    op_types: tuple[OpTypeRow, ...]
    verdicts: tuple[Any, ...]  # Verdict per entry against the first; None: first/incomparable
    notes: tuple[str, ...] = ()
    quality: Mapping[str, float] = field(default_factory=dict)
    quality_higher_is_better: bool = True
    front: tuple[str, ...] = ()
    artifacts: Mapping[str, str] = field(default_factory=dict)  # name -> file (relative)

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(e.label for e in self.entries)

    @property
    def regressions(self) -> list[tuple[str, Any]]:
        """(label, MetricChange) of every credible, gated regression against the first."""
        return [(e.label, c) for e, v in zip(self.entries, self.verdicts, strict=True)
                if v is not None for c in v.regressions]

    @property
    def failed(self) -> bool:
        return bool(self.regressions)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": "pytest-inferperf/compare",
            "schema_version": 1,
            "reference": self.labels[0],
            "entries": [{"label": e.label, "source": e.source,
                         "cached_from": e.cached.stored if e.cached else None,
                         "profile": e.profile.to_dict()} for e in self.entries],
            "metrics": [{"metric": r.metric, "unit": r.unit, "better": r.better,
                         "values": dict(zip(self.labels, r.values, strict=True)),
                         "deltas": _json_numbers(self.labels, r.deltas),
                         "statuses": dict(zip(self.labels, r.statuses, strict=True))}
                        for r in self.metrics],
            "operator_types": [{"op_type": r.op_type,
                                "nodes": dict(zip(self.labels, r.nodes, strict=True)),
                                "us_per_call": dict(zip(self.labels, r.us_per_call,
                                                        strict=True)),
                                "deltas": _json_numbers(self.labels, r.deltas)}
                               for r in self.op_types],
            "regressions": [{"label": label, "metric": c.metric, "baseline": c.baseline,
                             "current": c.current, "delta": _json_number(c.delta),
                             "detail": c.detail} for label, c in self.regressions],
            "notes": list(self.notes),
            "quality": dict(self.quality),
            "quality_higher_is_better": self.quality_higher_is_better,
            "pareto_front": list(self.front),
            "artifacts": dict(self.artifacts),
        }


def _json_number(value: float | None) -> float | str | None:
    """A relative change from a zero reference is infinite: JSON gets "inf" / "-inf"."""
    if value is None or math.isfinite(value):
        return value
    return "inf" if value > 0 else "-inf"


def _json_numbers(labels: Sequence[str], values: Sequence[float | None]) -> dict:
    return {label: _json_number(v) for label, v in zip(labels, values, strict=True)}


def entry_labels(sources: Sequence[str], profiles: Sequence[Profile]) -> list[str]:
    """Short, unique labels: a model's stem or a profile's name; the path when they clash."""
    names = [Path(s).stem if not s.endswith(".json") and not is_callable_target(s) else p.name
             for s, p in zip(sources, profiles, strict=True)]
    labels = [s if names.count(n) > 1 else n for n, s in zip(names, sources, strict=True)]
    out: list[str] = []
    for label in labels:
        unique, i = label, 2
        while unique in out:
            unique, i = f"{label}#{i}", i + 1
        out.append(unique)
    return out


def _delta(first: float | None, value: float | None) -> float | None:
    if first is None or value is None:
        return None
    if first == 0:
        return 0.0 if value == 0 else math.copysign(math.inf, value)
    return (value - first) / abs(first)


def op_type_times(profile: Profile) -> dict[str, tuple[int, float]]:
    """Per operator type: (nodes, µs per inference), from ``Profile.operators``."""
    out: dict[str, tuple[int, float]] = {}
    for op in profile.operators:
        op_type = str(op.get("op_type") or "?")
        nodes, us = out.get(op_type, (0, 0.0))
        out[op_type] = (nodes + 1, us + float(op.get("mean_us") or 0.0))
    return out


def match_quality(entries: Sequence[Analysis],
                  quality: Sequence[tuple[str, float]]) -> dict[str, float]:
    """``--quality NAME=VALUE`` by label, source as given, or source stem."""
    out: dict[str, float] = {}
    for name, value in quality:
        match = next((e.label for e in entries if name in (e.label, e.source,
                                                          Path(e.source).stem)), None)
        if match is None:
            raise UsageError(f"--quality {name}={value:g}: no compared variant is called "
                             f"{name!r}; the variants are {', '.join(e.label for e in entries)}.")
        out[match] = value
    return out


def side_by_side(entries: Sequence[Analysis], *,
                 quality: Sequence[tuple[str, float]] = (),
                 quality_higher_is_better: bool = True) -> SideBySide:
    """Compare every entry with the first: metrics, operator types, verdicts, Pareto front."""
    from .budgets import PerfSpec
    from .pareto import Variant, pareto_front
    from .verdict import judge

    if len(entries) < 2:
        raise UsageError("compare needs at least two profiles or models (or one model with "
                         "--quantize dynamic).")
    first = entries[0]
    verdicts: list[Any] = [None]
    notes: list[str] = []
    for entry in entries[1:]:
        try:
            check_comparable(entry.profile, first.profile)
        except IncomparableError:
            verdicts.append(None)
            notes.append(f"{entry.label} is not compared statistically with {first.label}: "
                         f"measured on {entry.profile.machine_class} ({entry.profile.backend}) "
                         f"against {first.profile.machine_class} ({first.profile.backend}); "
                         "values are shown side by side only")
            continue
        verdicts.append(judge(entry.label, entry.profile, PerfSpec(), baseline=first.profile,
                              baseline_note=f"against {first.label}"))
    values = [profile_metrics(e.profile) for e in entries]
    rows = []
    for name, spec in METRICS.items():
        column = tuple(v.get(name) for v in values)
        if all(c is None for c in column):
            continue
        statuses = [""]
        for verdict in verdicts[1:]:
            change = verdict.comparison.get(name) if verdict and verdict.comparison else None
            status = change.status if change else ""
            if name not in (verdict.gated if verdict else ()):
                status = UNGATED_STATUS.get(status, status)
            statuses.append(status)
        rows.append(MetricRow(name, spec.unit, spec.better, column,
                              (None, *(_delta(column[0], c) for c in column[1:])),
                              tuple(statuses)))
    times = [op_type_times(e.profile) for e in entries]
    op_rows = []
    order = sorted({t for ts in times for t in ts},
                   key=lambda t: (-max(ts.get(t, (0, 0.0))[1] for ts in times), t))
    for op_type in order:
        us = tuple(ts[op_type][1] if op_type in ts else None for ts in times)
        op_rows.append(OpTypeRow(op_type, tuple(ts.get(op_type, (0, 0.0))[0] for ts in times),
                                 us, (None, *(_delta(us[0], u) for u in us[1:]))))
    scores = match_quality(entries, quality)
    front: list[str] = []
    if scores:
        variants = [Variant(e.label, e.profile.latency.mean_ms, scores.get(e.label))
                    for e in entries]
        front = pareto_front(variants, quality_higher_is_better=quality_higher_is_better)
    return SideBySide(tuple(entries), tuple(rows), tuple(op_rows), tuple(verdicts),
                      tuple(notes), scores, quality_higher_is_better, tuple(front))


# -- report files ------------------------------------------------------------------------
def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path


def _read_svgs(out_dir: Path, artifacts: Mapping[str, str]) -> dict[str, str]:
    svgs = {}
    for rel in artifacts.values():
        with contextlib.suppress(OSError, UnicodeDecodeError):
            if rel.endswith(".svg"):
                svgs[rel] = (out_dir / rel).read_text(encoding="utf-8")
    return svgs


def write_analysis(profile: Profile, out_dir: str | os.PathLike[str], *,
                   title: str) -> dict[str, Path]:
    """``report.json`` (the Profile) and ``report.html`` under ``out_dir``."""
    from .report.html import render_html

    out = Path(out_dir)
    try:
        json_path = _write(out / "report.json", profile.to_json() + "\n")
        html = render_html(profile, title=title, svgs=_read_svgs(out, profile.artifacts))
        html_path = _write(out / "report.html", html)
    except OSError as exc:
        raise UsageError(f"cannot write the report under {out}: {exc.strerror or exc}. "
                         "Choose another folder with --out.") from None
    return {"json": json_path, "html": html_path}


def _diff_flamegraph(first: Analysis, entry: Analysis) -> str | None:
    from .flame import diff_stacks, operator_stacks, render_svg

    base = operator_stacks(first.profile.operators, "operators")
    current = operator_stacks(entry.profile.operators, "operators")
    if not base or not current:
        return None
    return render_svg(
        current, diff=diff_stacks(base, current), unit="µs",
        title=f"ONNX Runtime operators: {entry.label} against {first.label}",
        subtitle=f"kernel time per operator type and node; {sum(current.values()):,} µs now, "
                 f"{sum(base.values()):,} µs in {first.label} (scaled to this total)",
    )


def write_comparison(side: SideBySide, out_dir: str | os.PathLike[str], *,
                     title: str) -> tuple[SideBySide, dict[str, Path]]:
    """Differential operator flamegraphs, the Pareto plot, ``compare.json`` and ``.html``.

    Returns ``side`` with its ``artifacts`` filled in, and every file written.
    """
    from .flame import safe_name
    from .pareto import Variant, render_pareto_svg
    from .report.html import render_html

    out = Path(out_dir)
    artifacts: dict[str, str] = {}
    svgs: dict[str, str] = {}
    written: dict[str, Path] = {}
    first = side.entries[0]
    try:
        for entry in side.entries[1:]:
            svg = _diff_flamegraph(first, entry)
            if svg is None:
                continue
            rel = f"{safe_name(entry.label)}-vs-{safe_name(first.label)}.operators.diff.svg"
            written[f"diff {entry.label}"] = _write(out / rel, svg)
            artifacts[f"operator flamegraph: {entry.label} vs {first.label}"] = rel
            svgs[rel] = svg
        if side.quality:
            variants = [Variant(e.label, e.profile.latency.mean_ms, side.quality.get(e.label))
                        for e in side.entries]
            better = "higher" if side.quality_higher_is_better else "lower"
            svg = render_pareto_svg(variants, side.front, title=title,
                                    quality_label=f"quality ({better} is better)")
            written["pareto"] = _write(out / "pareto.svg", svg)
            artifacts["Pareto front"] = "pareto.svg"
            svgs["pareto.svg"] = svg
        side = replace(side, artifacts=artifacts)
        written["json"] = _write(out / "compare.json",
                                 json.dumps(side.to_dict(), indent=1, allow_nan=False) + "\n")
        profiles = [e.profile for e in side.entries]
        written["html"] = _write(out / "compare.html",
                                 render_html(profiles, title=title, comparison=side, svgs=svgs))
    except OSError as exc:
        raise UsageError(f"cannot write the comparison under {out}: {exc.strerror or exc}. "
                         "Choose another folder with --out.") from None
    return side, written


# -- quantisation ----------------------------------------------------------------------
@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Silence the quantiser's "consider pre-processing" log lines and warnings."""
    logger = logging.getLogger()
    previous = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(previous)


def quantize_dynamic(model: str | os.PathLike[str], out: str | os.PathLike[str]) -> Path:
    """Write the dynamically quantised int8 variant of ``model`` to ``out`` (atomically).

    ``onnxruntime.quantization.quantize_dynamic`` with ``QInt8`` weights on the
    ``MatMul``/``Gemm`` nodes whose weight is a constant: activations are quantised at
    run time (``DynamicQuantizeLinear`` + ``MatMulInteger``). ``Conv`` is left in float:
    its dynamic form (``ConvInteger``) runs many times slower than float on CPU.
    """
    from onnxruntime.quantization import QuantType
    from onnxruntime.quantization import quantize_dynamic as ort_quantize_dynamic

    source, target = Path(model), Path(out)
    if not source.is_file():
        raise UsageError(f"{source} does not exist: --quantize needs an ONNX model file.")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.stem}.", suffix=".onnx")
    os.close(fd)
    try:
        with _quiet():
            ort_quantize_dynamic(source, tmp, weight_type=QuantType.QInt8,
                                 op_types_to_quantize=["MatMul", "Gemm"],
                                 extra_options={"MatMulConstBOnly": True})
        os.replace(tmp, target)
    except Exception as exc:  # the quantiser raises whatever its passes raise
        raise UsageError(f"--quantize dynamic failed on {source}: {type(exc).__name__}: "
                         f"{exc}") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return target
