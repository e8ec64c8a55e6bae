"""The machine's conditions around a measurement, the calibration, and the noise floor."""

from __future__ import annotations

import time

import pytest

from pytest_inferperf.judge.noise import NoiseFloor, floor_of, judge_timing, pooled, saturated
from pytest_inferperf.measure import conditions
from pytest_inferperf.measure.conditions import Snapshot, between, busy_reasons, parse_proc_stat

STAT = """cpu  40276 0 6325 73934 223 0 125 120 0 0
cpu0 17109 0 2682 40526 55 0 25 61 0 0
cpu1 23166 0 3642 33408 168 0 100 59 0 0
intr 1 2 3
"""


def test_proc_stat_per_cpu_rows_only():
    rows = parse_proc_stat(STAT)
    assert rows == (
        (17109, 0, 2682, 40526, 55, 0, 25, 61, 0, 0),
        (23166, 0, 3642, 33408, 168, 0, 100, 59, 0, 0),
    )


def _snap(wall_s: float, cpu_rows, own_cpu_s: float, invol: int = 0) -> Snapshot:
    return Snapshot(int(wall_s * 1e9), tuple(tuple(r) for r in cpu_rows), own_cpu_s, invol, 0)


def _no_files(_path: str):
    return None


def test_between_reads_steal_others_busy_and_switches():
    # 10 s on 2 CPUs at 100 ticks/s: 2000 ticks. CPU0 busy 900 (user) + steal 100, CPU1
    # busy 1000: 1900 busy ticks = 19 CPU s; this process used 9 of them.
    before = _snap(0, [[0] * 10, [0] * 10], 0.0)
    after = _snap(
        10, [[900, 0, 0, 0, 0, 0, 0, 100, 0, 0], [800, 0, 200, 0, 0, 0, 0, 0, 0, 0]], 9.0, invol=250
    )
    out = between(before, after, clock_ticks=100, read=_no_files)
    assert out["cpus"] == 2
    assert out["steal"] == pytest.approx(100 / 2000)
    assert out["busy_cpus"] == pytest.approx(1.9)
    # one tick per CPU of slack for the coarse clock
    assert out["others_busy_cpus"] == pytest.approx((19 - 9 - 0.02) / 10, abs=1e-3)
    assert out["cpu_per_wall"] == pytest.approx(0.9)
    assert out["involuntary_switches"] == 250
    assert out["involuntary_switches_per_s"] == pytest.approx(25.0)
    # what could not be read is None with the reason, never 0
    assert out["load_avg_1m"] is None and "load_avg" in out["notes"]
    assert out["freq_mhz"] is None and out["notes"]["freq"].startswith("not available")


def test_between_without_proc_stat_says_so():
    snap = Snapshot(0, None, 0.0, 0, 0)
    out = between(snap, Snapshot(10**9, None, 0.5, 3, 0), read=_no_files)
    assert out["steal"] is None and out["others_busy_cpus"] is None
    assert "not readable" in out["notes"]["proc_stat"]


def test_frequency_where_cpufreq_is_readable():
    mhz, why = conditions.frequency_mhz(lambda path: "2400000\n" if "cpufreq" in path else None)
    assert mhz == 2400.0 and why is None


def test_busy_reasons_name_each_cause():
    quiet = {"steal": 0.01, "others_busy_cpus": 0.1, "cpus": 2, "calibration": {"cpu_share": 0.97}}
    assert busy_reasons(quiet) == []
    busy = {"steal": 0.12, "others_busy_cpus": 1.6, "cpus": 2, "calibration": {"cpu_share": 0.6}}
    assert busy_reasons(busy) == [
        "12% of CPU time stolen by the hypervisor",
        "other processes kept 1.6 of 2 CPUs busy",
        "the calibration workload got 60% of a CPU",
    ]
    assert busy_reasons(None) == []


