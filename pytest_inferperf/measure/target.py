"""Measuring one target: an ONNX model or a Python callable in, a Profile out.

Owns:

* :class:`Options` and :class:`Analysis` - how a target is measured, and the result.
* :func:`resolve_shapes` - ``--shape`` values (a symbolic dim or a whole input shape)
  checked against the model.
* :func:`analyse_model` - one ONNX model measured the way the plugin measures a test:
  a session with the stated settings, valid inputs, and ``session.run`` measured
  through the plugin's own seam (:func:`.measurer.measurer_for`, then ``measure()``:
  any backend of :mod:`.backends`, its operator pass included), then separate passes
  for the roofline, energy and, when asked, flamegraphs. A view that could not be made
  is left out with its reason in ``settings["analyse"]["notes"]``.
* :func:`analyse_callable` - a Python callable taking no arguments
  (``package.module:callable`` or ``path/to/file.py:callable``), measured the same way.
* :func:`workload` - the target rebuilt in the simulate backend's valgrind child (a
  generated test, :data:`SIMULATED_TEST`, that calls ``pmu_profile`` on it).
* :func:`analyse_target` - either of those behind the result cache (:mod:`.cache`).
* :func:`load_profile` - a saved Profile (``report.json``, a baseline) as a target;
  what the user asked for that cannot work raises :class:`core.errors.UsageError` (the CLI exits 2).

Must not: parse arguments or print (``cli``), judge against a baseline (:mod:`..cli.validate`),
compare several Profiles (:mod:`..cli.compare`), write report files (:mod:`..report.files`)
or format a report (``report``).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import inspect
import math
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..core.default_paths import REPORT_DIR
from ..core.errors import UsageError
from ..core.profile import SCHEMA_VERSION, Profile, ProfileFormatError
from ..onnxrt.sessions import InputSpecError, ModelError, SessionSettings, SessionSettingsError
from .cache import CachedResult, CacheKey, ResultCache, file_sha256
from .identity import describe_model
from .machine import this_cpu

Progress = Callable[[str], None]
"""Told what is being done now (``"warm-up…"``, ``"repeat 3/30"``); prints, never measures."""

ENERGY_SECONDS = 0.5  # how long the energy pass runs the workload
# bump when what an analysis contains changes (2: the plugin's operator pass, op_types)
CACHE_OPTIONS_VERSION = 2


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
            raise UsageError(str(exc), setting="threads", value=self.threads) from None


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
        raise UsageError(
            "write NAME=N for a symbolic dimension (sequence=128, batch=1) "
            "or INPUT=AxB for a whole input (input_ids=1x128)",
            setting="shape",
            value=repr(text),
        )
    return name, value


def _shape_facts(model: str | os.PathLike[str]) -> tuple[list[str], dict[str, list[tuple]]]:
    """The model's symbolic dim names and, per fed input, ``(axis, fixed, dim_param)``."""
    from ..onnxrt.graph import GraphFormatError, read_graph

    try:
        graph = read_graph(os.fspath(model))
    except (GraphFormatError, OSError) as exc:
        raise UsageError(
            f"{model} is not an ONNX model that can be read ({exc}). Pass a .onnx "
            "file, or a report.json."
        ) from None
    symbolic: list[str] = []
    inputs: dict[str, list[tuple]] = {}
    for vi in graph.fed_inputs():
        axes = []
        for axis, dim in enumerate(vi.tensor.shape or () if vi.tensor else ()):
            fixed, param = dim.fixed, dim.param or None
            axes.append((axis, fixed, param))
            if param and param not in symbolic:
                symbolic.append(param)
        inputs[vi.name] = axes
    return symbolic, inputs


def _describe_axes(axes: Sequence[tuple]) -> str:
    return "[" + ", ".join(str(f) if f else (p or "?") for _, f, p in axes) + "]"


