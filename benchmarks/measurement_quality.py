"""How good are pytest-inferperf's measurements on this machine? One run, all side by side.

1. Overhead: the fixed cost of starting, stopping and reading the counter groups (1, 4
   and 16 threads alive); a profiled call with counting (``backend="perf"``) against
   without (``backend="none"``); and ``perf stat`` attached to this process for the same
   loop, against in-process counting of that loop.
2. Sensitivity: a small int8 ONNX Runtime CNN (about 2 ms per call) with injected
   slowdowns of 0, 0.5, 1, 2, 5 and 10% (extra real work, calibrated once), a baseline
   and a current profile per trial and level, judged by pytest-inferperf (per metric,
   default tolerances and tolerance 0; backends perf and simulate) and by
   pytest-benchmark's ``--benchmark-compare-fail``. Detection and false-alarm rates, and
   the smallest slowdown detected in >= 80% of trials while false alarms stay <= 5%.
3. Suite cost: ``pytest --inferperf examples/`` with ``-n 0`` and ``-n 2``.

The simulate backend's trials (valgrind, deterministic counts) run last, after every
timed section, several at once (``--simulate-jobs``).

Usage::

    python benchmarks/measurement_quality.py [--trials N] [--quick] [--out docs/benchmarks]

Writes ``results.json`` and ``results.md`` under ``--out`` after every trial, so an
interrupted run leaves its completed trials behind (``"complete": false``).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import json
import math
import os
import platform
import random
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import bench_workload as bw  # first: it pins BLAS to one thread before numpy loads
from bench_report import render_markdown, summarise
from bench_runs import (
    SIM_BASELINE,
    PeerRunner,
    SimulateRunner,
    cpu_model,
    peer_available,
    prepare_suite,
    run_suite,
    simulate_status,
)

from pytest_inferperf import profile
from pytest_inferperf.core.profile import Profile
from pytest_inferperf.diagnose.assessment import assess as judge
from pytest_inferperf.judge.budgets import PerfSpec
from pytest_inferperf.judge.comparison import DEFAULT_TOLERANCES, MIN_REPEATS

SCHEMA = "pytest-inferperf/measurement-quality"
DEFAULT_LEVELS = (0.0, 0.005, 0.01, 0.02, 0.05, 0.10)
SECTIONS = ("overhead", "perf_stat", "suite", "sensitivity", "peer", "simulate")
PEER_THRESHOLDS = (5, round(DEFAULT_TOLERANCES["cpu_ms_per_call"] * 100))
TIMING_METRICS = ("cpu_ms_per_call", "latency_mean_ms")
SIM_METRIC = "instructions_per_call"

_T0 = time.monotonic()


def log(text: str) -> None:
    print(f"[{time.monotonic() - _T0:7.1f}s] {text}", file=sys.stderr, flush=True)


# -- the machine -------------------------------------------------------------------
def machine_section() -> dict[str, Any]:
    import numpy
    import onnxruntime

    from pytest_inferperf.measure.machine import this_cpu
    from pytest_inferperf.pmu.perf_backend import PerfEventCounters

    cpu = this_cpu()
    pmu: dict[str, Any] = {}
    counters = PerfEventCounters(events=("cycles", "instructions", "task_clock"))
    try:
        counters.open()
        statuses = counters.statuses()
        pmu = {
            "exists": statuses["cycles"].available and statuses["instructions"].available,
            "cycles": statuses["cycles"].reason or "counted",
            "task_clock": statuses["task_clock"].reason or "counted",
        }
    except Exception as exc:
        pmu = {"exists": False, "error": f"{type(exc).__name__}: {exc}"}
    finally:
        counters.close()
    try:
        import pytest_benchmark

        peer_version = getattr(pytest_benchmark, "__version__", "unknown")
    except ImportError:
        peer_version = None
    paranoid = None
    with contextlib.suppress(OSError, ValueError):
        paranoid = int(Path("/proc/sys/kernel/perf_event_paranoid").read_text())
    return {
        "machine_class": cpu.machine_class,
        "cpu_model": cpu_model(),
        "cpus": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)),
        "virtualised": _virtualised(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "onnxruntime": onnxruntime.__version__,
        "numpy": numpy.__version__,
        "pytest_benchmark": peer_version,
        "perf_event_paranoid": paranoid,
        "pmu": pmu,
        "perf_tool": shutil.which("perf") is not None,
        "valgrind": shutil.which("valgrind") is not None,
        "load_avg_start": list(os.getloadavg()),
    }


def _virtualised() -> bool | None:
    with contextlib.suppress(OSError):
        return " hypervisor" in Path("/proc/cpuinfo").read_text()
    return None


# -- 1. overhead --------------------------------------------------------------------
from counting_cost import idle_threads  # noqa: E402  (one way to hold N threads alive)


def _pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def start_stop_cost(thread_counts: Sequence[int], samples: int) -> list[dict[str, Any]]:
    """Median µs of PerfEventCounters.start() + stop() (stop reads every group)."""
    from pytest_inferperf.pmu.perf_backend import PerfEventCounters, thread_ids

    out = []
    for wanted in thread_counts:
        with idle_threads(wanted):
            alive = len(thread_ids())
            counters = PerfEventCounters()
            counters.open()
            try:
                start_us, stop_us, total_us = [], [], []
                for _ in range(20):
                    counters.start()
                    counters.stop()
                for _ in range(samples):
                    t0 = time.perf_counter_ns()
                    counters.start()
                    t1 = time.perf_counter_ns()
                    counters.stop()
                    t2 = time.perf_counter_ns()
                    start_us.append((t1 - t0) / 1e3)
                    stop_us.append((t2 - t1) / 1e3)
                    total_us.append((t2 - t0) / 1e3)
                out.append(
                    {
                        "threads_alive": alive,
                        "counted_threads": len(counters.threads),
                        "open_fds": counters.open_fds,
                        "samples": samples,
                        "median_us": statistics.median(total_us),
                        "p90_us": _pct(total_us, 0.9),
                        "p10_us": _pct(total_us, 0.1),
                        "start_median_us": statistics.median(start_us),
                        "stop_read_median_us": statistics.median(stop_us),
                    }
                )
            finally:
                counters.close()
        log(f"start/stop with {alive} threads: {out[-1]['median_us']:.1f} µs median")
    return out


def profile_vs_none(call: Callable[[], Any], pairs: int) -> dict[str, Any]:
    """profile(backend="perf") against profile(backend="none"), alternating."""
    ratios, ratios_p50, perf_ms, none_ms, overhead_ns, calls = [], [], [], [], [], []
    for i in range(pairs):
        order = ("perf", "none") if i % 2 == 0 else ("none", "perf")
        got: dict[str, Profile] = {}
        for backend in order:
            got[backend] = profile(call, name=f"overhead-{backend}", backend=backend)
        ratios.append(got["perf"].latency.mean_ms / got["none"].latency.mean_ms)
        ratios_p50.append(got["perf"].latency.p50_ms / got["none"].latency.p50_ms)
        perf_ms.append(got["perf"].latency.mean_ms)
        none_ms.append(got["none"].latency.mean_ms)
        overhead_ns.append(got["perf"].overhead.get("task_clock", float("nan")))
        calls.append(got["perf"].settings.get("calls_per_repeat"))
    result = {
        "pairs": pairs,
        "latency_mean_ratio": statistics.median(ratios),
        "latency_p50_ratio": statistics.median(ratios_p50),
        "ratios": ratios,
        "perf_mean_ms": statistics.median(perf_ms),
        "none_mean_ms": statistics.median(none_ms),
        "empty_start_stop_task_clock_us": statistics.median(overhead_ns) / 1e3,
        "calls_per_repeat": statistics.median(calls),
    }
    log(f"profile perf/none latency ratio {result['latency_mean_ratio']:.4f}")
    return result


def _perf_usable() -> str | None:
    if shutil.which("perf") is None:
        return "perf is not installed (apt install linux-perf)"
    try:
        proc = subprocess.run(
            ["perf", "stat", "-x", ",", "-e", "task-clock", "true"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"perf stat does not run: {exc}"
    if proc.returncode != 0 or "task-clock" not in proc.stderr:
        return f"perf stat does not run: {proc.stderr.strip().splitlines()[-1:]}"
    return None


def perf_stat_cost(
    call: Callable[[], Any], base_ns: float, rounds: int, loop_s: float
) -> dict[str, Any]:
    """The same loop plain, with `perf stat -p <this pid>` attached, and with our counters."""
    from pytest_inferperf.pmu.perf_backend import PerfEventCounters

    reason = _perf_usable()
    if reason:
        log(f"perf stat: skipped: {reason}")
        return {"skipped": reason}
    calls = max(20, math.ceil(loop_s * 1e9 / base_ns))

    def loop() -> float:
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            call()
        return (time.perf_counter_ns() - t0) / 1e9

    def with_perf_stat() -> tuple[float, float | None]:
        proc = subprocess.Popen(
            ["perf", "stat", "-x", ",", "-e", "task-clock,page-faults", "-p", str(os.getpid())],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            time.sleep(0.5)  # let perf attach to every thread (outside the timed loop)
            wall = loop()
        finally:
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=60)
        counted = None
        for line in err.splitlines():
            parts = line.split(",")
            if len(parts) > 2 and parts[2].startswith("task-clock"):
                with contextlib.suppress(ValueError):
                    counted = float(parts[0])
        return wall, counted

    def with_inferperf() -> float:
        counters = PerfEventCounters()
        counters.open()
        try:
            t0 = time.perf_counter_ns()
            counters.start()
            for _ in range(calls):
                call()
            counters.stop()
            return (time.perf_counter_ns() - t0) / 1e9
        finally:
            counters.close()

    plain, stat, ours, counted = [], [], [], []
    kinds = ["plain", "perf_stat", "inferperf"]
    for r in range(rounds):
        for kind in kinds[r % 3 :] + kinds[: r % 3]:
            if kind == "plain":
                plain.append(loop())
            elif kind == "perf_stat":
                wall, ms = with_perf_stat()
                stat.append(wall)
                counted.append(ms)
            else:
                ours.append(with_inferperf())
    stat_ratios = [s / p for s, p in zip(stat, plain, strict=True)]
    ours_ratios = [o / p for o, p in zip(ours, plain, strict=True)]
    result = {
        "rounds": rounds,
        "loop_calls": calls,
        "plain_s": statistics.median(plain),
        "perf_stat_ratio": statistics.median(stat_ratios),
        "inferperf_ratio": statistics.median(ours_ratios),
        "plain_spread": (max(plain) - min(plain)) / statistics.median(plain),
        "walls_s": {"plain": plain, "perf_stat": stat, "inferperf": ours},
        "perf_stat_counted_task_clock_ms": [c for c in counted if c is not None],
        "command": "perf stat -x , -e task-clock,page-faults -p <pid>",
    }
    log(
        f"perf stat attached: loop ratio {result['perf_stat_ratio']:.4f}; in-process counters "
        f"{result['inferperf_ratio']:.4f}"
    )
    return result


# -- 2. sensitivity -------------------------------------------------------------------
def _change(verdict: Any, metric: str) -> dict[str, Any] | None:
    if verdict.comparison is None:
        return None
    for change in verdict.comparison.changes:
        if change.metric == metric:
            return {
                "delta": change.delta,
                "p": change.p_value,
                "status": change.status,
                "regressed": metric in {c.metric for c in verdict.regressions},
            }
    return None


def judge_pair(current: Profile, baseline: Profile, metrics: Sequence[str]) -> dict[str, Any]:
    """Our verdicts: default tolerances, and tolerance 0 on ``metrics``."""
    default = judge(
        "mq::workload",
        current,
        PerfSpec(),
        baseline=baseline,
        baseline_note="measured in this trial",
    )
    zero = judge(
        "mq::workload",
        current,
        PerfSpec(tolerance={m: 0.0 for m in metrics}),
        baseline=baseline,
        baseline_note="measured in this trial",
    )
    return {
        "verdict_failed": default.failed,
        "default": {m: _change(default, m) for m in metrics},
        "zero": {m: _change(zero, m) for m in metrics},
    }


def ours_trial(
    workload: bw.Workload, counts: Mapping[str, int], trial: int, seed: int
) -> dict[str, Any]:
    """A baseline and a current profile per level (levels shuffled, order alternating)."""
    labels = list(counts)
    position = {label: i for i, label in enumerate(labels)}
    random.Random(seed * 1009 + trial).shuffle(labels)
    out: dict[str, Any] = {}
    for label in labels:
        calls = {"baseline": workload.call(0), "current": workload.call(counts[label])}
        # Which profile goes first alternates per level from trial to trial: balanced.
        first_baseline = (trial + position[label]) % 2 == 0
        order = ("baseline", "current") if first_baseline else ("current", "baseline")
        got: dict[str, Profile] = {}
        seconds: dict[str, float] = {}
        for role in order:
            t0 = time.perf_counter()
            got[role] = profile(calls[role], name=f"{role}-{label}", backend="perf")
            seconds[role] = time.perf_counter() - t0
        record = judge_pair(got["current"], got["baseline"], TIMING_METRICS)
        record["first"] = order[0]
        record["profile_s"] = seconds
        out[label] = record
    return out


def simulate_trial(runner: SimulateRunner, labels: Sequence[str], trial: int) -> dict[str, Any]:
    """One pytest run: a simulate baseline (test id ``base``) and a profile per level.

    The baseline is a test of its own measuring the plain call, like the 0% level: the
    0% level's verdict is the false alarm.
    """
    profiles, wall = runner.run(trial, [SIM_BASELINE, *labels])
    baseline = Profile.from_dict(profiles[SIM_BASELINE])
    out: dict[str, Any] = {
        "trial": trial,
        "wall_s": wall,
        "profiles": len(profiles),
        "repeats": len(baseline.repeats),
        "levels": {},
    }
    for label in labels:
        record = judge_pair(Profile.from_dict(profiles[label]), baseline, (SIM_METRIC,))
        out["levels"][label] = record
    return out


# -- the run -----------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--trials",
        type=int,
        default=None,
        help="trials per slowdown level (default 20; 2 with --quick)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="a fast, rough run (about a minute): fewer samples and rounds",
    )
    p.add_argument(
        "--out",
        default="docs/benchmarks",
        help="folder for results.json and results.md (default docs/benchmarks)",
    )
    p.add_argument(
        "--levels",
        default=None,
        help="slowdown levels in %%, comma-separated (default 0,0.5,1,2,5,10)",
    )
    p.add_argument(
        "--skip", default="", help=f"sections to leave out, comma-separated: {', '.join(SECTIONS)}"
    )
    p.add_argument(
        "--simulate-trials",
        type=int,
        default=None,
        help="trials with the simulate backend, where it is usable: one pytest "
        "run per trial, each of its profiles (a baseline and one per level) "
        "re-running its test under valgrind (default: --trials; 0 with "
        "--quick)",
    )
    p.add_argument(
        "--simulate-jobs",
        type=int,
        default=2,
        help="simulate trials run at once, in parallel pytest processes (default "
        "2): the counts are instruction counts, not times, so parallel runs "
        "do not disturb them",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--rerender",
        action="store_true",
        help="measure nothing: recompute the summary and results.md from the "
        "results.json under --out (after a change to the report code)",
    )
    args = p.parse_args(argv)
    args.trials = args.trials if args.trials is not None else (2 if args.quick else 20)
    if args.simulate_trials is None:
        args.simulate_trials = 0 if args.quick else args.trials
    if args.trials < 1:
        p.error("--trials must be >= 1")
    if args.simulate_trials < 0:
        p.error("--simulate-trials must be >= 0")
    if args.simulate_jobs < 1:
        p.error("--simulate-jobs must be >= 1")
    if args.levels:
        args.level_values = sorted({float(x) / 100 for x in args.levels.split(",") if x.strip()})
    else:
        args.level_values = list(DEFAULT_LEVELS)
    if 0.0 not in args.level_values:
        args.level_values.insert(0, 0.0)
    args.skipped = {s.strip() for s in args.skip.split(",") if s.strip()}
    unknown = args.skipped - set(SECTIONS)
    if unknown:
        p.error(f"unknown section(s) in --skip: {', '.join(sorted(unknown))}")
    return args


def scrub(text: str) -> str:
    """Text for the repository: no absolute local paths, no host name."""
    here = Path(__file__).resolve().parent.parent
    for path, name in (
        (str(here), "<repo>"),
        (sys.prefix, "<venv>"),
        (tempfile.gettempdir(), "<tmp>"),
        (str(Path.home()), "<home>"),
    ):
        if len(path) > 1:
            text = text.replace(path, name)
    host = platform.node()
    if len(host) >= 4:
        text = text.replace(host, "<host>")
    return text


class Results:
    """The results document, written (JSON and Markdown) at every checkpoint."""

    def __init__(self, out: Path, data: dict[str, Any]) -> None:
        self.out = out
        self.data = data

    def save(self, *, complete: bool = False, rerender: bool = False) -> None:
        self.data["complete"] = complete
        if not rerender:
            self.data["duration_s"] = round(time.monotonic() - _T0, 1)
        self.data["summary"] = summarise(self.data)
        self.out.mkdir(parents=True, exist_ok=True)
        tmp = self.out / ".results.json.tmp"
        tmp.write_text(scrub(json.dumps(self.data, indent=1, sort_keys=False)) + "\n")
        os.replace(tmp, self.out / "results.json")
        tmp = self.out / ".results.md.tmp"
        tmp.write_text(scrub(render_markdown(self.data)))
        os.replace(tmp, self.out / "results.md")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if args.rerender:
        saved = json.loads((Path(args.out) / "results.json").read_text())
        existing = Results(Path(args.out), saved)
        existing.save(complete=existing.data.get("complete", False), rerender=True)
        log(f"re-rendered {existing.out / 'results.md'}")
        return 0
    quick = args.quick
    labels = [bw.level_label(v) for v in args.level_values]
    results = Results(
        Path(args.out),
        {
            "schema": SCHEMA,
            "version": 1,
            "command": shlex.join(["python", "benchmarks/measurement_quality.py", *argv]),
            "parameters": {
                "trials": args.trials,
                "quick": quick,
                "levels": labels,
                "skipped": sorted(args.skipped),
                "simulate_trials": args.simulate_trials,
                "simulate_jobs": args.simulate_jobs,
                "seed": args.seed,
                "peer_thresholds_pct": list(PEER_THRESHOLDS),
                "default_tolerances": {
                    m: DEFAULT_TOLERANCES[m] for m in (*TIMING_METRICS, SIM_METRIC)
                },
            },
            "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "machine": machine_section(),
        },
    )
    log(
        f"machine: {results.data['machine']['cpu_model']}, load "
        f"{results.data['machine']['load_avg_start']}"
    )
    scratch = Path(tempfile.mkdtemp(prefix="inferperf-mq-"))
    try:
        run_all(args, labels, results, scratch, quick)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    results.data["machine"]["load_avg_end"] = list(os.getloadavg())
    results.save(complete=True)
    log(f"done: {results.out / 'results.md'}")
    return 0


def _section(results: Results, name: str, fn: Callable[[], Any]) -> Any:
    """Run one section; an exception is recorded as the section's error, not fatal."""
    try:
        value = fn()
    except Exception as exc:
        log(f"{name}: ERROR {type(exc).__name__}: {exc}")
        value = {"error": f"{type(exc).__name__}: {exc}"}
    return value


