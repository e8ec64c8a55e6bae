"""Verdicts on a busy machine: false alarms and detections, pytest-inferperf vs pytest-benchmark.

One run, side by side. A small suite of three perf tests (pure-Python hashing, a numpy
sort, an ONNX Runtime MatMul chain) is written twice: once with ``pmu_profile``
(``pytest --inferperf``), once with pytest-benchmark's ``benchmark`` fixture. Baselines
of both are recorded first, with nothing of ours competing. Then, in two phases -
*quiet* (nothing of ours competing) and *loaded* (two CPU-bound processes, ``while
True: pass``, started by this script for the phase) - each tool's suite is run again,
unchanged or with the hashing test's work multiplied by 1.2, 1.5 or 3 (its CPU time
scales with it exactly). Counted per run: did the slowed test fail (detection), did any
unchanged test fail (false alarm), and for pytest-inferperf, which tests were
inconclusive.

pytest-benchmark runs with its defaults and ``--benchmark-compare-fail=mean:10%``, the
same 10% pytest-inferperf's default tolerance of CPU time and mean latency has.

Usage::

    python benchmarks/noisy_verdicts.py [--trials 10] [--out docs/benchmarks]
        [--rules fastest] [--tools pytest-inferperf,pytest-benchmark] [--stem noisy-verdicts]

``--rules median,fastest`` runs pytest-inferperf once per rule in every trial (the
machine's slowdown read from the calibration's median or fastest round,
``noise.CALIBRATION_STATISTIC``, set by the suite's conftest): two rules side by side
on the same baselines, in the same minutes.

``--trials N`` sets the runs per level and phase (the unchanged and the 3x levels get
N, the 1.2x and 1.5x levels N // 2 in the loaded phase, N for 1.2x quiet). Writes
``noisy-verdicts.json`` and ``noisy-verdicts.md`` under ``--out`` after every run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bench_runs import cpu_model, pytest_command, run_timed

from pytest_inferperf.measure import conditions

SCHEMA = "pytest-inferperf/noisy-verdicts"
TESTS = ("test_hash", "test_sort", "test_onnx")
SLOWED = "test_hash"
LEVELS = (1.0, 1.2, 1.5, 3.0)
PEER_FAIL = "mean:10%"

WORKLOADS = """
import hashlib, os

import numpy as np

DATA = b"x" * (1 << 15)
VALUES = (np.arange(200_000, dtype=np.float64) * 7919.0) % 10_007.0


def factor(name):
    return float(os.environ.get("NV_FACTOR", "1")) if os.environ.get("NV_SLOWED") == name \\
        else 1.0


def hashing(rounds):
    for _ in range(rounds):
        hashlib.sha256(DATA).digest()


def sort_values():
    return float(np.sort(VALUES)[-1])


def model_path():
    return os.path.join(os.path.dirname(__file__), "chain.onnx")


def session_and_feeds():
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(model_path(), options, providers=["CPUExecutionProvider"])
    feeds = {"x": np.ones((64, 256), np.float32)}
    return session, feeds
"""

OURS = """
import pytest
from workloads import factor, hashing, session_and_feeds, sort_values

SESSION, FEEDS = session_and_feeds()


@pytest.mark.perf(warmup=2, repeat=15)
def test_hash(pmu_profile):
    pmu_profile(hashing, round(40 * factor("test_hash")))


@pytest.mark.perf(warmup=2, repeat=15)
def test_sort(pmu_profile):
    pmu_profile(sort_values)


@pytest.mark.perf(warmup=2, repeat=15)
def test_onnx(pmu_profile):
    pmu_profile(SESSION.run, None, FEEDS)
"""

PEER = """
from workloads import factor, hashing, session_and_feeds, sort_values

SESSION, FEEDS = session_and_feeds()


def test_hash(benchmark):
    benchmark(hashing, round(40 * factor("test_hash")))


def test_sort(benchmark):
    benchmark(sort_values)


def test_onnx(benchmark):
    benchmark(SESSION.run, None, FEEDS)
"""

CONFTEST = """
import os

from pytest_inferperf.judge import noise

if os.environ.get("NV_RULE"):
    noise.CALIBRATION_STATISTIC = os.environ["NV_RULE"]
