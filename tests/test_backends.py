"""The one list of backends (``measure.backends``): every front-end reads its rows.

A row added here (the registry monkeypatched) is a choice of the plugin's
``--inferperf-backend`` and of the command line's ``--backend``, is listed by
``inferperf doctor``, and measures through ``measure()`` for both front-ends; a row
that cannot run here says "not available: <reason>".
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass

import pytest

from pytest_inferperf.cli import main as cli
from pytest_inferperf.core.errors import UsageError
from pytest_inferperf.measure import backends
from pytest_inferperf.measure.measurer import MeasureOptions, NativeMeasurer, measurer_for
from pytest_inferperf.measure.runner import RunSettings
from pytest_inferperf.measure.target import Options, analyse_target
from pytest_inferperf.plugin.options import Settings
from pytest_inferperf.pmu.doctor import run_doctor
from pytest_inferperf.pmu.null_backend import NullCounters

pytest_plugins = ["pytester"]


@dataclass
class FakeCounters(NullCounters):
    """A counter backend of a new backend: times and memory, named for its row."""

    name: str = "fake"


FAKE = backends.Backend(
    "fake",
    "a backend added by one row",
    lambda: None,
    "native",
    lambda events: FakeCounters(events=events),
)
MISSING = backends.Backend(
    "missing",
    "a backend this machine lacks",
    lambda: "not available: no such counter unit here",
    "native",
    lambda events: FakeCounters(events=events),
)


@pytest.fixture
def more_rows(monkeypatch):
    monkeypatch.setattr(backends, "BACKENDS", (*backends.BACKENDS, FAKE, MISSING))


def test_the_rows_are_the_four_documented_backends():
    assert backends.names() == ("auto", "perf", "simulate", "none")
    for row in backends.BACKENDS:
        reason = row.why_not()
        assert reason is None or reason.startswith("not available: ")
        assert f"{row.name} ({row.description})" in backends.described()
    assert backends.described().endswith(f"auto ({backends.row('auto').description})")
    with pytest.raises(backends.UnknownBackend, match="choose one of auto, perf, simulate"):
        backends.row("magic")


def test_auto_stands_for_a_row_that_measures():
    chosen = backends.stands_for("auto")
    assert chosen.measurer is not None and chosen.stands_for is None
    assert backends.stands_for("none") is backends.row("none")


def test_the_registry_loads_no_engine():
    """The plugin reads the names while loading with every pytest run."""
    code = (
        "import sys, pytest_inferperf.measure.backends as b; b.names(); b.described(); "
        "print(sorted(m for m in sys.modules if m.startswith(('pytest_inferperf.', 'numpy'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(
        [
            "pytest_inferperf.core",
            "pytest_inferperf.core.errors",  # the error base (no imports)
            "pytest_inferperf.measure",
            "pytest_inferperf.measure.backends",
        ]
    )


def test_a_new_row_is_a_choice_of_the_plugin(more_rows, pytester):
    config = pytester.parseconfig("--inferperf-backend", "fake")
    assert Settings.from_config(config).backend == "fake"
    help_text = pytester.runpytest("--help").stdout.str()
    assert "{auto,perf,simulate,none,fake,missing}" in help_text
    assert "a backend added by one row" in " ".join(help_text.split())


def test_a_new_row_is_a_choice_of_the_command_line(more_rows):
    args = cli.build_parser().parse_args(["analyse", "m.onnx", "--backend", "fake"])
    assert args.backend == "fake"
    args = cli.build_parser().parse_args(["validate", "m.onnx", "--baseline", "b.json"])
    assert args.backend is None  # validate repeats the baseline's


def test_doctor_lists_every_row_with_why_it_cannot_run(more_rows):
    listed = run_doctor(backends=backends.statuses()).to_dict()["backends"]
    assert [b["name"] for b in listed] == ["auto", "perf", "simulate", "none", "fake", "missing"]
    assert listed[4] == {
        "name": "fake",
        "description": "a backend added by one row",
        "available": True,
        "reason": None,
    }
    assert listed[5]["available"] is False
    assert listed[5]["reason"] == "not available: no such counter unit here"
    assert "backends" not in run_doctor().to_dict()  # a caller that lists none


def test_a_new_row_measures_through_measure(more_rows):
    measurer = measurer_for("fake", MeasureOptions(nodeid="t.py::test_x", label="test_x"))
    assert isinstance(measurer, NativeMeasurer)
    profile = measurer.measure(
        lambda: sum(range(100)), name=None, settings=RunSettings(warmup=1, repeat=3)
    )
    assert profile.backend == "fake" and len(profile.repeats) == 3
    assert profile.name == "test_x"


def test_analyse_measures_a_new_row_and_refuses_one_that_cannot_run(more_rows, tmp_path):
    target = tmp_path / "bench.py"
    target.write_text("def run():\n    return sum(range(1000))\n")
    options = Options(warmup=1, repeat=3, backend="fake", details=False)
    result = analyse_target(f"{target}:run", options, out_dir=tmp_path)
    assert result.profile.backend == "fake"
    assert len(result.profile.repeats) == 3
    with pytest.raises(UsageError) as refused:
        analyse_target(f"{target}:run", Options(backend="missing"), out_dir=tmp_path)
    assert refused.value.text({"backend": "--backend"}) == (
        "--backend missing: not available: no such counter unit here"
    )


# -- inferperf analyse --backend simulate -----------------------------------------------
def _model(tmp_path):
    import onnx

    from tests.onnx_graphs import matmul_chain

    path = tmp_path / "chain.onnx"
    onnx.save(matmul_chain(rows=16, k=32, layers=1), path)
    return path


def test_the_simulation_child_rebuilds_the_parents_workload(tmp_path):
    """The child's call (target.workload) feeds the same session the same inputs."""
    import numpy as np

    from pytest_inferperf.measure.target import workload
    from pytest_inferperf.onnxrt.sessions import default_dims, make_inputs, make_session

    path = _model(tmp_path)
    dims = default_dims(path)
    parent = make_session(path).run(None, make_inputs(path, dims))
    child = workload({"model": str(path), "dims": dims, "threads": 1})()
    assert all(np.array_equal(a, b) for a, b in zip(parent, child, strict=True))
    bench = tmp_path / "bench.py"
    bench.write_text("def run():\n    return 42\n")
    assert workload({"callable": f"{bench}:run"})() == 42


