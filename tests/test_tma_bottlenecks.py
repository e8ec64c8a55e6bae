"""Intel TMA's bottleneck view: each cause's total pipeline cost, read from perf's and
toplev's output under every name the TMA versions gave it, as a fraction of the slots,
and ranked by.

The texts are constructed in the layouts perf and toplev print (Linux perf's
stat-display for a metric with no ScaleUnit: the number, then the name; pmu-tools
tl_output.py: area, name, domain, value); the names and thresholds are those of the
Linux perf x86 metric files and pmu-tools' ratio files of each TMA version.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_inferperf.core.metrics import BOTTLENECK_VIEW, METRICS
from pytest_inferperf.diagnose.classify import diagnose
from pytest_inferperf.ingest import toplev
from pytest_inferperf.ingest.perf_stat import parse
from pytest_inferperf.ingest.tma_bottlenecks import BOTTLENECKS, metric_of

# Every printed name of one entry, as each TMA version's perf metric files and toplev
# name it: TMA 4.4 (toplev's class names, perf of Linux 6.1), 4.5 (tma_info_), 4.7
# (tma_info_bottleneck_, cache_memory_*), 5.0 (tma_bottleneck_, data_cache_memory_*).
ERAS = [
    ("Mispredictions", "bottleneck_mispredictions"),
    ("tma_info_mispredictions", "bottleneck_mispredictions"),
    ("tma_info_bottleneck_mispredictions", "bottleneck_mispredictions"),
    ("tma_bottleneck_mispredictions", "bottleneck_mispredictions"),
    ("Memory_Bandwidth", "bottleneck_memory_bandwidth"),
    ("tma_info_memory_bandwidth", "bottleneck_memory_bandwidth"),
    ("tma_info_bottleneck_cache_memory_bandwidth", "bottleneck_memory_bandwidth"),
    ("tma_bottleneck_data_cache_memory_bandwidth", "bottleneck_memory_bandwidth"),
    ("Cache_Memory_Latency", "bottleneck_memory_latency"),
    ("tma_bottleneck_data_cache_memory_latency", "bottleneck_memory_latency"),
    ("Instruction_Fetch_BW", "bottleneck_fetch_bandwidth"),
    ("tma_info_bottleneck_base_non_br", "bottleneck_useful_work"),
    ("Compute_Bound_Est", "bottleneck_compute"),
    ("tma_bottleneck_memory_synchronization", "bottleneck_memory_sync"),
]


@pytest.mark.parametrize(("printed", "metric"), ERAS)
def test_every_era_of_a_name_is_the_same_entry(printed, metric):
    assert metric_of(printed) == metric


def test_names_of_other_metrics_are_no_entry():
    for name in ("tma_mem_bandwidth", "tma_info_memory_l2mpki", "Mispredicts", "memory_bound"):
        assert metric_of(name) is None


def test_every_entry_has_a_metric_row_and_the_rows_are_the_view():
    assert set(BOTTLENECKS.values()) == set(BOTTLENECK_VIEW)
    for name in BOTTLENECK_VIEW:
        assert METRICS[name].inputs[0].startswith("tma_bottleneck_")


# -- reading, every layout ----------------------------------------------------------------


def test_perf_prints_the_view_without_a_percent_sign_and_it_is_still_a_percentage():
    text = (
        " Performance counter stats for './infer':\n\n"
        "     9,000,000,000      TOPDOWN.SLOTS                    #     32.7  "
        "tma_bottleneck_mispredictions\n"
        "                                                  #     12.0  "
        "tma_info_bottleneck_cache_memory_bandwidth\n"
        "                                                  #      5.1  Memory_Latency\n"
        "\n       2.000000000 seconds time elapsed\n"
    )
    stat = parse(text)
    assert stat.perf_metrics["bottleneck_mispredictions"] == pytest.approx(0.327)
    assert stat.perf_metrics["bottleneck_memory_bandwidth"] == pytest.approx(0.120)
    assert stat.perf_metrics["bottleneck_memory_latency"] == pytest.approx(0.051)


def test_perf_json_and_csv_lines_carry_the_view():
    line = {
        "counter-value": "9000000000.000000",
        "unit": "",
        "event": "TOPDOWN.SLOTS",
        "event-runtime": 1000,
        "pcnt-running": 100.00,
        "metric-value": "21.500000",
        "metric-unit": "tma_bottleneck_memory_data_tlbs",
    }
    assert parse(json.dumps(line)).perf_metrics["bottleneck_data_tlbs"] == pytest.approx(0.215)
    csv = "9000000000,,TOPDOWN.SLOTS,1000,100.00,44.0,tma_info_bottleneck_compute_bound_est\n"
    assert parse(csv).perf_metrics["bottleneck_compute"] == pytest.approx(0.44)


TOPLEV = """# 4.7-full-perf on Intel(R) Xeon(R) Platinum 8480+ [spr]
FE             Frontend_Bound                      % Slots                   30.4
BAD            Bad_Speculation                     % Slots                   27.0
BE             Backend_Bound                       % Slots                   12.2 <
RET            Retiring                            % Slots                   30.4
Info.Bottleneck Mispredictions                     Scaled_Slots              32.70  <==
Info.Bottleneck Big_Code                           Scaled_Slots               3.10
Info.Bottleneck Instruction_Fetch_BW               Scaled_Slots               9.90
Info.Bottleneck Useful_Work                        Scaled_Slots              28.00
Info.Bottleneck Other_Bottlenecks                  Scaled_Slots              26.30
"""


def test_toplev_prints_the_view_in_its_info_bottleneck_area_and_later_bottleneck():
    run = toplev.read(TOPLEV)
    assert run.metrics["bottleneck_mispredictions"] == pytest.approx(0.327)
    assert run.metrics["bottleneck_other"] == pytest.approx(0.263)
    tma5 = toplev.read(TOPLEV.replace("Info.Bottleneck", "Bottleneck     "))
    assert tma5.metrics == run.metrics
    # a hybrid part's E-core lines are listed, not read
    atom = toplev.read("atom     Bottleneck  Mispredictions   Scaled_Slots   40.0\n")
    assert "bottleneck_mispredictions" not in atom.metrics
    assert atom.e_core == {"Mispredictions": 40.0}


def test_toplev_csv_names_the_entry_in_its_area_column():
    text = "Area,Value,Unit,Description,Sample,Stddev,Multiplex,Bottleneck,Idle\n"
    text += "Mispredictions,32.70,Scaled_Slots,,,0.0,100.0,<==,\n"
    text += "Frontend_Bound,30.4,% Slots,,,0.0,100.0,,\n"
    run = toplev.read(text)
    assert run.metrics["bottleneck_mispredictions"] == pytest.approx(0.327)
    assert run.metrics["frontend_bound"] == pytest.approx(0.304)


@settings(max_examples=80, deadline=None)
@given(
    entry=st.sampled_from(sorted(BOTTLENECKS)),
    prefix=st.sampled_from(["", "tma_info_", "tma_info_bottleneck_", "tma_bottleneck_"]),
    hundredths=st.integers(min_value=0, max_value=10_000),
    percent=st.booleans(),
    layout=st.sampled_from(["shadow", "metric-only", "csv"]),
)
def test_property_any_printed_entry_reads_as_its_share_of_the_slots(
    entry, prefix, hundredths, percent, layout
):
    value = hundredths / 100
    name, sign = f"{prefix}{entry}", " %" if percent else ""
    if layout == "shadow":
        text = f"     1,000,000      cycles     #   {value:6.2f}{sign}  {name}\n"
    elif layout == "metric-only":
        text = f"   {value:6.2f}{sign}  {name}   (20.00%)\n     1,000,000      cycles\n"
    else:
        text = f"1000000,,cycles,1000,100.00,{value:.2f},{sign.strip()}  {name}\n"
    assert parse(text).perf_metrics[BOTTLENECKS[entry]] == pytest.approx(value / 100)


# -- judging and ranking ------------------------------------------------------------------


def test_the_view_moves_the_front_ends_resteers_to_the_misprediction():
    # Level 1 alone: the front end's 30% of the slots crosses TMA's 0.2 and the
    # mispredicted branches' 27% of bad speculation too. Intel's view charges the front
    # end's resteers after a misprediction to the misprediction (32.7%), leaving the
    # front end 13% of its own: the misprediction ranks first, with Intel's total as its
    # share.
    metrics = toplev.read(TOPLEV).metrics
    found = diagnose(metrics, core="sapphirerapids")
    assert found.primary.category == "branch_misprediction"
    assert found.primary.share.share == pytest.approx(0.327)
    assert "Intel's bottleneck view" in found.primary.share.text
    assert any(e.metric == "bottleneck_mispredictions" for e in found.primary.evidence)
    front = next(f for f in found.findings if f.category == "frontend_bound")
    assert front.share.share == pytest.approx(0.031 + 0.099)


def _view(**entries: float) -> dict[str, float]:
    """A level 1 with nothing past its threshold, and the view's entries."""
    base = {"retiring": 0.45, "bad_speculation": 0.05, "frontend_bound": 0.10}
    return {**base, "backend_bound": 0.40, **{f"bottleneck_{k}": v for k, v in entries.items()}}


