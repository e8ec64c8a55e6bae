"""Folded stacks -> one self-contained, interactive flamegraph SVG.

Owns: laying out a folded profile as a flamegraph (root at the bottom, a frame's
width proportional to its inclusive count, children in name order), colouring it
(a warm palette hashed from the frame name, so a function keeps its colour from
run to run; kernel, inlined, Python and unresolved-library frames in their own
hues; a white -> red / white -> blue scale for differential graphs), and the small
inline script that gives hover details, click-to-zoom, reset and search.

Safety: the document references nothing outside itself. Every piece of data (frame
names, title, subtitle, unit) is written only as escaped XML text or attribute
values; the script is a constant that reads names through ``getAttribute`` and
writes them back through ``textContent``, so a frame called ``<script>`` or
``]]>`` is just text.

Must not: read perf output or files (``fold``), or compute differences (``diff``).
"""

from __future__ import annotations

import gc
import html
import math
import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["render_svg"]

WIDTH = 1200
FRAME_HEIGHT = 16
FONT_SIZE = 12
CHAR_WIDTH = FONT_SIZE * 0.59  # average glyph width of Verdana at FONT_SIZE, as flamegraph.pl
PAD_X = 10
TOP = 72
BOTTOM = 34
MIN_WIDTH_PX = 0.1
_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _esc(text: object) -> str:
    """``text`` as XML character data or an attribute value (quotes included)."""
    return html.escape(_INVALID_XML.sub("\ufffd", str(text)), quote=True)


def _fit(name: str, width: float) -> str:
    chars = math.floor((width - 6) / CHAR_WIDTH)
    if chars < 3:
        return ""
    return name if len(name) <= chars else name[: chars - 2] + ".."


def _unit_fractions(name: str) -> tuple[float, float, float]:
    digest = zlib.crc32(name.encode("utf-8", "replace"))
    return ((digest & 0xFF) / 255, ((digest >> 8) & 0xFF) / 255, ((digest >> 16) & 0xFF) / 255)


def frame_colour(name: str) -> str:
    """A stable colour for a frame name: same name, same colour, in every graph."""
    v1, v2, v3 = _unit_fractions(name)
    if name.endswith("_[k]"):  # kernel: orange
        r, g, b = 220 + 35 * v1, 120 + 60 * v2, 30 * v3
    elif name.endswith("_[i]"):  # inlined: aqua
        r, g, b = 80 + 40 * v1, 190 + 50 * v2, 190 + 50 * v3
    elif name.startswith("py::"):  # Python (perf trampoline): green-yellow
        r, g, b = 150 + 60 * v1, 200 + 40 * v2, 40 + 40 * v3
    elif name.startswith("[") and name.endswith("]"):  # unresolved library: sand
        r, g, b = 200 + 30 * v1, 180 + 30 * v2, 130 + 30 * v3
    else:  # flamegraph.pl's "hot" palette
        r, g, b = 205 + 50 * v3, 230 * v1, 55 * v2
    return f"rgb({int(r)},{int(g)},{int(b)})"


def diff_colour(delta: float, scale: float) -> str:
    """White for no change, towards red for growth and blue for shrinkage."""
    if not scale or not delta:
        return "rgb(245,245,245)"
    k = round(210 * min(1.0, abs(delta) / scale))
    return f"rgb(255,{255 - k},{255 - k})" if delta > 0 else f"rgb({255 - k},{255 - k},255)"


class _Node:
    """A frame in the merged tree: inclusive count and children by name."""

    __slots__ = ("children", "count", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self.count = 0.0
        self.children: dict[str, _Node] = {}


def _tree(folded: Mapping[str, float]) -> _Node:
    # Building holds one object per frame path and frees none: the cyclic collector
    # would rescan them all again and again (4-5x the build time on large profiles).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _build(folded)
    finally:
        if collecting:
            gc.enable()


def _build(folded: Mapping[str, float]) -> _Node:
    root = _Node("all")
    for stack, count in folded.items():
        if not count or count <= 0:
            continue
        root.count += count
        node = root
        for frame in stack.split(";"):
            children = node.children
            child = children.get(frame)
            if child is None:
                child = children[frame] = _Node(frame)
            child.count += count
            node = child
    return root


@dataclass(frozen=True)
class _Box:
    name: str
    path: str
    count: float
    x: float
    width: float
    depth: int


def _layout(root: _Node, px_per_count: float) -> list[_Box]:
    boxes: list[_Box] = []
    pending: list[tuple[_Node, float, int, str]] = [(root, float(PAD_X), 0, "")]
    while pending:
        node, x, depth, path = pending.pop()
        width = node.count * px_per_count
        if width < MIN_WIDTH_PX:
            continue
        boxes.append(_Box(node.name, path, node.count, x, width, depth))
        child_x = x
        for name in sorted(node.children):
            child = node.children[name]
            child_path = name if depth == 0 else f"{path};{name}"
            pending.append((child, child_x, depth + 1, child_path))
            child_x += child.count * px_per_count
    boxes.sort(key=lambda b: (b.depth, b.x))
    return boxes


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.6g}"


