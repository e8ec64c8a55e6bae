"""The simulate backend's shared child: one valgrind process for many tests.

Fast tests drive both ends of the conversation for real (pipes, a child
process) without valgrind; the slow test runs a suite through the plugin under
valgrind and checks that one child served every test, with the same counts as
a child per test.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_inferperf import child_process
from pytest_inferperf.child_process import ENV_SHARED
from pytest_inferperf.pmu import simulate, simulate_child, simulate_shared
from pytest_inferperf.pmu.simulate import (
    ChildCommand,
    ChildOptions,
    ChildRecord,
    PlanStep,
    SimulateError,
)
from pytest_inferperf.pmu.simulate_protocol import RegionRequest
from pytest_inferperf.pmu.simulate_shared import SharedChild

FIXTURES = Path(__file__).parent / "fixtures" / "callgrind"
DUMP = (FIXTURES / "callgrind.out.21078.1").read_text()

pytest_plugins = ["pytester"]


# -- the child's end -------------------------------------------------------------
@pytest.fixture
def parent(monkeypatch):
    """The parent's ends of the two pipes; this process plays the child."""
    request_r, request_w = os.pipe()
    reply_r, reply_w = os.pipe()
    monkeypatch.setenv(ENV_SHARED, f"{request_r},{reply_w}")
    monkeypatch.setattr(simulate_child, "_link", None)

    class Parent:
        def ask(self, nodeid, variant="", repeats=3, calls=1):
            os.write(
                request_w,
                (
                    json.dumps(
                        {"nodeid": nodeid, "variant": variant, "repeats": repeats, "calls": calls}
                    )
                    + "\n"
                ).encode(),
            )

        def hang_up(self):
            os.close(request_w)

        def answer(self):
            data = b""
            while not data.endswith(b"\n"):
                data += os.read(reply_r, 1 << 16)
            return json.loads(data)

    yield Parent()
    for fd in (request_w, reply_r):
        with contextlib.suppress(OSError):
            os.close(fd)


def test_child_runs_only_what_the_parent_waits_for(parent):
    assert child_process.is_shared_child()
    parent.ask("t.py::test_b", "fp32", repeats=5, calls=2)
    why = simulate_child.child_test_starting("t.py::test_a")
    assert why == "inferperf: not requested (the parent waits for t.py::test_b)"
    assert simulate_child.child_test_starting("t.py::test_b") is None
    assert simulate_child.child_request_for("t.py::test_b", "int8") is None
    request = simulate_child.child_request_for("t.py::test_b", "fp32")
    assert request == RegionRequest("t.py::test_b", "fp32", repeats=5, calls=2)
    record = ChildRecord("fp32", repeats=5, calls=2, plan=[PlanStep("repeat", 2, 10)])
    simulate_child.child_reply(record)
    answer = parent.answer()
    assert (answer["nodeid"], answer["variant"]) == ("t.py::test_b", "fp32")
    assert answer["record"]["plan"] == [{"kind": "repeat", "calls": 2, "wall_ns": 10}]
    assert ChildRecord.from_dict(answer["record"]) == record


def test_child_says_when_a_test_ended_without_the_region(parent):
    parent.ask("t.py::test_a", "int8")
    assert simulate_child.child_test_starting("t.py::test_a") is None
    assert simulate_child.child_request_for("t.py::test_a", "fp32") is None
    simulate_child.child_test_finished("t.py::test_a")
    assert parent.answer() == {
        "nodeid": "t.py::test_a",
        "variant": "int8",
        "missed": "t.py::test_a ran in the simulation child without calling "
        "pmu_profile(name='int8')",
    }


def test_child_says_when_its_tests_ran_out(parent):
    parent.ask("t.py::test_z")
    assert simulate_child.child_test_starting("t.py::test_a") is not None
    simulate_child.child_test_finished("t.py::test_a")  # not the one asked for
    simulate_child.child_session_finished()
    assert parent.answer()["missed"] == (
        "the simulation child finished its tests without reaching t.py::test_z"
    )


def test_child_skips_everything_once_the_parent_hangs_up(parent):
    parent.hang_up()
    assert simulate_child.child_test_starting("t.py::test_a") == (
        "inferperf: the parent needs no more simulations"
    )
    assert simulate_child.child_request_for("t.py::test_a", "") is None
    simulate_child.child_session_finished()  # nothing pending: nothing to say


