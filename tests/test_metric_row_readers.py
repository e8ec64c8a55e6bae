"""The modules that read a metric's facts read them from its row (``core.metrics``):
the noise floor's clock and words, the gated metrics, ``inferperf metrics``' columns,
the timings a fresh process contributes and the times an emulator's clock makes
unjudgeable; and the names that went with nothing reading them are gone."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_inferperf.cli.main import main
from pytest_inferperf.core.metrics import METRICS, profile_metrics
from pytest_inferperf.core.profile import Profile
from pytest_inferperf.judge import noise

RICH = Path(__file__).parent / "fixtures" / "profiles" / "rich_profile.json"


def test_the_noise_floor_reads_each_rows_clock_and_words():
    assert noise.clock_of("cycles_per_call") == "cpu"
    assert noise.clock_of("latency_tail_ratio") == "wall"
    assert noise.clock_of("ipc") is None
    assert noise.clock_of("stage:preprocess") == "wall"  # a region() stage is wall time
    assert noise.clock_of("house_cpu_us_per_call") is None  # a hook's metric has no row
    assert noise._what("latency_p50_ms") == "median latency"
    assert noise._what("stage:preprocess") == "stage preprocess"
    assert noise._what("house_cpu_us_per_call") == "house_cpu_us_per_call"
    assert not hasattr(noise, "TIMING_CLOCK")


def test_a_timing_judgement_speaks_the_rows_words():
    floor = noise.NoiseFloor(1.0, 1.0, (), ())
    judged = noise.judge_timing("latency_p99_ms", 0.5, 0.2, floor)
    assert judged.outcome == "regressed"
    assert judged.reason.startswith("p99 latency +50% is beyond the noise floor")


def test_gated_metrics_are_the_rows_that_gate():
    from pytest_inferperf.diagnose.assessment import GATED_METRICS

    assert {n for n, m in METRICS.items() if m.gates} == GATED_METRICS
    assert {"ipc", "cpu_ms_per_call", "latency_mean_ms"} <= GATED_METRICS
    assert not {"latency_p99_ms", "peak_rss_mb", "page_faults_per_sec"} & GATED_METRICS


def test_the_metrics_command_prints_each_rows_tolerance_and_gates(capsys):
    assert main(["metrics"]) == 0
    table = capsys.readouterr().out.split("\n\n", 1)[0].splitlines()[2:]
    rows = {line.split()[0]: line.split() for line in table}
    assert list(rows) == list(METRICS)
    for name, m in METRICS.items():
        assert rows[name][-2:] == [f"{m.tolerance:.0%}", "yes" if m.gates else "no"]
    assert rows["ipc"][-2:] == ["5%", "yes"]  # IPC: 5%, gates
    assert rows["latency_p99_ms"][-2:] == ["20%", "no"]


def test_a_fresh_process_contributes_the_rows_with_a_clock():
    from pytest_inferperf.plugin.fresh_processes import timing_values

    profile = Profile.load(RICH)
    metrics = profile_metrics(profile)
    values = timing_values(profile)
    # no PMU counted the rich profile: no cycles per call, every other timing by name,
    # then its two region() stages
    assert list(values) == [
        "cpu_ms_per_call",
        "latency_mean_ms",
        "latency_p50_ms",
        "latency_p95_ms",
        "latency_p99_ms",
        "latency_tail_ratio",
        "stage:preprocess",
        "stage:model",
    ]
    assert all(values[name] == metrics[name] for name in list(values)[:6])
    assert values["cpu_ms_per_call"] == pytest.approx(138449736 / 1e6 / 1020)


def test_an_emulators_clock_makes_the_rows_times_unjudgeable():
    from pytest_inferperf.pmu.trust import CLOCK_METRICS

    assert set(CLOCK_METRICS) == {
        "cpu_ms_per_call",
        "latency_mean_ms",
        "latency_p50_ms",
        "latency_p95_ms",
        "latency_p99_ms",
    }
    assert all(METRICS[n].clock and METRICS[n].unit == "ms" for n in CLOCK_METRICS)


def test_the_unused_names_are_gone():
    from pytest_inferperf.measure.flame import svg
    from pytest_inferperf.measure.operator_pass import with_operator_times
    from pytest_inferperf.onnxrt import sessions

    assert not hasattr(sessions, "with_operator_times")  # the operator pass's is the one
    assert callable(with_operator_times)
    assert not hasattr(svg, "SEARCH_COLOUR")
