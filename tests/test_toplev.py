"""Intel toplev (pmu-tools) output read as a perf stat run of the fractions it computed.

The texts are constructed in toplev's own layouts, not copied from a run: pmu-tools
``tl_output.py`` prints a node as ``[timestamp] [CPU] AREA  Node  unit  value [<]
[multiplexing] [<==]`` (``OutputHuman.show``, whose comment gives ``C0    BE
Backend_Bound:   62.00 %``), its CSV as ``[Timestamp,][CPUs,]Area,Value,Unit,Description,
Sample,Stddev,Multiplex,Bottleneck,Idle`` (``OutputCSV``), and its version line as ``%s
on %s [%s]`` with the CPU's short name (``toplev.py known_cpus``: skl, icx, spr, arl...).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_inferperf.cli.main import main
from pytest_inferperf.ingest.perf_stat import parse, parse_report
from pytest_inferperf.ingest.toplev import CPUS, INFO_NODES, NODES, looks_like_toplev

# the layout of recent releases: area, node, unit, value, below mark, multiplexing, bottleneck
# (toplev pads the value to 20 columns; narrower here)
HYBRID = """\
# 5.1-full, 4 on Intel(R) Core(TM) Ultra 7 270K Plus [arl]
core FE               Frontend_Bound                      % Slots    0.4  < [27.0%]
core BAD              Bad_Speculation                     % Slots    0.0  < [27.0%]
core BE               Backend_Bound                       % Slots    98.7    [27.0%]
core RET              Retiring                            % Slots    0.9  < [27.0%]
core BAD              Bad_Speculation.Branch_Mispredicts  % Slots    0.0  < [27.0%]
core BE/Mem           Backend_Bound.Memory_Bound          % Slots    95.7    [27.0%]<==
core BE/Core          Backend_Bound.Core_Bound            % Slots    3.0  < [27.0%]
core RET              Retiring.Light_Operations           % Slots    0.6  < [27.0%]
core MUX                                                  %              27.00
atom BE               Backend_Bound                       % Slots    99.2    [27.0%]
atom BE               Backend_Bound.Resource_Bound        % Slots    86.8    [27.0%]<==
core BE/Mem           Backend_Bound.Memory_Bound              % Slots    94.9    [32.0%]
core BE/Mem           Backend_Bound.Memory_Bound.L3_Bound     % Stalls    88.2    [32.0%]
core BE/Mem           Backend_Bound.Memory_Bound.DRAM_Bound   % Stalls    0.0  < [32.0%]
"""

# the older layout: a colon after the node, the value before its unit, one line per CPU
PER_CPU = """\
# 3.6 on Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz [skx]
C0    FE      Frontend_Bound:                                10.00 %
C0    BAD     Bad_Speculation:                               30.00 %
C0    BE      Backend_Bound:                                 40.00 %
C0    RET     Retiring:                                      20.00 %
C1    FE      Frontend_Bound:                                20.00 %
C1    BAD     Bad_Speculation:                               20.00 %
C1    BE      Backend_Bound:                                 40.00 %
C1    RET     Retiring:                                      20.00 %
C0    BAD     Bad_Speculation.Branch_Mispredicts:            26.00 %
C1    BAD     Bad_Speculation.Branch_Mispredicts:            18.00 %
C0    Info.Thread  IPC:                                       1.50
C1    Info.Thread  IPC:                                       1.70
C0    Info.Memory  L1MPKI:                                   30.00
C1    Info.Memory  L1MPKI:                                   10.00
C0    Info.Memory  L3MPKI:                                    2.50
C1    Info.Memory  L3MPKI:                                    1.50
"""

CSV = """\
CPUs,Area,Value,Unit,Description,Sample,Stddev,Multiplex,Bottleneck,Idle
S0-C0,Frontend_Bound,12.5,% Slots,,,,100.0,,
S0-C0,Bad_Speculation,4.5,% Slots <,,,,100.0,,
S0-C0,Backend_Bound,61.0,% Slots,,,,100.0,,
S0-C0,Retiring,22.0,% Slots,,,,100.0,,
S0-C0,Backend_Bound.Memory_Bound,12.0,% Slots <,,,,100.0,,
S0-C0,Backend_Bound.Core_Bound,49.0,% Slots,,,,100.0,<==,
S0-C0,IPC,2.61,Metric,,,,100.0,,
"""


def test_the_hybrid_layout_reads_the_p_core_and_lists_the_e_core():
    stat = parse(HYBRID)
    assert stat.format == "toplev" and stat.arch == "x86"
    assert stat.core_hint == "arrowlake"  # [arl], pmu-tools known_cpus
    m = stat.perf_metrics
    assert m["backend_bound"] == pytest.approx(0.987)
    assert m["frontend_bound"] == pytest.approx(0.004)
    # the node met again in the drill-down's rerun: averaged
    assert m["memory_bound"] == pytest.approx((0.957 + 0.949) / 2)
    assert m["core_bound"] == pytest.approx(0.03)
    assert m["dram_stalled"] == pytest.approx(0.0)  # DRAM_Bound, a share of the cycles
    assert m["l3_bound"] == pytest.approx(0.882)  # L3_Bound, likewise
    # nodes with no metric of ours (Light_Operations, Resource_Bound, MUX) are not read
    assert set(m) == {
        "frontend_bound",
        "bad_speculation",
        "backend_bound",
        "retiring",
        "branch_mispredicts",
        "memory_bound",
        "core_bound",
        "dram_stalled",
        "l3_bound",
    }
    # the E-core's lines are listed, not judged (another width, no row here)
    assert stat.unmapped == ("the E-core's (atom) 2 nodes: another core type, not judged",)


def test_the_older_layout_averages_the_cpus_and_reads_ipc():
    stat = parse(PER_CPU)
    assert stat.core_hint == "skylake-x"
    assert stat.perf_metrics == pytest.approx(
        {
            "frontend_bound": 0.15,
            "bad_speculation": 0.25,
            "backend_bound": 0.40,
            "retiring": 0.20,
            "branch_mispredicts": 0.22,
            "ipc": 1.6,  # Info metrics: not percentages
            "l1d_mpki": 20.0,
            "llc_mpki": 2.0,
        }
    )


def test_the_csv_layout():
    stat = parse(CSV)
    assert stat.format == "toplev"
    assert stat.perf_metrics == pytest.approx(
        {
            "frontend_bound": 0.125,
            "bad_speculation": 0.045,
            "backend_bound": 0.61,
            "retiring": 0.22,
            "memory_bound": 0.12,
            "core_bound": 0.49,
            "ipc": 2.61,
        }
    )
    assert stat.core_hint is None  # the CSV carries no version line


def test_perf_stat_outputs_are_not_taken_for_toplev():
    perf_m = (
        "  7,017,115,812  uops_issued.any  #  0.91 Backend_Bound  (14.33%)\n"
        " 19,206,823,557  cpu_clk_unhalted.thread  #  0.09 Retiring  (14.30%)\n"
    )
    assert not looks_like_toplev(perf_m.splitlines())
    assert parse(perf_m).format == "text"
    perf6 = (
        "  TopdownL1 (cpu_core)  #  53.4 %  tma_backend_bound\n"
        "                        #  32.5 %  tma_retiring\n"
    )
    assert not looks_like_toplev(perf6.splitlines())


def test_a_toplev_output_with_no_node_we_read_says_so():
    text = (
        "C0    RET     Retiring.Light_Operations:       10.00 %\n"
        "C0    RET     Retiring.Light_Operations.FP_Arith:  4.00 %\n"
    )
    with pytest.raises(ValueError, match="toplev output without a single top-down node"):
        parse_report(text)


def test_every_node_maps_to_a_metric_and_every_cpu_to_a_name_the_cli_takes():
    from pytest_inferperf.core.metrics import METRICS
    from pytest_inferperf.diagnose.thresholds_by_core import core_facts

    assert set(NODES.values()) <= set(METRICS)
    for short, name in CPUS.items():
        assert core_facts(name).family == "x86", short


def test_explain_names_the_memory_bound_backend_at_the_level_that_served_it(capsys):
    from pathlib import Path
    from tempfile import TemporaryDirectory

    with TemporaryDirectory() as tmp:
        path = Path(tmp) / "toplev.txt"
        path.write_text(HYBRID)
        assert main(["explain", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["format"] == "toplev"
    assert data["core"] == "intel-lioncove"  # intel-family.h: Lion Cove / Skymont
    primary = data["diagnosis"]["primary"]
    # memory-bound (95%), and level 3 says the L3 served the loads: L2/LLC residency, its
    # share the L3's and DRAM's parts of the cycles
    assert primary["category"] == "l2_llc_residency"
    assert primary["share"]["metric"] == "l3_bound,dram_stalled"
    assert primary["share"]["share"] == pytest.approx(0.882)


@given(
    value=st.decimals(min_value=0, max_value=100, places=2),
    node=st.sampled_from(sorted(n for n in NODES if n not in INFO_NODES)),
    title=st.sampled_from(["C0", "S0-C1", "core", ""]),
    new_layout=st.booleans(),
)
def test_a_node_line_reads_as_its_percentage(value, node, title, new_layout):
    area = {"Frontend_Bound": "FE", "Bad_Speculation": "BAD", "Retiring": "RET"}.get(
        node.split(".")[0], "BE"
    )
    rest = f"% Slots   {value}    [50.0%]<==" if new_layout else f"{value} %"
    line = f"{title:6s}{area:8s}{node}{'' if new_layout else ':'}   {rest}"
    text = f"{line}\n{line}\n"
    assert looks_like_toplev(text.splitlines())
    assert parse(text).perf_metrics[NODES[node]] == pytest.approx(float(value) / 100)


def test_the_front_ends_level_2_under_its_old_and_new_names():
    # toplev of TMA 3.x named the front end's level 2 Frontend_Latency and
    # Frontend_Bandwidth (as in easyperf's third contest, in the corpus), later
    # Fetch_Latency and Fetch_Bandwidth: the same nodes. Printed without their parent,
    # the front end's share is their sum (Frontend Bound = Fetch Latency + Fetch
    # Bandwidth).
    old = (
        "S0-C0    FE             Frontend_Bound.Frontend_Latency:             3.32 +-"
        "     0.00 % Slots below\n"
        "S0-C0    FE             Frontend_Bound.Frontend_Bandwidth:           6.25 +-"
        "     0.00 % Slots below\n"
    )
    new = (
        "S0-C0    FE   Frontend_Bound.Fetch_Latency    % Slots    3.32    [11.1%]<==\n"
        "S0-C0    FE   Frontend_Bound.Fetch_Bandwidth  % Slots    6.25  < [11.1%]\n"
    )
    for text in (old, new):
        metrics = parse(text).metrics()
        assert metrics["fetch_latency"] == pytest.approx(0.0332)
        assert metrics["fetch_bandwidth"] == pytest.approx(0.0625)
        assert metrics["frontend_bound"] == pytest.approx(0.0957)
