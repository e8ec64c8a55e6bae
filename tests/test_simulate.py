"""The simulate backend: callgrind parser, caches, event mapping, the child, and real runs.

The real-valgrind tests build a tiny project in a temporary folder whose
conftest has its own minimal ``pmu_profile``-like fixture (``sim_profile``)
wired the way the plugin wires the simulate backend, so they do not depend on
``plugin/fixtures.py``. Its child runs (valgrind + pytest, ~20-40 s each) start together
in one module fixture.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pytest_inferperf.core.profile import Profile
from pytest_inferperf.judge.comparison import compare_profiles
from pytest_inferperf.measure.runner import RunSettings
from pytest_inferperf.measure.simulate import (
    backend as simulate,
)
from pytest_inferperf.measure.simulate import (
    callgrind,
)
from pytest_inferperf.measure.simulate import (
    child as simulate_child,
)
from pytest_inferperf.measure.simulate import (
    parent as simulate_parent,
)
from pytest_inferperf.measure.simulate.callgrind import CallgrindDump, CallgrindFormatError
from pytest_inferperf.measure.simulate.client_requests import client_requests
from pytest_inferperf.pmu.base import CounterSample
from pytest_inferperf.pmu.cpu import SystemPaths
from pytest_inferperf.pmu.events import DEFAULT_EVENTS

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "callgrind"
REGION_DUMP = FIXTURES / "callgrind.out.21078.1"
EXIT_DUMP = FIXTURES / "callgrind.out.21078"
NO_CYCLES = (
    "not available: the simulate backend counts instructions, cache and branch "
    "events, not cycles (no IPC)"
)

needs_valgrind = pytest.mark.skipif(
    simulate.available() is not None, reason=str(simulate.available())
)


# -- the callgrind parser, on a real recording ------------------------------------
def test_parser_reads_the_recorded_dump_exactly():
    assert simulate.parse_callgrind is callgrind.parse_callgrind
    assert callgrind.parse_callgrind(REGION_DUMP.read_text()) == {
        "Ir": 101160,
        "Dr": 28813,
        "Dw": 16504,
        "I1mr": 271,
        "D1mr": 179,
        "D1mw": 38,
        "ILmr": 22,
        "DLmr": 0,
        "DLmw": 2,
        "Bc": 12019,
        "Bcm": 232,
        "Bi": 4018,
        "Bim": 130,
    }


def test_parser_reads_the_header_facts():
    dump = callgrind.read_dump(REGION_DUMP.read_text())
    assert (dump.part, dump.pid, dump.trigger) == (1, 21078, "--dump-after=closure_fcn")
    assert not dump.at_exit
    assert dump.caches == {
        "I1": "32768 B, 64 B, 8-way associative",
        "D1": "32768 B, 64 B, 8-way associative",
        "LL": "33554432 B, 64 B, 16-way associative",
    }
    exit_dump = callgrind.read_dump(EXIT_DUMP.read_text())
    assert exit_dump.at_exit and exit_dump.part == 2
    assert set(exit_dump.events.values()) == {0}  # "totals: 0": omitted columns are 0


def test_read_dumps_keeps_the_region_dumps_in_order(tmp_path):
    text = REGION_DUMP.read_text()
    for part, ir in ((2, 5), (1, 7), (10, 9)):
        body = text.replace("part: 1", f"part: {part}").replace("totals: 101160", f"totals: {ir}")
        (tmp_path / f"callgrind.out.21078.{part}").write_text(body)
    shutil.copy(EXIT_DUMP, tmp_path / "callgrind.out.21078")
    shutil.copy(REGION_DUMP, tmp_path / "callgrind.out.99.1")  # another process
    dumps = callgrind.read_dumps(tmp_path, 21078)
    assert [(d.part, d.events["Ir"]) for d in dumps] == [(1, 7), (2, 5), (10, 9)]


def test_summary_is_the_fallback_and_short_lines_pad_with_zeros():
    text = "events: Ir Dr Dw\nsummary: 10 4\n"
    assert callgrind.parse_callgrind(text) == {"Ir": 10, "Dr": 4, "Dw": 0}


@pytest.mark.parametrize(
    "text, message",
    [
        ("summary: 1 2\n", "no 'events:' line"),
        ("events: Ir\nfn=(1) main\n", "no 'totals:' or 'summary:'"),
        ("events: Ir\ntotals: 1 2\n", "has 2 costs"),
        ("events: Ir\ntotals: x\n", "not a list of integers"),
    ],
)
def test_parser_refuses_what_it_cannot_read(text, message):
    with pytest.raises(CallgrindFormatError, match=message):
        callgrind.parse_callgrind(text)


# -- events ---------------------------------------------------------------------------
def test_logical_events_from_the_recorded_dump():
    raw = callgrind.parse_callgrind(REGION_DUMP.read_text())
    assert simulate.logical_counts(raw) == {
        "instructions": 101160,
        "l1d_access": 28813 + 16504,
        "l1d_refill": 179 + 38,
        "l1i_access": 101160,
        "l1i_refill": 271,
        "llc_read": 271 + 179,
        "llc_miss": 22 + 0,
        "branches": 12019 + 4018,
        "branch_misses": 232 + 130,
    }


def test_every_event_has_a_status_and_cycles_says_why():
    statuses = simulate.event_statuses(DEFAULT_EVENTS)
    assert set(statuses) == set(DEFAULT_EVENTS)
    assert statuses["cycles"].reason == NO_CYCLES and not statuses["cycles"].available
    assert statuses["instructions"].source == "callgrind Ir"
    assert statuses["llc_miss"].source == "callgrind ILmr+DLmr"
    for status in statuses.values():
        assert status.available or status.reason.startswith("not available:")
    assert {n for n, s in statuses.items() if s.available} == set(simulate.EVENT_FORMULAS)


def test_events_without_cache_simulation_are_unavailable():
    statuses = simulate.event_statuses(["instructions", "l1d_refill"], ["Ir", "Dr", "Dw"])
    assert statuses["instructions"].available
    assert "D1mr, D1mw" in statuses["l1d_refill"].reason


# -- caches ---------------------------------------------------------------------------
def _sysfs(root: Path, caches: list[tuple[str, int, str, str | None, str | None]]) -> SystemPaths:
    for index, (kind, level, size, ways, line) in enumerate(caches):
        leaf = root / f"sys/devices/system/cpu/cpu0/cache/index{index}"
        leaf.mkdir(parents=True)
        for name, value in (
            ("type", kind),
            ("level", str(level)),
            ("size", size),
            ("ways_of_associativity", ways),
            ("coherency_line_size", line),
        ):
            if value is not None:
                (leaf / name).write_text(value + "\n")
    return SystemPaths(root)


def test_cache_config_from_sysfs(tmp_path):
    paths = _sysfs(
        tmp_path,
        [
            ("Data", 1, "48K", "12", "64"),
            ("Instruction", 1, "32K", "8", "64"),
            ("Unified", 2, "2048K", "16", "64"),
            ("Unified", 3, "30720K", "20", "64"),
        ],
    )
    config, notes = simulate.cache_config(paths)
    assert simulate.cache_options(config) == [
        "--I1=32768,8,64",
        "--D1=49152,12,64",
        "--LL=31457280,30,64",
    ]
    assert notes["LL"].startswith("sysfs cpu0 index3 (L3 Unified); 24576 sets")


def test_cache_config_leaves_what_sysfs_does_not_say_to_callgrind(tmp_path):
    paths = _sysfs(tmp_path, [("Data", 1, "32K", "8", "64"), ("Instruction", 1, "32K", None, "64")])
    config, notes = simulate.cache_config(paths)
    assert simulate.cache_options(config) == ["--D1=32768,8,64"]
    assert notes["I1"].startswith("callgrind's default:")
    assert notes["LL"].startswith("callgrind's default: sysfs lists no LL cache")


@pytest.mark.parametrize(
    "size, assoc, line, expected",
    [
        (32768, 8, 64, "32768,8,64"),
        (33554432, 16, 64, "33554432,16,64"),
        (31457280, 20, 64, "31457280,30,64"),  # 24576 sets -> 16384 sets, 30-way
        (32768, 8, 48, None),  # line not a power of two
        (32768, 8, 8, None),  # line below 16 bytes
        (1000, 8, 64, None),  # not whole sets
    ],
)
def test_fit_geometry(size, assoc, line, expected):
    geometry, _note = simulate.fit_geometry(size, assoc, line)
    assert (geometry.value if geometry else None) == expected


# -- the region -----------------------------------------------------------------------
def test_run_as_callback_runs_the_calls_in_one_callback():
    seen = []
    assert simulate.run_as_callback(lambda: seen.append(1) or len(seen), 5) == 5
    assert seen == [1] * 5
    assert simulate.run_as_callback(lambda: 1 / 0, 0) is None


def test_run_as_callback_re_raises_what_the_workload_raised():
    def boom():
        raise KeyError("inside the callback")

    with pytest.raises(KeyError, match="inside the callback"):
        simulate.run_as_callback(boom, 2)
    with pytest.raises(ValueError, match="calls=-1"):
        simulate.run_as_callback(boom, -1)


# -- valgrind missing -----------------------------------------------------------------
def test_without_valgrind_the_reason_is_clear(monkeypatch, tmp_path):
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    reason = "not available: valgrind is not installed: apt install valgrind"
    assert simulate.available() == reason
    with pytest.raises(simulate.SimulateUnavailable) as info:
        simulate.profile_via_child(
            "test_x.py::test_x", None, simulate.SimulateOptions(rootdir=tmp_path)
        )
    assert str(info.value) == reason and info.value.reason == reason


# -- the child, in process (no valgrind) ------------------------------------------------
def _as_child(monkeypatch, tmp_path, variant="", **options):
    result = tmp_path / "child.json"
    monkeypatch.setenv(simulate.ENV_CHILD, str(result))
    monkeypatch.setenv(simulate.ENV_VARIANT, variant)
    monkeypatch.setenv(simulate.ENV_OPTIONS, json.dumps({"trigger": "start", **options}))
    monkeypatch.setattr(simulate_child, "_measured_variants", set())
    return result


def test_child_measures_the_requested_variant(monkeypatch, tmp_path):
    result = _as_child(monkeypatch, tmp_path, "fast", repeats=2, calls=3)
    assert simulate.in_child()
    calls = []
    other = simulate.child_measure(
        lambda: calls.append("other"), name="slow", settings=RunSettings(warmup=1)
    )
    assert calls == ["other"] and not other.settings["measured"] and not result.exists()
    profile = simulate.child_measure(
        lambda: calls.append("fast") or 1.0, name="fast", settings=RunSettings(warmup=2)
    )
    assert profile.backend == "simulate-child" and profile.settings["measured"]
    record = json.loads(result.read_text())
    kinds = [step["kind"] for step in record["plan"]]
    warmups = record["warmup"]["calls"]
    # instrumented from the start: callgrind dumps the warm-up callbacks too
    assert kinds == ["warmup"] * (warmups + 1) + ["repeat"] * 2 + ["overhead"]
    # 8 calls before the first repeat, the discarded callback's 3 included
    assert warmups == simulate.CHILD_MIN_WARMUP - 3 == 5
    assert calls.count("fast") == warmups + 3 * 3
    assert record["outputs_ok"] and record["instrumentation"]["ok"]


@pytest.mark.parametrize(
    ("instructions", "switch", "plan", "uninstrumented"),
    [
        # 55M a call (3 a callback): large, 3 warm-up calls do
        (165_000_000, "ok", [("warmup", 3)], 3),
        # 45M a call: small, topped up uninstrumented to 8 calls (3 + 3 + 2), then one
        # more discarded callback for the simulated caches
        (135_000_000, "ok", [("warmup", 3), ("warmup", 3)], 5),
        (None, "ok", [("warmup", 3), ("warmup", 3)], 5),  # no dump to read: small
        # instrumentation would not switch off: the rest instrumented, discarded
        (135_000_000, "no off", [("warmup", 3)] + [("warmup", 1)] * 2, 3),
    ],
)
def test_only_a_small_slow_call_gets_the_rest_of_the_warm_up(
    monkeypatch, tmp_path, instructions, switch, plan, uninstrumented
):
    result = _as_child(
        monkeypatch, tmp_path, "v", repeats=2, calls=3, trigger="vgdb", dumps="unused"
    )
    states = []

    def instrumentation(options, state):
        states.append(state)
        ok = not (switch == "no off" and state == "off" and len(states) == 2)
        return simulate_child.Instrumentation("client request", ok)

    monkeypatch.setattr(simulate_child, "_instrumentation", instrumentation)
    monkeypatch.setattr(simulate_child, "_last_callback_instructions", lambda d: instructions)
    monkeypatch.setattr(simulate_child, "CHILD_WARMUP_CHECK_S", 0.0)  # every call is "slow"
    calls = []
    simulate.child_measure(lambda: calls.append(1) or 1.0, name="v", settings=RunSettings())
    record = json.loads(result.read_text())
    kinds = [(step["kind"], step["calls"]) for step in record["plan"]]
    assert kinds == plan + [("repeat", 3)] * 2 + [("overhead", 0)]
    assert record["warmup"]["calls"] == uninstrumented
    assert len(calls) == uninstrumented + sum(n for _, n in plan) + 2 * 3
    if instructions is not None and instructions >= 150_000_000:
        assert states == ["on", "off"]  # switched on once, off after the region
    elif switch == "ok":
        assert states == ["on", "off", "on", "off"]
        assert uninstrumented + 3 == simulate.CHILD_MIN_WARMUP  # all but the last discard


def test_the_child_reads_its_newest_dump_from_the_header_only(tmp_path):
    import os

    recorded = (FIXTURES / "callgrind.out.21078.1").read_text()
    base = tmp_path / f"callgrind.out.{os.getpid()}"
    base.write_text("")  # callgrind's at-exit file, empty until the child exits
    (tmp_path / f"{base.name}.1").write_text(recorded.replace("101160", "7", 1))
    # the newest part: its summary in the header, then a body far past what is read
    body = "fn=(1)\n" + "0 1 2 3\n" * 20000
    (tmp_path / f"{base.name}.2").write_text(recorded + body)
    assert len(body) > simulate_child._DUMP_HEAD
    assert simulate_child._last_callback_instructions(str(tmp_path / "callgrind.out")) == 101160
    assert simulate_child._last_callback_instructions(str(tmp_path / "nothing")) is None
    assert simulate_child._last_callback_instructions(None) is None


def test_a_fast_call_warms_up_to_eight_calls_with_the_discarded_one(monkeypatch, tmp_path):
    result = _as_child(
        monkeypatch, tmp_path, "v", repeats=2, calls=1, trigger="vgdb", dumps="unused"
    )
    switched = simulate_child.Instrumentation("client request")
    monkeypatch.setattr(simulate_child, "_instrumentation", lambda options, state: switched)
    monkeypatch.setattr(simulate_child, "_last_callback_instructions", lambda d: 1000)
    simulate.child_measure(lambda: 1.0, name="v", settings=RunSettings())
    record = json.loads(result.read_text())
    assert record["warmup"]["calls"] == simulate.CHILD_MIN_WARMUP - 1 == 7
    assert [s["kind"] for s in record["plan"]] == ["warmup", "repeat", "repeat", "overhead"]


def test_instrumentation_that_does_not_come_back_on_is_reported(monkeypatch, tmp_path):
    result = _as_child(
        monkeypatch, tmp_path, "v", repeats=2, calls=1, trigger="vgdb", dumps="unused"
    )
    states = []

    def instrumentation(options, state):
        states.append(state)
        return simulate_child.Instrumentation("vgdb", len(states) != 3, "no answer")

    monkeypatch.setattr(simulate_child, "_instrumentation", instrumentation)
    monkeypatch.setattr(simulate_child, "_last_callback_instructions", lambda d: None)
    monkeypatch.setattr(simulate_child, "CHILD_WARMUP_CHECK_S", 0.0)
    simulate.child_measure(lambda: 1.0, name="v", settings=RunSettings())
    record = json.loads(result.read_text())
    assert record["instrumentation"] == {"mode": "vgdb", "ok": False, "detail": "no answer"}
    assert "repeat" not in [s["kind"] for s in record["plan"]]


def test_child_measure_outside_a_child_is_an_error(monkeypatch):
    monkeypatch.delenv(simulate.ENV_CHILD, raising=False)
    assert not simulate.in_child()
    with pytest.raises(simulate.SimulateError, match="only in a simulation child"):
        simulate.child_measure(lambda: None)


# -- building the Profile from dumps (no valgrind) ---------------------------------------
def _run(irs: list[int], *, plan_kinds=None, record=None) -> simulate.ChildRun:
    raw = callgrind.parse_callgrind(REGION_DUMP.read_text())
    kinds = plan_kinds or ["warmup"] + ["repeat"] * (len(irs) - 2) + ["overhead"]
    dumps = [CallgrindDump(events={**raw, "Ir": ir}, part=i + 1) for i, ir in enumerate(irs)]
    plan = [{"kind": k, "calls": 0 if k == "overhead" else 2, "wall_ns": 1_000_000} for k in kinds]
    base = {
        "calls": 2,
        "repeats": len(irs) - 2,
        "plan": plan,
        "warmup": {"calls": 3, "durations_ns": [900_000, 800_000, 700_000]},
        "instrumentation": {"mode": "vgdb", "ok": True},
        "outputs_ok": True,
        "other_threads_cpu_ns": {},
        "region_wall_ns": 5_000_000,
    }
    return simulate.ChildRun(
        record=simulate.ChildRecord.from_dict({**base, **(record or {})}),
        dumps=dumps,
        returncode=0,
        output="",
        wall_s=12.0,
        valgrind_options=["--tool=callgrind"],
    )


def _options(events=("instructions",), settings=None, **fields) -> simulate.SimulateOptions:
    return simulate.SimulateOptions(
        rootdir=Path("."), events=tuple(events), settings=settings or RunSettings(), **fields
    )


def test_profile_from_child_dumps():
    events = ["cycles", "instructions", "llc_miss", "task_clock"]
    profile = simulate.build_profile(
        "mlp",
        "t.py::t",
        _options(events, RunSettings(repeat=30)),
        _run([900, 1000, 1002, 40]),
        None,
        None,
        None,
    )
    assert profile.backend == "simulate" and len(profile.repeats) == 2
    assert [r.sample.counts["instructions"].raw for r in profile.repeats] == [1000, 1002]
    assert profile.per_repeat("instructions") == [500.0, 501.0]
    count = profile.repeats[0].sample.counts["instructions"]
    assert count.running_ns == count.enabled_ns and not count.multiplexed
    assert profile.overhead["instructions"] == 40.0
    assert [e.name for e in profile.events] == events
    assert profile.unavailable["cycles"] == NO_CYCLES
    assert "software events" in profile.unavailable["task_clock"]
    assert set(profile.repeats[0].sample.counts) == {"instructions", "llc_miss"}
    assert profile.settings["repeat"] == 2 and profile.settings["repeat_requested"] == 30
    assert "NOT native" in profile.settings["latency_source"]
    assert profile.settings["simulation"]["discarded_callbacks"] == 1
    again = Profile.from_dict(json.loads(profile.to_json()))  # a valid, loadable Profile
    assert again.repeats[1].sample == CounterSample.from_dict(profile.repeats[1].sample.to_dict())


def test_a_split_region_is_an_error_not_a_count():
    run = _run([900, 1000, 1002, 40])
    run.dumps.append(run.dumps[-1])
    with pytest.raises(simulate.SimulateError, match="5 dumps for 4 callback regions"):
        simulate.build_profile("x", "t.py::t", _options(), run, None, None, None)


def test_warnings_for_threads_spinning_and_spread():
    record = simulate.ChildRecord("")
    warnings = simulate_parent.session_warnings(
        record, {"intra_op_threads": 4, "allow_spinning": True}
    )
    assert len(warnings) == 2
    assert "intra_op_threads=4" in warnings[0] and "spinning" in warnings[1]
    assert (
        simulate_parent.session_warnings(record, {"intra_op_threads": 1, "allow_spinning": False})
        == []
    )
    profile = simulate.build_profile(
        "x",
        "t.py::t",
        _options(),
        _run([900, 1000, 1090, 1001, 40]),
        None,
        None,
        None,
    )
    assert profile.settings["simulation"]["instructions_spread"] == pytest.approx(0.09)
    assert "differ by 9.0%" in profile.settings["simulation"]["warnings"][0]


# -- real valgrind runs ---------------------------------------------------------------
CONFTEST = '''
import functools
import os
from pathlib import Path

import pytest

from pytest_inferperf.measure.simulate import backend as simulate
from pytest_inferperf.measure.runner import RunSettings

SETTINGS = RunSettings(warmup=3, repeat=3)


@pytest.fixture
def sim_profile(request):
    """pmu_profile with backend simulate, wired as the plugin wires it."""

    def run(fn, *args, name=None):
        call = functools.partial(fn, *args)
        if simulate.in_child():
            return simulate.child_measure(call, name=name, settings=SETTINGS)
        options = simulate.SimulateOptions(
            rootdir=request.config.rootpath, settings=SETTINGS, timeout=300)
        profile = simulate.profile_via_child(request.node.nodeid, name, options, native=call)
        Path(os.environ["SIM_OUT"]).write_text(profile.to_json())
        return profile

    return run
'''

WORKLOAD = '''
def work(iters):
    """Pure Python: iters rounds of the same work (ints, strings, a dict, lists)."""
    acc = 0
    table = {}
    for i in range(iters):
        acc += sum(range(64)) % 7
        acc += len(str(i) * 3)
        table[i % 17] = [i, i + 1]
        acc += len(table)
    return acc
'''

TEST_PY = """
import pytest

