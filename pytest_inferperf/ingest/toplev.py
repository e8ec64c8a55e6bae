"""Reading the output of Intel's ``toplev`` (pmu-tools) as perf stat runs.

Owns: recognising toplev output and reading the top-down nodes and info metrics we have
metrics for (:data:`NODES`) into what becomes a :class:`perf_stat.PerfStat` run that
carries no counts, only what toplev computed, in both of its layouts (pmu-tools
``tl_output.py``):

* the human-readable lines of ``OutputHuman``: ``[timestamp] [CPU] AREA  Node  unit
  value [<] [multiplexing] [<==]``, as ``C0    BE      Backend_Bound:   62.00 %``
  (the layout's own example) or ``core BE/Mem  Backend_Bound.Memory_Bound  % Slots
  95.7    [27.0%]<==``;
* the CSV of ``OutputCSV`` (``-x,``): ``[Timestamp,][CPUs,]Area,Value,Unit,Description,
  ...``, the node's name in the ``Area`` column.

Intel's bottleneck view (``Info.Bottleneck`` / ``Bottleneck`` lines, ``-B``) is read by
:mod:`tma_bottlenecks`' names, its ``Scaled_Slots`` percentages as fractions.
Values in a ``%`` unit (``% Slots``, ``% Stalls``, ``% Clocks``) become fractions. A
node met again (``-I`` intervals, per-CPU lines, the rerun of ``--drilldown``) is
averaged. On a hybrid part the P-core's lines (``core``) are read and the E-core's
(``atom``) only listed (:func:`read`). The core comes from toplev's version line
(``# 5.1-full, 4 on Intel(R) ... [arl]``), its short name mapped by toplev's own table.

Must not: run toplev, or judge anything.
"""

from __future__ import annotations

import csv
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from .tma_bottlenecks import fraction as bottleneck_fraction
from .tma_bottlenecks import metric_of as bottleneck_metric

