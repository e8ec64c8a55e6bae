"""What CPU this is: architecture, core, caches, PMUs, and the machine class.

Owns: reading ``/proc/cpuinfo``, ``midr_el1``, cache and PMU folders in
sysfs, ``perf_event_paranoid``, the device tree's ``compatible``; counting
physical cores (SMT siblings once, from ``topology/core_cpus_list``); naming Arm
cores from their MIDR and x86 CPUs from family/model; recognising an
emulated machine (QEMU's virt board, implementer 0x00) from those files; the
stable **machine class** key that baselines are filed under (never the
hostname, never the frequency; ``+emulated`` for an emulated machine, so its
baselines never mix with real silicon's).

Must not: open counters. Reads only files, under an injectable root so
tests can hand it a fixture tree.

Arm part numbers: ARM-software/data ``pmu/cpus.json`` and the Arm TRMs
(summarised in the project's reference notes). AMD families: AMD's
processor programming references (family 17h = Zen/Zen 2, 19h = Zen 3/4,
1Ah = Zen 5). Intel models: Linux ``arch/x86/include/asm/intel-family.h``.
"""

from __future__ import annotations

import os
import platform
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

# (implementer, part) -> (core name, machine-class slug). Source: ARM-software/data
# pmu/cpus.json; 0x6D/0xD49 Azure Cobalt 100 and 0xC0/0xAC3 AmpereOne from the
# vendors' MIDR documentation as collected in the reference notes; 0x48/0xD01 HiSilicon
# TSV110 (Kunpeng 920) from Linux arch/arm64/include/asm/cputype.h (HISI_CPU_PART_TSV110)
# and tools/perf/pmu-events/arch/arm64/mapfile.csv (0x480fd010 -> hisilicon/hip08);
# 0x61 Apple parts from the same cputype.h (APPLE_CPU_PART_M1_ICESTORM 0x022 ..
# APPLE_CPU_PART_M2_AVALANCHE_MAX 0x039; the Pro and Max parts are the same cores). The
# phone cores of 2020-2023 (A78C, X1C, A715, X3, A520, A720, X4) from the "cpuid" of
# their ARM-software/data pmu/<core>.json files (0x41d80 = Cortex-A520, ...), which
# Linux's cputype.h agrees with (ARM_CPU_PART_CORTEX_A520 0xD80, ..._A715 0xD4D).
ARM_PARTS: dict[tuple[int, int], tuple[str, str]] = {
    (0x41, 0xD03): ("Cortex-A53", "cortex-a53"),
    (0x41, 0xD05): ("Cortex-A55", "cortex-a55"),
    (0x41, 0xD07): ("Cortex-A57", "cortex-a57"),
    (0x41, 0xD08): ("Cortex-A72", "cortex-a72"),
    (0x41, 0xD09): ("Cortex-A73", "cortex-a73"),
    (0x41, 0xD0A): ("Cortex-A75", "cortex-a75"),
    (0x41, 0xD0B): ("Cortex-A76", "cortex-a76"),
    (0x41, 0xD0C): ("Neoverse N1", "neoverse-n1"),
    (0x41, 0xD0D): ("Cortex-A77", "cortex-a77"),
    (0x41, 0xD40): ("Neoverse V1", "neoverse-v1"),
    (0x41, 0xD41): ("Cortex-A78", "cortex-a78"),
    (0x41, 0xD44): ("Cortex-X1", "cortex-x1"),
    (0x41, 0xD46): ("Cortex-A510", "cortex-a510"),
    (0x41, 0xD47): ("Cortex-A710", "cortex-a710"),
    (0x41, 0xD48): ("Cortex-X2", "cortex-x2"),
    (0x41, 0xD49): ("Neoverse N2", "neoverse-n2"),
    (0x41, 0xD4B): ("Cortex-A78C", "cortex-a78c"),
    (0x41, 0xD4C): ("Cortex-X1C", "cortex-x1c"),
    (0x41, 0xD4D): ("Cortex-A715", "cortex-a715"),
    (0x41, 0xD4E): ("Cortex-X3", "cortex-x3"),
    (0x41, 0xD4F): ("Neoverse V2", "neoverse-v2"),
    (0x41, 0xD80): ("Cortex-A520", "cortex-a520"),
    (0x41, 0xD81): ("Cortex-A720", "cortex-a720"),
    (0x41, 0xD82): ("Cortex-X4", "cortex-x4"),
    (0x41, 0xD84): ("Neoverse V3", "neoverse-v3"),
    (0x41, 0xD8E): ("Neoverse N3", "neoverse-n3"),
    (0x6D, 0xD49): ("Azure Cobalt 100 (Neoverse N2)", "azure-cobalt-100"),
    (0xC0, 0xAC3): ("AmpereOne", "ampereone"),
    (0x48, 0xD01): ("HiSilicon TSV110 (Kunpeng 920)", "hisilicon-tsv110"),
    (0x61, 0x022): ("Apple Icestorm (M1 E-core)", "apple-icestorm"),
    (0x61, 0x023): ("Apple Firestorm (M1 P-core)", "apple-firestorm"),
    (0x61, 0x024): ("Apple Icestorm (M1 Pro E-core)", "apple-icestorm"),
    (0x61, 0x025): ("Apple Firestorm (M1 Pro P-core)", "apple-firestorm"),
    (0x61, 0x028): ("Apple Icestorm (M1 Max E-core)", "apple-icestorm"),
    (0x61, 0x029): ("Apple Firestorm (M1 Max P-core)", "apple-firestorm"),
    (0x61, 0x032): ("Apple Blizzard (M2 E-core)", "apple-blizzard"),
    (0x61, 0x033): ("Apple Avalanche (M2 P-core)", "apple-avalanche"),
    (0x61, 0x034): ("Apple Blizzard (M2 Pro E-core)", "apple-blizzard"),
    (0x61, 0x035): ("Apple Avalanche (M2 Pro P-core)", "apple-avalanche"),
    (0x61, 0x038): ("Apple Blizzard (M2 Max E-core)", "apple-blizzard"),
    (0x61, 0x039): ("Apple Avalanche (M2 Max P-core)", "apple-avalanche"),
}
ARM_IMPLEMENTERS = {
    0x41: "Arm",
    0x42: "Broadcom",
    0x43: "Cavium",
    0x46: "Fujitsu",
    0x48: "HiSilicon",
    0x4E: "NVIDIA",
    0x51: "Qualcomm",
    0x61: "Apple",
    0x6D: "Microsoft",
    0xC0: "Ampere",
}

