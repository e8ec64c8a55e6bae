"""Folded stacks -> a speedscope JSON file (https://www.speedscope.app).

Owns: writing one folded profile in speedscope's file format (schema
https://www.speedscope.app/file-format-schema.json): shared frames, and one
"sampled" profile whose samples are the stacks (root first) and whose weights are
their counts, in the view's unit (``microseconds`` for the operator view, plain
counts for sampled stacks). speedscope then shows it as a time-ordered chart, a
left-heavy flamegraph and a sandwich (callers/callees) table.

Must not: read perf output (``fold``) or draw SVG (``svg``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["speedscope_document", "write_speedscope"]

SCHEMA = "https://www.speedscope.app/file-format-schema.json"
UNITS = {
    "µs": "microseconds",
    "us": "microseconds",
    "ms": "milliseconds",
    "samples": "none",
    "": "none",
}


def speedscope_document(
    folded: Mapping[str, int | float], *, name: str, unit: str = "samples"
) -> dict[str, Any]:
    """The speedscope JSON object for ``folded`` (stacks sorted, frames shared)."""
    frames: list[dict[str, str]] = []
    index: dict[str, int] = {}
    samples: list[list[int]] = []
    weights: list[float] = []
    for stack, count in sorted(folded.items()):
        if not count or count <= 0:
            continue
        ids = []
        for frame in stack.split(";"):
            if frame not in index:
                index[frame] = len(frames)
                frames.append({"name": frame})
            ids.append(index[frame])
        samples.append(ids)
        weights.append(count)
    total = sum(weights)
    return {
        "$schema": SCHEMA,
        "name": name,
        "exporter": "pytest-inferperf",
        "activeProfileIndex": 0,
        "shared": {"frames": frames},
        "profiles": [
            {
                "type": "sampled",
                "name": name,
                "unit": UNITS.get(unit, "none"),
                "startValue": 0,
                "endValue": total,
                "samples": samples,
                "weights": weights,
            }
        ],
    }


def write_speedscope(
    path: str | os.PathLike[str],
    folded: Mapping[str, int | float],
    *,
    name: str,
    unit: str = "samples",
) -> Path:
    """Write :func:`speedscope_document` to ``path`` (atomically: a temp file renamed)."""
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(
        json.dumps(
            speedscope_document(folded, name=name, unit=unit),
            ensure_ascii=False,
            separators=(",", ":"),
        ),
        encoding="utf-8",
    )
    os.replace(tmp, target)
    return target