def run_all(
    args: argparse.Namespace, labels: list[str], results: Results, scratch: Path, quick: bool
) -> None:
    data = results.data
    skipped = args.skipped
    # The workload and its calibration come first: every section uses them.
    model = bw.build_model(scratch / "bench_cnn.onnx")
    workload = bw.Workload(model)
    cal = bw.calibrate(workload, args.level_values, quick=quick)
    realised = bw.realised_slowdowns(workload, cal.counts, rounds=30 if quick else 300)
    data["workload"] = {
        "model": bw.describe_model(),
        **cal.to_dict(),
        "realised_slowdown": realised,
        "extra_work": "a pure-Python integer loop of n iterations after each "
        "inference, n calibrated once (10th percentile of thread "
        "CPU time; see bench_workload.py for why not numpy)",
    }
    log(
        f"workload {cal.base_ns / 1e6:.3f} ms/call; iterations {dict(cal.counts)}; realised "
        f"{ {k: round(v, 4) for k, v in realised.items()} }"
    )
    plain = workload.call(0)

    overhead: dict[str, Any] = {}
    if "overhead" in skipped:
        overhead["skipped"] = "--skip overhead"
    else:
        overhead["start_stop"] = _section(
            results, "start/stop", lambda: start_stop_cost((1, 4, 16), 100 if quick else 2000)
        )
        overhead["profile_vs_none"] = _section(
            results, "perf vs none", lambda: profile_vs_none(plain, 1 if quick else 20)
        )
    if "perf_stat" in skipped:
        overhead["perf_stat"] = {"skipped": "--skip perf_stat"}
    else:
        overhead["perf_stat"] = _section(
            results,
            "perf stat",
            lambda: perf_stat_cost(plain, cal.base_ns, 1 if quick else 6, 0.1 if quick else 0.5),
        )
    data["overhead"] = overhead
    results.save()

    if "suite" in skipped:
        data["suite"] = {"skipped": "--skip suite"}
    else:
        data["suite"] = _section(
            results, "suite", lambda: suite_section(scratch / "suite", 1 if quick else 2)
        )
    results.save()

    sensitivity_section(args, labels, results, scratch, model, workload, cal, quick)
    # The conditions every timing number was measured in end here.
    data["machine"]["load_avg_timed_end"] = list(os.getloadavg())
    # Last: valgrind runs in parallel processes, which would compete with any timing.
    simulate_section(args, labels, results, scratch, model, cal)