# AMD family 19h: models 00h-0Fh and 20h-5Fh are Zen 3; 10h-1Fh, 60h-7Fh, A0h-AFh Zen 4.
# Family 17h: models below 30h are Zen/Zen+, the rest Zen 2. Family 1Ah: Zen 5.
_ZEN4_MODELS_19H = (range(0x10, 0x20), range(0x60, 0x80), range(0xA0, 0xB0))

# Intel family 6 server/client models (Linux arch/x86/include/asm/intel-family.h): the
# big cores from Nehalem on, by the micro-architecture the header names for each model.
INTEL_MODELS = {
    0x1E: "nehalem",
    0x1F: "nehalem",
    0x1A: "nehalem-ep",
    0x2E: "nehalem-ex",
    0x25: "westmere",
    0x2C: "westmere-ep",
    0x2F: "westmere-ex",
    0x2A: "sandybridge",
    0x2D: "sandybridge-x",
    0x3A: "ivybridge",
    0x3E: "ivybridge-x",
    0x3C: "haswell",
    0x45: "haswell",
    0x46: "haswell",
    0x3D: "broadwell",
    0x47: "broadwell",
    0x56: "broadwell-d",
    0x4E: "skylake",
    0x8E: "kabylake",
    0xA6: "cometlake",
    0x7D: "icelake",
    0x7E: "icelake",
    0x8D: "tigerlake",
    0xA7: "rocketlake",
    0xBF: "raptorlake",
    0xAC: "meteorlake",
    0x55: "skylake-x",
    0x6A: "icelake-x",
    0x6C: "icelake-d",
    0x8F: "sapphirerapids",
    0xCF: "emeraldrapids",
    0xAD: "graniterapids",
    0xAF: "sierraforest",
    0xB6: "grandridge",
    0x4F: "broadwell-x",
    0x3F: "haswell-x",
    0x8C: "tigerlake",
    0x97: "alderlake",
    0x9A: "alderlake-l",
    0xB7: "raptorlake",
    0xBA: "raptorlake-p",
    0xAA: "meteorlake",
    0x9E: "kabylake",
    0xA5: "cometlake",
    0x5E: "skylake",
    0xC5: "arrowlake",
    0xC6: "arrowlake",
    0xBD: "lunarlake",
}


#: The device tree ``compatible`` of QEMU's ``virt`` board (hw/arm/virt.c ``create_fdt``).
QEMU_VIRT_COMPATIBLE = "linux,dummy-virt"
#: Appended to the machine class of an emulated machine.
EMULATED_SUFFIX = "+emulated"


