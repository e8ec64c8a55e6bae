"""Fixtures the plugin's own tests share: the example models, built once, and Profiles.

Owns: the hypothesis profiles (``ci``, the default, and ``thorough``), ``pytester``
for in-process runs (see the fixture), the one loader of
``examples/build_models.py`` (``build_models``), the example models built once per test
session (``example_models``, ``copy_examples``), and ``profile_factory``, which makes a
valid Profile from given per-call counts for unit tests, and ``explain_text``, which runs
``inferperf explain`` on a perf stat text saved to a file. It also imports the heavy
libraries once, before any in-process ``pytester.runpytest``: pytester puts
``sys.modules`` back after each inner run, and numpy or ONNX Runtime imported for the
first time inside one would be dropped and imported again by the next.
Must not: measure anything, or hold state that one test can change for another (the
models are read-only inputs; a test that edits a model copies it first).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import settings

# ONNX Runtime's telemetry off before it is first imported, as the plugin does for its users
# (the plugin warns when it comes too late, and it would in every in-process run).
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

# Imported before any in-process pytester run (see above): protobuf (under onnx), numpy and
# ONNX Runtime abort or misbehave when imported a second time into one process.
import numpy  # noqa: F401
import onnx  # noqa: F401
import onnxruntime  # noqa: F401

import pytest_inferperf.measure.runner
import pytest_inferperf.onnxrt.sessions
import pytest_inferperf.plugin.session  # noqa: F401
from pytest_inferperf.core.profile import (
    LatencyStats,
    MemoryStats,
    Profile,
    Repeat,
    Steadiness,
)
from pytest_inferperf.pmu.base import Count, CounterSample, EventStatus

# hypothesis profiles for this project's machines: a shared 2-vCPU CI VM whose timings move
# 10-30%, so no per-example deadline; HYPOTHESIS_PROFILE=thorough for a longer search.
settings.register_profile("ci", deadline=None)
settings.register_profile("thorough", deadline=None, max_examples=2000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

REPO = Path(__file__).resolve().parent.parent
BUILD_SCRIPT = REPO / "examples" / "build_models.py"
EXAMPLES = REPO / "examples"


def load_build_models() -> ModuleType:
    """``examples/build_models.py`` as a module (it is a script, not part of the package)."""
    name = "inferperf_example_build_models"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BUILD_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while being defined
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester, without the one warning an in-process run adds to the plugin's output.

    Run as ``pytest`` with the package installed in editable mode, the package is imported
    through the editable finder, which pytest's assertion rewriting cannot see, so every
    in-process run would warn "Module already imported so cannot be rewritten:
    pytest_inferperf". A subprocess run imports it afresh and never warns.

    The inner runs write to a log, not a terminal: the plugin fits its text to pytest's
    width there (``$COLUMNS``, else 80), at most 120 columns. ``COLUMNS=120`` gives them
    the widest log width, so a test reads whole lines; tests of the wrapping itself
    (``test_terminal_width.py``) set their own.
    """
    monkeypatch.setenv("COLUMNS", "120")
    addopts = os.environ.get("PYTEST_ADDOPTS", "")
    monkeypatch.setenv(
        "PYTEST_ADDOPTS", f"{addopts} -W ignore::pytest.PytestAssertRewriteWarning".strip()
    )
    return pytester


@pytest.fixture
def explain_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Callable[..., Any]:
    """``inferperf explain`` on ``text`` saved to a file, with ``args``; it must exit 0.
    Returns what it printed, parsed where ``--json`` is among the args."""
    from pytest_inferperf.cli.main import main

    path = tmp_path / "perf_stat.txt"

    def run(text: str, *args: str) -> Any:
        path.write_text(text)
        assert main(["explain", str(path), *args]) == 0
        out = capsys.readouterr().out
        return json.loads(out) if "--json" in args else out

    return run


@pytest.fixture(scope="session")
def build_models() -> ModuleType:
    return load_build_models()


