"""Verdicts through real pytest runs: inconclusive and strict, confirmation, busy baselines,
memory growth that does not depend on which tests ran before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from plugin_output import said
from profile_paths import baseline_files

pytest_plugins = ["pytester"]

WORKLOADS = """
import hashlib, time

DATA = b"x" * (1 << 16)
STATE = {"slow": False}

def hashing(rounds=20):
    for _ in range(rounds * (3 if STATE["slow"] else 1)):
        hashlib.sha256(DATA).digest()

def sleeping():
    time.sleep(0.1 if STATE["slow"] else 0.001)
"""

TEST = """
import os, pytest
from workloads import STATE, hashing

@pytest.mark.perf(warmup=1, repeat=10)
def test_hash(pmu_profile):
    fresh = bool(os.environ.get("INFERPERF_PROCESS_CHILD"))  # a fresh process measures it
    STATE["slow"] = os.environ.get("SLOW") == "always" or (
        os.environ.get("SLOW") == "first" and not fresh
    )
    pmu_profile(hashing)
    STATE["slow"] = os.environ.get("SLOW") == "always"  # what a re-measurement sees
"""


@pytest.fixture
def suite(pytester):
    pytester.makepyfile(workloads=WORKLOADS, test_a=TEST)
    return pytester


def run(pytester, *args, flamegraphs=False):
    """pytest in-process; no flamegraph pass (seconds per failed test) unless asked for."""
    if not flamegraphs and not any(a.startswith("--inferperf-flamegraphs") for a in args):
        args = (*args, "--inferperf-flamegraphs=none")
    return pytester.runpytest("-p", "no:cacheprovider", *args)


def run_subprocess(pytester, *args):
    """In a fresh interpreter: for a conftest that patches the package, or process memory."""
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)


def _baseline(pytester) -> Path:
    (path,) = baseline_files(Path(pytester.path, "baselines"))
    return path


def _edit(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def _machine_was_3x_faster_and_test_30pct_faster(data: dict) -> None:
    """The baseline as if recorded when the machine ran 3x faster and the test 1.3x."""
    cal = data["conditions"]["calibration"]
    cal["wall_ms"] /= 3
    cal["cpu_ms"] /= 3
    for clock in ("wall", "cpu"):  # the fastest round stands for the machine (noise.py)
        if isinstance(cal.get(f"rounds_{clock}_ms"), list):
            cal[f"rounds_{clock}_ms"] = [v / 3 for v in cal[f"rounds_{clock}_ms"]]
    # the compact baseline form: one array per event, raw reads only where they differ
    repeats = data["repeats"]
    repeats["counts"]["task_clock"] = [round(v / 1.3) for v in repeats["counts"]["task_clock"]]
    if "task_clock" in repeats.get("raw", {}):
        repeats["raw"]["task_clock"] = [int(v / 1.3) for v in repeats["raw"]["task_clock"]]


@pytest.mark.slow  # several full pytest runs: the default suite stays near 5 minutes
def test_a_change_within_the_machines_slowdown_is_inconclusive_and_strict_fails_it(suite):
    run(suite, "--inferperf", "--update-baselines").assert_outcomes(passed=1)
    _edit(_baseline(suite), _machine_was_3x_faster_and_test_30pct_faster)
    result = run(suite, "--inferperf", "--inferperf-json", "run.json")
    result.assert_outcomes(passed=1)
    said(
        result,
        "*test_a.py::test_hash*inconclusive: * +*% (machine *x slower)*inconclusive*",
        "Inconclusive (a warning, not a failure; --inferperf-strict fails it)*",
        "*test_a.py::test_hash: cpu_ms_per_call: the machine ran *x slower (cpu time of the "
        "calibration) than at baseline time*; CPU time +*% is within that*",
    )
    (test,) = json.loads(Path(suite.path, "run.json").read_text())["tests"]
    assert test["verdict"] == "inconclusive" and not test["failed"]
    assert test["inconclusive"][0].startswith("cpu_ms_per_call: the machine ran ")
    assert test["noise_floor"]["slowdown_cpu"] > 2
    assert test["conditions"]["calibration"]["cpu_ms"] > 0

    strict = run(suite, "--inferperf", "--inferperf-strict")
    strict.assert_outcomes(failed=1)
    said(strict, "*inconclusive (fails under --inferperf-strict) cpu_ms_per_call: the machine ran*")
    suite.makeini("[pytest]\ninferperf_strict = true\n")
    run(suite, "--inferperf").assert_outcomes(failed=1)


def test_a_slowdown_that_holds_is_confirmed_in_fresh_processes_before_failing(suite, monkeypatch):
    result = run(suite, "--inferperf", "--update-baselines", "--inferperf-json", "base.json")
    result.assert_outcomes(passed=1)
    # the baseline's timings span 2 processes by default: this one and a fresh one
    processes = json.loads(_baseline(suite).read_text())["processes"]
    assert len(processes["cpu_ms_per_call"]) == 2
    assert all(v > 0 for v in processes["cpu_ms_per_call"])
    monkeypatch.setenv("SLOW", "always")
    # 4 fresh processes (the default): with 2 against the baseline's 2, a 3x slowdown
    # whose processes spread from +134% to +194% on a busy machine gave t = 8.4 against
    # the 9.93 that 2 degrees of freedom need: inconclusive, rightly, at that power
    result = run(suite, "--inferperf", "--inferperf-processes", "4", "--inferperf-json", "r.json")
    if result.parseoutcomes().get("passed") and "on a contended machine" in result.stdout.str():
        # Seen once beside a hypervisor stealing 27% of the CPU time: the 4 processes
        # spread +99% .. +122% against a baseline recorded busy, t = 2.85 < 4.60. A
        # slowdown the machine's state cannot confirm is inconclusive, never passed
        # silently: that is the verdict to hold there (the product's rule on a busy
        # machine), and the confirmation itself is this test's on a quieter one.
        said(
            result,
            "*inconclusive: cpu_ms_per_call +*% (not confirmed)*",
            "*not confirmed: cpu_ms_per_call not separated from process-to-process variation*",
        )
        pytest.skip("too contended to confirm a 3x slowdown: inconclusive, as it must be")
    result.assert_outcomes(failed=1)
    said(
        result,
        "*baseline cpu_ms_per_call: * -> * ms (+*%, tolerance 10%*",
        "*confirmed: cpu_ms_per_call holds in 4 fresh processes: +*% against the "
        "baseline's 2 processes (each +*% .. +*%; t = *, needs > 4.6*, one-sided 0.005)*",
        "*verdict carried by cpu_ms_per_call (timing, beyond the noise floor)*",
    )
    (test,) = json.loads(Path(suite.path, "r.json").read_text())["tests"]
    confirmation = test["confirmation"]
    assert confirmation["held"] and "cpu_ms_per_call" in confirmation["held_metrics"]
    (judged,) = [j for j in confirmation["judgements"] if j["metric"] == "cpu_ms_per_call"]
    assert len(judged["now"]) == 4 and judged["baseline"] == processes["cpu_ms_per_call"]
    # three times the hashing: about +200% on a quiet machine; +126% and +137% were seen
    # beside other work (the baseline's processes were slow too): far past the 10%
    assert judged["change"] > 0.5


def test_in_process_confirmation_where_fresh_processes_are_switched_off(suite, monkeypatch):
    run(suite, "--inferperf", "--update-baselines", "--inferperf-baseline-processes", "1")
    assert (
        "processes" not in json.loads(_baseline(suite).read_text())
        or not json.loads(_baseline(suite).read_text())["processes"]
    )
    monkeypatch.setenv("SLOW", "always")
    result = run(suite, "--inferperf", "--inferperf-processes", "0")
    result.assert_outcomes(failed=1)
    said(result, "*confirmed: measured again after a 0.5 s pause: cpu_ms_per_call +*% (first +*%)*")


@pytest.mark.slow  # several full pytest runs: the default suite stays near 5 minutes
def test_a_slowdown_only_the_first_process_saw_does_not_fail(suite, monkeypatch):
    """The process that measured it first was slow (its layout, its neighbour); fresh
    processes are not: the test is inconclusive, never failed."""
    run(suite, "--inferperf", "--update-baselines").assert_outcomes(passed=1)
    monkeypatch.setenv("SLOW", "first")
    result = run(suite, "--inferperf", "--inferperf-processes", "2")
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert "Regressions confirmed before failing" not in out
    # usually the fresh processes decide it; on a contended machine the first
    # measurement may already be inconclusive (its latency follows the scheduler)
    said(result, "*test_hash*inconclusive: * +*% (*)*inconclusive*")
    if "fresh processes" in out:
        said(result, "*not confirmed: cpu_ms_per_call does not hold in 2 fresh processes: *")


@pytest.mark.parametrize("value", ["-1", "two"])
def test_a_bad_process_count_is_a_usage_error(suite, value):
    result = run(suite, "--inferperf", f"--inferperf-processes={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"*--inferperf-processes / inferperf_processes = '{value}': give a whole number of "
            "processes, 0 or more (default 4)*"
        ]
    )


@pytest.mark.slow  # several full pytest runs: the default suite stays near 5 minutes
def test_a_slowdown_that_does_not_hold_is_inconclusive(suite, monkeypatch):
    run(suite, "--inferperf", "--update-baselines").assert_outcomes(passed=1)
    monkeypatch.setenv("SLOW", "first")
    result = run(suite, "--inferperf", "--inferperf-processes", "0")
    result.assert_outcomes(passed=1)
    said(
        result,
        "*test_hash*inconclusive: * +*% (not confirmed)*",
        "*not confirmed: measured again after a 0.5 s pause: cpu_ms_per_call *(first +*%)*",
    )


BUSY_CONFTEST = """
from pytest_inferperf.measure import conditions

