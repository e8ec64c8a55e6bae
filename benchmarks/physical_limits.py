"""How close to the physical limit do we measure? Counting cost, simulate modes, suites.

One run, side by side, each section interleaving what it compares:

1. ``counting``: one counted repeat against one raw group ``read()``
   (``counting_cost.py``), 1, 4 and 16 threads;
2. ``simulate``: the shipped simulate example (``examples/test_simulated.py``,
   a scratch copy) as shipped, which asks for cache and branch budgets (full
   simulation), against the same tests without those budgets (chosen
   automatically: instructions only): wall time, instructions per call, mode;
3. ``suite``: ``pytest --inferperf examples -n 0`` against ``-n 2``.

Usage::

    python benchmarks/physical_limits.py [--skip counting,simulate,suite] [--rounds N]
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
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import counting_cost
from bench_runs import clean_env, prepare_suite, run_suite

SECTIONS = ("counting", "simulate", "suite")
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
        v.get("full") and v.get("instructions")
        and abs(v["full"] - v["instructions"]) / v["full"] < 0.001 for v in instr.values())
    return {
        "command": "pytest --inferperf --inferperf-backend simulate examples/test_simulated.py",
        "rounds": rounds, "wall_s": wall,
        "speed_up_instructions_over_full": wall["full"] / wall["instructions"],
        "instructions_per_call": instr, "same_instructions_within_0.1pct": same,
        "runs": runs, "load_avg_after": list(os.getloadavg()),
    }


def _simulate_run(scratch: Path, tag: str) -> dict[str, Any]:
    report = scratch / f"report-{tag}"
    shutil.rmtree(report, ignore_errors=True)
    cmd = [sys.executable, "-m", "pytest", "--inferperf", "--inferperf-backend", "simulate",
           "examples/test_simulated.py", "--inferperf-flamegraphs", "none",
           "--inferperf-baselines", "no-baselines", "--inferperf-report", str(report), "-q",
           "-p", "no:cacheprovider", "-p", "no:randomly", "-p", "no:xdist"]
    begin = time.perf_counter()
    proc = subprocess.run(cmd, cwd=scratch, env=clean_env(), capture_output=True, text=True,
                          timeout=1800, check=False)
    wall = time.perf_counter() - begin
    tests: dict[str, dict[str, Any]] = {}
    for path in sorted(report.glob("*.json")) if report.is_dir() else []:
        record = json.loads(path.read_text())
        sim = ((record.get("profile") or {}).get("settings") or {}).get("simulation") or {}
        tests[record["key"]] = {
            "outcome": record.get("outcome"),
            "instructions_per_call": (record.get("metrics") or {}).get("instructions_per_call"),
            "mode": sim.get("mode"), "child_wall_s": sim.get("child_wall_s"),
            "resolution": (sim.get("resolution") or {}).get("instructions_per_call"),
            "slowdown_vs_native": sim.get("slowdown_vs_native"),
        }
    out = {"wall_s": wall, "exit_code": proc.returncode, "tests": tests}
    if proc.returncode != 0 or not tests:
        out["output_tail"] = (proc.stdout + proc.stderr)[-3000:]
    return out


def suite_section(scratch: Path, rounds: int) -> dict[str, Any]:
    prepare_suite(scratch)
    runs: dict[str, list[dict[str, Any]]] = {"n0": [], "n2": []}
    for r in range(rounds):
        for tag in ("n0", "n2") if r % 2 == 0 else ("n2", "n0"):
            run = run_suite(scratch, int(tag[1:]), f"{tag}-{r}")
            runs[tag].append(run)
            log(f"suite -n {tag[1:]}: {run['wall_s']:.1f} s, {run['summary']}")
    wall = {tag: statistics.median(r["wall_s"] for r in rs) for tag, rs in runs.items()}
    maps = [{k: (v["outcome"], v["failed"]) for k, v in r["verdicts"].items()}
            for rs in runs.values() for r in rs]
    return {"rounds": rounds, "wall_s": wall, "ratio_n2_over_n0": wall["n2"] / wall["n0"],
            "verdicts_identical": bool(maps) and all(m == maps[0] and m for m in maps),
            "runs": {t: [{k: v for k, v in r.items() if k != "verdicts"} for r in rs]
                     for t, rs in runs.items()},
            "load_avg_after": list(os.getloadavg())}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="docs/benchmarks")
    p.add_argument("--skip", default="")
    p.add_argument("--rounds", type=int, default=1, help="rounds of the simulate runs")
    p.add_argument("--suite-rounds", type=int, default=2, help="rounds of the suite runs")
    p.add_argument("--samples", type=int, default=2000, help="timed repeats per variant")
    argv = list(sys.argv[1:] if argv is None else argv)
    args = p.parse_args(argv)
    skipped = {s for s in args.skip.split(",") if s}
    if skipped - set(SECTIONS):
        p.error(f"unknown section(s): {', '.join(sorted(skipped - set(SECTIONS)))}")
    data: dict[str, Any] = {
        "command": shlex.join(["python", "benchmarks/physical_limits.py", *argv]),
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "cpus": os.cpu_count(), "load_avg_start": list(os.getloadavg()),
    }
    out = Path(args.out)
    scratch = Path(tempfile.mkdtemp(prefix="inferperf-limits-"))
    try:
        if "counting" not in skipped:
            data["counting"] = counting_cost.measure(samples=args.samples)
            for line in counting_cost.format_rows(data["counting"]):
                log(line)
        if "simulate" not in skipped:
            data["simulate"] = simulate_section(scratch / "simulate", args.rounds)
        if "suite" not in skipped:
            data["suite"] = suite_section(scratch / "suite", args.suite_rounds)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    data["load_avg_end"] = list(os.getloadavg())
    out.mkdir(parents=True, exist_ok=True)
    from measurement_quality import Results, scrub

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
