"""The terminal summary of a ``pytest --inferperf`` run.

Owns: the one table of every profiled test (key metrics, change against
the baseline, verdict), what each slower test's change is blamed on, the
footer saying the PMU was emulated (when it was), the inconclusive tests
with their reasons, confirmed regressions and baselines recorded on a busy
machine, what this machine could not count (one line per reason, with the
events it covers), and the baseline write lines. Works on the plain records
that travel from xdist workers, so the
controller renders the same table for ``-n 0`` and ``-n 2``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from tabulate import tabulate

from ..numbers import number
from ..partial import partial_label
from ..pmu.cpu_features import features_text
from .headline import headline as headline_of
from .headline import names

#: (metric, title, scale): the table's columns, from the one headline list; the
#: optional ones only where some test has a value (a PMU, or the simulate backend).
COLUMNS = tuple((h.metric, h.title, h.scale) for h in headline_of("table") if not h.optional)
OPTIONAL_COLUMNS = tuple((h.metric, h.title, h.scale) for h in headline_of("table") if h.optional)


#: C0 and C1 controls (ESC, CR, NUL, BEL...), DEL, line/paragraph separators and the
#: bidirectional overrides a hostile name could use to rewrite or hide terminal output.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_LAYOUT = frozenset("\n\t")


def _visible(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: object, *, keep_newlines: bool = False) -> str:
    """``text`` safe for a terminal: every control character shown as a visible escape.

    ANSI escape sequences, carriage returns, NUL, bell and bidirectional overrides
    from model node names, test names or files are written as ``\\x1b``, ``\\r``-style
    escapes (``\\x0d``), so they can neither colour, move the cursor, overwrite a line
    nor split a table row. ``keep_newlines``: newlines and tabs of a multi-line message
    stay as they are.
    """
    text = str(text)
    if keep_newlines:
        return _CONTROL.sub(lambda m: m.group() if m.group() in _LAYOUT else _visible(m), text)
    return _CONTROL.sub(_visible, text)


#: Characters XML 1.0 cannot hold at all (junit files must stay well-formed), and the
#: controls a terminal would obey when a junit file is printed.
_NOT_XML = re.compile("[^\t\n\r\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_safe(text: object) -> str:
    """``text`` with every character XML 1.0 forbids (NUL, ESC, lone surrogates) escaped."""
    return _NOT_XML.sub(_visible, str(text))


def _cell(value: float | None, scale: float = 1.0) -> str:
    return number(None if value is None else value * scale, digits=3)


def columns(records: Sequence[Mapping[str, Any]]) -> tuple[tuple[str, str, float], ...]:
    """The table's metric columns for these records."""
    extra = tuple(
        c for c in OPTIONAL_COLUMNS if any(r["metrics"].get(c[0]) is not None for r in records)
    )
    return COLUMNS[:3] + extra + COLUMNS[3:]


