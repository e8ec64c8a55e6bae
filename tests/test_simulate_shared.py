"""The simulate backend's shared children: valgrind processes for many tests.

Fast tests drive both ends of the conversation for real (pipes, child processes,
signals) without valgrind; the slow test runs a suite through the plugin under
valgrind and checks that two children served every test, with the same counts as
a child per test.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import statistics
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pytest_inferperf.measure import child_process
from pytest_inferperf.measure.child_process import ENV_SHARED
from pytest_inferperf.measure.simulate import (
    backend as simulate,
)
from pytest_inferperf.measure.simulate import (
    child as simulate_child,
)
from pytest_inferperf.measure.simulate import (
    shared as simulate_shared,
)
from pytest_inferperf.measure.simulate.backend import (
    ChildCommand,
    ChildOptions,
    SimulateError,
)
from pytest_inferperf.measure.simulate.protocol import DEFAULT_CALLS, claimed_by
from pytest_inferperf.measure.simulate.shared import SharedChildren
from pytest_inferperf.plugin.session import plugin_of

FIXTURES = Path(__file__).parent / "fixtures" / "callgrind"
DUMP = (FIXTURES / "callgrind.out.21078.1").read_text()

pytest_plugins = ["pytester"]


# -- the child's end -------------------------------------------------------------
@pytest.fixture
def parent(monkeypatch):
    """The parent's ends of the two pipes; this process plays the child."""
    hang_up_r, hang_up_w = os.pipe()
    reply_r, reply_w = os.pipe()
    monkeypatch.setenv(ENV_SHARED, f"{hang_up_r},{reply_w},{os.getppid()}")
    monkeypatch.setattr(simulate_child, "_link", None)

    class Parent:
        def hang_up(self):
            os.close(hang_up_w)

        def answer(self):
            data = b""
            while not data.endswith(b"\n"):
                data += os.read(reply_r, 1 << 16)
            return json.loads(data)

        def silent(self):
            return not select.select([reply_r], [], [], 0)[0]

    yield Parent()
    for fd in (hang_up_w, reply_r):
        with contextlib.suppress(OSError):
            os.close(fd)


def test_child_runs_its_tests_until_the_parent_hangs_up(parent):
    assert child_process.is_shared_child()
    assert simulate_child.child_test_starting("t.py::test_a") is None
    assert simulate_child.child_test_starting("t.py::test_b") is None
    parent.hang_up()
    assert simulate_child.child_test_starting("t.py::test_c") == (
        "inferperf: the parent needs no more simulations"
    )


def test_child_says_when_each_test_ended(parent):
    simulate_child.child_test_finished("t.py::test_a")
    assert parent.answer() == {"nodeid": "t.py::test_a", "variant": "", "finished": True}


def test_a_child_runs_only_the_tests_it_claimed_first(parent, monkeypatch, tmp_path):
    from pytest_inferperf.measure.simulate.protocol import claim, claimed_by

    monkeypatch.setenv(child_process.ENV_CLAIMS, str(tmp_path))
    assert claim(tmp_path, "t.py::test_b", "4242")  # another child was there first
    assert simulate_child.child_test_starting("t.py::test_a") is None
    assert claimed_by(tmp_path, "t.py::test_a") == str(os.getpid())
    assert simulate_child.child_test_starting("t.py::test_a") is None  # its own, again
    assert simulate_child.child_test_starting("t.py::test_b") == (
        "inferperf: another shared simulation child runs this test"
    )
    simulate_child.child_test_finished("t.py::test_b")  # not its test: nothing to say
    assert parent.silent()
    simulate_child.child_test_finished("t.py::test_a")
    assert parent.answer() == {"nodeid": "t.py::test_a", "variant": "", "finished": True}


@pytest.mark.parametrize("nodeid", ["t.py::test[a/b::c]", "t.py::" + "x" * 300])
def test_a_claim_is_one_file_whatever_the_node_id(tmp_path, nodeid):
    from pytest_inferperf.measure.simulate.protocol import PARENT_CLAIM, claim, claimed_by

    assert claimed_by(tmp_path, nodeid) is None
    assert claim(tmp_path, nodeid, PARENT_CLAIM)
    assert not claim(tmp_path, nodeid, "123")  # the first claim stands
    assert claimed_by(tmp_path, nodeid) == PARENT_CLAIM
    assert len(list(tmp_path.iterdir())) == 1