@dataclass(frozen=True)
class SystemPaths:
    """Where sysfs and procfs live (``/`` on a real machine, a tree in tests)."""

    root: Path = Path("/")

    @property
    def sys(self) -> Path:
        return self.root / "sys"

    @property
    def proc(self) -> Path:
        return self.root / "proc"

    @property
    def event_sources(self) -> Path:
        return self.sys / "bus" / "event_source" / "devices"

    @property
    def cpus(self) -> Path:
        return self.sys / "devices" / "system" / "cpu"


@dataclass(frozen=True)
class Cache:
    level: int
    type: str  # Data | Instruction | Unified
    size_bytes: int

    @property
    def label(self) -> str:
        kind = {"Data": "d", "Instruction": "i"}.get(self.type, "")
        return f"L{self.level}{kind}"


@dataclass(frozen=True)
class PmuInfo:
    """One event source in sysfs that counts CPU events (a core PMU)."""

    name: str
    type: int
    cpus: tuple[int, ...]
    events: dict[str, int] = field(default_factory=dict)  # sysfs name -> event code
    slots: int | None = None  # caps/slots, 0 before PMUv3.4 -> None


@dataclass(frozen=True)
class CpuInfo:
    """Facts about the CPU gathered once; stored with every Profile."""

    arch: str  # x86_64 | aarch64
    vendor: str
    core: str  # human name: "Cortex-A72", "AMD EPYC (Zen 3)"
    core_slug: str  # for the machine class: "cortex-a72", "amd-epyc-zen3"
    midr: str | None  # "0x410fd083" on Arm
    cpu_count: int
    caches: tuple[Cache, ...]
    kernel: str
    paranoid: int | None
    privileged: bool  # root or CAP_PERFMON / CAP_SYS_ADMIN
    pmus: tuple[PmuInfo, ...]
    core_types: tuple[str, ...] = ()  # big.LITTLE: one entry per core type
    # Why this machine's PMU is emulated (QEMU's virt board, implementer 0x00), or None.
    emulation: str | None = None

    @property
    def machine_class(self) -> str:
        suffix = EMULATED_SUFFIX if self.emulation else ""
        return f"{self.arch_slug}-{self.core_slug}{suffix}"

    @property
    def arch_slug(self) -> str:
        return "arm64" if self.arch in ("aarch64", "arm64") else self.arch

    def to_dict(self) -> dict:
        data = asdict(self)
        data["machine_class"] = self.machine_class
        return data


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def parse_cpu_list(text: str) -> tuple[int, ...]:
    """``"0-3,8,10-11"`` -> (0, 1, 2, 3, 8, 10, 11)."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            cpus.extend(range(int(lo), int(hi) + 1))
        else:
            cpus.append(int(part))
    return tuple(cpus)


def physical_cores(paths: SystemPaths | None = None, cpus: Iterable[int] | None = None) -> int:
    """Physical cores among ``cpus`` (default: those this process may run on).

    SMT siblings are counted once: each CPU's ``topology/core_cpus_list`` names the
    core it belongs to (Linux ``Documentation/ABI/stable/sysfs-devices-system-cpu``).
    A CPU whose file cannot be read counts as a core of its own.
    """
    paths = paths or SystemPaths()
    cores = set()
    for cpu in os.sched_getaffinity(0) if cpus is None else cpus:
        siblings = _read(paths.cpus / f"cpu{cpu}" / "topology" / "core_cpus_list")
        cores.add(siblings if siblings else f"cpu{cpu}")
    return len(cores) or 1


def parse_size(text: str) -> int:
    """sysfs cache size ``"32K"`` / ``"1M"`` / ``"1024"`` -> bytes."""
    match = re.fullmatch(r"\s*(\d+)\s*([KMG]?)\s*", text)
    if not match:
        raise ValueError(f"unrecognised cache size {text!r}")
    scale = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[match.group(2)]
    return int(match.group(1)) * scale


def parse_cpuinfo(text: str) -> list[dict[str, str]]:
    """``/proc/cpuinfo`` -> one dict per processor block."""
    blocks: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if current:
                blocks.append(current)
                current = {}
            continue
        key, sep, value = line.partition(":")
        if sep:
            current[key.strip()] = value.strip()
    if current:
        blocks.append(current)
    return blocks


def read_caches(paths: SystemPaths, cpu: int = 0) -> tuple[Cache, ...]:
    base = paths.cpus / f"cpu{cpu}" / "cache"
    caches = []
    for index in sorted(base.glob("index*")):
        level, type_, size = (_read(index / name) for name in ("level", "type", "size"))
        if level and type_ and size:
            try:
                caches.append(Cache(int(level), type_, parse_size(size)))
            except ValueError:
                continue
    return tuple(sorted(caches, key=lambda c: (c.level, c.type)))


def read_pmus(paths: SystemPaths) -> tuple[PmuInfo, ...]:
    """Core PMUs: event sources with a ``cpus`` list (Arm) or the x86 ``cpu`` device.

    Uncore PMUs (``cpumask`` only) and software/tracepoint sources are left out.
    """
    pmus = []
    if not paths.event_sources.is_dir():
        return ()
    for dev in sorted(paths.event_sources.iterdir()):
        type_text = _read(dev / "type")
        if type_text is None:
            continue
        cpus_text = _read(dev / "cpus")
        is_x86_core = dev.name in ("cpu", "cpu_core", "cpu_atom")
        if cpus_text is None and not is_x86_core:
            continue
        events: dict[str, int] = {}
        events_dir = dev / "events"
        if events_dir.is_dir():
            for ev in events_dir.iterdir():
                match = re.search(r"event=(0x[0-9a-fA-F]+|\d+)", _read(ev) or "")
                if match:
                    events[ev.name] = int(match.group(1), 0)
        slots_text = _read(dev / "caps" / "slots")
        slots = int(slots_text, 0) if slots_text else None
        if cpus_text is None:
            cpus_text = _read(paths.cpus / "online") or ""
        pmus.append(
            PmuInfo(
                name=dev.name,
                type=int(type_text),
                cpus=parse_cpu_list(cpus_text),
                events=events,
                slots=slots or None,
            )
        )
    return tuple(pmus)


def read_compatible(paths: SystemPaths) -> tuple[str, ...]:
    """The device tree root's ``compatible`` strings (NUL-separated in the file)."""
    for base in (paths.proc / "device-tree", paths.sys / "firmware" / "devicetree" / "base"):
        try:
            raw = (base / "compatible").read_bytes()
        except OSError:
            continue
        return tuple(s.decode("utf-8", "replace") for s in raw.split(b"\0") if s.strip())
    return ()


