"""Reliability: corrupt inputs, faults and load. Nothing lost, nothing injected."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profile_paths import baseline_files

from pytest_inferperf import profile as run_profile
from pytest_inferperf.core.profile import Profile
from pytest_inferperf.judge.baseline_store import BaselineError, load_baseline, save_baseline
from pytest_inferperf.pmu.perf_backend import fd_count

pytest_plugins = ["pytester"]


@pytest.fixture(scope="module")
def valid_json() -> str:
    return run_profile(lambda: sum(range(100)), warmup=1, repeat=3, min_time=0.0).to_json()


def _load_or_error(path: Path) -> Profile | None:
    try:
        return load_baseline(path)
    except BaselineError as exc:
        text = str(exc)
        assert str(path) in text and "--update-baselines" in text
        return None


@settings(
    max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None
)
@given(cut=st.floats(0.0, 0.999))
def test_truncated_baselines_are_clear_errors(tmp_path, valid_json, cut):
    path = tmp_path / "b.json"
    path.write_text(valid_json[: int(len(valid_json) * cut)])
    assert _load_or_error(path) is None


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=8,
)


@settings(
    max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None
)
@given(data=st.data())
def test_mutated_fields_load_or_fail_clearly(tmp_path, valid_json, data):
    doc = json.loads(valid_json)
    key = data.draw(st.sampled_from(sorted(doc)))
    doc[key] = data.draw(JSON_VALUES)
    path = tmp_path / "b.json"
    path.write_text(json.dumps(doc))
    loaded = _load_or_error(path)  # never any other exception
    if loaded is not None:
        assert isinstance(loaded, Profile)


@pytest.mark.parametrize(
    "text",
    [
        "NaN",
        '{"schema": "pytest-inferperf/profile", "schema_version": 99}',
        '{"schema": "pytest-inferperf/profile", "schema_version": "1"}',
        "[" * 100_000 + "]" * 100_000,
        '{"__reduce__": "os.system", "schema": "x"}',
    ],
)
def test_hostile_documents_are_refused_without_executing(tmp_path, text):
    path = tmp_path / "b.json"
    path.write_text(text)
    with pytest.raises(BaselineError, match=r"b\.json"):
        load_baseline(path)


def test_non_utf8_and_huge_files_are_refused(tmp_path):
    path = tmp_path / "b.json"
    path.write_bytes(b'{"schema": "\xff\xfe"}')
    with pytest.raises(BaselineError, match="not UTF-8 JSON"):
        load_baseline(path)
    with path.open("wb") as f:
        f.truncate(65 << 20)  # sparse: 65 MiB without writing them
    with pytest.raises(BaselineError, match="far larger than any profile"):
        load_baseline(path)


def test_nan_and_inf_in_counts_are_refused(tmp_path, valid_json):
    doc = json.loads(valid_json)
    name = next(iter(doc["repeats"][0]["sample"]["counts"]))
    text = json.dumps(doc).replace(
        json.dumps(doc["repeats"][0]["sample"]["counts"][name]["value"]), "Infinity", 1
    )
    path = tmp_path / "b.json"
    path.write_text(text)
    with pytest.raises(BaselineError):
        load_baseline(path)


# -- faults --------------------------------------------------------------------
def test_keyboard_interrupt_in_the_measured_region_closes_everything():
    before = fd_count()
    calls = {"n": 0}

    def interrupted():
        calls["n"] += 1
        if calls["n"] > 5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_profile(interrupted, warmup=1, warmup_max=1, repeat=50, min_time=0.0)
    assert fd_count() == before


def test_unwritable_baselines_keep_the_old_ones_and_fail_the_run(pytester):
    pytester.makepyfile(
        test_a="""
        import pytest
        @pytest.mark.perf(warmup=1, repeat=3, tolerance=0.5)
        def test_x(pmu_profile):
            pmu_profile(lambda: sum(range(1000)))
    """
    )
    result = pytester.runpytest("--inferperf", "--update-baselines", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    baseline = next(baseline_files(Path(pytester.path, "baselines")))
    before = baseline.read_bytes()
    # Make the class folder a file: every write below it fails (a real OS error, even as root).
    folder = baseline.parent
    for child in folder.iterdir():
        child.unlink()
    folder.rmdir()
    folder.write_text("not a folder")
    result = pytester.runpytest(
        "test_a.py", "--inferperf", "--update-baselines", "-p", "no:cacheprovider"
    )
    result.stdout.fnmatch_lines(
        [
            "ERROR cannot create the folder *test_a.py for baseline "
            "*test_x.json: File exists (EEXIST). No baseline was written*"
        ]
    )
    assert result.ret == 1
    assert folder.read_text() == "not a folder"
    assert before  # the earlier baseline content was a real profile
    assert json.loads(before)["schema"] == "pytest-inferperf/profile"


# -- load ------------------------------------------------------------------------
@pytest.mark.slow
def test_a_thousand_profiles_keep_descriptors_and_memory_flat():
    def work():
        return sum(range(200))

    for _ in range(50):  # warm caches, allocator pools, imports
        run_profile(work, warmup=0, repeat=1, min_time=0.0)
    fds = fd_count()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _ in range(1000):
        run_profile(work, warmup=0, repeat=1, min_time=0.0)
    assert fd_count() == fds
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss < 20 * 1024  # KiB


def _fifty_tests(pytester) -> None:
    pytester.makepyfile(
        test_many="""
        import pytest
        @pytest.mark.perf(warmup=0, repeat=2, min_time=0.0, tolerance=0.5)
        @pytest.mark.parametrize("i", range(50))
        def test_p(pmu_profile, i):
            pmu_profile(lambda: sum(range(100 + i)))
    """
    )


@pytest.mark.slow
def test_xdist_update_writes_every_baseline_exactly_once(pytester):
    _fifty_tests(pytester)
    result = pytester.runpytest_subprocess(
        "--inferperf", "--update-baselines", "-n", "2", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=50)
    out = result.stdout.str()
    files = sorted(baseline_files(Path(pytester.path, "baselines")))
    assert len(files) == 50 and out.count("created baselines/") == 50
    for path in files:
        assert out.count(path.name) == 1
        assert load_baseline(path) is not None


@pytest.mark.slow
def test_concurrent_updates_of_one_folder_leave_no_corrupt_file(pytester):
    _fifty_tests(pytester)
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pytest",
                "--inferperf",
                "--update-baselines",
                "-q",
                "-p",
                "no:cacheprovider",
            ],
            cwd=pytester.path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(3)
    ]
    assert [p.wait(timeout=300) for p in procs] == [0, 0, 0]
    files = sorted(Path(pytester.path, "baselines").rglob("*"))
    assert [f for f in files if f.is_file() and f.suffix != ".json"] == []  # no temp files
    assert len([f for f in files if f.suffix == ".json"]) == 100  # 50 baselines, 50 sidecars
    for path in files:
        if path.is_file() and not path.name.endswith("~detail.json"):
            assert isinstance(load_baseline(path), Profile)


def test_save_then_load_is_identity(tmp_path, valid_json):
    profile = Profile.from_dict(json.loads(valid_json))
    path = tmp_path / "a" / "b.json"
    save_baseline(path, profile)
    loaded = load_baseline(path)
    # what judging reads is kept exactly (per-thread counts are summed, ids dropped)
    assert loaded.to_baseline_json() == profile.to_baseline_json()
    assert loaded.totals == profile.totals and loaded.latency == profile.latency


# -- baseline keys -----------------------------------------------------------------
def _outside_rootdir(pytester) -> list[str]:
    root = pytester.path / "root"
    root.mkdir()
    (root / "pytest.ini").write_text("[pytest]\n")
    for folder, name in (("one", "test_one.py"), ("two", "test_two.py")):
        (pytester.path / folder).mkdir()
        (pytester.path / folder / name).write_text(
            "def test_a(pmu_profile):\n    pmu_profile(lambda: sum(range(100)))\n"
        )
    return [
        "-p",
        "no:cacheprovider",
        "--inferperf",
        "--inferperf-flamegraphs",
        "none",
        "--rootdir",
        str(root),
        "-c",
        str(root / "pytest.ini"),
        str(pytester.path / "one" / "test_one.py"),
        str(pytester.path / "two" / "test_two.py"),
    ]


def test_tests_outside_the_rootdir_get_their_own_baselines(pytester):
    """pytest gives both ``::test_a``; their baselines still live apart, by file path."""
    args = _outside_rootdir(pytester)
    result = pytester.runpytest(*args, "--update-baselines")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "created baselines/*/%2E%2E*/one/test_one.py/test_a.json",
            "created baselines/*/%2E%2E*/two/test_two.py/test_a.json",
        ]
    )
    assert "updated" not in result.stdout.str()
    result.stdout.fnmatch_lines(["../one/test_one.py::test_a *", "../two/test_two.py::test_a *"])
    files = list(baseline_files(pytester.path / "root" / "baselines"))
    assert len(files) == 2


def test_a_collision_is_refused_not_judged(pytester):
    """Two keys that would share one file (forced here): failed with both names, not written.

    In a subprocess: the conftest replaces a function of the package for the whole process.
    """
    pytester.makeconftest("""
        import pytest_inferperf.judge.baseline_store as b
        real = b.baseline_path
        def one_file(folder, machine_class, backend, nodeid):
            return real(folder, machine_class, backend, "same.py::test")
        b.baseline_path = one_file
    """)
    pytester.makepyfile(
        test_x="""
        def test_a(pmu_profile):
            pmu_profile(lambda: sum(range(100)))
        def test_b(pmu_profile):
            pmu_profile(lambda: sum(range(100)))
    """
    )
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--inferperf",
        "--inferperf-flamegraphs",
        "none",
        "--update-baselines",
    )
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*test_x.py::test_b and test_x.py::test_a map to the same baseline file*"]
    )
    assert len(list(baseline_files(Path(pytester.path, "baselines")))) == 1  # the first only
