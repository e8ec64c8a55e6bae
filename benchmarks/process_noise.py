"""Verdicts that do not cry wolf: unchanged suites re-run, beside neighbours, and slowdowns.

One run, side by side with pytest-benchmark. A 40-test suite (20 tiny pure-Python
calls of 20-30 µs, 10 small numpy calls, 10 pure-Python loops of about 1 ms) and a
suite of a real exported model under ONNX Runtime's *default* threads (the MiniLM-L3
sentence-transformers export of tests/fixtures/exports, fp32 and int8, nothing set on
the session) are recorded once as baselines, quiet. Then each suite is re-run,
unchanged, in three phases:

* ``quiet``: nothing of ours running beside it;
* ``neighbour``: a memory-heavy neighbour beside it (a process copying 64 MiB numpy
  arrays back and forth, as a data loader or a second model would);
* ``copy``: a second copy of the same suite running beside it, over and over.

and with one test slowed down (its call repeated, then a fraction of it: at least that
much more time, fixed costs included; 3x beside the neighbour, 1.2x on a
1 ms loop quiet, 1.5x on a 25 µs call quiet). Counted per run: any failed test
(a false alarm when nothing changed), inconclusive tests (allowed: a warning), and
whether the slowed test failed (a detection). The hash seed is *not* fixed: a fresh
process gets a new one, as in a user's CI.

pytest-benchmark runs the same workloads (its defaults and
``--benchmark-compare-fail=mean:10%``, the 10% pytest-inferperf's timings have) in the
same phases, fewer trials (it spends a second per test per run).

Usage::

    python benchmarks/process_noise.py [--trials 20] [--out docs/benchmarks]
        [--only suite,onnx,peer]

``--trials N``: quiet unchanged runs of each suite (default 20); the loaded phases get
N // 4 each (5 at the default), each detection level N // 2 (10). Writes
``process-noise.json`` and ``process-noise.md`` under ``--out`` after every run.
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

from bench_runs import REPO, cpu_model, pytest_command, run_timed

from pytest_inferperf.plugin.options import DEFAULT_BASELINE_PROCESSES

SCHEMA = "pytest-inferperf/process-noise"
PEER_FAIL = "mean:10%"

WORKLOADS = """
import json, os, re

import numpy as np


def factor(name):
    return float(os.environ.get("PN_FACTOR", "1")) if os.environ.get("PN_SLOWED") == name \\
        else 1.0


def slowed(fn, i, times):
    # fn for `times` the time: whole calls, then one at the fraction left. Each call pays
    # its fixed cost again, so the time grows by at least `times`, never less.
    whole, rest = int(times), times - int(times)
    out = None
    for _ in range(whole):
        out = fn(i, 1.0)
    if rest > 1e-9:
        out = fn(i, rest)
    return out


# 20 tiny pure-Python calls, 20-30 µs each on the 2-vCPU VM
def tiny(i, scale):
    kind = i % 5
    n = int((60 + 4 * i) * (2.2, 3.0, 6.0, 2.0, 3.5)[kind] * scale)
    if kind == 0:
        d = {}
        for k in range(n):
            d[str(k)] = k * 2
        return sum(d.values())
    if kind == 1:
        return "-".join(str(k * k) for k in range(n))
    if kind == 2:
        return sorted(range(n * 3, 0, -1))[n]
    if kind == 3:
        return json.dumps({"k": list(range(n)), "s": "x" * n})
    return len(re.findall(r"a+b", "aab" * n))


# 10 small numpy calls
MATS = [np.random.default_rng(i).random((32 + 4 * i, 32 + 4 * i)) for i in range(10)]


def small_numpy(i, scale):
    a = MATS[i]
    out = 0.0
    for _ in range(max(1, round(scale))):
        out += float((a @ a).sum()) if i % 2 else float(np.sort(a, axis=None)[-1])
    if scale % 1:
        out += float((a[: int(a.shape[0] * (scale % 1)) + 1] @ a).sum())
    return out


# 10 pure-Python loops of about 1 ms
def loop(i, scale):
    n = int((20_000 + 1_000 * i) * scale)
    s = 0
    for k in range(n):
        s += k * k if k % 3 else k
    return s
