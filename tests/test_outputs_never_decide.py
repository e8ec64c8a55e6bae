"""Report and flamegraph output never decides a test or a baseline.

An output folder that cannot be written (a file in its place, a symbolic-link loop,
a read-only folder) is one clear line per problem in the summary, never a traceback
out of a hook, never a test failure and never a replaced budget-failure message;
baselines are written first, whatever happens to the reports after them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from profile_paths import baseline_files

pytest_plugins = ["pytester"]

TESTS = """
import pytest
@pytest.mark.perf(warmup=1, repeat=3, tolerance=0.5)
def test_ok(pmu_profile):
    pmu_profile(lambda: sum(range(1000)))
"""

OVER_BUDGET = """
import pytest
@pytest.mark.perf(warmup=1, repeat=3, latency_p50_ms_max=0.0000001)
def test_over(pmu_profile):
    pmu_profile(lambda: sum(range(1000)))
"""


def _run(pytester, *args):
    return pytester.runpytest("-p", "no:cacheprovider", "--inferperf", *args)


def _baselines(pytester) -> list[Path]:
    return sorted(baseline_files(Path(pytester.path, "baselines")))


@pytest.mark.parametrize("blocker", ["file", "symlink-loop"])
def test_unwritable_report_folder_keeps_the_baselines_and_says_so_once(pytester, blocker):
    pytester.makepyfile(test_a=TESTS)
    target = Path(pytester.path, "out")
    if blocker == "file":
        target.write_text("a file, not a folder")
    else:
        os.symlink("out", target)  # out -> out: ELOOP
    result = _run(pytester, "--update-baselines", "--inferperf-report", "out")
    text = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in text and "INTERNALERROR" not in text
    result.assert_outcomes(passed=1)
    (baseline,) = _baselines(pytester)
    assert json.loads(baseline.read_text())["schema"] == "pytest-inferperf/profile"
    result.stdout.fnmatch_lines(
        ["created baselines/*test_ok.json", "ERROR --inferperf-report out: cannot write *"]
    )
    assert text.count("ERROR --inferperf-report") == 1  # one line per problem
    assert result.ret == 1  # the user asked for that output


def test_unmakeable_default_flamegraph_folder_fails_no_test_and_no_baseline(pytester):
    pytester.makepyfile(test_a=TESTS)
    Path(pytester.path, "inferperf-report").write_text("a file where the folder would go")
    result = _run(pytester, "--update-baselines")
    text = result.stdout.str()
    assert "NotADirectoryError" not in text and "Traceback" not in text
    result.assert_outcomes(passed=1)
    assert len(_baselines(pytester)) == 1
    # recording samples no stacks by default, so nothing needed the folder
    assert "flamegraphs not written" not in text
    assert result.ret == 0


def test_a_budget_failure_keeps_its_own_message_when_flamegraphs_cannot_be_written(pytester):
    pytester.makepyfile(test_a=OVER_BUDGET)
    Path(pytester.path, "inferperf-report").write_text("a file where the folder would go")
    result = _run(pytester)
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "NotADirectoryError" not in text
    result.stdout.fnmatch_lines(["*latency_p50_ms*"])
    assert "budget" in text.lower()


def test_explicitly_asked_flamegraphs_that_cannot_be_written_fail_the_run(pytester):
    pytester.makepyfile(test_a=TESTS)
    Path(pytester.path, "graphs").write_text("a file")
    result = _run(pytester, "--inferperf-flamegraphs", "all", "--inferperf-report", "graphs")
    result.assert_outcomes(passed=1)
    assert "Traceback" not in result.stdout.str()
    assert result.ret == 1
    result.stdout.fnmatch_lines(["ERROR flamegraphs not written: cannot create the folder *"])


def test_unwritable_run_json_and_html_are_one_line_each(pytester):
    pytester.makepyfile(test_a=TESTS)
    Path(pytester.path, "blocked").write_text("a file")
    result = _run(
        pytester, "--inferperf-json", "blocked/run.json", "--inferperf-html", "blocked/run.html"
    )
    result.assert_outcomes(passed=1)
    text = result.stdout.str()
    assert "Traceback" not in text and "INTERNALERROR" not in text
    result.stdout.fnmatch_lines(
        [
            "ERROR --inferperf-json blocked/run.json: cannot write *",
            "ERROR --inferperf-html blocked/run.html: cannot write *",
        ]
    )
    assert result.ret == 1
