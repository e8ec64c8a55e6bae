"""``inferperf accept``: baselines from the outputs of a real ``pytest --inferperf`` run
whose test failed on a regression, without measuring again; what is refused and why."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_inferperf.cli.accept import plan, read_run_outputs
from pytest_inferperf.cli.main import main
from pytest_inferperf.core.errors import UsageError
from pytest_inferperf.core.metrics import profile_metrics
from pytest_inferperf.core.numbers import number
from pytest_inferperf.judge.baseline_store import class_folder, load_baseline
from pytest_inferperf.measure.machine import this_cpu

pytest_plugins = ["pytester"]

WORKLOADS = """
import hashlib, os

DATA = b"x" * (1 << 16)

def hashing(rounds=20):
    for _ in range(rounds * (10 if os.environ.get("SLOW") else 1)):
        hashlib.sha256(DATA).digest()

def steady(rounds=20):
    for _ in range(rounds):
        hashlib.sha256(DATA).digest()
"""

TEST = """
import pytest
from workloads import hashing

@pytest.mark.perf(warmup=1, repeat=10)
def test_hash(pmu_profile):
    pmu_profile(hashing)

@pytest.mark.perf(warmup=1, repeat=10)
def test_broken(pmu_profile):
    pmu_profile(hashing)
    assert False, "a functional check"
"""


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """The none backend (timing and memory: the same on every machine), no flamegraph
    pass, one process per baseline, a regression confirmed in this process: these tests
    check what is accepted, not what is counted."""
    return pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "--inferperf-backend=none",
        "--inferperf-flamegraphs=none",
        "--inferperf-baseline-processes=1",
        "--inferperf-processes=0",
        *args,
    )


def accept(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["accept", *args])
    out, err = capsys.readouterr()
    return code, out, err


def baseline_rel() -> str:
    return f"baselines/{class_folder(this_cpu().machine_class, 'none')}/test_a.py/test_hash.json"


@pytest.fixture
def regressed(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A baseline, then a run 10x slower that fails on it, with its run JSON and report
    (10x: beyond what a busy machine alone is allowed to explain)."""
    pytester.makepyfile(workloads=WORKLOADS, test_a=TEST)
    run(pytester, "--inferperf-update-baselines").assert_outcomes(passed=1, failed=1)
    monkeypatch.setenv("SLOW", "1")
    result = run(
        pytester, "--inferperf", "--inferperf-json", "run.json", "--inferperf-report", "rep"
    )
    result.assert_outcomes(failed=2)
    assert "REGRESSED" in result.stdout.str()
    return pytester


def record_file(pytester: pytest.Pytester) -> Path:
    (path,) = Path(pytester.path, "rep").glob("*.json")
    return path


def test_a_regressed_run_is_accepted_and_the_same_slowdown_then_passes(regressed, capsys):
    baseline = Path(regressed.path, baseline_rel())
    old = profile_metrics(load_baseline(baseline))
    record = json.loads(record_file(regressed).read_text())
    assert record["failed"] is True and record["outcome"] == "failed"

    code, out, err = accept(capsys, "rep", "run.json")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "inferperf accept: 1 record(s) read, checked against run.json"
    assert lines[1] == f"updated {baseline_rel()}"
    metrics = " ".join(line.strip() for line in lines[2:-1])
    new = record["metrics"]
    for name in ("latency_p50_ms", "latency_p99_ms", "latency_mean_ms"):
        assert f"{name} {number(old[name])} -> {number(new[name])}" in metrics
    assert lines[-1] == "inferperf accept: 1 baseline(s) written, 0 not accepted"
    # the baseline is the profile the run measured, not a new measurement
    written = load_baseline(baseline)
    assert written is not None
    assert profile_metrics(written)["latency_mean_ms"] == new["latency_mean_ms"]
    assert new["latency_mean_ms"] > 2 * old["latency_mean_ms"]
    # the accepted slowdown now passes; the functional failure is still the test's own
    result = run(regressed, "--inferperf")
    result.assert_outcomes(passed=1, failed=1)
    assert "REGRESSED" not in result.stdout.str()


def test_a_functional_failure_leaves_no_record_to_accept(regressed):
    names = [p.name for p in Path(regressed.path, "rep").glob("*.json")]
    assert names == [record_file(regressed).name]
    assert names[0].startswith("test_a.py__test_hash-")
    tests = json.loads(Path(regressed.path, "run.json").read_text())["tests"]
    assert [t["key"] for t in tests] == ["test_a.py::test_hash"]


