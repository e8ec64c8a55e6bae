"""Flamegraphs of a workload: native stacks (perf), Python stacks, operators, differences.

Owns: :func:`capture_for`, the one call the plugin and the CLI make (the views of one
measured workload, paths relative to its report, the stacks a Profile keeps), and
:func:`capture` under it. It runs a *separate* sampling pass (never while counters
count): native stacks with ``perf record`` (:mod:`.record`), the built-in Python
sampler (:mod:`.pysampler`) when perf is unavailable or saw no Python frames, and
draws each view as a folded file plus a standalone SVG (:mod:`.fold`, :mod:`.svg`); the ONNX Runtime
operator view from an operator table (:mod:`.ops`); and a differential graph
against a baseline's folded stacks (:mod:`.diff`).

Files, under ``out_dir`` (``<name>`` made safe by :func:`safe_name`):

* ``<name>.native.folded`` / ``.native.svg`` - perf samples, ``comm;frame;...``
* ``<name>.python.folded`` / ``.python.svg`` - Python sampler, ``thread;module:function;...``
* ``<name>.operators.folded`` / ``.operators.svg`` - ``model;op_type;node`` in µs
* ``<name>.<view>.speedscope.json`` - each view for https://www.speedscope.app
* ``<name>.operators.diff.svg`` - the operator view coloured by the absolute change of
  each frame's µs per call against a baseline's operator table
* ``<name>.diff.svg`` - the sampled main view coloured by change against the baseline
  (ms per call when both runs know their call counts)

A view that could not be made has a ``reasons`` entry instead of a path.

Must not: import pytest, count, or judge a regression.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.watchdog import PASS_TIMEOUT_S, PassStopped
from .diff import change_text, diff_per_call, diff_stacks, largest_changes, total_change
from .fold import fold_perf_script, read_folded, write_folded
from .ops import operator_stacks
from .pysampler import sample_python
from .record import NativeSamples, sample_native
from .speedscope import write_speedscope
from .svg import render_svg

if TYPE_CHECKING:
    from ...core.profile import Profile

__all__ = [
    "Capture",
    "Flamegraphs",
    "NativeSamples",
    "capture",
    "capture_for",
    "diff_stacks",
    "fold_perf_script",
    "largest_changes",
    "operator_diff_svg",
    "operator_stacks",
    "read_folded",
    "render_svg",
    "safe_name",
    "sample_native",
    "sample_python",
    "write_folded",
]

_MAX_NAME = 120
_UNSAFE = re.compile(r"[^A-Za-z0-9_.+=-]+")


@dataclass(frozen=True)
class Flamegraphs:
    """What :func:`capture` wrote.

    ``paths`` maps a view's file (``"operators.svg"``, ``"native.folded"``,
    ``"native.speedscope.json"``...) to its path, the primary view first; ``reasons``
    says why a view is missing or partial (``{"native": "not available: perf not
    installed ..."}``, ``{"stripped": "..."}``); ``folded`` is the sampled main view's
    stacks (native when perf recorded, else Python) and ``view`` names it; ``primary``
    is the view to look at first (``"operators"`` for an ONNX Runtime workload);
    ``calls`` and ``ms_per_count`` turn ``folded`` into milliseconds per call
    (``count * ms_per_count / calls``); ``native`` is the raw perf result when perf ran.
    """

    paths: dict[str, str]
    reasons: dict[str, str]
    folded: dict[str, int]
    view: str = ""
    native: NativeSamples | None = field(default=None, compare=False)
    primary: str = ""
    calls: int = 0
    ms_per_count: float = 0.0

    def stacks_record(self, max_bytes: int) -> dict[str, Any] | None:
        """What a Profile keeps (``Profile.stacks``): the main view, capped, with what a
        later run needs to diff it in time per call."""
        from .fold import cap_folded

        if not self.folded:
            return None
        record: dict[str, Any] = {"view": self.view, "folded": cap_folded(self.folded, max_bytes)}
        if self.calls and self.ms_per_count:
            record.update(calls=self.calls, ms_per_count=self.ms_per_count)
        return record


WORKDIR_PREFIX = "inferperf-flame-"


def sweep_abandoned_workdirs(tmp: str | None = None) -> list[Path]:
    """Remove the perf work folders of processes that are gone.

    A workload that ends its process (``os._exit``) during ``perf record`` runs no
    ``finally``: its ``inferperf-flame-<pid>-*`` folder (perf.data, FIFOs) stays. The
    next capture removes every such folder whose process no longer exists.
    """
    import shutil

    removed = []
    for folder in Path(tmp or tempfile.gettempdir()).glob(f"{WORKDIR_PREFIX}*-*"):
        pid = folder.name[len(WORKDIR_PREFIX) :].split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid() or not folder.is_dir():
            continue
        try:
            os.kill(int(pid), 0)
            continue  # still running
        except ProcessLookupError:
            pass
        except OSError:
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


def safe_name(name: str) -> str:
    """``name`` as one safe file-name stem: no separators, ``..``, NUL, markup; bounded length.

    A name that had to change gets a short hash of the original appended, so two
    test ids that differ only in unsafe characters still get different files.
    """
    raw = str(name)
    text = re.sub(r"\.{2,}", "_", _UNSAFE.sub("_", raw)).strip("._-")
    if text and text == raw and len(text) <= _MAX_NAME:
        return text
    digest = hashlib.sha1(raw.encode("utf-8", "replace")).hexdigest()[:8]
    return f"{text[: _MAX_NAME - 9].rstrip('._-') or 'flamegraph'}-{digest}"


def _subtitle_native(native: NativeSamples) -> str:
    parts = [
        f"perf record -e {native.event} --call-graph {native.call_graph}",
        f"{native.samples:,} samples",
        f"{native.calls:,} calls",
    ]
    if native.stripped:
        top = sorted(native.stripped.items(), key=lambda kv: (-kv[1], kv[0]))[:2]
        parts.append(
            ", ".join(f"{n:,} in {lib}" for lib, n in top)
            + " without symbols (stripped: shown as [library])"
        )
    return "; ".join(parts)


def _draw(
    out_dir: Path,
    stem: str,
    view: str,
    folded: Mapping[str, int],
    *,
    title: str,
    subtitle: str,
    unit: str,
    paths: dict[str, str],
) -> None:
    folded_path = write_folded(out_dir / f"{stem}.{view}.folded", folded)
    svg_path = out_dir / f"{stem}.{view}.svg"
    svg_path.write_text(
        render_svg(folded, title=title, subtitle=subtitle, unit=unit), encoding="utf-8"
    )
    speedscope_path = write_speedscope(
        out_dir / f"{stem}.{view}.speedscope.json", folded, name=title, unit=unit
    )
    paths[f"{view}.folded"] = str(folded_path)
    paths[f"{view}.svg"] = str(svg_path)
    paths[f"{view}.speedscope.json"] = str(speedscope_path)


NATIVE_FREQUENCY = 999  # perf record -F: samples per second per thread
STRIPPED_SHARE = 0.5  # a native view this much in libraries without symbols says so


def _stripped_note(native: NativeSamples, instead: str) -> str | None:
    """One line when most native samples fell in a stripped library, and what to use."""
    if not native.stripped or not native.samples:
        return None
    lib = max(native.stripped.items(), key=lambda kv: (kv[1], kv[0]))[0]
    share = sum(native.stripped.values()) / native.samples
    if share < STRIPPED_SHARE:
        return None
    return (
        f"{lib} has no symbols (stripped): {share:.0%} of the native samples cannot "
        f"be split into functions; {instead}"
    )


def _per_call(record: Mapping[str, Any] | None) -> dict[str, float] | None:
    """A stored stacks record in ms per call, when it says how many calls it covers."""
    if not record:
        return None
    calls, per = record.get("calls"), record.get("ms_per_count")
    folded = record.get("folded") or {}
    if (
        not isinstance(calls, (int, float))
        or not isinstance(per, (int, float))
        or calls <= 0
        or per <= 0
    ):
        return None
    return {k: v * per / calls for k, v in folded.items() if v > 0}


def operator_diff_svg(
    baseline_ops: Sequence[Any],
    current_ops: Sequence[Any],
    *,
    title: str,
    baseline_label: str = "the baseline",
    model_name: str = "model",
) -> str | None:
    """The operator view (model -> op type -> node) coloured by the absolute change of
    each frame's µs per call against ``baseline_ops``; None when either has no time.

    A 3x slowdown of the whole model reads 3.00x (+200%) on the root and every frame;
    an op type whose time rose is red, whatever the others did.
    """
    base = operator_stacks(baseline_ops, model_name, per_call=True)
    current = operator_stacks(current_ops, model_name, per_call=True)
    if not base or not current:
        return None
    before, after = total_change(base, current)
    return render_svg(
        current,
        unit="µs per call",
        change=diff_per_call(base, current),
        title=title,
        subtitle=f"ONNX Runtime kernel time per call against {baseline_label}: "
        f"{change_text(before, after, 'µs per call')}",
    )


def capture(
    call: Callable[[], object],
    *,
    name: str,
    out_dir: str | Path,
    seconds: float = 1.0,
    call_graph: str = "fp",
    operators: Sequence[Any] | None = None,
    model_name: str = "model",
    baseline_folded: Mapping[str, int] | None = None,
    baseline_stacks: Mapping[str, Any] | None = None,
    baseline_operators: Sequence[Any] | None = None,
    event: str | None = None,
    perf: str | None = None,
    native: bool = True,
    timeout: float | None = PASS_TIMEOUT_S,
) -> Flamegraphs:
    """Sample ``call`` (run repeatedly for ``seconds`` per pass) and write its flamegraphs.

    ``operators`` (:class:`~pytest_inferperf.onnxrt.sessions.OperatorStat` values or their dicts)
    adds the operator view (model -> op type -> node), the primary view of an ONNX
    Runtime workload, drawn first. The native pass runs next; the Python sampler runs
    as a second pass when the native one is unavailable or saw no Python frames
    (CPython < 3.12 has no perf trampoline; builds without frame pointers need
    ``call_graph="dwarf"``). Each view is written as folded stacks, an SVG and a
    speedscope JSON file. A native view that is mostly one stripped library says so in
    ``reasons["stripped"]``.

    Differences: ``baseline_operators`` (the baseline Profile's operator table) adds
    ``<name>.operators.diff.svg`` in absolute µs per call; ``baseline_stacks`` (a stored
    :meth:`Flamegraphs.stacks_record`) or ``baseline_folded`` (bare folded stacks) adds
    ``<name>.diff.svg`` of the sampled view, in ms per call when both runs recorded
    their call counts, else share-based (said in its subtitle). ``native=False`` skips
    perf entirely. ``timeout`` bounds each sampling pass (the marker's ``timeout=``): a
    pass whose call runs past it stops, and its reason says after how long.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    views = _Views(out, safe_name(name), name)
    op_stacks: dict[str, Any] = {}
    if operators is not None:
        op_stacks = _operator_view(
            views,
            call,
            operators,
            model_name,
            native=native,
            seconds=seconds,
            call_graph=call_graph,
            event=event,
            perf=perf,
        )
    if op_stacks and baseline_operators:
        _operator_diff(views, operators or (), baseline_operators, model_name)

    result: NativeSamples | None = None
    if native:
        result = _native_view(
            views,
            call,
            has_operators=bool(op_stacks),
            seconds=seconds,
            call_graph=call_graph,
            event=event,
            perf=perf,
            timeout=timeout,
        )
    else:
        views.reasons["native"] = "not requested"

    if result is not None and result.stopped:  # past the timeout once: not again
        views.reasons["python"] = "not sampled: the native sampling pass stopped at the timeout"
    elif (
        result is None
        or not result.folded
        or not result.python_samples
        or ("stripped" in views.reasons and not op_stacks)
    ):
        _python_view(views, call, seconds=seconds, timeout=timeout)

    baseline_record = baseline_stacks
    if baseline_record is None and baseline_folded is not None:
        baseline_record = {"folded": dict(baseline_folded)}
    if baseline_record is not None:
        _sampled_diff(views, baseline_record)

    return Flamegraphs(
        paths=views.paths,
        reasons=views.reasons,
        folded=dict(views.main),
        view=views.view,
        native=result,
        primary="operators" if op_stacks else views.view,
        calls=views.calls,
        ms_per_count=views.ms_per_count,
    )


@dataclass
class _Views:
    """What one :func:`capture` has written so far, step by step: each view's files, why
    a view is missing or partial, and the sampled main view (native, else Python) with
    what turns its counts into milliseconds per call."""

    out: Path
    stem: str
    name: str
    paths: dict[str, str] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    main: dict[str, int] = field(default_factory=dict)
    view: str = ""
    calls: int = 0
    ms_per_count: float = 0.0

    def draw(
        self, view: str, folded: Mapping[str, int], *, title: str, subtitle: str, unit: str
    ) -> None:
        """``folded`` as the view ``view``: folded file, SVG and speedscope file."""
        _draw(
            self.out,
            self.stem,
            view,
            folded,
            title=title,
            subtitle=subtitle,
            unit=unit,
            paths=self.paths,
        )


def _operator_view(
    views: _Views,
    call: Callable[[], object],
    operators: Sequence[Any],
    model_name: str,
    *,
    native: bool,
    seconds: float,
    call_graph: str,
    event: str | None,
    perf: str | None,
) -> dict[str, Any]:
    """The operator view (model -> op type -> node, native frames below each node where
    perf samples them); returns the operator stacks, empty when no node has time."""
    op_stacks = operator_stacks(operators, model_name)
    drawn, below = op_stacks, ""
    if op_stacks and native:  # native frames below each node, where perf samples them
        from .native_ops import native_operator_view

        drawn, why = native_operator_view(
            call, op_stacks, seconds=seconds, call_graph=call_graph, event=event, perf=perf
        )
        if why:  # not made at all, or made from frames without symbols
            kind = "operators.native" if why.startswith("not ") else "operators.stripped"
            views.reasons[kind] = why
        below = "; native frames below" if any(k not in op_stacks for k in drawn) else ""
    if op_stacks:
        models = sorted({k.split(";", 1)[0] for k in op_stacks})
        views.draw(
            "operators",
            drawn,
            title=f"{views.name}: ONNX Runtime operators",
            subtitle=f"{', '.join(models)}; kernel time per node from ONNX Runtime's "
            f"profiler (model -> op type -> node{below})",
            unit="µs",
        )
    else:
        views.reasons["operators"] = "the operator table has no node with kernel time"
    return op_stacks


def _operator_diff(
    views: _Views,
    operators: Sequence[Any],
    baseline_operators: Sequence[Any],
    model_name: str,
) -> None:
    """``<name>.operators.diff.svg``: the operator view against the baseline's table."""
    svg = operator_diff_svg(
        baseline_operators,
        operators,
        title=f"{views.name}: operators against the baseline",
        model_name=model_name,
    )
    if svg is None:
        views.reasons["operators.diff"] = "the baseline's operator table has no kernel time"
    else:
        diff_path = views.out / f"{views.stem}.operators.diff.svg"
        diff_path.write_text(svg, encoding="utf-8")
        views.paths["operators.diff.svg"] = str(diff_path)


def _native_view(
    views: _Views,
    call: Callable[[], object],
    *,
    has_operators: bool,
    seconds: float,
    call_graph: str,
    event: str | None,
    perf: str | None,
    timeout: float | None,
) -> NativeSamples:
    """The native pass (``perf record``) and its view, the main view when it has stacks."""
    sweep_abandoned_workdirs()
    with tempfile.TemporaryDirectory(prefix=f"{WORKDIR_PREFIX}{os.getpid()}-") as work:
        result = sample_native(
            call,
            seconds=seconds,
            call_graph=call_graph,
            event=event,
            workdir=work,
            perf=perf,
            frequency=NATIVE_FREQUENCY,
            timeout=timeout,
        )
    if not result.folded:
        views.reasons["native"] = result.reason or "not available: perf recorded no stacks"
        return result
    views.draw(
        "native",
        result.folded,
        title=f"{views.name}: native stacks",
        subtitle=_subtitle_native(result),
        unit="samples",
    )
    views.main, views.view = result.folded, "native"
    views.calls, views.ms_per_count = result.calls, 1000.0 / NATIVE_FREQUENCY
    instead = (
        "the operators view has each operator's time (ONNX Runtime's profiler)"
        if has_operators
        else "the Python view shows the callers"
    )
    note = _stripped_note(result, instead)
    if note:
        views.reasons["stripped"] = note
    return result


def _python_view(
    views: _Views, call: Callable[[], object], *, seconds: float, timeout: float | None
) -> None:
    """The built-in Python sampler's pass and view; the main view when perf gave none."""
    stats: dict[str, float] = {}
    try:
        python = sample_python(call, seconds=seconds, stats=stats, timeout=timeout)
    except PassStopped as stopped:
        python, views.reasons["python"] = {}, str(stopped)
    if python:
        total = sum(python.values())
        views.draw(
            "python",
            python,
            title=f"{views.name}: Python stacks",
            subtitle=f"built-in Python sampler, {total:,} samples at ~1 ms; native "
            "time is charged to the calling Python function",
            unit="samples",
        )
        if not views.main:
            views.main, views.view = python, "python"
            if stats.get("calls") and stats.get("caller_samples"):
                views.calls = int(stats["calls"])
                views.ms_per_count = stats["seconds"] * 1000.0 / stats["caller_samples"]
    elif "python" not in views.reasons:
        views.reasons["python"] = "the Python sampler took no samples (the workload was too short)"


def _sampled_diff(views: _Views, baseline_record: Mapping[str, Any]) -> None:
    """``<name>.diff.svg``: the main view against a baseline's stored stacks, in ms per
    call when both know their call counts, else share-based."""
    main, view, name = views.main, views.view, views.name
    base = dict(baseline_record.get("folded") or {})
    if not main:
        views.reasons["diff"] = "no current stacks to compare with the baseline"
        return
    if not any(v > 0 for v in base.values()):
        views.reasons["diff"] = "the baseline has no stacks"
        return
    diff_path = views.out / f"{views.stem}.diff.svg"
    base_ms = _per_call(baseline_record)
    if (
        base_ms is not None
        and views.calls
        and views.ms_per_count
        and baseline_record.get("view", view) == view
    ):
        now_ms = {k: v * views.ms_per_count / views.calls for k, v in main.items()}
        before, after = total_change(base_ms, now_ms)
        svg = render_svg(
            now_ms,
            title=f"{name}: change against the baseline",
            subtitle=f"{view} stacks, time per call: {change_text(before, after, 'ms per call')}",
            unit="ms per call",
            change=diff_per_call(base_ms, now_ms),
        )
    else:
        svg = render_svg(
            main,
            title=f"{name}: change against the baseline",
            subtitle=f"{view} stacks; {sum(main.values()):,} samples now, "
            f"{sum(base.values()):,} in the baseline (share-based: the "
            "baseline stored no call count)",
            unit="samples",
            diff=diff_stacks(base, main),
        )
    diff_path.write_text(svg, encoding="utf-8")
    views.paths["diff.svg"] = str(diff_path)


STACKS_KEPT_BYTES = 256 << 10  # folded stacks a Profile keeps (a baseline's, for later diffs)


@dataclass(frozen=True)
class Capture:
    """The flamegraphs of one measured workload, as a Profile and its report keep them.

    ``artifacts`` maps each SVG view (``"operators.svg"``, ``"native.svg"``,
    ``"diff.svg"``...) to its path relative to the report's folder (absolute when it lies
    outside); ``stacks`` is what ``Profile.stacks`` keeps (None: nothing sampled);
    ``notes`` says, per view, why it is missing or partial; ``graphs`` is the whole
    :func:`capture` result.
    """

    artifacts: dict[str, str]
    stacks: dict[str, Any] | None
    notes: dict[str, str]
    graphs: Flamegraphs


def capture_for(
    call: Callable[[], object],
    *,
    name: str,
    out_dir: str | Path,
    relative_to: str | Path,
    profile: Profile | None = None,
    operators: Sequence[Any] | None = None,
    find_operators: bool = False,
    model_name: str | None = None,
    baseline: Profile | None = None,
    stacks_bytes: int = STACKS_KEPT_BYTES,
    **options: Any,
) -> Capture:
    """The flamegraph pass of a measured workload: :func:`capture`, then what to keep.

    Operators: ``operators`` when given, else ``profile``'s operator table, else (with
    ``find_operators``) ONNX Runtime's per-operator times of the sessions ``call`` runs
    (:func:`pytest_inferperf.onnxrt.sessions.operator_table`; why not, in ``notes["operators"]``).
    ``model_name`` defaults to the model file of the session ``call`` runs. ``baseline``
    (a Profile) adds the differential views from its stored stacks and operator table; a
    baseline that stored no stacks says so in ``notes["diff"]``. ``options`` go to
    :func:`capture` (``seconds``, ``perf``, ``native``...).
    """
    notes: dict[str, str] = {}
    if operators is None and profile is not None and profile.operators:
        operators = list(profile.operators)
    if operators is None and find_operators:
        from ...onnxrt.sessions import operator_table

        bound = {"timeout": options["timeout"]} if "timeout" in options else {}
        operators, reason = operator_table(call, **bound)
        if reason:
            notes["operators"] = reason
    if model_name is None:
        model_name = _model_name(call)
    base_stacks = (baseline.stacks or {}) if baseline is not None else {}
    graphs = capture(
        call,
        name=name,
        out_dir=out_dir,
        operators=operators or None,
        model_name=model_name,
        baseline_stacks=base_stacks or None,
        baseline_operators=(baseline.operators or None) if baseline is not None else None,
        **options,
    )
    notes = {**graphs.reasons, **notes}
    if baseline is not None and not base_stacks:
        notes["diff"] = "no stacks stored with the baseline (record the baseline again)"
    root = Path(relative_to)
    artifacts = {
        kind: _relative(Path(path), root)
        for kind, path in graphs.paths.items()
        if kind.endswith(".svg")
    }
    return Capture(artifacts, graphs.stacks_record(stacks_bytes), notes, graphs)


def _model_name(call: Callable[[], object]) -> str:
    """The model file's stem of the session ``call`` runs directly, else ``"model"``."""
    import sys

    if "onnxruntime" not in sys.modules:  # no session can exist: skip the import
        return "model"
    from ...onnxrt.sessions import direct_call

    found = direct_call(call)
    return found.label if found is not None and not found.label.startswith("session ") else "model"


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)