from workload import work


@pytest.mark.parametrize("iters", [100, 103, 200, 201])
def test_loop(sim_profile, iters):
    sim_profile(work, iters)
"""

# The same workload after more start-up work: extra imports and an allocation at module
# level, and more allocation right before the measured call.
TEST_PY_STARTUP = """
import decimal
import email.parser
import xml.dom.minidom

from workload import work

BALLAST = bytearray(8 << 20)
PARSERS = (email.parser.Parser(), xml.dom.minidom.parseString("<a><b/></a>"),
           decimal.Decimal("1.5"))


def test_loop_after_startup(sim_profile):
    extra = [list(range(100)) for _ in range(100)]
    sim_profile(work, 100)
    assert extra and BALLAST and PARSERS
"""

MODELS = '''
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from pytest_inferperf.onnxrt.sessions import SessionSettings, make_session

WIDTH, BATCH = 256, 64


def mlp(layers=2):
    """x -> (MatMul -> Relu) x layers, seeded weights, serialised."""
    rng = np.random.default_rng(0)
    nodes, weights, x = [], [], "x"
    for i in range(layers):
        w = rng.standard_normal((WIDTH, WIDTH)).astype(np.float32) / 16
        weights.append(numpy_helper.from_array(w, f"w{i}"))
        nodes += [helper.make_node("MatMul", [x, f"w{i}"], [f"m{i}"]),
                  helper.make_node("Relu", [f"m{i}"], [f"r{i}"])]
        x = f"r{i}"
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, WIDTH])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [BATCH, WIDTH])], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def session_and_feeds():
    """One intra-op thread, spinning off: what the simulate backend needs."""
    session = make_session(mlp(), SessionSettings(intra_op_threads=1, allow_spinning=False))
    feeds = {"x": np.random.default_rng(1).standard_normal((BATCH, WIDTH), dtype=np.float32)}
    return session, feeds
'''

TEST_ORT = """
from models import session_and_feeds