def suite_section(scratch: Path, rounds: int) -> dict[str, Any]:
    scratch.mkdir(parents=True, exist_ok=True)
    prepare_suite(scratch)
    runs: dict[str, list[dict[str, Any]]] = {"n0": [], "n2": []}
    order = ["n0", "n2"]
    for r in range(rounds):
        for tag in order if r % 2 == 0 else order[::-1]:
            run = run_suite(scratch, int(tag[1:]), f"{tag}-{r}")
            runs[tag].append(run)
            log(f"suite -{tag[0]} {tag[1:]}: {run['wall_s']:.1f} s, {run['summary']}")
    wall = {tag: statistics.median(r["wall_s"] for r in rs) for tag, rs in runs.items()}
    outcomes = {
        tag: [{k: (v["outcome"], v["failed"]) for k, v in r["verdicts"].items()} for r in rs]
        for tag, rs in runs.items()
    }
    all_maps = outcomes["n0"] + outcomes["n2"]
    identical = bool(all_maps) and all(m == all_maps[0] and m for m in all_maps)
    cpu_ratio = {}
    for key in runs["n0"][0]["verdicts"]:
        a = runs["n0"][0]["verdicts"][key].get("cpu_ms_per_call")
        b = runs["n2"][0]["verdicts"].get(key, {}).get("cpu_ms_per_call")
        if a and b:
            cpu_ratio[key] = b / a
    return {
        "rounds": rounds,
        "command": "pytest --inferperf examples -n {0|2} --inferperf-flamegraphs none "
        "(a scratch copy of examples/, no baselines)",
        "wall_s": wall,
        "ratio_n2_over_n0": wall["n2"] / wall["n0"],
        "verdicts_identical": identical,
        "cpu_ms_per_call_ratio_n2_over_n0": cpu_ratio,
        "runs": runs,
    }


