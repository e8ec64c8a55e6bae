"""Every file the tool reads: special files, huge files and hostile contents never hang it.

A FIFO with no writer, ``/dev/zero``, a folder or a file larger than the limit is
refused by name, at once; the CLI exits 2 (usage) and a baseline of that kind fails
only its own test while the session goes on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from plugin_output import said

from pytest_inferperf.core.safe_read import UnreadableFile, read_limited
from pytest_inferperf.judge.baseline_store import BaselineError, load_baseline

pytest_plugins = ["pytester"]
RICH = Path(__file__).parent / "fixtures" / "profiles" / "rich_profile.json"


def _cli(*args: str, timeout: float = 90) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest_inferperf", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def fifo(tmp_path) -> Path:
    path = tmp_path / "pipe.json"
    os.mkfifo(path)
    return path


def test_a_fifo_is_refused_without_blocking(fifo):
    with pytest.raises(UnreadableFile, match="is a FIFO"):
        read_limited(fifo, 1 << 20)
    with pytest.raises(BaselineError, match=r"is a FIFO.*--update-baselines"):
        load_baseline(fifo)


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null", "/dev/urandom"])
def test_a_device_is_refused(device):
    with pytest.raises(UnreadableFile, match="is a character device"):
        read_limited(device, 1 << 20)


def test_a_folder_and_a_missing_file_are_named(tmp_path):
    with pytest.raises(UnreadableFile, match="is a folder"):
        read_limited(tmp_path, 1 << 20)
    with pytest.raises(UnreadableFile) as info:
        read_limited(tmp_path / "nope.json", 1 << 20)
    assert info.value.missing


def test_the_limit_is_checked_while_reading_not_only_by_size(tmp_path, monkeypatch):
    path = tmp_path / "big.txt"
    path.write_bytes(b"x" * 5000)
    with pytest.raises(UnreadableFile, match="far larger than any"):
        read_limited(path, 4096)
    real_fstat = os.fstat

    class Lying:  # a file system that says 0 bytes (like /proc files)
        def __init__(self, info):
            self.st_mode, self.st_size = info.st_mode, 0

    monkeypatch.setattr(os, "fstat", lambda fd: Lying(real_fstat(fd)))
    with pytest.raises(UnreadableFile, match="far larger than any"):
        read_limited(path, 4096)


@pytest.mark.parametrize(
    "command",
    [
        ["validate", "{rich}", "--baseline", "{special}"],
        ["validate", "{special}", "--baseline", "{rich}"],
        ["compare", "{rich}", "{special}", "--out", "{out}"],
        ["explain", "{special}"],
    ],
)
@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_cli_refuses_special_files_with_exit_2(tmp_path, command, special):
    target = tmp_path / "pipe.json"
    if special == "fifo":
        os.mkfifo(target)
    else:
        target = Path(special)
    args = [a.format(rich=RICH, special=target, out=tmp_path / "out") for a in command]
    done = _cli(*args)
    assert done.returncode == 2, done.stderr
    # a .json is read as a profile; /dev/zero as a target is taken for a model: not a file
    assert "not a regular file" in done.stderr or "is not a file" in done.stderr
    assert "Traceback" not in done.stderr


def test_explain_refuses_a_huge_file(tmp_path):
    path = tmp_path / "perf.txt"
    with path.open("wb") as fh:
        fh.truncate(65 << 20)  # sparse: no disk, no memory
    done = _cli("explain", str(path))
    assert done.returncode == 2
    assert "far larger than any perf stat output" in done.stderr


def test_a_fifo_baseline_fails_only_its_test_and_the_session_goes_on(pytester):
    pytester.makepyfile(
        test_a="""
        import pytest
        @pytest.mark.perf(warmup=1, repeat=3, tolerance=0.5)
        def test_first(pmu_profile):
            pmu_profile(lambda: sum(range(1000)))
        @pytest.mark.perf(warmup=1, repeat=3, tolerance=0.5)
        def test_second(pmu_profile):
            pmu_profile(lambda: sum(range(1000)))
    """
    )
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "--inferperf",
        "--update-baselines",
        "--inferperf-flamegraphs",
        "none",
    )
    result.assert_outcomes(passed=2)
    first = next(Path(pytester.path, "baselines").rglob("test_first.json"))
    first.unlink()
    # test_second runs with no baseline: its outcome cannot depend on a busy machine's timing
    next(Path(pytester.path, "baselines").rglob("test_second.json")).unlink()
    os.mkfifo(first)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--inferperf", "--inferperf-flamegraphs", "none", timeout=120
    )
    result.assert_outcomes(passed=1, failed=1)
    said(result, "test_first.json is a FIFO (named pipe), not a regular file")


def test_rich_fixture_is_a_valid_profile():
    from pytest_inferperf.core.profile import Profile

    profile = Profile.load(RICH)
    assert profile.stages and profile.operators and profile.op_types and profile.roofline
    assert json.loads(RICH.read_text())["schema"] == "pytest-inferperf/profile"