def resolve_shapes(
    model: str | os.PathLike[str], shapes: Sequence[tuple[str, str]]
) -> dict[str, int]:
    """``--shape`` values as the ``dims`` of :func:`onnxrt.sessions.make_inputs`, checked against
    the model.

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
                raise UsageError(
                    f"input {name} has {len(axes)} "
                    f"dimensions {_describe_axes(axes)}, not {len(sizes)}.",
                    setting="shape",
                    value=f"{name}={value}",
                )
            for (axis, fixed, param), size in zip(axes, sizes, strict=True):
                if fixed is not None and fixed != size:
                    raise UsageError(
                        f"axis {axis} of {name} is fixed "
                        f"at {fixed} in the model {_describe_axes(axes)}.",
                        setting="shape",
                        value=f"{name}={value}",
                    )
                if fixed is None:
                    dims[param or f"{name}:{axis}"] = size
        elif len(sizes) == 1 and (name in symbolic or ":" in name):
            dims[name] = sizes[0]
        else:
            raise UsageError(
                f"{model} has no symbolic dimension or input named "
                f"{name!r}. Symbolic dimensions: {', '.join(symbolic) or 'none'}; inputs: "
                + ", ".join(f"{n}{_describe_axes(a)}" for n, a in inputs.items())
                + ".",
                setting="shape",
                value=f"{name}={value}",
            )
    return dims


# -- measuring ---------------------------------------------------------------------------
SIMULATED_TEST = "test_target.py"
_SIMULATED_SOURCE = '''"""The target of inferperf analyse, rebuilt in the valgrind child."""

from pytest_inferperf.measure.target import workload


def test_target(pmu_profile):
    pmu_profile(workload({spec!r}))
'''


def workload(spec: Mapping[str, Any]) -> Callable[[], Any]:
    """The workload ``spec`` describes as a no-argument callable, built as the parent
    built it: ``{"model": PATH, "dims": {...}, "threads": N}`` (a session of the model
    with those settings, fed :func:`onnxrt.sessions.make_inputs`, which are seeded) or
    ``{"callable": "MODULE:CALLABLE"}``. The simulation child of ``--backend simulate``
    calls it (:data:`SIMULATED_TEST`)."""
    if "callable" in spec:
        return load_callable(str(spec["callable"]))[0]
    from ..onnxrt.sessions import make_inputs, make_session

    model = Path(spec["model"])
    inputs = make_inputs(model, {str(k): int(v) for k, v in spec["dims"].items()})
    session = make_session(model, SessionSettings(intra_op_threads=int(spec["threads"])))
    return functools.partial(session.run, None, inputs)


_COUNTED = re.compile(r"repeat \d+/\d+")  # progress.ProgressCounters' "repeat k/n"


class _Said:
    """The measurer's progress (phase, tick) told to a :data:`Progress` callable, in
    the command line's words: a phase under way ends with "…" (``warm-up…``), the
    repeat being counted does not (``repeat 3/30``)."""

    def __init__(self, progress: Progress | None) -> None:
        self.progress = progress

    def phase(self, text: str) -> None:
        _say(self.progress, text if _COUNTED.fullmatch(text) else f"{text}…")

    def tick(self) -> None:
        pass


def _say(progress: Progress | None, text: str) -> None:
    if progress is not None:
        progress(text)


def _measure(
    call: Callable[[], Any],
    spec: Mapping[str, Any],
    *,
    name: str,
    warmup: int,
    repeat: int,
    timeout: float,
    backend: str,
    operator_pass: bool,
    progress: Progress | None,
) -> Profile:
    """``call`` measured through the one seam the plugin measures with
    (:func:`measurer.measurer_for`, then its ``measure()``), the operator pass included
    unless ``operator_pass`` is False. ``spec``: how the simulation child rebuilds the
    workload (:func:`workload`). A backend that cannot run here raises
    :class:`UsageError` saying "not available: <reason>" (its row's ``why_not``)."""
    import tempfile

    from .backends import UnknownBackend, row
    from .measurer import MeasureOptions, SimulateMeasurer, SimulateUnavailable, measurer_for
    from .runner import RunnerConfigError, RunSettings

    try:
        reason = row(backend).why_not()
    except UnknownBackend as exc:
        raise UsageError(str(exc), setting="backend", value=backend) from None
    if reason:
        raise UsageError(reason, setting="backend", value=backend)
    try:
        settings = RunSettings(
            warmup=warmup, warmup_max=max(50, warmup), repeat=repeat, timeout=timeout
        )
    except RunnerConfigError as exc:
        raise UsageError(str(exc)) from None
    options = MeasureOptions(
        nodeid=f"{SIMULATED_TEST}::test_target",
        label=name,
        child_cwd=Path.cwd(),
        operator_pass=operator_pass,
    )
    with contextlib.ExitStack() as stack:
        measurer = measurer_for(backend, options)
        if isinstance(measurer, SimulateMeasurer):  # its child runs a test rebuilding it
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="inferperf-")))
            (folder / SIMULATED_TEST).write_text(_SIMULATED_SOURCE.format(spec=dict(spec)))
            measurer = measurer_for(backend, replace(options, rootdir=folder))
        try:
            return measurer.measure(call, name=None, settings=settings, progress=_Said(progress))
        except RunnerConfigError as exc:
            raise UsageError(str(exc)) from None
        except SimulateUnavailable as exc:
            raise UsageError(exc.reason, setting="backend", value=backend) from None


