"""The measurement-quality benchmark still runs: a --quick, one-trial run into tmp_path.

The simulate arm (valgrind) has its own, slow test: one trial of 0% and 10%.

Checks the structure of results.json and that its values are sane (finite, in range,
the injected slowdown measured as a slowdown), not how good the numbers are: that is
what docs/benchmarks/results.md reports from a full run.
"""

from __future__ import annotations

import importlib.util
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "benchmarks" / "measurement_quality.py"
LEVELS = ["0%", "50%"]

# One quick run of the benchmark script (~11 s) feeds every test here: CI's slow job runs
# them (`pytest -m slow`), the default suite stays under 4 minutes.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("mq")
    proc = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--quick",
            "--trials",
            "1",
            "--levels",
            "0,50",
            "--skip",
            "suite,simulate",
            "--out",
            str(out),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert (out / "results.md").is_file()
    data = json.loads((out / "results.json").read_text())
    data["_markdown"] = (out / "results.md").read_text()
    return data


def _finite(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def test_run_is_complete_and_says_how_it_was_made(results):
    assert results["schema"] == "pytest-inferperf/measurement-quality"
    assert results["version"] == 1
    assert results["complete"] is True
    assert results["command"].startswith("python benchmarks/measurement_quality.py --quick")
    assert results["parameters"]["levels"] == LEVELS
    assert results["parameters"]["trials"] == 1
    md = results["_markdown"]
    for heading in (
        "## Machine",
        "## Headline",
        "## 1. Overhead",
        "## 2. Sensitivity",
        "## 3. Suite cost",
    ):
        assert heading in md
    assert "Skipped: --skip suite" in md


def test_machine_is_pinned_down(results):
    m = results["machine"]
    for key in ("machine_class", "cpu_model", "kernel", "python", "onnxruntime"):
        assert isinstance(m[key], str) and m[key]
    assert m["cpus"] >= 1 and m["cpus_usable"] >= 1
    assert isinstance(m["pmu"]["exists"], bool)
    for key in ("load_avg_start", "load_avg_end"):
        assert len(m[key]) == 3 and all(_finite(x) and x >= 0 for x in m[key])


def test_workload_calibration_is_sane(results):
    w = results["workload"]
    assert 0.05 < w["base_ms"] < 500
    assert w["iterations"]["0%"] == 0 and w["iterations"]["50%"] > 0
    assert w["intended_slowdown"]["0%"] == 0
    assert abs(w["intended_slowdown"]["50%"] - 0.5) < 0.01
    assert all(_finite(v) for v in w["realised_slowdown"].values())


def test_overhead_numbers_are_sane(results):
    o = results["overhead"]
    rows = o["start_stop"]
    assert all(r["threads_alive"] >= want for r, want in zip(rows, (1, 4, 16), strict=True))
    for r in rows:
        assert r["counted_threads"] >= 1 and r["open_fds"] >= r["counted_threads"]
        assert _finite(r["median_us"]) and 0 < r["median_us"] < 1e6
        assert r["p90_us"] >= r["median_us"] * 0.5
    pvn = o["profile_vs_none"]
    assert _finite(pvn["latency_mean_ratio"]) and 0.1 < pvn["latency_mean_ratio"] < 10
    stat = o["perf_stat"]
    if "skipped" in stat:
        assert isinstance(stat["skipped"], str) and stat["skipped"]
    else:
        assert 0.1 < stat["perf_stat_ratio"] < 10 and 0.1 < stat["inferperf_ratio"] < 10


def test_sensitivity_trial_has_verdicts_per_level_and_metric(results):
    s = results["sensitivity"]
    assert s["trials_done"] == 1 and len(s["ours"]) == 1
    trial = s["ours"][0]
    assert sorted(trial) == sorted(LEVELS)
    for record in trial.values():
        assert isinstance(record["verdict_failed"], bool)
        for mode in ("default", "zero"):
            for metric in ("cpu_ms_per_call", "latency_mean_ms"):
                change = record[mode][metric]
                assert _finite(change["delta"]) and change["delta"] > -0.9
                assert 0 <= change["p"] <= 1
    # 50% more work is measured as more CPU time, however noisy the machine
    assert trial["50%"]["default"]["cpu_ms_per_call"]["delta"] > 0
    assert not s.get("errors")
    assert s["simulate_status"] == {"available": False, "missing": ["--skip simulate"]}


def test_detectors_are_summarised(results):
    dets = {d["id"]: d for d in results["summary"]["detectors"]}
    for did in (
        "inferperf/perf/cpu_ms_per_call/default",
        "inferperf/perf/cpu_ms_per_call/zero",
        "inferperf/perf/latency_mean_ms/default",
        "inferperf/perf/latency_mean_ms/zero",
        "inferperf/perf/verdict/default",
    ):
        assert did in dets
    for d in dets.values():
        assert d["min_detectable_text"] in ("none", *LEVELS[1:])
        for rate in d["rates"].values():
            assert rate["trials"] == 1 and 0 <= rate["rate"] <= 1


def test_pytest_benchmark_ran_on_the_same_workload(results):
    s = results["sensitivity"]
    if importlib.util.find_spec("pytest_benchmark") is None:
        assert s["peer_status"]["available"] is False
        pytest.skip("pytest-benchmark is not installed (pip install -e '.[dev]')")
    assert s["peer_status"]["available"] is True
    assert len(s["peer"]) == 1
    levels = s["peer"][0]["levels"]
    assert sorted(levels) == sorted(LEVELS)
    for rec in levels.values():
        assert _finite(rec["delta"])
        # what pytest-benchmark printed agrees with its own rule applied to its JSON
        assert rec["flagged"] == rec["flagged_by_delta"]
    ids = {d["id"] for d in results["summary"]["detectors"]}
    assert {"pytest-benchmark/mean/5%", "pytest-benchmark/mean/10%"} <= ids


@pytest.mark.slow
@pytest.mark.skipif(
    shutil.which("valgrind") is None,
    reason="the simulate backend needs valgrind (apt install valgrind)",
)
def test_simulate_arm_counts_the_injected_slowdown(tmp_path: Path):
    """The simulate arm for real: one trial of 0% and 10% under valgrind (about 30-60 s)."""
    proc = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--quick",
            "--trials",
            "1",
            "--simulate-trials",
            "1",
            "--levels",
            "0,10",
            "--skip",
            "overhead,perf_stat,suite,sensitivity,peer",
            "--out",
            str(tmp_path),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    data = json.loads((tmp_path / "results.json").read_text())
    s = data["sensitivity"]
    if not s["simulate_status"]["available"]:
        pytest.skip(f"simulate backend not usable: {s['simulate_status']['missing']}")
    assert not s.get("errors"), s.get("errors")
    assert s["simulate_trials_planned"] == 1 and s["simulate_trials_done"] == 1
    (trial,) = s["simulate"]
    assert trial["profiles"] == 3  # the baseline ("base") and the two levels, one pytest run
    assert _finite(trial["wall_s"]) and trial["wall_s"] > 0
    deltas = {
        label: trial["levels"][label]["zero"]["instructions_per_call"]["delta"]
        for label in ("0%", "10%")
    }
    assert all(_finite(d) for d in deltas.values())
    # deterministic counts: the plain call against itself barely moves, 10% more work shows
    assert deltas["10%"] > 0
    assert deltas["10%"] > abs(deltas["0%"])
    assert abs(deltas["0%"]) < 0.01
    assert trial["levels"]["10%"]["default"]["instructions_per_call"]["regressed"] is True
    dets = {d["id"]: d for d in data["summary"]["detectors"]}
    assert "inferperf/simulate/instructions_per_call/default" in dets
    md = (tmp_path / "results.md").read_text()
    assert "1 of 1 planned trials done" in md and "per simulated profile" in md