def sensitivity_section(
    args: argparse.Namespace,
    labels: list[str],
    results: Results,
    scratch: Path,
    model: Path,
    workload: bw.Workload,
    cal: bw.Calibration,
    quick: bool,
) -> None:
    """The timed detectors (our perf backend, pytest-benchmark), trial by trial."""
    data = results.data
    sens: dict[str, Any] = {
        "trials_planned": args.trials,
        "trials_done": 0,
        "ours": [],
        "peer": [],
        "simulate": [],
    }
    data["sensitivity"] = sens
    run_ours = "sensitivity" not in args.skipped
    peer = None
    if "peer" in args.skipped:
        sens["peer_status"] = {"available": False, "reason": "--skip peer"}
    elif (reason := peer_available()) is not None:
        sens["peer_status"] = {"available": False, "reason": reason}
    else:
        peer = PeerRunner(scratch / "peer", model, cal.counts, PEER_THRESHOLDS, quick=quick)
        sens["peer_status"] = {
            "available": True,
            "thresholds_pct": list(PEER_THRESHOLDS),
            "settings": "pytest-benchmark defaults (min_rounds 5, max_time "
            "1 s, timer perf_counter), one process for the "
            "autosaved baseline and one for the compare run"
            + ("; --quick: max_time 0.1 s, machine info not collected" if quick else ""),
        }
    results.save()
    if not run_ours and peer is None:
        sens["trials_planned"] = 0
        log("sensitivity: no timed detector to run (perf backend and pytest-benchmark skipped)")
        return
    for trial in range(args.trials):
        t0 = time.perf_counter()
        if run_ours:
            try:
                sens["ours"].append(ours_trial(workload, cal.counts, trial, args.seed))
            except Exception as exc:
                sens.setdefault("errors", []).append(f"ours trial {trial}: {exc}")
                log(f"ours trial {trial}: ERROR {exc}")
        if peer is not None:
            try:
                sens["peer"].append(peer.trial(trial))
            except Exception as exc:
                sens.setdefault("errors", []).append(f"peer trial {trial}: {exc}")
                log(f"peer trial {trial}: ERROR {exc}")
        sens["trials_done"] = trial + 1
        results.save()
        log(f"trial {trial + 1}/{args.trials} done in {time.perf_counter() - t0:.1f} s")


