"""``--inferperf-require-baseline``: a profiled test without a baseline for its machine
class and backend fails (a CI runner of a new class), through real pytest runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from plugin_output import table_row

from pytest_inferperf.judge.baseline_store import class_folder
from pytest_inferperf.measure.machine import this_cpu

pytest_plugins = ["pytester"]

TEST = """
import pytest
from pytest_inferperf import region

def work(n=2000):
    with region("sum"):
        return sum(i * i for i in range(n))

@pytest.mark.perf(warmup=1, repeat=5, tolerance=0.5)
def test_work(pmu_profile):
    pmu_profile(work)
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_a=TEST)
    return pytester


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """The none backend (timing and memory: the same on every machine), no flamegraph
    pass and one process per baseline: these tests check which outcome, not counts."""
    return pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "--inferperf-backend=none",
        "--inferperf-flamegraphs=none",
        "--inferperf-baseline-processes=1",
        *args,
    )


def expected_path() -> str:
    return f"baselines/{class_folder(this_cpu().machine_class, 'none')}/test_a.py/test_work.json"


def test_without_the_option_a_missing_baseline_passes_and_says_so(suite):
    result = run(suite, "--inferperf")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*no baseline for *+none*"])
    assert "require-baseline" not in result.stdout.str()


def test_with_the_option_a_missing_baseline_fails_naming_the_file_class_and_fix(suite):
    machine_class = this_cpu().machine_class
    result = run(suite, "--inferperf", "--inferperf-require-baseline", "-p", "no:randomly")
    result.assert_outcomes(failed=1)
    failure = result.stdout.str().split(" test_work _")[1].split("\n", 1)[1].split("=====")[0]
    paragraph = " ".join(failure.split())  # wrapped to the terminal's width
    assert paragraph.startswith(
        f"inferperf: test_a.py::test_work has no baseline for machine class {machine_class} "
        "(backend none) and --inferperf-require-baseline asks for one: "
        f"expected {expected_path()}. Nothing was compared."
    )
    assert "`pytest --inferperf --update-baselines` there" in paragraph
    assert "examples/ci/github/inferperf-baselines.yml" in paragraph
    assert not Path(suite.path, expected_path()).exists()
    # the table shows the failure, with the reason in the change column
    result.stdout.fnmatch_lines(["*test_a.py::test_work*FAILED*", "*no baseline for *"])


def test_the_ini_option_does_the_same(suite):
    suite.makeini("[pytest]\ninferperf_require_baseline = true\n")
    run(suite, "--inferperf").assert_outcomes(failed=1)


def test_recording_is_never_failed_and_the_recorded_baseline_then_passes(suite):
    result = run(suite, "--inferperf-require-baseline", "--inferperf-update-baselines")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"created {expected_path()}"])
    assert Path(suite.path, expected_path()).is_file()
    result = run(suite, "--inferperf", "--inferperf-require-baseline")
    result.assert_outcomes(passed=1)
    row = table_row(result, "test_a.py::test_work")
    # compared with the baseline just recorded, and passed: "ok (...)" on a quiet
    # machine; a 0.1 ms workload beside other work may read "stale" (faster than a
    # baseline recorded while the machine was slower) or an inconclusive timing change
    assert "no baseline" not in row, row
    assert "passed" in row or "inconclusive: " in row, row


def test_a_budget_failure_and_the_missing_baseline_are_one_failure(suite):
    suite.makepyfile(test_a=TEST.replace("tolerance=0.5", "tolerance=0.5, latency_p50_ms_max=1e-9"))
    result = run(suite, "--inferperf", "--inferperf-require-baseline")
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "budget   latency_p50_ms" in text
    assert "--inferperf-require-baseline asks for one" in " ".join(text.split())


def test_an_unreadable_baseline_fails_as_unreadable_not_as_missing(suite):
    path = Path(suite.path, expected_path())
    path.parent.mkdir(parents=True)
    path.write_text("{not json", encoding="utf-8")
    result = run(suite, "--inferperf", "--inferperf-require-baseline")
    result.assert_outcomes(failed=1)
    text = " ".join(result.stdout.str().split())
    assert "is not a valid profile" in text
    assert "asks for one" not in text


def test_a_run_that_failed_only_for_the_missing_baseline_is_accepted_as_its_first(suite, capsys):
    """A runner of a new class: the failed run's report folder becomes its baselines."""
    from pytest_inferperf.cli.main import main

    result = run(suite, "--inferperf", "--inferperf-require-baseline", "--inferperf-report", "rep")
    result.assert_outcomes(failed=1)
    (record,) = Path(suite.path, "rep").glob("*.json")
    assert '"failed": true' in record.read_text()
    capsys.readouterr()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(suite.path)
        code = main(["accept", "rep"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"created {expected_path()}" in out
    assert out.splitlines()[-1] == "inferperf accept: 1 baseline(s) written, 0 not accepted"
    run(suite, "--inferperf", "--inferperf-require-baseline").assert_outcomes(passed=1)


def test_another_profiles_failure_is_still_not_accepted_for_a_passing_one(suite, capsys):
    """Only the profile without its baseline failed; a passing profile of the same
    test, which has its baseline, is kept as it is."""
    from pytest_inferperf.cli.main import main

    suite.makepyfile(
        test_a=TEST.replace(
            "pmu_profile(work)", 'pmu_profile(work, name="a")\n    pmu_profile(work, name="b")'
        )
    )
    run(suite, "--inferperf-update-baselines").assert_outcomes(passed=1)
    folder = Path(suite.path, expected_path()).parent
    (folder / "test_work@b.json").unlink()
    result = run(suite, "--inferperf", "--inferperf-require-baseline", "--inferperf-report", "rep")
    result.assert_outcomes(failed=1)
    capsys.readouterr()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(suite.path)
        code = main(["accept", "rep"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "kept test_a.py::test_work@a" in out
    assert f"created {folder.relative_to(suite.path)}/test_work@b.json" in out
