"""The Measurer seam: one ``measure()`` call, whichever way of measuring runs.

Unit tests of the choice (``measurer_for``, what ``auto`` stands for) and of each
measurer, without valgrind (the simulate parent is replaced where a child would
start), and in-process pytest runs for what the fixture and the session object
do with them: the confirmation re-measure of a simulated timing regression.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil

# numpy and onnx cannot be imported twice in one process: the in-process pytest runs
# below unload what they imported, so these are loaded here first.
import numpy  # noqa: F401
import pytest

import pytest_inferperf.onnxrt.sessions  # noqa: F401
from pytest_inferperf.judge.budgets import parse_marker
from pytest_inferperf.measure import backends, operator_pass
from pytest_inferperf.measure.measurer import (
    ChildMeasurer,
    MeasureOptions,
    NativeMeasurer,
    SimulateMeasurer,
    SimulateUnavailable,
    SmokeMeasurer,
    backend_for,
    measurer_for,
)
from pytest_inferperf.measure.runner import Runner, RunSettings
from pytest_inferperf.measure.simulate import (
    child as simulate_child,
)
from pytest_inferperf.measure.simulate import (
    parent as simulate_parent,
)
from pytest_inferperf.measure.simulate import (
    valgrind as simulate_valgrind,
)
from pytest_inferperf.pmu import perf_event

pytest_plugins = ["pytester"]

SETTINGS = RunSettings(warmup=1, repeat=3, min_time=0.0)


def _options(**fields) -> MeasureOptions:
    return MeasureOptions(**{"nodeid": "t.py::test_x", "label": "test_x", **fields})


class Phases:
    """A progress line that remembers what it was told."""

    def __init__(self) -> None:
        self.said: list[str] = []

    def phase(self, text: str) -> None:
        self.said.append(text)

    def tick(self) -> None:
        pass


# -- the choice -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("choice", "kind"),
    [("perf", "native"), ("none", "native"), ("simulate", "simulate")],
)
def test_measurer_for_each_backend(choice, kind):
    measurer = measurer_for(choice, _options())
    assert measurer.kind == kind
    if kind == "native":
        assert measurer.backend == choice


def test_without_inferperf_every_backend_is_one_smoke_call():
    for choice in ("auto", "perf", "simulate", "none"):
        assert isinstance(measurer_for(choice, _options(enabled=False)), SmokeMeasurer)


def test_auto_is_none_without_perf_event_open(monkeypatch):
    def missing():
        raise OSError("no perf_event_open on this architecture")

    monkeypatch.setattr(perf_event, "syscall_number", missing)
    assert backend_for("auto") == "none"
    assert backend_for("auto", simulate_without_pmu=True) == "none"
    assert backend_for("perf") == "perf"  # an explicit choice is itself


def test_auto_is_simulate_only_where_asked_and_no_hardware_counter_opens(monkeypatch):
    monkeypatch.setattr(perf_event, "syscall_number", lambda: 298)
    monkeypatch.setattr(backends, "has_hardware_counters", lambda: False)
    assert backend_for("auto") == "perf"
    assert backend_for("auto", simulate_without_pmu=True) == "simulate"
    assert measurer_for("auto", _options(simulate_without_pmu=True)).kind == "simulate"
    monkeypatch.setattr(backends, "has_hardware_counters", lambda: True)
    assert backend_for("auto", simulate_without_pmu=True) == "perf"


def test_this_machine_has_no_hardware_counters():
    """The development VM has no PMU: the probe says so (and is cached)."""
    backends.has_hardware_counters.cache_clear()
    assert backends.has_hardware_counters() is False
    assert backends.has_hardware_counters.cache_info().currsize == 1


# -- each measurer -------------------------------------------------------------------
def test_smoke_runs_the_workload_once_uncounted():
    calls = []
    profile = SmokeMeasurer().measure(lambda: calls.append(1) or 7, name=None, settings=SETTINGS)
    assert calls == [1] and profile.backend == "smoke" and profile.settings["smoke"]


def test_native_measures_with_its_backend_and_says_which_repeat_runs():
    phases = Phases()
    calls = []
    measurer = NativeMeasurer("none", _options())
    profile = measurer.measure(
        lambda: calls.append(1), name=None, settings=SETTINGS, progress=phases
    )
    assert profile.backend == "none" and profile.name == "test_x"
    assert len(profile.repeats) == 3
    assert phases.said[0] == "warm-up"
    assert [p for p in phases.said if p.startswith("repeat")] == [
        "repeat 1/3",
        "repeat 2/3",
        "repeat 3/3",
    ]
    named = measurer.measure(lambda: None, name="fast", settings=SETTINGS)
    assert named.name == "fast"


def test_native_pins_an_xdist_worker_to_its_own_cpu_unless_the_marker_pins():
    cpus = sorted(os.sched_getaffinity(0))
    worker = NativeMeasurer("none", _options(worker_index=1))
    assert worker.settings_for(SETTINGS).pin == (cpus[1 % len(cpus)],)
    pinned = NativeMeasurer("none", _options(worker_index=1, spec=parse_marker((), {"pin": 0})))
    assert pinned.settings_for(SETTINGS) is SETTINGS
    assert NativeMeasurer("none", _options()).settings_for(SETTINGS) is SETTINGS


def test_simulate_unavailable_carries_the_reason(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    with pytest.raises(SimulateUnavailable) as info:
        SimulateMeasurer(_options()).measure(lambda: None, name=None, settings=SETTINGS)
    assert info.value.reason == "not available: valgrind is not installed: apt install valgrind"


@pytest.fixture
def fake_parent(monkeypatch):
    """The simulate parent replaced: what it was asked, and a native profile back."""
    asked = []

    def profile_via_child(nodeid, variant, options, *, native, name, shared, timed):
        asked.append({"nodeid": nodeid, "variant": variant, "options": options, "shared": shared})
        with timed():  # as the real one times its native run
            return Runner(options.settings, backend="none", events=()).run(native, name=name)

    monkeypatch.setattr(simulate_valgrind, "available", lambda: None)
    monkeypatch.setattr(simulate_parent, "profile_via_child", profile_via_child)
    return asked


def test_simulate_asks_the_parent_once_per_region_and_the_shared_child_only_once(fake_parent):
    shared = object()
    spec = parse_marker((), {"l1_miss_max": 0.1, "timeout": 30})
    options = _options(spec=spec, update=True, rootdir=os.getcwd(), shared_child=lambda: shared)
    measurer = SimulateMeasurer(options)
    phases = Phases()
    first = measurer.measure(lambda: None, name="int8", settings=SETTINGS, progress=phases)
    measurer.measure(lambda: None, name="int8", settings=SETTINGS)  # a re-measure
    other = measurer.measure(lambda: None, name=None, settings=SETTINGS)
    assert first.name == "int8" and other.name == "test_x"
    assert [a["shared"] for a in fake_parent] == [shared, None, shared]
    assert [a["variant"] for a in fake_parent] == ["int8", "int8", None]
    sim = fake_parent[0]["options"]
    assert sim.mode == "full" and sim.run_twice and sim.timeout == 30.0  # l1_miss needs caches
    assert sim.settings is SETTINGS and str(sim.rootdir) == os.getcwd()
    assert phases.said[0] == "simulating: native run, then the region under valgrind"
    cheap = SimulateMeasurer(_options(spec=parse_marker((), {"instructions_per_call_max": 1e9})))
    cheap.measure(lambda: None, name=None, settings=SETTINGS)
    assert fake_parent[-1]["options"].mode == "instructions"
    assert fake_parent[-1]["options"].timeout == simulate_parent.DEFAULT_TIMEOUT


def test_simulate_stops_the_shared_children_only_for_the_native_run_and_operator_pass(
    fake_parent, monkeypatch
):
    """What the measurer times runs inside ``timed`` (the plugin's stops the shared
    children there): the native run, and the operator pass gets it for its profiled
    runs; the wait for the child and the model identity are not timed."""
    log: list[str] = []

    @contextlib.contextmanager
    def timed():
        log.append("stop")
        yield
        log.append("go")

    monkeypatch.setattr(  # onnxrt.sessions.operator_times runs its profiled runs inside ``timed``
        operator_pass,
        "with_operator_times",
        lambda p, c, t: log.append("operators" if t is timed else "untimed operators") or p,
    )
    monkeypatch.setattr(operator_pass, "with_model", lambda p, c: log.append("model") or p)
    measurer = SimulateMeasurer(_options(timed=timed))
    measurer.measure(lambda: log.append("call"), name=None, settings=SETTINGS)
    steps = [s for i, s in enumerate(log) if s != "call" or log[i - 1] != "call"]
    assert steps == ["stop", "call", "go", "operators", "model"]
    assert log.count("call") >= SETTINGS.warmup + SETTINGS.repeat


def test_child_measurer_measures_the_requested_region(monkeypatch, tmp_path):
    result = tmp_path / "child.json"
    monkeypatch.setenv("INFERPERF_SIMULATE_CHILD", str(result))
    monkeypatch.setenv("INFERPERF_SIMULATE_VARIANT", "")
    monkeypatch.setenv("INFERPERF_SIMULATE_OPTIONS", json.dumps({"trigger": "start"}))
    monkeypatch.setattr(simulate_child, "_measured_variants", set())
    profile = ChildMeasurer("t.py::test_x").measure(lambda: 1.5, name=None, settings=SETTINGS)
    assert profile.backend == "simulate-child" and profile.settings["measured"]
    record = json.loads(result.read_text())
    assert [p["kind"] for p in record["plan"]].count("repeat") == 3


# -- through pytest -------------------------------------------------------------------
# Waiting, not computing: a 10x longer wait is a latency regression however busy the
# machine is (its CPU load lengthens both sides, and the baseline's wait is the short one).
SLOW_TEST = """
import os, time, pytest

