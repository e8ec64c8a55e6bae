"""The HTML report of ``inferperf analyse`` and ``inferperf compare``: one self-contained page.

Owns: :func:`render_html` - for each assessed Profile a summary, what was counted and what was
not (with the reasons), the metrics, latency and peak memory, the ``region()`` stages (ms
per call, share of the call, against the baseline: :func:`stages_html`), the per-operator
table, the
roofline plot, the diagnosis with its evidence, energy and the flamegraphs; with several
Profiles, first the side-by-side comparison (metrics, operator types, Pareto front,
differential operator flamegraphs); :func:`render_run_html`, the same sections for a
``pytest --inferperf`` run, read from the workers' records (:func:`assessment_of_record`).

Safety: the page references nothing outside itself except the relative links to the
flamegraph files written next to it: CSS is inline, plots are inline SVG (no scripts) and
flamegraphs are embedded as ``data:`` images (their scripts do not run there). Every name
and every piece of text taken from a Profile goes through :func:`html.escape`, so a model
or node named ``<script>alert(1)</script>`` is shown, not run; a link that is not a plain
relative path (``javascript:``, ``http:``) is shown as text.

Must not: measure, judge, diagnose or compute metrics (all are read from the Assessment),
or read files (SVG texts are handed in).
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..core.metrics import METRICS
from ..diagnose.change import MATERIAL_SHARE
from . import text as shared

if TYPE_CHECKING:
    from ..cli.compare import SideBySide
    from ..core.profile import Profile
    from ..diagnose.assessment import Assessment

MAX_OPERATOR_ROWS = 300
_SCHEME = re.compile(r"^\s*[A-Za-z][A-Za-z0-9+.-]*:")
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>\s*")

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,Arial,sans-serif;margin:0;
 color:#1d2430;background:#f6f7f9;line-height:1.45}
main{max-width:1180px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:1.6em;margin:.6em 0 .2em}h2{font-size:1.25em;margin:1.6em 0 .4em;
 border-bottom:1px solid #d5d9e0;padding-bottom:.2em}h3{font-size:1.05em;margin:1.2em 0 .3em}
section.profile{background:#fff;border:1px solid #dde1e7;border-radius:8px;
 padding:4px 18px 16px;margin:18px 0}
table{border-collapse:collapse;margin:.4em 0;font-size:.9em}
th,td{border:1px solid #dde1e7;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#eef1f5}td.num{text-align:right;font-variant-numeric:tabular-nums}
.bad{color:#b3261e;font-weight:600}.good{color:#1b6e2d}.muted{color:#667085}
.kv td:first-child{font-weight:600;white-space:nowrap}
.card{display:inline-block;border:1px solid #dde1e7;border-radius:6px;padding:6px 12px;
 margin:4px 8px 4px 0;background:#fbfcfd}.card b{display:block;font-size:1.25em}
figure{margin:.6em 0}figure svg,figure img{max-width:100%;height:auto;border:1px solid #dde1e7}
code{background:#eef1f5;padding:0 3px;border-radius:3px}
details summary{cursor:pointer;color:#2d5b9a}
"""


def esc(value: Any) -> str:
    """Any value as HTML text (quotes too, so it is safe in attributes)."""
    return html.escape(str(value), quote=True)


def _link(path: str, label: str | None = None) -> str:
    """A link to a relative path; anything with a scheme is shown as text, not linked."""
    if _SCHEME.match(path) or path.startswith("//"):
        return esc(label or path)
    return f'<a href="{esc(path)}">{esc(label or path)}</a>'


def _inline_svg(svg: str) -> str:
    """A trusted SVG (our own plots: text escaped, no scripts) inlined without its XML header."""
    return _XML_DECL.sub("", svg, count=1)


def _svg_image(svg: str, alt: str) -> str:
    """An SVG as a ``data:`` image: shown, its scripts never run."""
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    return f'<img alt="{esc(alt)}" src="data:image/svg+xml;base64,{data}">'