def test_dry_run_says_what_would_be_written_and_writes_nothing(regressed, capsys):
    baseline = Path(regressed.path, baseline_rel())
    before = baseline.read_bytes()
    code, out, _ = accept(capsys, "rep", "--dry-run")
    assert code == 0
    assert f"would update {baseline_rel()}" in out.splitlines()
    assert out.splitlines()[-1] == (
        "inferperf accept: 1 baseline(s) would be written (--dry-run: nothing written), "
        "0 not accepted"
    )
    assert baseline.read_bytes() == before
    code, out, _ = accept(capsys, "rep", "--dry-run", "--baselines", "elsewhere")
    assert code == 0
    assert f"would create elsewhere/{baseline_rel().partition('/')[2]}" in out
    assert not Path(regressed.path, "elsewhere").exists()


def test_a_test_that_failed_while_its_profile_passed_is_refused(pytester, capsys):
    pytester.makepyfile(
        workloads=WORKLOADS,
        test_a=TEST.replace("repeat=10)", "repeat=10, ipc_min=0.1)"),
    )
    # a budget the none backend cannot check, which --inferperf-require-pmu fails: the
    # test fails, its profile's verdict passed
    result = run(pytester, "--inferperf", "--inferperf-require-pmu", "--inferperf-report", "rep")
    result.assert_outcomes(failed=2)
    record = json.loads(record_file(pytester).read_text())
    assert record["outcome"] == "failed" and record["failed"] is False
    code, out, _ = accept(capsys, "rep")
    assert code == 1
    assert (
        "not accepted test_a.py::test_hash: its test failed on something else than this "
        "profile (another profile's verdict, or --inferperf-require-pmu), and this profile "
        "passed its verdict" in out
    )
    assert out.splitlines()[-1] == "inferperf accept: 0 baseline(s) written, 1 not accepted"
    assert not Path(pytester.path, "baselines").exists()


def test_a_profile_that_passed_beside_one_that_regressed_keeps_its_baseline(
    pytester, monkeypatch, capsys
):
    pytester.makepyfile(
        workloads=WORKLOADS,
        test_a="""
import pytest
from workloads import hashing, steady

# "same" never reads SLOW: a regression measured again after the test body (to
# confirm it) must meet the same workload, so no state the body changes may steer it
@pytest.mark.perf(warmup=1, repeat=10)
def test_two(pmu_profile):
    pmu_profile(hashing, name="changed")
    pmu_profile(steady, name="same")
""",
    )
    run(pytester, "--inferperf-update-baselines").assert_outcomes(passed=1)
    folder = Path(pytester.path, "baselines", class_folder(this_cpu().machine_class, "none"))
    same = folder / "test_a.py" / "test_two@same.json"
    before = same.read_bytes()
    monkeypatch.setenv("SLOW", "1")
    run(pytester, "--inferperf", "--inferperf-report", "rep").assert_outcomes(failed=1)
    code, out, _ = accept(capsys, "rep")
    assert code == 0, out
    lines = out.splitlines()
    assert lines[1].startswith("kept test_a.py::test_two@same: passed its verdict (baseline ")
    assert lines[1].endswith("; its test failed on the verdict of test_a.py::test_two@changed")
    assert (
        lines[2] == f"updated {folder.relative_to(pytester.path)}/test_a.py/test_two@changed.json"
    )
    assert lines[-1] == "inferperf accept: 1 baseline(s) written, 0 not accepted"
    assert same.read_bytes() == before
    run(pytester, "--inferperf").assert_outcomes(passed=1)


def test_a_partial_profile_is_refused(pytester, capsys):
    pytester.makepyfile(
        workloads=WORKLOADS,
        test_a="""
import pytest
from workloads import hashing

# a second: enough for the set-up (a full collection, the calibration) on a busy machine,
# far too little for a million repeats
@pytest.mark.perf(warmup=1, repeat=1000000, timeout=1.0)
def test_hash(pmu_profile):
    pmu_profile(hashing)
""",
    )
    run(pytester, "--inferperf", "--inferperf-report", "rep").assert_outcomes(passed=1)
    assert json.loads(record_file(pytester).read_text())["profile"]["partial"] is True
    code, out, _ = accept(capsys, "rep")
    assert code == 1
    line = next(x for x in out.splitlines() if x.startswith("not written"))
    assert line.startswith(f"not written {baseline_rel()}: partial (")
    assert "/1000000 repeats, timeout 1 s); the old baseline (if any) is kept." in line
    assert not Path(pytester.path, "baselines").exists()