def _operator_note(profile: Profile) -> str | None:
    """Why the operator pass made no table (its ``skipped`` reason), or None."""
    record = profile.settings.get("operator_pass") or {}
    return str(record["skipped"]) if "skipped" in record else None


@functools.lru_cache(maxsize=8)
def _ceilings(threads: int) -> Any:
    """This machine's roofs, measured once per process and thread count."""
    from ..onnxrt.roofline import measure_ceilings

    return measure_ceilings(seconds=0.3, threads=threads)


def _roofline(
    path: Path, dims: Mapping[str, int], operators: Sequence[Any], threads: int
) -> tuple[dict | None, str | None]:
    from ..onnxrt.roofline import op_costs, roofline_summary

    if not operators:
        return None, "not available: it needs the operator table"
    try:
        return roofline_summary(op_costs(path, dims), operators, _ceilings(max(1, threads))), None
    except Exception as exc:  # an optional view: a failure is reported, never fatal
        return None, f"not available: {type(exc).__name__}: {exc}"


def _energy(call: Callable[[], Any], latency_ms: float) -> dict:
    from .energy import measure_energy

    calls = max(10, min(5000, math.ceil(ENERGY_SECONDS * 1e3 / max(latency_ms, 1e-3))))
    return measure_energy(call, calls=calls).to_dict()


def _flamegraphs(
    call: Callable[[], Any],
    *,
    requested: bool,
    name: str,
    out_dir: Path,
    operators: Sequence[Any] | None,
    progress: Progress | None,
) -> tuple[dict[str, Any], dict[str, str]]:
    """The flamegraph pass, if ``requested``: Profile changes and notes (view -> reason).

    The changes are ``artifacts`` (view -> path relative to ``out_dir``) and the
    ``stacks`` kept.
    """
    if not requested:
        return {}, {"flamegraphs": "not requested (--flamegraph)"}
    _say(progress, "flamegraphs…")
    from .flame import capture_for

    graphs = capture_for(
        call,
        name=name,
        out_dir=out_dir / "flamegraphs",
        relative_to=out_dir,
        operators=operators or None,
        model_name=name,
    )
    notes = {f"flamegraph {k}": v for k, v in graphs.notes.items() if v != "not requested"}
    return {"artifacts": graphs.artifacts, "stacks": graphs.stacks}, notes


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
    out_dir: str | os.PathLike[str] = REPORT_DIR,
    details: bool = True,
    progress: Progress | None = None,
) -> Profile:
    """Measure the ONNX model at ``path``; a Profile with operators, roofline and energy.

    ``dims`` are added to :func:`onnxrt.sessions.default_dims` (batch 1, sequence 128). The operator
    table, roofline, energy and flamegraphs each come from a separate pass after the
    counted one (with ``details=False`` only the counted pass runs). Raises
    :class:`UsageError` for a model that cannot be loaded or fed.
    """
    from ..onnxrt.sessions import default_dims, make_inputs, make_session

    model = Path(path)
    settings = settings or SessionSettings()
    try:
        full_dims = {**default_dims(model), **(dims or {})}
        inputs = make_inputs(model, full_dims)
        session = make_session(model, settings)
    except InputSpecError as exc:
        raise _inputs_usage_error(model, exc) from None
    except SessionSettingsError as exc:  # more threads than this process can create
        raise UsageError(str(exc), setting="threads", hint="Lower {threads}.") from None
    except ModelError as exc:
        raise UsageError(f"{exc}. Pass a .onnx file ONNX Runtime can load.") from None
    name = model.stem
    call = functools.partial(session.run, None, inputs)
    spec = {
        "model": os.path.abspath(model),
        "dims": dict(full_dims),
        "threads": settings.intra_op_threads,
    }
    profile = _measure(
        call,
        spec,
        name=name,
        warmup=warmup,
        repeat=repeat,
        timeout=timeout,
        backend=backend,
        operator_pass=details,
        progress=progress,
    )
    notes: dict[str, str] = {}
    changes: dict[str, Any] = {"model": describe_model(model, inputs)}
    operators: list[Any] = []
    if details:
        from ..onnxrt.operators import OperatorStat

        operators = [OperatorStat.from_dict(o) for o in profile.operators]
        reason = _operator_note(profile)
        if reason:
            notes["operators"] = reason
        _say(progress, "roofline…")
        roofline, reason = _roofline(model, full_dims, operators, settings.intra_op_threads)
        changes["roofline"] = roofline
        if reason:
            notes["roofline"] = reason
        _say(progress, "energy…")
        changes["energy"] = _energy(call, profile.latency.mean_ms)
    else:
        notes["details"] = "not measured: operators, roofline and energy (validate)"
    facts = {
        "kind": "onnx",
        "target": os.fspath(path),
        "model_sha256": file_sha256(model),
        "dims": dict(full_dims),
        "session_settings": settings.to_dict(),
    }
    return _with_views_and_facts(
        profile, call, facts, changes, notes, flamegraph, name, out_dir, operators, progress
    )