def test_a_child_whose_parent_is_gone_measures_nothing(parent, monkeypatch):
    not_ours = "1" if os.getppid() != 1 else "2"  # a pid that is not this process's parent
    monkeypatch.setenv(ENV_SHARED, os.environ[ENV_SHARED].rsplit(",", 1)[0] + "," + not_ours)
    assert simulate_child.child_test_starting("t.py::test_a") == (
        "inferperf: the parent needs no more simulations"  # its named parent is not its parent
    )


@pytest.fixture
def child_options(monkeypatch, tmp_path):
    """This process set up as a simulation child whose dumps go to tmp_path."""
    monkeypatch.setenv(simulate.ENV_CHILD, str(tmp_path / "unused.json"))
    options = {"trigger": "start", "dumps": str(tmp_path / "callgrind.out")}
    monkeypatch.setenv(simulate.ENV_OPTIONS, json.dumps(options))
    return tmp_path


def test_child_measures_each_region_once_ahead_of_the_parent(parent, child_options):
    """child_measure in a shared child: repeats from the test's own settings, the record on
    the pipe, the region's dumps moved to a folder of their own, each region once."""
    pid = os.getpid()
    (child_options / f"callgrind.out.{pid}.1").write_text(DUMP)
    (child_options / f"callgrind.out.{pid}").write_text(DUMP)  # the one written at exit
    calls = []
    settings = simulate.RunSettings(warmup=1, repeat=2)
    assert simulate_child.child_test_starting("t.py::test_a") is None
    simulate.child_measure(lambda: calls.append(1), nodeid="t.py::test_a", settings=settings)
    answer = parent.answer()
    assert (answer["nodeid"], answer["variant"]) == ("t.py::test_a", "")
    plan = answer["record"]["plan"]
    assert [p["calls"] for p in plan if p["kind"] == "repeat"] == [DEFAULT_CALLS] * 2
    assert answer["record"]["repeats"] == 2
    # warm-up (instrumented from the start here, so in the plan), discarded, 2 repeats
    assert len(calls) == simulate.CHILD_MIN_WARMUP + 2 * DEFAULT_CALLS
    folder = Path(answer["dumps"])
    assert folder == child_options / "callgrind.out.region-1"
    assert sorted(p.name for p in folder.iterdir()) == [f"callgrind.out.{pid}.1"]
    assert (child_options / f"callgrind.out.{pid}").is_file()  # left where callgrind wants it
    assert not (child_options / "unused.json").exists()

    calls.clear()
    simulate.child_measure(lambda: calls.append(1), nodeid="t.py::test_a", settings=settings)
    assert parent.silent() and calls == [1]  # run once, uncounted
    simulate.child_measure(
        lambda: calls.append(1), nodeid="t.py::test_a", name="int8", settings=settings
    )
    again = parent.answer()
    assert again["variant"] == "int8" and again["dumps"].endswith(".region-2")


def test_once_the_parent_hung_up_the_child_measures_nothing(parent, child_options):
    parent.hang_up()
    calls = []
    simulate.child_measure(lambda: calls.append(1), nodeid="t.py::test_a")
    assert parent.silent() and calls


