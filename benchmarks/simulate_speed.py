"""Where the simulate example's time goes, and which valgrind options would shorten it.

Owns: timing valgrind's start-up of Python with numpy, onnx and ONNX Runtime (with
and without instrumentation, against native), and the shipped simulate example
(``examples/test_simulated.py``, a scratch copy) under valgrind option variants
passed through ``VALGRIND_OPTS`` (valgrind reads it; the plugin's own options stay
as shipped), alternating, with the instruction counts compared. Must not: change a
default (a measured win goes into the plugin by hand) or render.

Usage::

    python benchmarks/simulate_speed.py [--rounds N] [--out DIR] [--against REV]

``--against REV`` adds a variant: the example at commit REV (a git worktree of it on
``PYTHONPATH``, its own examples/ with this checkout's models), timed alternately with
this checkout's, instruction counts compared. ``--uneven-against REV`` times a suite of
four simulated tests, long and short alternating (:data:`UNEVEN_SUITE`), the same way:
how the shared children share tests of unequal length.

Writes ``simulate-speed.json`` under ``--out`` and, where ``results.json`` lies
there, adds it to the ``limits`` section and re-renders ``results.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
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

from bench_runs import REPO, clean_env, cpu_model, prepare_suite
from physical_limits import _simulate_run, log

#: VALGRIND_OPTS variants. Neither changes what the guest executes, so instruction
#: counts must stay the same: ``sp-at-mem-access`` keeps only the stack pointer
#: precise at memory accesses (default: the registers unwinding needs), ``stack``
#: checks only the stack for self-modifying code (default on x86: all non-file
#: mappings; neither CPython 3.11 nor ONNX Runtime's CPU kernels generate code).
VARIANTS = {
    "as shipped": "",
    "--vex-iropt-register-updates=sp-at-mem-access": (
        "--vex-iropt-register-updates=sp-at-mem-access"
    ),
    "--smc-check=stack": "--smc-check=stack",
    "both": "--vex-iropt-register-updates=sp-at-mem-access --smc-check=stack",
}
IMPORTS = "import numpy, onnxruntime"  # what the child imports before the tests

#: Four simulated tests, long and short alternating (a pure-Python loop: about 422 and
#: 20 million instructions a call). Dealt round robin to two children, both long tests
#: land in one child; taking the next free test, each child gets one long one.
UNEVEN_SUITE = """\
import pytest


def work(rounds):
    s = 0
    for i in range(rounds):
        s += (i * i) % 7
    return s


ROUNDS = {"1_long": 400_000, "2_short": 20_000, "3_long": 400_000, "4_short": 20_000}


@pytest.mark.perf(repeat=3)
@pytest.mark.parametrize("rounds", ROUNDS.values(), ids=ROUNDS.keys())
def test_work(pmu_profile, rounds):
    pmu_profile(work, rounds)
"""


#: The two example models and their inputs' dims, for :func:`beside`.
BESIDE_MODELS = {
    "mobilenet_v2_int8": {"batch": 1},
    "minilm_int8": {"batch": 1, "sequence": 32},
}

#: The child of :func:`beside`: one example model's session run in a loop under valgrind,
#: not instrumented, as a shared child runs its warm-up calls; a line once it loops.
BESIDE_CHILD = """\
import json
import sys
from pytest_inferperf.onnxrt.sessions import SessionSettings, make_inputs, make_session

session = make_session(sys.argv[1], SessionSettings(intra_op_threads=1))
feed = make_inputs(sys.argv[1], json.loads(sys.argv[2]))
session.run(None, feed)
print("looping", flush=True)
while True:
    session.run(None, feed)
"""


def _wall(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, capture_output=True, timeout=900, check=False)
    return time.perf_counter() - t0


def start_up(rounds: int, instrumented: bool = False) -> dict[str, Any]:
    """Seconds to start Python and import numpy, onnx and ONNX Runtime: native, valgrind."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return {"error": "valgrind is not installed"}
    base = [valgrind, "--tool=callgrind", "--cache-sim=no", "--branch-sim=no"]
    cmds = {
        "native": [sys.executable, "-c", IMPORTS],
        "valgrind, not instrumented (--instr-atstart=no, as the child starts)": [
            *base,
            "--instr-atstart=no",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            "-c",
            IMPORTS,
        ],
    }
    if instrumented:  # minutes on a 2-vCPU VM: 50-100x the native start-up
        cmds["valgrind, instrumented from the start"] = [
            *base,
            "--instr-atstart=yes",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            "-c",
            IMPORTS,
        ]
    walls: dict[str, list[float]] = {k: [] for k in cmds}
    env = clean_env()
    for r in range(rounds):
        for name in list(cmds) if r % 2 == 0 else list(cmds)[::-1]:
            walls[name].append(_wall(cmds[name], env))
    return {
        "command": IMPORTS,
        "wall_s": {k: statistics.median(v) for k, v in walls.items()},
        "runs": walls,
    }


