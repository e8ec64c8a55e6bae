"""Tests of the fake sysfs/procfs trees in ``sysfs_trees`` and their Arm PMU fixtures."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sysfs_trees import (
    CORES,
    FIXTURES,
    build_arm_tree,
    build_x86_tree,
    load_core,
    midr,
    remove_midr,
)

DEVICES = "sys/bus/event_source/devices"
CPU_DIR = "sys/devices/system/cpu"

# Arm PMUv3 common event codes: Linux tools/perf/pmu-events/arch/arm64/
# common-and-microarch.json and recommended.json (as tabled in reference/README.md).
COMMON_CODES: dict[str, int] = {
    "CPU_CYCLES": 0x11,
    "INST_RETIRED": 0x08,
    "INST_SPEC": 0x1B,
    "L1D_CACHE": 0x04,
    "L1D_CACHE_REFILL": 0x03,
    "L1I_CACHE": 0x14,
    "L1I_CACHE_REFILL": 0x01,
    "L2D_CACHE": 0x16,
    "L2D_CACHE_REFILL": 0x17,
    "L3D_CACHE": 0x2B,
    "L3D_CACHE_REFILL": 0x2A,
    "LL_CACHE_RD": 0x36,
    "LL_CACHE_MISS_RD": 0x37,
    "L1D_TLB_REFILL": 0x05,
    "L1I_TLB_REFILL": 0x02,
    "L1D_TLB": 0x25,
    "L1I_TLB": 0x26,
    "L2D_TLB_REFILL": 0x2D,
    "L2D_TLB": 0x2F,
    "DTLB_WALK": 0x34,
    "ITLB_WALK": 0x35,
    "BR_MIS_PRED": 0x10,
    "BR_PRED": 0x12,
    "BR_RETIRED": 0x21,
    "BR_MIS_PRED_RETIRED": 0x22,
    "STALL_FRONTEND": 0x23,
    "STALL_BACKEND": 0x24,
    "STALL": 0x3C,
    "STALL_SLOT_BACKEND": 0x3D,
    "STALL_SLOT_FRONTEND": 0x3E,
    "STALL_SLOT": 0x3F,
    "OP_RETIRED": 0x3A,
    "OP_SPEC": 0x3B,
    "MEM_ACCESS": 0x13,
    "BUS_ACCESS": 0x19,
    "STALL_BACKEND_MEM": 0x4005,
}

# MIDR implementer/part per core (reference/README.md "CPU identification").
MIDR_PARTS: dict[str, tuple[int, int]] = {
    "cortex-a53": (0x41, 0xD03),
    "cortex-a55": (0x41, 0xD05),
    "cortex-a72": (0x41, 0xD08),
    "cortex-a76": (0x41, 0xD0B),
    "cortex-x1": (0x41, 0xD44),
    "neoverse-n1": (0x41, 0xD0C),
    "neoverse-n2": (0x41, 0xD49),
    "neoverse-v1": (0x41, 0xD40),
    "neoverse-v2": (0x41, 0xD4F),
    "neoverse-v3": (0x41, 0xD84),
}


def events_of(root: Path, pmu: str) -> dict[str, int]:
    """Parse ``events/*`` of ``pmu`` the way a reader would: name -> code."""
    out = {}
    for path in (root / DEVICES / pmu / "events").iterdir():
        match = re.fullmatch(r"event=0x([0-9a-f]{4})\n", path.read_text())
        assert match, path
        out[path.name] = int(match.group(1), 16)
    return out


def cpuinfo_blocks(root: Path) -> list[dict[str, str]]:
    """Split ``proc/cpuinfo`` into per-processor ``{key: value}`` dicts."""
    blocks = []
    for block in (root / "proc/cpuinfo").read_text().split("\n\n"):
        if block.strip():
            pairs = (line.split(":", 1) for line in block.splitlines())
            blocks.append({k.strip(): v.strip() for k, v in pairs})
    return blocks


def test_fixture_list_and_license() -> None:
    assert set(CORES) == set(MIDR_PARTS)
    assert "Apache License" in (FIXTURES / "LICENSE").read_text()
    notice = (FIXTURES / "NOTICE").read_text()
    assert "ARM-software/data" in notice and notice.count("\n") == 1


@pytest.mark.parametrize("core", sorted(MIDR_PARTS))
def test_fixture_shape(core: str) -> None:
    fx = load_core(core)
    assert fx["source"] == f"ARM-software/data pmu/{core}.json (Apache-2.0)"
    assert (fx["implementer"], fx["part"]) == MIDR_PARTS[core]
    assert int(fx["cpuid"], 16) == fx["implementer"] << 12 | fx["part"]
    assert fx["counters"] in (None, 6)
    codes = list(fx["events"].values())
    assert len(codes) == len(set(codes))
    assert all(c < 0x40 or 0x4000 <= c < 0x4040 for c in codes)
    assert "CHAIN" not in fx["events"]  # arm_pmuv3.c never exposes 0x1E
    for name, code in fx["events"].items():
        if name in COMMON_CODES:
            assert code == COMMON_CODES[name], name
    for required in ("CPU_CYCLES", "INST_RETIRED", "L1D_CACHE_REFILL", "BR_MIS_PRED"):
        assert required in fx["events"]


def test_unknown_core() -> None:
    with pytest.raises(ValueError, match="no Arm PMU fixture"):
        load_core("cortex-a999")


def test_a72_tree_has_nothing_in_0x20_0x3f(tmp_path: Path) -> None:
    root = build_arm_tree(tmp_path, [("cortex-a72", 4)])
    events = events_of(root, "armv8_cortex_a72")
    assert not [c for c in events.values() if 0x20 <= c <= 0x3F]
    for absent in (
        "stall_frontend",
        "stall_backend",
        "br_retired",
        "dtlb_walk",
        "ll_cache_miss_rd",
    ):
        assert absent not in events
    assert events["cpu_cycles"] == 0x11
    assert (root / DEVICES / "armv8_cortex_a72/events/cpu_cycles").read_text() == "event=0x0011\n"
    assert events["l1d_cache_refill"] == 0x03
    assert events["br_mis_pred"] == 0x10
    assert (root / DEVICES / "armv8_cortex_a72/caps/slots").read_text() == "0x00000000\n"


def test_n1_tree_has_cycle_accounting_not_slots(tmp_path: Path) -> None:
    root = build_arm_tree(tmp_path, [("neoverse-n1", 2)], pmu_naming="acpi")
    events = events_of(root, "armv8_pmuv3_0")
    for present in ("stall_frontend", "stall_backend", "dtlb_walk", "ll_cache_miss_rd"):
        assert present in events
    for absent in ("stall_slot", "stall_slot_backend", "op_retired", "op_spec"):
        assert absent not in events
    assert events["br_mis_pred_retired"] == 0x22


def test_v2_tree_has_topdown_events(tmp_path: Path) -> None:
    root = build_arm_tree(tmp_path, [("neoverse-v2", 2)])
    events = events_of(root, "armv8_neoverse_v2")
    assert events["stall_slot_frontend"] == 0x3E
    assert events["stall_slot_backend"] == 0x3D
    assert events["op_retired"] == 0x3A
    assert events["op_spec"] == 0x3B
    assert events["stall_backend_mem"] == 0x4005
    pmu = root / DEVICES / "armv8_neoverse_v2"
    assert (pmu / "events/stall_backend_mem").read_text() == "event=0x4005\n"
    assert (pmu / "caps/slots").read_text() == "0x00000008\n"
    assert (pmu / "format/event").read_text() == "config:0-15\n"


@pytest.mark.parametrize(("core", "slots"), [("neoverse-n2", 5), ("neoverse-v1", 8)])
def test_default_and_overridden_slots(tmp_path: Path, core: str, slots: int) -> None:
    pmu = f"armv8_{core.replace('-', '_')}"
    build_arm_tree(tmp_path / "a", [(core, 1)])
    assert (tmp_path / "a" / DEVICES / pmu / "caps/slots").read_text() == f"0x{slots:08x}\n"
    build_arm_tree(tmp_path / "b", [(core, 1)], slots=0)
    assert (tmp_path / "b" / DEVICES / pmu / "caps/slots").read_text() == "0x00000000\n"


def test_midr_decodes_back(tmp_path: Path) -> None:
    root = build_arm_tree(tmp_path, [("cortex-a72", 4)], variant=0, revision=3)
    text = (root / CPU_DIR / "cpu3/regs/identification/midr_el1").read_text()
    assert re.fullmatch(r"0x[0-9a-f]{16}\n", text)
    value = int(text, 16)
    assert value == 0x410FD083  # Raspberry Pi 4: Cortex-A72 r0p3
    assert (value >> 24 & 0xFF, value >> 4 & 0xFFF, value & 0xF) == (0x41, 0xD08, 3)


def test_implementer_override_cobalt(tmp_path: Path) -> None:
    root = build_arm_tree(tmp_path, [("neoverse-n2", 2)], implementer=0x6D, pmu_naming="acpi")
    value = int((root / CPU_DIR / "cpu0/regs/identification/midr_el1").read_text(), 16)
    assert (value >> 24, value >> 4 & 0xFFF) == (0x6D, 0xD49)
    info = cpuinfo_blocks(root)
    assert [b["CPU implementer"] for b in info] == ["0x6d", "0x6d"]
    assert info[0]["CPU part"] == "0xd49"


@given(
    implementer=st.integers(0, 0xFF),
    part=st.integers(0, 0xFFF),
    variant=st.integers(0, 0xF),
    revision=st.integers(0, 0xF),
)
def test_midr_fields_roundtrip(implementer: int, part: int, variant: int, revision: int) -> None:
    value = midr(implementer, part, variant, revision)
    assert value >> 24 == implementer
    assert value >> 20 & 0xF == variant
    assert value >> 16 & 0xF == 0xF
    assert value >> 4 & 0xFFF == part
    assert value & 0xF == revision


def test_cpuinfo_arm64_format(tmp_path: Path) -> None:
    root = build_arm_tree(tmp_path, [("cortex-a72", 2)], variant=1, revision=3)
    text = (root / "proc/cpuinfo").read_text()
    assert (
        "processor\t: 1\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm crc32 cpuid\n"
        "CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x1\n"
        "CPU part\t: 0xd08\nCPU revision\t: 3\n\n"
    ) in text
    assert text.endswith("\n\n")
    assert [b["processor"] for b in cpuinfo_blocks(root)] == ["0", "1"]


def test_remove_midr_leaves_cpuinfo(tmp_path: Path) -> None:
    root = build_arm_tree(tmp_path, [("neoverse-v1", 3)])
    remove_midr(root)
    assert not list((root / CPU_DIR).glob("cpu*/regs/identification/midr_el1"))
    assert len(cpuinfo_blocks(root)) == 3