"""

_PEER_FAILED = re.compile(r"(test_\w+) \(\d+_\w+\)\s*-\s*Field 'mean' has failed")


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def build_model(path: Path) -> None:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes, inits, prev = [], [], "x"
    for i in range(4):
        w = numpy_helper.from_array(
            rng.standard_normal((256, 256)).astype(np.float32) / 16, name=f"w{i}"
        )
        inits.append(w)
        out = "y" if i == 3 else f"h{i}"
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [out]))
        prev = out
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 256])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 256])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def clean_env(extra: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "NV_"))}
    env.update(
        {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0", **extra}
    )
    env.pop("GITHUB_STEP_SUMMARY", None)
    return env


@contextlib.contextmanager
def competing(n: int) -> Iterator[list[int]]:
    """``n`` CPU-bound processes for the duration of the block (ended by their ids)."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        time.sleep(1.0)  # let the scheduler see them
        yield [p.pid for p in procs]
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=30)


def _pytest(scratch: Path, args: Sequence[str], env: Mapping[str, str]) -> tuple[int, str, float]:
    command = pytest_command(*args, off=("cacheprovider", "randomly", "xdist"))
    return run_timed(command, cwd=scratch, env=clean_env(env), timeout=900)


def ours_run(
    scratch: Path, factor: float, tag: str, *, update: bool = False, rule: str = ""
) -> dict[str, Any]:
    out_json = scratch / f"ours-{tag}.json"
    args = [
        "test_ours.py",
        "--inferperf",
        "--inferperf-flamegraphs",
        "none",
        "--inferperf-json",
        str(out_json),
    ]
    if update:
        args.append("--update-baselines")
    env = {"NV_SLOWED": SLOWED, "NV_FACTOR": str(factor), "NV_RULE": rule}
    rc, output, wall = _pytest(scratch, args, env)
    if not out_json.exists():
        raise RuntimeError(f"pytest --inferperf wrote no JSON (rc {rc}):\n{output[-3000:]}")
    tests = {t["key"].rsplit("::", 1)[-1]: t for t in json.loads(out_json.read_text())["tests"]}
    return {
        "rc": rc,
        "wall_s": round(wall, 2),
        "failed": sorted(k for k, t in tests.items() if t["failed"]),
        "inconclusive": sorted(
            k for k, t in tests.items() if t.get("verdict") == "inconclusive" and not t["failed"]
        ),
        "confirmed": sorted(
            k for k, t in tests.items() if (t.get("confirmation") or {}).get("held")
        ),
        "not_confirmed": sorted(
            k for k, t in tests.items() if t.get("confirmation") and not t["confirmation"]["held"]
        ),
        "cells": {k: t["vs_baseline"] for k, t in tests.items()},
        "cpu_ms_per_call": {k: t["metrics"].get("cpu_ms_per_call") for k, t in tests.items()},
        "busy": {k: t.get("busy") for k, t in tests.items()},
    }


def peer_run(scratch: Path, factor: float, tag: str, *, save: bool = False) -> dict[str, Any]:
    storage = f"file://{scratch / 'peer-storage'}"
    args = ["test_peer.py", "-p", "no:inferperf", f"--benchmark-storage={storage}"]
    args += (
        ["--benchmark-save=base"]
        if save
        else ["--benchmark-compare=0001", f"--benchmark-compare-fail={PEER_FAIL}"]
    )
    rc, output, wall = _pytest(scratch, args, {"NV_SLOWED": SLOWED, "NV_FACTOR": str(factor)})
    if rc not in (0, 1) or (save and rc != 0):
        raise RuntimeError(f"pytest-benchmark run failed (rc {rc}):\n{output[-3000:]}")
    return {"rc": rc, "wall_s": round(wall, 2), "failed": sorted(set(_PEER_FAILED.findall(output)))}


