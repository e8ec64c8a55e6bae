"""The files of a report folder: ``report.json``/``.html`` and ``compare.json``/``.html``.

Owns: :func:`write_analysis` (one assessed Profile) and :func:`write_comparison` (a
:class:`side_by_side.SideBySide`, with its differential operator flamegraphs and Pareto
plot); every file is written atomically.

Must not: measure or compare (it writes what it is given), or render HTML itself
(:mod:`.html`). A folder that cannot be written raises :class:`errors.UsageError`.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from ..analyse import Analysis
from ..assessment import Assessment
from ..errors import UsageError
from ..side_by_side import SideBySide


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


def write_analysis(
    assessment: Assessment, out_dir: str | os.PathLike[str], *, title: str
) -> dict[str, Path]:
    """``report.json`` (the Profile) and ``report.html`` under ``out_dir``."""
    from .html import render_html

    profile = assessment.profile
    out = Path(out_dir)
    try:
        json_path = _write(out / "report.json", profile.to_json() + "\n")
        html = render_html(assessment, title=title, svgs=_read_svgs(out, profile.artifacts))
        html_path = _write(out / "report.html", html)
    except OSError as exc:
        raise UsageError(
            f"cannot write the report under {out}: {exc.strerror or exc}.",
            hint="Choose another folder with {out}.",
        ) from None
    return {"json": json_path, "html": html_path}


def _diff_flamegraph(first: Analysis, entry: Analysis) -> str | None:
    from ..flame import operator_diff_svg

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
    from ..flame import safe_name
    from ..pareto import Variant, render_pareto_svg
    from .html import render_html

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
            variants = [
                Variant(e.label, e.profile.latency.mean_ms, side.quality.get(e.label))
                for e in side.entries
            ]
            better = "higher" if side.quality_higher_is_better else "lower"
            svg = render_pareto_svg(
                variants, side.front, title=title, quality_label=f"quality ({better} is better)"
            )
            written["pareto"] = _write(out / "pareto.svg", svg)
            artifacts["Pareto front"] = "pareto.svg"
            svgs["pareto.svg"] = svg
        side = replace(side, artifacts=artifacts)
        written["json"] = _write(
            out / "compare.json", json.dumps(side.to_dict(), indent=1, allow_nan=False) + "\n"
        )
        written["html"] = _write(
            out / "compare.html",
            render_html(list(side.assessments), title=title, comparison=side, svgs=svgs),
        )
    except OSError as exc:
        raise UsageError(
            f"cannot write the comparison under {out}: {exc.strerror or exc}.",
            hint="Choose another folder with {out}.",
        ) from None
    return side, written