# -- the parent's end, against a scripted child -------------------------------------
FAKE_CHILD = r"""
import json, os, select, sys, time
from pathlib import Path
hang_up_fd, reply_fd, parent = (int(x) for x in os.environ["INFERPERF_SIMULATE_SHARED"].split(","))
assert parent == os.getppid()
workdir = Path(os.environ["INFERPERF_SIMULATE_CHILD"]).parent
replies = os.fdopen(reply_fd, "w")
mode = os.environ["FAKE_MODE"]
print("fake child started", flush=True)
start = os.environ["INFERPERF_SIMULATE_START"]  # as the real child: its tests come later
while not os.path.exists(start):
    time.sleep(0.01)
given = json.loads(Path(start).read_text())
os.environ.update(given["env"])
if mode == "exit":
    sys.exit(3)
if mode == "hang":
    time.sleep(60)

def send(answer):
    replies.write(json.dumps(answer) + "\n")
    replies.flush()

claims = os.environ.get("INFERPERF_SIMULATE_CLAIMS")
slow = json.loads(os.environ.get("FAKE_SLOW", "{}"))
time.sleep(float(os.environ.get("FAKE_DELAY", "0")))  # its start-up
part = region = 0
for nodeid, variants in json.loads(given["args"][0]):
    if claims:  # as the real child: the first to reach a test runs it
        from pytest_inferperf.measure.simulate.protocol import claim
        if not claim(claims, nodeid, str(os.getpid())):
            continue
    time.sleep(slow.get(nodeid, 0))
    for variant in variants if mode != "missed" else ():
        region += 1
        folder = workdir / f"callgrind.out.region-{region}"
        folder.mkdir()
        for _ in range(2):
            part += 1
            (folder / f"callgrind.out.{os.getpid()}.{part}").write_text(
                os.environ["FAKE_DUMP"].replace("part: 1", f"part: {part}"))
        record = {"variant": variant, "repeats": int(os.environ.get("FAKE_REPEATS", "1")),
                  "plan": [{"kind": "repeat", "calls": 1, "wall_ns": 5},
                           {"kind": "overhead", "calls": 0, "wall_ns": 1}]}
        send({"nodeid": nodeid, "variant": variant, "record": record, "dumps": str(folder)})
    send({"nodeid": nodeid, "finished": True})
os.read(hang_up_fd, 1)  # like the real child, which skips its tests once the parent hung up
"""

REGIONS = [["t.py::a", [""]], ["t.py::b", [""]], ["t.py::c", ["", "int8"]]]


@pytest.fixture
def scripted(monkeypatch, tmp_path):
    """SharedChildren whose 'valgrind children' are FAKE_CHILD in mode ``mode``; each
    measures ``regions`` (a list of [nodeid, [variants]]) of the tests it was given."""

    def make(mode: str, regions=REGIONS, count=1, **env) -> SharedChildren:
        def command(nodeids, **kwargs):
            return ChildCommand(
                [sys.executable, "-c", FAKE_CHILD],
                ["--tool=callgrind"],
                {},
                ChildOptions(trigger="vgdb", vgdb="vgdb", vgdb_prefix="x"),
                [json.dumps([r for r in regions if r[0] in nodeids])],
            )

        monkeypatch.setattr(simulate_shared, "child_command", command)
        shared = SharedChildren(
            [nodeid for nodeid, _ in regions],
            count=count,
            rootdir=tmp_path,
            env={"FAKE_MODE": mode, "FAKE_DUMP": DUMP, **env},
        )
        made.append(shared)
        return shared

    made: list[SharedChildren] = []
    yield make
    for shared in made:
        shared.close()


def _measure(shared, nodeid, variant="", repeats=1, timeout=30):
    return shared.measure(nodeid, variant, repeats=repeats, calls=1, timeout=timeout)


def _regions_left(tmp_path) -> list[str]:
    return sorted(p.name for p in tmp_path.glob("inferperf-simulate-shared-*/*.region-*"))


def test_parent_takes_each_regions_dumps_from_the_child_running_ahead(scripted, tmp_path):
    shared = scripted("answer")
    first = _measure(shared, "t.py::a")
    second = _measure(shared, "t.py::c", "int8")  # the child sent c's "" region first
    assert first is not None and second is not None
    assert [d.part for d in first.dumps] == [1, 2]
    assert [d.part for d in second.dumps] == [7, 8]  # its own folder's, not the others'
    assert first.dumps[0].events["Ir"] > 0
    assert [p.kind for p in first.record.plan] == ["repeat", "overhead"]  # typed on arrival
    assert first.child["pid"] == second.child["pid"]
    assert (first.child["region_index"], second.child["region_index"]) == (1, 2)
    assert first.child["includes_start_up"] and not second.child["includes_start_up"]
    assert first.returncode is None and "fake child started" in first.output
    assert not shared.serves("t.py::b")  # the parent went past it
    assert shared.serves("t.py::c")
    third = _measure(shared, "t.py::c")  # kept when it arrived, taken now
    assert third is not None and [d.part for d in third.dumps] == [5, 6]
    assert _regions_left(tmp_path) == []  # b's region was discarded, the rest taken
    shared.close()
    assert shared.failed == "closed" and not shared.serves("t.py::c")


