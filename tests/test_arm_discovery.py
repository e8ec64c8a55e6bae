"""Arm PMU discovery and CPU identification against fixture trees.

The trees come from ``sysfs_trees`` (built from ARM-software/data, see
``tests/fixtures/arm_pmu``), so each expectation below follows from the
public per-core event lists, not from this machine.
"""

from __future__ import annotations

import pytest
from sysfs_trees import build_arm_tree, build_x86_tree, remove_midr

from pytest_inferperf.pmu.cpu import SystemPaths, identify
from pytest_inferperf.pmu.events import DEFAULT_EVENTS, resolve

STALLS = ("stall_frontend", "stall_backend")
TOPDOWN = ("stall_slot", "stall_slot_frontend", "stall_slot_backend", "op_retired", "op_spec")


def arm(tmp_path, cores, **kwargs):
    return identify(SystemPaths(build_arm_tree(tmp_path, cores, **kwargs)))


def test_cortex_a72_raspberry_pi_4(tmp_path):
    cpu = arm(tmp_path, [("cortex-a72", 4)], revision=3)
    assert cpu.machine_class == "arm64-cortex-a72"
    assert cpu.core == "Cortex-A72"
    assert cpu.midr == "0x410fd083"
    assert cpu.cpu_count == 4
    assert [p.name for p in cpu.pmus] == ["armv8_cortex_a72"]
    res = resolve(DEFAULT_EVENTS, cpu)
    cycles = res.events["cycles"][0]
    assert (cycles.pmu, cycles.type, cycles.config) == ("armv8_cortex_a72", 8, 0x11)
    assert res.events["instructions"][0].config == 0x08
    assert res.events["l2_refill"][0].config == 0x17
    # A72 implements nothing in 0x20-0x3F: no stall, walk, LL or slot events.
    for name in (*STALLS, *TOPDOWN, "dtlb_walk", "itlb_walk", "llc_read", "llc_miss"):
        assert name not in res.events
        assert res.unavailable[name].startswith("not implemented on Cortex-A72")
        assert "armv8_cortex_a72 lists no" in res.unavailable[name]
    assert "STALL_FRONTEND (0x23)" in res.unavailable["stall_frontend"]
    # Branches fall back to the predicted pair since BR_RETIRED (0x21) is absent.
    assert res.events["branches"][0].config == 0x12
    assert res.events["branch_misses"][0].config == 0x10


def test_neoverse_n1_graviton2_acpi(tmp_path):
    cpu = arm(tmp_path, [("neoverse-n1", 8)], pmu_naming="acpi", variant=3, revision=1)
    assert cpu.machine_class == "arm64-neoverse-n1"
    assert [p.name for p in cpu.pmus] == ["armv8_pmuv3_0"]
    res = resolve(DEFAULT_EVENTS, cpu)
    assert res.events["stall_frontend"][0].config == 0x23
    assert res.events["stall_backend"][0].config == 0x24
    assert res.events["dtlb_walk"][0].config == 0x34
    assert res.events["llc_miss"][0].config == 0x37
    assert res.events["branches"][0].config == 0x21  # BR_RETIRED pair preferred
    assert res.events["branch_misses"][0].config == 0x22
    for name in TOPDOWN:
        assert res.unavailable[name].startswith("not implemented on Neoverse N1")


def test_neoverse_v2_graviton4_has_topdown(tmp_path):
    cpu = arm(tmp_path, [("neoverse-v2", 4)], pmu_naming="acpi")
    assert cpu.machine_class == "arm64-neoverse-v2"
    assert cpu.pmus[0].slots == 8
    res = resolve(DEFAULT_EVENTS, cpu)
    assert {n: res.events[n][0].config for n in TOPDOWN} == {
        "stall_slot": 0x3F,
        "stall_slot_frontend": 0x3E,
        "stall_slot_backend": 0x3D,
        "op_retired": 0x3A,
        "op_spec": 0x3B,
    }
    assert res.events["stall_backend_mem"][0].config == 0x4005
    assert "l2_refill" in res.events


def test_azure_cobalt_100_is_its_own_class(tmp_path):
    cpu = arm(tmp_path, [("neoverse-n2", 4)], implementer=0x6D)
    assert cpu.machine_class == "arm64-azure-cobalt-100"
    assert cpu.pmus[0].slots == 5


