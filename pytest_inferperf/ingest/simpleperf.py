"""Reading Android's ``simpleperf stat`` report, every layout its releases printed.

Owns: recognising the report (``Performance counter statistics:`` ... ``Total test
time: N seconds.``, or ``--csv``'s ``Performance counter statistics,`` ... ``Total test
time,N,seconds,``) and reading each report of a file as one run of rows: the event as
simpleperf named it, the count, the share of the time it had a counter where printed.
The layouts are those of AOSP ``system/extras`` ``simpleperf/cmd_stat.cpp``:

* 2015: ``   1,234,567(scaled)  cpu-cycles``: the count already scaled by
  enabled/running time where it was multiplexed, marked ``(scaled)``, no comment and no
  share (read as printed);
* 2016 to August 2022: ``  1,234,567  cpu-cycles   # 0.13 GHz   (12%)``: the count as
  read, **not** scaled, and the share of the enabled time it ran (``1.0 / scale *
  100``: time_running / time_enabled, ``runtime / enabled_time`` in the header);
* August 2022 on (commit 4ed8e11c, "don't open event files across cpus"): no share;
  simpleperf warns after the report when its events outnumbered the counters;
* ``--per-thread`` (thread_name, pid, tid columns before the count) and ``--per-core``
  (a cpu column): the rows of one event are summed, which is the report without them;
* ``--csv``: ``count,event,comment...,(12%),`` up to August 2022 (commit abc8ee2e
  removed the share), the same columns before the count;
* ``task-clock`` / ``cpu-clock`` as milliseconds, ``886.008130(ms)``;
* ``(generated)`` rows, the sum of an event's ``:u`` and ``:k`` rows that simpleperf
  adds itself (``AutoGenerateSummaries``): not read, the two rows they add up are;
* ``--interval``: one report per interval, each a run (totals from the start unless
  ``--interval-only-values``).

A count is given as perf prints it: scaled by enabled/running time (the share printed,
``100 / share``), so that the ratios of two events that ran for different shares of
the time compare like perf's; the share is kept. The printed share is rounded to a
whole per cent, so a scaled count is within half a per cent of the share of exact.

Event names: simpleperf's Arm events are ``raw-`` and the PMUv3 event's name in lower
case with hyphens (``event_table_generator.py``: event 0x03 ``l1d-cache-refill`` is
``raw-l1d-cache-refill``), which is perf's ``l1d_cache_refill``; :func:`perf_name`
gives perf's name. Its generic and hardware-cache names are perf's own.

Must not: run simpleperf, map names to logical events, or judge anything.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

# The title; "^C" before it is the terminal's echo of the Ctrl+C that stops a run
# without --duration (-p, -t, --app, -a count until SIGINT).
_TITLE = re.compile(r"^\s*(?:\^C)?Performance counter statistics\s*(?P<sep>[:,])\s*$")
# The text layout's column header (ShowText: "count", "event_name", "# count / runtime"),
# which perf never prints: a block quoted from it on, its title left out, is simpleperf's.
_HEADER = re.compile(r"^\s*#.*\bcount\s+event_name\b")
_TOTAL_TEXT = re.compile(r"^\s*Total test time:\s*(?P<s>\d+(?:\.\d+)?)\s*seconds\.?\s*$")
_TOTAL_CSV = re.compile(r"^\s*Total test time,(?P<s>\d+(?:\.\d+)?),seconds,?\s*$")
_COUNT = re.compile(r"^(?P<n>\d{1,3}(?:,\d{3})*|\d+)(?:\.(?P<frac>\d+))?(?P<ms>\(ms\))?$")
_SHARE = re.compile(r"\((?P<pct>\d+(?:\.\d+)?)%\)")
_SCALED = "(scaled)"
_GENERATED = "(generated)"
_EVENT = re.compile(r"^[A-Za-z][\w\-.:/=,]*$")
# The first line of the warning simpleperf logs after a report whose hardware events
# outnumbered the counters (StatCommand::CheckHardwareCounterMultiplexing: "It seems the
# number of hardware events are more than the number of\navailable CPU PMU hardware
# counters. ...").
MULTIPLEXING_WARNING = "It seems the number of hardware events are more than"
_COMMENT = re.compile(r"\s#(?:\s|$)")


@dataclass(frozen=True)
class Row:
    """One event of a report, its rows summed."""

    event: str  # as simpleperf named it ("raw-l1d-cache-refill:u")
    count: float | None  # scaled by enabled/running where a share was printed; None:
    # the event never had a counter (see _ran)
    unit: str  # "msec" for the clocks, else ""
    running_pct: float | None  # the share of the enabled time it ran, where printed


@dataclass
class Report:
    """One ``Performance counter statistics`` report."""

    rows: list[Row] = field(default_factory=list)
    elapsed_s: float | None = None
    multiplexed_unknown: bool = False  # warned of multiplexing, with no share printed
    # what the command line above the report counted: "system-wide" (-a), "attached"
    # (-p, -t, --app), None for a command it ran or no command line shown
    scope: str | None = None


def looks_like_simpleperf(lines: Sequence[str]) -> bool:
    """Whether ``lines`` hold a simpleperf stat report: its title (perf's is
    ``Performance counter stats for ...``), or its column header."""
    return any(_TITLE.match(ln) or _HEADER.match(ln) for ln in lines)


def perf_name(event: str) -> str:
    """perf's name of a simpleperf event: ``raw-l1d-cache-refill:u`` ->
    ``l1d_cache_refill:u``; every other name is perf's already."""
    base, sep, modifiers = event.partition(":")
    if base.startswith("raw-") and len(base) > 4:
        base = base[4:].replace("-", "_")
    return base + sep + modifiers


