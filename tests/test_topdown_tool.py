"""Arm topdown-tool output -> runs of metrics, and ``inferperf explain`` on it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pytest_inferperf.cli.main import main
from pytest_inferperf.ingest.perf_stat import PerfStatError, parse_report
from pytest_inferperf.ingest.topdown_tool import TITLES, looks_like_topdown_tool, read_runs

CORPUS = Path(__file__).parent / "fixtures" / "perfstat" / "corpus"
LEVEL1 = CORPUS / "perfbook_ai_benchmark_topdown_l1_graviton3.txt"
BACKEND = CORPUS / "perfbook_ai_benchmark_backendbound_graviton3.txt"
V3 = CORPUS / "arm_lp_divchain_v3_topdown_tool.txt"

BOX = """\
Run 1
Running 1000000000 dependent FP64 divisions...
CPU Neoverse V2 metrics
└── Stage 2 (uarch metrics)
    └── Cycle Accounting (Cycle_Accounting)
        └── ┏━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━┳━━━━━━┓
            ┃ Metric                  ┃ Value ┃ Unit ┃
            ┡━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━╇━━━━━━┩
            │ Backend Stalled Cycles  │ {backend} │ %    │
            │ Frontend Stalled Cycles │ nan   │ %    │
            └─────────────────────────┴───────┴──────┘
