"""Reading the output of Arm's ``topdown-tool`` (Telemetry Solution) as perf stat runs.

Owns: recognising topdown-tool output and reading both of its layouts into
:class:`perf_stat.PerfStat` runs that carry no counts, only the metrics the tool computed:

* the dotted layout of the first releases (``Stage 1 (Topdown metrics)``, ``[Topdown
  Level 1]`` groups, ``Backend Bound.... 54.92% slots``), as Bakhvalov's perf-book
  quotes it for Graviton3;
* the tree of box tables of later releases (``Run 1``, ``CPU Neoverse V3 metrics``,
  ``│ Backend Stalled Cycles │ 91.85 │ % │``), as Arm's learning paths quote it, with
  the per-core columns of ``-C`` (the aggregate is taken) and the combined view
  (``-s combined``: a node's value in a table of its own under the node's title);
  a row quoted with emphasis marks (``» │ Frontend Bound │ 55.73 │ % │ «``) is read
  like any other;
* the metrics CSV (``--cpu-generate-csv metrics``: ``time,group,stage,level,metric,
  value,units``), one run, a metric's interval values averaged.

A metric's printed title is mapped to our metric of the same formula (the titles and
formulas are the telemetry-solution ``neoverse-*.json`` metric tables, e.g. ``DTLB MPKI``
= ``DTLB_WALK / INST_RETIRED * 1000`` = our ``dtlb_mpki``); percentages become fractions;
a title with no metric of ours (the operation mix, L2 TLB) is kept by name as unmapped.
Runs are kept apart: a ``Run N`` line, a shell prompt line, a ``Stage 1`` header after
metrics, or a title met again, starts the next run.

Must not: run the tool, or judge anything.
"""

from __future__ import annotations

import csv
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

# topdown-tool title (lower case) -> our metric; telemetry-solution key in the comment.
TITLES = {
    "frontend bound": "frontend_bound",  # frontend_bound
    "backend bound": "backend_bound",  # backend_bound
    "retiring": "retiring",  # retiring
    "bad speculation": "bad_speculation",  # bad_speculation
    "frontend stalled cycles": "frontend_stalled",  # frontend_stalled_cycles
    "backend stalled cycles": "backend_stalled",  # backend_stalled_cycles
    "instructions per cycle": "ipc",  # ipc
    "branch mpki": "branch_mpki",  # branch_mpki
    "branch misprediction ratio": "branch_miss",  # branch_misprediction_ratio
    "l1d cache mpki": "l1d_mpki",  # l1d_cache_mpki
    "l1d cache miss ratio": "l1_miss",  # l1d_cache_miss_ratio
    "l1i cache mpki": "l1i_mpki",  # l1i_cache_mpki
    "l1i cache miss ratio": "l1i_miss",  # l1i_cache_miss_ratio
    "l2 cache mpki": "l2_mpki",  # l2_cache_mpki
    "l2 cache miss ratio": "l2_miss",  # l2_cache_miss_ratio
    "ll cache read mpki": "llc_mpki",  # ll_cache_read_mpki
    "ll cache read miss ratio": "llc_miss",  # ll_cache_read_miss_ratio
    "dtlb mpki": "dtlb_mpki",  # dtlb_mpki (DTLB_WALK per 1000 instructions)
    "dtlb walk ratio": "dtlb_miss",  # dtlb_walk_ratio
    "itlb mpki": "itlb_mpki",  # itlb_mpki
    "itlb walk ratio": "itlb_miss",  # itlb_walk_ratio
    "l1 data tlb mpki": "l1d_tlb_mpki",  # l1d_tlb_mpki
    "l1 data tlb miss ratio": "l1d_tlb_miss",  # l1d_tlb_miss_ratio
    "l1 instruction tlb mpki": "l1i_tlb_mpki",  # l1i_tlb_mpki
    "l1 instruction tlb miss ratio": "l1i_tlb_miss",  # l1i_tlb_miss_ratio
}

_STAGE = re.compile(r"^\s*Stage (?P<n>\d+) \((?:Topdown|uarch) metrics\)\s*$")
_RUN = re.compile(r"^\s*Run \d+\s*$")
_CPU = re.compile(r"^\s*CPU (?P<name>.+?) (?:metrics|topdown)\s*$")
# "├── Frontend Bound (frontend_bound)": a tree node; in the combined view its own value
# follows in a table of just "Value | Unit".
_NODE = re.compile(r"[\u251c\u2514]\u2500\u2500 (?P<title>[^(\u2502]+?) \((?P<key>\w+)\)\s*$")
_GROUP = re.compile(r"^\s*\[(?P<name>[^\]]+)\]\s*$")
_PROMPT = re.compile(r"^\s*[$#] +(?P<command>\S.*)$")
_DOTTED = re.compile(
    r"^\s*(?P<title>[A-Za-z][\w ()/,\-]*?[\w)])\.*\s+"
    r"(?P<value>-?(?:\d+(?:\.\d*)?|\.\d+))\s*(?P<pct>%)?\s*(?P<unit>\S.*?)?\s*$"
)
_RULE = re.compile(r"^\s*=+\s*$")
_BAR = "\u2502"  # │, the box table's column rule
# "» │ Frontend Bound │ 55.73 │ % │ «": a row someone marked to draw the eye to it. The
# tool prints no such marks: its rows come from rich tables with no emphasis column
# (telemetry-solution tools/topdown_tool/topdown_tool/cpu_probe/cpu_cli_renderer.py,
# MetricTableBuilder.add_row); they are added where the output is quoted, as Arm's
# learning path "Identify programs for BOLT optimization" (arm-learning-paths,
# content/learning-paths/servers-and-cloud-computing/bolt-demo/good-candidates.md) marks
# the Frontend Bound and L1I Cache MPKI rows its text then discusses. The row is a row:
# the marks are removed before the cells are read.
_EMPHASIS = str.maketrans("", "", "\u00bb\u00ab")  # » and «
_NUMBER = re.compile(r"^-?(?:\d+(?:\.\d*)?|\.\d+)$")