def test_child_measure_answers_through_the_pipe(parent, monkeypatch, tmp_path):
    """child_measure in a shared child: the parent's repeats and calls, result on the pipe."""
    monkeypatch.setenv(simulate.ENV_CHILD, str(tmp_path / "unused.json"))
    monkeypatch.setenv(simulate.ENV_OPTIONS, json.dumps({"trigger": "start"}))
    calls = []
    parent.ask("t.py::test_a", "", repeats=2, calls=3)
    assert simulate_child.child_test_starting("t.py::test_a") is None
    simulate.child_measure(
        lambda: calls.append(1), nodeid="t.py::test_a", settings=simulate.RunSettings(warmup=1)
    )
    answer = parent.answer()
    plan = answer["record"]["plan"]
    assert [p["kind"] for p in plan].count("repeat") == 2
    assert [p["calls"] for p in plan if p["kind"] == "repeat"] == [3, 3]
    # warm-up (instrumented from the start here, so in the plan), discarded, 2 x 3, overhead
    assert len(calls) == simulate.CHILD_MIN_WARMUP + 3 + 2 * 3
    assert not (tmp_path / "unused.json").exists()


# -- the parent's end, against a scripted child -------------------------------------
FAKE_CHILD = r"""
import json, os, sys, time
from pathlib import Path
request_fd, reply_fd = (int(x) for x in os.environ["INFERPERF_SIMULATE_SHARED"].split(","))
workdir = Path(os.environ["INFERPERF_SIMULATE_CHILD"]).parent
requests = os.fdopen(request_fd)
replies = os.fdopen(reply_fd, "w")
mode = os.environ["FAKE_MODE"]
part = 0
print("fake child started", flush=True)
for line in requests:
    request = json.loads(line)
    if mode == "exit":
        sys.exit(3)
    if mode == "hang":
        time.sleep(60)
    answer = {"nodeid": request["nodeid"], "variant": request["variant"]}
    if mode == "missed":
        answer["missed"] = "not reached"
    else:
        for _ in range(2):
            part += 1
            (workdir / f"callgrind.out.{os.getpid()}.{part}").write_text(
                os.environ["FAKE_DUMP"].replace("part: 1", f"part: {part}"))
        answer["record"] = {"variant": request["variant"], "plan": [
            {"kind": "repeat", "calls": 1, "wall_ns": 5},
            {"kind": "overhead", "calls": 0, "wall_ns": 1}]}
    replies.write(json.dumps(answer) + "\n")
    replies.flush()
"""


@pytest.fixture
def scripted(monkeypatch, tmp_path):
    """SharedChild whose 'valgrind child' is FAKE_CHILD in mode ``mode``."""

    def make(mode: str, nodeids=("t.py::a", "t.py::b", "t.py::c")) -> SharedChild:
        def command(nodeids, **kwargs):
            return ChildCommand(
                [sys.executable, "-c", FAKE_CHILD],
                ["--tool=callgrind"],
                {},
                ChildOptions(trigger="vgdb", vgdb="vgdb", vgdb_prefix="x"),
            )

        monkeypatch.setattr(simulate_shared, "child_command", command)
        return SharedChild(
            list(nodeids), rootdir=tmp_path, env={"FAKE_MODE": mode, "FAKE_DUMP": DUMP}
        )

    return make


def test_parent_gets_each_regions_dumps_from_one_child(scripted):
    shared = scripted("answer")
    try:
        first = shared.measure("t.py::a", "", repeats=1, calls=1, timeout=30)
        second = shared.measure("t.py::c", "int8", repeats=1, calls=1, timeout=30)
        assert first is not None and second is not None
        assert [d.part for d in first.dumps] == [1, 2]
        assert [d.part for d in second.dumps] == [3, 4]  # only the new ones
        assert first.dumps[0].events["Ir"] > 0
        assert [p.kind for p in first.record.plan] == ["repeat", "overhead"]  # typed on arrival
        assert first.child["pid"] == second.child["pid"]
        assert (first.child["region_index"], second.child["region_index"]) == (1, 2)
        assert first.child["includes_start_up"] and not second.child["includes_start_up"]
        assert first.returncode is None and "fake child started" in first.output
        assert not shared.serves("t.py::b")  # the child went past it
        assert shared.serves("t.py::c")
    finally:
        shared.close()
    assert shared.failed == "closed" and not shared.serves("t.py::c")


def test_a_child_that_exits_is_no_error_here_it_stops_serving(scripted):
    shared = scripted("exit")
    assert shared.measure("t.py::a", "", repeats=1, calls=1, timeout=30) is None
    assert shared.failed == "the shared simulation child exited (status 3)"
    assert not shared.serves("t.py::b")


def test_a_missed_region_falls_back_and_the_child_serves_on(scripted):
    shared = scripted("missed")
    try:
        assert shared.measure("t.py::b", "", repeats=1, calls=1, timeout=30) is None
        assert shared.failed is None
        assert not shared.serves("t.py::b") and shared.serves("t.py::c")
    finally:
        shared.close()


