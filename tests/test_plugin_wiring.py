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
