"""What the plugin package hands to the engine, tested without a pytest run.

The plugin only wires pytest to the engine; the engine functions it calls (CPU
facts, report file names, the baseline write pass, the flamegraph pass, the hook
registry, the worker -> controller record) are unit-tested here.
"""

from __future__ import annotations

from pathlib import Path

from pytest_inferperf.pmu.cpu import SystemPaths, physical_cores
from pytest_inferperf.report.verdict import record_of


def _topology(root: Path, cpu: int, siblings: str) -> None:
    folder = root / "sys" / "devices" / "system" / "cpu" / f"cpu{cpu}" / "topology"
    folder.mkdir(parents=True)
    (folder / "core_cpus_list").write_text(siblings + "\n")


def test_physical_cores_counts_smt_siblings_once(tmp_path):
    for cpu, siblings in ((0, "0,2"), (1, "1,3"), (2, "0,2"), (3, "1,3")):
        _topology(tmp_path, cpu, siblings)
    paths = SystemPaths(tmp_path)
    assert physical_cores(paths, cpus=[0, 1, 2, 3]) == 2
    assert physical_cores(paths, cpus=[0, 2]) == 1
    assert physical_cores(paths, cpus=[0, 1]) == 2


def test_physical_cores_without_topology_counts_each_cpu(tmp_path):
    _topology(tmp_path, 0, "0-1")
    # cpu1's file is missing: it counts as a core of its own, never as cpu0's sibling
    assert physical_cores(SystemPaths(tmp_path), cpus=[0, 1]) == 2
    assert physical_cores(SystemPaths(tmp_path), cpus=[5, 6, 7]) == 3
    assert physical_cores(SystemPaths(tmp_path), cpus=[]) == 1


def test_physical_cores_of_this_machine_is_at_least_one():
    assert 1 <= physical_cores() <= len(__import__("os").sched_getaffinity(0))


def test_record_file_names_are_safe_and_distinct():
    from pytest_inferperf.report.files import RECORD_STEM_CHARS, record_file_name

    assert record_file_name("tests/test_a.py::test_x") == (
        "tests_test_a.py__test_x-" + _sha8("tests/test_a.py::test_x") + ".json"
    )
    long_a, long_b = "t::" + "a" * 300, "t::" + "a" * 299 + "b"
    assert record_file_name(long_a) != record_file_name(long_b)
    assert len(record_file_name(long_a)) == RECORD_STEM_CHARS + len("-12345678.json")
    assert "/" not in record_file_name("../../etc/passwd::x")


def test_write_records_writes_one_json_per_key_atomically(tmp_path):
    import json

    from pytest_inferperf.report.files import record_file_name, write_records

    records = [{"key": "t.py::a", "n": 1}, {"key": "t.py::b", "n": 2}]
    paths = write_records(tmp_path / "out", records)
    assert [p.name for p in paths] == [record_file_name("t.py::a"), record_file_name("t.py::b")]
    assert [json.loads(p.read_text()) for p in paths] == records
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(p.name for p in paths)


