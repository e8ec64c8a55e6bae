"""Settings and inputs that changed against the baseline are named, and named first.

Unit tests of :mod:`pytest_inferperf.diagnose.settings_change` on Profiles built in memory, the
change explanation that names them before stages, op types and counters, and one real
pytest run: a baseline recorded with a session of 2 intra-op threads, run again with 1.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from onnx_graphs import matmul_chain  # noqa: F401  (imported before the in-process runs)
from test_change import REPEATS, explain, no_pmu_profile, spread

import pytest_inferperf.onnxrt.sessions  # noqa: F401  (numpy, onnxruntime: before in-process runs)
from pytest_inferperf.core.profile import Profile
from pytest_inferperf.diagnose.change import part_lines
from pytest_inferperf.diagnose.settings_change import (
    SettingChange,
    sessions_of,
    settings_changes,
    settings_text,
)

pytest_plugins = ["pytester"]

SESSION = {
    "onnxruntime": "1.19.2",
    "providers": ["CPUExecutionProvider"],
    "intra_op_threads": 4,
    "inter_op_threads": 1,
    "execution_mode": "sequential",
    "graph_optimization_level": "all",
    "enable_mem_arena": True,
    "allow_spinning": True,
}
MACHINE = {
    "cpu": {"core_slug": "intel-core-skylake", "cpu_count": 4},
    "python": "3.11.9",
    "onnxruntime": "1.19.2",
    "numpy": "1.26.4",
    "cpus_available": 4,
}


def inputs(*shapes: list[int], name: str = "images") -> list[dict[str, Any]]:
    return [{"name": name, "shape": list(s), "dtype": "float32"} for s in shapes]


def ran(
    base: Profile | None = None,
    *,
    session: dict[str, Any] | None = None,
    machine: dict[str, Any] | None = None,
    shape: list[int] | None = None,
    pin: list[int] | None = None,
    ms: float = 2.0,
) -> Profile:
    """A session.run workload's Profile: its session, machine, input shape and pin."""
    profile = base or no_pmu_profile(spread(ms, 0.05, 1))
    return profile.with_(
        session={**SESSION, **(session or {})},
        machine={**MACHINE, **(machine or {})},
        model={"sha256": "ab" * 32, "path": "m.onnx", "inputs": inputs(shape or [1, 3, 224, 224])},
        settings={**profile.settings, "pin": pin},
    )


# -- the comparison -----------------------------------------------------------------------


def test_every_kind_of_difference_is_named_in_words():
    baseline = ran()
    current = ran(
        session={
            "intra_op_threads": 1,
            "graph_optimization_level": "disable",
            "onnxruntime": "1.20.0",
        },
        machine={"onnxruntime": "1.20.0", "cpus_available": 2},
        shape=[1, 3, 224, 280],
        pin=[0],
    )
    changes = settings_changes(current, baseline)
    assert [c.text for c in changes] == [
        "intra-op threads 4 -> 1",
        "graph optimisation ORT_ENABLE_ALL -> ORT_DISABLE_ALL",
        "input 'images' 1x3x224x224 -> 1x3x224x280 (+25% elements)",
        "CPUs available 4 -> 2",
        "pin none -> CPU 0",
        "onnxruntime 1.19.2 -> 1.20.0",
    ]
    assert [c.kind for c in changes] == [
        "session",
        "session",
        "inputs",
        "cpus",
        "runner",
        "software",
    ]
    assert settings_text(changes) == (
        "the session's settings changed: intra-op threads 4 -> 1, graph optimisation "
        "ORT_ENABLE_ALL -> ORT_DISABLE_ALL; the inputs changed: input 'images' 1x3x224x224 "
        "-> 1x3x224x280 (+25% elements); the CPUs it could use changed: CPUs available "
        "4 -> 2; 2 more"
    )
    assert settings_changes(baseline, baseline) == ()


def test_spinning_providers_mode_arena_and_versions_in_their_own_words():
    baseline = ran(session={"intra_op_threads": 0})
    current = ran(
        session={
            "intra_op_threads": 0,
            "inter_op_threads": 2,
            "allow_spinning": False,
            "execution_mode": "parallel",
            "providers": ["XnnpackExecutionProvider", "CPUExecutionProvider"],
            "enable_mem_arena": False,
        },
        machine={"numpy": "2.0.0", "python": "3.12.1", "cpu": {"cpu_count": 8}},
    )
    assert [c.text for c in settings_changes(current, baseline)] == [
        "inter-op threads 1 -> 2",
        "spinning on -> off",
        "execution mode ORT_SEQUENTIAL -> ORT_PARALLEL",
        "execution providers CPUExecutionProvider -> XnnpackExecutionProvider, "
        "CPUExecutionProvider",
        "CPU memory arena on -> off",
        "CPUs online 4 -> 8",
        "numpy 1.26.4 -> 2.0.0",
        "Python 3.11.9 -> 3.12.1",
    ]
    threads = settings_changes(ran(session={"intra_op_threads": 2}), baseline)
    assert [c.text for c in threads] == ["intra-op threads 0 (ONNX Runtime's default) -> 2"]


