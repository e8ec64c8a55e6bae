"""Installed into someone else's suite: no collisions, no cost when off, smoke mode works.

Real pytest runs (pytester): in-process, and in a subprocess where the process's imports
or its environment (PATH, which the simulate backend caches) are the point.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
FAST = "warmup=1, repeat=3, tolerance=0.5"


def run(pytester, *args, flamegraphs=False):
    """pytest in-process; no flamegraph pass (seconds per failed test, and per baseline
    written) unless the test is about flamegraphs."""
    if not flamegraphs and not any(a.startswith("--inferperf-flamegraphs") for a in args):
        args = (*args, "--inferperf-flamegraphs=none")
    return pytester.runpytest("-p", "no:cacheprovider", "-p", "no:randomly", *args)


def run_subprocess(pytester, *args):
    """A pytest run in a fresh interpreter: for what a process imports or inherits."""
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", *args)


# -- --update-baselines belongs to whoever defined it first -------------------------

SNAPSHOT_CONFTEST = """
def pytest_addoption(parser):
    parser.addoption("--update-baselines", action="store_true", dest="snap_update",
                     help="a snapshot tool's own option")
"""


def test_a_conftest_that_owns_update_baselines_keeps_it(pytester):
    pytester.makeconftest(SNAPSHOT_CONFTEST)
    pytester.makepyfile(
        test_a="""
        def test_snap(request):
            assert request.config.getoption("snap_update") is True
            assert not request.config.getoption("inferperf_update_baselines")
    """
    )
    result = run(pytester, "--update-baselines")
    result.assert_outcomes(passed=1)
    assert "ArgumentError" not in result.stderr.str()


def test_the_long_option_updates_when_the_short_one_is_taken(pytester):
    pytester.makeconftest(SNAPSHOT_CONFTEST)
    pytester.makepyfile(
        test_a=f"""
        import pytest
        @pytest.mark.perf({FAST})
        def test_x(pmu_profile):
            pmu_profile(sum, range(100))
    """
    )
    result = run(pytester, "--inferperf-update-baselines", "--inferperf-backend", "none")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*--update-baselines belongs to another plugin or conftest here*"
            "--inferperf-update-baselines*",
            "created baselines/*test_a.py*",
        ]
    )


def test_the_short_option_works_where_nobody_else_has_it(pytester):
    pytester.makepyfile(
        test_a=f"""
        import pytest
        @pytest.mark.perf({FAST})
        def test_x(pmu_profile):
            pmu_profile(sum, range(100))
    """
    )
    result = run(pytester, "--update-baselines", "--inferperf-backend", "none")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["created baselines/*test_a.py*"])
    assert "belongs to another plugin" not in result.stdout.str()


# -- markers: a suite's own "perf" is left alone; "inferperf" is ours ------------------


def test_a_foreign_perf_marker_on_tests_that_do_not_measure_is_left_alone(pytester):
    pytester.makeini("""
        [pytest]
        markers =
            perf(kind): this suite's own nightly performance tests
    """)
    pytester.makepyfile(
        test_a="""
        import pytest
        @pytest.mark.perf("nightly")
        def test_nightly():
            pass
        @pytest.mark.perf(budget_seconds=3)
        def test_other():
            pass
    """
    )
    result = run(pytester, "--strict-markers")
    result.assert_outcomes(passed=2)
    result = run(pytester, "--strict-markers", "--inferperf")
    result.assert_outcomes(passed=2)


def test_the_inferperf_marker_is_an_unambiguous_alias(pytester):
    pytester.makepyfile(
        test_a=f"""
        import pytest
        @pytest.mark.perf("nightly")  # the suite's own marker, beside ours
        @pytest.mark.inferperf(latency_p50_ms_max=0.000001, {FAST})
        def test_x(pmu_profile):
            pmu_profile(sum, range(1000))
    """
    )
    result = run(pytester, "--strict-markers", "--inferperf", "--inferperf-backend", "none")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*budget   latency_p50_ms = *budget <= 1e-06*FAILED*"])


def test_a_typo_in_the_inferperf_marker_names_it_and_docs_that_exist(pytester):
    pytester.makepyfile(
        test_a="""
        import pytest
        @pytest.mark.inferperf(ipc_mni=1.0)
        def test_x(pmu_profile):
            pmu_profile(sum, range(10))
    """
    )
    result = run(pytester)
    result.assert_outcomes(errors=1)
    out = result.stdout.str()
    assert "@pytest.mark.inferperf: unknown keyword 'ipc_mni'. Did you mean ipc_min" in out
    assert "docs/plugin.md" in out


def test_every_docs_file_the_package_names_exists():
    named = set()
    for path in (ROOT / "pytest_inferperf").rglob("*.py"):
        named.update(re.findall(r"docs/[A-Za-z0-9_./-]+\.md", path.read_text()))
    assert named, "the package names no docs at all?"
    missing = sorted(n for n in named if not (ROOT / n).is_file())
    assert missing == []


# -- smoke mode: without --inferperf every shipped example and documented pattern runs --


def test_the_shipped_examples_pass_without_inferperf():
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "examples/",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert re.search(r"\b7 passed\b", done.stdout), done.stdout[-1000:]


def test_documented_patterns_run_in_smoke_mode(pytester):
    pytester.makepyfile(
        test_patterns="""
        import pytest
        from pytest_inferperf import region

        def work(n=1000):
            return sum(range(n))

        @pytest.mark.perf(latency_p99_ms_max=100, threads=2)
        def test_stages(pmu_profile, perf_threads):
            assert perf_threads == 2
            def pipeline():
                with region("preprocess"):
                    data = list(range(100))
                with region("inference"):
                    out = work()
                return out
            profile = pmu_profile(pipeline)
            stages = {s.name: s for s in profile.stages}
            assert stages["inference"].calls == 1 and stages["preprocess"].calls == 1
            assert profile.outputs_ok

        @pytest.mark.inferperf(tolerance={"cpu_ms_per_call": 0.5})
        def test_named_variants(pmu_profile):
            small = pmu_profile(work, 10, name="small")
            big = pmu_profile(work, n=10000, name="big")
            assert small.name == "small" and big.name == "big"

        def test_wrapped_callable(pmu_profile):
            def wrapped():
                return work()
            assert pmu_profile(wrapped).latency.p50_ms >= 0
    """
    )
    result = run(pytester)
    result.assert_outcomes(passed=3)


# -- the plugin costs nothing where --inferperf is not asked for -----------------------

HEAVY = ("numpy", "onnxruntime", "onnx", "tabulate")


def test_importing_the_plugin_loads_no_engine():
    code = (
        "import sys, json, pytest\nbefore = set(sys.modules)\n"
        "import pytest_inferperf.plugin\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    added = json.loads(done.stdout)
    outside = [m for m in added if not m.startswith("pytest_inferperf.plugin")]
    assert sorted(outside) == [
        "pytest_inferperf",
        "pytest_inferperf.core",
        "pytest_inferperf.core.default_paths",  # the default folder names (no imports)
        "pytest_inferperf.core.errors",  # the error base (no imports)
        "pytest_inferperf.measure",
        "pytest_inferperf.measure.backends",  # the backend choices (standard library only)
        "pytest_inferperf.measure.child_process",
    ]
    assert "pytest_inferperf.plugin.fixtures" in added


def test_a_plain_run_loads_none_of_the_engine(pytester):
    pytester.makepyfile(
        test_a=f"""
        import sys, json
        def test_a():
            pass
        def test_zz_modules():
            mods = sorted(m for m in sys.modules
                          if m.startswith({HEAVY!r}) or m.startswith("pytest_inferperf."))
            print("MODULES " + json.dumps(mods))
    """
    )
    result = run_subprocess(pytester, "-s")
    result.assert_outcomes(passed=2)
    line = next(x for x in result.outlines if "MODULES " in x)
    mods = json.loads(line.split("MODULES ", 1)[1])
    assert [m for m in mods if not m.startswith("pytest_inferperf.plugin")] == [
        "pytest_inferperf.core",
        "pytest_inferperf.core.default_paths",  # the default folder names (no imports)
        "pytest_inferperf.core.errors",  # the error base hooks' HookResultError needs (no imports)
        "pytest_inferperf.diagnose",
        "pytest_inferperf.diagnose.hooks",
        "pytest_inferperf.measure",
        "pytest_inferperf.measure.backends",  # the backend choices (standard library only)
        "pytest_inferperf.measure.child_process",
    ]
    assert all(not m.startswith(HEAVY) for m in mods)


@pytest.mark.parametrize("args", [(), ("--inferperf",)])
def test_nothing_imports_xdist_for_the_plugin(pytester, args):
    """pytest-xdist loads itself as a plugin; ours never imports it (``-p no:xdist`` works)."""
    pytester.makepyfile(
        test_a="""
        import sys
        def test_a():
            assert not any(m == "xdist" or m.startswith("xdist.") for m in sys.modules)
    """
    )
    result = run_subprocess(pytester, "-p", "no:xdist", "-p", "no:xdist.looponfail", *args)
    result.assert_outcomes(passed=1)


# -- CI outputs: a job summary, one run-level JSON -----------------------------------


def test_step_summary_and_run_json(pytester, monkeypatch):
    pytester.makepyfile(
        test_a=f"""
        import pytest
        @pytest.mark.perf({FAST})
        def test_ok(pmu_profile):
            pmu_profile(sum, range(1000))
        @pytest.mark.perf(latency_p50_ms_max=0.000001, {FAST})
        def test_slow(pmu_profile):
            pmu_profile(sum, range(1000))
    """
    )
    summary = pytester.path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_SHA", "0123abcd")
    result = run(
        pytester, "--inferperf", "--inferperf-backend", "none", "--inferperf-json", "out/run.json"
    )
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["wrote out/run.json"])
    text = summary.read_text()
    assert text.startswith("earlier step\n")  # appended, never overwritten
    assert "### pytest --inferperf: 2 profiled, 1 failed" in text
    assert "| test_a.py::test_ok |" in text
    assert "<details><summary>FAILED test_a.py::test_slow</summary>" in text
    assert "budget   latency_p50_ms = " in text
    doc = json.loads((pytester.path / "out" / "run.json").read_text())
    assert doc["schema"] == "pytest-inferperf/run" and doc["schema_version"] == 1
    assert doc["commit"] == "0123abcd" and doc["exit_status"] == 1
    by_key = {t["key"]: t for t in doc["tests"]}
    assert set(by_key) == {"test_a.py::test_ok", "test_a.py::test_slow"}
    assert by_key["test_a.py::test_slow"]["failed"] is True
    assert "latency_p50_ms" in by_key["test_a.py::test_slow"]["failure"]
    assert by_key["test_a.py::test_ok"]["metrics"]["latency_p50_ms"] > 0
    names = {b["name"] for b in doc["benchmarks"]}
    assert "test_a.py::test_ok latency_p50_ms" in names
    assert all(b["unit"] and b["value"] >= 0 for b in doc["benchmarks"])


def test_an_unwritable_run_json_is_one_error_line_and_baselines_are_still_written(pytester):
    pytester.makepyfile(
        test_a=f"""
        import pytest
        @pytest.mark.perf({FAST})
        def test_ok(pmu_profile):
            pmu_profile(sum, range(1000))
    """
    )
    (pytester.path / "blocker").write_text("a file, not a folder")
    result = run(
        pytester,
        "--inferperf-update-baselines",
        "--inferperf-backend",
        "none",
        "--inferperf-json",
        "blocker/run.json",
    )
    result.stdout.fnmatch_lines(
        ["created baselines/*", "ERROR --inferperf-json blocker/run.json: cannot write *"]
    )
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert result.ret == 1


def test_inferperf_version():
    from pytest_inferperf.core.version import version

    done = subprocess.run(
        [sys.executable, "-m", "pytest_inferperf", "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == f"inferperf {version()}"
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", version())


# -- pytest-html: columns, embedded flamegraphs, links relative to the report ---------


def test_pytest_html_report_has_columns_embedded_svg_and_relative_links(pytester):
    pytest.importorskip("pytest_html")
    pytester.makepyfile(
        test_a=f"""
        import pytest
        @pytest.mark.perf(latency_p50_ms_max=0.000001, {FAST})
        def test_slow(pmu_profile):
            pmu_profile(sum, range(1000))
        def test_plain():
            pass
    """
    )
    result = run(
        pytester,
        "--inferperf",
        "--inferperf-backend",
        "none",
        "--html",
        "site/report.html",
        "--self-contained-html",
        flamegraphs=True,
    )
    result.assert_outcomes(passed=1, failed=1)
    page = (pytester.path / "site" / "report.html").read_text()
    assert "p50 ms" in page and "CPU ms/call" in page and "vs baseline" in page
    assert "data:image/svg+xml;base64," in page or "image/svg+xml" in page
    assert "../inferperf-report/flamegraphs/test_a.py_test_slow-" in page
    assert str(pytester.path) not in page.split("<body", 1)[-1].replace(
        str(pytester.path / "site"), ""
    )


def test_make_inputs_refuses_a_dimension_the_model_does_not_have():
    from onnx import TensorProto, helper

    from pytest_inferperf.onnxrt.sessions import InputSpecError, make_inputs

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "sequence"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "sequence"])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    model = helper.make_model(graph)
    assert make_inputs(model, {"batch": 2, "sequence": 3})["x"].shape == (2, 3)
    with pytest.raises(
        InputSpecError,
        match=r"'sequense' is not a symbolic dimension.*"
        r"Did you mean 'sequence'\?.*batch, sequence",
    ):
        make_inputs(model, {"batch": 2, "sequence": 3, "sequense": 4})


@pytest.mark.slow  # an ONNX Runtime session profiled and sampled for flamegraphs: about 11 s
def test_a_wrapped_session_run_gets_its_operator_view(pytester):
    pytester.makepyfile(
        test_a=f"""
        import numpy as np, onnxruntime as ort, pytest
        from onnx import TensorProto, helper

        def session():
            x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 4])
            y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 4])
            graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
            model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
            model.ir_version = 8
            return ort.InferenceSession(model.SerializeToString(),
                                        providers=["CPUExecutionProvider"])

        @pytest.mark.perf(latency_p50_ms_max=0.000001, {FAST})
        def test_wrapped(pmu_profile):
            s = session()
            feed = {{"x": np.ones((4, 4), np.float32)}}
            def infer():
                return s.run(None, feed)
            pmu_profile(infer)
    """
    )
    result = run(
        pytester, "--inferperf", "--inferperf-backend", "none", "--inferperf-flamegraphs", "failed"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*flamegraph operators.svg: inferperf-report/flamegraphs/"
            "test_a.py_test_wrapped-*.operators.svg"
        ]
    )


def test_run_html_is_one_self_contained_page(pytester):
    pytester.makepyfile(
        test_a=f"""
        import pytest
        @pytest.mark.perf({FAST})
        def test_ok(pmu_profile):
            pmu_profile(sum, range(1000))
        @pytest.mark.perf(latency_p50_ms_max=0.000001, {FAST})
        def test_slow(pmu_profile):
            pmu_profile(sum, range(1000))
    """
    )
    result = run(
        pytester,
        "--inferperf",
        "--inferperf-backend",
        "none",
        "--inferperf-html",
        "site/run.html",
        flamegraphs=True,
    )
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["wrote site/run.html"])
    page = (pytester.path / "site" / "run.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "2 profiled, 1 failed." in page
    assert "<h2>test_a.py::test_ok</h2>" in page and "<h2>test_a.py::test_slow</h2>" in page
    assert "budget   latency_p50_ms = " in page
    assert "../inferperf-report/flamegraphs/test_a.py_test_slow-" in page  # relative link
    assert "data:image/svg+xml;base64," in page  # and embedded
    assert "<script src=" not in page and "http://" not in page.replace("http://www.w3.org", "")


def test_the_public_api_loads_on_first_use_and_profile_stays_the_function():
    code = (
        "import sys, pytest_inferperf.core.profile\n"
        "import pytest_inferperf as api\n"
        "from pytest_inferperf.measure.runner import profile\n"
        "assert api.profile is profile, api.profile\n"
        "from pytest_inferperf import Profile, region, MeasurementTimeout\n"
        "assert Profile.__module__ == 'pytest_inferperf.core.profile'\n"
        "assert set(api.__all__) >= {'profile', 'region', 'Profile', '__version__'}\n"
        "print(api.__version__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", done.stdout.strip())


def test_the_simulate_backend_without_valgrind_skips_with_the_reason(pytester, monkeypatch):
    """The fixture's simulate branch, fast: with no valgrind on PATH it skips and says why."""
    bin_dir = pytester.path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    monkeypatch.setenv("PATH", str(bin_dir))
    pytester.makepyfile(
        test_a=f"""
        import pytest
        @pytest.mark.perf({FAST})
        def test_x(pmu_profile):
            pmu_profile(sum, range(100))
    """
    )
    result = run_subprocess(pytester, "--inferperf", "--inferperf-backend", "simulate", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*inferperf: the simulate backend is *valgrind*"])


def test_the_long_description_has_no_link_pypi_cannot_follow():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    text = (ROOT / meta["readme"]["file"]).read_text()
    links = re.findall(r"\]\(([^)]+)\)", text) + re.findall(r'(?:src|href)="([^"]+)"', text)
    assert [link for link in links if not re.match(r"https?://", link)] == []
    assert "pytest --inferperf" in text and meta["readme"]["content-type"] == "text/markdown"