def _count(token: str) -> tuple[float, str] | None:
    """(value, unit) of a count cell: ``1,234``, ``1234``, ``886.008130(ms)``."""
    match = _COUNT.match(token.strip())
    if match is None:
        return None
    whole = float(match.group("n").replace(",", ""))
    frac = match.group("frac")
    if match.group("ms"):
        return whole + (float("0." + frac) if frac else 0.0), "msec"
    if frac:
        return None  # simpleperf prints no other count with a fraction
    return whole, ""


@dataclass(frozen=True)
class _Cells:
    """What one row printed."""

    event: str
    value: float
    unit: str
    share: float | None
    generated: bool
    per_core: bool  # a cpu column came first (--per-core): see _report
    ran: bool  # False: no run time (see _ran)


def _row(cells: Sequence[str], index: int, comment: str, scaled: bool) -> _Cells | None:
    """The row whose count is ``cells[index]`` and event the cell after it; the cells
    before are the thread (3 cells), cpu (1) or both (4) columns; ``comment`` holds the
    share and ``(generated)``."""
    if index not in (0, 1, 3, 4) or index + 1 >= len(cells):
        return None
    found = _count(cells[index])
    event = cells[index + 1]
    if found is None or not _EVENT.match(event):
        return None
    share = _SHARE.search(comment)
    # a 2015 "(scaled)" count is perf's estimate already, its share not printed
    pct = float(share.group("pct")) if share and not scaled else None
    generated = _GENERATED in comment
    return _Cells(
        event, found[0], found[1], pct, generated, index in (1, 4), _ran(event, found[0], comment)
    )


def _ran(event: str, count: float, comment: str) -> bool:
    """Whether the event had a counter at all. simpleperf prints a 0 with an empty
    comment for an event that never ran (``GetCommentForSummary`` returns "" when its
    run time is 0, and only then for any event but cpu-clock; the share printed beside
    it is 100%, its scale left at 1): the 0 counts nothing, as perf's ``<not
    counted>``."""
    words = _SHARE.sub("", comment).replace(_GENERATED, "").strip(" ,")
    return bool(count or words or event.partition(":")[0] in ("cpu-clock", "task-clock"))


def _text_row(line: str, columns: int | None) -> _Cells | None:
    """A text row; ``columns`` is the count's column as the header names it (``# cpu
    count event_name``: 1), None without a header, when the cells' number decides (a
    thread's name holds no space there)."""
    mark = _COMMENT.search(line)
    cells_part, comment = (line[: mark.start()], line[mark.end() :]) if mark else (line, "")
    scaled = _SCALED in cells_part
    cells = cells_part.replace(_SCALED, " ").split()
    if columns is not None and len(cells) > columns + 2:
        # a thread's name with spaces: the cells after the name are the last ones
        cells = [" ".join(cells[: len(cells) - columns - 1]), *cells[len(cells) - columns - 1 :]]
    index = columns if columns is not None else len(cells) - 2
    return _row(cells, index, comment, scaled)


def _csv_row(line: str) -> _Cells | None:
    """A ``--csv`` row: the first count followed by an event, after the thread / cpu
    cells; the cells after the event are the comment."""
    cells = [c.strip() for c in line.split(",")]
    for index in (0, 1, 3, 4):
        row = _row(cells, index, ",".join(cells[index + 2 :]), False)
        if row is not None:
            return row
    return None


def _count_column(header: str) -> int | None:
    """The count's column from the header (``#  thread_name  pid  tid  cpu  count
    event_name  # count / runtime``), None where the line is not one."""
    words = header.lstrip("#").split("#", 1)[0].split()
    return words.index("count") if "count" in words and "event_name" in words else None


