"""Differential flamegraph data: how much each frame path grew or shrank.

Owns: comparing two folded profiles the way Brendan Gregg's ``difffolded.pl -n``
does (the baseline is scaled to the current total, so a longer or shorter
recording is not a change), per frame path rather than per whole stack.

A *frame path* is a stack prefix, ``"python;main;work"``, the key of one rectangle
in a flamegraph. Its value is the change of that frame's inclusive count in the
current profile's units: ``current(path) - baseline(path) * current_total /
baseline_total``. Positive means the frame (with everything it calls) takes a
larger share now; negative a smaller one. Paths found only in the baseline are
included (negative), although the current flamegraph has no rectangle for them.

Must not: draw (``svg.render_svg(current, diff=...)`` colours the result) or judge.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["diff_stacks", "frame_totals", "largest_changes"]


def frame_totals(folded: Mapping[str, int | float]) -> dict[str, float]:
    """Inclusive count of every frame path (each stack adds its count to all its prefixes)."""
    totals: dict[str, float] = {}
    for stack, count in folded.items():
        if count <= 0:
            continue
        end = -1
        while True:
            end = stack.find(";", end + 1)
            path = stack if end < 0 else stack[:end]
            totals[path] = totals.get(path, 0.0) + count
            if end < 0:
                break
    return totals


def diff_stacks(baseline: Mapping[str, int], current: Mapping[str, int]) -> dict[str, float]:
    """Per frame path, the current count minus the baseline's scaled to the current total.

    With an empty baseline every current path counts as grown by its whole count;
    with an empty current profile nothing is scaled and every baseline path shrank
    by its count.
    """
    base = frame_totals(baseline)
    cur = frame_totals(current)
    base_total = sum(c for c in baseline.values() if c > 0)
    cur_total = sum(c for c in current.values() if c > 0)
    scale = cur_total / base_total if base_total and cur_total else 1.0
    noise = 1e-9 * max(cur_total, base_total, 1)
    out: dict[str, float] = {}
    for path in sorted(set(base) | set(cur)):
        delta = cur.get(path, 0.0) - base.get(path, 0.0) * scale
        out[path] = delta if abs(delta) > noise else 0.0  # float rounding is not a change
    return out


def largest_changes(
    diff: Mapping[str, float], *, limit: int = 10
) -> list[tuple[str, float]]:
    """The ``limit`` frame paths with the largest absolute change, largest first."""
    ranked = sorted(diff.items(), key=lambda kv: (-abs(kv[1]), kv[0]))
    return [(path, delta) for path, delta in ranked[:limit] if delta]