_between = conditions.between

def _busy(*args, **kwargs):
    out = _between(*args, **kwargs)
    out["others_busy_cpus"] = 1.9  # as two CPU-bound jobs next to the test would
    out["steal"] = 0.0  # the one reason under test, whatever the machine really does
    return out

conditions.between = _busy
"""


def test_a_baseline_recorded_busy_is_warned_about_then_and_in_every_comparison(suite):
    suite.makeconftest(BUSY_CONFTEST)
    result = run_subprocess(suite, "--inferperf", "--update-baselines")
    result.assert_outcomes(passed=1)
    said(
        result,
        "WARNING test_a.py::test_hash: baseline recorded on a busy machine (other processes "
        "kept 1.9 of * CPUs busy*): its timings read slow*",
    )
    stored = json.loads(_baseline(suite).read_text())
    assert stored["conditions"]["busy_reasons"][0] == (
        f"other processes kept 1.9 of {stored['conditions']['cpus']} CPUs busy"
    )
    Path(suite.path, "conftest.py").unlink()
    later = run_subprocess(suite, "--inferperf")
    later.assert_outcomes(passed=1)
    said(
        later,
        "*test_hash*[baseline recorded on a busy machine]*",
        "Baselines recorded on a busy machine*",
        "*test_a.py::test_hash: other processes kept 1.9 of * CPUs busy*",
    )


MEMORY_TESTS = """
import numpy as np, pytest