def _report(lines: Sequence[str], csv: bool) -> Report:
    """One report's rows, each event's rows (threads, cpus) summed.

    A row is scaled by its share (see the module docstring), except a ``--per-core``
    row: there the share is the thread's time on that cpu over its time on every cpu
    as much as multiplexing (simpleperf's doc, "Show event count per core"), so the
    counts as read are summed, which is the thread's count, and no share is kept.
    """
    report = Report()
    read: dict[str, float] = {}  # event -> the counts as read, summed
    scaled: dict[str, float | None] = {}  # ... scaled by their shares; None: not scalable
    units: dict[str, str] = {}
    ran: set[str] = set()
    columns: int | None = None
    # rows come after the title (or, where it was left out, after the column header):
    # what comes before is the command line and the program's own output
    start = next((i for i, ln in enumerate(lines) if _TITLE.match(ln)), None)
    if start is None:
        start = next((i for i, ln in enumerate(lines) if _HEADER.match(ln)), 0)
    for line in lines[start:]:
        total = (_TOTAL_CSV if csv else _TOTAL_TEXT).match(line)
        if total:
            report.elapsed_s = float(total.group("s"))
            continue
        if line.lstrip().startswith("#"):
            columns = _count_column(line) if columns is None else columns
            continue
        row = None if _TITLE.match(line) else (_csv_row(line) if csv else _text_row(line, columns))
        if row is None or row.generated:
            continue
        read[row.event] = read.get(row.event, 0.0) + row.value
        if row.ran:
            ran.add(row.event)
        units[row.event] = row.unit
        share = None if row.per_core else row.share
        before = scaled.get(row.event, 0.0)
        scaled[row.event] = (
            None if share is None or before is None else before + row.value * 100.0 / share
        )
    for event, count in read.items():
        estimate = scaled[event]
        if event not in ran:
            report.rows.append(Row(event, None, units[event], None))
        elif estimate is None or estimate <= 0:
            report.rows.append(Row(event, count, units[event], None))
        else:
            report.rows.append(Row(event, estimate, units[event], 100.0 * count / estimate))
    return report


_COMMAND = re.compile(r"\bsimpleperf\s+stat\b(?P<args>.*)$")
# simpleperf stat's options that take a value (cmd_stat.cpp's usage text): the first
# other word that is not an option is the command it runs, whose own options follow.
_VALUED = frozenset(
    (
        "-e",
        "--group",
        "-p",
        "-t",
        "--app",
        "--cpu",
        "--duration",
        "--interval",
        "-o",
        "--sort",
        "--tp-filter",
        "--kprobe",
        "--out-fd",
        "--stop-signal-fd",
    )
)


def _command_scope(args: str) -> str | None:
    """What a ``simpleperf stat`` command line with these arguments counted (see Report)."""
    words = args.split()
    options: set[str] = set()
    index = 0
    while index < len(words) and words[index].startswith("-"):
        options.add(words[index])
        index += 2 if words[index] in _VALUED else 1
    if "-a" in options:
        return "system-wide"
    if options & {"-p", "-t", "--app"}:
        return "attached"
    return None


def _commands(lines: Sequence[str]) -> list[tuple[int, str | None]]:
    """(line index, scope) of each ``simpleperf stat`` command line, in order; a command
    continued with "\\" is read whole, at the index of its first line."""
    out: list[tuple[int, str | None]] = []
    index = 0
    while index < len(lines):
        first, line = index, lines[index].rstrip()
        while line.endswith("\\") and index + 1 < len(lines):
            index += 1
            line = line[:-1] + " " + lines[index].strip()
        if match := _COMMAND.search(line):
            out.append((first, _command_scope(match.group("args"))))
        index += 1
    return out


def read_reports(text: str) -> list[Report]:
    """Every report of a simpleperf stat output, in order (one per ``--interval``); each
    report's scope is read from the last command line before its title."""
    lines = text.splitlines()
    titles = [(i, m) for i, ln in enumerate(lines) if (m := _TITLE.match(ln))]
    csv = bool(titles) and titles[0][1].group("sep") == ","
    starts = [i for i, _ in titles] or [0]
    bounds = [0, *starts[1:], len(lines)]  # the first report takes the lines before it
    commands = _commands(lines)
    reports = []
    for a, b, title in zip(bounds, bounds[1:], starts, strict=False):
        report = _report(lines[a:b], csv)
        if report.rows:
            report.multiplexed_unknown = any(MULTIPLEXING_WARNING in ln for ln in lines[a:b])
            before = [scope for at, scope in commands if at < title]
            report.scope = before[-1] if before else None
            reports.append(report)
    return reports
