"""How close to the physical limit do we measure? Counting cost, simulate modes, suites.

One run, side by side, each section interleaving what it compares:

1. ``counting``: one counted repeat against one raw group ``read()``
   (``counting_cost.py``), 1, 4 and 16 threads;
2. ``simulate``: the shipped simulate example (``examples/test_simulated.py``,
   a scratch copy) as shipped, which asks for cache and branch budgets (full
   simulation), against the same tests without those budgets (chosen
   automatically: instructions only): wall time, instructions per call, mode;
3. ``suite``: ``pytest --inferperf examples -n 0`` against ``-n 2``, and what one
   process pays before its first test (``parallel_suites.startup``);
4. ``suite40``: the same on a generated suite of 40 small perf tests;
5. ``peers``: pytest-benchmark and pytest-codspeed side by side where they have
   the same figure: per call of an empty function, and a suite with the plugin
   installed but off (``parallel_suites.peers``);
6. ``resolution``: the simulate backend's own tolerance at work: trials of the
   benchmark's int8 CNN (``bench_workload.py``) under
   ``--inferperf-backend simulate``, each a baseline, the plain call again (a
   false alarm if flagged) and the call with extra work worth 0.5% of its
   instructions (calibrated on a first simulated run), judged with the shipped
   defaults: detection and false-alarm rates, and the tolerance used.

Usage::

    python benchmarks/physical_limits.py [--skip counting,simulate,suite,suite40,peers]
        [--rounds N]
        [--suite-rounds N] [--samples N] [--out DIR]

Writes ``limits.json`` under ``--out`` and, where ``results.json`` of a full
``measurement_quality.py`` run lies there, adds the figures to it as its
``limits`` section and re-renders ``results.md`` (nothing else of it changes).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import counting_cost
import parallel_suites
from bench_runs import clean_env, prepare_suite, pytest_command, run_timed

SECTIONS = ("counting", "simulate", "suite", "suite40", "peers", "resolution")
CACHE_BUDGETS = re.compile(r"(l1_miss_max|branch_miss_max)=[0-9.]+,\s*")


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def simulate_section(scratch: Path, rounds: int) -> dict[str, Any]:
    """The simulate example as shipped (full) and without cache/branch budgets."""
    prepare_suite(scratch)
    shipped = (scratch / "examples" / "test_simulated.py").read_text()
    variants = {"full": shipped, "instructions": CACHE_BUDGETS.sub("", shipped)}
    if variants["instructions"] == shipped:
        return {"error": "the example's cache/branch budgets were not found to strip"}
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in variants}
    order = list(variants)
    for r in range(rounds):
        for kind in order if r % 2 == 0 else order[::-1]:
            (scratch / "examples" / "test_simulated.py").write_text(variants[kind])
            runs[kind].append(_simulate_run(scratch, f"{kind}-{r}"))
            log(f"simulate {kind}: {runs[kind][-1]['wall_s']:.1f} s")
    (scratch / "examples" / "test_simulated.py").write_text(shipped)
    wall = {k: statistics.median(r["wall_s"] for r in v) for k, v in runs.items()}
    instr: dict[str, dict[str, float]] = {}
    for kind, rs in runs.items():
        for test, rec in rs[0]["tests"].items():
            instr.setdefault(test, {})[kind] = rec.get("instructions_per_call")
    same = all(
        v.get("full")
        and v.get("instructions")
        and abs(v["full"] - v["instructions"]) / v["full"] < 0.001
        for v in instr.values()
    )
    return {
        "command": "pytest --inferperf --inferperf-backend simulate examples/test_simulated.py",
        "rounds": rounds,
        "wall_s": wall,
        "speed_up_instructions_over_full": wall["full"] / wall["instructions"],
        "instructions_per_call": instr,
        "same_instructions_within_0.1pct": same,
        "runs": runs,
        "load_avg_after": list(os.getloadavg()),
    }


def _simulate_run(
    scratch: Path,
    tag: str,
    env_extra: dict[str, str] | None = None,
    target: str = "examples/test_simulated.py",
) -> dict[str, Any]:
    report = scratch / f"report-{tag}"
    shutil.rmtree(report, ignore_errors=True)
    cmd = pytest_command(
        "--inferperf",
        "--inferperf-backend",
        "simulate",
        target,
        "--inferperf-flamegraphs",
        "none",
        "--inferperf-baselines",
        "no-baselines",
        "--inferperf-report",
        str(report),
        off=("cacheprovider", "randomly", "xdist"),
    )
    rc, output, wall = run_timed(cmd, cwd=scratch, env=clean_env(env_extra), timeout=1800)
    tests: dict[str, dict[str, Any]] = {}
    for path in sorted(report.glob("*.json")) if report.is_dir() else []:
        record = json.loads(path.read_text())
        sim = ((record.get("profile") or {}).get("settings") or {}).get("simulation") or {}
        tests[record["key"]] = {
            "outcome": record.get("outcome"),
            "instructions_per_call": (record.get("metrics") or {}).get("instructions_per_call"),
            "mode": sim.get("mode"),
            "child_wall_s": sim.get("child_wall_s"),
            "resolution": (sim.get("resolution") or {}).get("instructions_per_call"),
            "slowdown_vs_native": sim.get("slowdown_vs_native"),
            "includes_start_up": (sim.get("child") or {}).get("includes_start_up"),
            "child_mode": (sim.get("child") or {}).get("mode"),
            "child_pid": (sim.get("child") or {}).get("pid"),
            "region_repeats_s": sum(sim.get("valgrind_repeat_wall_ns") or ()) / 1e9,
        }
    lines = output.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith("Simulated under")), None)
    summary = []
    if start is not None:
        for line in lines[start:]:
            if not line.strip():
                break
            summary.append(line)
    out = {"wall_s": wall, "exit_code": rc, "tests": tests, "summary": summary}
    if rc != 0 or not tests:
        out["output_tail"] = output[-3000:]
    return out


def suite_section(scratch: Path, rounds: int) -> dict[str, Any]:
    """-n 0 against -n 2 on the examples: wall time, and the CPU time every process used.

    CPU time does not shrink when the machine is busy the way wall time grows, so
    it shows what -n 2 adds: a controller and one more worker, each paying pytest's
    start-up with every installed plugin and, in the workers, the imports of numpy,
    onnx and ONNX Runtime (each measured on its own in ``startup``).
    """
    prepare_suite(scratch)
    out = parallel_suites.compare_workers(scratch, "examples", rounds, log)
    out["startup"] = parallel_suites.startup(scratch / "startup", scratch / "examples")
    out["load_avg_after"] = list(os.getloadavg())
    return out


def suite40_section(scratch: Path, rounds: int) -> dict[str, Any]:
    """-n 0 against -n 2 on the generated 40-test suite (``parallel_suites.write_suite``)."""
    parallel_suites.write_suite(scratch)
    out = parallel_suites.compare_workers(scratch, "suite40", rounds, log)
    out["load_avg_after"] = list(os.getloadavg())
    return out


def resolution_section(
    scratch: Path, trials: int, jobs: int, target: float = 0.005
) -> dict[str, Any]:
    """Detection of a ``target`` change in instructions, and false alarms, over ``trials``."""
    import concurrent.futures

    import bench_workload as bw
    from bench_runs import SIM_BASELINE, SimulateRunner

    from pytest_inferperf.core.profile import Profile
    from pytest_inferperf.judge.comparison import compare_profiles

    model = bw.build_model(scratch / "bench_cnn.onnx")
    probe_n = 400

    def per_call(profile: Profile) -> float:
        return statistics.median(profile.per_repeat("instructions"))

    probe = SimulateRunner(scratch / "probe", model, {"0%": 0, "probe": probe_n})
    got, _ = probe.run(0, [SIM_BASELINE, "probe"])
    base, more = (Profile.from_dict(got[k]) for k in (SIM_BASELINE, "probe"))
    per_iteration = (per_call(more) / per_call(base) - 1) / probe_n
    n = max(1, round(target / per_iteration))
    label = f"{target:.1%}"
    runner = SimulateRunner(scratch / "trials", model, {"0%": 0, label: n})
    log(
        f"resolution: {per_iteration:.3%} of the instructions per iteration: {n} iterations "
        f"for {label}"
    )

    def trial(index: int) -> dict[str, Any]:
        profiles, wall = runner.run(index + 1)
        baseline = Profile.from_dict(profiles[SIM_BASELINE])
        out: dict[str, Any] = {"trial": index, "wall_s": wall}
        for lvl in ("0%", label):
            change = compare_profiles(
                Profile.from_dict(profiles[lvl]), baseline, metrics=("instructions_per_call",)
            ).get("instructions_per_call")
            out[lvl] = {
                "delta": change.delta,
                "tolerance": change.tolerance,
                "status": change.status,
                "flagged": change.status == "regressed",
            }
        return out

    done: list[dict[str, Any]] = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for future in concurrent.futures.as_completed(
            [pool.submit(trial, i) for i in range(trials)]
        ):
            try:
                done.append(future.result())
            except Exception as exc:  # a failed trial is reported, not counted
                log(f"resolution trial failed: {str(exc).splitlines()[0]}")
            else:
                log(
                    f"resolution trial {len(done)}/{trials}: "
                    f"{ {k: v['status'] for k, v in done[-1].items() if isinstance(v, dict)} }"
                )
    done.sort(key=lambda r: r["trial"])

    def rate(lvl: str) -> list[int]:
        return [sum(1 for r in done if r[lvl]["flagged"]), len(done)]

    return {
        "trials": len(done),
        "trials_planned": trials,
        "jobs": jobs,
        "level": label,
        "iterations": n,
        "instructions_per_iteration": per_iteration,
        "false_alarms": rate("0%"),
        "detected": rate(label),
        "tolerance_median": statistics.median(
            r[lvl]["tolerance"] for r in done for lvl in ("0%", label)
        )
        if done
        else None,
        "delta_median": {
            lvl: statistics.median(r[lvl]["delta"] for r in done) if done else None
            for lvl in ("0%", label)
        },
        "delta_max_abs_at_0": max((abs(r["0%"]["delta"]) for r in done), default=None),
        "records": done,
        "load_avg_after": list(os.getloadavg()),
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="docs/benchmarks")
    p.add_argument("--skip", default="")
    p.add_argument("--rounds", type=int, default=1, help="rounds of the simulate runs")
    p.add_argument("--suite-rounds", type=int, default=2, help="rounds of the suite runs")
    p.add_argument("--samples", type=int, default=2000, help="timed repeats per variant")
    p.add_argument("--trials", type=int, default=20, help="trials of the resolution section")
    p.add_argument("--jobs", type=int, default=2, help="simulate trials run at once")
    p.add_argument(
        "--keep",
        action="store_true",
        help="keep the sections of an existing limits.json this run does not "
        "measure (each says when it ran)",
    )
    argv = list(sys.argv[1:] if argv is None else argv)
    args = p.parse_args(argv)
    skipped = {s for s in args.skip.split(",") if s}
    if skipped - set(SECTIONS):
        p.error(f"unknown section(s): {', '.join(sorted(skipped - set(SECTIONS)))}")
    data: dict[str, Any] = {
        "command": shlex.join(["python", "benchmarks/physical_limits.py", *argv]),
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        "load_avg_start": list(os.getloadavg()),
    }
    out = Path(args.out)
    scratch = Path(tempfile.mkdtemp(prefix="inferperf-limits-"))
    data["section_runs"] = {}
    sections = {
        "counting": lambda: counting_cost.measure(samples=args.samples),
        "simulate": lambda: simulate_section(scratch / "simulate", args.rounds),
        "suite": lambda: suite_section(scratch / "suite", args.suite_rounds),
        "suite40": lambda: suite40_section(scratch / "suite40", args.suite_rounds),
        "peers": lambda: parallel_suites.peers(scratch / "peers", args.suite_rounds, log),
        "resolution": lambda: resolution_section(scratch / "resolution", args.trials, args.jobs),
    }
    try:
        for name, run in sections.items():
            if name in skipped:
                continue
            started = datetime.now(timezone.utc).isoformat(timespec="seconds")
            load = os.getloadavg()[0]
            data[name] = run()
            data["section_runs"][name] = {
                "started": started,
                "command": data["command"],
                "load_avg": [load, os.getloadavg()[0]],
            }
            if name == "counting":
                for line in counting_cost.format_rows(data["counting"]):
                    log(line)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    data["load_avg_end"] = list(os.getloadavg())
    out.mkdir(parents=True, exist_ok=True)
    from measurement_quality import Results, scrub

    if args.keep and (out / "limits.json").is_file():
        old = json.loads((out / "limits.json").read_text())
        for name in SECTIONS:
            if name in skipped and name in old:
                data[name] = old[name]
                data["section_runs"][name] = (old.get("section_runs") or {}).get(name) or {
                    "started": old.get("started"),
                    "load_avg": [
                        (old.get("load_avg_start") or [None])[0],
                        (old.get("load_avg_end") or [None])[0],
                    ],
                }
    (out / "limits.json").write_text(scrub(json.dumps(data, indent=1)) + "\n")
    results = out / "results.json"
    if results.is_file():
        saved = Results(out, json.loads(results.read_text()))
        saved.data["limits"] = data
        saved.save(complete=saved.data.get("complete", False), rerender=True)
        log(f"added to {results} and re-rendered {out / 'results.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