# toplev node -> our metric (the same TMA node: Intel's tma_* metrics of Linux perf are
# toplev's nodes under their perf names). DRAM_Bound is a share of the cycles ("%
# Stalls"): our dram_stalled, which Linux perf computes the same way.
NODES = {
    "Frontend_Bound": "frontend_bound",
    "Bad_Speculation": "bad_speculation",
    "Backend_Bound": "backend_bound",
    "Retiring": "retiring",
    "Frontend_Bound.Fetch_Latency": "fetch_latency",
    "Frontend_Bound.Fetch_Bandwidth": "fetch_bandwidth",
    # ... as toplev named them before pmu-tools renamed them (TMA 3.x and earlier)
    "Frontend_Bound.Frontend_Latency": "fetch_latency",
    "Frontend_Bound.Frontend_Bandwidth": "fetch_bandwidth",
    "Backend_Bound.Memory_Bound": "memory_bound",
    "Backend_Bound.Core_Bound": "core_bound",
    "Bad_Speculation.Branch_Mispredicts": "branch_mispredicts",
    "Bad_Speculation.Machine_Clears": "machine_clears",
    "Backend_Bound.Memory_Bound.L1_Bound": "l1_bound",
    "Backend_Bound.Memory_Bound.L1_Bound.DTLB_Load": "dtlb_load_bound",
    "Backend_Bound.Memory_Bound.Store_Bound.DTLB_Store": "dtlb_store_bound",
    "Backend_Bound.Memory_Bound.L2_Bound": "l2_bound",
    "Backend_Bound.Memory_Bound.L3_Bound": "l3_bound",
    "Backend_Bound.Memory_Bound.DRAM_Bound": "dram_stalled",
    # ... as toplev named it before TMA 3.x (pmu-tools' 2014-2015 ratio files: class
    # MEM_Bound, "how often the CPU was stalled on accesses to external memory (DRAM) by
    # loads", level 3, in Clocks).
    "Backend_Bound.Memory_Bound.MEM_Bound": "dram_stalled",
    "Backend_Bound.Memory_Bound.DRAM_Bound.MEM_Bandwidth": "mem_bandwidth",
    "Backend_Bound.Memory_Bound.DRAM_Bound.MEM_Latency": "mem_latency",
    "Backend_Bound.Memory_Bound.MEM_Bound.MEM_Bandwidth": "mem_bandwidth",
    "Backend_Bound.Memory_Bound.MEM_Bound.MEM_Latency": "mem_latency",
    "Frontend_Bound.Fetch_Latency.ICache_Misses": "icache_misses",
    "Frontend_Bound.Fetch_Latency.ITLB_Misses": "itlb_misses",
    "Frontend_Bound.Frontend_Latency.ICache_Misses": "icache_misses",
    "Frontend_Bound.Frontend_Latency.ITLB_Misses": "itlb_misses",
    "Backend_Bound.Memory_Bound.Store_Bound": "store_bound",
    "Backend_Bound.Memory_Bound.L3_Bound.Contested_Accesses": "contested_accesses",
    "Backend_Bound.Memory_Bound.Store_Bound.False_Sharing": "false_sharing",
    "Backend_Bound.Memory_Bound.L3_Bound.Data_Sharing": "data_sharing",
    "Backend_Bound.Memory_Bound.L1_Bound.4K_Aliasing": "4k_aliasing",
    "Backend_Bound.Memory_Bound.L1_Bound.Lock_Latency": "lock_latency",
    "Backend_Bound.Memory_Bound.L1_Bound.Split_Loads": "split_loads",
    "Backend_Bound.Memory_Bound.L1_Bound.FB_Full": "fb_full",
    "Frontend_Bound.Fetch_Latency.Branch_Resteers": "branch_resteers",
    "Frontend_Bound.Frontend_Latency.Branch_Resteers": "branch_resteers",
    "Backend_Bound.Core_Bound.Divider": "divider",
    "Backend_Bound.Core_Bound.Serializing_Operation.Slow_Pause": "slow_pause",
    "Backend_Bound.Core_Bound.Ports_Utilization": "ports_utilization",
    "Backend_Bound.Memory_Bound.L3_Bound.L3_Hit_Latency": "l3_hit_latency",
    "Backend_Bound.Memory_Bound.L3_Bound.SQ_Full": "sq_full",
    "Backend_Bound.Memory_Bound.Store_Bound.Store_Latency": "store_latency",
    "Backend_Bound.Memory_Bound.L1_Bound.Store_Fwd_Blk": "store_fwd_blk",
    "Backend_Bound.Core_Bound.Ports_Utilization.Ports_Utilized_0": "ports_utilized_0",
    "Backend_Bound.Core_Bound.Ports_Utilization.Ports_Utilized_1": "ports_utilized_1",
    "Backend_Bound.Core_Bound.Ports_Utilization.Ports_Utilized_2": "ports_utilized_2",
    "Backend_Bound.Core_Bound.Ports_Utilization.Ports_Utilized_3m": "ports_utilized_3m",
    "Frontend_Bound.Fetch_Latency.Branch_Resteers.Unknown_Branches": "unknown_branches",
    "Frontend_Bound.Fetch_Latency.DSB_Switches": "dsb_switches",
    "Frontend_Bound.Fetch_Latency.MS_Switches": "ms_switches",
    "Frontend_Bound.Fetch_Latency.LCP": "length_changing_prefixes",
    "Frontend_Bound.Fetch_Bandwidth.MITE": "legacy_decode",
    "Frontend_Bound.Fetch_Bandwidth.DSB": "uop_cache_fetch",
    "Frontend_Bound.Fetch_Latency.Branch_Resteers.Mispredicts_Resteers": "mispredicts_resteers",
    "Frontend_Bound.Fetch_Latency.Branch_Resteers.Clears_Resteers": "clears_resteers",
    "Backend_Bound.Memory_Bound.Store_Bound.Split_Stores": "split_stores",
    "Backend_Bound.Memory_Bound.Store_Bound.Streaming_Stores": "streaming_stores",
    "Retiring.Heavy_Operations": "heavy_operations",
    "Retiring.Heavy_Operations.Microcode_Sequencer": "microcode_sequencer",
    "Retiring.Heavy_Operations.Microcode_Sequencer.Assists": "assists",
    # ... as toplev placed them before TMA 4.0 split Retiring into Light_Operations and
    # Heavy_Operations (pmu-tools: Retiring.Base / Retiring.Microcode_Sequencer).
    "Retiring.Microcode_Sequencer": "microcode_sequencer",
    "Retiring.Microcode_Sequencer.Assists": "assists",
    # Info metrics (Intel TMA: tma_info_thread_ipc; tma_info_memory_l1mpki, l2mpki,
    # l3mpki: "L1 cache true misses per kilo instruction for retired demand loads",
    # MEM_LOAD_RETIRED.L1_MISS and the L2's, L3's): IPC, and the misses per 1000
    # instructions of demand loads, which count no stores or prefetches (so they are no
    # more than the refills our MPKI rows count).
    "IPC": "ipc",
    "L1MPKI": "l1d_mpki",
    "L2MPKI": "l2_mpki",
    "L3MPKI": "llc_mpki",
}
INFO_NODES = ("IPC", "L1MPKI", "L2MPKI", "L3MPKI")
# toplev's CPU short names (pmu-tools toplev.py ``known_cpus``) -> a name --cpu takes.
# Its E-core-only and Xeon Phi names (slm, knl, ehl, adl-grt, mtl-cmt, lnl-skt) have no
# row here and give no core.
CPUS = {
    "snb": "sandybridge",
    "jkt": "sandybridge-x",
    "ivb": "ivybridge",
    "ivt": "ivybridge-x",
    "hsw": "haswell",
    "hsx": "haswell-x",
    "bdw": "broadwell",
    "bdx": "broadwell-x",
    "skl": "skylake",
    "skx": "skylake-x",
    "clx": "cascadelake",
    "icl": "icelake",
    "tgl": "tigerlake",
    "icx": "icelake-x",
    "adl": "alderlake",
    "adl-glc": "alderlake",
    "spr": "sapphirerapids",
    "sprmax": "sapphirerapids",
    "srf": "sierraforest",
    "gnr": "graniterapids",
    "mtl": "meteorlake",
    "mtl-rwc": "meteorlake",
    "arl": "arrowlake",
    "lnl": "lunarlake",
    "lnl-lnc": "lunarlake",
}
_NODE = r"(?:Frontend_Bound|Bad_Speculation|Backend_Bound|Retiring)(?:\.\w+)*"
# [timestamp or SUMMARY] [CPU or core type], then the area (FE, BE/Mem, Info.Thread, ...)
_LEAD = r"^\s*(?:(?:\d+\.\d+|SUMMARY)\s+)?(?:(?P<title>\S+)\s+)?"
_LINE = re.compile(rf"{_LEAD}(?:FE|BAD|BE|RET)(?:/\w+)?\s+(?P<node>{_NODE}):?\s+(?P<rest>.*)$")
_INFO = re.compile(rf"{_LEAD}Info\.\w+\s+(?P<node>{'|'.join(INFO_NODES)}):?\s+(?P<rest>.*)$")
# Intel's bottleneck view: ``Info.Bottleneck  Mispredictions  Scaled_Slots  32.7`` (the
# area ``Bottleneck`` from TMA 5.0; ``tma_bottlenecks``), a percentage of the slots.
_BOTTLENECK = re.compile(rf"{_LEAD}(?:Info\.)?Bottleneck\s+(?P<node>\w+):?\s+(?P<rest>.*)$")
_VERSION = re.compile(r"^#\s*\S+.*\son\s.*\[(?P<cpu>[\w-]+)\]\s*$")
_BRACKETS = re.compile(r"\[[^\]]*\]")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:[.,]\d+)?(?![\w.])")
# toplev's title for the E-core type of a hybrid part (its P-core's is "core")
_E_CORE = "atom"
_SEPARATORS = (",", ";", "\t")