def beside(scratch: Path, rounds: int, calls: int = 150) -> dict[str, Any]:
    """Native latency of the example models with a valgrind child running beside them
    against the same child stopped (SIGSTOP), alternating, ``rounds`` rounds: what the
    shared children would cost a timed run if they went on while it ran."""
    import signal

    import numpy as np

    from pytest_inferperf.onnxrt.sessions import SessionSettings, make_inputs, make_session

    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return {"error": "valgrind is not installed"}
    models = prepare_suite(scratch) / "models"
    work = {}
    for name, dims in BESIDE_MODELS.items():
        path = models / f"{name}.onnx"
        session = make_session(path, SessionSettings(intra_op_threads=1))
        work[name] = (session, make_inputs(path, dims))
    child = subprocess.Popen(
        [
            *(valgrind, "-q", "--tool=callgrind", "--instr-atstart=no"),
            "--callgrind-out-file=/dev/null",
            *(sys.executable, "-c", BESIDE_CHILD, str(models / "minilm_int8.onnx")),
            json.dumps(BESIDE_MODELS["minilm_int8"]),
        ],
        env=clean_env(),
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    per_round: dict[str, dict[str, list[tuple[float, float]]]] = {
        name: {"stopped": [], "beside": []} for name in work
    }
    try:
        assert child.stdout is not None
        if child.stdout.readline().strip() != "looping":
            return {"error": f"the valgrind child did not start (exit {child.poll()})"}
        for r in range(rounds):
            for state in ("beside", "stopped") if r % 2 else ("stopped", "beside"):
                os.killpg(child.pid, signal.SIGSTOP if state == "stopped" else signal.SIGCONT)
                time.sleep(0.3)
                for name, (session, feed) in work.items():
                    for _ in range(10):
                        session.run(None, feed)
                    took = []
                    for _ in range(calls):
                        t0 = time.perf_counter()
                        session.run(None, feed)
                        took.append(time.perf_counter() - t0)
                    ms = np.array(took) * 1e3
                    summary = (float(np.median(ms)), float(np.percentile(ms, 99)))
                    per_round[name][state].append(summary)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    out: dict[str, Any] = {"rounds": rounds, "calls": calls, "models": {}}
    for name, states in per_round.items():
        ratios = [b[0] / s[0] for b, s in zip(states["beside"], states["stopped"], strict=True)]
        out["models"][name] = {
            **{
                f"{state}_{what}_ms": statistics.median(v[i] for v in values)
                for state, values in states.items()
                for i, what in enumerate(("median", "p99"))
            },
            "ratio_median": statistics.median(ratios),
            "ratio_range": [min(ratios), max(ratios)],
            "rounds_beside_slower": sum(x > 1 for x in ratios),
        }
    return out


def _worktree(rev: str, where: Path) -> Path:
    """A detached git worktree of ``rev`` at ``where`` (removed by :func:`_drop_worktree`)."""
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", str(where), rev],
        check=True,
        capture_output=True,
        text=True,
    )
    return where


def _drop_worktree(where: Path) -> None:
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "remove", "--force", str(where)],
        check=False,
        capture_output=True,
    )


def example(
    scratch: Path, rounds: int, only: list[str] | None = None, against: str | None = None
) -> dict[str, Any]:
    """The shipped simulate example under each ``VALGRIND_OPTS`` variant (and the code at
    commit ``against``), alternating."""
    prepare_suite(scratch)
    variants = {k: v for k, v in VARIANTS.items() if k == "as shipped" or not only or k in only}
    places = {k: (scratch, {"VALGRIND_OPTS": v}) for k, v in variants.items()}
    tree = None
    if against:
        tree = _worktree(against, scratch.parent / f"{scratch.name}-tree")
        other = scratch.parent / f"{scratch.name}-at"
        prepare_suite(other, tree)
        places[f"at {against}"] = (other, {"PYTHONPATH": str(tree)})
        variants[f"at {against}"] = ""
    order = list(places)
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in order}
    try:
        _alternate(order, places, rounds, runs)
    finally:
        if tree is not None:
            _drop_worktree(tree)
            shutil.rmtree(scratch.parent / f"{scratch.name}-at", ignore_errors=True)
    return _example_result(rounds, runs, variants)


def uneven(scratch: Path, rounds: int, against: str) -> dict[str, Any]:
    """:data:`UNEVEN_SUITE` as shipped and at commit ``against``, alternating."""
    places: dict[str, tuple[Path, dict[str, str]]] = {}
    tree = _worktree(against, scratch.parent / f"{scratch.name}-tree")
    try:
        for name, env in (("as shipped", {}), (f"at {against}", {"PYTHONPATH": str(tree)})):
            where = scratch / name.replace(" ", "-")
            where.mkdir(parents=True)
            (where / "pytest.ini").write_text("[pytest]\n")
            (where / "test_uneven.py").write_text(UNEVEN_SUITE)
            places[name] = (where, env)
        order = list(places)
        runs: dict[str, list[dict[str, Any]]] = {k: [] for k in order}
        _alternate(order, places, rounds, runs, "test_uneven.py", "uneven suite")
    finally:
        _drop_worktree(tree)
    return _example_result(rounds, runs, {k: "" for k in order})