def phase_plan(trials: int, phase: str) -> list[float]:
    counts = {
        1.0: trials,
        3.0: trials,
        1.2: trials if phase == "quiet" else max(1, trials // 2),
        1.5: max(1, trials // 2),
    }
    plan: list[float] = []
    for i in range(max(counts.values())):  # levels interleaved, not one after another
        plan += [level for level in LEVELS if counts[level] > i]
    return plan


def summarise(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per tool, phase and level: detections of the slowed test, false alarms of the rest."""
    out: dict[str, Any] = {}
    for run in runs:
        key = f"{run['tool']}/{run['phase']}"
        cell = out.setdefault(
            key, {"unchanged_test_runs": 0, "false_alarms": 0, "inconclusive": 0, "levels": {}}
        )
        level = cell["levels"].setdefault(str(run["factor"]), {"runs": 0, "detected": 0})
        res = run["result"]
        unchanged = [t for t in TESTS if run["factor"] == 1.0 or t != SLOWED]
        cell["unchanged_test_runs"] += len(unchanged)
        cell["false_alarms"] += sum(1 for t in unchanged if t in res["failed"])
        cell["inconclusive"] += sum(1 for t in res.get("inconclusive", ()) if t in unchanged)
        if run["factor"] != 1.0:
            level["runs"] += 1
            level["detected"] += int(SLOWED in res["failed"])
        else:
            level["runs"] += 1
            level["runs_with_a_failure"] = level.get("runs_with_a_failure", 0) + int(
                bool(res["failed"])
            )
    for cell in out.values():
        cell["false_alarm_rate"] = (
            cell["false_alarms"] / cell["unchanged_test_runs"]
            if cell["unchanged_test_runs"]
            else None
        )
    return out


def render(data: Mapping[str, Any]) -> str:
    s = data.get("summary") or {}
    lines = [
        "# Verdicts on a busy machine: pytest-inferperf vs pytest-benchmark",
        "",
        f"Command: `{data['command']}`. Started {data['started']}"
        + ("" if data.get("complete") else " (**incomplete**: interrupted)")
        + ".",
        "",
        f"Machine: {data['machine']['cpu_model']}, {data['machine']['cpus']} vCPUs, "
        f"Python {data['machine']['python']}, pytest-benchmark "
        f"{data['machine']['pytest_benchmark']}. The machine is shared: other people's "
        "jobs ran during every phase (their load is in the conditions below).",
        "",
        "Suite: three tests (pure-Python hashing, a numpy sort, an ONNX Runtime MatMul "
        "chain), the same workloads under `pmu_profile` and under pytest-benchmark's "
        f"`benchmark` fixture. Baselines recorded once, first. Slowdowns are injected "
        f"into `{SLOWED}` only (its work x1.2, x1.5, x3). pytest-benchmark: defaults and "
        f"`--benchmark-compare-fail={PEER_FAIL}`; pytest-inferperf: defaults"
        + (
            f", once per calibration rule ({', '.join(data['rules'])}: the machine's "
            "slowdown read from the calibration's median or fastest round) in every trial"
            if len(data.get("rules") or ()) > 1
            else ""
        )
        + ".",
        "",
        "| tool | phase | unchanged: runs with a failure | false alarms (test runs) | "
        "inconclusive (unchanged test runs) | x1.2 caught | x1.5 caught | x3 caught |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for key in sorted(s):
        tool, phase = key.split("/")
        cell = s[key]
        lv = cell["levels"]

        def caught(f: str, lv: Mapping[str, Any] = lv) -> str:
            x = lv.get(f)
            return f"{x['detected']}/{x['runs']}" if x else "-"

        same = lv.get("1.0", {})
        rate = cell["false_alarm_rate"]
        lines.append(
            f"| {tool} | {phase} | {same.get('runs_with_a_failure', 0)}/"
            f"{same.get('runs', 0)} | {cell['false_alarms']}/"
            f"{cell['unchanged_test_runs']} ({0 if rate is None else rate:.0%}) | "
            f"{cell['inconclusive'] if tool.startswith('pytest-inferperf') else '-'} | "
            f"{caught('1.2')} | {caught('1.5')} | {caught('3.0')} |"
        )
    lines += [
        "",
        "Conditions while each phase ran (this script's reading of /proc/stat and "
        "the load average, read by the benchmark script around each pytest run: "
        "`other processes` are everything but the script itself, so the measured "
        "pytest run is in it, and so are the two competing processes in the loaded "
        "phase):",
        "",
        "| phase | runs | load avg 1 min (median) | other processes busy, CPUs (median) | steal |",
        "|---|---|---|---|---|",
    ]
    for phase, cond in (data.get("conditions") or {}).items():
        lines.append(
            f"| {phase} | {cond['runs']} | {cond['load_avg_1m_median']} | "
            f"{cond['others_busy_cpus_median']} | {cond['steal_median']} |"
        )
    lines += [
        "",
        "Baseline conditions as pytest-inferperf recorded them: "
        f"{data.get('baseline_busy') or 'quiet'}.",
        "",
    ]
    return "\n".join(lines) + "\n"


def scrub(text: str) -> str:
    for path, name in (
        (str(Path(__file__).resolve().parent.parent), "<repo>"),
        (sys.prefix, "<venv>"),
        (tempfile.gettempdir(), "<tmp>"),
    ):
        if len(path) > 1:
            text = text.replace(path, name)
    return text


def save(out: Path, data: dict[str, Any], stem: str = "noisy-verdicts") -> None:
    data["summary"] = summarise(data["runs"])
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(scrub(json.dumps(data, indent=1)) + "\n")
    (out / f"{stem}.md").write_text(scrub(render(data)))


def _median(values: Sequence[float | None]) -> float | None:
    import statistics

    present = [v for v in values if v is not None]
    return round(statistics.median(present), 2) if present else None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--out", default="docs/benchmarks")
    parser.add_argument("--phases", default="quiet,loaded")
    parser.add_argument("--rules", default="", help="calibration rules, e.g. median,fastest")
    parser.add_argument("--tools", default="pytest-inferperf,pytest-benchmark")
    parser.add_argument("--stem", default="noisy-verdicts", help="name of the result files")
    args = parser.parse_args(argv)
    rules = [r for r in args.rules.split(",") if r] or [""]
    tools = [t for t in args.tools.split(",") if t]
    try:
        import pytest_benchmark

        peer_version = getattr(pytest_benchmark, "__version__", "unknown")
    except ImportError:
        print("pytest-benchmark is not installed: pip install -e '.[dev]'", file=sys.stderr)
        return 2
    out = Path(args.out)
    data: dict[str, Any] = {
        "schema": SCHEMA,
        "version": 1,
        "command": " ".join(
            [
                "python",
                "benchmarks/noisy_verdicts.py",
                *(argv if argv is not None else sys.argv[1:]),
            ]
        ),
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {
            "cpu_model": cpu_model(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "pytest_benchmark": peer_version,
        },
        "complete": False,
        "rules": [r for r in rules if r],
        "runs": [],
        "conditions": {},
    }
    scratch = Path(tempfile.mkdtemp(prefix="inferperf-nv-"))
    try:
        (scratch / "workloads.py").write_text(WORKLOADS)
        (scratch / "test_ours.py").write_text(OURS)
        (scratch / "test_peer.py").write_text(PEER)
        (scratch / "pytest.ini").write_text("[pytest]\n")
        (scratch / "conftest.py").write_text(CONFTEST)
        build_model(scratch / "chain.onnx")
        log("baselines (nothing of ours competing)")
        base = ours_run(scratch, 1.0, "baseline", update=True)
        data["baseline_busy"] = (
            "; ".join(sorted({"; ".join(v) for v in base["busy"].values() if v})) or None
        )
        if "pytest-benchmark" in tools:
            peer_run(scratch, 1.0, "baseline", save=True)
        runners = [
            (f"pytest-inferperf ({rule})" if rule else "pytest-inferperf", rule)
            for rule in rules
            if "pytest-inferperf" in tools
        ] + ([("pytest-benchmark", "")] if "pytest-benchmark" in tools else [])
        for phase in args.phases.split(","):
            burners = 2 if phase == "loaded" else 0
            readings = []
            with competing(burners):
                for i, factor in enumerate(phase_plan(args.trials, phase)):
                    for tool, rule in runners if i % 2 == 0 else runners[::-1]:
                        before = conditions.snapshot()
                        if tool.startswith("pytest-inferperf"):
                            result = ours_run(scratch, factor, f"{phase}-{i}", rule=rule)
                        else:
                            result = peer_run(scratch, factor, f"{phase}-{i}")
                        state = conditions.between(before, conditions.snapshot())
                        readings.append(state)
                        data["runs"].append(
                            {
                                "tool": tool,
                                "phase": phase,
                                "factor": factor,
                                "result": result,
                                "conditions": {
                                    k: state.get(k)
                                    for k in ("load_avg_1m", "others_busy_cpus", "steal")
                                },
                            }
                        )
                        log(
                            f"{phase} x{factor} {tool}: failed {result['failed']}"
                            + (
                                f", inconclusive {result['inconclusive']}"
                                if result.get("inconclusive")
                                else ""
                            )
                        )
                        data["conditions"][phase] = {
                            "runs": len(readings),
                            "competing_processes": burners,
                            "load_avg_1m_median": _median([r.get("load_avg_1m") for r in readings]),
                            "others_busy_cpus_median": _median(
                                [r.get("others_busy_cpus") for r in readings]
                            ),
                            "steal_median": _median([r.get("steal") for r in readings]),
                        }
                        save(out, data, args.stem)
        data["complete"] = True
        save(out, data, args.stem)
        log(f"done: {out / (args.stem + '.md')}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