def emulation_evidence(compatible: tuple[str, ...], midrs: list[int]) -> str | None:
    """Why this machine's PMU is emulated, from the files alone; None for real silicon.

    QEMU's ``virt`` board names itself ``linux,dummy-virt`` in the device tree
    (booted with a kernel and a device tree, as QEMU's full-system emulator does);
    QEMU's ``max`` CPU model reports implementer 0x00, which no silicon vendor has.
    Measured evidence (cycles equal to instructions) is ``pmu.trust``'s.
    """
    reasons = []
    if QEMU_VIRT_COMPATIBLE in compatible:
        reasons.append(f"QEMU's virt machine (device tree compatible '{QEMU_VIRT_COMPATIBLE}')")
    if any(decode_midr(m)[0] == 0x00 for m in midrs):
        reasons.append("CPU implementer 0x00, which no silicon vendor has (QEMU's 'max' CPU)")
    return "; ".join(reasons) or None


def decode_midr(midr: int) -> tuple[int, int, int, int]:
    """MIDR_EL1 -> (implementer, variant, part, revision)."""
    return (midr >> 24) & 0xFF, (midr >> 20) & 0xF, (midr >> 4) & 0xFFF, midr & 0xF


def arm_core_name(implementer: int, part: int) -> tuple[str, str]:
    """(human name, slug) for an Arm MIDR; unknown parts keep their numbers."""
    known = ARM_PARTS.get((implementer, part))
    if known:
        return known
    vendor = ARM_IMPLEMENTERS.get(implementer, f"implementer {implementer:#04x}")
    slug_vendor = re.sub(r"[^a-z0-9]+", "-", vendor.lower()).strip("-")
    if implementer == 0x61:
        return f"Apple part {part:#05x}", f"apple-{part:03x}"
    return f"{vendor} part {part:#05x}", f"{slug_vendor}-{part:03x}"


def _arm_midrs(paths: SystemPaths, blocks: list[dict[str, str]]) -> list[int]:
    midrs = []
    for cpu_dir in sorted(paths.cpus.glob("cpu[0-9]*"), key=lambda p: int(p.name[3:])):
        text = _read(cpu_dir / "regs" / "identification" / "midr_el1")
        if text:
            midrs.append(int(text, 16))
    if midrs:
        return midrs
    for block in blocks:  # /proc/cpuinfo fallback
        try:
            midrs.append(
                int(block["CPU implementer"], 16) << 24
                | int(block.get("CPU variant", "0"), 16) << 20
                | 0xF << 16
                | int(block["CPU part"], 16) << 4
                | int(block.get("CPU revision", "0"), 0)
            )
        except (KeyError, ValueError):
            continue
    return midrs