KEPT = []

@pytest.mark.perf(warmup=1, repeat=5, min_time=0)
def test_a_allocates_and_keeps(pmu_profile):
    def grow():
        KEPT.append(np.ones(6_000_000))  # 48 MB a call, kept
    pmu_profile(grow)

@pytest.mark.perf(warmup=1, repeat=5, min_time=0)
def test_b_allocates_and_frees(pmu_profile):
    def churn():
        for _ in range(4):
            big = [np.ones(2_000_000) for _ in range(3)]  # 48 MB, freed
            del big
    pmu_profile(churn)

@pytest.mark.perf(warmup=1, repeat=5, min_time=0)
def test_c_measured(pmu_profile):
    def work():
        a = np.ones(8_000_000)  # 64 MB, freed after each call
        return float(a.sum())
    pmu_profile(work)
"""


def _growth(pytester, *args) -> dict[str, float]:
    result = run_subprocess(pytester, "--inferperf", "--inferperf-json", "run.json", *args)
    assert result.ret == 0, result.stdout.str()
    tests = json.loads(Path(pytester.path, "run.json").read_text())["tests"]
    return {t["key"].rsplit("::", 1)[1]: t["metrics"] for t in tests}


def test_rss_growth_is_the_same_alone_or_after_tests_that_allocated(pytester):
    pytester.makepyfile(test_mem=MEMORY_TESTS)
    alone = _growth(pytester, "-k", "test_c")["test_c_measured"]
    after = _growth(pytester)["test_c_measured"]
    assert alone["rss_growth_mb"] == pytest.approx(61, rel=0.1)  # 64 MB = 61 MiB
    assert after["rss_growth_mb"] == pytest.approx(alone["rss_growth_mb"], rel=0.05)
    # the absolute peak carries what the earlier tests kept
    assert after["peak_rss_mb"] > alone["peak_rss_mb"] + 100


@pytest.mark.slow  # several full pytest runs: the default suite stays near 5 minutes
def test_a_new_baselines_fresh_process_measures_timings_only(suite, monkeypatch, tmp_path):
    """The fresh process of --update-baselines gives one value per test: its repeats are
    capped, and it runs neither the calibration nor the operator pass."""
    out = tmp_path / "child.jsonl"
    monkeypatch.setenv("INFERPERF_PROCESS_CHILD", str(out))
    monkeypatch.setenv("INFERPERF_PROCESS_REPEATS", "4")
    run_subprocess(suite, "--inferperf").assert_outcomes(passed=1)
    (line,) = out.read_text().splitlines()
    profile = json.loads(line)["profiles"][""]
    assert profile["settings"]["repeat"] == 4  # the marker's repeat=10, capped
    assert len(profile["repeats"]) == 4
    assert "calibration" not in (profile.get("conditions") or {})
    monkeypatch.setenv("INFERPERF_PROCESS_REPEATS", "40")  # never more than the marker's
    out.unlink()
    run_subprocess(suite, "--inferperf").assert_outcomes(passed=1)
    (line,) = out.read_text().splitlines()
    assert json.loads(line)["profiles"][""]["settings"]["repeat"] == 10
    monkeypatch.delenv("INFERPERF_PROCESS_REPEATS")  # a confirming process: as the parent
    out.unlink()
    run_subprocess(suite, "--inferperf").assert_outcomes(passed=1)
    (line,) = out.read_text().splitlines()
    profile = json.loads(line)["profiles"][""]
    assert profile["settings"]["repeat"] == 10
    assert profile["conditions"]["calibration"]["cpu_ms"] > 0


ONNX_TEST = """
import numpy as np, onnxruntime as ort, pytest