def _table(
    headers: Sequence[str], rows: Sequence[Sequence[Any]], numeric: Sequence[int] = ()
) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            cls = ' class="num"' if i in numeric else ""
            cells.append(f"<td{cls}>{cell if isinstance(cell, _Raw) else esc(cell)}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


class _Raw(str):
    """Markup this module built itself (already escaped)."""


# -- one profile -------------------------------------------------------------------------
def _summary(profile: Profile, metrics: Mapping[str, float], diagnosis: Any) -> str:
    lat = profile.latency
    cards = [
        ("p50 latency", f"{shared.fmt(lat.p50_ms)} ms"),
        ("p99 latency", f"{shared.fmt(lat.p99_ms)} ms"),
        ("calls/s", shared.fmt(lat.calls_per_second)),
    ]
    if "cpu_ms_per_call" in metrics:
        cards.append(("CPU per call", f"{shared.fmt(metrics['cpu_ms_per_call'])} ms"))
    if profile.memory.peak_rss_bytes is not None:
        cards.append(("peak memory", f"{profile.memory.peak_rss_bytes / 2**20:,.0f} MiB"))
    primary = getattr(diagnosis, "primary", None)
    cards.append(
        (
            "diagnosis",
            f"{primary.title} ({primary.confidence:.0%})"
            if primary
            else "no threshold of concern crossed",
        )
    )
    out = ["".join(f'<div class="card">{esc(k)}<b>{esc(v)}</b></div>' for k, v in cards)]
    out.append(
        '<table class="kv"><tbody>'
        + "".join(f"<tr><td>{esc(k)}</td><td>{esc(v)}</td></tr>" for k, v in shared.facts(profile))
        + "</tbody></table>"
    )
    return "\n".join(out)


def _counting(profile: Profile) -> str:
    from ..pmu.events import reason_cause  # one row per cause, not per event

    by_reason: dict[str, list[str]] = {}
    for event, reason in profile.unavailable.items():
        by_reason.setdefault(reason_cause(reason), []).append(event)
    rows: list[tuple[Any, ...]] = [
        (
            _Raw('<span class="good">counted</span>'),
            ", ".join(shared.counted(profile)) or "nothing",
            "",
        )
    ]
    rows += [
        (_Raw('<span class="bad">not counted</span>'), ", ".join(events), reason)
        for reason, events in by_reason.items()
    ]
    text = (
        f"<p>{len(shared.counted(profile))} of {len(profile.events)} events counted "
        f"(backend {esc(profile.backend)}); a metric whose inputs were not counted is "
        "absent, never 0. Run <code>inferperf doctor</code> for the fixes.</p>"
    )
    return text + _table(("", "events", "why"), rows)


def _metrics(metrics: Mapping[str, float]) -> str:
    rows = [
        (n, shared.fmt(v), METRICS[n].unit, METRICS[n].better, METRICS[n].description)
        for n, v in metrics.items()
    ]
    return _table(("metric", "value", "unit", "better", "what"), rows, numeric=(1,))


def _latency(profile: Profile) -> str:
    lat = profile.latency
    row = [
        *(shared.fmt(getattr(lat, f)) for _, f in shared.LATENCY_FIELDS),
        shared.fmt(lat.stddev_ms),
        shared.fmt(lat.calls_per_second),
        lat.calls,
    ]
    headers = [*(f"{h} (ms)" for h, _ in shared.LATENCY_FIELDS), "stddev (ms)", "calls/s", "calls"]
    return (
        _table(headers, [row], numeric=range(len(headers)))
        + f"<p>Peak memory: {esc(shared.memory_text(profile))}</p>"
    )


def stages_html(rows: Sequence[Mapping[str, Any]]) -> str:
    """The ``region()`` stages, from :meth:`diagnose.assessment.StageRow.to_dict` rows (a record's
    ``stages``): ms per call, share of the call, and against the baseline where there is one."""
    if not rows:
        return (
            '<p class="muted">No stages: the workload entered no <code>region()</code> '
            "while measured.</p>"
        )
    compared = any(r.get("baseline_ms_per_call") is not None for r in rows)
    budgets = any(r.get("budget_ms_max") is not None for r in rows)
    out = []
    for r in rows:
        share = r.get("share")
        row: list[Any] = [
            r.get("name") if r.get("region", True) else "outside the region() stages",
            r.get("entered"),
            shared.fmt(r.get("ms_per_call")),
            "" if share is None else f"{share:.1%}",
        ]
        if compared:
            raw = r.get("delta")  # "inf" / "-inf": a move from a zero baseline
            delta = None if raw is None else float(raw)
            verdict = r.get("verdict")
            cls = {"regressed": "bad", "improved": "good"}.get(str(verdict), "muted")
            tolerance = r.get("tolerance")
            row += [
                shared.fmt(r.get("baseline_ms_per_call")),
                shared.pct(delta),
                "" if tolerance is None else f"{tolerance:.0%}",
                _Raw(
                    f'<span class="{cls}">{esc(verdict or "not judged (the whole call is)")}</span>'
                )
                if r.get("baseline_ms_per_call") is not None
                else "",
            ]
        if budgets:
            limit = r.get("budget_ms_max")
            row.append("" if limit is None else f"<= {limit:g}")
        out.append(row)
    headers = ["stage", "entered", "ms per call", "share of the call"]
    if compared:
        headers += ["baseline (ms per call)", "change", "tolerance", "verdict"]
    if budgets:
        headers.append("budget (ms per call)")
    numeric = (1, 2, 3, *((4, 5, 6) if compared else ()))
    return (
        "<p>Wall time per measured call of the workload, in each <code>region()</code> and "
        "outside them; a stage is judged against its baseline as a metric is.</p>"
        + _table(headers, out, numeric=numeric)
    )


def _operators(profile: Profile) -> str:
    ops = sorted(profile.operators, key=lambda o: -float(o.get("total_us") or 0.0))
    if not ops:
        why = shared.notes(profile).get("operators", "not measured")
        return f'<p class="muted">No operator table: {esc(why)}</p>'
    rows: list[tuple[Any, ...]] = [
        (
            o.get("node"),
            o.get("op_type"),
            o.get("calls"),
            shared.fmt(o.get("mean_us")),
            shared.fmt(o.get("total_us")),
            f"{float(o.get('share') or 0):.1%}",
            shared.shapes(o),
            " ".join(str(s) for s in o.get("output_shapes") or []),
        )
        for o in ops[:MAX_OPERATOR_ROWS]
    ]
    more = (
        f"<p class='muted'>{len(ops) - MAX_OPERATOR_ROWS} more nodes in report.json.</p>"
        if len(ops) > MAX_OPERATOR_ROWS
        else ""
    )
    headers: tuple[str, ...] = (
        "node",
        "op type",
        "runs",
        "µs/run",
        "total µs",
        "share",
        "input shapes",
        "output shapes",
    )
    numeric: tuple[int, ...] = (2, 3, 4, 5)
    if len({o.get("model") for o in ops}) > 1:  # several sessions: say whose each node is
        rows = [(o.get("model"), *row) for o, row in zip(ops, rows, strict=False)]
        headers, numeric = ("model", *headers), (3, 4, 5, 6)
    table = _table(headers, rows, numeric=numeric)
    from ..onnxrt.precision import precision_lines

    precision = "".join(
        f"<p>{'Precision: ' if i == 0 else ''}{esc(t)}</p>"
        for i, t in enumerate(precision_lines(ops))
    )
    return (
        f"<p>ONNX Runtime's profiler, a separate pass: {len(ops)} nodes, slowest first.</p>"
        f"{precision}<details open><summary>operator table</summary>{table}</details>{more}"
    )


def _roofline(profile: Profile) -> str:
    roof = profile.roofline
    if not roof or "ceilings" not in roof:
        return f'<p class="muted">No roofline: {esc(shared.roofline_text(profile))}</p>'
    from ..onnxrt.roofline import render_roofline_svg, roofline_from_dict

    out = [f"<p>{esc(shared.roofline_text(profile))}</p>"]
    try:
        ceilings, points = roofline_from_dict(roof)
        svg = render_roofline_svg(
            ceilings,
            points,
            title=f"{profile.name}: roofline",
            uncosted=(roof.get("summary") or {}).get("uncosted") or (),
        )
        out.append(f"<figure>{_inline_svg(svg)}</figure>")
    except (KeyError, TypeError, ValueError) as exc:
        out.append(f'<p class="muted">The roofline data cannot be drawn: {esc(exc)}</p>')
    unmatched = (roof.get("summary") or {}).get("unmatched_operators") or []
    if unmatched:
        out.append(
            f"<p class='muted'>Not placed (no cost found): "
            f"{esc(', '.join(map(str, unmatched)))}</p>"
        )
    return "".join(out)


def _diagnosis(diagnosis: Any) -> str:
    if diagnosis is None:
        return '<p class="muted">No diagnosis.</p>'
    out = []
    findings = [f for f in (diagnosis.primary, *diagnosis.secondary) if f is not None]
    if not findings:
        out.append("<p>No threshold of concern crossed.</p>")
    for i, finding in enumerate(findings):
        tag = "Primary" if i == 0 else "Also"
        out.append(
            f"<h3>{tag}: {esc(finding.title)} <span class='muted'>["
            f"{esc(finding.category)}], confidence {finding.confidence:.2f}</span></h3>"
        )
        if finding.explanation:
            out.append(f"<p>{esc(finding.explanation)}</p>")
        if finding.cost is not None:
            out.append(f"<p>Estimated cost: {esc(finding.cost.text)}</p>")
        if finding.evidence:
            out.append(
                _table(("evidence", "source"), [(ev.line(), ev.source) for ev in finding.evidence])
            )
        if finding.recommendations:
            out.append(
                "<ol>" + "".join(f"<li>{esc(r)}</li>" for r in finding.recommendations) + "</ol>"
            )
    if diagnosis.small:
        out.append(
            f"<h3>Present but small <span class='muted'>(their events can cost less than "
            f"{MATERIAL_SHARE:.0%} of the call)</span></h3>"
        )
        out.append(
            _table(
                ("finding", "estimated cost", "evidence"),
                [
                    (
                        f"{f.title} [{f.category}]",
                        f.cost.text if f.cost is not None else "",
                        "; ".join(ev.line() for ev in f.evidence),
                    )
                    for f in diagnosis.small
                ],
            )
        )
    if diagnosis.change is not None:
        out.append(change_html(diagnosis.change, "Change against the reference"))
    if diagnosis.not_judged:
        out.append(_table(("not judged", "why"), list(diagnosis.not_judged.items())))
    return "\n".join(out)


def change_html(change: Any, heading: str) -> str:
    """A change against a baseline: its summary, then the stage and op-type tables."""
    from ..diagnose.change import pct

    out = [f"<p><b>{esc(heading)}</b>: {esc(change.summary)}</p>"]
    for title, parts, unit in (
        ("stage", change.stages, "ms per call"),
        ("op type", change.op_types, "ms per run"),
    ):
        if not parts:
            continue
        nodes = title == "op type"
        rows = [
            (
                p.label,
                shared.fmt(p.baseline_ms),
                shared.fmt(p.current_ms),
                _Raw(
                    f'<span class="{"bad" if p.credible and p.delta_ms > 0 else "muted"}">'
                    f"{esc(pct(p.relative))}</span>"
                ),
                *((f"{p.nodes[0]} -> {p.nodes[1]}",) if nodes else ()),
                "yes" if p.credible else "no (within noise)",
                "" if p.share is None else f"{p.share:.0%}",
            )
            for p in parts
        ]
        headers = (
            title,
            f"baseline ({unit})",
            f"now ({unit})",
            "change",
            *(("nodes",) if nodes else ()),
            "credible",
            "share of slowdown",
        )
        out.append(_table(headers, rows, numeric=(1, 2, 3, len(headers) - 1)))
    return "\n".join(out)


def _flamegraphs(profile: Profile, svgs: Mapping[str, str]) -> str:
    out = []
    for kind, path in profile.artifacts.items():
        out.append(f"<h3>{esc(kind)}: {_link(path)}</h3>")
        if path in svgs:
            out.append(f"<figure>{_svg_image(svgs[path], f'{profile.name} {kind}')}</figure>")
    missing = {k: v for k, v in shared.notes(profile).items() if k.startswith("flamegraph")}
    out.extend(f"<p class='muted'>{esc(k)}: {esc(v)}</p>" for k, v in missing.items())
    return "\n".join(out) or "<p class='muted'>No flamegraphs.</p>"


def _profile_section(
    assessment: Assessment,
    svgs: Mapping[str, str],
    heading: str,
    *,
    show_change: bool = True,
    stages: Sequence[Mapping[str, Any]] | None = None,
) -> str:
    """One profile's section, read from its Assessment (never diagnosed again here).

    ``stages``: the stage rows as a worker's record carries them (default: the
    Assessment's own).
    """
    profile, metrics, diagnosis = assessment.profile, assessment.metrics, assessment.diagnosis
    if stages is None:
        stages = [row.to_dict() for row in assessment.stages]
    if diagnosis is not None and not show_change:  # the comparison above shows the change
        diagnosis = replace(diagnosis, change=None)
    parts = [
        f'<section class="profile"><h2>{esc(heading)}</h2>',
        _summary(profile, metrics, diagnosis),
        "<h3>What was counted, and what was not</h3>",
        _counting(profile),
        "<h3>Metrics</h3>",
        _metrics({n: v for n, v in metrics.items() if n in METRICS}),
        "<h3>Latency and memory</h3>",
        _latency(profile),
        "<h3>Stages</h3>",
        stages_html(stages),
        "<h3>Operators</h3>",
        _operators(profile),
        "<h3>Roofline</h3>",
        _roofline(profile),
        "<h3>Diagnosis</h3>",
        _diagnosis(diagnosis),
        "<h3>Energy</h3>",
        f"<p>{esc(shared.energy_text(profile))}</p>",
        "<h3>Flamegraphs</h3>",
        _flamegraphs(profile, svgs),
        "</section>",
    ]
    return "\n".join(parts)


# -- comparison --------------------------------------------------------------------------
def _delta_cell(value: float | None, delta: float | None, status: str = "") -> _Raw:
    text = esc(shared.fmt(value))
    if value is None or delta is None:
        return _Raw(text)
    cls = {"regressed": "bad", "worse": "bad", "improved": "good", "better": "good"}.get(
        status, "muted"
    )
    tag = f", {esc(status)}" if status and status != "ok" else ""
    return _Raw(f'{text} <span class="{cls}">({esc(shared.pct(delta))}{tag})</span>')


def _comparison(side: SideBySide, svgs: Mapping[str, str]) -> str:
    labels = side.labels
    out = [
        "<h2>Side by side</h2>",
        f"<p>Deltas against <b>{esc(labels[0])}</b>; a status is the statistical judgement "
        "(Mann-Whitney U over repeats) where both were measured alike.</p>",
        _table(
            ("label", "source", "cached"),
            [(e.label, e.source, e.cached.stored if e.cached else "") for e in side.entries],
        ),
    ]
    rows: list[list[Any]] = [
        [
            r.metric,
            r.unit,
            *(_delta_cell(v, d, s) for v, d, s in zip(r.values, r.deltas, r.statuses, strict=True)),
        ]
        for r in side.metrics
    ]
    if side.quality:
        rows.append(["quality", "", *(shared.fmt(side.quality.get(x)) for x in labels)])
        rows.append(
            [
                "pareto front",
                "",
                *(_Raw('<b class="good">yes</b>') if x in side.front else "no" for x in labels),
            ]
        )
    out.append(_table(("metric", "unit", *labels), rows, numeric=range(2, 2 + len(labels))))
    if side.op_types:
        out.append("<h3>Operator types (µs per inference, [nodes])</h3>")
        out.append(
            _table(
                ("op type", *labels),
                [
                    [
                        r.op_type,
                        *(
                            _Raw(f"{_delta_cell(u, d)} [{n}] {esc(p)}") if u is not None else "-"
                            for u, d, n, p in zip(
                                r.us_per_call,
                                r.deltas,
                                r.nodes,
                                r.precision or ("",) * len(r.nodes),
                                strict=True,
                            )
                        ),
                    ]
                    for r in side.op_types
                ],
                numeric=range(1, 1 + len(labels)),
            )
        )
    for note in side.notes:
        out.append(f"<p class='muted'>{esc(note)}</p>")
    if side.regressions:
        out.append(
            "<h3>Regressions</h3><ul>"
            + "".join(
                f"<li class='bad'>{esc(label)}: {esc(c.metric)} {esc(shared.fmt(c.baseline))} → "
                f"{esc(shared.fmt(c.current))} ({esc(shared.pct(c.delta))}; {esc(c.detail)})</li>"
                for label, c in side.regressions
            )
            + "</ul>"
        )
    for entry, verdict in zip(side.entries[1:], side.verdicts[1:], strict=True):
        if verdict is not None and verdict.diagnosis is not None and verdict.diagnosis.change:
            out.append(change_html(verdict.diagnosis.change, f"{entry.label} vs {labels[0]}"))
    for name, path in side.artifacts.items():
        out.append(f"<h3>{esc(name)}: {_link(path)}</h3>")
        if path in svgs:
            figure = (
                _inline_svg(svgs[path])
                if path.endswith("pareto.svg")
                else _svg_image(svgs[path], name)
            )
            out.append(f"<figure>{figure}</figure>")
    return "\n".join(out)


# -- the page ------------------------------------------------------------------------------
def _page(title: str, body: Sequence[str]) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head>\n"
        f"<body><main>\n{''.join(part + chr(10) for part in body)}</main></body></html>\n"
    )