def test_mlp(sim_profile):
    session, feeds = session_and_feeds()
    profile = sim_profile(session.run, None, feeds)
    assert profile.outputs_ok
"""

TEST_ORT_STARTUP = """
import decimal
import email.parser
import xml.dom.minidom

from models import session_and_feeds

BALLAST = [bytearray(1024) for _ in range(4096)]
TABLE = {f"key{i}": decimal.Decimal(i) for i in range(20000)}
PARSERS = (email.parser.Parser(), xml.dom.minidom.parseString("<a><b/></a>"))


def test_mlp_after_startup(sim_profile):
    extra = [list(range(500)) for _ in range(300)]
    session, feeds = session_and_feeds()
    sim_profile(session.run, None, feeds)
    assert extra and BALLAST and TABLE and PARSERS
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("simproject")
    for name, text in (
        ("conftest.py", CONFTEST),
        ("workload.py", WORKLOAD),
        ("test_py.py", TEST_PY),
        ("test_py_startup.py", TEST_PY_STARTUP),
        ("models.py", MODELS),
        ("test_ort.py", TEST_ORT),
        ("test_ort_startup.py", TEST_ORT_STARTUP),
    ):
        (root / name).write_text(textwrap.dedent(text).lstrip())
    return root


def _direct(project: Path, nodeid: str, **options) -> Profile:
    """profile_via_child called from here: the child is the project's pytest under valgrind."""
    return simulate.profile_via_child(
        nodeid,
        None,
        simulate.SimulateOptions(
            rootdir=project, settings=RunSettings(warmup=3, repeat=3), timeout=300, **options
        ),
    )