@pytest.fixture(scope="session")
def example_models_dir(build_models: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder holding the four example models, built once per test session.

    Built afresh each session (about 3 s), not kept between sessions: the builder and the
    quantizer it calls are part of what the suite checks.
    """
    folder = tmp_path_factory.mktemp("example_models")
    build_models.build_all(folder)
    return folder


@pytest.fixture(scope="session")
def example_models(example_models_dir: Path, build_models: ModuleType) -> dict[str, Path]:
    """Model name (``mobilenet_v2``, ``mobilenet_v2_int8``, ``minilm``, ``minilm_int8``) -> path."""
    return build_models.build_all(example_models_dir)


@pytest.fixture
def copy_examples(pytester: pytest.Pytester, example_models_dir: Path) -> Callable[..., None]:
    """``copy_examples("test_inference.py")``: the examples' conftest, builder, the named
    tests and the already built models into the pytester folder (nothing is rebuilt)."""

    def copy(*tests: str) -> None:
        for name in ("conftest.py", "build_models.py", *tests):
            shutil.copy(EXAMPLES / name, pytester.path / name)
        shutil.copytree(example_models_dir, pytester.path / "models", dirs_exist_ok=True)

    return copy


# --------------------------------------------------------------------------- Profiles


def make_profile(
    counts_per_call: Mapping[str, float] | Sequence[Mapping[str, float]] | None = None,
    *,
    repeats: int = 3,
    calls: int = 10,
    latency_ms: Sequence[float] = (1.0, 1.1, 1.2, 1.3, 2.0),
    rss_mb: float | None = 100.0,
    unavailable: Mapping[str, str] | None = None,
    name: str = "test_model",
    machine_class: str = "arm64-neoverse-n1",
    backend: str = "perf",
    core: str = "neoverse-n1",
    **fields: Any,
) -> Profile:
    """A valid Profile whose repeats ran ``calls`` calls with the given counts per call.

    ``counts_per_call`` is one mapping (every repeat the same) or one mapping per repeat;
    the default is 1e6 instructions and 2e6 cycles per call (IPC 0.5) with a task clock of
    0.8 ms per call. ``unavailable`` maps events that were not counted to the reason, as
    a backend reports them. Any other Profile field may be given as a keyword.
    """
    if counts_per_call is None:
        counts_per_call = {"instructions": 1e6, "cycles": 2e6, "task_clock": 8e5}
    per_repeat = (
        [counts_per_call] * repeats if isinstance(counts_per_call, Mapping) else counts_per_call
    )
    reps = []
    for i, counts in enumerate(per_repeat):
        totals = {event: value * calls for event, value in counts.items()}
        sample = CounterSample(
            counts={event: Count(float(v), int(v)) for event, v in totals.items()}
        )
        wall_ns = int(totals.get("task_clock", calls * 1e6)) + i
        reps.append(Repeat(calls, wall_ns, sample))
    events = tuple(EventStatus(e, True, "test") for e in per_repeat[0]) + tuple(
        EventStatus(e, False, reason=why) for e, why in (unavailable or {}).items()
    )
    rss = None if rss_mb is None else int(rss_mb * (1 << 20))
    return Profile(
        **{
            "name": name,
            "machine_class": machine_class,
            "backend": backend,
            "machine": {"cpu": {"core_slug": core}},
            "events": events,
            "repeats": tuple(reps),
            "latency": LatencyStats.from_durations_ns([int(ms * 1e6) for ms in latency_ms]),
            "memory": MemoryStats(rss, "clear_refs"),
            "steady": Steadiness(True, 10, 0.01, 0.05, 5),
            "created": "2026-01-01T00:00:00Z",
            **fields,
        }
    )


@pytest.fixture
def profile_factory() -> Callable[..., Profile]:
    """:func:`make_profile`: ``profile_factory({"instructions": 2e6, "cycles": 1e6})``."""
    return make_profile