def test_a_region_the_child_did_not_reach_falls_back_and_it_serves_on(scripted):
    shared = scripted("missed")
    assert _measure(shared, "t.py::b") is None
    assert shared.failed is None
    assert not shared.serves("t.py::b") and shared.serves("t.py::c")


def test_a_region_measured_with_other_settings_is_measured_alone(scripted, tmp_path):
    shared = scripted("answer", FAKE_REPEATS="3")
    assert _measure(shared, "t.py::a", repeats=1) is None  # the child measured 3 repeats
    assert shared.failed is None and _regions_left(tmp_path) == []
    assert _measure(shared, "t.py::b", repeats=3) is not None


def test_a_child_that_exits_is_no_error_here_it_stops_serving(scripted):
    shared = scripted("exit")
    assert _measure(shared, "t.py::a") is None
    assert shared.failed == "the shared simulation child exited (status 3)"
    assert not shared.serves("t.py::b")


def test_a_child_past_its_timeout_is_ended_with_a_clear_error(scripted):
    shared = scripted("answer", FAKE_SLOW=json.dumps({"t.py::a": 60}))  # took a, stuck in it
    # the one-second timeout is for the region, not for the child's start: on a busy
    # machine starting the child alone can take longer, which is the other error's case
    shared.start()
    ready = time.monotonic() + 60
    while claimed_by(shared.claims, "t.py::a") is None and time.monotonic() < ready:
        time.sleep(0.05)
    with pytest.raises(
        SimulateError,
        match=r"t.py::a: the shared simulation child gave no "
        r"result within timeout=1s under valgrind",
    ):
        _measure(shared, "t.py::a", timeout=1)
    assert shared.failed == "no answer within timeout=1s"


def test_children_that_never_get_to_a_test_are_ended_with_a_clear_error(scripted):
    shared = scripted("hang")  # running, but never reaches a test
    with pytest.raises(
        SimulateError,
        match=r"t.py::a: no shared simulation child got to it within timeout=1s under valgrind",
    ):
        _measure(shared, "t.py::a", timeout=1)
    assert shared.failed == "no answer within timeout=1s"


def test_a_child_found_exited_says_its_status(scripted):
    shared = scripted("exit")
    assert _measure(shared, "t.py::a") is None
    assert shared.failed == "the shared simulation child exited (status 3)"


def test_tests_it_was_not_started_for_are_not_its_business(scripted):
    shared = scripted("answer", regions=[["t.py::a", [""]]])
    assert _measure(shared, "t.py::other") is None
    assert shared.failed is None and not shared.covers("t.py::other")
    assert shared.children[0].served == 0


def test_children_take_the_next_test_no_other_took_and_measure_in_parallel(scripted):
    # a is slow: the child that took it is still busy when b and c come up
    shared = scripted("answer", count=2, FAKE_SLOW=json.dumps({"t.py::a": 1.5}))
    assert [c.nodeids for c in shared.children] == [("t.py::a", "t.py::b", "t.py::c")] * 2
    shared.start()
    runs = [_measure(shared, n) for n in ("t.py::a", "t.py::b", "t.py::c")]
    assert all(r is not None for r in runs)
    pids = [r.child["pid"] for r in runs]
    assert pids[0] != pids[1] == pids[2]  # dealt round robin, c would wait behind a
    assert [r.child["region_index"] for r in runs] == [1, 1, 2]
    assert shared.served == 3
    claims = Path(shared.claims)
    assert len(list(claims.iterdir())) == 3
    shared.close()
    assert not claims.exists()


def test_the_wait_for_a_region_counts_from_when_the_parent_asked(scripted):
    shared = scripted("answer", count=2, FAKE_DELAY="1.0")
    run = _measure(shared, "t.py::a")  # no child claims it before its start-up is over
    assert run is not None and run.wall_s >= 1.0
    assert run.child["includes_start_up"]


def test_no_child_starts_a_test_the_parent_went_past(scripted):
    from pytest_inferperf.measure.simulate.protocol import PARENT_CLAIM, claimed_by

    shared = scripted("answer", count=2)
    run = _measure(shared, "t.py::c")  # starts the children, a and b are not needed
    assert run is not None and run.record.variant == ""
    assert claimed_by(shared.claims, "t.py::a") == claimed_by(shared.claims, "t.py::b")
    assert claimed_by(shared.claims, "t.py::a") == PARENT_CLAIM
    assert claimed_by(shared.claims, "t.py::c") == str(run.child["pid"])
    assert _measure(shared, "t.py::a") is None  # the parent claimed it: none ran it


