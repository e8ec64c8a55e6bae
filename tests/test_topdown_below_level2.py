"""Intel TMA nodes below level 2: the core part's Divider and Ports_Utilization, the
memory part's Store_Bound, and retiring's Heavy_Operations, Microcode_Sequencer and
Assists, read from perf's and toplev's printed values or from the counts, and judged on
TMA's own MetricThreshold (Linux perf x86 metrics: tma_divider > 0.2, tma_ports_utilization
> 0.15, tma_store_bound > 0.2, tma_microcode_sequencer > 0.05, tma_assists > 0.1; tma_retiring's
"| tma_heavy_operations > 0.1").

``perfwiki_core_bound_group.txt`` is real: the Linux perf wiki's "Top-down analysis with
the perf tool" (perfwiki/main, docs/top-down-analysis.md), ``perf stat -M
tma_core_bound_group perf bench mem memcpy`` on Linux 6.1, with the benchmark's own
``GB/sec`` lines above perf's report. The other texts are constructed in perf's and
toplev's layouts.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_inferperf.cli.main import main
from pytest_inferperf.diagnose.classify import diagnose
from pytest_inferperf.ingest.perf_stat import _TOPDOWN_NAMES, parse, parse_text, topdown_from_text

FIXTURES = Path(__file__).parent / "fixtures" / "perfstat"
PERFWIKI = (FIXTURES / "perfwiki_core_bound_group.txt").read_text(encoding="utf-8")


def categories(diagnosis):
    return [f.category for f in diagnosis.findings]


# -- reading ------------------------------------------------------------------------------


def test_the_perf_wiki_core_bound_drill_down_is_one_run_read_whole():
    stat = parse_text(PERFWIKI)
    # the benchmark's "6.510417 GB/sec" lines above the title are its output, not counts
    assert all("GB/sec" not in e.event.text for e in stat.entries)
    assert stat.counts["cycles"] == 14_057_182  # CPU_CLK_UNHALTED.THREAD
    assert stat.counts["divider_active"] == 9_354  # ARITH.DIVIDER_ACTIVE
    assert stat.perf_metrics["ports_utilization"] == pytest.approx(0.312)
    assert stat.perf_metrics["divider"] == pytest.approx(0.001)
    # TOPDOWN.SLOTS is perf's "slots": level 1 from the topdown-* events over it, as
    # perf's own shadow comments print it (26.3% Retiring, 42.7% Backend Bound)
    metrics = stat.metrics("icelake")
    assert metrics["retiring"] == pytest.approx(18_467_278 / 70_285_910, abs=1e-3)
    assert metrics["backend_bound"] == pytest.approx(30_043_781 / 70_285_910, abs=1e-3)
    assert metrics["frontend_bound"] == pytest.approx(17_364_754 / 70_285_910, abs=1e-3)
    # the divider from the counts: 9,354 / 14,057,182 (perf printed 0.1 %)
    assert metrics["divider"] == pytest.approx(9_354 / 14_057_182)


def test_the_perf_wiki_drill_down_names_the_backend_on_its_ports():
    stat = parse_text(PERFWIKI)
    found = diagnose(stat.metrics("icelake"), core="icelake")
    assert found.primary.category == "backend_bound"
    assert found.primary.share.share == pytest.approx(0.427, abs=1e-3)
    crossed = {e.metric for e in found.primary.evidence}
    assert {"backend_bound", "ports_utilization"} <= crossed
    assert "divider" not in crossed  # 0.07 % of the cycles: far below 0.2
    assert "execution ports are the limit" in found.primary.recommendations[0]
    assert "ports utilisation 31%" in found.primary.explanation


def test_printed_nodes_below_level_2_are_read_and_an_event_of_the_same_word_is_not():
    text = (
        " Performance counter stats for './infer':\n\n"
        "     1,000,000,000      cycles\n"
        "           120,000      assists.any\n"
        "  TopdownL2   #     18.0 %  tma_heavy_operations\n"
        "  TopdownL3   #      7.0 %  tma_icache_misses\n"
        "              #      6.0 %  tma_itlb_misses\n"
        "  TopdownL3   #     25.0 %  tma_divider\n"
        "              #     16.0 %  tma_ports_utilization\n"
        "              #     22.0 %  tma_store_bound\n"
        "              #     12.0 %  tma_microcode_sequencer\n"
        "  TopdownL4   #     11.0 %  tma_assists\n"
        "              #     28.0 %  tma_mem_bandwidth\n"
        "              #      9.0 %  tma_mem_latency\n\n"
        "       1.000000000 seconds time elapsed\n"
    )
    stat = parse(text)
    assert stat.perf_metrics == pytest.approx(
        {
            "heavy_operations": 0.18,
            "icache_misses": 0.07,
            "itlb_misses": 0.06,
            "divider": 0.25,
            "ports_utilization": 0.16,
            "store_bound": 0.22,
            "microcode_sequencer": 0.12,
            "assists": 0.11,
            "mem_bandwidth": 0.28,
            "mem_latency": 0.09,
        }
    )
    # "120,000  assists.any" is the event ASSISTS.ANY, not the 11 % node
    assert "assists.any" in stat.unmapped


@pytest.mark.parametrize(
    ("event", "logical"),
    [
        ("arith.divider_active", "divider_active"),  # Skylake to Ice Lake
        ("ARITH.DIV_ACTIVE", "divider_active"),  # Golden Cove on
        ("arith.fpu_div_active", "divider_active"),  # Haswell, Broadwell
        ("exe_activity.bound_on_stores", "store_bound_cycles"),  # Skylake on
        ("resource_stalls.sb", "store_bound_cycles"),  # Haswell, Broadwell
    ],
)
def test_divider_and_store_stall_counts_are_shares_of_the_cycles(event, logical):
    text = f"   2,000,000,000      cycles\n     500,000,000      {event}\n"
    stat = parse(text)
    assert stat.counts[logical] == 500_000_000
    metric = "divider" if logical == "divider_active" else "store_bound"
    assert stat.metrics("skylake")[metric] == pytest.approx(0.25)


def test_toplev_nodes_below_level_2_and_the_old_name_of_dram_bound():
    text = (
        "C0    FE       Frontend_Bound.Fetch_Latency.ICache_Misses:                6.00 %\n"
        "C0    FE       Frontend_Bound.Frontend_Latency.ITLB_Misses:               4.00 %\n"
        "C0    BE/Core  Backend_Bound.Core_Bound.Divider:                         31.00 %\n"
        "C0    BE/Core  Backend_Bound.Core_Bound.Ports_Utilization:               12.00 %\n"
        "C0    BE/Mem   Backend_Bound.Memory_Bound.Store_Bound:                   21.00 %\n"
        "C0    BE/Mem   Backend_Bound.Memory_Bound.MEM_Bound:                     40.00 %\n"
        "C0    BE/Mem   Backend_Bound.Memory_Bound.MEM_Bound.MEM_Bandwidth:       30.00 %\n"
        "C0    BE/Mem   Backend_Bound.Memory_Bound.DRAM_Bound.MEM_Latency:        10.00 %\n"
        "C0    RET      Retiring.Heavy_Operations:                                15.00 %\n"
        "C0    RET      Retiring.Heavy_Operations.Microcode_Sequencer:             9.00 %\n"
        "C0    RET      Retiring.Heavy_Operations.Microcode_Sequencer.Assists:     7.00 %\n"
    )
    stat = parse(text)
    assert stat.format == "toplev"
    assert stat.perf_metrics == pytest.approx(
        {
            "icache_misses": 0.06,
            "itlb_misses": 0.04,  # under toplev's name of TMA 3 and before
            "divider": 0.31,
            "ports_utilization": 0.12,
            "store_bound": 0.21,
            # pmu-tools' ratio files of 2014-2015: class MEM_Bound, "stalled on accesses
            # to external memory (DRAM) by loads" (today's DRAM_Bound)
            "dram_stalled": 0.40,
            "mem_bandwidth": 0.30,
            "mem_latency": 0.10,
            "heavy_operations": 0.15,
            "microcode_sequencer": 0.09,
            "assists": 0.07,
        }
    )


# -- judging ------------------------------------------------------------------------------

LEVEL2 = {
    "retiring": 0.30,
    "bad_speculation": 0.05,
    "frontend_bound": 0.10,
    "backend_bound": 0.55,
    "memory_bound": 0.15,
    "core_bound": 0.40,
}


def test_a_busy_divider_names_the_core_part_with_its_own_advice():
    found = diagnose({**LEVEL2, "divider": 0.30, "ports_utilization": 0.08}, core="icelake")
    assert found.primary.category == "backend_bound"
    assert found.primary.share.metric == "core_bound"
    assert found.primary.share.share == pytest.approx(0.40)
    assert any(e.metric == "divider" and e.crossed for e in found.primary.evidence)
    assert "The divider is busy" in found.primary.recommendations[0]
    assert "divider busy 30%, ports utilisation 8%" in found.primary.explanation
    # below TMA's 0.2 the divider is no evidence and gives no advice of its own
    calm = diagnose({**LEVEL2, "divider": 0.05}, core="icelake")
    assert not any(e.metric == "divider" for e in calm.primary.evidence)
    assert not any("divider" in r for r in calm.primary.recommendations)


def test_the_divider_alone_from_counts_names_the_backend_at_its_share():
    # no top-down level 1 or 2: the divider's busy cycles are the backend's share
    found = diagnose({"divider": 0.35, "ipc": 0.9}, core="skylake")
    assert found.primary.category == "backend_bound"
    assert found.primary.share.metric == "divider"
    assert found.primary.share.share == pytest.approx(0.35)


def test_stores_held_up_are_the_backends_less_their_dtlb_part():
    # Store_Bound is the memory part's, but no residency of loads: the backend's share,
    # less DTLB_Store (its level-4 child), which is the TLB's
    metrics = {
        **LEVEL2,
        "memory_bound": 0.45,
        "core_bound": 0.10,
        "l2_bound": 0.02,
        "l3_bound": 0.03,
        "store_bound": 0.30,
        "dtlb_store_bound": 0.06,
    }
    found = diagnose(metrics, core="icelake")
    backend = next(f for f in found.findings if f.category == "backend_bound")
    assert backend.share.share == pytest.approx(0.10 + 0.30 - 0.06)
    assert backend.share.metric == "core_bound,store_bound"
    assert any("Stores hold the core up" in r for r in backend.recommendations)
    tlb = next(f for f in found.findings if f.category == "tlb_churn")
    assert tlb.share.share == pytest.approx(0.06)


def test_assists_name_retiring_with_the_denormal_advice():
    metrics = {
        "retiring": 0.45,
        "bad_speculation": 0.05,
        "frontend_bound": 0.10,
        "backend_bound": 0.40,
        "heavy_operations": 0.30,
        "microcode_sequencer": 0.25,
        "assists": 0.20,
    }
    found = diagnose(metrics, core="icelake")
    retiring = next(f for f in found.findings if f.category == "retiring")
    crossed = {e.metric for e in retiring.evidence if e.crossed}
    assert {"assists", "microcode_sequencer", "heavy_operations"} <= crossed
    assert "session.set_denormal_as_zero" in retiring.recommendations[0]
    assert "heavy operations 30%, microcode sequencer 25%, assists 20%" in retiring.explanation


def test_heavy_operations_alone_only_support_retiring():
    # tma_retiring's "| tma_heavy_operations > 0.1" flags the node, but a retiring share
    # of 30 % is not a core retiring near its width: heavy operations alone name nothing
    found = diagnose(
        {
            "retiring": 0.30,
            "bad_speculation": 0.05,
            "frontend_bound": 0.10,
            "backend_bound": 0.55,
            "heavy_operations": 0.15,
        },
        core="icelake",
    )
    assert "retiring" not in categories(found)


def test_itlb_misses_name_the_front_end_with_the_huge_page_advice():
    level1 = {
        "retiring": 0.30,
        "bad_speculation": 0.05,
        "frontend_bound": 0.35,
        "backend_bound": 0.30,
        "fetch_latency": 0.25,
        "fetch_bandwidth": 0.10,
    }
    found = diagnose({**level1, "icache_misses": 0.12, "itlb_misses": 0.09}, core="icelake")
    assert found.primary.category == "frontend_bound"
    crossed = {e.metric for e in found.primary.evidence if e.crossed}
    assert {"icache_misses", "itlb_misses"} <= crossed
    assert any("ITLB misses" in r for r in found.primary.recommendations)
    assert "I-cache misses 12%, ITLB misses 9%" in found.primary.explanation
    # I-cache misses alone give no ITLB advice
    icache = diagnose({**level1, "icache_misses": 0.12, "itlb_misses": 0.01}, core="icelake")
    assert not any("ITLB misses" in r for r in icache.primary.recommendations)
    # without level 1 or 2, the two nodes are the front end's share
    alone = diagnose({"icache_misses": 0.12, "itlb_misses": 0.09}, core="icelake")
    assert alone.primary.category == "frontend_bound"
    assert alone.primary.share.share == pytest.approx(0.21)


def test_the_microcode_sequencer_without_assists_only_supports_retiring():
    # TMA's tma_cisc = microcode sequencer - assists: CISC instructions' uops (SHA rounds,
    # string moves) are work asked for; 6 % of the slots from microcode (a Zen 4 SHA-256
    # run's retiring_microcode in perf-book's corpus case) names nothing on its own
    metrics = {
        "retiring": 0.263,
        "bad_speculation": 0.0,
        "frontend_bound": 0.061,
        "backend_bound": 0.675,
        "core_bound": 0.659,
        "memory_bound": 0.017,
        "microcode_sequencer": 0.061,
    }
    found = diagnose(metrics, core="zen4")
    assert found.primary.category == "backend_bound"
    assert "retiring" not in categories(found)
    # with assists it does, and gives the denormal advice
    with_assists = diagnose({**metrics, "assists": 0.15}, core="icelake")
    retiring = next(f for f in with_assists.findings if f.category == "retiring")
    assert any("set_denormal_as_zero" in r for r in retiring.recommendations)


def test_dram_bandwidth_or_latency_says_which_fix_fits():
    memory = {
        "retiring": 0.15,
        "bad_speculation": 0.02,
        "frontend_bound": 0.03,
        "backend_bound": 0.80,
        "memory_bound": 0.70,
        "core_bound": 0.10,
        "l2_bound": 0.02,
        "l3_bound": 0.04,
        "dram_stalled": 0.60,
    }
    bandwidth = diagnose({**memory, "mem_bandwidth": 0.45, "mem_latency": 0.15}, core="icelake")
    assert bandwidth.primary.category == "l2_llc_residency"
    recs = bandwidth.primary.recommendations
    assert any(r.startswith("DRAM bandwidth is the limit") for r in recs)
    assert any(r.startswith("DRAM latency is the limit") for r in recs)
    assert any("one NUMA node" in r for r in recs)
    assert "DRAM bandwidth 45%, DRAM latency 15%" in bandwidth.primary.explanation
    # the category and its share are DRAM_Bound's: the level-4 parts only say which fix
    assert bandwidth.primary.share.share == pytest.approx(0.64)
    latency = diagnose({**memory, "mem_bandwidth": 0.05, "mem_latency": 0.55}, core="icelake")
    recs = latency.primary.recommendations
    assert not any(r.startswith("DRAM bandwidth is the limit") for r in recs)
    assert any(r.startswith("DRAM latency is the limit") for r in recs)


# -- Intel hybrid parts, counting CPUs ----------------------------------------------------

# Real: Ian Rogers, "[PATCH v1 00/40] Fix perf on Intel hybrid CPUs", linux-kernel,
# 2023-04-26 (https://lore.kernel.org/all/20230426070050.1315519-1-irogers@google.com/),
# `perf stat -M TopdownL1 -a sleep 1` on Alder Lake, as Arnaldo Carvalho de Melo's reply
# quotes it: each kind of core prints its own model's level 1 (the E-cores' 24.4 %
# backend, the P-cores' 31.7 %).
HYBRID_TL1 = (FIXTURES / "hybrid_topdownl1_system_wide.txt").read_text(encoding="utf-8")


def test_counting_cpus_on_a_hybrid_part_reads_the_p_cores_printed_nodes():
    stat = parse(HYBRID_TL1)
    assert stat.perf_metrics["backend_bound"] == pytest.approx(0.317)
    assert stat.perf_metrics["frontend_bound"] == pytest.approx(0.541)
    assert stat.perf_metrics["retiring"] == pytest.approx(0.072)


# Constructed (hybrid_topdownl3_constructed.txt) in the layout of the same mail's
# `perf stat -M TopdownL3 -a sleep 1`, its P-core values: the
# E-cores count their cycles as CPU_CLK_UNHALTED.CORE, the P-cores as .THREAD and alone
# have ARITH.DIV_ACTIVE and the MEMORY_ACTIVITY stalls; both print tma_l1_bound.
HYBRID_TL3 = (FIXTURES / "hybrid_topdownl3_constructed.txt").read_text(encoding="utf-8")


def test_counting_cpus_with_other_events_per_kind_reads_the_p_cores_counts():
    stat = parse(HYBRID_TL3)
    # a ratio must not divide the P-cores' stalls by the E-cores' cycles
    assert stat.other_cores == {"cpu_atom": 100.0}
    assert stat.counts["cycles"] == 240_000_000
    metrics = stat.metrics("alderlake")
    assert metrics["divider"] == pytest.approx(480_000 / 240_000_000)
    assert metrics["l3_bound"] == pytest.approx(0.108, abs=5e-4)  # perf: 10.8 %
    assert metrics["l1_bound"] == pytest.approx(0.106)  # the P-cores' printed value
    # counting a task instead, the kind it ran on longest is read, as before (the P-core
    # lines printed without a share counted all the time)
    task = parse(HYBRID_TL3.replace("'system wide'", "'./infer'"))
    assert task.other_cores == {"cpu_atom": pytest.approx(22.3)}


def test_explain_says_why_the_e_cores_were_not_read(capsys, tmp_path):

    path = tmp_path / "hybrid.txt"
    path.write_text(HYBRID_TL3, encoding="utf-8")
    assert main(["explain", str(path), "--cpu", "alderlake", "-v"]) == 0
    out = capsys.readouterr().out
    assert "not used (the E-cores' events: counting CPUs, each kind of core counts" in out
    assert "the P-cores are read, as toplev reads them): cpu_atom" in out


# -- every printed node, in every layout --------------------------------------------------

_NODES = sorted(n for n in _TOPDOWN_NAMES if " " not in n)


@settings(max_examples=80, deadline=None)
@given(
    node=st.sampled_from(_NODES),
    tenths=st.integers(min_value=0, max_value=1000),
    prefixed=st.booleans(),
    layout=st.sampled_from(["shadow", "metric-only", "csv"]),
)
def test_property_a_printed_node_reads_as_its_fraction_and_an_event_of_its_word_does_not(
    node, tenths, prefixed, layout
):
    value = tenths / 10
    name = f"tma_{node}" if prefixed else node
    if layout == "shadow":
        text = f"     1,000,000      cycles     #   {value:5.1f} %  {name}\n"
    elif layout == "metric-only":
        text = f"   {value:5.1f} %  {name}   (20.00%)\n     1,000,000      cycles\n"
    else:
        text = f"1000000,,cycles,1000,100.00,{value:.1f},%  {name}\n"
    stat = parse(text)
    assert stat.perf_metrics[_TOPDOWN_NAMES[node]] == pytest.approx(value / 100)
    # an event named by the node's word and a dot is a count, never the node
    counted = parse(f"       120,000      {node}.any\n     1,000,000      cycles\n")
    assert _TOPDOWN_NAMES[node] not in counted.perf_metrics


# A run whose memory part waited on the L3 (level 3 measured): L2/LLC residency.
L3_BOUND = {
    "retiring": 0.20,
    "bad_speculation": 0.02,
    "frontend_bound": 0.08,
    "backend_bound": 0.70,
    "memory_bound": 0.60,
    "core_bound": 0.10,
    "l2_bound": 0.02,
    "l3_bound": 0.35,
    "dram_stalled": 0.05,
}


@pytest.mark.parametrize(
    ("node", "label"),
    [("contested_accesses", "contested accesses"), ("data_sharing", "data sharing")],
)
def test_lines_other_cores_wrote_or_read_give_the_false_sharing_advice(node, label):
    # under L3_Bound: lines another core wrote (contested) or shares (data sharing)
    found = diagnose({**L3_BOUND, node: 0.25}, core="icelake")
    assert found.primary.category == "l2_llc_residency"
    assert any(
        r.startswith("Cache lines move between cores") for r in found.primary.recommendations
    )
    assert f"{label} 25%" in found.primary.explanation
    # below TMA's 0.05 it gives no advice
    calm = diagnose({**L3_BOUND, node: 0.01}, core="icelake")
    assert not any("Cache lines move" in r for r in calm.primary.recommendations)


def test_stores_to_lines_other_cores_hold_give_the_false_sharing_advice():
    stores = diagnose(
        {**L3_BOUND, "l3_bound": 0.02, "store_bound": 0.40, "false_sharing": 0.20}, core="icelake"
    )
    backend = next(f for f in stores.findings if f.category == "backend_bound")
    assert any(r.startswith("Cache lines move between cores") for r in backend.recommendations)


# -- level 4 under L1_Bound and L3_Bound, level 3 under the fetch latency ----------------

L4_TOPLEV = """# 4.8-full-perf on Intel(R) Xeon(R) Platinum 8380 [icx]
BE             Backend_Bound                                   % Slots      62.0
BE/Mem         Backend_Bound.Memory_Bound                      % Slots      48.0
BE/Mem         Backend_Bound.Memory_Bound.L1_Bound             % Stalls     41.0
BE/Mem         Backend_Bound.Memory_Bound.L1_Bound.4K_Aliasing % Clocks     26.0  <==
BE/Mem         Backend_Bound.Memory_Bound.L1_Bound.Lock_Latency % Clocks     3.0
BE/Mem         Backend_Bound.Memory_Bound.L1_Bound.Split_Loads % Clocks      1.0
BE/Mem         Backend_Bound.Memory_Bound.L1_Bound.FB_Full     % Clocks      4.0
BE/Mem         Backend_Bound.Memory_Bound.L3_Bound.Data_Sharing % Clocks     2.0
FE             Frontend_Bound.Fetch_Latency.Branch_Resteers    % Clocks      1.5
"""


def test_toplev_level4_nodes_under_l1_and_l3_and_the_resteers_are_read():
    from pytest_inferperf.ingest import toplev

    metrics = toplev.read(L4_TOPLEV).metrics
    assert metrics["4k_aliasing"] == pytest.approx(0.26)
    assert metrics["lock_latency"] == pytest.approx(0.03)
    assert metrics["split_loads"] == pytest.approx(0.01)
    assert metrics["fb_full"] == pytest.approx(0.04)
    assert metrics["data_sharing"] == pytest.approx(0.02)
    assert metrics["branch_resteers"] == pytest.approx(0.015)


def _l1_bound(**below: float) -> dict[str, float]:
    return {
        "retiring": 0.25,
        "bad_speculation": 0.03,
        "frontend_bound": 0.10,
        "backend_bound": 0.62,
        "memory_bound": 0.48,
        "core_bound": 0.14,
        "l1_bound": 0.41,
        "l2_bound": 0.02,
        "l3_bound": 0.02,
        **below,
    }


@pytest.mark.parametrize(
    ("node", "value", "advice"),
    [
        ("4k_aliasing", 0.26, "Loads wait on stores 4 KiB apart"),
        ("split_loads", 0.25, "Loads cross cache lines"),
        ("lock_latency", 0.30, "Locked instructions (atomics, mutexes)"),
        ("fb_full", 0.35, "L1D misses wait for a free fill buffer"),
    ],
)
def test_a_node_under_l1_bound_past_tmas_threshold_brings_its_advice(node, value, advice):
    found = diagnose(_l1_bound(**{node: value}), core="icelake")
    backend = next(f for f in found.findings if f.category == "backend_bound")
    assert any(r.startswith(advice) for r in backend.recommendations)
    assert any(e.metric == node for e in backend.evidence)
    # under its threshold it is shown, not acted on
    quiet = diagnose(_l1_bound(**{node: 0.02}), core="icelake")
    backend = next(f for f in quiet.findings if f.category == "backend_bound")
    assert not any(r.startswith(advice) for r in backend.recommendations)


def test_a_node_alone_names_nothing():
    # support rows: without their parent's finding they add no category
    found = diagnose({"retiring": 0.70, "4k_aliasing": 0.40, "data_sharing": 0.30}, core="icelake")
    assert "backend_bound" not in categories(found)
    assert "l2_llc_residency" not in categories(found)


_FETCH = {
    "retiring": 0.30,
    "bad_speculation": 0.05,
    "frontend_bound": 0.50,
    "backend_bound": 0.15,
    "fetch_latency": 0.40,
    "fetch_bandwidth": 0.10,
}


def test_branch_resteers_support_the_front_end_with_the_branch_advice():
    front = {**_FETCH, "branch_resteers": 0.12}
    found = diagnose(front, core="icelake")
    fe = next(f for f in found.findings if f.category == "frontend_bound")
    assert any(r.startswith("The front end refetches") for r in fe.recommendations)


# -- deeper nodes: the fetch latency's switches, L3_Bound's, Store_Bound's, the ports ------

# Lines of Ian Rogers' `perf stat -M TopdownL4 -a sleep 1` on Alder Lake's P-cores
# ("[PATCH v1 00/40] Fix perf on Intel hybrid CPUs", linux-kernel, 2023-04-26), in
# perf 6.x's layout, trimmed to the nodes read here (their running shares cut).
L4_PERF = """ Performance counter stats for 'system wide':

         21,418,803      cpu_core/UOPS_EXECUTED.CYCLES_GE_3/ #      8.8 %  tma_ports_utilized_3m
         55,883,811      cpu_core/RESOURCE_STALLS.SCOREBOARD/ #     24.1 %  tma_ports_utilized_0
            216,886      cpu_core/MEM_INST_RETIRED.LOCK_LOADS/ #      3.8 %  tma_store_latency
                                                   #      0.1 %  tma_lock_latency
          4,899,130      cpu_core/XQ.FULL_CYCLES/         #      2.0 %  tma_sq_full
         23,904,338      cpu_core/EXE_ACTIVITY.1_PORTS_UTIL/ #      9.9 %  tma_ports_utilized_1
      1,010,981,054      cpu_core/TOPDOWN.SLOTS/          #      0.7 %  tma_clears_resteers
                                                   #     12.4 %  tma_mispredicts_resteers
              6,909      cpu_core/MEM_INST_RETIRED.SPLIT_STORES/ #      0.0 %  tma_split_stores
        242,508,080      cpu_core/CPU_CLK_UNHALTED.THREAD/ #      4.2 %  tma_ports_utilized_2
                                                   #      0.2 %  tma_store_fwd_blk
                                                   #      0.0 %  tma_streaming_stores
                                                   #     27.5 %  tma_unknown_branches
      1,004,834,399 ns   duration_time                    #     40.2 %  tma_l3_hit_latency

       1.004834399 seconds time elapsed