def load_callable(spec: str) -> tuple[Callable[[], Any], str]:
    """``package.module:callable`` or ``path/to/file.py:callable`` (also ``obj.method``)."""
    module_part, sep, attr = spec.rpartition(":")
    if not sep or not module_part or not attr:
        raise UsageError(
            f"{spec!r} is neither a model file nor MODULE:CALLABLE "
            "(e.g. mypkg.bench:run or path/to/bench.py:run)."
        )
    try:
        module = _import(module_part)
    except UsageError:
        raise
    except Exception as exc:  # whatever the user's module raises while importing
        raise UsageError(
            f"cannot import {module_part!r} for {spec!r}: {type(exc).__name__}: {exc}"
        ) from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise UsageError(f"{module_part!r} has no attribute {attr!r} (from {spec!r}).")
        obj = getattr(obj, part)
    if not callable(obj):
        raise UsageError(f"{spec!r} is a {type(obj).__name__}, not a callable.")
    try:
        required = [
            p.name
            for p in inspect.signature(obj).parameters.values()
            if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]
    except (TypeError, ValueError):
        required = []
    if required:
        raise UsageError(
            f"{spec!r} needs arguments ({', '.join(required)}); analyse calls it "
            "with none. Wrap it in a function that takes no arguments."
        )
    return obj, spec


def _import(module_part: str) -> Any:
    if module_part.endswith(".py") or os.sep in module_part or "/" in module_part:
        path = Path(module_part)
        if not path.is_file():
            raise UsageError(f"{module_part} does not exist (from the target {module_part}:...).")
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
    out_dir: str | os.PathLike[str] = REPORT_DIR,
    details: bool = True,
    progress: Progress | None = None,
) -> Profile:
    """Measure ``module:callable`` (called with no arguments); energy and flamegraphs too.

    The ONNX Runtime sessions the callable runs (whatever wraps them: tokenising,
    post-processing) are found by watching one more call, and each gets its operator
    table (:func:`onnxrt.sessions.operator_times`), labelled with its model; when none is found the
    note says why.
    """
    fn, name = load_callable(spec)
    profile = _measure(
        fn,
        {"callable": spec},
        name=name,
        warmup=warmup,
        repeat=repeat,
        timeout=timeout,
        backend=backend,
        operator_pass=details,
        progress=progress,
    )
    notes = {
        "roofline": "not available: the target is a Python callable; run inferperf analyse "
        "on its .onnx model for the roofline",
    }
    changes: dict[str, Any] = {}
    operators: list[Any] = list(profile.operators)
    if details:
        reason = _operator_note(profile)
        if reason:
            notes["operators"] = reason
        _say(progress, "energy…")
        changes["energy"] = _energy(fn, profile.latency.mean_ms)
    else:
        notes["operators"] = "not measured (validate)"
    facts = {"kind": "callable", "target": spec}
    return _with_views_and_facts(
        profile, fn, facts, changes, notes, flamegraph, name, out_dir, operators or None, progress
    )


