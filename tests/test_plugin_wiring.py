"""What the plugin package hands to the engine, tested without a pytest run.

The plugin only wires pytest to the engine; the engine functions it calls (CPU
facts, report file names, the baseline write pass, the flamegraph pass, the hook
registry, the worker -> controller record) are unit-tested here.
"""

from __future__ import annotations

from pathlib import Path

from pytest_inferperf.pmu.cpu import SystemPaths, physical_cores


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
