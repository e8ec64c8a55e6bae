"""Fake Linux sysfs/procfs trees for testing PMU discovery without a PMU.

Tests import this as ``from sysfs_trees import ...`` (``tests`` on ``sys.path``).

Arm trees are built from the fixtures in ``tests/fixtures/arm_pmu/`` (reduced from
ARM-software/data ``pmu/*.json``, Apache-2.0, see ``make_fixtures.py``).  File formats
follow the Linux sources that print them:

* ``drivers/perf/arm_pmuv3.c``: ``events/<name>`` = ``"event=0x%04llx\\n"``,
  ``format/event`` = ``"config:0-15"``, ``caps/slots`` = ``"0x%08x\\n"`` of PMMIR_EL1.SLOTS
  (0 when the core has no PMMIR, i.e. before PMUv3.4).
* ``drivers/perf/arm_pmu.c`` / ``arm_pmu_acpi.c``: PMU names ``armv8_cortex_a72``
  (device tree) or ``armv8_pmuv3_0``, ``_1`` ... (ACPI, one per MIDR); ``cpus`` is a
  cpulist (``"0-3\\n"``).
* ``arch/arm64/kernel/cpuinfo.c``: ``regs/identification/midr_el1`` = ``"0x%016llx\\n"``
  and the ``/proc/cpuinfo`` lines of ``c_show``.
* ``drivers/base/cacheinfo.c``: ``cache/indexN/{level,type,size}`` (``"%uK\\n"``).
* ``arch/x86/kernel/cpu/proc.c``: x86 ``/proc/cpuinfo``; x86 registers its core PMU
  as ``cpu`` with type ``PERF_TYPE_RAW`` (4).
* ``include/uapi/linux/perf_event.h``: PERF_TYPE_SOFTWARE 1, PERF_TYPE_TRACEPOINT 2,
  PERF_TYPE_BREAKPOINT 5.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "arm_pmu"

#: Fixture stems available to :func:`load_core` / :func:`build_arm_tree`.
CORES: tuple[str, ...] = tuple(sorted(p.stem for p in FIXTURES.glob("*.json")))

#: First dynamic PMU type handed out to the Arm core PMUs (the brief's convention;
#: on real kernels the number is dynamic and must be read from ``type``).
FIRST_DYNAMIC_TYPE = 8

#: ``include/uapi/linux/perf_event.h`` fixed PMU types present on every kernel.
FIXED_PMU_TYPES: dict[str, int] = {"software": 1, "tracepoint": 2, "breakpoint": 5}

#: PMMIR_EL1.SLOTS per core (``caps/slots``); PMMIR exists from PMUv3.4 (Armv8.4) on, so
#: A53/A55/A72/A76/X1/N1 (Armv8.0-8.2) read 0.  V1 = 8, V2 = 8, N2 = 5 from Arm's
#: telemetry specifications (telemetry-solution ``product_configuration.num_slots``,
#: see reference/arm-topdown/); V3 = 8 is assumed equal to V2 (not in that data).
DEFAULT_SLOTS: dict[str, int] = {
    "neoverse-n2": 5,
    "neoverse-v1": 8,
    "neoverse-v2": 8,
    "neoverse-v3": 8,
}

# Cache sizes (KiB) per core: "L1d", "L1i", "L2" (per core), "L3" (shared; absent = no
# index3).  Sources, per entry:
#   cortex-a53: Cortex-A53 TRM (DDI 0500): L1 8-64K each, L2 128K-2M; 32K/32K/512K chosen.
#   cortex-a55: RK3588 datasheet: A55 32K/32K L1, 128K L2, 3M shared DSU L3.
#   cortex-a72: Raspberry Pi 4 (BCM2711) docs: 48K L1i, 32K L1d, 1M shared L2.
#   cortex-a76: RK3588 datasheet: A76 64K/64K L1, 512K L2, 3M shared DSU L3.
#   cortex-x1: Cortex-X1 TRM: 64K/64K L1, 512K or 1M L2; Snapdragon 888: 1M L2, 4M L3.
#   neoverse-n1: AWS Graviton2 (lscpu on c6g): 64K/64K L1, 1M L2, 32M LLC.
#   neoverse-n2: Neoverse N2 TRM: 64K/64K L1, 512K or 1M L2; 1M chosen, SoC L3 omitted.
#   neoverse-v1: AWS Graviton3 (lscpu on c7g): 64K/64K L1, 1M L2, 32M L3.
#   neoverse-v2: AWS Graviton4 (re:Invent 2023 launch): 64K/64K L1, 2M L2, 36M L3.
#   neoverse-v3: Neoverse V3 TRM: 64K/64K L1, 2M or 3M L2; 2M chosen, SoC L3 omitted.
DEFAULT_CACHE_KB: dict[str, dict[str, int]] = {
    "cortex-a53": {"L1d": 32, "L1i": 32, "L2": 512},
    "cortex-a55": {"L1d": 32, "L1i": 32, "L2": 128, "L3": 3072},
    "cortex-a72": {"L1d": 32, "L1i": 48, "L2": 1024},
    "cortex-a76": {"L1d": 64, "L1i": 64, "L2": 512, "L3": 3072},
    "cortex-x1": {"L1d": 64, "L1i": 64, "L2": 1024, "L3": 4096},
    "neoverse-n1": {"L1d": 64, "L1i": 64, "L2": 1024, "L3": 32768},
    "neoverse-n2": {"L1d": 64, "L1i": 64, "L2": 1024},
    "neoverse-v1": {"L1d": 64, "L1i": 64, "L2": 1024, "L3": 32768},
    "neoverse-v2": {"L1d": 64, "L1i": 64, "L2": 2048, "L3": 36864},
    "neoverse-v3": {"L1d": 64, "L1i": 64, "L2": 2048},
}

# x86 defaults: AMD EPYC 9004 "Genoa" (Zen 4) 32K/32K/1M, 32M L3 per CCD; Intel Xeon
# 4th gen "Sapphire Rapids" 48K L1d, 32K L1i, 2M L2, L3 1.875M/core (60M on 32 cores).
X86_CACHE_KB: dict[str, dict[str, int]] = {
    "AuthenticAMD": {"L1d": 32, "L1i": 32, "L2": 1024, "L3": 32768},
    "GenuineIntel": {"L1d": 48, "L1i": 32, "L2": 2048, "L3": 61440},
}

# /proc/cpuinfo "Features" (arm64 hwcap names, arch/arm64/kernel/cpuinfo.c hwcap_str):
# Raspberry Pi 4 prints the v8.0 list; Graviton2 (N1) the v8.2 list; Graviton3 (V1)
# adds SVE and friends, used here for every SVE core (N2/V1/V2/V3).
_V80 = "fp asimd evtstrm crc32 cpuid"
_V82 = (
    "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc"
    " dcpop asimddp"
)
_SVE = _V82 + (
    " sha3 sm3 sm4 asimdfhm dit uscat ilrcpc flagm ssbs sve paca pacg dcpodp svei8mm"
    " svebf16 i8mm bf16 dgh rng"
)
FEATURES: dict[str, str] = {
    "cortex-a53": _V80,
    "cortex-a72": _V80,
    "cortex-a55": _V82,
    "cortex-a76": _V82,
    "cortex-x1": _V82,
    "neoverse-n1": _V82 + " ssbs",
    "neoverse-n2": _SVE,
    "neoverse-v1": _SVE,
    "neoverse-v2": _SVE,
    "neoverse-v3": _SVE,
}

_CACHE_LAYOUT: tuple[tuple[str, int, str], ...] = (
    ("L1d", 1, "Data"),
    ("L1i", 1, "Instruction"),
    ("L2", 2, "Unified"),
    ("L3", 3, "Unified"),
)


def load_core(core: str) -> dict:
    """Return the fixture dict for ``core`` (e.g. ``"cortex-a72"``).

    Keys: ``source``, ``cpu``, ``cpuid``, ``implementer`` (int), ``part`` (int),
    ``counters`` (int or None), ``events`` (upper-case name -> code).
    """
    path = FIXTURES / f"{core}.json"
    if not path.is_file():
        raise ValueError(f"no Arm PMU fixture {core!r}; have {', '.join(CORES)}")
    return json.loads(path.read_text(encoding="utf-8"))


def midr(implementer: int, part: int, variant: int = 0, revision: int = 0) -> int:
    """MIDR_EL1 value: implementer[31:24] variant[23:20] arch=0xF[19:16] part[15:4] rev[3:0]."""
    return implementer << 24 | variant << 20 | 0xF << 16 | part << 4 | revision


def cpulist(first: int, count: int) -> str:
    """Kernel cpulist text for ``count`` consecutive CPUs from ``first`` (``"0-3\\n"``)."""
    last = first + count - 1
    return f"{first}\n" if count == 1 else f"{first}-{last}\n"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _write_common(root: Path, n_cpus: int, paranoid: int) -> None:
    """Fixed PMU types, ``online``/``possible`` and ``perf_event_paranoid``."""
    devices = root / "sys/bus/event_source/devices"
    for name, type_ in FIXED_PMU_TYPES.items():
        _write(devices / name / "type", f"{type_}\n")
    cpu_dir = root / "sys/devices/system/cpu"
    _write(cpu_dir / "online", cpulist(0, n_cpus))
    _write(cpu_dir / "possible", cpulist(0, n_cpus))
    _write(root / "proc/sys/kernel/perf_event_paranoid", f"{paranoid}\n")


def _write_caches(cpu_path: Path, sizes_kb: Mapping[str, int | None]) -> None:
    """``cache/indexN/{level,type,size}`` in ``drivers/base/cacheinfo.c`` format."""
    index = 0
    for key, level, kind in _CACHE_LAYOUT:
        size = sizes_kb.get(key)
        if not size:
            continue
        leaf = cpu_path / "cache" / f"index{index}"
        _write(leaf / "level", f"{level}\n")
        _write(leaf / "type", f"{kind}\n")
        _write(leaf / "size", f"{size}K\n")
        index += 1


def build_arm_tree(
    root: Path,
    cores: Sequence[tuple[str, int]],
    *,
    pmu_naming: str = "devicetree",
    variant: int = 0,
    revision: int = 0,
    implementer: int | None = None,
    paranoid: int = 2,
    slots: int | None = None,
    cache: Mapping[str, int | None] | None = None,
) -> Path:
    """Build an arm64 sysfs/procfs tree under ``root`` and return ``root``.

    ``cores`` lists ``(core, n_cpus)`` per core type, e.g. ``[("cortex-a72", 4)]`` or
    big.LITTLE ``[("cortex-a55", 4), ("cortex-a76", 4)]``; CPUs are numbered
    consecutively across core types and each core type gets one PMU (types 8, 9, ...).
    ``pmu_naming`` is ``"devicetree"`` (``armv8_cortex_a72``) or ``"acpi"``
    (``armv8_pmuv3_0``).  ``implementer`` overrides the fixture's (e.g. 0x6D for Azure
    Cobalt 100, an N2 part 0xd49); ``variant``/``revision`` go into every MIDR.
    ``slots`` overrides :data:`DEFAULT_SLOTS`; ``cache`` overrides
    :data:`DEFAULT_CACHE_KB` entries (KiB; ``{"L3": None}`` drops the L3) for all cores.
    """
    if pmu_naming not in ("devicetree", "acpi"):
        raise ValueError(f"pmu_naming must be 'devicetree' or 'acpi', not {pmu_naming!r}")
    devices = root / "sys/bus/event_source/devices"
    cpu_dir = root / "sys/devices/system/cpu"
    cpuinfo: list[str] = []
    first = 0
    for i, (core, n_cpus) in enumerate(cores):
        fx = load_core(core)
        dt_name = "armv8_" + core.replace("-", "_")
        pmu = devices / (dt_name if pmu_naming == "devicetree" else f"armv8_pmuv3_{i}")
        _write(pmu / "type", f"{FIRST_DYNAMIC_TYPE + i}\n")
        _write(pmu / "cpus", cpulist(first, n_cpus))
        _write(pmu / "format" / "event", "config:0-15\n")
        for event, code in fx["events"].items():
            _write(pmu / "events" / event.lower(), f"event=0x{code:04x}\n")
        n_slots = DEFAULT_SLOTS.get(core, 0) if slots is None else slots
        _write(pmu / "caps" / "slots", f"0x{n_slots:08x}\n")

        impl = fx["implementer"] if implementer is None else implementer
        value = midr(impl, fx["part"], variant, revision)
        sizes = {**DEFAULT_CACHE_KB[core], **(cache or {})}
        for cpu in range(first, first + n_cpus):
            cpu_path = cpu_dir / f"cpu{cpu}"
            _write(cpu_path / "regs/identification/midr_el1", f"0x{value:016x}\n")
            _write_caches(cpu_path, sizes)
            # arch/arm64/kernel/cpuinfo.c c_show(); BogoMIPS is 2 * timer MHz (25 MHz here).
            cpuinfo.append(
                f"processor\t: {cpu}\n"
                "BogoMIPS\t: 50.00\n"
                f"Features\t: {FEATURES[core]}\n"
                f"CPU implementer\t: 0x{impl:02x}\n"
                "CPU architecture: 8\n"
                f"CPU variant\t: 0x{variant:x}\n"
                f"CPU part\t: 0x{fx['part']:03x}\n"
                f"CPU revision\t: {revision}\n\n"
            )
        first += n_cpus
    _write(root / "proc/cpuinfo", "".join(cpuinfo))
    _write_common(root, first, paranoid)
    return root


def build_x86_tree(
    root: Path,
    *,
    vendor: str = "AuthenticAMD",
    family: int,
    model: int,
    model_name: str,
    cpus: int = 2,
    with_cpu_pmu: bool = True,
    paranoid: int = 2,
) -> Path:
    """Build an x86-64 sysfs/procfs tree under ``root`` and return ``root``.

    ``vendor`` is ``"AuthenticAMD"`` (default) or ``"GenuineIntel"``.  ``with_cpu_pmu=False``
    models a VM without a virtual PMU (no ``devices/cpu``).
    """
    if vendor not in X86_CACHE_KB:
        raise ValueError(f"vendor must be one of {sorted(X86_CACHE_KB)}, not {vendor!r}")
    devices = root / "sys/bus/event_source/devices"
    if with_cpu_pmu:
        _write(devices / "cpu" / "type", "4\n")  # PERF_TYPE_RAW
    perf_flag = "arch_perfmon" if vendor == "GenuineIntel" else "perfctr_core"
    flags = (
        "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush "
        f"mmx fxsr sse sse2 ht syscall nx lm constant_tsc {perf_flag} pni ssse3 fma cx16 "
        "sse4_1 sse4_2 movbe popcnt aes xsave avx f16c rdrand hypervisor avx2 bmi1 bmi2"
    )
    sizes = X86_CACHE_KB[vendor]
    # "cache size" is the L3 on Intel and the L2 on AMD (cpuid 0x80000006 vs leaf 4).
    cache_size = sizes["L3"] if vendor == "GenuineIntel" else sizes["L2"]
    cpuinfo: list[str] = []
    for cpu in range(cpus):
        _write_caches(root / f"sys/devices/system/cpu/cpu{cpu}", sizes)
        # arch/x86/kernel/cpu/proc.c show_cpuinfo()
        cpuinfo.append(
            f"processor\t: {cpu}\n"
            f"vendor_id\t: {vendor}\n"
            f"cpu family\t: {family}\n"
            f"model\t\t: {model}\n"
            f"model name\t: {model_name}\n"
            "stepping\t: 1\n"
            "cpu MHz\t\t: 2400.000\n"
            f"cache size\t: {cache_size} KB\n"
            "physical id\t: 0\n"
            f"siblings\t: {cpus}\n"
            f"core id\t\t: {cpu}\n"
            f"cpu cores\t: {cpus}\n"
            f"apicid\t\t: {cpu}\n"
            f"initial apicid\t: {cpu}\n"
            "fpu\t\t: yes\n"
            "fpu_exception\t: yes\n"
            "cpuid level\t: 13\n"
            "wp\t\t: yes\n"
            f"flags\t\t: {flags}\n"
            "bogomips\t: 4800.00\n"
            "clflush size\t: 64\n"
            "cache_alignment\t: 64\n"
            "address sizes\t: 46 bits physical, 48 bits virtual\n"
            "power management:\n\n"
        )
    _write(root / "proc/cpuinfo", "".join(cpuinfo))
    _write_common(root, cpus, paranoid)
    return root


def remove_midr(root: Path) -> None:
    """Delete every ``midr_el1`` so readers must fall back to ``/proc/cpuinfo``."""
    for path in (root / "sys/devices/system/cpu").glob("cpu*/regs/identification/midr_el1"):
        path.unlink()
