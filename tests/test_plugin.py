"""The pytest plugin, through real pytest runs (pytester)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from plugin_output import said, table_row
from profile_paths import baseline_files

pytest_plugins = ["pytester"]

# Generous tolerance: these tests check the mechanics, and timing on a shared VM
# moves 10-30% between runs. The injected-slowdown test uses the default tolerances.
FAST = "warmup=1, repeat=5, tolerance=0.5"

WORKLOADS = """
import hashlib, time

DATA = b"x" * (1 << 16)

def hashing(rounds=20):
    for _ in range(rounds):
        hashlib.sha256(DATA).digest()
"""


@pytest.fixture
def suite(pytester):
    pytester.makepyfile(workloads=WORKLOADS)
    return pytester


def run(pytester, *args, flamegraphs=False):
    """pytest in-process; no flamegraph pass (seconds per failed test) unless asked for."""
    if not flamegraphs and not any(a.startswith("--inferperf-flamegraphs") for a in args):
        args = (*args, "--inferperf-flamegraphs=none")
    return pytester.runpytest("-p", "no:cacheprovider", *args)


def test_marker_is_registered_under_strict_markers(suite):
    suite.makepyfile(
        test_a=f"""
        import pytest
        @pytest.mark.perf({FAST})
        def test_x(pmu_profile):
            pmu_profile(lambda: None)
    """
    )
    result = run(suite, "--strict-markers")
    result.assert_outcomes(passed=1)


def test_without_inferperf_the_workload_runs_once_and_budgets_are_ignored(suite):
    suite.makepyfile(
        test_a=f"""
        import pytest
        calls = []
        @pytest.mark.perf(latency_p50_ms_max=0.000001, {FAST})
        def test_x(pmu_profile):
            p = pmu_profile(calls.append, 1)
            assert calls == [1]
            assert p.backend == "smoke" and p.outputs_ok
    """
    )
    result = run(suite)
    result.assert_outcomes(passed=1)
    assert (
        "inferperf" not in result.stdout.str().split("short test summary")[0].split("collected")[1]
    )


def test_budget_pass_fail_and_message(suite):
    suite.makepyfile(
        test_a=f"""
        import pytest
        from workloads import hashing
        @pytest.mark.perf(latency_p50_ms_max=1000, cpu_ms_per_call_max=1000, {FAST})
        def test_generous(pmu_profile):
            pmu_profile(hashing)
        @pytest.mark.perf(latency_p50_ms_max=0.0001, {FAST})
        def test_impossible(pmu_profile):
            pmu_profile(hashing)
    """
    )
    result = run(suite, "--inferperf")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*inferperf: test_a.py::test_impossible on * (backend perf)",
            "*budget   latency_p50_ms = *, budget <= 0.0001 (+*% from the limit): FAILED",
        ]
    )
    result.stdout.fnmatch_lines(
        ["*test_a.py::test_generous*passed*", "*test_a.py::test_impossible*FAILED*"]
    )


def test_budget_on_uncountable_events_is_skipped_with_the_reason(suite):
    from pytest_inferperf.measure.machine import this_cpu

    if this_cpu().pmus:
        pytest.skip("this machine has a PMU")
    suite.makepyfile(
        test_a=f"""
        import pytest
        from workloads import hashing
        @pytest.mark.perf(ipc_min=1.0, {FAST})
        def test_ipc(pmu_profile):
            pmu_profile(hashing)
    """
    )
    result = run(suite, "--inferperf", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*budgets not checked on this machine: ipc_min=1: not checked: "
            "needs instructions, cycles, no PMU exposed (ENOENT)*"
        ]
    )
    result = run(suite, "--inferperf", "--inferperf-require-pmu")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*--inferperf-require-pmu*no PMU exposed*"])
    # One unmeasurable budget next to a met one: skipped quietly, failed under require-pmu.
    suite.makepyfile(
        test_a=f"""
        import pytest
        from workloads import hashing
        @pytest.mark.perf(ipc_min=1.0, latency_p50_ms_max=1000, {FAST})
        def test_ipc(pmu_profile):
            pmu_profile(hashing)
    """
    )
    run(suite, "--inferperf").assert_outcomes(passed=1)
    run(suite, "--inferperf", "--inferperf-require-pmu").assert_outcomes(failed=1)


def test_unknown_marker_keyword_is_a_collection_error_with_did_you_mean(suite):
    suite.makepyfile(
        test_a="""
        import pytest
        @pytest.mark.perf(ipc_mni=1.2)
        def test_x(pmu_profile):
            pmu_profile(lambda: None)
        def test_other():
            pass
    """
    )
    result = run(suite, "--inferperf")
    result.stdout.fnmatch_lines(
        ["*ERROR collecting test_a.py*", "*unknown keyword 'ipc_mni'. Did you mean ipc_min*"]
    )
    assert result.ret != 0


def test_a_budget_the_counters_cannot_give_is_a_collection_error_naming_the_fix(suite):
    suite.makepyfile(
        test_a="""
        import pytest
        @pytest.mark.perf(divider_max=0.2)
        def test_x(pmu_profile):
            pmu_profile(lambda: None)
    """
    )
    result = run(suite, "--inferperf")
    result.stdout.fnmatch_lines(
        [
            "*ERROR collecting test_a.py*",
            "*divider_max=...): divider (*) is not measured by the plugin: it needs "
            "divider_active*Budget backend_bound_max instead.*",
        ]
    )
    assert result.ret != 0


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        ("ipc_min='fast'", "a budget must be a finite number"),
        ("repeat=0", "repeat=0): must be an integer >= 1"),
        ("tolerance=-0.1", "a tolerance is a relative change"),
        ("ipc_min=2, ipc_max=1", "no value can meet both"),
    ],
)
def test_bad_marker_values_are_collection_errors(suite, marker, message):
    suite.makepyfile(
        test_a=f"""
        import pytest
        @pytest.mark.perf({marker})
        def test_x(pmu_profile):
            pmu_profile(lambda: None)
    """
    )
    result = run(suite, "--inferperf")
    result.stdout.fnmatch_lines([f"*{message}*"])
    assert result.ret != 0


def test_update_baselines_then_rerun_passes_and_compares(suite):
    suite.makepyfile(
        test_a=f"""
        import pytest
        from workloads import hashing
        @pytest.mark.perf({FAST})
        @pytest.mark.parametrize("n", [10, 20])
        def test_hash(pmu_profile, n):
            pmu_profile(hashing, n)
    """
    )
    result = run(suite, "--inferperf", "--update-baselines")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*created baselines/*/test_a.py/test_hash[[]10[]].json*",
            "*created baselines/*/test_a.py/test_hash[[]20[]].json*",
        ]
    )
    files = sorted(baseline_files(Path(suite.path, "baselines")))
    assert len(files) == 2
    data = json.loads(files[0].read_text())
    assert data["schema_version"] == 2 and data["machine"]["cpu"]["core_slug"]
    result = run(suite, "--inferperf")
    result.assert_outcomes(passed=2)
    # The change cell sits in the row, or on the row's continuation line when a
    # busy-machine note makes it too long for the table; an unchanged test beside other
    # work may be inconclusive (passed, compared, the machine blamed), never failed.
    assert re.search(r"test_hash\[10\][^\n]*(\n\s+)?(ok \(|inconclusive: )", result.stdout.str()), (
        result.stdout.str()
    )


def test_injected_slowdown_fails_against_the_baseline(suite):
    suite.makepyfile(
        test_a="""
        import os, pytest
        from workloads import hashing
        @pytest.mark.perf(warmup=1, repeat=10)
        def test_hash(pmu_profile):
            pmu_profile(hashing, int(os.environ.get("ROUNDS", "20")))
    """
    )
    run(suite, "--inferperf", "--update-baselines").assert_outcomes(passed=1)
    suite.monkeypatch = None
    import os

    os.environ["ROUNDS"] = "60"  # three times the work
    try:
        result = run(suite, "--inferperf")
    finally:
        del os.environ["ROUNDS"]
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*baseline cpu_ms_per_call: * -> * ms (+*%, tolerance *",
        ]
    )


def test_corrupt_baseline_fails_only_its_test(suite):
    suite.makepyfile(
        test_a=f"""
        import pytest
        from workloads import hashing
        @pytest.mark.perf({FAST})
        def test_one(pmu_profile):
            pmu_profile(hashing)
        @pytest.mark.perf({FAST})
        def test_two(pmu_profile):
            pmu_profile(hashing)
    """
    )
    run(suite, "--inferperf", "--update-baselines").assert_outcomes(passed=2)
    target = next(Path(suite.path, "baselines").rglob("test_one.json"))
    target.write_text('{"schema": "pytest-inferperf/profile", "schema_version": 1, "na')
    result = run(suite, "--inferperf")
    result.assert_outcomes(passed=1, failed=1)
    said(result, "test_one.json*--update-baselines")
    result.stdout.fnmatch_lines(["FAILED test_a.py::test_one*"])


def test_named_variants_get_their_own_baselines(suite):
    suite.makepyfile(
        test_a=f"""
        import pytest
        from workloads import hashing
        @pytest.mark.perf({FAST})
        def test_variants(pmu_profile):
            small = pmu_profile(hashing, 5, name="small")
            large = pmu_profile(hashing, 40, name="large")
            assert large.latency.p50_ms > small.latency.p50_ms
    """
    )
    run(suite, "--inferperf", "--update-baselines").assert_outcomes(passed=1)
    names = sorted(p.name for p in baseline_files(Path(suite.path, "baselines")))
    assert len(names) == 2 and all("test_variants" in n for n in names)


def test_junit_properties_carry_the_metrics(suite):
    suite.makepyfile(
        test_a=f"""
        import pytest
        from workloads import hashing
        @pytest.mark.perf({FAST})
        def test_hash(pmu_profile):
            pmu_profile(hashing)
    """
    )
    run(suite, "--inferperf", "--junitxml=out.xml").assert_outcomes(passed=1)
    xml = Path(suite.path, "out.xml").read_text()
    assert 'name="inferperf.latency_p50_ms"' in xml
    assert 'name="inferperf.cpu_ms_per_call"' in xml


def _table(stdout: str) -> list[str]:
    lines = stdout.split("= inferperf =")[1].splitlines()
    return [line.split()[0] for line in lines if line.startswith("test_a.py::")]


@pytest.mark.slow  # several full pytest runs: the default suite stays near 5 minutes
def test_xdist_gives_the_same_table_and_baselines(suite):
    suite.makepyfile(
        test_a=f"""
        import pytest
        from workloads import hashing
        @pytest.mark.perf({FAST})
        @pytest.mark.parametrize("n", [1, 2, 3, 4])
        def test_hash(pmu_profile, n):
            pmu_profile(hashing, n)
    """
    )
    serial = run(suite, "--inferperf", "--update-baselines", "-n", "0")
    serial.assert_outcomes(passed=4)
    serial_files = sorted(
        p.relative_to(suite.path) for p in baseline_files(Path(suite.path, "baselines"))
    )
    shutil.rmtree(Path(suite.path, "baselines"))
    parallel = run(suite, "--inferperf", "--update-baselines", "-n", "2")
    parallel.assert_outcomes(passed=4)
    parallel_files = sorted(
        p.relative_to(suite.path) for p in baseline_files(Path(suite.path, "baselines"))
    )
    assert serial_files == parallel_files and len(parallel_files) == 4
    assert _table(serial.stdout.str()) == _table(parallel.stdout.str())
    assert parallel.stdout.str().count("created baselines/") == 4


def test_records_cross_xdist_as_json_and_arrive_typed(suite):
    """Workers put plain JSON on report.inferperf; the controller holds ProfileRecords."""
    suite.makeconftest(
        """
        import json, pathlib
        from pytest_inferperf.report.records import ProfileRecord

        ROLE = []

        def pytest_configure(config):
            ROLE.append("worker" if hasattr(config, "workerinput") else "controller")

        def pytest_runtest_logreport(report):
            carried = report.when == "call" and getattr(report, "inferperf", None)
            if ROLE == ["controller"] and carried:
                json.dumps(report.inferperf, allow_nan=False)  # JSON-able for html/junit users
                with open("carried.txt", "a") as out:
                    out.write(report.nodeid + "\\n")

        def pytest_sessionfinish(session):
            if hasattr(session.config, "workerinput"):
                return
            plugin = session.config.pluginmanager.get_plugin("inferperf-session")
            pathlib.Path("records.json").write_text(json.dumps([
                [type(r).__name__, r.nodeid, r.outcome, r.key, "cpu_ms_per_call" in r.metrics,
                 r.profile.get("name")]
                for r in sorted(plugin.records, key=lambda r: r.key)
                if isinstance(r, ProfileRecord)
            ]))
    """
    )
    suite.makepyfile(
        test_a=f"""
        import pytest
        from workloads import hashing
        @pytest.mark.perf({FAST})
        @pytest.mark.parametrize("n", [1, 2])
        def test_hash(pmu_profile, n):
            pmu_profile(hashing, n)
            pmu_profile(hashing, n, name="twice")
    """
    )
    result = run(suite, "--inferperf", "-n", "2", "-p", "no:randomly")
    result.assert_outcomes(passed=2)
    records = json.loads(Path(suite.path, "records.json").read_text())
    ids = ["test_a.py::test_hash[1]", "test_a.py::test_hash[2]"]
    assert records == [
        ["ProfileRecord", ids[0], "passed", ids[0], True, "test_hash[1]"],
        ["ProfileRecord", ids[0], "passed", f"{ids[0]}@twice", True, "twice"],
        ["ProfileRecord", ids[1], "passed", ids[1], True, "test_hash[2]"],
        ["ProfileRecord", ids[1], "passed", f"{ids[1]}@twice", True, "twice"],
    ]
    assert sorted(Path(suite.path, "carried.txt").read_text().split()) == ids


def test_registry_plugins_add_metrics_in_pytest_as_in_validate(suite, monkeypatch):
    """A module named in INFERPERF_PLUGINS is seen by the plugin (validate: unit test)."""
    suite.makepyfile(
        house_hooks="""
        def pytest_inferperf_metrics(counts, context):
            return {"house_calls": float(context.calls)}
    """,
        test_a=f"""
        import pytest
        from workloads import hashing
        @pytest.mark.perf({FAST})
        def test_hash(pmu_profile):
            pmu_profile(hashing)
    """,
    )
    monkeypatch.setenv("INFERPERF_PLUGINS", "house_hooks")
    monkeypatch.syspath_prepend(str(suite.path))  # in-process: the module is importable here
    run(suite, "--inferperf", "--inferperf-report", "out").assert_outcomes(passed=1)
    (record,) = [json.loads(p.read_text()) for p in Path(suite.path, "out").glob("*.json")]
    calls = sum(r["calls"] for r in record["profile"]["repeats"])
    assert record["metrics"]["house_calls"] == calls > 0
    monkeypatch.setenv("INFERPERF_PLUGINS", "no_such_house")
    broken = run(suite, "--inferperf")
    assert broken.ret == pytest.ExitCode.USAGE_ERROR
    broken.stderr.fnmatch_lines(
        ["*cannot load the inferperf plugin from module 'no_such_house' named in*"]
    )


def test_report_dir_gets_one_json_per_profile(suite):
    suite.makepyfile(
        test_a=f"""
        import pytest
        from workloads import hashing
        @pytest.mark.perf({FAST})
        def test_hash(pmu_profile):
            pmu_profile(hashing)
    """
    )
    run(suite, "--inferperf", "--inferperf-report", "artifacts").assert_outcomes(passed=1)
    files = list(Path(suite.path, "artifacts").glob("*.json"))
    assert len(files) == 1
    record = json.loads(files[0].read_text())
    assert record["key"] == "test_a.py::test_hash"
    assert record["profile"]["schema"] == "pytest-inferperf/profile"


def test_examples_run_under_inferperf(pytester, copy_examples):
    copy_examples("test_inference.py")
    result = run(pytester, "--inferperf", "-k", "mobilenet or pipeline")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_inference.py::test_mobilenet_v2*", "*Not counted here:*"])


@pytest.mark.slow
def test_simulated_example_counts_the_same_twice(pytester, copy_examples):
    """The README's simulate example, run twice: work counts within 0.1%, misses within 1%.

    Instructions and data reads are the work done (conditional branches and data
    writes moved up to 0.25% while instructions moved 0.05%; indirect branches, 11k
    of MiniLM's 20.4M instructions a call, moved 0.11%: 12 of them). Cache and branch
    misses also depend on addresses (which cache set, which predictor entry) and
    on what other threads ran through the one simulated cache meanwhile (none,
    with ONNX Runtime's telemetry off): measured 0.01-0.2% for data and branch
    misses; instruction-cache misses are few (0.05% of instructions) and moved 2%.
    """
    from pytest_inferperf.measure.simulate import backend as simulate
    from pytest_inferperf.measure.simulate.shared import child_count

    if simulate.available():
        pytest.skip(simulate.available())
    copy_examples("test_simulated.py")
    runs = []
    for report in ("first", "second"):
        result = run(
            pytester,
            "-p",
            "no:randomly",
            "--inferperf",
            "--inferperf-backend",
            "simulate",
            "--inferperf-report",
            report,
            "test_simulated.py",
        )
        result.assert_outcomes(passed=2)
        result.stdout.fnmatch_lines(
            [
                "Simulated under valgrind's callgrind*",
                "  test_simulated.py::test_minilm_int8_short: *x slower than native per call*",
            ]
        )
        records = {}
        for path in Path(pytester.path, report).glob("*.json"):
            record = json.loads(path.read_text())
            records[record["key"]] = record["profile"]
        assert len(records) == 2
        children = {p["settings"]["simulation"]["child"]["pid"] for p in records.values()}
        assert len(children) == child_count(2)  # shared: one child per CPU, at most per test
        for profile in records.values():  # nothing else ran through the simulated caches
            assert profile["settings"]["simulation"]["other_threads_cpu_ns"] == {}
        runs.append(records)
    first, second = runs
    for key, profile in first.items():
        raw_a = profile["settings"]["simulation"]["raw"]
        raw_b = second[key]["settings"]["simulation"]["raw"]
        for events, within in (
            (("Ir", "Dr"), 0.001),
            (("Bc", "Bi", "Dw", "D1mr", "D1mw", "Bcm"), 0.01),
            (("I1mr",), 0.10),
        ):
            for event in events:
                a = sorted(r[event] for r in raw_a)[1]  # the median of 3 repeats
                b = sorted(r[event] for r in raw_b)[1]
                assert abs(a - b) <= within * max(a, b), (key, event, a, b)


SPINNING_MODEL = """
import numpy as np, onnx
from onnx import TensorProto, helper, numpy_helper

def build(path):
    rng = np.random.default_rng(0)
    nodes, inits, x = [], [], "x"
    for i in range(3):
        w = rng.standard_normal((128, 128)).astype(np.float32) * 0.05
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        nodes += [helper.make_node("MatMul", [x, f"w{i}"], [f"m{i}"]),
                  helper.make_node("Relu", [f"m{i}"], [f"r{i}"])]
        x = f"r{i}"
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [32, 128])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [32, 128])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
"""


def test_failure_carries_the_diagnosis_and_hooks_add_findings(suite):
    suite.makepyfile(tiny_model=SPINNING_MODEL)
    suite.makeconftest("""
        from pytest_inferperf.diagnose.classify import Evidence, Finding

        def pytest_inferperf_metrics(counts, context):
            if "task_clock" in counts:
                return {"cpu_us_per_call": counts["task_clock"] / 1000 / context.calls}
            return {}

        def pytest_inferperf_rules(metrics, context):
            if metrics.get("cpu_us_per_call", 0) > 0:
                return [Finding("house_rule", "our house rule", 0.01,
                                (Evidence("cpu_us_per_call", metrics["cpu_us_per_call"], 0.0,
                                          ">", "our team's rule"),), ("ask the team",), "")]
            return []
    """)
    suite.makepyfile(
        test_a="""
        import numpy as np, pytest
        from tiny_model import build
        from pytest_inferperf.onnxrt.sessions import SessionSettings, make_session

        @pytest.mark.perf(latency_p50_ms_max=0.000001, warmup=1, repeat=5)
        def test_spinning_pool(pmu_profile, tmp_path):
            build(tmp_path / "m.onnx")
            session = make_session(tmp_path / "m.onnx",
                                   SessionSettings(intra_op_threads=2, allow_spinning=True))
            pmu_profile(session.run, None, {"x": np.ones((32, 128), np.float32)})
    """
    )
    result = run(suite, "--inferperf", "--inferperf-explain")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*Diagnosis (*): thread spinning / oversubscription [[]thread_spinning[]]*",
            "*evidence: session.allow_spinning = 1*",
            "*allow_spinning*",
            "*our house rule*",
        ]
    )
    row = table_row(result, "test_a.py::test_spinning_pool")
    assert "FAILED" in row and "thread spinning" in row, row


# In-process, the inner run's warning also reaches this outer session's summary.
@pytest.mark.filterwarnings("ignore:inferperf. .* xdist workers:pytest.PytestWarning")
def test_more_workers_than_physical_cores_is_warned(suite):
    from pytest_inferperf.pmu.cpu import physical_cores

    workers = physical_cores() + 1
    suite.makepyfile(
        test_a=f"""
        import pytest
        @pytest.mark.perf({FAST})
        def test_x(pmu_profile):
            pmu_profile(lambda: None)
    """
    )
    result = run(suite, "--inferperf", "-n", str(workers))
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            f"*{workers} xdist workers run perf tests on {workers - 1} physical cores*",
        ]
    )


@pytest.mark.slow  # two full runs, the second sampled for flamegraphs: about 8 s
def test_failed_test_gets_flamegraphs_and_a_diff_against_the_baseline(suite):
    suite.makepyfile(
        test_a="""
        import os, pytest
        from workloads import hashing
        LIMIT = float(os.environ.get("LIMIT", "1000"))
        @pytest.mark.perf(latency_p50_ms_max=LIMIT, warmup=1, repeat=3, tolerance=5.0)
        def test_hash(pmu_profile):
            pmu_profile(hashing)
    """
    )
    # By default a new baseline is not sampled (recording stays about as fast as a run)
    run(suite, "--inferperf", "--update-baselines", flamegraphs=True).assert_outcomes(passed=1)
    (sidecar,) = Path(suite.path, "baselines").rglob("*~detail.json")
    assert json.loads(sidecar.read_text())["stacks"] is None
    # ...and is under "all": its stacks go to the baseline's sidecar
    args = ("--inferperf", "--update-baselines", "--inferperf-flamegraphs=all")
    run(suite, *args).assert_outcomes(passed=1)
    baseline = json.loads(sidecar.read_text())
    assert baseline["stacks"]["view"] in ("native", "python")
    assert sum(baseline["stacks"]["folded"].values()) > 0
    import os

    os.environ["LIMIT"] = "0.000001"
    try:
        result = run(suite, "--inferperf", flamegraphs=True)
    finally:
        del os.environ["LIMIT"]
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*flamegraph *.svg: inferperf-report/flamegraphs/*.svg", "*Flamegraphs:*"]
    )
    svgs = sorted(Path(suite.path, "inferperf-report", "flamegraphs").glob("*.svg"))
    kinds = {p.name.split(".")[-2] for p in svgs}
    assert "diff" in kinds and ({"native", "python"} & kinds)
    assert any("hashing" in p.read_text() for p in svgs)


def test_flamegraphs_none_writes_nothing(suite):
    suite.makepyfile(
        test_a=f"""
        import pytest
        @pytest.mark.perf(latency_p50_ms_max=0.000001, {FAST})
        def test_x(pmu_profile):
            pmu_profile(lambda: None)
    """
    )
    result = run(suite, "--inferperf", "--inferperf-flamegraphs", "none")
    result.assert_outcomes(failed=1)
    assert not Path(suite.path, "inferperf-report").exists()
    assert "flamegraph " not in result.stdout.str() and "Flamegraphs:" not in result.stdout.str()


def test_without_perf_the_python_and_operator_views_still_come(suite, monkeypatch, tmp_path):
    suite.makepyfile(tiny_model=SPINNING_MODEL)
    suite.makepyfile(
        test_a="""
        import numpy as np, pytest
        from tiny_model import build
        from pytest_inferperf.onnxrt.sessions import SessionSettings, make_session

        @pytest.mark.perf(latency_p50_ms_max=0.000001, warmup=1, repeat=3)
        def test_model(pmu_profile, tmp_path):
            build(tmp_path / "m.onnx")
            session = make_session(tmp_path / "m.onnx", SessionSettings())
            pmu_profile(session.run, None, {"x": np.ones((32, 128), np.float32)})
    """
    )
    empty = tmp_path / "no-perf-here"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    result = run(suite, "--inferperf", flamegraphs=True)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [  # the operator view, primary for ORT workloads, first
            "*flamegraph operators.svg: inferperf-report/flamegraphs/*.operators.svg",
            "*flamegraph python.svg: inferperf-report/flamegraphs/*.python.svg",
            "*flamegraph native: not available: perf not installed*",
        ]
    )
    operators = next(Path(suite.path, "inferperf-report").rglob("*.operators.svg")).read_text()
    assert "MatMul" in operators


def test_update_writes_only_tests_that_met_their_budgets_and_keeps_others(suite):
    keep = Path(suite.path, "baselines", "other-machine", "kept.json")
    keep.parent.mkdir(parents=True)
    keep.write_text("{}")
    suite.makepyfile(
        test_a=f"""
        import pytest
        from workloads import hashing
        @pytest.mark.perf({FAST})
        def test_ok(pmu_profile):
            pmu_profile(hashing)
        @pytest.mark.perf(latency_p50_ms_max=0.000001, {FAST})
        def test_over_budget(pmu_profile):
            pmu_profile(hashing)
        def test_functional_failure(pmu_profile):
            pmu_profile(hashing)
            assert False
    """
    )
    result = run(suite, "--inferperf", "--update-baselines", "--inferperf-flamegraphs", "none")
    result.assert_outcomes(passed=1, failed=2)
    names = sorted(p.name for p in baseline_files(Path(suite.path, "baselines")))
    assert names == ["kept.json", "test_ok.json"]
    assert keep.read_text() == "{}"


@pytest.mark.slow
def test_simulate_backend_catches_three_percent_more_work(suite):
    from pytest_inferperf.measure.simulate import backend as simulate

    if simulate.available():
        pytest.skip(simulate.available())
    suite.makepyfile(
        test_a="""
        import os, pytest
        def work():
            s = 0
            for i in range(int(os.environ.get("ROUNDS", "20000"))):
                s += i * i
            return s
        @pytest.mark.perf(warmup=1, repeat=3)
        def test_loop(pmu_profile):
            pmu_profile(work)
    """
    )
    run(
        suite,
        "--inferperf",
        "--inferperf-backend",
        "simulate",
        "--update-baselines",
        "--inferperf-flamegraphs",
        "none",
    ).assert_outcomes(passed=1)
    assert next(Path(suite.path, "baselines").glob("*+simulate"))
    import os

    os.environ["ROUNDS"] = "20600"  # 3% more work
    try:
        result = run(
            suite,
            "--inferperf",
            "--inferperf-backend",
            "simulate",
            "--inferperf-flamegraphs",
            "none",
        )
    finally:
        del os.environ["ROUNDS"]
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*baseline instructions_per_call: * -> * (+3.0%*"])


@pytest.mark.parametrize("flags", [(), ("--inferperf",)])
def test_another_plugin_can_list_every_registered_plugin(pytester: pytest.Pytester, flags) -> None:
    """pluggy keeps plugins in sets: a plugin object that cannot be hashed breaks
    ``get_plugins()`` for every other plugin and conftest (INTERNALERROR), on or off."""
    pytester.makeconftest(
        "def pytest_collection_finish(session):\n"
        "    names = [session.config.pluginmanager.get_name(p)\n"
        "             for p in session.config.pluginmanager.get_plugins()]\n"
        "    print('HAS-SESSION-PLUGIN', 'inferperf-session' in names)\n"
    )
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    result = pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider", *flags)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["HAS-SESSION-PLUGIN True"])
