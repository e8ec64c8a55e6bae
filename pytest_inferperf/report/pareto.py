"""Latency / quality trade-offs between model variants: the Pareto front and its plot.

Owns: :class:`Variant` (a model variant's latency and quality), :func:`pareto_front` (the
variants no other variant beats on both) and :func:`render_pareto_svg`.

A variant is on the front when no other variant is at least as good on both latency
(lower is better) and quality (higher is better, or lower with
``quality_higher_is_better=False``) and strictly better on one. Two variants with equal
latency and quality are both on the front (neither beats the other). Variants without a
quality score cannot be compared; they are left out of the front and listed by
:func:`without_quality` (and under the plot).

Must not: import pytest or measure anything; latencies and quality scores come from the
caller (a Profile's ``latency`` and whatever quality metric the user computes).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..core.svgplot import Axis, Chart

__all__ = ["Variant", "pareto_front", "render_pareto_svg", "without_quality"]

FRONT_COLOUR = "#e15759"
OTHER_COLOUR = "#9aa5b1"


@dataclass(frozen=True)
class Variant:
    """One model variant: its name, latency per call (ms) and quality score (or ``None``)."""

    name: str
    latency_ms: float
    quality: float | None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"Variant.name must be a non-empty string; got {self.name!r}")
        if not _finite(self.latency_ms) or self.latency_ms < 0:
            raise ValueError(
                f"Variant {self.name!r}: latency_ms must be a finite number >= 0; "
                f"got {self.latency_ms!r}"
            )
        if self.quality is not None and not _finite(self.quality):
            raise ValueError(
                f"Variant {self.name!r}: quality must be a finite number or None; "
                f"got {self.quality!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _finite(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_unique(variants: Sequence[Variant]) -> None:
    seen: set[str] = set()
    for v in variants:
        if v.name in seen:
            raise ValueError(f"two variants are named {v.name!r}; names must be unique")
        seen.add(v.name)


def _dominates(a: Variant, b: Variant, higher_is_better: bool) -> bool:
    """True when ``a`` is at least as good as ``b`` on both axes and strictly better on one."""
    assert a.quality is not None and b.quality is not None
    qa, qb = (a.quality, b.quality) if higher_is_better else (-a.quality, -b.quality)
    at_least = a.latency_ms <= b.latency_ms and qa >= qb
    strictly = a.latency_ms < b.latency_ms or qa > qb
    return at_least and strictly


def pareto_front(
    variants: Sequence[Variant], *, quality_higher_is_better: bool = True
) -> list[str]:
    """Names of the variants on the latency/quality Pareto front, fastest first.

    Variants with ``quality=None`` are not considered (see :func:`without_quality`).
    Ties on latency are ordered by quality, best first, then by name. Raises
    ``ValueError`` when two variants share a name.
    """
    _check_unique(variants)
    scored = [v for v in variants if v.quality is not None]
    front = [
        v
        for v in scored
        if not any(_dominates(o, v, quality_higher_is_better) for o in scored if o is not v)
    ]
    sign = -1.0 if quality_higher_is_better else 1.0
    front.sort(key=lambda v: (v.latency_ms, sign * (v.quality or 0.0), v.name))
    return [v.name for v in front]


def without_quality(variants: Sequence[Variant]) -> list[str]:
    """Names of the variants that have no quality score (not placed on the front)."""
    return [v.name for v in variants if v.quality is None]


def render_pareto_svg(
    variants: Sequence[Variant],
    front: Sequence[str],
    *,
    title: str,
    quality_label: str,
) -> str:
    """A self-contained SVG: latency (x) against quality (y), the front joined and labelled.

    ``front`` is :func:`pareto_front`'s result. Front variants are red and joined by a
    line in latency order; the others are grey. Every variant is labelled with its name
    and shows latency and quality on hover; variants without quality are listed under the
    plot.
    """
    on_front = set(front)
    scored = [v for v in variants if v.quality is not None]
    x_axis = Axis.fit(
        "latency per call (ms, lower is better)",
        [v.latency_ms for v in scored],
        log=False,
        zero=True,
    )
    y_axis = Axis.fit(
        quality_label, [v.quality for v in scored if v.quality is not None], log=False
    )
    chart = Chart(
        title=title,
        x=x_axis,
        y=y_axis,
        subtitle=f"{len(front)} of {len(scored)} variants on the Pareto front",
        right=160,
    )
    missing = without_quality(variants)
    if missing:
        chart.notes.append("no quality score (not placed): " + ", ".join(missing))
    by_name = {v.name: v for v in scored}
    line = [by_name[name] for name in front if name in by_name]
    chart.polyline(
        [(v.latency_ms, v.quality or 0.0) for v in line], stroke=FRONT_COLOUR, width=1.6, dash="5,3"
    )
    for v in sorted(scored, key=lambda v: v.name in on_front):  # front drawn on top
        quality = v.quality if v.quality is not None else 0.0
        is_front = v.name in on_front
        chart.dot(
            v.latency_ms,
            quality,
            radius=6.0 if is_front else 4.5,
            fill=FRONT_COLOUR if is_front else OTHER_COLOUR,
            hover=(
                f"{v.name}\nlatency {v.latency_ms:.4g} ms\n{quality_label} {quality:.6g}"
                f"\n{'on the Pareto front' if is_front else 'dominated'}"
            ),
        )
        chart.label(v.latency_ms, quality, v.name, fill="#222222" if is_front else "#666666")
    chart.legend("Pareto front", FRONT_COLOUR)
    chart.legend("dominated", OTHER_COLOUR)
    return chart.render()