def looks_like_topdown_tool(lines: Sequence[str]) -> bool:
    """Whether ``lines`` are topdown-tool output: a stage header, a CPU's box tables, or
    the metrics CSV's header."""
    if any(ln.strip() == _CSV_HEADER for ln in lines):
        return True
    cpu = any(_CPU.match(ln) for ln in lines)
    return any(_STAGE.match(ln) for ln in lines) or (
        cpu and any(ln.count(_BAR) >= 3 for ln in lines)
    )


@dataclass
class ToolRun:
    """One run of topdown-tool as read: its metrics under our names, what had none."""

    title: str = ""
    cpu: str | None = None  # "Neoverse V3", as the tool named it
    metrics: dict[str, float] = field(default_factory=dict)
    unmapped: dict[str, float] = field(default_factory=dict)  # title -> value as printed
    seen: set[str] = field(default_factory=set)

    def add(self, title: str, value: float, percent: bool) -> None:
        self.seen.add(title.lower())
        name = TITLES.get(title.lower())
        if name is None:
            self.unmapped[title] = value
        else:
            self.metrics[name] = value / 100.0 if percent else value


def _is_percent(unit: str) -> bool:
    """``%``, ``% slots``, ``percent of cycles``: a percentage, read as a fraction."""
    return unit.startswith(("%", "percent"))


def _box_row(line: str, node: str) -> tuple[str, float, bool] | None:
    """(title, value, is-percent) of a ``│ Metric │ Value │ Unit │`` row, else None.

    With ``-C`` the value columns are ``Aggregated (0,2-3) │ #0 │ #2 ...``: the first,
    the aggregate, is the value. A ``│ Value │ Unit │`` row is the value of ``node``.
    Emphasis marks around a row (``» │ ... │ «``, :data:`_EMPHASIS`) are dropped, and
    so are the empty cells the tree guides leave.
    """
    cells = [c for c in (c.strip() for c in line.translate(_EMPHASIS).split(_BAR)) if c]
    if len(cells) == 2 and node and _NUMBER.match(cells[0]):
        title, value, unit = node, cells[0], cells[1]
    elif len(cells) >= 3 and _NUMBER.match(cells[1]):
        title, value, unit = cells[0], cells[1], cells[-1]
    else:
        return None
    return title, float(value), _is_percent(unit)


def _dotted_row(line: str) -> tuple[str, float, bool] | None:
    match = _DOTTED.match(line.translate(_EMPHASIS))
    if match is None:
        return None
    unit = match.group("unit") or ""
    percent = bool(match.group("pct")) or _is_percent(unit)
    return match.group("title").strip(), float(match.group("value")), percent


def read_runs(text: str) -> list[ToolRun]:
    """Every run of a topdown-tool output, each with its metrics; runs with none dropped."""
    lines = text.splitlines()
    header = next((i for i, ln in enumerate(lines) if ln.strip() == _CSV_HEADER), None)
    if header is not None:
        run = _csv_run(lines[header:])
        return [run] if run.seen else []
    runs = [ToolRun()]
    stage = 0
    node = ""
    for line in lines:
        current = runs[-1]
        prompt = _PROMPT.match(line)
        if prompt or _RUN.match(line):  # the next command's output begins
            if current.seen:
                current = ToolRun()
                runs.append(current)
            if prompt:
                current.title = prompt.group("command")
            stage = 0  # the program's own output comes first: not metrics
            continue
        if stage_match := _STAGE.match(line):
            stage = int(stage_match.group("n"))
            if stage == 1 and current.seen:
                runs.append(ToolRun(title=current.title, cpu=current.cpu))
            continue
        if cpu := _CPU.match(line):
            current.cpu = cpu.group("name")
            continue
        if _GROUP.match(line) or _RULE.match(line):
            continue
        if tree_node := _NODE.search(line):
            node = tree_node.group("title").strip()
            continue
        row = _box_row(line, node) if _BAR in line else (_dotted_row(line) if stage else None)
        if row is None:
            continue
        title, value, percent = row
        if title.lower() in current.seen:  # outputs pasted one after another
            current = ToolRun(title=current.title, cpu=current.cpu)
            runs.append(current)
        current.add(title, value, percent)
    return [r for r in runs if r.seen]


_CSV_HEADER = "time,group,stage,level,metric,value,units"


def _csv_run(lines: Sequence[str]) -> ToolRun:
    run = ToolRun(title="topdown-tool metrics CSV")
    values: dict[tuple[str, bool], list[float]] = {}
    for row in csv.DictReader(lines):
        value = (row.get("value") or "").strip()
        if row.get("metric") and _NUMBER.match(value):
            unit = (row.get("units") or "").strip()
            key = (row["metric"].strip(), _is_percent(unit))
            values.setdefault(key, []).append(float(value))
    for (title, percent), numbers in values.items():
        run.add(title, statistics.fmean(numbers), percent)
    return run


def core_slug(cpu_name: str | None) -> str | None:
    """``"Neoverse V3"`` -> ``"neoverse-v3"``, the slug ``--cpu`` takes."""
    if not cpu_name:
        return None
    return re.sub(r"[\s_]+", "-", cpu_name.strip().lower())