"""

OURS = """
import pytest
from workloads import factor, loop, slowed, small_numpy, tiny


@pytest.mark.perf
@pytest.mark.parametrize("i", range(20))
def test_tiny(pmu_profile, i):
    pmu_profile(slowed, tiny, i, factor(f"tiny{i}"))


@pytest.mark.perf
@pytest.mark.parametrize("i", range(10))
def test_numpy(pmu_profile, i):
    pmu_profile(slowed, small_numpy, i, factor(f"numpy{i}"))


@pytest.mark.perf
@pytest.mark.parametrize("i", range(10))
def test_loop(pmu_profile, i):
    pmu_profile(slowed, loop, i, factor(f"loop{i}"))
"""

PEER = """
import pytest
from workloads import factor, loop, slowed, small_numpy, tiny


@pytest.mark.parametrize("i", range(20))
def test_tiny(benchmark, i):
    benchmark(slowed, tiny, i, factor(f"tiny{i}"))


@pytest.mark.parametrize("i", range(10))
def test_numpy(benchmark, i):
    benchmark(slowed, small_numpy, i, factor(f"numpy{i}"))


@pytest.mark.parametrize("i", range(10))
def test_loop(benchmark, i):
    benchmark(slowed, loop, i, factor(f"loop{i}"))
"""

ONNX_WORKLOADS = """
import os

import numpy as np
import onnxruntime as ort

MODELS = {"fp32": "minilm_l3_st.onnx", "int8": "minilm_l3_st_int8.onnx"}


def session_and_feeds(variant, tokens=64):
    # ONNX Runtime's defaults: nothing set on the session (threads, spinning)
    session = ort.InferenceSession(
        os.path.join(os.path.dirname(__file__), MODELS[variant]),
        providers=["CPUExecutionProvider"],
    )
    feeds = {}
    for arg in session.get_inputs():
        shape = [1 if i == 0 else tokens for i, _ in enumerate(arg.shape)]
        feeds[arg.name] = np.ones(shape, np.int64)
    return session, feeds
"""

ONNX_OURS = """
import pytest
from onnx_workloads import session_and_feeds


@pytest.mark.perf
@pytest.mark.parametrize("variant", ["fp32", "int8"])
def test_minilm(pmu_profile, variant):
    session, feeds = session_and_feeds(variant)
    pmu_profile(session.run, None, feeds)
"""

ONNX_PEER = """
import pytest
from onnx_workloads import session_and_feeds


@pytest.mark.parametrize("variant", ["fp32", "int8"])
def test_minilm(benchmark, variant):
    session, feeds = session_and_feeds(variant)
    benchmark(session.run, None, feeds)
"""

NEIGHBOUR = """
import numpy as np
a = np.ones(8 << 20)  # 64 MiB
b = np.empty_like(a)
while True:
    np.copyto(b, a)
    np.copyto(a, b)
"""

_PEER_FAILED = re.compile(r"(test_\w+\[\w+\]) \(\d+_\w+\)\s*-\s*Field 'mean' has failed")


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def clean_env(extra: Mapping[str, str]) -> dict[str, str]:
    """This environment without the caller's pytest variables or a fixed hash seed."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "PN_", "INFERPERF_")) and k != "PYTHONHASHSEED"
    }
    env.update(extra)
    env.pop("GITHUB_STEP_SUMMARY", None)
    return env


def pytest_cmd(args: Sequence[str]) -> list[str]:
    return pytest_command(*args, off=("cacheprovider", "randomly", "xdist"))


def run_pytest(folder: Path, args: Sequence[str], env: Mapping[str, str]) -> tuple[int, str, float]:
    return run_timed(pytest_cmd(args), cwd=folder, env=clean_env(env), timeout=3600)


