"""Nothing left behind: temp files of interrupted writes, perf work folders, children."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from profile_paths import baseline_files

from pytest_inferperf.judge.baseline_store import save_baseline, sweep_interrupted_writes
from pytest_inferperf.measure.flame import WORKDIR_PREFIX, sweep_abandoned_workdirs

pytest_plugins = ["pytester"]


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_temp_files_of_a_killed_writer_are_removed_by_the_next_run(tmp_path):
    folder = tmp_path / "baselines" / "x86" / "test_a.py"
    folder.mkdir(parents=True)
    dead = folder / f".test_x.json.{_dead_pid()}.abc123.tmp"
    dead.write_text("{half a baseline")
    old_format = folder / ".test_y.json.q1w2e3.tmp"
    old_format.write_text("{")
    os.utime(old_format, (time.time() - 3600, time.time() - 3600))
    live = folder / f".test_z.json.{os.getppid()}.zz.tmp"  # a writer that still runs
    live.write_text("{")
    mine = folder / "test_x.json"
    mine.write_text("{}")
    removed = sweep_interrupted_writes(tmp_path / "baselines")
    assert sorted(removed) == sorted([dead, old_format])
    assert live.exists() and mine.exists()


def test_save_names_its_temp_file_with_its_pid(tmp_path, monkeypatch):
    seen = []
    real = os.replace

    def spy(src, dst):
        seen.append(Path(src).name)
        return real(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    from pytest_inferperf.core.profile import Profile

    profile = Profile.load(Path(__file__).parent / "fixtures" / "profiles" / "rich_profile.json")
    save_baseline(tmp_path / "t.json", profile)
    assert seen and f".{os.getpid()}." in seen[0] and seen[0].endswith(".tmp")


def test_the_plugin_sweeps_leftovers_on_the_next_run(pytester):
    pytester.makepyfile(
        test_a="""
        def test_x(pmu_profile):
            pmu_profile(lambda: sum(range(100)))
    """
    )
    folder = pytester.path / "baselines" / "some-class" / "test_a.py"
    folder.mkdir(parents=True)
    stale = folder / f".test_x.json.{_dead_pid()}.k9.tmp"
    stale.write_text("{")
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--inferperf", "--inferperf-flamegraphs", "none"
    )
    result.assert_outcomes(passed=1)
    assert not stale.exists()
    result.stdout.fnmatch_lines(["removed 1 temp file(s) an interrupted baseline write had left"])


def test_perf_work_folders_of_exited_processes_are_removed(tmp_path):
    gone = tmp_path / f"{WORKDIR_PREFIX}{_dead_pid()}-abcd"
    gone.mkdir()
    (gone / "perf.data").write_text("x")
    os.mkfifo(gone / "ctl.fifo")
    alive = tmp_path / f"{WORKDIR_PREFIX}{os.getppid()}-efgh"
    alive.mkdir()
    assert sweep_abandoned_workdirs(str(tmp_path)) == [gone]
    assert not gone.exists() and alive.exists()


@pytest.mark.slow  # a minute of valgrind or several pytest runs
def test_a_simulate_child_is_killed_with_its_group_on_ctrl_c(tmp_path, monkeypatch, request):
    """Ctrl-C while waiting for a child in its own session: the child's group goes too."""
    from pytest_inferperf.measure.simulate import (
        backend as simulate,
    )
    from pytest_inferperf.measure.simulate import (
        parent as simulate_parent,
    )

    marker = tmp_path / "pid"
    script = f"import os, time; open({str(marker)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    trigger = simulate.ChildOptions(trigger="vgdb")
    built = simulate.ChildCommand([sys.executable, "-c", script], [], {}, trigger)
    monkeypatch.setattr(simulate_parent, "child_command", lambda *a, **k: built)

    def interrupt_when_started():
        for _ in range(200):
            if marker.exists() and marker.read_text():
                break
            time.sleep(0.05)
        # a real SIGINT, as Ctrl-C sends: it wakes the parent from its wait for the
        # child (_thread.interrupt_main only sets a flag, seen when that wait ends)
        os.kill(os.getpid(), signal.SIGINT)

    # Ctrl-C as Python answers it by default, whatever an earlier test left installed
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    request.addfinalizer(lambda: signal.signal(signal.SIGINT, previous))
    threading.Thread(target=interrupt_when_started, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        simulate_parent.run_child(
            "t.py::test",
            "",
            simulate.SimulateOptions(rootdir=tmp_path, timeout=60, repeat=1, block_plugins=()),
            tmp_path,
            instrument_from_start=False,
        )
    pid = int(marker.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_ctrl_c_in_the_write_pass_says_what_was_written(pytester):
    # In a subprocess: the conftest replaces a function of the package for the whole process.
    pytester.makeconftest("""
        import pytest_inferperf.judge.baseline_store as b
        real, calls = b.save_baseline, []
        def second_is_interrupted(path, profile):
            calls.append(path)
            if len(calls) == 2:
                raise KeyboardInterrupt
            return real(path, profile)
        b.save_baseline = second_is_interrupted
    """)
    pytester.makepyfile(
        test_a="""
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
    result.stdout.fnmatch_lines(
        [
            "created baselines/*test_a.json",
            "interrupted: 1 baseline(s) written before the interrupt*",
        ]
    )
    assert len(list(baseline_files(Path(pytester.path, "baselines")))) == 1