def test_report_files_loads_no_engine():
    import subprocess
    import sys

    code = (
        "import sys, pytest_inferperf.report.files as f, pathlib, tempfile;"
        "f.write_records(pathlib.Path(tempfile.mkdtemp()), [{'key': 'k'}]);"
        "print(sorted(m for m in ('numpy', 'onnxruntime') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _sha8(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()[:8]


# -- the one flamegraph pass of the plugin and the CLI -----------------------------------
def _profile(**changes):
    from pytest_inferperf.core.profile import LatencyStats, MemoryStats, Profile, Repeat, Steadiness
    from pytest_inferperf.pmu.base import Count, CounterSample

    sample = CounterSample(counts={"task_clock": Count(900_000.0, 900_000)})
    profile = Profile(
        name="t",
        machine_class="x86_64-test",
        backend="none",
        machine={"cpu": {"core_slug": "test"}},
        events=(),
        repeats=(Repeat(10, 1_000_000, sample),),
        latency=LatencyStats.from_durations_ns([100_000 + 1000 * i for i in range(30)]),
        memory=MemoryStats(64 << 20, "clear_refs"),
        steady=Steadiness(True, 12, 0.01, 0.05, 5),
        settings={},
        created="2024-01-01T00:00:00Z",
    )
    return profile.with_(**changes) if changes else profile


def _python_work() -> int:
    total = 0
    for i in range(20_000):
        total += i * i
    return total


OPS = (
    {"node": "/conv1", "op_type": "Conv", "calls": 5, "total_us": 900.0, "mean_us": 180.0},
    {"node": "/relu", "op_type": "Relu", "calls": 5, "total_us": 100.0, "mean_us": 20.0},
)


def test_capture_for_keeps_relative_views_stacks_and_says_what_is_missing(tmp_path):
    from pytest_inferperf.measure.flame import capture_for
    from pytest_inferperf.measure.flame.record import NOT_INSTALLED

    from_onnx = _profile(operators=OPS)
    baseline = _profile(operators=OPS)  # operators but no stored stacks
    got = capture_for(
        _python_work,
        name="tests/t.py::test_x",
        out_dir=tmp_path / "report" / "flamegraphs",
        relative_to=tmp_path / "report",
        profile=from_onnx,
        model_name="tiny",
        baseline=baseline,
        seconds=0.2,
        perf=str(tmp_path / "missing-perf"),
        stacks_bytes=4096,
    )
    assert set(got.artifacts) == {"operators.svg", "operators.diff.svg", "python.svg"}
    for rel in got.artifacts.values():
        assert rel.startswith("flamegraphs/") and (tmp_path / "report" / rel).stat().st_size > 0
    assert got.notes["native"] == NOT_INSTALLED
    assert got.notes["diff"] == "no stacks stored with the baseline (record the baseline again)"
    assert got.stacks is not None and got.stacks["view"] == "python"
    assert any(k.endswith(":_python_work") for k in got.stacks["folded"])
    assert len(str(got.stacks["folded"])) < 8192  # capped near stacks_bytes


def test_capture_for_diffs_against_the_baselines_stacks_and_finds_no_session(tmp_path):
    from pytest_inferperf.measure.flame import capture_for

    first = capture_for(
        _python_work, name="x", out_dir=tmp_path, relative_to=tmp_path, seconds=0.2, native=False
    )
    assert first.stacks is not None and "operators" not in first.notes
    baseline = _profile(stacks=first.stacks)
    again = capture_for(
        _python_work,
        name="x",
        out_dir=tmp_path / "second",
        relative_to=tmp_path,
        baseline=baseline,
        find_operators=True,
        seconds=0.2,
        native=False,
    )
    assert again.artifacts["diff.svg"] == "second/x.diff.svg"
    assert "diff" not in again.notes
    assert again.notes["operators"].startswith("not available: no ONNX Runtime session ran")
    assert again.notes["native"] == "not requested"


# -- the typed worker -> controller record ---------------------------------------------
def _record(key="t.py::test_a", **changes):
    from pytest_inferperf.report.records import ProfileRecord

    values = {
        "key": key,
        "status": "ok",
        "failed": False,
        "nothing_checked": False,
        "metrics": {"cpu_ms_per_call": 1.5},
        "baseline_note": "no baseline",
        "profile": _profile(name=key).to_dict(),
        "outcome": "passed",
        "nodeid": key.split("@")[0],
    }
    return ProfileRecord(**{**values, **changes})


def test_record_round_trips_through_json_and_keeps_unknown_keys():
    import json

    from pytest_inferperf.report.records import ProfileRecord

    record = _record(busy=["other processes kept 1.2 of 2 CPUs busy"], failure=None)
    data = json.loads(json.dumps(record.to_json(), allow_nan=False))
    assert ProfileRecord.from_json(data) == record
    newer = ProfileRecord.from_json({**data, "assessment": {"from": "a newer worker"}})
    assert newer.extra == {"assessment": {"from": "a newer worker"}}
    assert newer.to_json()["assessment"] == {"from": "a newer worker"}
    assert newer.measured().name == "t.py::test_a"


def test_worker_side_record_has_no_test_fields_until_the_controller_adds_them():
    record = _record(nodeid="", outcome="")
    assert "nodeid" not in record.to_json() and "outcome" not in record.to_json()
    on_controller = record.of_test("t.py::test_a", "failed")
    assert (on_controller.nodeid, on_controller.outcome) == ("t.py::test_a", "failed")
    assert on_controller.to_json()["outcome"] == "failed"


def test_a_malformed_record_is_refused_with_its_reason():
    import pytest

    from pytest_inferperf.report.records import ProfileRecord, RecordFormatError

    good = _record().to_json()
    with pytest.raises(RecordFormatError, match="lacks metrics"):
        ProfileRecord.from_json({k: v for k, v in good.items() if k != "metrics"})
    with pytest.raises(RecordFormatError, match="failed is str, expected bool"):
        ProfileRecord.from_json({**good, "failed": "no"})
    with pytest.raises(RecordFormatError, match="is a dict, got list"):
        ProfileRecord.from_json([good])


def test_ran_clean_is_what_may_become_a_baseline():
    assert _record().ran_clean
    assert not _record(failed=True).ran_clean
    assert not _record(outcome="failed").ran_clean
    assert not _record(outcome="skipped").ran_clean
    assert _record(outcome="skipped", nothing_checked=True).ran_clean


def test_of_verdict_carries_the_verdicts_summary():
    from pytest_inferperf.diagnose.assessment import assess as judge
    from pytest_inferperf.judge.budgets import PerfSpec
    from pytest_inferperf.report.records import ProfileRecord

    verdict = judge("t.py::test_a", _profile(), PerfSpec(), baseline=None, baseline_note="none")
    record = ProfileRecord.of_verdict(verdict, failure=None)
    assert record.key == "t.py::test_a" and record.metrics == verdict.metrics
    assert record.extra == {}  # every key of the verdict's summary is a field
    assert record.to_json() == {**record_of(verdict), "failure": None}


# -- the baseline write pass -------------------------------------------------------------
def test_write_pass_writes_clean_records_and_refuses_the_rest(tmp_path):
    from pytest_inferperf.judge.baseline_store import baseline_path, load_baseline, write_pass

    records = [
        _record("t.py::test_b"),
        _record("t.py::test_a"),
        _record("t.py::test_failed", failed=True),
        _record("t.py::test_partial", profile=_profile(partial=True).to_dict()),
    ]
    done = list(write_pass(records, tmp_path))
    assert [(d.record.key, d.status) for d in done] == [
        ("t.py::test_a", "written"),
        ("t.py::test_b", "written"),
        ("t.py::test_partial", "partial"),
    ]
    assert done[2].detail.startswith("partial (1/")
    path = baseline_path(tmp_path, "x86_64-test", "none", "t.py::test_a")
    assert done[0].path == path and done[0].old is None
    assert load_baseline(path).name == "t.py::test_a"
    assert not baseline_path(tmp_path, "x86_64-test", "none", "t.py::test_failed").exists()
    again = list(write_pass(records[:1], tmp_path))
    assert again[0].status == "written" and again[0].old.name == "t.py::test_b"


def test_write_pass_refuses_keys_that_share_a_file(tmp_path, monkeypatch):
    from pytest_inferperf.judge import baseline_store as baseline

    real = baseline.baseline_path
    monkeypatch.setattr(baseline, "baseline_path", lambda d, m, b, key: real(d, m, b, key.lower()))
    done = list(baseline.write_pass([_record("t.py::A"), _record("t.py::a")], tmp_path))
    assert [(d.record.key, d.status, d.detail) for d in done] == [
        ("t.py::A", "shared", "t.py::a"),
        ("t.py::a", "shared", "t.py::A"),
    ]
    assert not any(tmp_path.rglob("*.json"))


def test_write_pass_reports_a_file_it_cannot_write(tmp_path):
    from pytest_inferperf.judge.baseline_store import write_pass

    (tmp_path / "x86_64-test+none").write_text("a file where the folder should be")
    (done,) = write_pass([_record()], tmp_path)
    assert done.status == "error" and "cannot" in done.detail


# -- one hook registry for the plugin and inferperf validate -----------------------------
HOUSE_PLUGIN = """
def pytest_inferperf_metrics(counts, context):
    if "task_clock" in counts and context.calls:
        return {"house_cpu_us_per_call": counts["task_clock"] / 1000 / context.calls}
    return {}

def not_a_hook(counts, context):
    raise AssertionError("never called")
"""


def test_the_inferperf_manager_takes_what_pytest_takes():
    import pytest

    from pytest_inferperf.core.metrics import MetricContext
    from pytest_inferperf.diagnose import hooks

    class Plain:  # named like a conftest.py's hook, unmarked
        def pytest_inferperf_metrics(self, counts, context):
            return {"plain": 1.0}

    class PytestMarked:
        @pytest.hookimpl(tryfirst=True)
        def pytest_inferperf_metrics(self, counts, context):
            return {"pytest_marked": 2.0}

    class OwnMarked:
        @hooks.hookimpl
        def pytest_inferperf_metrics(self, counts, context):
            return {"own_marked": 3.0}

    pm = hooks.plugin_manager([Plain(), PytestMarked(), OwnMarked()])
    got = hooks.extra_metrics(pm, {}, MetricContext())
    assert got == {"plain": 1.0, "pytest_marked": 2.0, "own_marked": 3.0}
    assert list(got) == ["pytest_marked", "own_marked", "plain"]  # tryfirst= kept, then LIFO
    specs = {name: getattr(pm.hook, name).spec for name in hooks.HOOKS}
    assert all(spec is not None and spec.function.__doc__ for spec in specs.values())


def test_pytest_reads_the_same_specs(pytester):
    from pytest_inferperf.diagnose import hooks

    pm = pytester.parseconfig().pluginmanager
    for name in hooks.HOOKS:
        assert getattr(pm.hook, name).spec.function is getattr(hooks, name)


def test_the_registry_loads_a_named_module_once_and_says_when_it_cannot(tmp_path, monkeypatch):
    import pytest

    from pytest_inferperf.core.metrics import MetricContext
    from pytest_inferperf.diagnose import hooks

    (tmp_path / "house_hooks.py").write_text(HOUSE_PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    pm = hooks.plugin_manager()
    env = {hooks.PLUGINS_ENV: " house_hooks , "}
    assert hooks.load_plugins(pm, env=env) == ["inferperf:house_hooks"]
    assert hooks.load_plugins(pm, env=env) == []  # once, whoever asks again
    context = MetricContext(calls=10)
    assert hooks.extra_metrics(pm, {"task_clock": 50_000.0}, context) == {
        "house_cpu_us_per_call": 5.0
    }
    with pytest.raises(hooks.PluginLoadError) as info:
        hooks.load_plugins(hooks.plugin_manager(), env={hooks.PLUGINS_ENV: "no_such_house"})
    assert str(info.value).startswith(
        "cannot load the inferperf plugin from module 'no_such_house' named in "
        "INFERPERF_PLUGINS: ModuleNotFoundError: No module named 'no_such_house'. Install"
    )


def test_validate_sees_the_registrys_hooks(tmp_path, monkeypatch):
    from pytest_inferperf.cli.validate import validate_target

    (tmp_path / "house_hooks.py").write_text(HOUSE_PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("INFERPERF_PLUGINS", "house_hooks")
    profile = _profile()
    (tmp_path / "report.json").write_text(profile.to_json())
    (tmp_path / "baseline.json").write_text(profile.to_json())
    result = validate_target(str(tmp_path / "report.json"), tmp_path / "baseline.json")
    calls = sum(r.calls for r in profile.repeats)
    assert result.verdict.metrics["house_cpu_us_per_call"] == 900.0 / calls
    monkeypatch.delenv("INFERPERF_PLUGINS")
    plain = validate_target(str(tmp_path / "report.json"), tmp_path / "baseline.json")
    assert "house_cpu_us_per_call" not in plain.verdict.metrics