def test_recorded_calibrates_around_the_block():
    rounds = iter([(10_000_000, 9_000_000), (12_000_000, 9_500_000)])
    out: dict = {}
    with conditions.recorded(out, calibrate_rounds=2, round_fn=lambda: next(rounds)):
        time.sleep(0.01)  # an empty block can round to wall_s 0.0
    cal = out["calibration"]
    assert cal["rounds_wall_ms"] == [10.0, 12.0]
    assert cal["wall_ms"] == 11.0 and cal["cpu_ms"] == 9.25
    assert cal["cpu_share"] == pytest.approx(9.25 / 11.0, abs=1e-4)
    assert cal["version"] == conditions.CALIBRATION_VERSION
    assert "busy_reasons" in out and out["wall_s"] >= 0.01


def test_the_calibration_does_fixed_work():
    wall, cpu = conditions.calibration_round()
    wall2, cpu2 = conditions.calibration_round()  # same result, else it raises
    assert wall > 0 and cpu > 0 and wall2 > 0 and cpu2 > 0


# -- the noise floor ------------------------------------------------------------------
def _cond(wall_ms: float, cpu_ms: float, others: float = 0.0, share: float = 0.98) -> dict:
    return {
        "others_busy_cpus": others,
        "cpus": 2,
        "steal": 0.0,
        "calibration": {
            "version": conditions.CALIBRATION_VERSION,
            "wall_ms": wall_ms,
            "cpu_ms": cpu_ms,
            "cpu_share": share,
        },
    }


def test_floor_from_the_calibration_now_and_at_baseline():
    floor = floor_of(_cond(21.0, 13.0, others=1.7, share=0.6), _cond(10.0, 10.0))
    assert floor.slowdown_wall == pytest.approx(2.1)
    assert floor.slowdown_cpu == pytest.approx(1.3)
    assert floor.contended and floor.busy_now and not floor.busy_baseline
    assert floor.factor("latency_mean_ms") == pytest.approx(2.1)
    assert floor.factor("cpu_ms_per_call") == pytest.approx(1.3)


def test_a_calibration_within_its_own_noise_counts_as_no_slower():
    floor = floor_of(_cond(10.5, 10.5), _cond(10.0, 10.0))
    assert floor.factor("cpu_ms_per_call") == 1.0
    assert floor.allowed_ratio("cpu_ms_per_call", 0.10) == pytest.approx(1.10)


def test_a_baseline_without_calibration_has_no_slowdown_and_says_why():
    floor = floor_of(_cond(10.0, 10.0), None)
    assert floor.slowdown_cpu is None and "no calibration recorded with the baseline" in floor.note
    assert floor.factor("cpu_ms_per_call") == 1.0


def test_within_the_machines_slowdown_is_inconclusive_with_the_reason():
    floor = floor_of(_cond(21.0, 21.0, others=1.7), _cond(10.0, 10.0))
    j = judge_timing("cpu_ms_per_call", 0.28, 0.10, floor)
    assert j.outcome == "inconclusive"
    assert j.reason.startswith(
        "the machine ran 2.1x slower (cpu time of the calibration) than at baseline time"
    )
    assert "CPU time +28% is within that" in j.reason


def test_a_3x_slowdown_under_load_is_beyond_the_floor():
    floor = floor_of(_cond(15.0, 12.0, others=1.9, share=0.66), _cond(10.0, 10.0))
    j = judge_timing("latency_mean_ms", 2.0, 0.10, floor)
    assert j.outcome == "regressed"
    assert "+200% is beyond the noise floor" in j.reason


def test_a_quiet_machine_catches_a_20_percent_slowdown():
    floor = floor_of(_cond(10.2, 10.1), _cond(10.0, 10.0))
    assert judge_timing("cpu_ms_per_call", 0.20, 0.10, floor).outcome == "regressed"
    assert judge_timing("cpu_ms_per_call", 0.08, 0.10, floor).outcome == "inconclusive"


def test_floor_serialises():
    floor = NoiseFloor(1.5, 1.2, ("x",), ())
    assert floor.to_dict() == {
        "slowdown_wall": 1.5,
        "slowdown_cpu": 1.2,
        "busy_now": ["x"],
        "busy_baseline": [],
        "contended": True,
        "note": None,
        "slowdown_parallel": None,
        "pooled": False,
        "saturated": None,
    }