def render_html(
    assessments_or_one: Assessment | Sequence[Assessment],
    *,
    title: str,
    comparison: SideBySide | None = None,
    svgs: Mapping[str, str] | None = None,
) -> str:
    """One self-contained HTML page for one assessed Profile or several (then compared).

    ``comparison`` is :func:`cli.compare.side_by_side`'s result for the same Profiles;
    ``svgs`` maps an artifact's relative path to its SVG text, to embed it.
    """
    assessments = (
        list(assessments_or_one)
        if isinstance(assessments_or_one, Sequence)
        else [assessments_or_one]
    )
    svgs = svgs or {}
    body = [f"<h1>{esc(title)}</h1>"]
    if comparison is not None:
        body.append(_comparison(comparison, svgs))
    elif len(assessments) > 1:
        body.append(_plain_comparison(assessments))
    labels = comparison.labels if comparison is not None else [a.key for a in assessments]
    for label, assessment in zip(labels, assessments, strict=True):
        body.append(_profile_section(assessment, svgs, label, show_change=comparison is None))
    return _page(title, body)


def _plain_comparison(assessments: Sequence[Assessment]) -> str:
    """Several Profiles without a prepared comparison: metric values side by side."""
    values = [a.metrics for a in assessments]
    names = [n for n in METRICS if any(n in v for v in values)]
    rows = [[n, METRICS[n].unit, *(shared.fmt(v.get(n)) for v in values)] for n in names]
    return "<h2>Side by side</h2>" + _table(
        ("metric", "unit", *(a.key for a in assessments)),
        rows,
        numeric=range(2, 2 + len(assessments)),
    )