def test_big_little_reports_one_pmu_per_core_type(tmp_path):
    cpu = arm(tmp_path, [("cortex-a55", 4), ("cortex-a76", 4)])
    assert cpu.core_types == ("Cortex-A55", "Cortex-A76")
    assert cpu.machine_class == "arm64-cortex-a55+cortex-a76"
    assert {p.name: p.cpus for p in cpu.pmus} == {
        "armv8_cortex_a55": (0, 1, 2, 3),
        "armv8_cortex_a76": (4, 5, 6, 7),
    }
    res = resolve(["cycles"], cpu)
    assert [(e.pmu, e.type) for e in res.events["cycles"]] == [
        ("armv8_cortex_a55", 8),
        ("armv8_cortex_a76", 9),
    ]


def test_midr_falls_back_to_proc_cpuinfo(tmp_path):
    root = build_arm_tree(tmp_path, [("neoverse-n1", 2)], revision=1)
    remove_midr(root)
    cpu = identify(SystemPaths(root))
    assert cpu.machine_class == "arm64-neoverse-n1"
    assert cpu.midr == "0x410fd0c1"


def test_arm_vm_without_pmu_says_no_pmu_exposed(tmp_path):
    root = build_arm_tree(tmp_path, [("neoverse-n1", 2)])
    for dev in (root / "sys/bus/event_source/devices").glob("armv8_*"):
        for f in sorted(dev.rglob("*"), reverse=True):
            f.rmdir() if f.is_dir() else f.unlink()
        dev.rmdir()
    cpu = identify(SystemPaths(root))
    res = resolve(["cycles", "task_clock"], cpu)
    assert res.unavailable["cycles"].startswith("no PMU exposed")
    assert "task_clock" in res.events


def test_caches_and_paranoid_come_from_the_tree(tmp_path):
    cpu = arm(tmp_path, [("cortex-a72", 4)], paranoid=3)
    assert cpu.paranoid == 3
    sizes = {c.label: c.size_bytes for c in cpu.caches}
    assert sizes["L1d"] == 32 * 1024 and sizes["L1i"] == 48 * 1024
    assert sizes["L2"] == 1024 * 1024


@pytest.mark.parametrize(
    ("vendor", "family", "model", "name", "expected"),
    [
        ("AuthenticAMD", 0x19, 0x01, "AMD EPYC 7R13 Processor", "x86_64-amd-epyc-zen3"),
        ("AuthenticAMD", 0x19, 0x11, "AMD EPYC 9R14 Processor", "x86_64-amd-epyc-zen4"),
        ("AuthenticAMD", 0x17, 0x31, "AMD EPYC 7R32", "x86_64-amd-epyc-zen2"),
        ("AuthenticAMD", 0x1A, 0x02, "AMD EPYC 9R45", "x86_64-amd-epyc-zen5"),
        (
            "GenuineIntel",
            6,
            0x8F,
            "Intel(R) Xeon(R) Platinum 8488C",
            "x86_64-intel-xeon-sapphirerapids",
        ),
        (
            "GenuineIntel",
            6,
            0x55,
            "Intel(R) Xeon(R) Platinum 8175M CPU",
            "x86_64-intel-xeon-skylake-x",
        ),
    ],
)
def test_x86_machine_classes(tmp_path, vendor, family, model, name, expected):
    root = build_x86_tree(tmp_path, vendor=vendor, family=family, model=model, model_name=name)
    assert identify(SystemPaths(root)).machine_class == expected


def test_x86_generic_mapping(tmp_path):
    root = build_x86_tree(
        tmp_path, vendor="GenuineIntel", family=6, model=0x8F, model_name="Intel(R) Xeon(R)"
    )
    res = resolve(DEFAULT_EVENTS, identify(SystemPaths(root)))

    def enc(name):
        e = res.events[name][0]
        return e.type, e.config

    assert enc("cycles") == (0, 0) and enc("instructions") == (0, 1)
    assert enc("branches") == (0, 4) and enc("branch_misses") == (0, 5)
    assert enc("l1d_access") == (3, 0x0) and enc("l1d_refill") == (3, 0x10000)
    assert enc("l1i_refill") == (3, 0x10001)
    assert enc("llc_read") == (3, 0x2) and enc("llc_miss") == (3, 0x10002)
    assert enc("dtlb_walk") == (3, 0x10003) and enc("itlb_walk") == (3, 0x10004)
    assert enc("stall_frontend") == (0, 7)
    assert res.unavailable["l2_refill"].startswith("no generic x86 event")
    assert enc("task_clock") == (1, 1) and enc("page_faults") == (1, 2)


def test_machine_class_never_contains_host_or_frequency(tmp_path):
    root = build_x86_tree(
        tmp_path,
        vendor="AuthenticAMD",
        family=0x19,
        model=1,
        model_name="AMD EPYC 7R13 Processor @ 2.65GHz",
    )
    cls = identify(SystemPaths(root)).machine_class
    assert "ghz" not in cls.lower() and "2.65" not in cls
