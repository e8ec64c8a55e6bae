"""Bytecode the parent hands to its simulation children (pytest_inferperf.child_bytecode).

Natively, in subprocesses (the hand-over happens at interpreter start-up): the child
loads a handed-over file only while its header matches the source as it is, compiles
for itself otherwise, waits for a manifest the parent writes late, and runs pytest
with its command line and exit status. Through valgrind, every shared child of the
slow tests in tests/test_simulate_shared.py starts this way.
"""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from pytest_inferperf.child_bytecode import (
    BytecodeHandoff,
    cache_is_valid,
    compiled,
    handed_code,
    module_sources,
    pyc_header,
    read_manifest,
)
from pytest_inferperf.child_process import ENV_BYTECODE


def _child(tmp_path: Path, manifest: str | None, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if manifest is not None:
        env[ENV_BYTECODE] = manifest
    return subprocess.run(
        [sys.executable, "-m", "pytest_inferperf.child_bytecode", *args],
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


def _forged_manifest(tmp_path: Path, source: Path, text: str) -> str:
    """A hand-over of ``source`` whose code is ``text``'s but whose header is
    ``source``'s: what the child imports shows which of the two it loaded."""
    loader_code = compile(text, str(source), "exec", dont_inherit=True)
    (tmp_path / "0.pyc").write_bytes(pyc_header(source.stat()) + marshal.dumps(loader_code))
    manifest = tmp_path / "manifest-1.json"
    manifest.write_text(json.dumps({str(source): "0.pyc"}))
    return str(manifest)


TEST_READS_VALUE = (
    "import handed_mod\n"
    "def test_value():\n"
    "    print('VALUE', handed_mod.VALUE)\n"
    "    assert handed_mod.VALUE == int(__import__('os').environ.get('WANT', '0'))\n"
)


def test_the_child_loads_the_handed_over_code_while_the_source_is_unchanged(tmp_path):
    source = _module(tmp_path, "VALUE = 1\n")
    manifest = _forged_manifest(tmp_path, source, "VALUE = 2\n")
    (tmp_path / "test_v.py").write_text(TEST_READS_VALUE)
    os.environ["WANT"] = "2"
    try:
        handed = _child(tmp_path, manifest, "-q", "-s", "-p", "no:cacheprovider", "test_v.py")
        os.environ["WANT"] = "1"
        own = _child(tmp_path, None, "-q", "-s", "-p", "no:cacheprovider", "test_v.py")
    finally:
        os.environ.pop("WANT", None)
    assert handed.returncode == 0, handed.stdout + handed.stderr
    assert "VALUE 2" in handed.stdout
    assert own.returncode == 0 and "VALUE 1" in own.stdout


def test_a_source_changed_since_the_hand_over_is_compiled_by_the_child(tmp_path):
    source = _module(tmp_path, "VALUE = 1\n")
    manifest = _forged_manifest(tmp_path, source, "VALUE = 2\n")
    source.write_text("VALUE = 33\n")  # another size: the header no longer matches
    assert handed_code(str(tmp_path / "0.pyc"), str(source)) is None
    (tmp_path / "test_v.py").write_text(TEST_READS_VALUE)
    os.environ["WANT"] = "33"
    try:
        result = _child(tmp_path, manifest, "-q", "-s", "-p", "no:cacheprovider", "test_v.py")
    finally:
        os.environ.pop("WANT", None)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "VALUE 33" in result.stdout


def test_the_entry_point_runs_pytest_with_its_line_and_exit_status(tmp_path):
    (tmp_path / "test_f.py").write_text("def test_ok(): pass\ndef test_bad(): assert 0\n")
    result = _child(tmp_path, None, "-q", "-p", "no:cacheprovider", "test_f.py::test_bad")
    assert result.returncode == 1
    assert "1 failed" in result.stdout and "passed" not in result.stdout


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
        manifest = handoff.reserve()
        assert manifest is not None
        listed = handoff.publish(manifest, [str(cached), str(fresh), str(tmp_path / "gone.py")])
        table = read_manifest(manifest, wait_s=0)
        assert listed == 1 and list(table) == [str(fresh)]
        namespace: dict = {}
        exec(handed_code(table[str(fresh)], str(fresh)), namespace)
        assert namespace["VALUE"] == 5
        second = handoff.reserve()  # a later child: the same files, a manifest of its own
        assert second != manifest and handoff.publish(second, [str(fresh)]) == 1
        folder = handoff.folder
    finally:
        handoff.close()
    assert folder is not None and not folder.exists()


def test_a_file_that_does_not_compile_is_left_to_the_child(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def broken(:\n")
    assert compiled(str(bad)) is None


def test_the_child_waits_for_a_manifest_written_late_and_not_for_ever(tmp_path):
    manifest = tmp_path / "manifest-1.json"

    def write_late() -> None:
        time.sleep(0.3)
        (tmp_path / "manifest-1.json.partial").write_text(json.dumps({"/x.py": "0.pyc"}))
        os.replace(tmp_path / "manifest-1.json.partial", manifest)

    writer = threading.Thread(target=write_late)
    writer.start()
    try:
        assert read_manifest(str(manifest), wait_s=30) == {"/x.py": str(tmp_path / "0.pyc")}
    finally:
        writer.join()
    began = time.monotonic()
    assert read_manifest(str(tmp_path / "never.json"), wait_s=0.2) == {}
    assert time.monotonic() - began < 5


def test_module_sources_are_the_py_files_modules_came_from():
    import json as json_module

    sources = module_sources({"json": json_module, "sys": sys, "__main__": sys.modules[__name__]})
    assert sources == [json_module.__spec__.origin]