"""


def test_perfs_deeper_nodes_are_read_as_printed():
    printed = {
        "ports_utilized_3m": 0.088,
        "ports_utilized_0": 0.241,
        "ports_utilized_1": 0.099,
        "ports_utilized_2": 0.042,
        "store_latency": 0.038,
        "lock_latency": 0.001,
        "sq_full": 0.020,
        "store_fwd_blk": 0.002,
        "unknown_branches": 0.275,
        "l3_hit_latency": 0.402,
        "clears_resteers": 0.007,
        "mispredicts_resteers": 0.124,
        "split_stores": 0.0,
        "streaming_stores": 0.0,
    }
    assert parse(L4_PERF).perf_metrics == pytest.approx(printed)


def test_toplev_names_the_same_nodes():
    from pytest_inferperf.ingest import toplev

    text = (
        "# 4.8-full-perf on Intel(R) Core(TM) i9-12900K [adl]\n"
        "FE  Frontend_Bound.Fetch_Latency.DSB_Switches  % Clocks  7.1\n"
        "FE  Frontend_Bound.Fetch_Latency.MS_Switches  % Clocks  7.3\n"
        "FE  Frontend_Bound.Fetch_Latency.LCP  % Clocks  0.4\n"
        "FE  Frontend_Bound.Fetch_Bandwidth.MITE  % Slots_est  5.2\n"
        "FE  Frontend_Bound.Fetch_Bandwidth.DSB  % Slots_est  0.1\n"
        "FE  Frontend_Bound.Fetch_Latency.Branch_Resteers.Unknown_Branches  % Clocks  27.5\n"
        "BE/Mem  Backend_Bound.Memory_Bound.L3_Bound.L3_Hit_Latency  % Clocks_Estimated  40.2\n"
        "BE/Core  Backend_Bound.Core_Bound.Ports_Utilization.Ports_Utilized_3m  % Clocks  48.0\n"
    )
    printed = {
        "dsb_switches": 0.071,
        "ms_switches": 0.073,
        "length_changing_prefixes": 0.004,
        "legacy_decode": 0.052,
        "uop_cache_fetch": 0.001,
        "unknown_branches": 0.275,
        "l3_hit_latency": 0.402,
        "ports_utilized_3m": 0.48,
    }
    assert toplev.read(text).metrics == pytest.approx(printed)


_CORE_BOUND = {
    "retiring": 0.30,
    "bad_speculation": 0.02,
    "frontend_bound": 0.08,
    "backend_bound": 0.60,
    "memory_bound": 0.10,
    "core_bound": 0.50,
    "ports_utilization": 0.45,
}
_L3 = {**L3_BOUND, "l3_bound": 0.30}
_FETCH_BW = {**_FETCH, "fetch_latency": 0.15, "fetch_bandwidth": 0.35}
_STORES = {**_l1_bound(), "l1_bound": 0.05, "store_bound": 0.40}


@pytest.mark.parametrize(
    ("parent", "category", "node", "value", "advice"),
    [
        (_CORE_BOUND, "backend_bound", "ports_utilized_3m", 0.55, "Three or more uops execute"),
        (_CORE_BOUND, "backend_bound", "ports_utilized_1", 0.30, "One or two uops execute"),
        (_CORE_BOUND, "backend_bound", "ports_utilized_0", 0.30, "No uop executes"),
        (_l1_bound(), "backend_bound", "store_fwd_blk", 0.20, "Loads cannot take their data"),
        (_L3, "l2_llc_residency", "l3_hit_latency", 0.25, "Loads wait on the L3's latency"),
        (_L3, "l2_llc_residency", "sq_full", 0.40, "DRAM bandwidth is the limit"),
        (_FETCH, "frontend_bound", "dsb_switches", 0.12, "The decoded-uop cache misses"),
        (_FETCH, "frontend_bound", "ms_switches", 0.12, "The microcode sequencer interrupts"),
        (_FETCH, "frontend_bound", "unknown_branches", 0.12, "The front end refetches"),
        (_FETCH, "frontend_bound", "length_changing_prefixes", 0.12, "The decoders stall"),
        (_FETCH_BW, "frontend_bound", "legacy_decode", 0.30, "The legacy decoders (MITE)"),
        (_FETCH, "frontend_bound", "mispredicts_resteers", 0.12, "The front end refetches"),
        (_FETCH, "frontend_bound", "clears_resteers", 0.12, "The front end refetches after ma"),
        (_STORES, "backend_bound", "split_stores", 0.30, "Stores cross cache lines"),
        (_STORES, "backend_bound", "streaming_stores", 0.30, "Streaming (non-temporal)"),
    ],
)
def test_a_deeper_node_past_tmas_threshold_brings_its_advice(parent, category, node, value, advice):
    # Each is a support row on TMA's threshold with its parent's (Intel TMA 5.2, "& P"):
    # past it, its advice joins its parent's finding; under it, nothing changes.
    found = diagnose({**parent, node: value}, core="icelake")
    finding = next(f for f in found.findings if f.category == category)
    assert any(r.startswith(advice) for r in finding.recommendations), finding.recommendations
    assert any(e.metric == node and e.crossed for e in finding.evidence)
    quiet = diagnose({**parent, node: 0.01}, core="icelake")
    finding = next(f for f in quiet.findings if f.category == category)
    assert not any(r.startswith(advice) for r in finding.recommendations)


# -- Slow_Pause: the cycles stalled on PAUSE, under Core_Bound, Serializing_Operation ---

# perf 6.x's default layout on Golden Cove (Linux perf x86 metrics: tma_slow_pause =
# CPU_CLK_UNHALTED.PAUSE / CLKS there), six threads spinning between parallel sections;
# constructed in that layout, the values chosen for the rule.
SLOW_PAUSE_PERF = """ Performance counter stats for './bench_mt':

    41,523,110,912      TOPDOWN.SLOTS                    #     18.2 %  tma_retiring
                                                  #     71.4 %  tma_backend_bound
    12,301,442,101      cpu_core/cycles/                 #     62.3 %  tma_slow_pause
     2,104,998,100      cpu_core/instructions/           #      0.17 insn per cycle

       2.004517214 seconds time elapsed

      11.912000000 seconds user
       0.041000000 seconds sys