def render_svg(
    folded: Mapping[str, int | float],
    *,
    title: str,
    subtitle: str = "",
    unit: str = "samples",
    diff: Mapping[str, float] | None = None,
    change: Mapping[str, tuple[float, float]] | None = None,
) -> str:
    """A standalone interactive flamegraph of ``folded`` as SVG text.

    With ``change`` (:func:`.diff.diff_per_call` output: (before, after) per frame path,
    in ``unit``, e.g. µs per call) frames are coloured by their absolute change: red
    slower, blue faster, white unchanged; each tooltip gives before -> after, the
    change, the ratio and the percentage. With ``diff`` (:func:`.diff.diff_stacks`,
    share-based) frames are coloured by the change in their share. Widths are always
    the current profile's counts.
    """
    root = _tree(folded)
    total = root.count
    usable = WIDTH - 2 * PAD_X
    boxes = _layout(root, usable / total) if total else []
    depth = max((b.depth for b in boxes), default=0)
    height = TOP + (depth + 1) * FRAME_HEIGHT + BOTTOM
    diff_scale = 0.0
    if change is not None:
        diff = None
        diff_scale = max(
            (abs(change[b.path][1] - change[b.path][0]) for b in boxes if b.path in change),
            default=0.0,
        )
    elif diff is not None:
        diff_scale = max((abs(diff.get(b.path, 0.0)) for b in boxes if b.path), default=0.0)

    out: list[str] = [
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n',
        f'<svg version="1.1" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
        f'height="{height}" viewBox="0 0 {WIDTH} {height}" data-width="{WIDTH}" '
        f'data-pad="{PAD_X}" data-total="{_number(total)}" data-char="{CHAR_WIDTH:.3f}" '
        f'data-unit="{_esc(unit)}">\n',
        f"<title>{_esc(title)}</title>\n",
        f"<style>{_STYLE}</style>\n",
        f'<rect class="background" x="0" y="0" width="{WIDTH}" height="{height}"/>\n',
        f'<text class="title" x="{WIDTH / 2:.0f}" y="24">{_esc(title)}</text>\n',
    ]
    if subtitle:
        out.append(f'<text class="subtitle" x="{WIDTH / 2:.0f}" y="44">{_esc(subtitle)}</text>\n')
    if change is not None:
        out.append(
            f'<text class="legend" x="{WIDTH / 2:.0f}" y="60">differential in {_esc(unit)}: '
            "red slower, blue faster than the baseline (absolute change, nothing rescaled); "
            "width is this run</text>\n"
        )
    elif diff is not None:
        out.append(
            f'<text class="legend" x="{WIDTH / 2:.0f}" y="60">differential: red grew, blue '
            "shrank against the baseline (baseline scaled to this total); width is this run"
            "</text>\n"
        )
    out.append('<text id="unzoom" class="btn hide" x="10" y="24">Reset zoom</text>\n')
    out.append(f'<text id="search" class="btn" x="{WIDTH - 10}" y="24">Search</text>\n')
    out.append(
        f'<text id="unsearch" class="btn hide" x="{WIDTH - 10}" y="44">Reset search</text>\n'
    )
    if not boxes:
        out.append(f'<text class="subtitle" x="{WIDTH / 2:.0f}" y="{TOP + 12}">no samples</text>\n')
    out.append('<g id="frames">\n')
    out.extend(
        _frame(box, height, total, unit, change=change, diff=diff, diff_scale=diff_scale)
        for box in boxes
    )
    out.append("</g>\n")
    out.append(f'<text id="details" x="10" y="{height - 12}"> </text>\n')
    out.append(f'<text id="matched" x="{WIDTH - 10}" y="{height - 12}"> </text>\n')
    out.append(f"<script><![CDATA[{_SCRIPT}]]></script>\n")
    out.append("</svg>\n")
    return "".join(out)