"""


def test_the_dotted_layout_gives_fractions_of_slots_under_our_names():
    (run,) = parse_report(LEVEL1.read_text()).runs
    assert run.format == "topdown-tool" and run.counts == {} and run.arch == "arm"
    assert run.perf_metrics == pytest.approx(
        {
            "frontend_bound": 0.1648,
            "backend_bound": 0.5492,
            "retiring": 0.2799,
            "bad_speculation": 0.0059,
        }
    )
    assert run.title.startswith("topdown-tool --all-cpus -m Topdown_L1")


def test_ratios_and_mpki_stay_as_printed_and_titles_without_a_metric_are_kept():
    (run,) = parse_report(BACKEND.read_text()).runs
    metrics = run.metrics()
    assert metrics["l1d_mpki"] == 13.114 and metrics["llc_miss"] == 0.219
    assert metrics["dtlb_mpki"] == 0.413 and metrics["l1d_tlb_mpki"] == 3.779
    assert metrics["backend_bound"] == pytest.approx(0.547)
    assert "Advanced SIMD Operations Percentage (10.93)" in run.unmapped
    assert "L2 Unified TLB MPKI (0.407)" in run.unmapped


def test_two_runs_pasted_together_are_kept_apart_and_their_metrics_combined():
    report = parse_report(LEVEL1.read_text() + "\n" + BACKEND.read_text())
    assert len(report.runs) == 2
    # backend_bound is in both: the median of the two runs, never a sum
    assert report.metrics()["backend_bound"] == pytest.approx((0.5492 + 0.547) / 2)
    assert report.metrics()["l1d_mpki"] == 13.114  # only in the second run


def test_a_stage_1_header_or_a_repeated_title_starts_the_next_run_without_a_prompt():
    bare = "".join(LEVEL1.read_text().splitlines(keepends=True)[1:])  # no "$" line
    assert len(parse_report(bare + bare).runs) == 2
    rows = [ln for ln in bare.splitlines() if ln.startswith("Backend")]
    two = "Stage 1 (Topdown metrics)\n" + "\n".join(rows * 2) + "\n"
    assert [r.perf_metrics for r in parse_report(two).runs] == [
        {"backend_bound": pytest.approx(0.5492)}
    ] * 2


def test_the_box_layout_names_the_core_and_skips_values_that_are_not_numbers():
    report = parse_report(BOX.format(backend="91.85"))
    (run,) = report.runs
    assert run.perf_metrics == {"backend_stalled": pytest.approx(0.9185)}
    assert "frontend_stalled" not in run.metrics()  # "nan" is no value, not a 0
    assert report.core_hint == "neoverse-v2"


def test_three_box_runs_of_one_program_are_read_with_the_programs_output_ignored():
    report = parse_report(V3.read_text())
    assert [r.title.split(" -m ")[1].split()[0] for r in report.runs] == [
        "General",
        "Cycle_Accounting",
        "Operation_Mix",
    ]
    assert report.metrics() == pytest.approx(
        {"ipc": 0.474, "backend_stalled": 0.9185, "frontend_stalled": 0.0001}
    )
    assert not any("Running" in u for u in report.unmapped)


def test_topdown_tool_output_without_a_metric_is_refused_by_name():
    with pytest.raises(PerfStatError, match="topdown-tool output without a single metric"):
        parse_report("Stage 1 (Topdown metrics)\n=========================\n")


def test_explain_reads_the_tool_and_takes_the_core_from_the_file(capsys):
    assert main(["explain", str(V3), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["format"] == "topdown-tool" and data["core"] == "neoverse-v3"
    assert data["core_from"] == "file" and len(data["runs"]) == 3
    assert data["runs"][1]["perf_metrics"] == {
        "backend_stalled": pytest.approx(0.9185),
        "frontend_stalled": pytest.approx(0.0001),
    }
    assert data["diagnosis"]["primary"]["category"] == "backend_bound"
    assert main(["explain", str(V3)]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"{V3} (topdown-tool, 3 runs kept apart")
    assert "backend_stalled   0.918" in text


def test_plain_perf_stat_output_is_not_taken_for_the_tool():
    for path in sorted(CORPUS.glob("*.txt")):
        if "topdown_tool" in path.name or "perfbook_ai_benchmark" in path.name:
            continue
        assert not looks_like_topdown_tool(path.read_text().splitlines()), path.name


_TITLE = st.sampled_from(sorted(TITLES))
_VALUE = st.decimals(min_value=0, max_value=10_000, places=3, allow_nan=False)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(_TITLE, _VALUE, st.booleans()), min_size=1, max_size=8, unique_by=lambda t: t[0]
    )
)
def test_dotted_rows_read_back_the_value_printed(rows):
    lines = ["Stage 2 (uarch metrics)", "=" * 23, "  [Group]"]
    for title, value, percent in rows:
        unit = "% slots" if percent else "per cycle"
        lines.append(f"  {title.title():.<36} {value}{unit if percent else ' ' + unit}")
    (run,) = read_runs("\n".join(lines))
    for title, value, percent in rows:
        want = float(value) / 100 if percent else float(value)
        assert run.metrics[TITLES[title]] == pytest.approx(want), title


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list("Stage 1(Topdown metrics)[]│┃.%$# \n0123456789abRun")))
)
@example("Stage 1 (Topdown metrics)\nRun 1\n│ a │ 1 │ % │\n$ x\nBackend Bound. 5e3")
def test_any_text_reads_without_raising(text):
    for run in read_runs(text):
        assert run.seen and all(isinstance(v, float) for v in run.metrics.values())


# -- the tool's own documented examples (fixtures/perfstat/README.md) ----------------------

DOCS = Path(__file__).parent / "fixtures" / "perfstat" / "topdown_tool"


@pytest.mark.parametrize(
    ("name", "metrics"),
    [
        (
            "v2_default_stages.txt",
            {
                "backend_bound": 0.3907,
                "bad_speculation": 0.0863,
                "frontend_bound": 0.1242,
                "retiring": 0.4001,
                "backend_stalled": 0.3608,
                "frontend_stalled": 0.0354,
            },
        ),
        # -C: the aggregate column, not one core's
        (
            "v2_per_core.txt",
            {
                "backend_bound": 0.7328,
                "bad_speculation": 0.0097,
                "frontend_bound": 0.1745,
                "retiring": 0.0875,
            },
        ),
        # -s combined: the node's value sits in a table of its own under its title
        ("v2_combined.txt", {"frontend_bound": 0.1209, "branch_miss": 0.011, "branch_mpki": 1.821}),
        ("metrics_interval.csv", {"retiring": 0.1702, "frontend_bound": 0.3711}),
    ],
)
def test_the_tools_documented_layouts_read_as_printed(name, metrics):
    report = parse_report((DOCS / name).read_text())
    assert report.format == "topdown-tool" and len(report.runs) == 1
    assert report.metrics() == pytest.approx(metrics)
    assert report.unmapped == ()
    # the CSV names no core; topdown-tool reads Arm PMUs only, so it is an AArch64 core
    assert report.core_hint == ("aarch64" if name.endswith(".csv") else "neoverse-v2")


def test_interval_rows_of_the_csv_are_averaged_within_the_run():
    text = (DOCS / "metrics_interval.csv").read_text() + "0.20,Topdown_L1,1,1,Retiring,19.00,%\n"
    (run,) = parse_report(text).runs
    assert run.perf_metrics["retiring"] == pytest.approx((0.1702 + 0.19) / 2)


# Rows quoted with emphasis marks, as Arm's BOLT learning path marks the rows its text
# discusses (the tool itself prints none); the numbers here are made up.
MARKED = """\
topdown-tool ./out/app
  CPU Neoverse V1 metrics
  ├── Stage 1 (Topdown metrics)
  │   └── Topdown Level 1 (Topdown_L1)
  │       └── ┏━━━━━━━━━━━━━━━━━┳━━━━━━━┳━━━━━━┓
  │           ┃ Metric          ┃ Value ┃ Unit ┃
  │           ┡━━━━━━━━━━━━━━━━━╇━━━━━━━╇━━━━━━┩
  │           │ Backend Bound   │ 12.50 │ %    │
  │           │ Bad Speculation │ 10.25 │ %    │
  │         » │ Frontend Bound  │ 61.00 │ %    │ «
  │           │ Retiring        │ 16.25 │ %    │
  │           └─────────────────┴───────┴──────┘
  └── Stage 2 (uarch metrics)
      ├── Misses Per Kilo Instructions (MPKI)
      │   └── ┏━━━━━━━━━━━━━━━━┳━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┓
      │       ┃ Metric         ┃ Value  ┃ Unit                          ┃
      │       ┡━━━━━━━━━━━━━━━━╇━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┩
      │       │ Branch MPKI    │ 4.250  │ misses per 1,000 instructions │
      │     »│ L1I Cache MPKI │ 47.125 │ misses per 1,000 instructions │«
      │       └────────────────┴────────┴───────────────────────────────┘
"""


def test_rows_marked_with_guillemets_are_read_like_any_other():
    (run,) = read_runs(MARKED)
    assert run.cpu == "Neoverse V1"
    assert run.metrics == pytest.approx(
        {
            "backend_bound": 0.125,
            "bad_speculation": 0.1025,
            "frontend_bound": 0.61,
            "retiring": 0.1625,
            "branch_mpki": 4.25,
            "l1i_mpki": 47.125,
        }
    )
    assert run.unmapped == {}


def test_marked_rows_decide_the_diagnosis(capsys, tmp_path):
    path = tmp_path / "marked.txt"
    path.write_text(MARKED, encoding="utf-8")
    assert main(["explain", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    primary = data["diagnosis"]["primary"]
    assert primary["category"] == "frontend_bound"
    assert primary["share"]["share"] == pytest.approx(0.61)


def test_a_dotted_row_with_marks_is_read():
    text = "Stage 1 (Topdown metrics)\n[Topdown Level 1]\n» Frontend Bound...... 33.50% slots «\n"
    (run,) = read_runs(text)
    assert run.metrics == {"frontend_bound": pytest.approx(0.335)}