@dataclass
class ToplevRun:
    """The nodes as read: our metric -> the values met; the E-core's lines of a hybrid
    part, not judged; and the core."""

    cpu: str | None = None  # a name --cpu takes ("skylake"), from toplev's short name
    values: dict[str, list[float]] = field(default_factory=dict)
    e_core: dict[str, float] = field(default_factory=dict)  # node -> value as printed

    @property
    def metrics(self) -> dict[str, float]:
        return {name: statistics.fmean(v) for name, v in self.values.items()}


def looks_like_toplev(lines: Sequence[str]) -> bool:
    """Whether ``lines`` are toplev output: two node lines, or its CSV header."""
    if any(_is_csv_header(_cells(ln)) for ln in lines):
        return True
    return sum(1 for ln in lines if _LINE.match(ln)) >= 2


def _cells(line: str) -> list[str]:
    sep = max(_SEPARATORS, key=line.count)
    return [c.strip() for c in next(csv.reader([line], delimiter=sep))] if line.strip() else []


def _is_csv_header(cells: list[str]) -> bool:
    return "Area" in cells and "Value" in cells and "Unit" in cells


def _value(text: str, unit: str) -> float | None:
    """The value in ``text`` (the first number outside brackets, which hold the
    multiplexing), a fraction where ``unit`` (outside brackets) names a percentage."""
    match = _NUMBER.search(_BRACKETS.sub(" ", text))
    if match is None:
        return None
    number = float(match.group(0).replace(",", "."))
    return number / 100.0 if "%" in _BRACKETS.sub(" ", unit) else number