def _frame(
    box: _Box,
    height: int,
    total: float,
    unit: str,
    *,
    change: Mapping[str, tuple[float, float]] | None,
    diff: Mapping[str, float] | None,
    diff_scale: float,
) -> str:
    """One frame's ``<g>``: its box, label, tooltip and the data the script zooms by;
    coloured by its change (``change``), its share's change (``diff``) or its name."""
    from .diff import change_text

    y = height - BOTTOM - (box.depth + 1) * FRAME_HEIGHT
    name = box.name if box.path else "all"
    attrs = (
        f'data-n="{_esc(name)}" data-c="{_number(box.count)}" data-x="{box.x:.2f}" '
        f'data-w="{box.width:.2f}" data-y="{y}"'
    )
    pct = 100.0 * box.count / total
    tip = f"{name} ({_number(box.count)} {unit}, {pct:.2f}%"
    if change is not None:
        before, after = change.get(box.path if box.path else "", (0.0, 0.0))
        if not box.path:  # the root: the whole profile
            before = sum(b for p, (b, _) in change.items() if ";" not in p)
            after = box.count
        attrs += f' data-b="{before:.6g}" data-a="{after:.6g}"'
        tip += f"; {change_text(before, after, unit)}"
        fill = diff_colour(after - before, diff_scale)
    elif diff is not None:
        delta = diff.get(box.path, 0.0) if box.path else 0.0
        attrs += f' data-d="{delta:.6g}"'
        tip += f", {100.0 * delta / total:+.2f} points vs baseline"
        fill = diff_colour(delta, diff_scale)
    else:
        fill = "rgb(230,230,225)" if not box.path else frame_colour(name)
    return (
        f'<g class="f" {attrs}><title>{_esc(tip + ")")}</title>'
        f'<rect x="{box.x:.2f}" y="{y}" width="{box.width:.2f}" '
        f'height="{FRAME_HEIGHT - 1}" rx="2" fill="{fill}"/>'
        f'<text x="{box.x + 3:.2f}" y="{y + FRAME_HEIGHT - 4}">{_esc(_fit(name, box.width))}'
        "</text></g>\n"
    )


_STYLE = """
.background { fill: #f8f8f4; }
text { font-family: Verdana, Geneva, sans-serif; font-size: 12px; fill: #000; }
.title { font-size: 17px; text-anchor: middle; }
.subtitle, .legend { fill: #555; text-anchor: middle; }
.btn { cursor: pointer; fill: #1a4fa0; text-decoration: underline; }
#search, #unsearch, #matched { text-anchor: end; }
.hide { display: none; }
#frames g { cursor: pointer; }
#frames text { pointer-events: none; }
#frames rect:hover { stroke: #000; stroke-width: 0.6; }
#frames g.parent rect { opacity: 0.5; }
"""