def _with_views_and_facts(
    profile: Profile,
    call: Callable[[], Any],
    facts: dict[str, Any],
    changes: dict[str, Any],
    notes: dict[str, str],
    flamegraph: bool,
    name: str,
    out_dir: str | os.PathLike[str],
    operators: Sequence[Any] | None,
    progress: Progress | None,
) -> Profile:
    """The end of ``analyse_model`` and ``analyse_callable``: the flamegraph views asked
    for, and what was analysed (``facts``, with the flamegraph choice and the notes) in
    the Profile's ``settings.analyse``."""
    views, reasons = _flamegraphs(
        call,
        requested=flamegraph,
        name=name,
        out_dir=Path(out_dir),
        operators=operators,
        progress=progress,
    )
    changes.update(views)
    notes.update(reasons)
    facts = {**facts, "flamegraph": flamegraph, "notes": notes}
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
    from ..onnxrt.sessions import default_dims

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
    out_dir: str | os.PathLike[str] = REPORT_DIR,
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
            target,
            warmup=options.warmup,
            repeat=options.repeat,
            timeout=options.timeout,
            backend=options.backend,
            flamegraph=options.flamegraph,
            out_dir=out,
            details=options.details,
            progress=progress,
        )
        return Analysis(target, target, profile)
    model = Path(target)
    if not model.is_file():
        raise UsageError(
            f"{target} does not exist (or is not a file). Pass an ONNX model "
            "file or MODULE:CALLABLE."
        )
    dims = resolve_shapes(model, options.shapes)
    settings = options.session_settings()
    key = cache_key(model, options, _full_dims(model, dims)) if cache is not None else None
    if cache is not None and key is not None and not force:
        hit = cache.load(key)
        if hit is not None and _artifacts_present(hit.profile, out):
            return Analysis(model.stem, target, hit.profile, cached=hit)
    profile = analyse_model(
        model,
        dims=dims,
        settings=settings,
        warmup=options.warmup,
        repeat=options.repeat,
        timeout=options.timeout,
        backend=options.backend,
        flamegraph=options.flamegraph,
        out_dir=out,
        details=options.details,
        progress=progress,
    )
    notes: tuple[str, ...] = ()
    if cache is not None and key is not None:
        error = cache.store(key, profile)
        notes = (error,) if error else ()
    return Analysis(model.stem, target, profile, notes=notes)


def load_profile(path: str | os.PathLike[str], role: str) -> Profile:
    """A saved Profile (report.json, baseline) or :class:`UsageError` naming the file and fix."""
    path = Path(path)
    if not path.exists():
        raise UsageError(
            f"{role} {path} does not exist. Create one with "
            f"`inferperf analyse MODEL --out DIR` and pass DIR/report.json."
        )
    try:
        return Profile.load(path)
    except ProfileFormatError as exc:
        text = exc.cause.strip().removeprefix(str(path)).strip()
        raise UsageError(
            f"{role} {path} cannot be used: {text} Re-create it with "
            "`inferperf analyse MODEL --out DIR` (DIR/report.json), or restore "
            "it from version control."
        ) from None


def _inputs_usage_error(model: Path, exc: InputSpecError) -> UsageError:
    """Inputs that could not be made, as the front-end's usage error: the fix names the
    shape setting as the front-end spells it, never the Python API's ``dims=``."""
    from ..onnxrt.input_memory import FIX

    text, hint = f"{exc}.", "Give it with {shape} NAME=N."
    if exc.dimension is not None:  # a symbolic dimension without a value
        text = (exc.message or str(exc)).rstrip(";") + "."
        hint = f"Give it with {{shape}} {exc.dimension}=N (e.g. {exc.dimension}=1)."
    elif str(exc).endswith(FIX):  # too large: the fix names the setting as the front-end does
        text = str(exc).removesuffix(FIX).rstrip()
        hint = "Lower the {shape} values (e.g. batch=1, sequence=128)."
    return UsageError(f"{model}: {text}", hint=hint)
