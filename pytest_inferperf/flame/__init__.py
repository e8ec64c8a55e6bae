"""Flamegraphs of a workload: native stacks (perf), Python stacks, operators, differences.

Owns: :func:`capture`, the one call the plugin and the CLI make. It runs a
*separate* sampling pass (never while counters count): native stacks with
``perf record`` (:mod:`.record`), the built-in Python sampler (:mod:`.pysampler`)
when perf is unavailable or saw no Python frames, and draws each view as a
folded file plus a standalone SVG (:mod:`.fold`, :mod:`.svg`); the ONNX Runtime
operator view from an operator table (:mod:`.ops`); and a differential graph
against a baseline's folded stacks (:mod:`.diff`).

Files, under ``out_dir`` (``<name>`` made safe by :func:`safe_name`):

* ``<name>.native.folded`` / ``.native.svg`` - perf samples, ``comm;frame;...``
* ``<name>.python.folded`` / ``.python.svg`` - Python sampler, ``thread;module:function;...``
* ``<name>.operators.folded`` / ``.operators.svg`` - ``model;op_type;node`` in µs
* ``<name>.diff.svg`` - the main view coloured by change against the baseline

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
from typing import Any

from .diff import diff_stacks, largest_changes
from .fold import fold_perf_script, read_folded, write_folded
from .ops import operator_stacks
from .pysampler import sample_python
from .record import NativeSamples, sample_native
from .svg import render_svg

__all__ = [
    "Flamegraphs",
    "NativeSamples",
    "capture",
    "diff_stacks",
    "fold_perf_script",
    "largest_changes",
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

    ``paths`` maps a view's file (``"native.svg"``, ``"python.folded"``, ...) to its
    path; ``reasons`` says why a view is missing or partial (``{"native": "not
    available: perf not installed ..."}``); ``folded`` is the main view's stacks (native
    when perf recorded, else Python) and ``view`` names it; ``native`` is the raw perf
    result when perf was tried.
    """

    paths: dict[str, str]
    reasons: dict[str, str]
    folded: dict[str, int]
    view: str = ""
    native: NativeSamples | None = field(default=None, compare=False)


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
        pid = folder.name[len(WORKDIR_PREFIX):].split("-", 1)[0]
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
    parts = [f"perf record -e {native.event} --call-graph {native.call_graph}",
             f"{native.samples:,} samples", f"{native.calls:,} calls"]
    if native.stripped:
        top = sorted(native.stripped.items(), key=lambda kv: (-kv[1], kv[0]))[:2]
        parts.append(
            ", ".join(f"{n:,} in {lib}" for lib, n in top)
            + " without symbols (stripped: shown as [library])"
        )
    return "; ".join(parts)


def _draw(
    out_dir: Path, stem: str, view: str, folded: Mapping[str, int], *, title: str,
    subtitle: str, unit: str, paths: dict[str, str],
) -> None:
    folded_path = write_folded(out_dir / f"{stem}.{view}.folded", folded)
    svg_path = out_dir / f"{stem}.{view}.svg"
    svg_path.write_text(
        render_svg(folded, title=title, subtitle=subtitle, unit=unit), encoding="utf-8"
    )
    paths[f"{view}.folded"] = str(folded_path)
    paths[f"{view}.svg"] = str(svg_path)


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
    event: str | None = None,
    perf: str | None = None,
    native: bool = True,
) -> Flamegraphs:
    """Sample ``call`` (run repeatedly for ``seconds`` per pass) and write its flamegraphs.

    The native pass runs first; the Python sampler runs as a second pass when the
    native one is unavailable or saw no Python frames (CPython < 3.12 has no perf
    trampoline; builds without frame pointers need ``call_graph="dwarf"``).
    ``operators`` (:class:`~pytest_inferperf.onnx.OperatorStat` values or their dicts)
    adds the operator view; ``baseline_folded`` (a baseline run's main-view folded
    stacks, e.g. ``read_folded("old.native.folded")``) adds ``<name>.diff.svg``.
    ``native=False`` skips perf entirely.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = safe_name(name)
    paths: dict[str, str] = {}
    reasons: dict[str, str] = {}
    main: dict[str, int] = {}
    view = ""
    result: NativeSamples | None = None

    if native:
        sweep_abandoned_workdirs()
        with tempfile.TemporaryDirectory(prefix=f"{WORKDIR_PREFIX}{os.getpid()}-") as work:
            result = sample_native(
                call, seconds=seconds, call_graph=call_graph, event=event, workdir=work,
                perf=perf,
            )
        if result.folded:
            _draw(out, stem, "native", result.folded, title=f"{name}: native stacks",
                  subtitle=_subtitle_native(result), unit="samples", paths=paths)
            main, view = result.folded, "native"
        else:
            reasons["native"] = result.reason or "not available: perf recorded no stacks"
    else:
        reasons["native"] = "not requested"

    if result is None or not result.folded or not result.python_samples:
        python = sample_python(call, seconds=seconds)
        if python:
            total = sum(python.values())
            _draw(out, stem, "python", python, title=f"{name}: Python stacks",
                  subtitle=f"built-in Python sampler, {total:,} samples at ~1 ms; native "
                  "time is charged to the calling Python function", unit="samples",
                  paths=paths)
            if not main:
                main, view = python, "python"
        else:
            reasons["python"] = "the Python sampler took no samples (the workload was too short)"

    if operators is not None:
        op_stacks = operator_stacks(operators, model_name)
        if op_stacks:
            _draw(out, stem, "operators", op_stacks, title=f"{name}: ONNX Runtime operators",
                  subtitle=f"{model_name}; kernel time per node from ONNX Runtime's profiler",
                  unit="µs", paths=paths)
        else:
            reasons["operators"] = "the operator table has no node with kernel time"

    if baseline_folded is not None:
        if not main:
            reasons["diff"] = "no current stacks to compare with the baseline"
        elif not any(v > 0 for v in baseline_folded.values()):
            reasons["diff"] = "the baseline has no stacks"
        else:
            delta = diff_stacks(baseline_folded, main)
            diff_path = out / f"{stem}.diff.svg"
            diff_path.write_text(
                render_svg(main, title=f"{name}: change against the baseline",
                           subtitle=f"{view} stacks; {sum(main.values()):,} samples now, "
                           f"{sum(baseline_folded.values()):,} in the baseline",
                           unit="samples", diff=delta),
                encoding="utf-8",
            )
            paths["diff.svg"] = str(diff_path)

    return Flamegraphs(paths=paths, reasons=reasons, folded=dict(main), view=view, native=result)