@pytest.mark.perf(warmup=1, repeat=6)
def test_model(pmu_profile):
    session = ort.InferenceSession(MODEL, providers=["CPUExecutionProvider"])
    x = np.zeros((1, 3, 224, 224), dtype=np.float32)
    pmu_profile(session.run, None, {session.get_inputs()[0].name: x})
"""


def test_a_new_baselines_fresh_process_runs_no_operator_pass(pytester, monkeypatch, tmp_path):
    """An ONNX Runtime test: the parent's profile has its operator table; the fresh
    process of --update-baselines gives its timings without one."""
    model = Path(__file__).parents[1] / "examples" / "models" / "mobilenet_v2_int8.onnx"
    pytester.makepyfile(test_m=f"MODEL = {str(model)!r}\n" + ONNX_TEST)
    out = tmp_path / "child.jsonl"
    monkeypatch.setenv("INFERPERF_PROCESS_CHILD", str(out))
    run_subprocess(pytester, "--inferperf").assert_outcomes(passed=1)
    (line,) = out.read_text().splitlines()
    assert json.loads(line)["profiles"][""]["operators"]  # a confirming process: in full
    monkeypatch.setenv("INFERPERF_PROCESS_REPEATS", "3")
    out.unlink()
    run_subprocess(pytester, "--inferperf").assert_outcomes(passed=1)
    (line,) = out.read_text().splitlines()
    profile = json.loads(line)["profiles"][""]
    assert profile["operators"] == [] and len(profile["repeats"]) == 3
    assert profile["latency"]["mean_ms"] > 0


# -- absolute timing budgets are measured again before they fail -----------------------

# TEST's slow-first-or-always switch, on 100 ms (slow) or 1 ms calls against a 10 ms p99:
# a slow call misses by more than a busy machine can stretch it (contended_stretch: at
# 10 x 2.5 = 25 ms where the calibration got 60% of a CPU), so "always" fails confirmed
# beside other work too; a fast one misses only by a preemption, which a busy machine
# explains
BUDGET_TEST = TEST.replace(
    "@pytest.mark.perf(warmup=1, repeat=10)",
    "@pytest.mark.perf(warmup=1, repeat=5, latency_p99_ms_max=10)",
).replace("hashing", "sleeping")


def test_a_latency_budget_missed_once_is_inconclusive_not_failed(pytester, monkeypatch):
    """100 ms calls against a 10 ms p99 budget, then 1 ms calls when measured again (as
    a burst of other work on the machine would leave it): not a failure."""
    pytester.makepyfile(workloads=WORKLOADS, test_b=BUDGET_TEST)
    monkeypatch.setenv("SLOW", "first")
    result = run(pytester, "--inferperf", "--inferperf-json", "r.json")
    result.assert_outcomes(passed=1)
    (record,) = json.loads(Path(pytester.path, "r.json").read_text())["tests"]
    assert record["verdict"] == "inconclusive"
    (reason,) = record["inconclusive"]
    assert reason.startswith("not confirmed: measured again after a 0.5 s pause: latency_p99_ms")
    assert ", budget <= 10)" in reason
    assert record["failed"] is False
    # --inferperf-strict fails what is inconclusive
    strict = run(pytester, "--inferperf", "--inferperf-strict")
    strict.assert_outcomes(failed=1)


def test_a_latency_budget_missed_again_fails_confirmed(pytester, monkeypatch):
    pytester.makepyfile(workloads=WORKLOADS, test_b=BUDGET_TEST)
    monkeypatch.setenv("SLOW", "always")
    result = run(pytester, "--inferperf")
    result.assert_outcomes(failed=1)
    said(result, "*budget   latency_p99_ms = *, budget <= 10 (+*% from the limit): FAILED")
    said(result, "*confirmed: measured again after a 0.5 s pause: latency_p99_ms *, budget <= 10)")


def test_a_budget_met_in_fresh_processes_is_inconclusive(pytester, monkeypatch):
    pytester.makepyfile(workloads=WORKLOADS, test_b=BUDGET_TEST)
    run(pytester, "--inferperf", "--update-baselines").assert_outcomes(passed=1)
    monkeypatch.setenv("SLOW", "first")
    result = run(pytester, "--inferperf", "--inferperf-json", "r.json")
    result.assert_outcomes(passed=1)
    (record,) = json.loads(Path(pytester.path, "r.json").read_text())["tests"]
    assert record["verdict"] == "inconclusive"
    text = " ".join(record["inconclusive"])
    assert "latency_p99_ms" in text and "met in at least one" in text