def test_a_claim_without_its_owner_is_no_child_s_and_ends_the_wait(scripted):
    from pytest_inferperf.measure.simulate.protocol import claim_path

    shared = scripted("exit", count=2)
    claim_path(shared.claims, "t.py::a").write_text("")  # as a claim cut off half-made
    assert _measure(shared, "t.py::a", timeout=20) is None


def test_a_test_no_child_will_reach_is_claimed_by_the_parent(scripted):
    from pytest_inferperf.measure.simulate.protocol import PARENT_CLAIM, claimed_by

    shared = scripted("exit", count=2)  # both children exit at once
    assert _measure(shared, "t.py::a", timeout=20) is None
    assert claimed_by(shared.claims, "t.py::a") == PARENT_CLAIM


def _stopped(pids, expected: bool) -> list[bool]:
    """Whether each process is stopped (state T), once all are as ``expected`` or after
    5 s (a signal lands soon after kill returns, not before)."""
    deadline = time.monotonic() + 5
    while True:
        states = [Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0] for p in pids]
        stopped = [state == "T" for state in states]
        if set(stopped) == {expected} or time.monotonic() > deadline:
            return stopped
        time.sleep(0.01)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_children_are_stopped_while_the_parent_times_and_run_while_it_waits(scripted):
    shared = scripted("answer", count=2)
    shared.start()
    pids = [c._proc.pid for c in shared.children]
    with shared.paused():
        assert _stopped(pids, True) == [True, True]
        with shared.paused():  # nested: still stopped
            pass
        assert _stopped(pids, True) == [True, True]
        run = _measure(shared, "t.py::b")  # resumed while the parent waits for it
        assert run is not None
        assert _stopped(pids, True) == [True, True]
    assert _stopped(pids, False) == [False, False]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_children_go_on_while_the_parent_works_on_a_region_inside_a_timed_body(scripted):
    shared = scripted("answer", count=2)
    shared.start()
    pids = [c._proc.pid for c in shared.children]
    with shared.running():  # not paused: nothing to resume or stop
        assert _stopped(pids, False) == [False, False]
    assert _stopped(pids, False) == [False, False]
    with shared.paused():
        assert _stopped(pids, True) == [True, True]
        with shared.running():  # the parent builds the profile: nothing timed
            assert _stopped(pids, False) == [False, False]
            assert _measure(shared, "t.py::b") is not None  # nested: still going on after
            assert _stopped(pids, False) == [False, False]
            with shared.paused():  # a timed run inside it: the innermost block decides
                assert _stopped(pids, True) == [True, True]
            assert _stopped(pids, False) == [False, False]
        assert _stopped(pids, True) == [True, True]  # the body times again: stopped
    assert _stopped(pids, False) == [False, False]


@pytest.mark.parametrize(
    ("tests", "wanted", "count"), [(5, 2, 2), (1, 4, 1), (0, None, 1), (3, 0, None)]
)
def test_child_count(tests, wanted, count):
    cpus = len(os.sched_getaffinity(0))
    assert simulate_shared.child_count(tests, wanted) == (count or min(cpus, tests))


@pytest.mark.parametrize("value", ["0", "many", "-2"])
def test_a_bad_children_count_is_a_usage_error_at_start(pytester, value):
    pytester.makepyfile("def test_a():\n    pass\n")
    result = pytester.runpytest_inprocess("-o", f"inferperf_simulate_children={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"*inferperf_simulate_children = '{value}' in the ini file: give how many "
            "valgrind children the simulate backend may run at once (1 or more), or auto*"
        ]
    )


@pytest.mark.parametrize(("value", "count"), [("auto", None), ("2", 2), (" AUTO ", None)])
def test_the_children_count_is_read_from_the_ini(pytester, value, count):
    config = pytester.parseconfigure("-o", f"inferperf_simulate_children={value}")
    assert plugin_of(config).settings.simulate_children == count