def test_another_cpu_of_the_same_count_is_no_change():
    # xdist pins each worker to its own CPU: worker 0 recorded, worker 1 runs now
    assert settings_changes(ran(pin=[1]), ran(pin=[0])) == ()
    (change,) = settings_changes(ran(pin=[0, 1]), ran(pin=None))
    assert change.text == "pin none -> 2 CPUs (0, 1)"


def test_an_older_baseline_without_these_facts_has_nothing_to_compare():
    old = no_pmu_profile(spread(2.0, 0.05, 1))  # no session, model, versions or pin
    assert settings_changes(ran(session={"intra_op_threads": 1}), old) == ()
    assert settings_changes(old, ran()) == ()
    assert sessions_of(old) == []


def pipeline_profile(recogniser_shapes: list[list[int]], *, threads: int = 4) -> Profile:
    """An OCR pipeline's Profile: a detector once, a recogniser on each crop."""

    def entry(label: str, runs: list[list[dict[str, Any]]], options: dict[str, Any]):
        return {
            "label": label,
            "how": "found",
            "runs_per_call": len(runs),
            "seconds_per_call": 0.001,
            "options": {**SESSION, **options},
            "inputs": runs,
        }

    profile = no_pmu_profile(spread(2.0, 0.05, 1))
    sessions = [
        entry("detector", [inputs([1, 3, 640, 640])], {"intra_op_threads": threads}),
        entry("recogniser", [inputs(s, name="crop") for s in recogniser_shapes], {}),
    ]
    return profile.with_(
        machine=MACHINE,
        settings={**profile.settings, "operator_pass": {"session": "found", "sessions": sessions}},
    )


def test_the_sessions_of_a_pipeline_are_matched_by_their_labels():
    baseline = pipeline_profile([[1, 3, 32, 100], [1, 3, 32, 100], [1, 3, 32, 100]])
    current = pipeline_profile(
        [[1, 3, 32, 100], [1, 3, 32, 120], [1, 3, 32, 100], [1, 3, 32, 80]], threads=1
    )
    assert [c.text for c in settings_changes(current, baseline)] == [
        "intra-op threads 4 -> 1 (session detector)",
        "runs per call 3 -> 4 (session recogniser)",
        "input 'crop' 1x3x32x100 -> 1x3x32x100, 1x3x32x120, 1x3x32x100, 1x3x32x80 "
        "(+33% elements; session recogniser)",
    ]
    assert [s.label for s in sessions_of(current)] == ["detector", "recogniser"]
    assert sessions_of(current)[1].runs_per_call == 4


def test_a_session_that_appeared_is_named():
    baseline = pipeline_profile([[1, 3, 32, 100]])
    entries = baseline.settings["operator_pass"]["sessions"]
    current = baseline.with_(
        settings={
            **baseline.settings,
            "operator_pass": {"sessions": [*entries, {**entries[1], "label": "classifier"}]},
        }
    )
    (change,) = settings_changes(current, baseline)
    assert change.text == "sessions run detector, recogniser -> detector, recogniser, classifier"


def test_the_stored_facts_round_trip_through_a_baseline_file():
    baseline = pipeline_profile([[1, 3, 32, 100]]).with_(session=SESSION)
    current = pipeline_profile([[1, 3, 32, 128]], threads=2).with_(
        machine={**MACHINE, "cpus_available": 2}
    )
    loaded = [Profile.from_dict(json.loads(p.to_json())) for p in (current, baseline)]
    assert settings_changes(*loaded) == settings_changes(current, baseline)
    assert [c.text for c in settings_changes(*loaded)] == [
        "intra-op threads 4 -> 2 (session detector)",
        "input 'crop' 1x3x32x100 -> 1x3x32x128 (+28% elements; session recogniser)",
        "CPUs available 4 -> 2",
    ]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**6) | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "session": st.dictionaries(st.sampled_from([*SESSION, "x"]), JSON, max_size=8),
        "model": st.dictionaries(st.sampled_from(["inputs", "sha256"]), JSON),
        "machine": st.dictionaries(st.sampled_from([*MACHINE, "x"]), JSON),
        "pin": JSON,
        "operator_pass": st.dictionaries(
            st.just("sessions"),
            st.lists(
                st.dictionaries(
                    st.sampled_from(["label", "options", "inputs", "runs_per_call"]), JSON
                ),
                max_size=3,
            ),
        ),
    },
)


def with_fields(fields: dict[str, Any]) -> Profile:
    profile = no_pmu_profile([2.0] * REPEATS)
    settings = dict(profile.settings)
    for key in ("pin", "operator_pass"):
        if key in fields:
            settings[key] = fields[key]
    return profile.with_(
        session=fields.get("session"),
        model=fields.get("model"),
        machine=fields.get("machine", {}),
        settings=settings,
    )