def simulate_section(
    args: argparse.Namespace,
    labels: list[str],
    results: Results,
    scratch: Path,
    model: Path,
    cal: bw.Calibration,
) -> None:
    """The simulate backend's trials, ``--simulate-jobs`` pytest processes at a time.

    Run after every timed section: valgrind keeps CPUs busy for minutes. Parallel runs
    are safe for what this measures: callgrind counts instructions, which do not depend
    on what else runs. Trials are stored in trial order as they finish.
    """
    sens = results.data["sensitivity"]
    planned = args.simulate_trials
    sens.update(
        {
            "simulate_trials_planned": planned,
            "simulate_trials_done": 0,
            "simulate_jobs": args.simulate_jobs,
            "rank_test_min_repeats": MIN_REPEATS,
            "simulate": [],
        }
    )
    if "simulate" in args.skipped:
        sens["simulate_status"] = {"available": False, "missing": ["--skip simulate"]}
    elif planned < 1:
        sens["simulate_status"] = {
            "available": False,
            "missing": [
                "--simulate-trials 0 (the default with --quick: each simulated profile re-runs "
                "its test under valgrind)"
            ],
        }
    else:
        status = simulate_status(scratch / "simulate-probe")
        sens["simulate_status"] = status
        log(
            f"simulate backend: {'usable' if status['available'] else 'not usable'}"
            + ("" if status["available"] else f": {'; '.join(status['missing'])}")
        )
    results.save()
    if not sens["simulate_status"].get("available"):
        return
    runner = SimulateRunner(scratch / "simulate", model, cal.counts)
    jobs = min(args.simulate_jobs, planned)
    sens["simulate_jobs"] = jobs  # at once, in fact
    begin = time.perf_counter()
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="mq-sim")
    try:
        futures = {pool.submit(simulate_trial, runner, labels, t): t for t in range(planned)}
        for future in concurrent.futures.as_completed(futures):
            trial = futures[future]
            try:
                record = future.result()
            except Exception as exc:
                sens.setdefault("errors", []).append(f"simulate trial {trial}: {exc}")
                log(f"simulate trial {trial}: ERROR {str(exc).splitlines()[0]}")
            else:
                sens["simulate"].append(record)
                sens["simulate"].sort(key=lambda r: r["trial"])
                log(
                    f"simulate trial {trial + 1}/{planned}: {record['profiles']} profiles in "
                    f"{record['wall_s']:.1f} s"
                )
            sens["simulate_trials_done"] = len(sens["simulate"])
            sens["simulate_wall_s"] = time.perf_counter() - begin
            results.save()
    finally:  # interrupted: start no further trial (the running ones finish or die)
        pool.shutdown(wait=True, cancel_futures=True)


if __name__ == "__main__":
    raise SystemExit(main())
