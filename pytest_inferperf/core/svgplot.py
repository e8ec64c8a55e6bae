"""Small, self-contained SVG scatter charts: axes (linear or log), lines, dots, labels, legend.

Owns: the drawing primitives the roofline and Pareto plots share - fitting an axis to
data, tick marks (decades on log axes, 1-2-5 steps on linear ones), mapping data to
pixels, and writing the document.

Safety: the document references nothing outside itself (no scripts, links, images, fonts
or stylesheets). Every piece of text handed in - titles, labels, node names, hover text -
is written only through :func:`esc`, as XML character data or a quoted attribute value,
so a name like ``<script>alert(1)</script>`` stays text.

Must not: know about operators, models or variants; callers turn their data into numbers,
colours and strings.
"""

from __future__ import annotations

import html
import math
import re
import textwrap
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

__all__ = ["Axis", "Chart", "category_colours", "esc"]

_CLIP_TOKEN = "\x00clip\x00"  # replaced by the document's clip-path id in Chart.render
_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
# Tableau 10 then a second, darker set: distinguishable categories, stable by position.
PALETTE: tuple[str, ...] = (
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
    "#1f4e79",
    "#a0522d",
    "#7b1e3a",
    "#2e6f40",
    "#6a3d9a",
)
FONT = "Verdana, Arial, sans-serif"
NOTE_CHAR_WIDTH = 6.6  # average width in px of an 11 px Verdana character


def esc(text: object) -> str:
    """``text`` as XML character data or an attribute value (quotes escaped too)."""
    return html.escape(_INVALID_XML.sub("\ufffd", str(text)), quote=True)


def category_colours(names: Iterable[str]) -> dict[str, str]:
    """One colour per distinct name, assigned in sorted order (same set, same colours)."""
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(sorted(set(names)))}


def _number(value: float) -> str:
    """A tick label: ``0.01``, ``1``, ``250``, ``1e+04``."""
    if value == 0:
        return "0"
    if 1e-3 <= abs(value) < 1e4:
        return f"{value:.4g}"
    return f"{value:.0e}"


@dataclass(frozen=True)
class Axis:
    """One axis: its label, its data range and whether it is logarithmic (base 10)."""

    label: str
    lo: float
    hi: float
    log: bool = False

    def __post_init__(self) -> None:
        if not (math.isfinite(self.lo) and math.isfinite(self.hi)) or self.hi <= self.lo:
            raise ValueError(f"axis {self.label!r} needs finite lo < hi; got {self.lo}, {self.hi}")
        if self.log and self.lo <= 0:
            raise ValueError(f"log axis {self.label!r} needs lo > 0; got {self.lo}")

    @classmethod
    def fit(cls, label: str, values: Iterable[float], *, log: bool, zero: bool = False) -> Axis:
        """An axis covering ``values``: whole decades when ``log``, else 1-2-5 steps.

        ``zero`` makes a linear axis start at 0 (for quantities such as latency).
        Non-finite values, and values <= 0 on a log axis, are ignored.
        """
        finite = [v for v in values if math.isfinite(v) and (v > 0 or not log)]
        if log:
            if not finite:
                return cls(label, 1.0, 10.0, log=True)
            lo = 10 ** math.floor(math.log10(min(finite)))
            hi = 10 ** math.ceil(math.log10(max(finite)))
            return cls(label, lo, hi if hi > lo else lo * 10, log=True)
        if not finite:
            return cls(label, 0.0, 1.0)
        lo, hi = min(finite), max(finite)
        if zero:
            lo = min(lo, 0.0)
        if hi == lo:
            pad = abs(hi) * 0.1 or 1.0
            lo, hi = lo - pad, hi + pad
        margin = (hi - lo) * 0.06  # keep points (and their labels) off the frame
        lo, hi = (lo if zero and lo == 0 else lo - margin), hi + margin
        step = _nice_step((hi - lo) / 5)
        lo = math.floor(lo / step) * step
        hi = math.ceil(hi / step) * step
        if zero and min(finite) >= 0:
            lo = max(lo, 0.0)
        return cls(label, lo, hi)

    def fraction(self, value: float) -> float:
        """Where ``value`` lies between ``lo`` (0) and ``hi`` (1); may fall outside."""
        if self.log:
            value = max(value, self.lo * 1e-6)
            return (math.log10(value) - math.log10(self.lo)) / (
                math.log10(self.hi) - math.log10(self.lo)
            )
        return (value - self.lo) / (self.hi - self.lo)

    def ticks(self) -> list[tuple[float, str]]:
        """Tick values and labels: every decade on a log axis, 1-2-5 steps on a linear one."""
        if self.log:
            first = math.floor(math.log10(self.lo) + 1e-9)
            last = math.ceil(math.log10(self.hi) - 1e-9)
            values = [10.0**e for e in range(first, last + 1)]
            return [(v, _number(v)) for v in values if self.lo * 0.999 <= v <= self.hi * 1.001]
        step = _nice_step((self.hi - self.lo) / 5)
        start = math.ceil(self.lo / step - 1e-9)
        ticks = []
        for i in range(start, start + 12):
            value = i * step
            if value > self.hi + step * 1e-6:
                break
            ticks.append((value, _number(round(value, 12))))
        return ticks