def test_a_pool_on_every_cpu_is_never_judged_on_its_latency():
    assert saturated(2, 2) == "2 busy threads on 2 CPUs"
    assert saturated(4, 2) == "4 busy threads on 2 CPUs"
    assert saturated(1, 1) == "1 busy thread on 1 CPU"
    assert saturated(2, 4) is None and saturated(None, 2) is None and saturated(2, None) is None
    now = _pooled_cond(10.0, [10.0])
    floor = floor_of(now, now, pooled=True, saturated=saturated(2, 2))
    judged = judge_timing("latency_mean_ms", 2.0, 0.10, floor)  # 3x: still the machine's
    assert judged.outcome == "inconclusive"
    assert judged.reason.startswith(
        "mean latency +200% of a thread pool on every CPU this process may use (2 busy "
        "threads on 2 CPUs): its latency follows whatever else becomes runnable"
    )
    # a single-threaded region is never saturated, whatever it is told
    alone = floor_of(now, now, saturated=saturated(2, 2))
    assert alone.saturated is None
    assert judge_timing("latency_mean_ms", 2.0, 0.10, alone).outcome == "regressed"


def _pooled_cond(wall_ms: float, parallel_ms: list, threads: int = 2, others: float = 0.0) -> dict:
    cond = _cond(wall_ms, wall_ms, others=others)
    cond["calibration"]["parallel_threads"] = threads
    cond["calibration"]["rounds_parallel_wall_ms"] = parallel_ms
    return cond


def test_a_pooled_regions_wall_time_follows_the_parallel_calibration():
    # one CPU of two was taken away: the single-threaded calibration reads the same,
    # the slowest of two threads doing it at once took 2.7x as long
    now, then = _pooled_cond(10.0, [27.0, 30.0]), _pooled_cond(10.0, [10.0, 11.0])
    floor = floor_of(now, then, pooled=True)
    assert floor.slowdown_wall == pytest.approx(1.0)
    assert floor.slowdown_parallel == pytest.approx(2.7)  # fastest round against fastest
    assert floor.factor("latency_mean_ms") == pytest.approx(2.7)
    assert floor.factor("cpu_ms_per_call") == 1.0  # CPU time does not follow it
    assert judge_timing("latency_mean_ms", 1.5, 0.10, floor).outcome == "inconclusive"
    assert judge_timing("latency_mean_ms", 2.5, 0.10, floor).outcome == "regressed"
    # a single-threaded region ignores the parallel rounds
    alone = floor_of(now, then)
    assert alone.factor("latency_mean_ms") == 1.0
    assert judge_timing("latency_mean_ms", 1.5, 0.10, alone).outcome == "regressed"
    # rounds of another thread count are not compared
    assert floor_of(_pooled_cond(10, [27.0], 4), then, pooled=True).slowdown_parallel is None


def test_a_pooled_regions_cpu_time_never_carries_the_verdict():
    floor = floor_of(_pooled_cond(10.0, [10.0]), _pooled_cond(10.0, [10.0]), pooled=True)
    judged = judge_timing("cpu_ms_per_call", 0.8, 0.10, floor)
    assert judged.outcome == "inconclusive"
    assert judged.reason == (
        "CPU time +80% of a region run by a thread pool: its CPU time grows with how long "
        "the pool's threads spin and wait, not only with the work, so latency carries the "
        "verdict"
    )
    # and its latency is judged on a busy machine, not waved through to CPU time
    busy = floor_of(_pooled_cond(10.0, [10.0], others=1.8), _pooled_cond(10.0, [10.0]), pooled=True)
    assert judge_timing("latency_mean_ms", 2.0, 0.10, busy, cpu_time_judged=True).outcome == (
        "regressed"
    )  # 3x against the 1.65x a contended machine may explain


def test_pooled_is_more_than_one_cpu_busy_now_or_then():
    assert pooled(1.8, None) and pooled(None, 1.5) and pooled(1.0, 1.2)
    assert not pooled(1.0, 1.1) and not pooled(None, None)


