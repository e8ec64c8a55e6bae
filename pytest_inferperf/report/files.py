"""The files of a report folder: ``report.json``/``.html``, ``compare.json``/``.html``
and the plugin's per-test JSON files.

Owns: :func:`write_analysis` (one assessed Profile), :func:`write_comparison` (a
:class:`cli.compare.SideBySide`, with its differential operator flamegraphs and Pareto
plot), the names of the plugin's per-test files (:func:`record_file_name`,
:func:`write_records`) and :func:`write_text_atomic`, the one way every report file is
written (a temp file beside it, then a rename).

Must not: measure or compare (it writes what it is given), or render HTML itself
(:mod:`.html`). A folder that cannot be written raises :class:`core.errors.UsageError` from
the analysis and comparison writers; the plugin's writers let ``OSError`` through (the
plugin says which option's output failed).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import UsageError

# The engine behind a report (ONNX Runtime, numpy) is imported by the writers that need
# it, so the plugin can name and write its files without loading it.
if TYPE_CHECKING:
    from ..cli.compare import SideBySide
    from ..diagnose.assessment import Assessment
    from ..measure.target import Analysis

RECORD_STEM_CHARS = 120  # a per-test file's readable part, before its key's hash


def write_text_atomic(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically: a unique temp file beside it, then a rename.

    A reader never sees half a file, and two writers never share a temp file.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:60]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def record_file_name(key: str) -> str:
    """The file name of one test's record under ``--inferperf-report``.

    The key with every character outside ``[A-Za-z0-9._-]`` as ``_``, cut to
    :data:`RECORD_STEM_CHARS`, then ``-<first 8 hex of the key's SHA-256>.json``: keys
    that read alike after the cut still get their own files.
    """
    from ..judge.baseline_store import short_hash

    stem = "".join(c if c.isalnum() or c in "._-" else "_" for c in key)[:RECORD_STEM_CHARS]
    return f"{stem}-{short_hash(key)}.json"


def write_records(folder: Path, records: Iterable[Mapping[str, Any]]) -> list[Path]:
    """Each test's record (its ``"key"`` names the file) as JSON under ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    return [
        write_text_atomic(folder / record_file_name(record["key"]), json.dumps(record, indent=1))
        for record in records
    ]


def _read_svgs(out_dir: Path, artifacts: Mapping[str, str]) -> dict[str, str]:
    svgs = {}
    for rel in artifacts.values():
        with contextlib.suppress(OSError, UnicodeDecodeError):
            if rel.endswith(".svg"):
                svgs[rel] = (out_dir / rel).read_text(encoding="utf-8")
    return svgs


def write_analysis(
    assessment: Assessment, out_dir: str | os.PathLike[str], *, title: str
) -> dict[str, Path]:
    """``report.json`` (the Profile) and ``report.html`` under ``out_dir``."""
    from .html import render_html

    profile = assessment.profile
    out = Path(out_dir)
    try:
        json_path = write_text_atomic(out / "report.json", profile.to_json() + "\n")
        html = render_html(assessment, title=title, svgs=_read_svgs(out, profile.artifacts))
        html_path = write_text_atomic(out / "report.html", html)
    except OSError as exc:
        raise UsageError(
            f"cannot write the report under {out}: {exc.strerror or exc}.",
            hint="Choose another folder with {out}.",
        ) from None
    return {"json": json_path, "html": html_path}


def _diff_flamegraph(first: Analysis, entry: Analysis) -> str | None:
    from ..measure.flame import operator_diff_svg

    return operator_diff_svg(
        first.profile.operators,
        entry.profile.operators,
        model_name="operators",
        title=f"ONNX Runtime operators: {entry.label} against {first.label}",
        baseline_label=first.label,
    )


def write_comparison(
    side: SideBySide, out_dir: str | os.PathLike[str], *, title: str
) -> tuple[SideBySide, dict[str, Path]]:
    """Differential operator flamegraphs, the Pareto plot, ``compare.json`` and ``.html``.

    Returns ``side`` with its ``artifacts`` filled in, and every file written.
    """
    from ..measure.flame import safe_name
    from .html import render_html
    from .pareto import Variant, render_pareto_svg

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
            written[f"diff {entry.label}"] = write_text_atomic(out / rel, svg)
            artifacts[f"operator flamegraph: {entry.label} vs {first.label}"] = rel
            svgs[rel] = svg
        if side.quality:
            variants = [
                Variant(e.label, e.profile.latency.mean_ms, side.quality.get(e.label))
                for e in side.entries
            ]
            better = "higher" if side.quality_higher_is_better else "lower"
            svg = render_pareto_svg(
                variants, side.front, title=title, quality_label=f"quality ({better} is better)"
            )
            written["pareto"] = write_text_atomic(out / "pareto.svg", svg)
            artifacts["Pareto front"] = "pareto.svg"
            svgs["pareto.svg"] = svg
        side = replace(side, artifacts=artifacts)
        written["json"] = write_text_atomic(
            out / "compare.json", json.dumps(side.to_dict(), indent=1, allow_nan=False) + "\n"
        )
        written["html"] = write_text_atomic(
            out / "compare.html",
            render_html(list(side.assessments), title=title, comparison=side, svgs=svgs),
        )
    except OSError as exc:
        raise UsageError(
            f"cannot write the comparison under {out}: {exc.strerror or exc}.",
            hint="Choose another folder with {out}.",
        ) from None
    return side, written