@pytest.mark.parametrize(
    ("entry", "value", "category"),
    [
        ("memory_bandwidth", 0.31, "l2_llc_residency"),
        ("memory_latency", 0.25, "l2_llc_residency"),
        ("memory_sync", 0.12, "l2_llc_residency"),
        ("data_tlbs", 0.22, "tlb_churn"),
        ("compute", 0.35, "backend_bound"),
        ("big_code", 0.24, "frontend_bound"),
        ("mispredictions", 0.21, "branch_misprediction"),
    ],
)
def test_an_entry_past_intels_threshold_names_its_category(entry, value, category):
    found = diagnose(_view(**{entry: value}), core="sapphirerapids")
    named = next(f for f in found.findings if f.category == category)
    assert any(e.metric == f"bottleneck_{entry}" for e in named.evidence)
    assert named.share.share == pytest.approx(value)


def test_an_entry_under_its_threshold_names_nothing():
    found = diagnose(_view(memory_bandwidth=0.15, memory_sync=0.05), core="sapphirerapids")
    assert "l2_llc_residency" not in [f.category for f in found.findings]


def test_memory_entries_choose_the_advice():
    bandwidth = diagnose(_view(memory_bandwidth=0.40), core="sapphirerapids")
    recs = bandwidth.primary.recommendations
    assert bandwidth.primary.category == "l2_llc_residency"
    assert any(r.startswith("DRAM bandwidth is the limit") for r in recs)
    sync = diagnose(_view(memory_sync=0.30), core="sapphirerapids")
    assert any(r.startswith("Cache lines move between cores") for r in sync.primary.recommendations)


def test_useful_work_is_judged_on_retirings_own_threshold():
    # a quarter of the slots retiring useful work is no bottleneck (the view's generic 20
    # would say it is); three quarters is the core at its width
    quarter = diagnose(_view(useful_work=0.25), core="sapphirerapids")
    assert not any(
        e.metric == "bottleneck_useful_work" for f in quarter.findings for e in f.evidence
    )
    busy = {"retiring": 0.80, "bad_speculation": 0.02, "frontend_bound": 0.08}
    found = diagnose(
        {**busy, "backend_bound": 0.10, "bottleneck_useful_work": 0.76}, core="sapphirerapids"
    )
    assert found.primary.category == "retiring"
    assert found.primary.share.share == pytest.approx(0.76)
