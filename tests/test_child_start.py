"""What a simulation child reads before pytest runs (pytest_inferperf.measure.simulate.child_start).

Natively, in subprocesses (the start file is read at interpreter start-up): the child
runs pytest with the start file's arguments and environment, loads handed-over
bytecode only while its header matches the source as it is, compiles for itself
otherwise, waits for a start file the parent writes late, and runs nothing without
one. Through valgrind, every child of the slow tests in tests/test_simulate_shared.py
and tests/test_simulate.py starts this way.
"""

from __future__ import annotations

import marshal
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pytest_inferperf.measure.child_process import ENV_START
from pytest_inferperf.measure.simulate import child_start
from pytest_inferperf.measure.simulate.child_start import (
    BytecodeHandoff,
    ChildStart,
    cache_is_valid,
    compiled,
    handed_code,
    module_sources,
    pyc_header,
    read_start,
    write_start,
)


def _child(tmp_path: Path, start: ChildStart | None, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if start is not None:
        write_start(tmp_path / "start.json", start)
        env[ENV_START] = str(tmp_path / "start.json")
    return subprocess.run(
        [sys.executable, "-m", "pytest_inferperf.measure.simulate.child_start", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _module(tmp_path: Path, text: str = "VALUE = 1\n") -> Path:
    source = tmp_path / "handed_mod.py"
    source.write_text(text)
    return source


def _forged(tmp_path: Path, source: Path, text: str) -> dict[str, str]:
    """A bytecode table for ``source`` whose code is ``text``'s but whose header is
    ``source``'s: what the child imports shows which of the two it loaded."""
    code = compile(text, str(source), "exec", dont_inherit=True)
    (tmp_path / "0.pyc").write_bytes(pyc_header(source.stat()) + marshal.dumps(code))
    return {str(source): str(tmp_path / "0.pyc")}


TEST_READS_VALUE = (
    "import os, handed_mod\n"
    "def test_value():\n"
    "    print('VALUE', handed_mod.VALUE)\n"
    "    assert handed_mod.VALUE == int(os.environ['WANT'])\n"
)
RUN = ("-q", "-s", "-p", "no:cacheprovider", "test_v.py")


def test_the_child_loads_the_handed_over_code_while_the_source_is_unchanged(tmp_path):
    source = _module(tmp_path, "VALUE = 1\n")
    table = _forged(tmp_path, source, "VALUE = 2\n")
    (tmp_path / "test_v.py").write_text(TEST_READS_VALUE)
    handed = _child(tmp_path, ChildStart(RUN, env={"WANT": "2"}, bytecode=table))
    own = _child(tmp_path, ChildStart(RUN, env={"WANT": "1"}))
    assert handed.returncode == 0, handed.stdout + handed.stderr
    assert "VALUE 2" in handed.stdout
    assert own.returncode == 0 and "VALUE 1" in own.stdout, own.stdout + own.stderr


def test_a_source_changed_since_the_hand_over_is_compiled_by_the_child(tmp_path):
    source = _module(tmp_path, "VALUE = 1\n")
    table = _forged(tmp_path, source, "VALUE = 2\n")
    source.write_text("VALUE = 33\n")  # another size: the header no longer matches
    assert handed_code(table[str(source)], str(source)) is None
    (tmp_path / "test_v.py").write_text(TEST_READS_VALUE)
    result = _child(tmp_path, ChildStart(RUN, env={"WANT": "33"}, bytecode=table))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "VALUE 33" in result.stdout


def test_the_start_files_arguments_come_after_the_command_lines(tmp_path):
    (tmp_path / "test_f.py").write_text("def test_ok(): pass\ndef test_bad(): assert 0\n")
    result = _child(tmp_path, ChildStart(("test_f.py::test_bad",)), "-q", "-p", "no:cacheprovider")
    assert result.returncode == 1  # pytest's own exit status
    assert "1 failed" in result.stdout and "passed" not in result.stdout


def test_without_its_start_file_the_child_runs_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_START, str(tmp_path / "never.json"))
    monkeypatch.setattr(child_start, "START_WAIT_S", 0.2)
    ran = []
    monkeypatch.setattr(child_start.runpy, "run_module", lambda *a, **k: ran.append(a))
    with pytest.raises(SystemExit) as exit_info:
        child_start.main()
    assert exit_info.value.code == 3 and ran == []


def test_the_child_waits_for_a_start_file_written_late_and_not_for_ever(tmp_path, monkeypatch):
    from pytest_inferperf.measure import child_process

    # this process stands for the child: its parent named itself, as the parent does
    monkeypatch.setenv(child_process.ENV_PARENT, str(os.getppid()))
    path = tmp_path / "start.json"
    start = ChildStart(("-x", "t.py::a"), env={"A": "1"}, bytecode={"/x.py": "/f/0.pyc"})

    def write_late() -> None:
        time.sleep(0.3)
        write_start(path, start)

    writer = threading.Thread(target=write_late)
    writer.start()
    try:
        assert read_start(str(path), wait_s=30) == start
    finally:
        writer.join()
    began = time.monotonic()
    assert read_start(str(tmp_path / "never.json"), wait_s=0.2) is None
    assert time.monotonic() - began < 5
    (tmp_path / "bad.json").write_text("[1, 2]")
    assert read_start(str(tmp_path / "bad.json"), wait_s=0) is None


def test_the_parent_hands_over_only_what_lacks_valid_cached_bytecode(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    cached = tmp_path / "cached_mod.py"
    cached.write_text("A = 1\n")
    import py_compile

    py_compile.compile(str(cached), doraise=True)
    fresh = _module(tmp_path, "VALUE = 5\n")
    assert cache_is_valid(str(cached)) and not cache_is_valid(str(fresh))
    handoff = BytecodeHandoff()
    try:
        table = handoff.table([str(cached), str(fresh), str(tmp_path / "gone.py")])
        assert list(table) == [str(fresh)]
        namespace: dict = {}
        exec(handed_code(table[str(fresh)], str(fresh)), namespace)
        assert namespace["VALUE"] == 5
        assert handoff.table([str(fresh)]) == table  # a later child: the same file
        folder = handoff.folder
    finally:
        handoff.close()
    assert folder is not None and not folder.exists()


def test_a_file_that_does_not_compile_is_left_to_the_child(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def broken(:\n")
    assert compiled(str(bad)) is None


def test_module_sources_are_the_py_files_modules_came_from():
    import json as json_module

    sources = module_sources({"json": json_module, "sys": sys, "__main__": sys.modules[__name__]})
    assert sources == [json_module.__spec__.origin]


def test_a_child_whose_parent_is_pid_1_waits_for_it(tmp_path, monkeypatch):
    """pytest as a container's entry point is pid 1: its simulation child must not read
    that as orphaned when the parent said who it is; without that, pid 1 still is."""
    from pytest_inferperf.measure import child_process

    path = tmp_path / "start.json"
    start = ChildStart(("-x", "t.py::a"))
    write_start(path, start)
    monkeypatch.setattr(os, "getppid", lambda: 1)
    monkeypatch.delenv(child_process.ENV_PARENT, raising=False)
    late = tmp_path / "late.json"
    assert read_start(str(late), wait_s=30) is None  # no parent named, pid 1: orphaned
    monkeypatch.setenv(child_process.ENV_PARENT, "1")

    def write_late() -> None:
        time.sleep(0.3)
        write_start(late, start)

    writer = threading.Thread(target=write_late)
    writer.start()
    try:
        assert read_start(str(late), wait_s=30) == start
    finally:
        writer.join()
    monkeypatch.setenv(child_process.ENV_PARENT, "4242")  # the parent it named is gone
    assert read_start(str(tmp_path / "never.json"), wait_s=30) is None
    assert child_process.start_env("/s.json") == {
        child_process.ENV_START: "/s.json",
        child_process.ENV_PARENT: str(os.getpid()),
    }