def _child_pytest_args(tmp_path, extra_args=()) -> list[str]:
    built = simulate.child_command(
        ["t.py::a", "t.py::b[x/../y]"],
        rootdir=tmp_path,
        python="python",
        instrument_from_start=False,
        extra_args=extra_args,
        block_plugins=simulate.BLOCK_PLUGINS,
        workdir=tmp_path,
    )
    # valgrind runs the child's entry, which takes pytest's arguments from its start file
    assert built.command[-2:] == ["-m", "pytest_inferperf.measure.simulate.child_start"]
    args = built.pytest_args
    # node ids under the rootdir, whatever folder the child starts in; joined as text
    assert args[-2:] == [f"{tmp_path}/t.py::a", f"{tmp_path}/t.py::b[x/../y]"]
    return args


def test_the_parents_options_come_before_the_childs_own(tmp_path):
    args = _child_pytest_args(tmp_path, ("--n-iter=5", "--names", "a", "b"))
    # first: the child's -p/-m/-k override any left, and an option of any number of
    # values (--names) stops at the child's -p, not at a node id
    assert args[:4] == ["--n-iter=5", "--names", "a", "b"]
    assert args[4] == "-p"


def test_the_child_runs_exactly_the_given_tests(tmp_path):
    pytest_args = _child_pytest_args(tmp_path)
    # an addopts -m or -k cannot deselect what the parent asked for
    assert pytest_args[pytest_args.index("-m") + 1] == ""
    assert pytest_args[pytest_args.index("-k") + 1] == ""
    assert "no:randomly" in pytest_args and "no:hypothesispytest" in pytest_args
    assert "--assert=plain" in pytest_args  # after addopts: an --assert=rewrite there loses


# -- for real, through the plugin ----------------------------------------------------
needs_valgrind = pytest.mark.skipif(
    simulate.available() is not None, reason=str(simulate.available())
)

WORK = """
def work(rounds):
    s = 0
    for i in range(rounds):
        s += (i * i) % 7
    return s
"""

SUITE = (
    """
import os
import pytest

"""
    + WORK
    + """

@pytest.mark.perf(warmup=1, repeat=3)
def test_first(pmu_profile):
    # the parent imports the tests with pytest's assertion rewriting, a child without
    assert ("@py_builtins" in globals()) != bool(os.environ.get("INFERPERF_SIMULATE_CHILD"))
    pmu_profile(work, 3000)

@pytest.mark.perf(warmup=1, repeat=3)
def test_variants(pmu_profile):
    pmu_profile(work, 2000, name="small")
    pmu_profile(work, 4000, name="large")

@pytest.mark.perf(warmup=1, repeat=3)
def test_fails_before_profiling(pmu_profile):
    raise RuntimeError("broken before the region")

def test_not_profiled():
    assert True
"""
)


#: A simulated pytest run of a pytester project: one process (valgrind follows no xdist
#: workers), the project's order, no flamegraph passes.
SIMULATE_ARGS = (
    "-p",
    "no:cacheprovider",
    "-p",
    "no:randomly",
    "-n",
    "0",
    "--inferperf",
    "--inferperf-backend",
    "simulate",
    "--inferperf-flamegraphs",
    "none",
)


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
def test_two_children_serve_the_session_with_the_counts_of_a_child_per_test(pytester):
    pytester.makepyfile(test_suite=textwrap.dedent(SUITE))
    # The parent selects test_variants against the project's addopts; so must the child.
    # And the project distributes its tests, this run does not: nor may the child.
    pytester.makeini("[pytest]\naddopts = -k 'not variants' -n 2\n")
    args = ("-k", "", *SIMULATE_ARGS)
    shared = pytester.runpytest_subprocess(
        *args, "--inferperf-report", "shared", "-o", "inferperf_simulate_children=2"
    )
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
    # every child was given every test and took the next one no other child took: both
    # regions of test_variants come from the one that took it, each child's in order
    variants = [c for k, c in children.items() if "variants" in k]
    assert len({c["pid"] for c in variants}) == 1, children
    assert {c["tests"] for c in children.values()} == {3}
    by_child: dict[int, list[int]] = {}
    for child in children.values():
        by_child.setdefault(child["pid"], []).append(child["region_index"])
    assert all(sorted(v) == list(range(1, len(v) + 1)) for v in by_child.values()), children
    for key, record in solo.items():
        assert record["profile"]["settings"]["simulation"]["child"]["mode"] == (
            "one child for this test"
        )
        a, b = _instructions(got[key]), _instructions(record)
        assert abs(a - b) / b < 0.001, (key, a, b)
    small = next(v for k, v in got.items() if "small" in k)
    large = next(v for k, v in got.items() if "large" in k)
    assert 1.8 < _instructions(large) / _instructions(small) < 2.2