def summary_rows(records: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    rows = []
    shown = columns(records)
    for record in sorted(records, key=lambda r: r["key"]):
        metrics = record["metrics"]
        status = record["status"] if record["outcome"] != "failed" or record["failed"] else "FAILED"
        partial = partial_label(record.get("profile"))
        if partial:
            status = f"{status}, {partial}"
        rows.append(
            [
                clean(record["key"]),
                *(_cell(metrics.get(k), scale) for k, _, scale in shown),
                clean(record["change"]),
                clean(status),
                clean(record.get("diagnosis", "")),
            ]
        )
    return rows


def headline(reason: str) -> str:
    """The cause part of a reason: 'no PMU exposed (ENOENT)'; the fix is in the full text.

    A reason with a per-event detail (``"... (armv8_pmuv3 lists no L1I_CACHE ...)"``)
    keeps its whole cause and loses the detail, so one cause is one line.
    """
    from ..pmu.events import reason_group

    return reason_group(reason)


def not_counted_lines(records: Sequence[dict]) -> list[str]:
    """What this machine could not count: one line per reason, with the events it covers."""
    by_reason: dict[str, list[str]] = {}
    for record in records:
        for event, reason in record["unavailable"].items():
            names = by_reason.setdefault(headline(reason), [])
            if event not in names:
                names.append(event)
    if not by_reason:
        return []
    lines = ["Not counted here: run `inferperf doctor` for the fixes."]
    lines.extend(f"  {reason}: {', '.join(events)}" for reason, events in by_reason.items())
    return lines


def not_counted_line(records: Sequence[dict]) -> str | None:
    """:func:`not_counted_lines` as one text, or None when everything was counted."""
    lines = not_counted_lines(records)
    return "\n".join(lines) if lines else None


def emulated_pmu(records: Sequence[dict]) -> str | None:
    """Why the PMU these records were counted on is emulated, or None."""
    for record in records:
        cpu = ((record.get("profile") or {}).get("machine") or {}).get("cpu") or {}
        if cpu.get("emulation"):
            return str(cpu["emulation"])
        for reason in record["unavailable"].values():
            if reason.startswith("emulated PMU ("):
                return reason[len("emulated PMU (") :].split("): ", 1)[0]
    return None


def emulated_line(records: Sequence[dict]) -> str | None:
    evidence = emulated_pmu(records)
    if evidence is None:
        return None
    return (
        f"PMU: emulated ({evidence}): instruction counts are exact; cycles, IPC, "
        "cycle-based and time budgets are not judged here"
    )


def change_lines(records: Sequence[dict]) -> list[str]:
    """What each slower test's change is blamed on (a stage, an op type, a metric, or
    nothing the counters here can show), with its stage and op-type moves."""
    lines = []
    for record in sorted(records, key=lambda r: r["key"]):
        change = record.get("change_explanation") or {}
        if not (change.get("slowdown") or {}).get("credible"):
            continue
        if record.get("verdict") not in ("regressed", "inconclusive"):
            continue  # a passed test's move was within its tolerance or not confirmed
        note = " (inconclusive)" if record.get("verdict") == "inconclusive" else ""
        lines.append(f"  {record['key']}{note}: {change['summary']}")
    if lines:
        lines.insert(0, "Slower than the baseline, and why:")
    return lines


def inconclusive_lines(records: Sequence[dict]) -> list[str]:
    """Each inconclusive test with the reason; confirmed regressions; busy baselines."""
    lines = []
    for record in sorted(records, key=lambda r: r["key"]):
        if record.get("verdict", "inconclusive") != "inconclusive":
            continue  # a failed test's other metrics are in its failure block, not here
        for reason in record.get("inconclusive") or ():
            lines.append(f"  {record['key']}: {reason}")
    if lines:
        lines.insert(
            0,
            "Inconclusive (a warning, not a failure; --inferperf-strict fails it): "
            "the change cannot be told apart from the machine's state:",
        )
    confirmed = [
        f"  {r['key']}: {(r.get('confirmation') or {}).get('text')}"
        for r in sorted(records, key=lambda r: r["key"])
        if (r.get("confirmation") or {}).get("held")
    ]
    if confirmed:
        lines += ["Regressions confirmed before failing:", *confirmed]
    busy = [
        f"  {r['key']}: {'; '.join(r['baseline_busy'])}"
        for r in sorted(records, key=lambda r: r["key"])
        if r.get("baseline_busy")
    ]
    if busy:
        lines += [
            "Baselines recorded on a busy machine (their timings read slow; re-record "
            "them on a quiet one):",
            *busy,
        ]
    return lines


def _child_wait(wall_s: float, child: dict) -> str:
    """How long the test waited for valgrind: a child of its own runs only the region;
    a shared child ran ahead, so the wait is what was left of its work."""
    if child.get("mode") != "shared":
        return f"{wall_s:.1f} s in valgrind"
    start = ", its start-up included" if child.get("includes_start_up") else ""
    return f"waited {wall_s:.1f} s for shared child {child.get('pid', '?')}{start}"


def simulated_lines(records: Sequence[dict]) -> list[str]:
    """What the simulate backend cost against native execution, and its warnings."""
    lines = []
    for record in sorted(records, key=lambda r: r["key"]):
        sim = (record.get("profile") or {}).get("settings", {}).get("simulation")
        if not sim:
            continue
        parts = []
        if sim.get("slowdown_vs_native"):
            parts.append(
                f"{sim['slowdown_vs_native']:.0f}x slower than native per call instrumented"
            )
        if sim.get("uninstrumented_slowdown_vs_native"):
            parts.append(f"{sim['uninstrumented_slowdown_vs_native']:.0f}x uninstrumented")
        if sim.get("child_wall_s") is not None:
            parts.append(_child_wait(sim["child_wall_s"], sim.get("child") or {}))
        lines.append(f"  {record['key']}: {', '.join(parts) or 'no timing recorded'}")
        how = []
        if sim.get("mode_text"):
            how.append(f"mode: {sim['mode_text']}")
        res = sim.get("resolution") or {}
        if isinstance(res.get("instructions_per_call"), int | float):
            how.append(
                f"resolves a {res['instructions_per_call']:.2%} change of instructions "
                f"per call (noise {res.get('noise') or 0:.3%}, {res.get('from', '?')})"
            )
        if how:
            lines.append(f"    {'; '.join(how)}")
        lacks = sim.get("emulated_cpu_lacks") or ()
        if lacks and not sim.get("result_digests"):  # else its warning says why
            lines.append(
                f"    emulated CPU: valgrind's lacks {features_text(lacks)} of this CPU; the "
                "counts are of the kernels chosen for it"
            )
        lines.extend(f"    warning: {w}" for w in sim.get("warnings") or ())
    if lines:
        cheap = any(
            ((r.get("profile") or {}).get("settings", {}).get("simulation") or {}).get("mode")
            == "instructions"
            for r in records
        )
        lines.insert(
            0,
            "Simulated under valgrind's callgrind (instruction counts, cache and "
            "branch counts where simulated; no cycles):"
            if cheap
            else "Simulated under valgrind's callgrind (instruction, cache and branch "
            "counts; no cycles):",
        )
    return lines


def render_summary(
    records: Sequence[dict],
    written: Sequence[str],
    errors: Sequence[str],
    warnings: Sequence[str],
    *,
    update: bool,
    outputs: Sequence[str] = (),
) -> str:
    if not records:
        return ""
    headers = [
        "test",
        *(title for _, title, _ in columns(records)),
        "vs baseline",
        "verdict",
        "diagnosis",
    ]
    lines = [
        tabulate(summary_rows(records), headers=headers, tablefmt="simple", disable_numparse=True)
    ]
    changes = change_lines(records)
    if changes:
        lines.append("")
        lines.extend(changes)
    doubtful = inconclusive_lines(records)
    if doubtful:
        lines.append("")
        lines.extend(doubtful)
    graphs = [
        f"  {r['key']}: {path}"
        for r in sorted(records, key=lambda r: r["key"])
        for path in r.get("artifacts", {}).values()
    ]
    if graphs:
        lines.append("")
        lines.append("Flamegraphs:")
        lines.extend(graphs)
    simulated = simulated_lines(records)
    if simulated:
        lines.append("")
        lines.extend(simulated)
    emulated = emulated_line(records)
    if emulated:
        lines.append("")
        lines.append(emulated)
    partial = [
        f"  {r['key']}: {label}"
        for r in sorted(records, key=lambda r: r["key"])
        if (label := partial_label(r.get("profile")))
    ]
    if partial:
        lines.append("")
        lines.append("Stopped at the timeout (partial results; never written as baselines):")
        lines.extend(partial)
    missing = not_counted_lines(records)
    if missing:
        lines.append("")
        lines.extend(missing)
    if update or errors or outputs:
        lines.append("")
    if update and not written and not errors:
        lines.append("no baseline written (no test ran cleanly)")
    lines.extend(written)
    lines.extend(outputs)
    lines.extend(f"ERROR {e}" for e in errors)
    lines.extend(f"WARNING {w}" for w in warnings)
    # The table's cells are clean already; every other line is one line of text.
    return "\n".join([lines[0], *(clean(line) for line in lines[1:])])


def update_line(
    path: str, old_metrics: Mapping[str, float] | None, new: Mapping[str, float]
) -> str:
    """``updated <path>: ipc 1.1 -> 1.3, ...``: a rewritten baseline's headline moves.

    ``old_metrics``: the metrics of the baseline replaced (None: the file is new).
    """
    if old_metrics is None:
        return f"created {path}"
    keys = [k for k in names("update") if k in new and k in old_metrics]
    changes = ", ".join(f"{k} {number(old_metrics[k])} -> {number(new[k])}" for k in keys)
    return f"updated {path}: {changes}" if changes else f"updated {path}"
