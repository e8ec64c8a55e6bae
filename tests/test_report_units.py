"""Each renderer reads the Assessment it is given: unit tests with values, in-process.

An Assessment whose metrics or diagnosis were set by hand shows exactly those in the
terminal text, the Markdown summary, the HTML page and the run page: nothing is
computed or diagnosed again on the way.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_assessment import make

from pytest_inferperf.core.numbers import number, reading
from pytest_inferperf.diagnose.assessment import assess, assess_profile
from pytest_inferperf.diagnose.classify import Diagnosis, EstimatedCost, Evidence, Finding
from pytest_inferperf.judge.budgets import PerfSpec
from pytest_inferperf.report import headline, html, markdown, terminal, text
from pytest_inferperf.report.verdict import record_of

PLANTED = Diagnosis(
    primary=Finding(
        "l1d_bound",
        "Planted: L1D misses",
        0.61,
        (Evidence("l1d_mpki", 31.5, 20.0, ">", "planted source"),),
        ("planted advice",),
    ),
    core="planted-core",
)


def _planted() -> object:
    a = assess_profile(make(2.0))
    return replace(a, metrics={**a.metrics, "ipc": 9.876}, diagnosis=PLANTED)


# -- the one number formatter -------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "digits", "written"),
    [
        (None, 4, "-"),
        (0.45678, 4, "0.4568"),
        (7.3714, 4, "7.371"),
        (9999.0, 4, "9999"),
        (83806681.0, 4, "83,806,681"),
        (1234.4, 3, "1,234"),
        (999.4, 3, "999"),
        (0.123456, 3, "0.123"),
        (math.inf, 4, "inf"),
        (-math.inf, 3, "-inf"),
        (math.nan, 4, "nan"),
    ],
)
def test_number_writes_each_value_as_a_reader_scans_it(value, digits, written):
    assert number(value, digits) == written


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e15, max_value=1e15))
def test_number_never_writes_an_exponent_from_its_digits_up(value):
    out = number(value)
    if abs(value) >= 1e4:
        assert "e" not in out and float(out.replace(",", "")) == pytest.approx(value, abs=0.5)
    else:
        assert float(out) == pytest.approx(value, rel=1e-3, abs=1e-300)


@pytest.mark.parametrize(
    ("value", "written"),
    [
        (14.5612, "14.56"),
        (0.1434, "0.143"),
        (205.3, "205"),
        (1.6, "1.6"),
        (0.0, "0.0"),
        (0.0012156, "0.00122"),  # a 1 µs call in ms: three digits, not "0.001"
        (0.0000123, "0.0000123"),
        (-0.0451, "-0.0451"),
    ],
)
def test_reading_is_the_sentence_form(value, written):
    assert reading(value) == written


@given(st.floats(min_value=1e-9, max_value=0.999, allow_nan=False))
def test_reading_keeps_three_significant_digits_below_one(value):
    # two values 1% apart never read the same ("0.001 -> 0.001 ms, +21%")
    out = reading(value)
    assert "e" not in out
    assert float(out) == pytest.approx(value, rel=5e-3)


# -- the one headline list ------------------------------------------------------------------
def test_every_view_reads_the_one_headline_list():
    assert terminal.COLUMNS == (
        ("latency_p50_ms", "p50 ms", 1.0),
        ("latency_p99_ms", "p99 ms", 1.0),
        ("cpu_ms_per_call", "CPU ms/call", 1.0),
        ("ipc", "IPC", 1.0),
        ("l1_miss", "L1D miss", 1.0),
        ("rss_growth_mb", "+RSS MiB", 1.0),
    )
    assert terminal.OPTIONAL_COLUMNS == (("instructions_per_call", "M instr/call", 1e-6),)
    assert markdown.KEY_METRICS == (
        "latency_p50_ms",
        "latency_p99_ms",
        "latency_mean_ms",
        "cpu_ms_per_call",
        "ipc",
        "l1_miss",
        "rss_growth_mb",
        "peak_rss_mb",
    )
    assert set(headline.names("mover")) == {
        "ipc",
        "instructions_per_call",
        "cpu_ms_per_call",
        "latency_mean_ms",
        "l1_miss",
        "l2_miss",
        "branch_miss",
    }
    assert {h.metric for h in headline.HEADLINE} >= set(headline.names("update"))


# -- renderers read the Assessment ------------------------------------------------------------
def test_the_terminal_report_shows_the_assessments_metrics_and_diagnosis():
    out = text.render_profile(_planted())
    (ipc,) = [line for line in out.splitlines() if line.startswith("ipc ")]
    assert ipc.split()[1] == "9.876"
    assert "Diagnosis (planted-core): Planted: L1D misses [l1d_bound], confidence 0.61" in out
    assert "  evidence: l1d_mpki = 31.5 > 20 (planted source)" in out


def test_the_markdown_summary_shows_the_assessments_metrics_and_diagnosis():
    out = markdown.render_profile(_planted())
    assert "| ipc | 9.876 |  |" in out
    assert "**Diagnosis**: Planted: L1D misses (confidence 0.61)" in out


def test_the_html_page_shows_the_assessments_metrics_and_diagnosis():
    page = html.render_html(_planted(), title="t")
    assert "9.876" in page
    assert "Planted: L1D misses" in page and "planted advice" in page
    assert "l1d_mpki = 31.5 &gt; 20" in page


def test_the_html_page_shows_what_is_present_but_small_with_its_cost():
    small = Finding(
        "page_faults",
        "Planted: page faults",
        0.5,
        (Evidence("page_faults_per_call", 12.0, 10.0, ">", "planted source"),),
        cost=EstimatedCost("page_faults_per_call", 12 * 10e-6 / 0.280, "12 x <=10 µs / 280 ms"),
    )
    a = replace(_planted(), diagnosis=replace(PLANTED, small=(small,)))
    page = html.render_html(a, title="t")
    assert "Present but small" in page
    assert "Planted: page faults [page_faults]" in page
    assert "up to 0.043% of the call: 12 x &lt;=10 µs / 280 ms" in page
    assert "page_faults_per_call = 12 &gt; 10" in page


def test_the_run_page_shows_the_workers_diagnosis_not_a_new_one():
    a = assess("t::x", make(2.0), PerfSpec(), baseline=None, baseline_note="no baseline")
    record = {**record_of(replace(a, diagnosis=PLANTED)), "outcome": "passed", "failure": None}
    back = html.assessment_of_record(record)
    assert back.diagnosis.findings == PLANTED.findings
    assert back.metrics == record["metrics"]
    page = html.render_run_html([record], title="run")
    assert "Planted: L1D misses" in page and "planted advice" in page


def test_a_record_without_the_diagnosis_detail_shows_no_diagnosis():
    a = assess_profile(make(2.0))
    record = {**record_of(a), "outcome": "passed", "failure": None}
    del record["diagnosis_detail"]  # written before the field existed
    assert html.assessment_of_record(record).diagnosis is None
    assert "No diagnosis." in html.render_run_html([record], title="run")


def test_the_terminal_table_cell_uses_three_digits():
    record = {**record_of(_planted()), "outcome": "passed"}
    (row,) = terminal.summary_rows([record])
    assert row[terminal.columns([record]).index(("ipc", "IPC", 1.0)) + 1] == "9.88"


def test_the_update_line_lists_the_headline_moves_in_order():
    old = {"ipc": 1.0, "latency_p50_ms": 2.0, "peak_rss_mb": 50.0, "l2_miss": 0.1}
    new = {"ipc": 1.25, "latency_p50_ms": 1.5, "peak_rss_mb": 51.0, "l2_miss": 0.2}
    # every metric a later run is judged on, on the line under the path: the headline ones
    # in the table's order, the new value alone where the replaced file had none
    assert terminal.update_line("b.json", None, new) == (
        "created b.json\n    latency_p50_ms 1.5, ipc 1.25, l2_miss 0.2, peak_rss_mb 51"
    )
    assert terminal.update_line("b.json", old, new) == (
        "updated b.json\n"
        "    latency_p50_ms 2 -> 1.5, ipc 1 -> 1.25, l2_miss 0.1 -> 0.2, peak_rss_mb 50 -> 51"
    )
    assert terminal.update_line("b.json", {}, {}) == "updated b.json"