PAUSE_SUITE = (
    """
import json, os, time
from pathlib import Path
import pytest

"""
    + WORK
    + '''

IN_CHILD = bool(os.environ.get("INFERPERF_SIMULATE_CHILD"))


def child_states(config, stopped):
    """The states of the shared children still there, once all are (or none is)
    stopped: a signal lands soon after it was sent, not before."""
    shared = config.pluginmanager.get_plugin("inferperf-measurers").shared
    deadline = time.monotonic() + 5
    while True:
        states = []
        for child in shared.children:
            try:
                state = Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, TypeError):  # gone (it ran out of tests)
                continue
            if state not in "ZX":
                states.append(state)
        if states and all((s == "T") == stopped for s in states):
            return states
        if time.monotonic() > deadline:
            return states
        time.sleep(0.01)


def record(name, states):
    Path(f"states-{name}.json").write_text(json.dumps(states))


@pytest.mark.perf(warmup=1, repeat=3)
def test_a(pmu_profile, request):
    if not IN_CHILD:  # the parent builds sessions and inputs here: nothing is timed
        record("body", child_states(request.config, stopped=False))
    seen = []

    def timed_work():
        if not IN_CHILD and not seen:  # the parent's native run: timed
            seen.append(True)
            record("native", child_states(request.config, stopped=True))
        return work(2000)

    pmu_profile(timed_work)


def test_plain(request):  # no pmu_profile: it may time anything
    record("plain", child_states(request.config, stopped=True))
    Path("plain-done").touch()


@pytest.mark.perf(warmup=1, repeat=3)
def test_b(pmu_profile):
    if IN_CHILD:  # alive and waiting while the parent looks at it in test_plain
        deadline = time.monotonic() + 60
        while not Path("plain-done").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    pmu_profile(work, 3000)
'''
)


@needs_valgrind
@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_shared_children_stop_exactly_while_the_parent_times(pytester):
    """Through a real pytest run: every shared child is stopped during a native run and
    for the body of a test without ``pmu_profile``, and runs while a ``pmu_profile``
    test's body does untimed work."""
    pytester.makepyfile(test_pause=textwrap.dedent(PAUSE_SUITE))
    result = pytester.runpytest_subprocess(*SIMULATE_ARGS, "-o", "inferperf_simulate_children=2")
    result.assert_outcomes(passed=3)
    states = {
        name: json.loads((pytester.path / f"states-{name}.json").read_text())
        for name in ("body", "native", "plain")
    }
    assert states["native"] == ["T", "T"], states
    assert states["plain"] and set(states["plain"]) == {"T"}, states
    assert states["body"] and "T" not in states["body"], states


OPTIONS_CONFTEST = """
def pytest_addoption(parser):
    parser.addoption("--rounds", type=int, default=1000)
    parser.addoption("--rounds-file", default=None)
"""

OPTIONS_SUITE = (
    """
import json, os
from pathlib import Path
import pytest

"""
    + WORK
    + """

@pytest.mark.perf(warmup=1, repeat=3)
def test_options(pmu_profile, request):
    rounds = request.config.getoption("--rounds")
    from_file = int(Path(request.config.getoption("--rounds-file")).read_text())
    seen = {"rounds": rounds, "from_file": from_file, "cwd": os.getcwd()}
    who = "child" if os.environ.get("INFERPERF_SIMULATE_CHILD") else "parent"
    Path(os.environ["SEEN_DIR"], who + ".json").write_text(json.dumps(seen))
    pmu_profile(work, rounds + from_file)
"""
)