# A constant: no data is ever formatted into it (see the module docstring).
_SCRIPT = """
(function () {
  "use strict";
  var svg = document.documentElement;
  var frames = document.getElementById("frames");
  var details = document.getElementById("details");
  var matched = document.getElementById("matched");
  var unzoomBtn = document.getElementById("unzoom");
  var searchBtn = document.getElementById("search");
  var unsearchBtn = document.getElementById("unsearch");
  var W = parseFloat(svg.getAttribute("data-width"));
  var PAD = parseFloat(svg.getAttribute("data-pad"));
  var TOTAL = parseFloat(svg.getAttribute("data-total"));
  var CHAR = parseFloat(svg.getAttribute("data-char"));
  var UNIT = svg.getAttribute("data-unit");
  var all = frames.getElementsByTagName("g");
  var zoomed = null;
  var term = null;
  var EPS = 1e-6;

  function num(g, key) { return parseFloat(g.getAttribute(key)); }
  function fit(name, width) {
    var n = Math.floor((width - 6) / CHAR);
    if (n < 3) { return ""; }
    return name.length <= n ? name : name.substring(0, n - 2) + "..";
  }
  function describe(g) {
    var c = num(g, "data-c");
    var text = g.getAttribute("data-n") + " (" + c.toLocaleString("en-US") + " " + UNIT +
      ", " + (100 * c / TOTAL).toFixed(2) + "%";
    if (g.hasAttribute("data-b")) {
      var b = num(g, "data-b"), a = num(g, "data-a");
      if (b > 0 && a > 0) {
        var d = a - b, pc = 100 * (a / b - 1);
        text += "; " + b.toPrecision(3) + " -> " + a.toPrecision(3) + " " + UNIT + " (" +
          (d >= 0 ? "+" : "") + d.toPrecision(3) + ", " + (a / b).toFixed(2) + "x, " +
          (pc >= 0 ? "+" : "") + pc.toFixed(0) + "%)";
      } else if (a > 0) {
        text += "; new";
      } else if (b > 0) {
        text += "; gone";
      }
    } else if (g.hasAttribute("data-d")) {
      var p = 100 * num(g, "data-d") / TOTAL;
      text += ", " + (p >= 0 ? "+" : "") + p.toFixed(2) + " points vs baseline";
    }
    return text + ")";
  }
  function frameOf(node) {
    while (node && node !== frames) {
      if (node.classList && node.classList.contains("f")) { return node; }
      node = node.parentNode;
    }
    return null;
  }
  function place(g, x, w) {
    var r = g.getElementsByTagName("rect")[0];
    var t = g.getElementsByTagName("text")[0];
    r.setAttribute("x", x.toFixed(2));
    r.setAttribute("width", w.toFixed(2));
    t.setAttribute("x", (x + 3).toFixed(2));
    t.textContent = fit(g.getAttribute("data-n"), w);
  }
  function zoom(target) {
    var tx = num(target, "data-x"), tw = num(target, "data-w"), ty = num(target, "data-y");
    var scale = (W - 2 * PAD) / tw;
    for (var i = 0; i < all.length; i++) {
      var g = all[i];
      var x = num(g, "data-x"), w = num(g, "data-w"), y = num(g, "data-y");
      g.classList.remove("parent");
      g.style.display = "";
      if (y > ty && x <= tx + EPS && x + w >= tx + tw - EPS) {
        g.classList.add("parent");
        place(g, PAD, W - 2 * PAD);
      } else if (y <= ty && x >= tx - EPS && x + w <= tx + tw + EPS) {
        place(g, PAD + (x - tx) * scale, w * scale);
      } else {
        g.style.display = "none";
      }
    }
    zoomed = target;
    unzoomBtn.classList.remove("hide");
    if (term !== null) { search(term); }
  }
  function unzoom() {
    for (var i = 0; i < all.length; i++) {
      var g = all[i];
      g.classList.remove("parent");
      g.style.display = "";
      place(g, num(g, "data-x"), num(g, "data-w"));
    }
    zoomed = null;
    unzoomBtn.classList.add("hide");
    if (term !== null) { search(term); }
  }
  function matcher(text) {
    try {
      var re = new RegExp(text);
      return function (name) { return re.test(name); };
    } catch (err) {
      return function (name) { return name.indexOf(text) >= 0; };
    }
  }
  function search(text) {
    var test = matcher(text);
    var hits = [];
    for (var i = 0; i < all.length; i++) {
      var g = all[i];
      var r = g.getElementsByTagName("rect")[0];
      if (!r.hasAttribute("data-fill")) { r.setAttribute("data-fill", r.getAttribute("fill")); }
      if (test(g.getAttribute("data-n"))) {
        r.setAttribute("fill", "rgb(230,0,230)");
        if (g.style.display !== "none" && !g.classList.contains("parent")) {
          hits.push([num(g, "data-x"), num(g, "data-w"), num(g, "data-c")]);
        }
      } else {
        r.setAttribute("fill", r.getAttribute("data-fill"));
      }
    }
    hits.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });
    var sum = 0, end = -Infinity;
    for (var j = 0; j < hits.length; j++) {
      if (hits[j][0] >= end - EPS) { sum += hits[j][2]; end = hits[j][0] + hits[j][1]; }
    }
    var base = zoomed ? num(zoomed, "data-c") : TOTAL;
    term = text;
    matched.textContent = "matched " + (base ? (100 * sum / base).toFixed(2) : "0.00") + "%";
    unsearchBtn.classList.remove("hide");
  }
  function unsearch() {
    for (var i = 0; i < all.length; i++) {
      var r = all[i].getElementsByTagName("rect")[0];
      if (r.hasAttribute("data-fill")) { r.setAttribute("fill", r.getAttribute("data-fill")); }
    }
    term = null;
    matched.textContent = " ";
    unsearchBtn.classList.add("hide");
  }
  function ask() {
    var text = window.prompt("Search frames (regular expression or plain text):", term || "");
    if (text) { search(text); }
  }
  frames.addEventListener("mouseover", function (e) {
    var g = frameOf(e.target);
    if (g) { details.textContent = describe(g); }
  });
  frames.addEventListener("mouseout", function () { details.textContent = " "; });
  frames.addEventListener("click", function (e) {
    var g = frameOf(e.target);
    if (g) { zoom(g); }
  });
  unzoomBtn.addEventListener("click", unzoom);
  searchBtn.addEventListener("click", ask);
  unsearchBtn.addEventListener("click", unsearch);
  window.addEventListener("keydown", function (e) {
    if ((e.ctrlKey || e.metaKey) && (e.key === "f" || e.key === "F")) { e.preventDefault(); ask(); }
    if (e.key === "Escape") { unsearch(); unzoom(); }
  });
})();
"""