def x86_core_name(vendor: str, family: int, model: int, model_name: str) -> tuple[str, str]:
    """(human name, slug) for an x86 CPU from cpuinfo's vendor/family/model."""
    if vendor == "AuthenticAMD":
        if family == 0x17:
            uarch = "zen2" if model >= 0x30 else "zen"
        elif family == 0x19:
            uarch = "zen4" if any(model in r for r in _ZEN4_MODELS_19H) else "zen3"
        elif family == 0x1A:
            uarch = "zen5"
        else:
            uarch = f"f{family:x}h-m{model:02x}h"
        line = next(
            (p for p in ("epyc", "ryzen", "threadripper") if p in model_name.lower()), "cpu"
        )
        return f"{model_name} ({uarch})", f"amd-{line}-{uarch}"
    if vendor == "GenuineIntel":
        uarch = INTEL_MODELS.get(model, f"f{family}m{model:02x}") if family == 6 else f"f{family}"
        line = next((p for p in ("xeon", "core", "atom") if p in model_name.lower()), "cpu")
        return f"{model_name} ({uarch})", f"intel-{line}-{uarch}"
    slug = re.sub(r"[^a-z0-9]+", "-", vendor.lower()).strip("-") or "unknown"
    return model_name or vendor, f"{slug}-f{family}m{model}"


def read_paranoid(paths: SystemPaths) -> int | None:
    text = _read(paths.proc / "sys" / "kernel" / "perf_event_paranoid")
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def is_privileged() -> bool:
    """Root, or CAP_PERFMON (38) / CAP_SYS_ADMIN (21) in the effective set."""
    if os.geteuid() == 0:
        return True
    text = _read(Path("/proc/self/status")) or ""
    match = re.search(r"^CapEff:\s*([0-9a-fA-F]+)", text, re.M)
    caps = int(match.group(1), 16) if match else 0
    return bool(caps & (1 << 38) or caps & (1 << 21))


def identify(paths: SystemPaths | None = None, *, arch: str | None = None) -> CpuInfo:
    """Gather the CPU facts from ``paths`` (the real machine by default)."""
    paths = paths or SystemPaths()
    blocks = parse_cpuinfo(_read(paths.proc / "cpuinfo") or "")
    online = _read(paths.cpus / "online")
    cpu_count = len(parse_cpu_list(online)) if online else (len(blocks) or os.cpu_count() or 1)
    pmus = read_pmus(paths)
    first = blocks[0] if blocks else {}
    if arch is None:
        if "CPU implementer" in first:
            arch = "aarch64"
        elif "vendor_id" in first:
            arch = "x86_64"
        else:
            arch = platform.machine()
    midr_text = None
    core_types: tuple[str, ...] = ()
    midrs: list[int] = []
    if arch in ("aarch64", "arm64"):
        midrs = _arm_midrs(paths, blocks)
        kinds: dict[tuple[int, int], None] = {}
        for midr in midrs:
            impl, _var, part, _rev = decode_midr(midr)
            kinds.setdefault((impl, part), None)
        names = [arm_core_name(impl, part) for impl, part in kinds]
        if not names:
            names = [("unknown Arm core", "unknown")]
        core_types = tuple(name for name, _ in names)
        core = " + ".join(core_types)
        core_slug = "+".join(slug for _, slug in names)
        vendor = ARM_IMPLEMENTERS.get(next(iter(kinds))[0], "unknown") if kinds else "unknown"
        midr_text = f"{midrs[0]:#010x}" if midrs else None
    else:
        vendor = first.get("vendor_id", "unknown")
        try:
            family, model = int(first.get("cpu family", "0")), int(first.get("model", "0"))
        except ValueError:
            family, model = 0, 0
        core, core_slug = x86_core_name(vendor, family, model, first.get("model name", ""))
    return CpuInfo(
        arch=arch,
        vendor=vendor,
        core=core,
        core_slug=core_slug,
        midr=midr_text,
        cpu_count=cpu_count,
        caches=read_caches(paths),
        kernel=platform.release() if paths.root == Path("/") else "fixture",
        paranoid=read_paranoid(paths),
        privileged=is_privileged() if paths.root == Path("/") else False,
        pmus=pmus,
        core_types=core_types,
        emulation=emulation_evidence(read_compatible(paths), midrs),
    )