def test_big_little_two_pmus_disjoint_cpus(tmp_path: Path) -> None:
    root = build_arm_tree(tmp_path, [("cortex-a55", 4), ("cortex-a76", 4)])
    little, big = root / DEVICES / "armv8_cortex_a55", root / DEVICES / "armv8_cortex_a76"
    assert (little / "type").read_text() == "8\n"
    assert (big / "type").read_text() == "9\n"
    assert (little / "cpus").read_text() == "0-3\n"
    assert (big / "cpus").read_text() == "4-7\n"
    assert (root / CPU_DIR / "online").read_text() == "0-7\n"
    assert (root / CPU_DIR / "possible").read_text() == "0-7\n"
    parts = [b["CPU part"] for b in cpuinfo_blocks(root)]
    assert parts == ["0xd05"] * 4 + ["0xd0b"] * 4
    assert (
        int((root / CPU_DIR / "cpu5/regs/identification/midr_el1").read_text(), 16) >> 4 & (0xFFF)
        == 0xD0B
    )


def test_acpi_naming_and_fixed_pmus(tmp_path: Path) -> None:
    root = build_arm_tree(tmp_path, [("cortex-a55", 2), ("cortex-x1", 1)], pmu_naming="acpi")
    names = sorted(p.name for p in (root / DEVICES).iterdir())
    assert names == ["armv8_pmuv3_0", "armv8_pmuv3_1", "breakpoint", "software", "tracepoint"]
    assert (root / DEVICES / "armv8_pmuv3_1/cpus").read_text() == "2\n"
    assert (root / DEVICES / "software/type").read_text() == "1\n"
    assert (root / DEVICES / "tracepoint/type").read_text() == "2\n"
    assert (root / DEVICES / "breakpoint/type").read_text() == "5\n"
    with pytest.raises(ValueError, match="pmu_naming"):
        build_arm_tree(tmp_path / "bad", [("cortex-a55", 1)], pmu_naming="of")