@given(FIELDS, FIELDS)
def test_whatever_a_baseline_file_holds_the_comparison_reads_it_without_failing(a, b):
    current, baseline = with_fields(a), with_fields(b)
    changes = settings_changes(current, baseline)
    assert all(isinstance(c, SettingChange) and " -> " in c.text for c in changes)
    assert settings_changes(current, current) == ()
    back = settings_changes(baseline, current)  # the same differences, the other way round
    assert sorted((c.kind, c.name, c.session) for c in back) == sorted(
        (c.kind, c.name, c.session) for c in changes
    )
    assert sorted((c.baseline, c.current) for c in back) == sorted(
        (c.current, c.baseline) for c in changes
    )


# -- named first in the change explanation -------------------------------------------------


def test_a_setting_is_named_first_even_when_the_rest_is_unexplained():
    baseline = ran(session={"intra_op_threads": 2}, ms=2.0)
    slower = no_pmu_profile(spread(3.0, 0.05, 2))  # no stage, op type or counter moved
    current = ran(slower, session={"intra_op_threads": 1})
    change = explain(current, baseline)
    assert change.unexplained and change.slowdown is not None and change.slowdown.credible
    assert change.summary.startswith(
        "the session's settings changed: intra-op threads 2 -> 1. latency_mean_ms 2"
    )
    assert "unexplained by the counters available here" in change.summary
    assert change.settings_brief == "intra-op threads 2 -> 1"
    assert part_lines(change)[0] == (
        "settings and inputs (baseline -> now): intra-op threads 2 -> 1"
    )
    data = change.to_dict()
    assert data["settings"] == [
        {
            "kind": "session",
            "name": "intra-op threads",
            "baseline": "2",
            "current": "1",
            "note": "",
            "session": "",
            "text": "intra-op threads 2 -> 1",
        }
    ]
    assert data["settings_text"] == "the session's settings changed: intra-op threads 2 -> 1"


def test_a_passing_comparison_still_carries_the_settings_that_differ():
    baseline = ran(shape=[1, 3, 224, 224])
    current = ran(shape=[1, 3, 224, 280], machine={"numpy": "2.0.0"})
    change = explain(current, baseline)
    assert change.slowdown is not None and not change.slowdown.credible
    assert change.summary.startswith(
        "the inputs changed: input 'images' 1x3x224x224 -> 1x3x224x280 (+25% elements); "
        "the software changed: numpy 1.26.4 -> 2.0.0. "
    )
    assert [c["text"] for c in change.to_dict()["settings"]] == [
        "input 'images' 1x3x224x224 -> 1x3x224x280 (+25% elements)",
        "numpy 1.26.4 -> 2.0.0",
    ]
    same = explain(ran(), ran())
    assert same.settings == () and same.to_dict()["settings_text"] is None
    assert not same.summary.startswith("the ")


# -- a real pytest run ----------------------------------------------------------------------

TESTS = """
import os

import numpy as np
import onnx
import pytest
from onnx_graphs import matmul_chain

from pytest_inferperf.onnxrt.sessions import SessionSettings, make_session

FEEDS = {"x": np.ones((128, 256), np.float32)}


@pytest.fixture
def session(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(matmul_chain(1), path)
    threads = int(os.environ.get("THREADS", "2"))
    return make_session(path, SessionSettings(intra_op_threads=threads))


# A budget no run meets once LATENCY_MAX is set: the failure text is shown whether or not
# one thread instead of two is slower on this machine.
@pytest.mark.perf(
    warmup=2, repeat=10, latency_mean_ms_max=float(os.environ.get("LATENCY_MAX", "1e9"))
)
def test_model(pmu_profile, session):
    pmu_profile(session.run, None, FEEDS)
"""


def test_a_baseline_of_two_threads_run_with_one_names_the_threads_first(pytester, monkeypatch):
    monkeypatch.setenv("ORT_DISABLE_TELEMETRY", "1")
    pytester.makepyfile(test_suite=TESTS)
    args = ("-p", "no:cacheprovider", "--inferperf", "--inferperf-flamegraphs=none")
    pytester.runpytest(*args, "--update-baselines").assert_outcomes(passed=1)
    monkeypatch.setenv("THREADS", "1")
    monkeypatch.setenv("LATENCY_MAX", "1e-6")
    result = pytester.runpytest(*args, "--inferperf-report=report")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*change vs baseline: the session's settings changed: intra-op threads 2 -> 1. *",
            "*settings and inputs (baseline -> now): intra-op threads 2 -> 1",
        ]
    )
    (path,) = (pytester.path / "report").glob("test_suite.py__test_model-*.json")
    record = json.loads(path.read_text())
    change = record["change_explanation"]
    assert [c["text"] for c in change["settings"]] == ["intra-op threads 2 -> 1"]
    assert change["summary"].startswith("the session's settings changed: intra-op threads 2 -> 1")
    (entry,) = record["profile"]["settings"]["operator_pass"]["sessions"]
    assert entry["options"]["intra_op_threads"] == 1
    assert entry["inputs"] == [[{"name": "x", "shape": [128, 256], "dtype": "float32"}]]