# -- a whole pytest --inferperf run ------------------------------------------------------
def render_run_html(
    records: Sequence[Mapping[str, Any]], *, title: str, svgs: Mapping[str, str] | None = None
) -> str:
    """One self-contained page for a ``pytest --inferperf`` run: the table, then each test.

    ``records`` are the plain records the controller holds (their ``artifacts`` already
    relative to the page); each test gets the same section as ``inferperf analyse``'s
    report, after its failure text when it failed.
    """
    from .terminal import columns, summary_rows

    svgs = svgs or {}
    ordered = sorted(records, key=lambda r: r["key"])
    headers = ("test", *(t for _, t, _ in columns(ordered)), "vs baseline", "verdict", "diagnosis")
    failed = sum(1 for r in ordered if r["failed"] or r.get("outcome") == "failed")
    body = [
        f"<h1>{esc(title)}</h1>",
        f"<p>{len(ordered)} profiled, {failed} failed.</p>",
        _table(headers, summary_rows(ordered)),
    ]
    for record in ordered:
        if record.get("failure"):
            body.append(f"<pre class='bad'>{esc(record['failure'])}</pre>")
        body.append(
            _profile_section(
                assessment_of_record(record),
                svgs,
                record["key"],
                stages=record.get("stages") or [],
            )
        )
    return _page(title, body)


def assessment_of_record(record: Mapping[str, Any]) -> Assessment:
    """The Assessment a worker's record carries: its profile, metrics (hook metrics too)
    and diagnosis as judged there - read back, not judged again."""
    from ..core.profile import Profile as ProfileType
    from ..diagnose.assessment import Assessment
    from ..diagnose.classify import diagnosis_from_dict

    profile = ProfileType.from_dict(record["profile"]).with_(
        artifacts=dict(record.get("artifacts", {}))
    )
    detail = record.get("diagnosis_detail")
    return Assessment(
        key=str(record["key"]),
        profile=profile,
        metrics=dict(record.get("metrics") or {}),
        budgets=(),
        comparison=None,
        baseline_note=str(record.get("baseline_note") or ""),
        diagnosis=None if detail is None else diagnosis_from_dict(detail),
    )