def _through_pytest(project: Path, nodeid: str, out: Path) -> Profile:
    """The whole loop: pytest runs the test, whose fixture runs the valgrind child."""
    env = {**os.environ, "SIM_OUT": str(out)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", nodeid],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    return Profile.load(out)


@pytest.fixture(scope="module")
def runs(project, tmp_path_factory) -> dict[str, Profile]:
    """Every real simulation run of this module, started together (each is one process)."""
    out = tmp_path_factory.mktemp("simout")
    jobs = {
        "py100": lambda: _direct(project, "test_py.py::test_loop[100]"),
        "py100_again": lambda: _direct(project, "test_py.py::test_loop[100]"),
        "py103": lambda: _direct(project, "test_py.py::test_loop[103]"),
        "py100_startup": lambda: _direct(project, "test_py_startup.py::test_loop_after_startup"),
        "ort": lambda: _through_pytest(project, "test_ort.py::test_mlp", out / "ort1.json"),
        "ort_again": lambda: _through_pytest(project, "test_ort.py::test_mlp", out / "ort2.json"),
        "ort_startup": lambda: _direct(project, "test_ort_startup.py::test_mlp_after_startup"),
        # a baseline as --update-baselines records it: the region run twice
        "py200": lambda: _direct(project, "test_py.py::test_loop[200]", run_twice=True),
        "py200_instructions": lambda: _direct(
            project, "test_py.py::test_loop[200]", mode="instructions"
        ),
        "py201": lambda: _direct(project, "test_py.py::test_loop[201]"),
    }
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = {name: pool.submit(job) for name, job in jobs.items()}
        return {name: future.result() for name, future in futures.items()}


def instructions(profile: Profile) -> float:
    """Instructions per call: the median over the repeats."""
    return statistics.median(profile.per_repeat("instructions"))


def relative(a: float, b: float) -> float:
    return abs(a - b) / min(a, b)


@needs_valgrind
@pytest.mark.slow
def test_same_python_workload_twice_counts_the_same(runs):
    first, again = instructions(runs["py100"]), instructions(runs["py100_again"])
    assert relative(first, again) < 0.001, (first, again)
    # Repeats within one run: held to 0.1% until the noise floor, hard timeout and
    # progress work met in one tree; there they moved 0.13% (1,013,704-1,015,022 per
    # call, twice), each branch alone stayed within 0.1%. Measured again since: the
    # first repeat is 200-330 instructions above the next two (0.02-0.04%), the same
    # in every run (e.g. 1,014,019 / 1,013,828 / 1,013,757 three runs in a row); one
    # run of 8 had one repeat 5,600 instructions (0.55%) higher, which no repeat of
    # the same tree showed again: a rare extra inside the region whose cause is not
    # found. 0.2% here until it is.
    for profile in (runs["py100"], runs["py100_again"]):
        per_repeat = profile.per_repeat("instructions")
        assert relative(max(per_repeat), min(per_repeat)) < 0.002, per_repeat


@needs_valgrind
@pytest.mark.slow
def test_same_onnx_runtime_workload_twice_counts_the_same(runs):
    first, again = instructions(runs["ort"]), instructions(runs["ort_again"])
    assert relative(first, again) < 0.001, (first, again)


@needs_valgrind
@pytest.mark.slow
def test_three_percent_more_work_is_detected(runs):
    base, more = instructions(runs["py100"]), instructions(runs["py103"])
    noise = relative(base, instructions(runs["py100_again"]))
    assert 0.025 < more / base - 1 < 0.035, (base, more)
    assert more / base - 1 > 20 * noise


@needs_valgrind
@pytest.mark.slow
def test_half_a_percent_more_instructions_is_a_regression(runs):
    """The tolerance comes from the counts' own noise, not the fixed 2%: 0.5% stands out."""
    base, more = runs["py200"], runs["py201"]
    assert 0.004 < instructions(more) / instructions(base) - 1 < 0.006
    sim = base.settings["simulation"]
    assert abs(sim["run_to_run"]["instructions_per_call"]) < 0.001, sim["run_to_run"]
    assert sim["resolution"]["instructions_per_call"] < 0.005, sim["resolution"]
    change = compare_profiles(more, base).get("instructions_per_call")
    assert change.status == "regressed", change
    assert change.tolerance < 0.005
    # Across modes the fixed default holds (simulate_noise.noise_tolerances says why).
    same = compare_profiles(runs["py200_instructions"], base).get("instructions_per_call")
    assert same.status == "ok" and same.tolerance == 0.02, same


@needs_valgrind
@pytest.mark.slow
def test_instructions_only_mode_counts_the_same_instructions(runs):
    full, cheap = runs["py200"], runs["py200_instructions"]
    assert relative(instructions(full), instructions(cheap)) < 0.001
    sim = cheap.settings["simulation"]
    assert sim["mode"] == "instructions" and "--cache-sim=no" in sim["options"]
    assert full.settings["simulation"]["mode"] == "full"
    assert set(cheap.repeats[0].sample.counts) == {"instructions"}
    assert "instructions-only mode" in cheap.unavailable["l1d_access"]


@needs_valgrind
@pytest.mark.slow
def test_start_up_work_outside_the_region_is_not_counted(runs):
    """Imports and allocations before the region add nothing to its counts.

    The child allocates Python objects with the C allocator (``PYTHONMALLOC=malloc``):
    with pymalloc, start-up left its pools in another state and the allocation-heavy
    loop here took another path in each free, -0.2% to -0.37% of its count.
    ONNX Runtime's MLP (2.1 million instructions a call) still moves a little with
    what start-up left behind: on a Xeon VM it counted 0.06-0.11% more after the
    extra start-up (1,300-2,400 instructions, five runs, with 8 and with 11 calls
    before the repeats alike); on a Zen 5 VM 0.0004%. Held to 0.2%: millions of
    instructions of start-up work, counted, would be 100% and more.
    """
    base, after = instructions(runs["ort"]), instructions(runs["ort_startup"])
    assert relative(base, after) < 0.002, (base, after)
    base, after = instructions(runs["py100"]), instructions(runs["py100_startup"])
    assert relative(base, after) < 0.001, (base, after)
    assert runs["py100"].settings["simulation"]["env"]["PYTHONMALLOC"] == "malloc"


@needs_valgrind
@pytest.mark.slow
def test_simulated_profile_through_pytest(runs):
    profile = runs["ort"]
    assert profile.backend == "simulate" and len(profile.repeats) == 3
    assert profile.unavailable["cycles"] == NO_CYCLES
    sim = profile.settings["simulation"]
    assert sim["instrumentation"].startswith("off during the warm-up")
    if client_requests() is not None:  # x86-64: no vgdb process per switch
        assert "switched on by a valgrind client request" in sim["instrumentation"]
    assert "--toggle-collect=closure_fcn" in sim["options"]
    assert sim["warnings"] == [], sim["warnings"]
    assert sim["slowdown_vs_native"] > 1
    assert profile.settings["latency_source"].startswith("native run in the pytest process")
    assert profile.session["intra_op_threads"] == 1 and not profile.session["allow_spinning"]
    assert profile.memory.method != "none" and profile.outputs_ok
    for repeat in profile.repeats:
        counts = repeat.sample.counts
        assert counts["l1d_access"].value > counts["l1d_refill"].value > 0
        assert counts["branches"].value > counts["branch_misses"].value > 0
        assert counts["instructions"].raw == counts["l1i_access"].raw


@needs_valgrind
@pytest.mark.slow
def test_direct_profile_without_native_timing_says_so(runs):
    profile = runs["py100"]
    assert "NOT native" in profile.settings["latency_source"]
    assert profile.settings["simulation"]["caches"]["LL"]
    assert profile.machine_class and profile.overhead["instructions"] > 0


def test_the_childs_clock_does_not_count_time_it_stood_still():
    """A shared child is stopped while the parent times a test body: that pause must not
    look like a slow warm-up call (it would cut the warm-up short and change the counts)."""
    begin = simulate_child._clock_ns()
    time.sleep(0.05)  # not running, as under SIGSTOP
    assert simulate_child._clock_ns() - begin < 10_000_000