def _nice_step(raw: float) -> float:
    if raw <= 0 or not math.isfinite(raw):
        return 1.0
    magnitude = 10.0 ** math.floor(math.log10(raw))
    for multiple in (1, 2, 5, 10):
        if raw <= multiple * magnitude:
            return multiple * magnitude
    return 10 * magnitude


@dataclass
class Chart:
    """A scatter chart under construction; :meth:`render` returns the SVG document."""

    title: str
    x: Axis
    y: Axis
    subtitle: str = ""
    width: int = 900
    height: int = 560
    left: int = 80
    right: int = 200  # room for the legend
    top: int = 64
    bottom: int = 64
    notes: list[str] = field(default_factory=list)
    description: str = ""  # written as the document's <desc> (not drawn)
    _body: list[str] = field(default_factory=list)
    _legend: list[tuple[str, str]] = field(default_factory=list)

    # -- geometry ---------------------------------------------------------
    @property
    def plot_width(self) -> float:
        return self.width - self.left - self.right

    @property
    def plot_height(self) -> float:
        return self.height - self.top - self.bottom - 14 * len(self._note_lines())

    def _note_lines(self) -> list[str]:
        chars = max(20, int((self.width - self.left - 10) / NOTE_CHAR_WIDTH))
        lines: list[str] = []
        for note in self.notes:
            lines.extend(textwrap.wrap(note, chars) or [""])
        return lines

    def px(self, x: float, y: float) -> tuple[float, float]:
        """Data coordinates -> pixel coordinates (y grows downwards in SVG)."""
        return (
            self.left + self.x.fraction(x) * self.plot_width,
            self.top + (1 - self.y.fraction(y)) * self.plot_height,
        )

    # -- drawing ----------------------------------------------------------
    def polyline(
        self,
        points: Sequence[tuple[float, float]],
        *,
        stroke: str,
        width: float = 2.0,
        dash: str | None = None,
    ) -> None:
        """A line through data points, clipped to the plot area."""
        if len(points) < 2:
            return
        coords = " ".join(f"{px:.1f},{py:.1f}" for px, py in (self.px(x, y) for x, y in points))
        dashed = f' stroke-dasharray="{esc(dash)}"' if dash else ""
        self._body.append(
            f'<polyline points="{coords}" fill="none" stroke="{esc(stroke)}" '
            f'stroke-width="{width}"{dashed} clip-path="url(#{_CLIP_TOKEN})"/>'
        )

    def dot(
        self,
        x: float,
        y: float,
        *,
        radius: float,
        fill: str,
        hover: str,
        stroke: str = "#333333",
        stroke_width: float = 0.6,
        opacity: float = 0.8,
    ) -> None:
        """A circle at a data point with ``hover`` as its tooltip (an SVG ``<title>``)."""
        cx, cy = self.px(x, y)
        self._body.append(
            f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{radius:.1f}" fill="{esc(fill)}" '
            f'fill-opacity="{opacity}" stroke="{esc(stroke)}" stroke-width="{stroke_width}">'
            f"<title>{esc(hover)}</title></circle>"
        )

    def label(
        self,
        x: float,
        y: float,
        text: str,
        *,
        dx: float = 6,
        dy: float = -6,
        size: int = 11,
        anchor: str = "start",
        fill: str = "#222222",
        rotate: float = 0.0,
    ) -> None:
        """Text next to a data point (offset ``dx``/``dy`` pixels, turned ``rotate`` degrees)."""
        px, py = self.px(x, y)
        tx, ty = px + dx, py + dy
        turn = f' transform="rotate({rotate:.1f} {tx:.1f} {ty:.1f})"' if rotate else ""
        self._body.append(
            f'<text x="{tx:.1f}" y="{ty:.1f}" font-size="{size}" text-anchor="{esc(anchor)}" '
            f'fill="{esc(fill)}"{turn}>{esc(text)}</text>'
        )

    def angle(self, a: tuple[float, float], b: tuple[float, float]) -> float:
        """Screen angle in degrees of the segment from data point ``a`` to ``b``."""
        (ax, ay), (bx, by) = self.px(*a), self.px(*b)
        return math.degrees(math.atan2(by - ay, bx - ax))

    def legend(self, label: str, colour: str) -> None:
        """Add a legend entry (drawn to the right of the plot, in the order added)."""
        self._legend.append((label, colour))

    # -- output -----------------------------------------------------------
    def _axes(self) -> list[str]:
        out = []
        x0, y0 = self.left, self.top
        w, h = self.plot_width, self.plot_height
        out.append(
            f'<rect x="{x0}" y="{y0}" width="{w:.1f}" height="{h:.1f}" fill="#ffffff" '
            'stroke="#888888"/>'
        )
        for value, text in self.x.ticks():
            px = x0 + self.x.fraction(value) * w
            out.append(
                f'<line x1="{px:.1f}" y1="{y0}" x2="{px:.1f}" y2="{y0 + h:.1f}" stroke="#e4e4e4"/>'
            )
            out.append(
                f'<text x="{px:.1f}" y="{y0 + h + 16:.1f}" font-size="11" '
                f'text-anchor="middle">{esc(text)}</text>'
            )
        for value, text in self.y.ticks():
            py = y0 + (1 - self.y.fraction(value)) * h
            out.append(
                f'<line x1="{x0}" y1="{py:.1f}" x2="{x0 + w:.1f}" y2="{py:.1f}" stroke="#e4e4e4"/>'
            )
            out.append(
                f'<text x="{x0 - 6}" y="{py + 4:.1f}" font-size="11" '
                f'text-anchor="end">{esc(text)}</text>'
            )
        out.append(
            f'<text x="{x0 + w / 2:.1f}" y="{y0 + h + 36:.1f}" font-size="12" '
            f'text-anchor="middle">{esc(self.x.label)}</text>'
        )
        out.append(
            f'<text transform="translate(18,{y0 + h / 2:.1f}) rotate(-90)" font-size="12" '
            f'text-anchor="middle">{esc(self.y.label)}</text>'
        )
        return out

    def _legend_items(self) -> list[str]:
        out = []
        x = self.left + self.plot_width + 16
        for i, (text, colour) in enumerate(self._legend):
            y = self.top + 8 + i * 18
            out.append(
                f'<rect x="{x:.1f}" y="{y - 9}" width="11" height="11" fill="{esc(colour)}" '
                'stroke="#333333" stroke-width="0.5"/>'
            )
            out.append(f'<text x="{x + 16:.1f}" y="{y}" font-size="11">{esc(text)}</text>')
        return out

    def render(self) -> str:
        """The complete, standalone SVG document."""
        w, h = self.width, self.height
        head = [
            '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>',
            f'<svg version="1.1" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
            f'viewBox="0 0 {w} {h}" font-family="{esc(FONT)}">',
            f"<title>{esc(self.title)}</title>",
            f'<defs><clipPath id="{_CLIP_TOKEN}"><rect x="{self.left}" y="{self.top}" '
            f'width="{self.plot_width:.1f}" height="{self.plot_height:.1f}"/></clipPath></defs>',
            f'<rect x="0" y="0" width="{w}" height="{h}" fill="#fafafa"/>',
            f'<text x="{w / 2:.0f}" y="24" font-size="16" text-anchor="middle">'
            f"{esc(self.title)}</text>",
        ]
        if self.subtitle:
            head.append(
                f'<text x="{w / 2:.0f}" y="44" font-size="12" text-anchor="middle" '
                f'fill="#555555">{esc(self.subtitle)}</text>'
            )
        if self.description:
            head.insert(3, f"<desc>{esc(self.description)}</desc>")
        lines = self._note_lines()
        notes = [
            f'<text x="{self.left}" y="{h - 14 * (len(lines) - i) - 4}" font-size="11" '
            f'fill="#555555">{esc(line)}</text>'
            for i, line in enumerate(lines)
        ]
        parts = [*head, *self._axes(), *self._body, *self._legend_items(), *notes, "</svg>"]
        document = "\n".join(parts) + "\n"
        # An id unique to this content, so that several charts inlined in one HTML page do
        # not share a clip path; the token cannot occur in escaped text (esc drops NULs).
        clip_id = f"plot-area-{zlib.crc32(document.encode('utf-8')):08x}"
        return document.replace(_CLIP_TOKEN, clip_id)