def test_a_child_past_its_timeout_is_ended_with_a_clear_error(scripted):
    shared = scripted("hang")
    with pytest.raises(
        SimulateError,
        match=r"t.py::a: the shared simulation child gave no "
        r"result within timeout=1s under valgrind",
    ):
        shared.measure("t.py::a", "", repeats=1, calls=1, timeout=1)
    assert shared.failed == "no answer within timeout=1s"


def test_tests_it_was_not_started_for_are_not_its_business(scripted):
    shared = scripted("answer", nodeids=["t.py::a"])
    assert shared.measure("t.py::other", "", repeats=1, calls=1, timeout=30) is None
    assert shared.failed is None  # never started
    shared.close()


def test_the_child_runs_exactly_the_given_tests(tmp_path):
    built = simulate.child_command(
        ["t.py::a", "t.py::b"],
        rootdir=tmp_path,
        python="python",
        instrument_from_start=False,
        extra_args=(),
        block_plugins=simulate.BLOCK_PLUGINS,
        workdir=tmp_path,
    )
    command = built.command
    assert command[-2:] == ["t.py::a", "t.py::b"]
    pytest_args = command[command.index("pytest") :]
    # an addopts -m or -k cannot deselect what the parent asked for
    assert pytest_args[pytest_args.index("-m") + 1] == ""
    assert pytest_args[pytest_args.index("-k") + 1] == ""
    assert "no:randomly" in pytest_args and "no:hypothesispytest" in pytest_args


# -- for real, through the plugin ----------------------------------------------------
needs_valgrind = pytest.mark.skipif(
    simulate.available() is not None, reason=str(simulate.available())
)

SUITE = """
import os
import pytest

def work(rounds):
    s = 0
    for i in range(rounds):
        s += (i * i) % 7
    return s

@pytest.mark.perf(warmup=1, repeat=3)
def test_first(pmu_profile):
    pmu_profile(work, 3000)

@pytest.mark.perf(warmup=1, repeat=3)
def test_fails_before_profiling(pmu_profile):
    raise RuntimeError("broken before the region")

@pytest.mark.perf(warmup=1, repeat=3)
def test_variants(pmu_profile):
    pmu_profile(work, 2000, name="small")
    pmu_profile(work, 4000, name="large")

def test_not_profiled():
    assert True
"""


def _instructions(record: dict) -> float:
    return statistics.median(r["Ir"] for r in record["profile"]["settings"]["simulation"]["raw"])


def _reports(folder: Path) -> dict[str, dict]:
    out = {}
    for path in folder.glob("*.json"):
        record = json.loads(path.read_text())
        out[record["key"]] = record
    return out


@needs_valgrind
@pytest.mark.slow
def test_one_child_serves_the_session_with_the_counts_of_a_child_per_test(pytester):
    pytester.makepyfile(test_suite=textwrap.dedent(SUITE))
    # The parent selects test_variants against the project's addopts; so must the child.
    pytester.makeini("[pytest]\naddopts = -k 'not variants'\n")
    args = (
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "-k",
        "",
        "--inferperf",
        "--inferperf-backend",
        "simulate",
        "--inferperf-flamegraphs",
        "none",
    )
    shared = pytester.runpytest_subprocess(*args, "--inferperf-report", "shared")
    shared.assert_outcomes(passed=3, failed=1)
    shared.stdout.fnmatch_lines(["*RuntimeError: broken before the region*"])
    alone = pytester.runpytest_subprocess(
        *args, "--inferperf-report", "alone", "-o", "inferperf_simulate_shared=false"
    )
    alone.assert_outcomes(passed=3, failed=1)
    got, solo = _reports(pytester.path / "shared"), _reports(pytester.path / "alone")
    assert len(got) == len(solo) == 3, sorted(got)
    children = {key: r["profile"]["settings"]["simulation"]["child"] for key, r in got.items()}
    assert {c["mode"] for c in children.values()} == {"shared"}
    assert len({c["pid"] for c in children.values()}) == 1, children
    assert sorted(c["region_index"] for c in children.values()) == [1, 2, 3]
    for key, record in solo.items():
        assert record["profile"]["settings"]["simulation"]["child"]["mode"] == (
            "one child for this test"
        )
        a, b = _instructions(got[key]), _instructions(record)
        assert abs(a - b) / b < 0.001, (key, a, b)
    small = next(v for k, v in got.items() if "small" in k)
    large = next(v for k, v in got.items() if "large" in k)
    assert 1.8 < _instructions(large) / _instructions(small) < 2.2