def test_analyse_says_why_simulate_cannot_run(monkeypatch, tmp_path):
    from pytest_inferperf.measure.simulate import valgrind

    why = "not available: valgrind is not installed: apt install valgrind"
    monkeypatch.setattr(valgrind, "available", lambda: why)
    bench = tmp_path / "bench.py"
    bench.write_text("def run():\n    return 42\n")
    with pytest.raises(UsageError) as refused:
        analyse_target(f"{bench}:run", Options(backend="simulate"), out_dir=tmp_path)
    assert refused.value.text({"backend": "--backend"}) == f"--backend simulate: {why}"
    status = {b["name"]: b for b in backends.statuses()}["simulate"]
    assert status == {**status, "available": False, "reason": why}


@pytest.mark.slow
@pytest.mark.skipif(
    backends.row("simulate").why_not() is not None, reason="valgrind cannot run here"
)
def test_analyse_simulates_a_model_through_measure(tmp_path, monkeypatch):
    """The region counted under valgrind in a child that rebuilt the model's session."""
    monkeypatch.chdir(tmp_path)
    path = _model(tmp_path)
    options = Options(warmup=1, repeat=2, backend="simulate")
    profile = analyse_target(str(path), options, out_dir=tmp_path / "out").profile
    assert profile.backend == "simulate"
    counted = {e.name for e in profile.events if e.available}
    assert {"instructions", "l1d_access", "branches"} <= counted
    assert all(r.sample.counts["instructions"].value > 0 for r in profile.repeats)
    warnings = profile.settings["simulation"].get("warnings", [])
    # the child rebuilt the same session and inputs: the same results, the same runs
    assert not [w for w in warnings if "different results" in w or "session" in w]
    assert "result_digests" not in profile.settings["simulation"]
    assert profile.operators and profile.settings["operator_pass"]["runs"] > 0