@contextlib.contextmanager
def beside(kind: str, folder: Path, test_file: str) -> Iterator[None]:
    """The phase's neighbour for the duration of the block: nothing, the memory-heavy
    process, or a second copy of the suite looping in its own folder."""
    procs: list[subprocess.Popen] = []
    if kind == "neighbour":
        procs.append(subprocess.Popen([sys.executable, "-c", NEIGHBOUR]))
    elif kind == "copy":
        copy = folder.parent / f"{folder.name}-copy"
        if not copy.exists():
            shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("*.json", "baselines"))
        command = pytest_cmd([test_file, "--inferperf", "--inferperf-flamegraphs=none"])
        loop = (
            "import subprocess, sys\n"
            "while True:\n"
            f"    subprocess.run({command!r}, stdout=subprocess.DEVNULL,"
            " stderr=subprocess.DEVNULL)\n"
        )
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", loop], cwd=copy, env=clean_env({}), start_new_session=True
            )
        )
    try:
        if procs:
            time.sleep(2.0)
        yield
    finally:
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 15) if kind == "copy" else proc.terminate()
        for proc in procs:
            proc.wait(timeout=60)


def ours_run(
    folder: Path, test_file: str, tag: str, env: Mapping[str, str], *, update: bool = False
) -> dict[str, Any]:
    out = folder / f"ours-{tag}.json"
    args = [test_file, "--inferperf", "--inferperf-flamegraphs=none", "--inferperf-json", str(out)]
    if update:
        args.append("--update-baselines")
    rc, output, wall = run_pytest(folder, args, env)
    if not out.exists():
        raise RuntimeError(f"pytest --inferperf wrote no JSON (rc {rc}):\n{output[-3000:]}")
    tests = {t["key"].rsplit("::", 1)[-1]: t for t in json.loads(out.read_text())["tests"]}
    out.unlink()
    confirmations = {k: t["confirmation"] for k, t in tests.items() if t.get("confirmation")}
    return {
        "rc": rc,
        "wall_s": round(wall, 1),
        "failed": sorted(k for k, t in tests.items() if t["failed"]),
        "inconclusive": sorted(
            k for k, t in tests.items() if t.get("verdict") == "inconclusive" and not t["failed"]
        ),
        "suspected": sorted(confirmations),
        "confirmed": sorted(k for k, c in confirmations.items() if c.get("held")),
        "failure_cells": {k: t["vs_baseline"] for k, t in tests.items() if t["failed"]},
        "confirmation_text": {k: c.get("text") for k, c in confirmations.items()},
        "others_busy_cpus": _median(
            [(t.get("conditions") or {}).get("others_busy_cpus") for t in tests.values()]
        ),
    }


def peer_run(
    folder: Path, test_file: str, env: Mapping[str, str], *, save: bool = False
) -> dict[str, Any]:
    storage = f"file://{folder / 'peer-storage'}"
    args = [test_file, "-p", "no:inferperf", f"--benchmark-storage={storage}"]
    args += (
        ["--benchmark-save=base"]
        if save
        else ["--benchmark-compare=0001", f"--benchmark-compare-fail={PEER_FAIL}"]
    )
    rc, output, wall = run_pytest(folder, args, env)
    if rc not in (0, 1) or (save and rc != 0):
        raise RuntimeError(f"pytest-benchmark run failed (rc {rc}):\n{output[-3000:]}")
    return {"rc": rc, "wall_s": round(wall, 1), "failed": sorted(set(_PEER_FAILED.findall(output)))}