@needs_valgrind
@pytest.mark.slow
@pytest.mark.parametrize("shared", ["true", "false"])
def test_a_child_runs_the_test_with_the_parents_options_from_the_parents_folder(
    pytester, monkeypatch, shared
):
    """A conftest's options on the command line, a path relative to the folder pytest was
    started in: the valgrind child sees the same values and the same folder (before,
    it got the defaults and started in the rootdir: other counts, or an error)."""
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(OPTIONS_CONFTEST)
    sub = pytester.mkpydir("sub")
    (sub / "test_options.py").write_text(textwrap.dedent(OPTIONS_SUITE))
    (sub / "rounds.txt").write_text("500")
    monkeypatch.setenv("SEEN_DIR", str(pytester.path))
    monkeypatch.chdir(sub)
    result = pytester.runpytest_subprocess(
        *SIMULATE_ARGS,
        "--rounds",
        "4000",
        "--rounds-file=rounds.txt",
        "--inferperf-report",
        str(pytester.path / "report"),
        "-o",
        f"inferperf_simulate_shared={shared}",
        "test_options.py",
    )
    result.assert_outcomes(passed=1)
    seen = {
        who: json.loads((pytester.path / f"{who}.json").read_text()) for who in ("parent", "child")
    }
    assert (
        seen["child"]
        == seen["parent"]
        == {
            "rounds": 4000,
            "from_file": 500,
            "cwd": str(sub),
        }
    )
    assert "returned different results" not in result.stdout.str()
    (record,) = _reports(pytester.path / "report").values()
    assert record["outcome"] == "passed"


def test_children_launched_before_their_tests_are_known_are_taken_and_serve(
    scripted, monkeypatch, tmp_path
):
    shared_env = {"FAKE_MODE": "answer", "FAKE_DUMP": DUMP}
    scripted("answer")  # puts the fake child's command in place
    early = [simulate_shared.launch(rootdir=tmp_path, env=shared_env) for _ in range(3)]
    other = simulate_shared.launch(rootdir=tmp_path, mode="instructions", env=shared_env)
    time.sleep(0.3)  # started, waiting for their start files: nothing measured yet
    assert all(each.proc.poll() is None for each in early)
    shared = SharedChildren(
        [nodeid for nodeid, _ in REGIONS],
        count=2,
        rootdir=tmp_path,
        env=shared_env,
        launched=[other, *early],
    )
    try:
        shared.start()
        # two of the three that fit are taken; the third and the other mode's are ended
        assert [c.pid for c in shared.children] == [early[0].proc.pid, early[1].proc.pid]
        assert early[2].proc.poll() is not None and other.proc.poll() is not None
        assert not early[2].workdir.exists()
        run = _measure(shared, "t.py::a")
        assert run is not None and run.child["pid"] in {early[0].proc.pid, early[1].proc.pid}
        assert _measure(shared, "t.py::c", "int8") is not None
    finally:
        shared.close()
    assert all(each.proc.poll() is not None for each in early)


def _launched_by_the_plugin(pytester, monkeypatch, *args):
    from pytest_inferperf.measure.simulate import valgrind as simulate_valgrind

    started: list = []

    class Fake:
        def __init__(self, **kwargs):
            self.kwargs, self.closed = kwargs, False
            started.append(self)

        def close(self):
            self.closed = True

    monkeypatch.setattr(simulate_shared, "launch", lambda **kwargs: Fake(**kwargs))
    monkeypatch.setattr(simulate_valgrind, "available", lambda: None)
    pytester.makepyfile(test_a="def test_plain(): pass\n")
    pytester.makeini("[pytest]\ninferperf_simulate_children = 2\n")
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider", *args)
    return result, started


def test_the_plugin_launches_children_at_session_start_and_ends_them_unused(pytester, monkeypatch):
    result, started = _launched_by_the_plugin(
        pytester, monkeypatch, "--inferperf", "--inferperf-backend", "simulate"
    )
    result.assert_outcomes(passed=1)
    assert len(started) == 2  # inferperf_simulate_children
    assert {str(s.kwargs["rootdir"]) for s in started} == {str(pytester.path)}
    assert all(s.closed for s in started)  # no test uses pmu_profile: ended at collection


@pytest.mark.parametrize(
    "args",
    [
        ("--inferperf", "--inferperf-backend", "none"),
        ("--inferperf-backend", "simulate"),  # not enabled
        ("--inferperf", "--inferperf-backend", "simulate", "--co"),
        ("--inferperf", "--inferperf-backend", "simulate", "-o", "inferperf_simulate_shared=0"),
    ],
)
def test_the_plugin_launches_nothing_where_no_shared_child_would_run(pytester, monkeypatch, args):
    result, started = _launched_by_the_plugin(pytester, monkeypatch, *args)
    assert result.ret == 0
    assert started == []