"""

SLOW_PAUSE_TOPLEV = """# 4.8-full-perf on Intel(R) Xeon(R) Platinum 8480+ [spr]
BE             Backend_Bound                                   % Slots      71.4
BE/Core        Backend_Bound.Core_Bound                        % Slots      64.0
BE/Core        Backend_Bound.Core_Bound.Serializing_Operation.Slow_Pause % Clocks  62.3  <==
"""


def test_slow_pause_is_read_from_perf_and_toplev():
    from pytest_inferperf.ingest import toplev

    assert toplev.read(SLOW_PAUSE_TOPLEV).metrics["slow_pause"] == pytest.approx(0.623)
    assert topdown_from_text(SLOW_PAUSE_PERF.splitlines())["slow_pause"] == pytest.approx(0.623)


def test_slow_pause_is_formed_from_the_pause_cycles_golden_cove_counts(explain_text):
    # CPU_CLK_UNHALTED.PAUSE / CLKS (Linux perf's Golden Cove tma_slow_pause):
    # 7,663,799,428 / 12,301,442,101 = 0.623.
    raw = (
        " Performance counter stats for './bench_mt':\n\n"
        "    12,301,442,101      cycles\n"
        "     2,104,998,100      instructions                     #    0.17  insn per cycle\n"
        "     7,663,799,428      cpu_clk_unhalted.pause\n\n"
        "       2.004517214 seconds time elapsed\n"
    )
    data = explain_text(raw, "--cpu", "sapphirerapids", "--json")
    assert data["runs"][0]["counts"]["pause_cycles"] == 7_663_799_428
    assert data["metrics"]["slow_pause"] == pytest.approx(7_663_799_428 / 12_301_442_101)
    assert data["diagnosis"]["primary"]["category"] == "thread_spinning"


def test_cycles_stalled_on_pause_name_the_spinning_threads_before_the_backend(explain_text):
    # 62.3% of the cycles stalled on PAUSE > TMA's 0.05: thread_spinning, its share the
    # fraction itself; the backend's 71.4% holds those cycles (Slow_Pause is under
    # Core_Bound), so it ranks right after its more specific child.
    text = explain_text(SLOW_PAUSE_PERF, "--cpu", "sapphirerapids")
    assert "Diagnosis (intel-goldencove): thread spinning / oversubscription" in text
    assert "  evidence: slow_pause = 0.623 > 0.05 (Intel TMA level-4 MetricThreshold)" in text
    assert "  share: ~62% of cycles: slow_pause 0.623 (a fraction of cycles" in text
    assert "  try 1. Threads stall on PAUSE, the spin-wait hint" in text
    assert "  also: backend_bound ~71% of cycles" in text


def test_few_cycles_on_pause_rule_the_spinning_out_of_a_low_ipc():
    # Counted and under TMA's 0.05, PAUSE stalls rule spin-waiting out: the low IPC with
    # six CPUs busy and memory fine is ILP-limited compute again.
    low = {"ipc": 0.16, "backend_stalled": 0.15, "l1d_mpki": 0.5, "llc_mpki": 0.01}
    found = diagnose({**low, "cpu_utilisation": 6.0, "slow_pause": 0.01}, core="skylake")
    assert found.primary.category == "ipc_collapse"
    open_ = diagnose({**low, "cpu_utilisation": 6.0}, core="skylake")
    assert "spin-waiting not ruled out" in open_.not_judged["ipc_collapse"]
    # and on Arm the row does not apply (x86 only), whatever was printed
    arm = diagnose({"slow_pause": 0.6, "ipc": 2.0}, core="neoverse-n1")
    assert "thread_spinning" not in categories(arm)


def test_spinning_known_only_from_the_session_is_no_child_of_the_backend():
    # Spinning threads are the backend's part only where they stall on PAUSE: a pool that
    # spins by its session's settings (ONNX Runtime's default) on Arm, where its spins do
    # not pause, leaves the backend's own 80% stalled cycles at full confidence and first.
    stalled = {"backend_stalled": 0.8, "ipc": 0.5, "cpu_utilisation": 7.9}
    session = {"allow_spinning": True, "intra_op_threads": 4}
    found = diagnose(stalled, core="neoverse-n1", session=session, cpu_count=8)
    assert [f.category for f in found.findings] == ["backend_bound", "thread_spinning"]
    backend = found.findings[0]
    assert backend.confidence == pytest.approx(
        diagnose(stalled, core="neoverse-n1").primary.confidence
    )
    # measured as cycles stalled on PAUSE, the spinning is the backend's child and first
    paused = diagnose({**stalled, "slow_pause": 0.5}, core="skylake", session=session, cpu_count=8)
    assert [f.category for f in paused.findings][:2] == ["thread_spinning", "backend_bound"]


# -- the advice follows the largest node -------------------------------------------------

# The P-cores' level-1 counts and level-3 fetch-latency nodes of Ian Rogers'
# `perf stat -M TopdownL3 -a sleep 1` on Alder Lake ("[PATCH v1 00/40] Fix perf on Intel
# hybrid CPUs", linux-kernel, 2023-04-26): branch resteers 40.3 % of the cycles, I-cache
# misses 17.5 %, ITLB misses 6.1 %. Constructed from those lines (not the whole block).
_FETCH_NODES = """ Performance counter stats for 'system wide':

       864,565,692      cpu_core/TOPDOWN.SLOTS/
       100,519,954      cpu_core/topdown-retiring/
        68,964,454      cpu_core/topdown-bad-spec/
       435,618,316      cpu_core/topdown-fe-bound/
       262,842,804      cpu_core/topdown-be-bound/
       240,070,549      cpu_core/CPU_CLK_UNHALTED.THREAD/ #     17.5 %  tma_icache_misses
                                                  #      6.1 %  tma_itlb_misses
                                                  #     {resteers} %  tma_branch_resteers

       1.004474469 seconds time elapsed
"""


@pytest.mark.parametrize(
    ("resteers", "first"),
    [
        ("40.3", "The front end refetches after mispredicted or unknown branches"),
        ("10.3", "Set graph_optimization_level to ORT_ENABLE_ALL"),
    ],
)
def test_the_front_ends_advice_opens_with_its_largest_measured_node(resteers, first):
    # The top-down method follows the largest node (Yasin, ISPASS 2014): branch resteers
    # at 40 % of the cycles, more than the I-cache misses' 17.5 % the generic advice is
    # for, open the advice; at 10 % they follow it. ITLB misses (6.1 %) stay after it.
    stat = parse(_FETCH_NODES.format(resteers=resteers))
    primary = diagnose(stat.metrics("alderlake"), core="alderlake").primary
    assert primary is not None and primary.category == "frontend_bound"
    recs = primary.recommendations
    assert recs[0].startswith(first)
    generic = recs.index(next(r for r in recs if r.startswith("Batch more work")))
    assert recs.index(next(r for r in recs if r.startswith("ITLB misses"))) > generic