def test_arm_caches_and_paranoid(tmp_path: Path) -> None:
    root = build_arm_tree(tmp_path / "pi", [("cortex-a72", 4)], paranoid=3)
    cache = root / CPU_DIR / "cpu0/cache"
    read = {
        d.name: tuple((d / f).read_text().strip() for f in ("level", "type", "size"))
        for d in cache.iterdir()
    }
    assert read == {
        "index0": ("1", "Data", "32K"),
        "index1": ("1", "Instruction", "48K"),
        "index2": ("2", "Unified", "1024K"),
    }
    assert (root / "proc/sys/kernel/perf_event_paranoid").read_text() == "3\n"

    root = build_arm_tree(tmp_path / "g2", [("neoverse-n1", 1)], cache={"L2": 512, "L3": None})
    cache = root / CPU_DIR / "cpu0/cache"
    assert sorted(d.name for d in cache.iterdir()) == ["index0", "index1", "index2"]
    assert (cache / "index2/size").read_text() == "512K\n"
    root = build_arm_tree(tmp_path / "g3", [("neoverse-v1", 1)])
    assert (root / CPU_DIR / "cpu0/cache/index3/size").read_text() == "32768K\n"


@pytest.mark.parametrize("vendor", ["GenuineIntel", "AuthenticAMD"])
def test_x86_tree(tmp_path: Path, vendor: str) -> None:
    root = build_x86_tree(
        tmp_path, vendor=vendor, family=25, model=17, model_name="AMD EPYC 9R14", cpus=4
    )
    assert (root / DEVICES / "cpu/type").read_text() == "4\n"
    assert (root / DEVICES / "software/type").read_text() == "1\n"
    info = cpuinfo_blocks(root)
    assert len(info) == 4
    assert info[0]["vendor_id"] == vendor
    assert (info[0]["cpu family"], info[0]["model"]) == ("25", "17")
    assert info[3]["model name"] == "AMD EPYC 9R14"
    assert "\nmodel\t\t: 17\n" in (root / "proc/cpuinfo").read_text()
    assert (root / CPU_DIR / "online").read_text() == "0-3\n"
    assert (root / CPU_DIR / "cpu3/cache/index3/level").read_text() == "3\n"
    assert (root / "proc/sys/kernel/perf_event_paranoid").read_text() == "2\n"
    assert not list(root.glob("sys/devices/system/cpu/cpu*/regs"))