def read(text: str) -> ToplevRun:
    """What a toplev output holds. On a hybrid part its P-core's lines (``core``) are
    read and its E-core's (``atom``) only listed: the two differ in width and nodes, and
    no E-core of those parts has a row here (toplev itself asks that the workload not
    move between core types)."""
    lines = text.splitlines()
    cpu = next((m.group("cpu") for ln in lines if (m := _VERSION.match(ln.strip()))), None)
    run = ToplevRun(cpu=CPUS.get(cpu or ""))

    def add(title: str | None, node: str, value: float | None) -> None:
        if value is None:
            return
        if title == _E_CORE:
            run.e_core[node] = value
        elif node in NODES:
            run.values.setdefault(NODES[node], []).append(value)

    def add_bottleneck(title: str | None, node: str, value_text: str) -> None:
        metric, value = bottleneck_metric(node), _value(value_text, "")
        if metric is None or value is None:
            return
        if title == _E_CORE:
            run.e_core[node] = value
        else:
            run.values.setdefault(metric, []).append(bottleneck_fraction(value))

    header: list[str] | None = None
    for line in lines:
        if (match := _LINE.match(line)) is not None:
            rest = match.group("rest")  # the unit and the value, in either order
            add(match.group("title"), match.group("node"), _value(rest, rest))
            continue
        if (match := _INFO.match(line)) is not None:
            add(match.group("title"), match.group("node"), _value(match.group("rest"), ""))
            continue
        if (match := _BOTTLENECK.match(line)) is not None:
            add_bottleneck(match.group("title"), match.group("node"), match.group("rest"))
            continue
        cells = _cells(line)
        if _is_csv_header(cells):
            header = cells
            continue
        if header is not None and len(cells) >= len(header) - 1:
            row = dict(zip(header, cells, strict=False))
            if bottleneck_metric(row.get("Area", "")) is not None:
                add_bottleneck(row.get("CPUs"), row.get("Area", ""), row.get("Value", ""))
                continue
            value = _value(row.get("Value", ""), row.get("Unit", ""))
            add(row.get("CPUs"), row.get("Area", ""), value)
    return run
