"""Tests for pytest_inferperf.report.pareto: the latency/quality front and its SVG."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import pytest

from pytest_inferperf.report.pareto import Variant, pareto_front, render_pareto_svg, without_quality

SVG_NS = "{http://www.w3.org/2000/svg}"

VARIANTS = [
    Variant("fp32", latency_ms=10.0, quality=0.950),
    Variant("fp16", latency_ms=7.0, quality=0.949),
    Variant("int8", latency_ms=4.0, quality=0.930),
    Variant("int8-slow", latency_ms=6.0, quality=0.930),  # int8 is as good and faster
    Variant("pruned", latency_ms=4.0, quality=0.900),  # int8 ties on latency, is better
    Variant("distilled", latency_ms=3.0, quality=None),  # not scored
    Variant("big", latency_ms=20.0, quality=0.950),  # fp32 ties on quality, is faster
]


def test_front_on_hand_made_variants() -> None:
    assert pareto_front(VARIANTS) == ["int8", "fp16", "fp32"]
    assert without_quality(VARIANTS) == ["distilled"]


def test_exact_ties_are_both_on_the_front() -> None:
    variants = [
        Variant("a", 5.0, 0.9),
        Variant("b", 5.0, 0.9),  # identical to a: neither is strictly better
        Variant("c", 6.0, 0.9),  # dominated by both
        Variant("d", 1.0, 0.5),
    ]
    assert pareto_front(variants) == ["d", "a", "b"]


def test_lower_quality_is_better() -> None:
    # quality as an error rate: lower wins
    variants = [Variant("fp32", 10.0, 0.05), Variant("int8", 4.0, 0.07), Variant("bad", 5.0, 0.2)]
    assert pareto_front(variants, quality_higher_is_better=False) == ["int8", "fp32"]
    assert pareto_front(variants) == ["int8", "bad"]  # higher wins: bad beats fp32


def test_edge_cases() -> None:
    assert pareto_front([]) == []
    assert pareto_front([Variant("only", 1.0, None)]) == []
    assert pareto_front([Variant("one", 1.0, 0.0)]) == ["one"]
    with pytest.raises(ValueError, match="'x'"):
        pareto_front([Variant("x", 1.0, 0.5), Variant("x", 2.0, 0.6)])


@pytest.mark.parametrize(
    ("latency", "quality", "match"),
    [
        (-1.0, 0.5, "latency_ms"),
        (math.nan, 0.5, "latency_ms"),
        (1.0, math.inf, "quality"),
        (True, 0.5, "latency_ms"),
    ],
)
def test_variant_validates(latency: float, quality: float, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Variant("v", latency, quality)
    with pytest.raises(ValueError, match="name"):
        Variant("", 1.0, 0.5)


def test_svg_marks_the_front_and_escapes_names() -> None:
    evil = "<script>alert(1)</script>"
    variants = [*VARIANTS, Variant(evil, 15.0, 0.96), Variant('q"&<', 30.0, None)]
    front = pareto_front(variants)
    assert front == ["int8", "fp16", "fp32", evil]
    svg = render_pareto_svg(
        variants, front, title="MiniLM <variants>", quality_label="accuracy & <f1>"
    )
    root = ET.fromstring(svg.split("?>", 1)[1])
    assert not list(root.iter(f"{SVG_NS}script"))
    assert "<script" not in svg and "href" not in svg
    assert svg.count("url(") == svg.count("url(#")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in svg
    circles = list(root.iter(f"{SVG_NS}circle"))
    assert len(circles) == 7  # the scored variants
    hover = {c.find(f"{SVG_NS}title").text.split("\n")[0]: c for c in circles}
    assert hover["int8"].get("fill") == "#e15759"  # front
    assert hover["int8-slow"].get("fill") == "#9aa5b1"  # dominated
    assert "on the Pareto front" in hover[evil].find(f"{SVG_NS}title").text
    texts = [t.text or "" for t in root.iter(f"{SVG_NS}text")]
    assert any(t.startswith("no quality score") and "distilled" in t and 'q"&<' in t for t in texts)
    assert "accuracy & <f1>" in texts  # the axis label, escaped in the file
    assert "4 of 7 variants on the Pareto front" in texts
    line = next(root.iter(f"{SVG_NS}polyline"))
    assert len(line.get("points").split()) == 4  # the front, joined in latency order


def test_svg_without_scored_variants() -> None:
    variants = [Variant("a", 1.0, None)]
    svg = render_pareto_svg(variants, pareto_front(variants), title="t", quality_label="q")
    root = ET.fromstring(svg.split("?>", 1)[1])
    assert not list(root.iter(f"{SVG_NS}circle"))
    assert "0 of 0 variants" in svg