def test_x86_tree_without_pmu(tmp_path: Path) -> None:
    root = build_x86_tree(
        tmp_path,
        vendor="GenuineIntel",
        family=6,
        model=143,
        model_name="Intel(R) Xeon(R) Platinum 8488C",
        with_cpu_pmu=False,
        paranoid=-1,
        cpus=1,
    )
    assert not (root / DEVICES / "cpu").exists()
    assert (root / DEVICES / "tracepoint/type").read_text() == "2\n"
    assert (root / CPU_DIR / "online").read_text() == "0\n"
    assert (root / "proc/sys/kernel/perf_event_paranoid").read_text() == "-1\n"


def test_generator_filter_matches_arm_pmuv3() -> None:
    spec = importlib.util.spec_from_file_location("make_fixtures", FIXTURES / "make_fixtures.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    visible = [
        c for c in (0x00, 0x11, 0x1E, 0x3F, 0x40, 0x4005, 0x403F, 0x4040) if mod.sysfs_visible(c)
    ]
    assert visible == [0x00, 0x11, 0x3F, 0x4005, 0x403F]
    fx = mod.reduce_core(
        "cortex-a72",
        {
            "cpu": "Cortex-A72",
            "cpuid": "0x41d08",
            "events": [
                {"code": 0x11, "name": "CPU_CYCLES"},
                {"code": 0x1E, "name": "CHAIN"},
                {"code": 0x40, "name": "L1D_CACHE_RD"},
                {"code": 0xC0},
            ],
        },
    )
    assert fx["events"] == {"CPU_CYCLES": 0x11}
    assert (fx["implementer"], fx["part"], fx["counters"]) == (0x41, 0xD08, None)