def waits():
    time.sleep(0.02 if os.environ.get("SLOW") else 0.002)

@pytest.mark.perf(warmup=1, repeat=10)
def test_wait(pmu_profile):
    pmu_profile(waits)
"""


def test_a_simulated_timing_regression_is_measured_again_before_failing(
    pytester, monkeypatch, fake_parent
):
    """The confirmation re-measure is the same measure() call for every backend."""
    pytester.makepyfile(test_a=SLOW_TEST)
    args = ("-p", "no:cacheprovider", "-p", "no:randomly", "--inferperf")
    args += ("--inferperf-flamegraphs", "none")
    args += ("--inferperf-backend", "simulate")
    pytester.runpytest(*args, "--update-baselines").assert_outcomes(passed=1)
    assert len(fake_parent) == 1
    monkeypatch.setenv("SLOW", "1")
    result = pytester.runpytest(*args)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*confirmed: measured again after a 0.5 s pause: latency_* +*% (first +*%)*"]
    )
    assert len(fake_parent) == 3  # the baseline, the run, and its confirmation
    assert [a["variant"] for a in fake_parent[1:]] == [None, None]


def test_the_fixture_skips_with_the_reason_when_simulate_cannot_run(pytester, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    pytester.makepyfile(test_a=SLOW_TEST)
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "-rs", "--inferperf", "--inferperf-backend", "simulate"
    )
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*inferperf: the simulate backend is not available: valgrind is not installed: "
            "apt install valgrind*"
        ]
    )


def test_both_measurer_providers_answer_what_measurer_of_asks():
    """measurer_of asks whichever provider this process registered for the same things."""
    from pytest_inferperf.plugin.measuring import EngineMeasurers, SimulationChild

    child = SimulationChild()
    assert child.judges is False and child.shared_child(None) is None
    assert EngineMeasurers.judges is True
    for provider in (EngineMeasurers, SimulationChild):
        assert callable(provider.measurer) and callable(provider.shared_child)