def test_the_parallel_round_runs_the_calibration_in_every_thread_at_once():
    wall = conditions.parallel_round(2)
    single, _ = conditions.calibration_round()
    assert wall >= 0.5 * single  # each thread did the whole work
    assert 1 <= conditions.parallel_threads() <= conditions.PARALLEL_THREADS_MAX
    out: dict = {}
    with conditions.recorded(out):
        pass
    cal = out["calibration"]
    if conditions.parallel_threads() > 1:
        assert cal["parallel_threads"] == conditions.parallel_threads()
        assert len(cal["rounds_parallel_wall_ms"]) == conditions.CALIBRATION_ROUNDS
        assert all(v > 0 for v in cal["rounds_parallel_wall_ms"])
    else:
        assert "rounds_parallel_wall_ms" not in cal


def test_time_slicing_excuses_latency_but_not_cpu_time():
    # another process kept the CPUs busy; the calibration's CPU time did not move
    floor = floor_of(_cond(10.5, 10.1, others=1.8), _cond(10.0, 10.0))
    assert floor.busy_now
    assert judge_timing("cpu_ms_per_call", 0.20, 0.10, floor).outcome == "regressed"
    assert judge_timing("latency_mean_ms", 0.20, 0.10, floor).outcome == "inconclusive"
    assert floor.allowed_ratio("latency_mean_ms", 0.10) == pytest.approx(1.65)


def test_on_a_contended_machine_latency_alone_never_fails_where_cpu_time_is_judged():
    floor = floor_of(_cond(10.2, 10.0, others=1.8, share=0.2), _cond(10.0, 10.0))
    j = judge_timing("latency_mean_ms", 0.96, 0.10, floor, cpu_time_judged=True)
    assert j.outcome == "inconclusive"
    assert "wall time there follows the scheduler, so CPU time carries the verdict" in j.reason
    # without CPU time (backend none) a latency far beyond the floor still fails
    assert judge_timing("latency_mean_ms", 2.0, 0.10, floor).outcome == "regressed"


def _rounds(wall: list[float], cpu: list[float]) -> dict:
    import statistics

    return {
        "calibration": {
            "version": conditions.CALIBRATION_VERSION,
            "rounds_wall_ms": wall,
            "rounds_cpu_ms": cpu,
            "wall_ms": statistics.median(wall),
            "cpu_ms": statistics.median(cpu),
        }
    }


def test_the_floor_compares_the_fastest_calibration_rounds(monkeypatch):
    """One disturbed round (19 ms of 10) does not make the machine read 1.45x slower."""
    now, then = _rounds([10.1, 19.0], [10.2, 19.0]), _rounds([10.0, 10.0], [10.0, 10.0])
    floor = floor_of(now, then)
    assert floor.slowdown_wall == pytest.approx(1.01)
    assert floor.slowdown_cpu == pytest.approx(1.02)
    assert floor.factor("cpu_ms_per_call") == 1.0
    from pytest_inferperf.judge import noise

    monkeypatch.setattr(noise, "CALIBRATION_STATISTIC", "median")  # the rule before
    assert floor_of(now, then).slowdown_cpu == pytest.approx(1.46)


@pytest.mark.parametrize(
    "rounds", [[], [0.0, 10.0], ["10", 10.0], [True, 10.0], [float("nan"), 10.0], None]
)
def test_unusable_rounds_fall_back_to_the_stored_median(rounds):
    cal = _rounds([12.0, 12.0], [12.0, 12.0])
    cal["calibration"]["rounds_cpu_ms"] = rounds
    floor = floor_of(cal, _rounds([10.0, 10.0], [10.0, 10.0]))
    assert floor.slowdown_cpu == pytest.approx(1.2)


def test_busy_threads_are_those_that_ran_a_tenth_of_the_wall_time_or_more(profile_factory):
    from dataclasses import replace

    profile = profile_factory({"task_clock": 8e5}, repeats=2, calls=10)  # 8 ms a repeat
    assert profile.busy_threads() is None  # no thread's own clock was counted
    repeats = tuple(
        replace(
            rep,
            sample=replace(
                rep.sample,
                per_thread={
                    1: {"task_clock": 7.9e6},
                    2: {"task_clock": 4e6},
                    3: {"task_clock": 3e5},
                },
            ),
        )
        for rep in profile.repeats
    )
    pooled_profile = profile.with_(repeats=repeats)
    # the caller and a worker that took half the wall time; a thread at 4% is not busy
    assert pooled_profile.busy_threads() == 2
    assert pooled_profile.busy_threads(share=0.6) == 1