def _median(values: Sequence[Any]) -> float | None:
    usable = sorted(v for v in values if isinstance(v, int | float))
    return usable[len(usable) // 2] if usable else None


def key_of(slowed: str) -> str:
    """``tiny3`` -> ``test_tiny[3]`` (the test id pytest-inferperf's JSON keys by)."""
    kind = slowed.rstrip("0123456789")
    return f"test_{kind}[{slowed[len(kind) :]}]"


def plan(trials: int) -> list[dict[str, Any]]:
    """Every run of the 40-test suite, interleaved: unchanged in three phases, then the
    detection levels."""
    loaded = max(1, trials // 4)
    detect = max(1, trials // 2)
    runs: list[dict[str, Any]] = []
    for i in range(max(trials, detect)):
        if i < trials:
            runs.append({"phase": "quiet", "slowed": None, "factor": 1.0})
        if i < detect:
            loop_i, tiny_i = i % 10, (3 * i) % 20
            runs.append({"phase": "quiet", "slowed": f"loop{loop_i}", "factor": 1.2})
            runs.append({"phase": "quiet", "slowed": f"tiny{tiny_i}", "factor": 1.5})
            which = ("tiny", "numpy", "loop")[i % 3]
            runs.append({"phase": "neighbour", "slowed": f"{which}{i % 10}", "factor": 3.0})
        if i < loaded:
            runs.append({"phase": "neighbour", "slowed": None, "factor": 1.0})
            runs.append({"phase": "copy", "slowed": None, "factor": 1.0})
    return runs


def prepare(scratch: Path) -> dict[str, Path]:
    suite = scratch / "suite"
    suite.mkdir()
    (suite / "workloads.py").write_text(WORKLOADS)
    (suite / "test_ours.py").write_text(OURS)
    (suite / "test_peer.py").write_text(PEER)
    onnx = scratch / "onnx"
    onnx.mkdir()
    for name in ("minilm_l3_st.onnx", "minilm_l3_st_int8.onnx"):
        shutil.copy(REPO / "tests" / "fixtures" / "exports" / name, onnx / name)
    (onnx / "onnx_workloads.py").write_text(ONNX_WORKLOADS)
    (onnx / "test_ours.py").write_text(ONNX_OURS)
    (onnx / "test_peer.py").write_text(ONNX_PEER)
    return {"suite": suite, "onnx": onnx}


def summarise(runs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    rows: dict[tuple, dict[str, Any]] = {}
    for run in runs:
        key = (run["suite"], run["tool"], run["phase"], run["factor"], run.get("kind"))
        row = rows.setdefault(
            key,
            {
                "suite": run["suite"],
                "tool": run["tool"],
                "phase": run["phase"],
                "factor": run["factor"],
                "slowed_kind": run.get("kind"),
                "runs": 0,
                "runs_with_false_failure": 0,
                "false_failures": 0,
                "inconclusive": 0,
                "detected": 0,
                "suspected": 0,
            },
        )
        row["runs"] += 1
        slowed = key_of(run["slowed"]) if run["slowed"] else None
        false = [t for t in run["failed"] if t != slowed]
        row["runs_with_false_failure"] += bool(false)
        row["false_failures"] += len(false)
        row["inconclusive"] += len(run.get("inconclusive", []))
        row["suspected"] += len(run.get("suspected", []))
        row["detected"] += bool(slowed and slowed in run["failed"])
    return list(rows.values())


def _busy(runs: Sequence[Mapping[str, Any]]) -> str:
    """The mean ``others_busy_cpus`` of the quiet runs, as text."""
    values = [
        float(r["others_busy_cpus"])
        for r in runs
        if r.get("phase") == "quiet" and r.get("others_busy_cpus") is not None
    ]
    return f"{sum(values) / len(values):.1f}" if values else "an unknown number of"


def render(doc: Mapping[str, Any]) -> str:
    lines = [
        "# Verdicts that do not cry wolf: unchanged suites, neighbours, slowdowns",
        "",
        f"Command: `{doc['command']}`. Started {doc['started']}; "
        f"{'complete' if doc['complete'] else 'INCOMPLETE'}.",
        "",
        f"Machine: {doc['machine']['cpu']}, {doc['machine']['cpus']} vCPUs, Python "
        f"{doc['machine']['python']}; pytest-inferperf at {doc['commit']}; "
        f"pytest-benchmark {doc['machine'].get('pytest_benchmark') or 'not installed'}.",
        "",
        "Suites: *40 tests* (20 tiny pure-Python calls of 20-30 µs, 10 small numpy calls, "
        "10 pure-Python loops of about 1 ms) and *MiniLM* (the sentence-transformers "
        "MiniLM-L3 export, fp32 and int8, 64 tokens, ONNX Runtime's default threads). "
        "Baselines recorded once, quiet, first (pytest-inferperf: its defaults, "
        f"{doc.get('baseline_processes', 3)} processes). "
        f"Other processes kept {_busy(doc['runs'])} CPUs busy on average during the "
        "quiet runs (what else ran on the machine, not a neighbour of ours). "
        "Phases: quiet; `neighbour` (a process copying 64 MiB numpy arrays "
        "back and forth); `copy` (a second copy of the suite running over and over). "
        "The hash seed is not fixed. pytest-benchmark: defaults and "
        f"`--benchmark-compare-fail={PEER_FAIL}`.",
        "",
        "| suite | tool | phase | slowdown | runs | runs with a false failure | false failures "
        "(tests) | inconclusive (tests) | suspected, measured in fresh processes | slowed "
        "test caught |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in doc["summary"]:
        slowed = "none" if row["factor"] == 1.0 else f"x{row['factor']:g} ({row['slowed_kind']})"
        caught = f"{row['detected']}/{row['runs']}" if row["factor"] != 1.0 else "-"
        lines.append(
            f"| {row['suite']} | {row['tool']} | {row['phase']} | {slowed} | {row['runs']} | "
            f"{row['runs_with_false_failure']}/{row['runs']} | {row['false_failures']} | "
            f"{row['inconclusive'] if row['tool'] == 'pytest-inferperf' else '-'} | "
            f"{row['suspected'] if row['tool'] == 'pytest-inferperf' else '-'} | {caught} |"
        )
    lines += ["", "Every false failure of pytest-inferperf, with its cell and confirmation:", ""]
    shown = 0
    for run in doc["runs"]:
        if run["tool"] != "pytest-inferperf":
            continue
        slowed = key_of(run["slowed"]) if run["slowed"] else None
        for test in run["failed"]:
            if test == slowed:
                continue
            shown += 1
            lines.append(
                f"- {run['suite']} {run['phase']} x{run['factor']:g}: `{test}`: "
                f"{run['failure_cells'].get(test)}; {run['confirmation_text'].get(test)}"
            )
    if not shown:
        lines.append("- none")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "benchmarks")
    parser.add_argument("--only", default="suite,onnx,peer")
    args = parser.parse_args(argv)
    only = set(args.only.split(","))
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    try:
        import pytest_benchmark

        peer_version = getattr(pytest_benchmark, "__version__", "installed")
    except ImportError:
        peer_version = None
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "command": "python benchmarks/process_noise.py " + " ".join(sys.argv[1:] or []),
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": commit,
        "machine": {
            "cpu": cpu_model(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "pytest_benchmark": peer_version,
        },
        "complete": False,
        "baseline_processes": DEFAULT_BASELINE_PROCESSES,
        "runs": [],
        "summary": [],
    }
    args.out.mkdir(parents=True, exist_ok=True)

    def save() -> None:
        doc["summary"] = summarise(doc["runs"])
        (args.out / "process-noise.json").write_text(json.dumps(doc, indent=1) + "\n")
        (args.out / "process-noise.md").write_text(render(doc))

    with tempfile.TemporaryDirectory(prefix="inferperf-process-noise-") as tmp:
        folders = prepare(Path(tmp))
        peer = "peer" in only and peer_version is not None
        for suite in ("suite", "onnx"):
            if suite not in only:
                continue
            folder = folders[suite]
            log(f"{suite}: recording baselines")
            ours_run(folder, "test_ours.py", "base", {}, update=True)
            if peer:
                peer_run(folder, "test_peer.py", {}, save=True)
            runs = (
                plan(args.trials)
                if suite == "suite"
                else [r for r in plan(args.trials) if r["slowed"] is None]
            )
            peer_every = 4  # pytest-benchmark: every fourth run of each kind
            seen: dict[tuple, int] = {}
            for index, run in enumerate(runs):
                env = {}
                if run["slowed"]:
                    env = {"PN_SLOWED": run["slowed"], "PN_FACTOR": str(run["factor"])}
                kind = (run["slowed"] or "").rstrip("0123456789") or None
                tools = ["pytest-inferperf"]
                key = (run["phase"], run["factor"], kind)
                seen[key] = seen.get(key, 0) + 1
                if peer and (seen[key] - 1) % peer_every == 0:
                    tools.append("pytest-benchmark")
                with beside(run["phase"], folder, "test_ours.py"):
                    for tool in tools:
                        if tool == "pytest-inferperf":
                            result = ours_run(folder, "test_ours.py", str(index), env)
                        else:
                            result = peer_run(folder, "test_peer.py", env)
                        doc["runs"].append(
                            {"suite": suite, "tool": tool, **run, "kind": kind, **result}
                        )
                        log(
                            f"{suite} {tool} {run['phase']} {run['slowed'] or 'unchanged'} "
                            f"x{run['factor']:g}: failed {result['failed']} "
                            f"({result['wall_s']} s)"
                        )
                        save()
    doc["complete"] = True
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
