"""The plugin's output fits the terminal, or a CI log, through real pytest runs: the
results table, failure blocks and every other line of the inferperf section at 80, 100
and 120 columns; at most 120 without a terminal; the update summary's metric lines."""

from __future__ import annotations

import re

import pytest

from pytest_inferperf.report.terminal import LOG_WIDTH

pytest_plugins = ["pytester"]

WORKLOADS = """
import hashlib

DATA = b"x" * (1 << 16)

def hashing(rounds=20):
    for _ in range(rounds):
        hashlib.sha256(DATA).digest()
"""

# A realistic suite: long parametrised ids, a named variant, region() stages, a budget
# that fails with the diagnosis under it, and tests that pass.
SUITE = """
import pytest
from pytest_inferperf import region
from workloads import hashing

def staged(n):
    with region("preprocess"):
        hashing(n)
    with region("infer"):
        hashing(2 * n)

@pytest.mark.perf(warmup=1, repeat=5, tolerance=0.5)
@pytest.mark.parametrize("batch_size_and_sequence_length", ["1x128", "8x512"])
def test_encoder_latency_with_a_long_descriptive_name(pmu_profile, batch_size_and_sequence_length):
    pmu_profile(hashing, 10)
    pmu_profile(staged, 5, name="with_preprocessing_stages")

@pytest.mark.perf(warmup=1, repeat=5, latency_p50_ms_max=0.0001, cpu_ms_per_call_max=0.0001)
def test_impossible_budget(pmu_profile):
    pmu_profile(hashing)
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(workloads=WORKLOADS, test_suite=SUITE)
    return pytester


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "--inferperf-flamegraphs=none",
        "--inferperf-baseline-processes=1",
        "--inferperf-processes=0",
        *args,
    )


def ours(output: str) -> list[str]:
    """The lines the plugin wrote: the failure blocks and the inferperf section, without
    pytest's own separator lines (those are pytest's width already)."""
    body = output.split("= FAILURES =", 1)[-1].split("short test summary info")[0]
    if "= inferperf =" not in body:
        body += output.split("= inferperf =", 1)[1]
    return [line for line in body.splitlines() if not line.startswith(("==", "__"))]


@pytest.mark.parametrize("width", [80, 100, 120])
def test_no_line_is_wider_than_the_terminal(suite, monkeypatch, width):
    monkeypatch.setenv("COLUMNS", str(width))  # pytest's width without a terminal
    result = run(suite, "--inferperf")
    result.assert_outcomes(passed=2, failed=1)
    lines = ours(result.stdout.str())
    assert any(line.startswith("test ") for line in lines)  # the table is there
    assert any("budget   latency_p50_ms" in line for line in lines)  # so is the failure
    too_wide = [line for line in lines if len(line) > width]
    assert too_wide == []
    # every row of the table is there, whatever its layout
    text = "\n".join(lines)
    for key in ("[1x128]", "[8x512]", "test_impossible_budget"):
        assert key in text.replace("\n", "")


def test_without_a_terminal_a_wide_columns_is_capped_at_the_log_width(suite, monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")
    result = run(suite, "--inferperf")
    lines = ours(result.stdout.str())
    assert max(len(line) for line in lines) <= LOG_WIDTH


def test_a_wide_enough_terminal_keeps_the_whole_table(suite, monkeypatch):
    """Nothing is moved or shortened where everything fits (here: 300 columns given to
    a writer that says it is a terminal)."""
    suite.makeconftest(
        """
        import pytest

        @pytest.hookimpl(trylast=True)
        def pytest_configure(config):
            reporter = config.pluginmanager.get_plugin("terminalreporter")
            reporter.isatty = type(reporter.isatty)(True)  # pytest's callable bool
            config.get_terminal_writer().fullwidth = 300
        """
    )
    result = run(suite, "--inferperf")
    header = next(line for line in result.stdout.lines if line.startswith("test "))
    assert "vs baseline" in header and "diagnosis" in header and "p50 ms" in header
    assert not any(line.startswith("Columns: ") for line in result.stdout.lines)


def test_the_update_summary_lists_every_gated_metric_and_memory_growth(suite, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    suite.makepyfile(
        test_suite=SUITE.replace("latency_p50_ms_max=0.0001, ", "").replace(
            "cpu_ms_per_call_max=0.0001", "tolerance=0.5"
        )
    )
    result = run(suite, "--inferperf-update-baselines")
    result.assert_outcomes(passed=3)
    lines = result.stdout.lines
    heads = [i for i, line in enumerate(lines) if line.startswith("created baselines/")]
    assert len(heads) == 5  # 2 x 2 profiles, and the third test
    listed = {lines[i]: metric_lines(lines, i) for i in heads}
    for head, metrics in listed.items():
        assert metrics.startswith("latency_p50_ms ")
        # the defaults that gate (CPU time, mean latency), memory growth and peak
        for name in ("cpu_ms_per_call", "latency_mean_ms", "rss_growth_mb", "peak_rss_mb"):
            assert re.search(rf"\b{name} [\d.]+(,|$)", metrics), (head, name)
    staged = next(m for head, m in listed.items() if "@with_preprocessing_stages" in head)
    assert re.search(r"stage infer [\d.]+, stage preprocess [\d.]+$", staged)
    again = run(suite, "--inferperf-update-baselines").stdout.lines
    updated = [
        metric_lines(again, i) for i, line in enumerate(again) if line.startswith("updated ")
    ]
    assert len(updated) == 5
    for metrics in updated:
        assert re.search(r"\bcpu_ms_per_call [\d.]+ -> [\d.]+", metrics)
        assert re.search(r"\brss_growth_mb [\d.e+-]+ -> [\d.e+-]+", metrics)
    assert sum("stage infer " in m and " -> " in m.split("stage infer ")[1] for m in updated) == 2


def metric_lines(lines: list[str], head: int) -> str:
    """The metric line(s) under a "created/updated <path>" line, joined as one text."""
    out = []
    for line in lines[head + 1 :]:
        if not line.startswith("    "):
            break
        assert len(line) <= 100
        out.append(line.strip())
    return " ".join(out)
