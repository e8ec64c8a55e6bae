"""The terminal report of ``inferperf analyse`` and ``inferperf compare``.

Owns: the plain-text rendering (tabulate tables) of one Profile - what was counted and
what was not (with the reasons), metrics, latency, peak memory, top operators, roofline,
energy, diagnosis - and of a side-by-side comparison; also the small formatting helpers
the HTML and Markdown reports share (:func:`not_counted`, :func:`facts`; ``fmt`` is
:func:`core.numbers.number`).

Must not: measure, judge, diagnose, compute metrics (one Profile's are read from its
Assessment), or write files. Pure functions of what they are given.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tabulate import tabulate

from ..core.metrics import METRICS
from ..core.numbers import number as fmt  # the one number formatter
from ..diagnose.change import part_lines

if TYPE_CHECKING:
    from ..cli.compare import SideBySide
    from ..core.profile import Profile
    from ..diagnose.assessment import Assessment

TOP_OPERATORS = 10
LATENCY_FIELDS = (
    ("mean", "mean_ms"),
    ("min", "min_ms"),
    ("max", "max_ms"),
    ("p50", "p50_ms"),
    ("p95", "p95_ms"),
    ("p99", "p99_ms"),
)


# -- shared helpers ----------------------------------------------------------------------
def pct(delta: float | None) -> str:
    if delta is None:
        return ""
    if math.isinf(delta):
        return "from 0"
    return f"{delta:+.1%}"


def counted(profile: Profile) -> list[str]:
    return [e.name for e in profile.events if e.available]


def not_counted(profile: Profile) -> dict[str, list[str]]:
    """Events not counted, grouped by reason (its cause, without per-event detail)."""
    from ..pmu.events import reason_group

    groups: dict[str, list[str]] = {}
    for event, reason in profile.unavailable.items():
        groups.setdefault(reason_group(reason).strip(), []).append(event)
    return groups


def analyse_facts(profile: Profile) -> Mapping[str, Any]:
    facts = profile.settings.get("analyse")
    return facts if isinstance(facts, Mapping) else {}


def notes(profile: Profile) -> dict[str, str]:
    """What the analysis did not make, and why (``{"roofline": "not available: ..."}``)."""
    found = analyse_facts(profile).get("notes")
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, Mapping) else {}


def facts(profile: Profile) -> list[tuple[str, str]]:
    """(label, text) lines saying what was measured, where and how."""
    out = [
        ("target", f"{analyse_facts(profile).get('target') or profile.name}"),
        ("machine", f"{profile.machine_class} (backend {profile.backend})"),
    ]
    dims = analyse_facts(profile).get("dims")
    if isinstance(dims, Mapping) and dims:
        out.append(("inputs", ", ".join(f"{k}={v}" for k, v in dims.items())))
    session = profile.session
    if session:
        spin = "on" if session.get("allow_spinning") else "off"
        out.append(
            (
                "session",
                (
                    f"ONNX Runtime {session.get('onnxruntime', '?')}, "
                    f"{', '.join(session.get('providers') or []) or '?'}, "
                    f"{session.get('intra_op_threads')} intra-op / "
                    f"{session.get('inter_op_threads')} "
                    f"inter-op threads, {session.get('execution_mode')}, spinning {spin}, graph "
                    f"optimisation {session.get('graph_optimization_level')}"
                ),
            )
        )
    steady = profile.steady
    state = (
        f"steady (spread {steady.spread:.1%} <= {steady.threshold:.0%})"
        if steady.reached
        else "NOT steady (measured anyway)"
    )
    per = profile.settings.get("calls_per_repeat", "?")
    out.append(
        (
            "runner",
            f"{steady.warmup_calls} warm-up calls, {state}; {len(profile.repeats)} "
            f"repeats x {per} call{'' if per == 1 else 's'} = {profile.calls} "
            "calls",
        )
    )
    if profile.conditions:
        from ..measure.conditions import busy_reasons, summary

        busy = busy_reasons(profile.conditions)
        out.append(
            (
                "machine",
                f"{summary(profile.conditions)}"
                + (f"; BUSY: {'; '.join(busy)}" if busy else "; quiet"),
            )
        )
    model = profile.model
    if model and model.get("sha256"):
        inputs = ", ".join(
            f"{i.get('name')}{list(i.get('shape') or [])}" for i in model.get("inputs") or ()
        )
        out.append(
            (
                "model",
                f"sha256 {str(model['sha256'])[:12]}" + (f", inputs {inputs}" if inputs else ""),
            )
        )
    if profile.partial:
        out.append(("partial", str(profile.partial_reason)))
    if not profile.outputs_ok:
        out.append(("outputs", "the last result held NaN or infinity"))
    out.append(("created", profile.created or "?"))
    return out


def memory_text(profile: Profile) -> str:
    mem = profile.memory
    if mem.peak_rss_bytes is None:
        return f"not measured ({mem.note or mem.method})"
    scope = "region peak" if mem.method == "clear_refs" else "process-lifetime peak"
    text = f"{mem.peak_rss_bytes / 2**20:,.1f} MiB ({scope}, {mem.method})"
    if mem.growth_bytes is not None:
        text = (
            f"+{mem.growth_bytes / 2**20:,.1f} MiB above the region's starting RSS; "
            f"absolute peak {text}"
        )
    return text


def energy_text(profile: Profile) -> str:
    energy = profile.energy
    if not energy:
        return "not measured"
    joules = energy.get("joules_per_call")
    if joules is None:
        return str(energy.get("reason") or "not available")
    watts = energy.get("watts")
    text = f"{joules * 1e3:.4g} mJ per call from {energy.get('source')}"
    return text + (f" ({watts:.3g} W average)" if watts else "")


def roofline_text(profile: Profile) -> str:
    roof = profile.roofline
    if not roof or "ceilings" not in roof:
        return notes(profile).get("roofline", "not measured")
    c, s = roof["ceilings"], roof.get("summary") or {}
    achieved = s.get("achieved_gflops")
    share = s.get("memory_bound_time_share")
    return (
        f"peak {c['peak_gflops']:.3g} GFLOP/s, bandwidth {c['bandwidth_gbs']:.3g} GB/s "
        f"(ridge {c['peak_gflops'] / c['bandwidth_gbs']:.3g} FLOP/byte); "
        f"{s.get('operators', 0)} operators placed: {s.get('memory_bound', 0)} "
        f"memory-bound ({'-' if share is None else f'{share:.0%}'} of operator time), "
        f"{s.get('compute_bound', 0)} compute-bound; "
        f"{'-' if achieved is None else f'{achieved:.3g}'} GFLOP/s achieved overall"
        + _uncosted(s.get("uncosted"))
    )


def _uncosted(rows: Any) -> str:
    """``"; not costed: Einsum 80%"``: op types whose work the roofline cannot count."""
    if not rows:
        return ""
    from ..onnxrt.roofline import uncosted_text

    return f"; not costed: {uncosted_text(rows)}"


def top_operators(profile: Profile, limit: int = TOP_OPERATORS) -> list[Mapping[str, Any]]:
    return sorted(profile.operators, key=lambda o: -float(o.get("total_us") or 0.0))[:limit]


def shapes(op: Mapping[str, Any]) -> str:
    return " ".join(str(s) for s in op.get("input_shapes") or [])


# -- one profile -------------------------------------------------------------------------
def _table(rows: Sequence[Sequence[Any]], headers: Sequence[str]) -> str:
    return tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True)


def not_counted_lines(profile: Profile) -> list[str]:
    lines = [f"Counted: {', '.join(counted(profile)) or 'nothing (timing and memory only)'}"]
    groups = not_counted(profile)
    if groups:
        parts = [f"{', '.join(events)} ({reason})" for reason, events in groups.items()]
        lines.append("Not counted: " + "; ".join(parts) + ". Run `inferperf doctor` for the fixes.")
    return lines


def render_profile(assessment: Assessment) -> str:
    """The terminal report of one analysed Profile, read from its Assessment."""
    from .diagnosis import render

    profile, diagnosis = assessment.profile, assessment.diagnosis
    lines = [f"{label:<8} {text}" for label, text in facts(profile)]
    lines += ["", *not_counted_lines(profile), ""]
    metrics = {n: v for n, v in assessment.metrics.items() if n in METRICS}
    lines.append(
        _table(
            [(n, fmt(v), METRICS[n].unit, METRICS[n].description) for n, v in metrics.items()],
            ("metric", "value", "unit", "what"),
        )
    )
    lat = profile.latency
    lines.append("")
    lines.append(
        _table(
            [
                [
                    *(fmt(getattr(lat, f)) for _, f in LATENCY_FIELDS),
                    fmt(lat.calls_per_second),
                    str(lat.calls),
                ]
            ],
            [*(f"{h} ms" for h, _ in LATENCY_FIELDS), "calls/s", "calls"],
        )
    )
    lines += ["", f"peak memory  {memory_text(profile)}"]
    ops = top_operators(profile)
    if ops:
        runs = max(int(o.get("calls") or 0) for o in profile.operators)
        lines += [
            "",
            f"Top operators (ONNX Runtime profiler, a separate pass of {runs} runs; "
            f"{len(ops)} of {len(profile.operators)} nodes):",
        ]
        rows: list[tuple[Any, ...]] = [
            (
                o.get("node"),
                o.get("op_type"),
                o.get("calls"),
                fmt(o.get("mean_us")),
                f"{float(o.get('share') or 0):.1%}",
                shapes(o),
            )
            for o in ops
        ]
        headers: tuple[str, ...] = ("node", "op type", "runs", "µs/run", "share", "input shapes")
        if len({o.get("model") for o in profile.operators}) > 1:  # several sessions: whose
            rows = [(o.get("model"), *row) for o, row in zip(ops, rows, strict=True)]
            headers = ("model", *headers)
        lines.append(_table(rows, headers))
    from ..onnxrt.precision import precision_lines

    for i, text in enumerate(precision_lines(profile.operators)):
        lines.append(f"{'precision' if i == 0 else '':<12} {text}")
    lines += ["", f"roofline     {roofline_text(profile)}", f"energy       {energy_text(profile)}"]
    for kind, path in profile.artifacts.items():
        lines.append(f"flamegraph   {kind}: {path}")
    missing = {k: v for k, v in notes(profile).items() if k != "roofline"}
    for kind, why in missing.items():  # a stripped library is a caveat, not a missing view
        lines.append(f"{'note' if kind.endswith('stripped') else 'not made':<12} {kind}: {why}")
    if diagnosis is not None:
        lines += ["", render(diagnosis)]
    return "\n".join(lines)


# -- a comparison --------------------------------------------------------------------------
def _cell(value: float | None, delta: float | None, status: str = "") -> str:
    text = fmt(value)
    extra = ", ".join(x for x in (pct(delta), status if status not in ("", "ok") else "") if x)
    return f"{text} ({extra})" if extra and value is not None else text


def _precision(row: Any, index: int) -> str:
    """`` float (int8 weights)`` where the profiles differ or weights are stored narrow."""
    precision = tuple(getattr(row, "precision", ()) or ())
    if index >= len(precision) or not precision[index]:
        return ""
    if len(set(p for p in precision if p)) <= 1 and "(" not in precision[index]:
        return ""
    return f" {precision[index]}"


def render_comparison(side: SideBySide, out_dir: str = "") -> str:
    """The terminal report of ``compare``: every metric and operator type against the first.

    ``out_dir`` is put before the relative paths of the files the comparison wrote.
    """
    labels = side.labels
    first = side.entries[0]
    lines = [
        f"Compared with {labels[0]} ({first.profile.machine_class}, backend "
        f"{first.profile.backend}):"
    ]
    for (column, label, source), entry in zip(side.legend, side.entries, strict=True):
        cached = f" (cached result from {entry.cached.stored})" if entry.cached else ""
        lines.append(f"  {column} = {label}: {source}{cached}")
    lines.append("")
    columns = side.columns
    rows = [
        [
            r.metric,
            r.unit,
            *(_cell(v, d, s) for v, d, s in zip(r.values, r.deltas, r.statuses, strict=True)),
        ]
        for r in side.metrics
    ]
    if side.quality:
        rows.append(["quality", "", *(fmt(side.quality.get(label)) for label in labels)])
        rows.append(
            ["pareto front", "", *("yes" if label in side.front else "no" for label in labels)]
        )
    lines.append(_table(rows, ("metric", "unit", *columns)))
    if side.op_types:
        lines += ["", "Operator types (µs per inference, nodes, what it computes in):"]
        lines.append(
            _table(
                [
                    [
                        r.op_type,
                        *(
                            ("-" if u is None else f"{_cell(u, d)} [{n}]{_precision(r, i)}")
                            for i, (u, d, n) in enumerate(
                                zip(r.us_per_call, r.deltas, r.nodes, strict=True)
                            )
                        ),
                    ]
                    for r in side.op_types
                ],
                ("op type", *columns),
            )
        )
    lines.append("")
    for note in side.notes:
        lines.append(f"note: {note}")
    for entry, verdict in zip(side.entries[1:], side.verdicts[1:], strict=True):
        if verdict is not None and verdict.diagnosis is not None and verdict.diagnosis.change:
            lines.append(f"{entry.label} vs {labels[0]}: {verdict.diagnosis.change.summary}")
            lines.extend(f"  {line}" for line in part_lines(verdict.diagnosis.change))
    for label, change in side.regressions:
        lines.append(
            f"REGRESSED {label}: {change.metric} {fmt(change.baseline)} -> "
            f"{fmt(change.current)} ({pct(change.delta)}; {change.detail})"
        )
    if side.quality:
        better = "higher" if side.quality_higher_is_better else "lower"
        lines.append(
            f"Pareto front (latency vs quality, {better} quality is better): "
            f"{', '.join(side.front) or 'none'}"
        )
    for name, path in side.artifacts.items():
        lines.append(f"{name}: {os.path.join(out_dir, path)}")
    return "\n".join(lines).rstrip()
