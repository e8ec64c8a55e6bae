"""The terminal summary of a ``pytest --inferperf`` run.

Owns: the one table of every profiled test (key metrics, change against
the baseline, verdict), what each slower test's change is blamed on, the
footer saying the PMU was emulated (when it was), the inconclusive tests
with their reasons, confirmed regressions and baselines recorded on a busy
machine, what this machine could not count (one line per reason, with the
events it covers), and the baseline write lines (every metric a later run is
judged on, for each file written). Works on the plain records that travel from
xdist workers, so the controller renders the same table for ``-n 0`` and ``-n 2``.
Also how wide that output may be (:func:`text_width`) and how it is made to fit
(:func:`fit`, the table's layouts in :func:`summary_table`): optional columns
dropped, then short titles, then text moved under each row and wrapped; a number
is never cut.

Must not: measure, judge or read the terminal itself (the plugin passes the width).
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tabulate import tabulate

from ..core.metrics import METRICS
from ..core.numbers import number
from ..core.partial import partial_label
from ..measure.simulate.cpu_features import features_text
from ..measure.stages import metric_label
from .headline import HEADLINE
from .headline import headline as headline_of

if TYPE_CHECKING:
    from ..core.profile import Profile

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
    width: int | None = None,
) -> str:
    """The ``inferperf`` section of a run. ``width``: the columns it must fit in (the
    table adapts, every other line is wrapped: :func:`fit`); None: as wide as it is."""
    if not records:
        return ""
    lines = []
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
    text = [fit(clean(line), width) for line in lines]
    for entry in written:
        text.extend(written_lines(entry, width))
    # Each file written and each problem stays one line (it names a path: greppable whole).
    text.extend(clean(line) for line in outputs)
    text.extend(clean(f"ERROR {e}") for e in errors)
    text.extend(clean(f"WARNING {w}") for w in warnings)
    # The table's cells are clean already; every other line is text, escaped then fitted
    # (escaping first: an escape is longer than the character it shows).
    return "\n".join([summary_table(records, width), *text])


# -- fitting the width ---------------------------------------------------------------------
#: The most columns the summary and failure text take when the output is not a terminal
#: (a CI log, a file): pytest's own width there is ``$COLUMNS`` or 80 (shutil's fallback),
#: and a log is read in a browser or an editor of unknown width, so a wider ``$COLUMNS``
#: is capped here. The project's promise for logs (docs/plugin.md, "Output in CI logs").
LOG_WIDTH = 120
#: Narrowest the test column is squeezed to before a metric column moves under the rows.
KEY_MIN = 30
#: Indent of the text under a row, and of the continuation of a wrapped line.
UNDER = "    "


def short_title(metric: str, title: str) -> str:
    """The title tried when the full ones do not fit (a legend line spells it out): the
    metric's row's ``short_title`` (``core.metrics``), else ``title``."""
    row = METRICS.get(metric)
    return row.short_title if row is not None and row.short_title else title


#: The metric columns in the order they move under the rows when even short titles do
#: not fit: the ones no baseline comparison gates by default go first (the tail latency,
#: memory growth), the work and CPU time a verdict rests on last.
MOVE_ORDER = (
    "rss_growth_mb",
    "latency_p99_ms",
    "l1_miss",
    "ipc",
    "latency_p50_ms",
    "instructions_per_call",
    "cpu_ms_per_call",
)


def text_width(fullwidth: int, tty: bool) -> int:
    """The columns the plugin's text may take: pytest's terminal width on a terminal,
    at most :data:`LOG_WIDTH` otherwise."""
    return fullwidth if tty else min(fullwidth, LOG_WIDTH)


def fit_line(line: str, width: int | None) -> list[str]:
    """``line`` wrapped to ``width`` at spaces, its continuation indented four more.

    A word is never split: a number is never cut, and a path or a test id stays whole
    (copyable); one longer than the line is the only thing that can exceed ``width``.
    """
    if width is None or len(line) <= width:
        return [line]
    body = line.lstrip(" ")
    indent = line[: len(line) - len(body)]
    more = (indent + UNDER)[: max(width // 2, 1)]
    wrapped = textwrap.wrap(
        body,
        width,
        initial_indent=indent,
        subsequent_indent=more,
        break_long_words=False,
        break_on_hyphens=False,
    )
    return wrapped or [line]


def fit(text: str, width: int | None) -> str:
    """Every line of ``text`` wrapped to ``width`` (:func:`fit_line`); None: unchanged."""
    if width is None:
        return text
    return "\n".join(part for line in text.split("\n") for part in fit_line(line, width))


@dataclass(frozen=True)
class _Column:
    metric: str  # "" for the test, verdict and text columns
    title: str
    cells: tuple[str, ...]


def _table_lines(
    columns: Sequence[_Column], keys: Sequence[str], key_width: int | None
) -> list[list[str]]:
    """The table as [header lines, row 1's lines, row 2's lines...]: the test column
    (``keys``) wrapped to ``key_width`` where given, the other cells on one line."""
    shown = list(keys)
    if key_width is not None:
        shown = [
            "\n".join(
                textwrap.wrap(k, key_width, break_long_words=True, break_on_hyphens=False) or [k]
            )
            for k in keys
        ]
    rows = [[shown[i], *(c.cells[i] for c in columns)] for i in range(len(keys))]
    text = tabulate(
        rows,
        headers=["test", *(c.title for c in columns)],
        tablefmt="simple",
        disable_numparse=True,
    ).split("\n")
    out, at = [text[:2]], 2
    for key in shown:
        height = key.count("\n") + 1
        out.append(text[at : at + height])
        at += height
    return out


def _widest(lines: Iterable[str]) -> int:
    return max((len(line) for line in lines), default=0)


def summary_table(records: Sequence[Mapping[str, Any]], width: int | None = None) -> str:
    """The table of every profiled test, fitted to ``width`` in this order, the first
    layout that fits winning: as it is; without the metric columns no test has a value
    in; with short titles (and a legend line); with the "vs baseline" and diagnosis text
    (and a verdict's details) on a wrapped line under each row, the test column wrapped,
    and metric columns moved into that line (``p99 ms 4.37``) while the test column
    would be narrower than :data:`KEY_MIN`. No number is ever cut or dropped."""
    rows = summary_rows(records)
    shown = columns(records)
    keys = [row[0] for row in rows]
    metric_columns = [
        _Column(metric, title, tuple(row[1 + i] for row in rows))
        for i, (metric, title, _) in enumerate(shown)
    ]
    n = len(shown)
    change = _Column("", "vs baseline", tuple(row[n + 1] for row in rows))
    verdict = _Column("", "verdict", tuple(row[n + 2] for row in rows))
    diagnosis = _Column("", "diagnosis", tuple(row[n + 3] for row in rows))

    def render(cols: Sequence[_Column]) -> str:
        return "\n".join(line for part in _table_lines(cols, keys, None) for line in part)

    full = render([*metric_columns, change, verdict, diagnosis])
    if width is None or _widest(full.split("\n")) <= width:
        return full
    metric_columns = [c for c in metric_columns if any(cell != "-" for cell in c.cells)]
    text = render([*metric_columns, change, verdict, diagnosis])
    if _widest(text.split("\n")) <= width:
        return text
    short = [_Column(c.metric, short_title(c.metric, c.title), c.cells) for c in metric_columns]
    text = render([*short, change, verdict, diagnosis])
    legend = _legend(metric_columns)
    if _widest(text.split("\n")) <= width:
        return "\n".join([text, *fit_line(legend, width)]) if legend else text
    return _rows_with_text_under(records, keys, short, metric_columns, width)


def _legend(metric_columns: Sequence[_Column]) -> str:
    """``p50 = p50 ms, CPU = CPU ms/call``: what each short title stands for."""
    pairs = [
        f"{short_title(c.metric, c.title)} = {c.title}"
        for c in metric_columns
        if short_title(c.metric, c.title) != c.title
    ]
    return f"Columns: {', '.join(pairs)}" if pairs else ""


def _rows_with_text_under(
    records: Sequence[Mapping[str, Any]],
    keys: Sequence[str],
    short: Sequence[_Column],
    full: Sequence[_Column],
    width: int,
) -> str:
    """The last layout of :func:`summary_table`: test, metrics and a one-word verdict in
    the table; under each row, wrapped, the metrics that did not fit, the change against
    the baseline, the verdict's details and the diagnosis."""
    ordered = sorted(records, key=lambda r: r["key"])
    verdicts = []
    for record in ordered:
        word = record["status"] if record["outcome"] != "failed" or record["failed"] else "FAILED"
        verdicts.append(clean(word.split(" (")[0]))
    verdict = _Column("", "verdict", tuple(verdicts))
    kept = list(short)
    moved: list[_Column] = []
    longest = _widest(keys)

    def move_one() -> None:
        out = min(kept, key=lambda c: MOVE_ORDER.index(c.metric) if c.metric in MOVE_ORDER else -1)
        kept.remove(out)
        moved.append(next(f for f in full if f.metric == out.metric))

    while True:
        fixed = sum(max(_widest(c.cells), len(c.title) + 2) for c in (*kept, verdict))
        key_width = width - fixed - 2 * (len(kept) + 1)
        if key_width >= min(longest, KEY_MIN) or not kept:
            break
        move_one()
    key_width = max(key_width, 10)
    while True:  # tabulate's padding, measured rather than assumed
        parts = _table_lines([*kept, verdict], keys, key_width if key_width < longest else None)
        if _widest(line for part in parts for line in part) <= width:
            break
        if key_width > 10:
            key_width -= 1
        elif kept:  # the estimate was short (tabulate's rule under a header): one more moves
            move_one()
        else:
            break
    lines = list(parts[0])
    for i, (record, part) in enumerate(zip(ordered, parts[1:], strict=True)):
        lines.extend(part)
        under = [", ".join(f"{c.title} {c.cells[i]}" for c in moved if c.cells[i] != "-")]
        under.append(clean(record["change"]))
        status = record["status"]
        partial = partial_label(record.get("profile"))
        if status.split(" (")[0] != status:
            under.append(f"verdict {clean(status)}")
        if partial:
            under.append(partial)
        if record.get("diagnosis"):
            under.append(f"diagnosis: {clean(record['diagnosis'])}")
        text = "; ".join(u for u in under if u)
        if text:
            lines.extend(fit_line(UNDER + text, width))
    legend = _legend([c for c in full if c.metric in {k.metric for k in kept}])
    if legend:
        lines.extend(fit_line(legend, width))
    return "\n".join(lines)


def update_line(
    path: str,
    old_metrics: Mapping[str, float] | None,
    new: Mapping[str, float],
    gated: Iterable[str] = (),
) -> str:
    """A written baseline and every metric a later run is judged on, old -> new.

    Two lines: ``created <path>`` (or ``updated``), then, indented, each metric of
    :func:`update_metrics` with a value: ``cpu_ms_per_call 0.61 -> 0.6, ...`` where the
    replaced baseline had it, the new value alone where it did not (or the file is new).
    ``old_metrics``: the metrics of the baseline replaced (None: the file is new);
    ``gated``: metrics this test's verdict gates beyond the defaults (its ``tolerance=``
    names, its ``region()`` stages as ``stage:<name>``).
    """
    head = f"{'created' if old_metrics is None else 'updated'} {path}"
    old = old_metrics or {}
    parts = []
    for name in update_metrics(new, gated):
        value = f"{metric_label(name)} {number(new[name])}"
        if name in old:
            value = f"{metric_label(name)} {number(old[name])} -> {number(new[name])}"
        parts.append(value)
    return f"{head}\n{UNDER}{', '.join(parts)}" if parts else head


def record_update_line(path: str, old: Profile | None, record: Mapping[str, Any]) -> str:
    """The :func:`update_line` of a baseline written from a record (the plugin's
    ``--update-baselines`` and ``inferperf accept`` alike): every metric later runs are
    judged on, old -> new, its ``region()`` stages too (ms per call). ``old``: the
    baseline replaced (None: the file is new); ``record``: :meth:`ProfileRecord.to_json`."""
    from ..core.metrics import profile_metrics
    from ..measure.stages import stage_metric, stage_times

    stages = {
        stage_metric(s["name"]): s["ms_per_call"]
        for s in record.get("stages") or ()
        if s.get("region") and isinstance(s.get("ms_per_call"), int | float)
    }
    old_metrics = None
    if old is not None:
        old_metrics = {
            **profile_metrics(old),
            **{stage_metric(t.name): t.ms_per_call for t in stage_times(old) if t.named},
        }
    return update_line(path, old_metrics, {**record["metrics"], **stages}, gated=stages)


def written_lines(entry: str, width: int | None = None) -> list[str]:
    """An :func:`update_line` for the terminal: ``created <path>`` whole (a path to copy;
    long as it may be), its metrics line wrapped to ``width``; every part escaped."""
    head, sep, metrics = str(entry).partition("\n" + UNDER)
    lines = [clean(head)]
    if sep:
        lines.extend(fit_line(UNDER + clean(metrics), width))
    return lines


def update_metrics(new: Mapping[str, float], gated: Iterable[str] = ()) -> list[str]:
    """The metrics a written baseline's line lists, those with a value in ``new``: the
    headline ones (memory growth and peak included) in their order, then every other metric
    that gates by default (its row's ``gates``, ``core.metrics``) in the metric table's
    order, then ``gated`` (a test's own tolerance names and stages)."""
    order = [h.metric for h in HEADLINE]
    order += [n for n, m in METRICS.items() if m.gates]
    order += sorted(gated)
    return [m for m in dict.fromkeys(order) if new.get(m) is not None]
