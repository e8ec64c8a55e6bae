"""Differential flamegraph data: how much each frame path grew or shrank.

Owns: comparing two folded profiles per frame path rather than per whole stack, in
two ways:

* **absolute, per call** (:func:`diff_per_call`, the default everywhere this package
  draws a difference): both profiles are times per call (operator µs per run, or
  samples turned into ms per call with :func:`per_call`); each frame path gets
  (before, after), so a 3x slowdown of the whole model shows as 3x (+200%) on every
  frame and a frame whose time rose is never shown as an improvement;
* **share-based** (:func:`diff_stacks`), the way Brendan Gregg's ``difffolded.pl -n``
  does (the baseline is scaled to the current total), for stacks with no call count
  (baselines stored before calls were recorded).

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

__all__ = [
    "change_text",
    "diff_per_call",
    "diff_stacks",
    "frame_totals",
    "largest_absolute_changes",
    "largest_changes",
    "per_call",
    "total_change",
]


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


def largest_changes(diff: Mapping[str, float], *, limit: int = 10) -> list[tuple[str, float]]:
    """The ``limit`` frame paths with the largest absolute change, largest first."""
    ranked = sorted(diff.items(), key=lambda kv: (-abs(kv[1]), kv[0]))
    return [(path, delta) for path, delta in ranked[:limit] if delta]


# -- absolute change per call -----------------------------------------------------------

Change = tuple[float, float]
"""(before, after) of one frame path, in the same unit per call (e.g. µs per call)."""


def per_call(folded: Mapping[str, int | float], calls: float) -> dict[str, float]:
    """Folded counts divided by ``calls``: totals over a recording -> per call."""
    if not calls or calls <= 0:
        raise ValueError(f"calls must be positive to get a time per call; got {calls!r}")
    return {stack: count / calls for stack, count in folded.items() if count > 0}


def diff_per_call(
    baseline: Mapping[str, int | float], current: Mapping[str, int | float]
) -> dict[str, Change]:
    """Per frame path, (before, after) inclusive time per call. Nothing is rescaled.

    Both profiles must already be per call (:func:`per_call`, or operator times per run),
    so a 3x slowdown of everything reads as 3x on every frame: ``after - before`` is the
    absolute change and ``after / before`` the ratio. A path found in only one profile
    has 0 on the other side.
    """
    base, cur = frame_totals(baseline), frame_totals(current)
    return {
        path: (base.get(path, 0.0), cur.get(path, 0.0)) for path in sorted(set(base) | set(cur))
    }


def total_change(baseline: Mapping[str, int | float], current: Mapping[str, int | float]) -> Change:
    """(before, after) of the whole profile, per call."""
    return (sum(c for c in baseline.values() if c > 0), sum(c for c in current.values() if c > 0))


def change_text(before: float, after: float, unit: str) -> str:
    """``"12.0 -> 36.0 µs per call (+24.0, 3.00x, +200%)"``; ``new``/``gone`` for one-sided."""

    def number(value: float) -> str:
        return f"{value:,.3g}" if abs(value) < 100 else f"{value:,.0f}"

    if before <= 0 and after <= 0:
        return f"0 {unit}"
    if before <= 0:
        return f"new: {number(after)} {unit}"
    if after <= 0:
        return f"gone: was {number(before)} {unit}"
    ratio = after / before
    delta = after - before
    return (
        f"{number(before)} -> {number(after)} {unit} ({'+' if delta >= 0 else '-'}"
        f"{number(abs(delta))}, {ratio:.2f}x, {100 * (ratio - 1):+.0f}%)"
    )


def largest_absolute_changes(
    changes: Mapping[str, Change], *, limit: int = 10
) -> list[tuple[str, float, float]]:
    """(path, before, after) of the ``limit`` paths whose time per call moved most."""
    ranked = sorted(changes.items(), key=lambda kv: (-abs(kv[1][1] - kv[1][0]), kv[0]))
    return [(path, b, a) for path, (b, a) in ranked[:limit] if a != b]