def test_corrupt_json_is_a_usage_error_naming_the_file_and_the_fix(regressed, capsys):
    path = record_file(regressed)
    text = path.read_text()
    path.write_text(text[: len(text) // 2])
    code, out, err = accept(capsys, "rep")
    assert code == 2 and out == ""
    assert err.startswith(f"inferperf accept: {Path('rep', path.name)} is not valid JSON (")
    assert "Nothing was written. Download the CI run's artifact again" in err
    code, _, err = accept(capsys, "missing")
    assert code == 2
    assert err.startswith("inferperf accept: missing does not exist. Nothing was written.")


def test_two_different_records_of_one_key_are_refused_naming_both(regressed, capsys):
    shutil.copytree(Path(regressed.path, "rep"), Path(regressed.path, "rep2"))
    (other,) = Path(regressed.path, "rep2").glob("*.json")
    data = json.loads(other.read_text())
    data["metrics"]["latency_mean_ms"] *= 2
    other.write_text(json.dumps(data))
    baseline = Path(regressed.path, baseline_rel())
    before = baseline.read_bytes()
    code, out, _ = accept(capsys, "rep", "rep2")
    assert code == 1
    assert (
        f"not accepted test_a.py::test_hash: two different measurements, in "
        f"{Path('rep', other.name)} and {Path('rep2', other.name)}: give the outputs of one run"
    ) in out
    assert baseline.read_bytes() == before
    # the same record twice (the folder copied whole) is one record
    shutil.rmtree(Path(regressed.path, "rep2"))
    shutil.copytree(Path(regressed.path, "rep"), Path(regressed.path, "rep2"))
    code, out, _ = accept(capsys, "rep", "rep2", "--dry-run")
    assert code == 0 and "1 baseline(s) would be written" in out


def test_the_run_json_alone_holds_no_profile(regressed, capsys):
    code, out, err = accept(capsys, "run.json")
    assert code == 2 and out == ""
    assert err.startswith(
        "inferperf accept: run.json holds the run's summary of each test, not the measured "
        "profiles a baseline is made of: nothing was written."
    )


def test_a_record_the_run_json_does_not_know_is_refused_as_left_by_an_earlier_run(
    regressed, capsys
):
    stale = Path(regressed.path, "rep", "test_a.py__test_old-00000000.json")
    data = json.loads(record_file(regressed).read_text())
    stale.write_text(json.dumps({**data, "key": "test_a.py::test_old"}))
    code, out, _ = accept(capsys, "rep", "run.json", "--dry-run")
    assert code == 1
    assert (
        f"not accepted test_a.py::test_old: {stale.relative_to(regressed.path)} is not in the "
        "run JSON (run.json): a record an earlier run left in the folder"
    ) in out
    assert "1 baseline(s) would be written" in out
    # -k keeps the keys that contain it
    code, out, _ = accept(capsys, "rep", "-k", "test_old", "--dry-run")
    assert code == 0
    assert out.splitlines()[0] == "inferperf accept: 1 record(s) read, 1 not matching -k"
    assert "would create baselines/" in out and "test_old.json" in out


def test_other_json_and_the_flamegraph_folder_are_ignored_and_counted(regressed, capsys):
    folder = Path(regressed.path, "rep")
    (folder / "compare.json").write_text('{"entries": []}')
    (folder / "flamegraphs").mkdir()
    (folder / "flamegraphs" / "broken.json").write_text("{cut")
    code, out, _ = accept(capsys, "rep", "--dry-run")
    assert code == 0
    assert out.splitlines()[0] == (
        "inferperf accept: 1 record(s) read; ignored 1 JSON file(s) that are no record: "
        f"{Path('rep', 'compare.json')}"
    )


# -- the reader, on any JSON ----------------------------------------------------------------
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
SHAPED = st.fixed_dictionaries(
    {"schema": st.just("pytest-inferperf/run"), "tests": st.lists(JSON, max_size=3)}
) | st.fixed_dictionaries({"key": JSON, "profile": JSON}, optional={"status": JSON, "failed": JSON})


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(document=JSON | SHAPED)
def test_any_json_file_is_read_or_refused_with_a_usage_error(tmp_path, document):
    path = tmp_path / "in.json"
    path.write_text(json.dumps(document))
    for given_path in (path, tmp_path):  # named, and found in a folder
        try:
            outputs = read_run_outputs([given_path])
            chosen = plan(outputs)
        except UsageError as exc:
            assert str(path) in str(exc) or str(tmp_path) in str(exc)
            continue
        assert {r.key for r in chosen.records} <= {f.key for f in outputs.found}
        assert all(r.acceptable for r in chosen.records)