def _alternate(
    order: list[str],
    places: dict[str, tuple[Path, dict[str, str]]],
    rounds: int,
    runs: dict[str, list[dict[str, Any]]],
    target: str = "examples/test_simulated.py",
    what: str = "simulate example",
) -> None:
    for r in range(rounds):
        for name in order if r % 2 == 0 else order[::-1]:
            load = os.getloadavg()[0]
            where, env = places[name]
            run = _simulate_run(where, f"v{order.index(name)}-{r}", env, target)
            run["load_avg"] = [load, os.getloadavg()[0]]
            runs[name].append(run)
            log(f"{what}, {name}: {run['wall_s']:.1f} s, load {load:.2f}")


def _example_result(
    rounds: int, runs: dict[str, list[dict[str, Any]]], variants: dict[str, str]
) -> dict[str, Any]:
    shipped = runs["as shipped"][0]["tests"]
    out: dict[str, Any] = {"rounds": rounds, "variants": {}}
    for name, rs in runs.items():
        tests = rs[0]["tests"]
        diffs = {
            t: (tests[t]["instructions_per_call"] / rec["instructions_per_call"] - 1)
            for t, rec in shipped.items()
            if t in tests
            and rec.get("instructions_per_call")
            and tests[t].get("instructions_per_call")
        }
        out["variants"][name] = {
            "valgrind_opts": variants[name],
            "wall_s": statistics.median(r["wall_s"] for r in rs),
            "wall_over_shipped": None,
            "instructions_vs_shipped": diffs,
            "same_instructions_within_0.1pct": bool(diffs)
            and len(diffs) == len(shipped)
            and all(abs(d) < 0.001 for d in diffs.values()),
            "runs": rs,
        }
    ref = out["variants"]["as shipped"]["wall_s"]
    for v in out["variants"].values():
        v["wall_over_shipped"] = v["wall_s"] / ref if ref else None
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="docs/benchmarks")
    p.add_argument("--rounds", type=int, default=1, help="rounds of the example runs")
    p.add_argument("--start-up-rounds", type=int, default=3)
    p.add_argument("--skip-example", action="store_true")
    p.add_argument(
        "--only",
        default="",
        help="comma-separated variants to run besides 'as shipped' (default: all), "
        "e.g. --only=--smc-check=stack,both",
    )
    p.add_argument("--skip-start-up", action="store_true")
    p.add_argument(
        "--against",
        default=None,
        metavar="REV",
        help="also time the example at this git commit, alternating with this checkout",
    )
    p.add_argument(
        "--uneven-against",
        default=None,
        metavar="REV",
        help="also time a suite of long and short simulated tests here and at REV",
    )
    p.add_argument(
        "--beside-rounds",
        type=int,
        default=0,
        help="rounds of native latency with a valgrind child beside it against stopped "
        "(default 0: not measured; about 5 s a round)",
    )
    p.add_argument(
        "--start-up-instrumented",
        action="store_true",
        help="also time the start-up instrumented from the start (minutes)",
    )
    argv = list(sys.argv[1:] if argv is None else argv)
    args = p.parse_args(argv)
    data: dict[str, Any] = {
        "command": shlex.join(["python", "benchmarks/simulate_speed.py", *argv]),
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "load_avg_start": list(os.getloadavg()),
        "machine": {"cpu_model": cpu_model(), "cpus": os.cpu_count()},
    }
    if not args.skip_start_up:
        data["start_up"] = start_up(args.start_up_rounds, args.start_up_instrumented)
        log(f"start-up: {data['start_up'].get('wall_s')}")
    if not args.skip_example:
        scratch = Path(tempfile.mkdtemp(prefix="inferperf-simspeed-"))
        try:
            only = [v for v in args.only.split(",") if v]
            data["example"] = example(scratch, args.rounds, only, args.against)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    if args.uneven_against:
        scratch = Path(tempfile.mkdtemp(prefix="inferperf-simspeed-uneven-"))
        try:
            data["uneven"] = uneven(scratch, args.rounds, args.uneven_against)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    if args.beside_rounds:
        scratch = Path(tempfile.mkdtemp(prefix="inferperf-simspeed-beside-"))
        try:
            data["beside"] = beside(scratch, args.beside_rounds)
            log(f"beside: {data['beside'].get('models') or data['beside']}")
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    data["load_avg_end"] = list(os.getloadavg())
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from measurement_quality import Results, scrub

    (out / "simulate-speed.json").write_text(scrub(json.dumps(data, indent=1)) + "\n")
    results = out / "results.json"
    if results.is_file():
        saved = Results(out, json.loads(results.read_text()))
        saved.data.setdefault("limits", {})["simulate_speed"] = data
        saved.save(complete=saved.data.get("complete", False), rerender=True)
        log(f"added to {results} and re-rendered {out / 'results.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
