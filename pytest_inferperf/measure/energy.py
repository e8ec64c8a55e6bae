"""Energy per inference from the kernel's energy counters, or why it cannot be measured.

Owns: finding energy counters in sysfs - RAPL zones under ``/sys/class/powercap``
(``intel-rapl:*``, also used for AMD) and hwmon ``energy*_input`` sensors (``amd_energy``,
some Arm boards) - reading them around a number of calls, handling counter wrap-around,
and saying in words why there is no number when there is none.

What is summed: RAPL package zones plus their ``dram`` subzones (``core``/``uncore`` are
parts of the package and ``psys`` contains it, so they would count twice); for hwmon the
socket/package sensors when any are labelled so, else every sensor. The result is the
energy of the whole package (every core, every process), so it is per call only when the
machine is otherwise idle.

Must not: import pytest, guess (no estimate from TDP or utilisation: unknown is ``None``
with a reason, never 0), or raise from a counter it cannot read - only exceptions from the
measured call itself propagate.
"""

from __future__ import annotations

import errno
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "NOT_AVAILABLE",
    "EnergyResult",
    "EnergySource",
    "energy_sources",
    "measure_energy",
]

NOT_AVAILABLE = (
    "not available: no RAPL powercap or hwmon energy sensor is exposed "
    "(typical of VMs and most Arm boards)"
)
_RAPL_ZONE = re.compile(r"^intel-rapl:\d+(:\d+)?$")
_HWMON_ENERGY = re.compile(r"^energy(\d+)_input$")
_PACKAGE_LABEL = re.compile(r"socket|package|pkg", re.IGNORECASE)


@dataclass(frozen=True)
class EnergySource:
    """One energy counter: ``path`` holds a cumulative count in microjoules.

    ``kind`` is ``"rapl"`` or ``"hwmon"``; ``domain`` the zone or sensor name
    (``package-0``, ``dram``, ``core``, ``Esocket0``); ``max_uj`` the value at which the
    counter wraps to 0 (RAPL's ``max_energy_range_uj``), ``None`` when unknown;
    ``parent`` the package zone a RAPL subzone belongs to.
    """

    kind: str
    domain: str
    path: Path
    max_uj: int | None = None
    parent: str | None = None

    @property
    def label(self) -> str:
        """``rapl:package-0``, ``rapl:package-0/dram``, ``hwmon:amd_energy/Esocket0``."""
        return f"{self.kind}:{self.parent + '/' if self.parent else ''}{self.domain}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "domain": self.domain,
            "path": str(self.path),
            "max_uj": self.max_uj,
            "parent": self.parent,
        }


@dataclass(frozen=True)
class EnergyResult:
    """Joules per call, or ``None`` with the reason it could not be measured.

    ``source`` names the counters summed; ``domains`` gives joules per call of each;
    ``seconds`` is the wall time of the measured calls (``joules / seconds`` = watts).
    """

    joules_per_call: float | None
    source: str | None
    reason: str | None
    calls: int = 0
    seconds: float | None = None
    domains: Mapping[str, float] = field(default_factory=dict)

    @property
    def watts(self) -> float | None:
        """Average power over the measured calls, when known."""
        if self.joules_per_call is None or not self.seconds:
            return None
        return self.joules_per_call * self.calls / self.seconds

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict for ``Profile.energy``."""
        return {
            "joules_per_call": self.joules_per_call,
            "source": self.source,
            "reason": self.reason,
            "calls": self.calls,
            "seconds": self.seconds,
            "watts": self.watts,
            "domains": dict(self.domains),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EnergyResult:
        joules = data.get("joules_per_call")
        seconds = data.get("seconds")
        return cls(
            joules_per_call=None if joules is None else float(joules),
            source=data.get("source"),
            reason=data.get("reason"),
            calls=int(data.get("calls", 0)),
            seconds=None if seconds is None else float(seconds),
            domains={str(k): float(v) for k, v in (data.get("domains") or {}).items()},
        )


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _read_int(path: Path) -> int | None:
    text = _read_text(path)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _sorted_dirs(folder: Path, pattern: str) -> list[Path]:
    try:
        return sorted(p for p in folder.glob(pattern) if p.is_dir())
    except OSError:
        return []


def _rapl_sources(root: Path) -> list[EnergySource]:
    base = root / "sys" / "class" / "powercap"
    zones = [p for p in _sorted_dirs(base, "intel-rapl:*") if _RAPL_ZONE.match(p.name)]
    names = {p.name: _read_text(p / "name") or p.name for p in zones}
    sources = []
    for zone in zones:
        energy = zone / "energy_uj"
        if not energy.exists():
            continue
        parts = zone.name.split(":")
        parent = names.get(":".join(parts[:2])) if len(parts) == 3 else None
        sources.append(
            EnergySource(
                kind="rapl",
                domain=names[zone.name],
                path=energy,
                max_uj=_read_int(zone / "max_energy_range_uj"),
                parent=parent,
            )
        )
    return sources


def _hwmon_sources(root: Path) -> list[EnergySource]:
    base = root / "sys" / "class" / "hwmon"
    sources = []
    for hwmon in _sorted_dirs(base, "hwmon*"):
        chip = _read_text(hwmon / "name") or hwmon.name
        try:
            matches = [_HWMON_ENERGY.match(p.name) for p in hwmon.glob("energy*_input")]
        except OSError:
            continue
        for index in sorted(int(m.group(1)) for m in matches if m):  # energy2 before energy10
            label = _read_text(hwmon / f"energy{index}_label") or f"energy{index}"
            energy = hwmon / f"energy{index}_input"
            sources.append(EnergySource(kind="hwmon", domain=label, path=energy, parent=chip))
    return sources


def energy_sources(root: Path = Path("/")) -> list[EnergySource]:
    """Every energy counter exposed under ``root`` (``/`` on a real machine, a tree in tests).

    RAPL: ``sys/class/powercap/intel-rapl:N`` (packages) and ``intel-rapl:N:M`` (their
    subzones), each with ``name``, ``energy_uj`` and ``max_energy_range_uj``. hwmon:
    ``sys/class/hwmon/hwmonN/energyK_input`` (microjoules) with ``name`` and
    ``energyK_label``. Only listing is done here; the counters are read by
    :func:`measure_energy`.
    """
    return _rapl_sources(Path(root)) + _hwmon_sources(Path(root))


def _summed(sources: Sequence[EnergySource]) -> list[EnergySource]:
    """The counters whose sum is the machine's energy without double counting."""
    rapl = [s for s in sources if s.kind == "rapl"]
    packages = [s for s in rapl if s.parent is None and s.domain.startswith("package")]
    if packages:
        dram = [s for s in rapl if s.domain == "dram"]
        return packages + dram
    if rapl:
        top = [s for s in rapl if s.parent is None and s.domain != "psys"]
        return top or rapl[:1]
    hwmon = [s for s in sources if s.kind == "hwmon"]
    sockets = [s for s in hwmon if _PACKAGE_LABEL.search(s.domain)]
    return sockets or hwmon


def _unreadable(source: EnergySource, exc: OSError) -> str:
    path = source.path
    if exc.errno in (errno.EACCES, errno.EPERM) or isinstance(exc, PermissionError):
        return (
            f"not readable: {path} is readable by root only (Linux 5.10 and later restrict "
            "RAPL energy_uj, CVE-2020-8694). Run as root, or allow reading it: "
            f"`sudo chmod o+r {path}` (until reboot) or a udev rule such as "
            'ACTION=="add", SUBSYSTEM=="powercap", RUN+="/bin/chmod o+r /sys%p/energy_uj"'
        )
    return f"not readable: {path}: {exc.strerror or exc}"


def _read_counters(sources: Sequence[EnergySource]) -> tuple[list[int] | None, str | None]:
    values = []
    for source in sources:
        try:
            text = source.path.read_text().strip()
        except OSError as exc:
            return None, _unreadable(source, exc)
        try:
            values.append(int(text))
        except ValueError:
            return None, f"not readable: {source.path} holds {text[:40]!r}, not a number"
    return values, None


def _delta_uj(source: EnergySource, before: int, after: int) -> int | None:
    if after >= before:
        return after - before
    if source.max_uj:  # wrapped past max_energy_range_uj back to 0 (at most once)
        return source.max_uj - before + after
    return None


def measure_energy(call: Callable[[], Any], *, calls: int, root: Path = Path("/")) -> EnergyResult:
    """Energy per call of ``call`` over ``calls`` calls, from the counters under ``root``.

    Reads every summed counter, makes the calls, reads them again. A counter that went
    backwards wrapped around (once) at its ``max_energy_range_uj``; run fewer calls when
    one could wrap more than once (a RAPL package counter wraps every few minutes to an
    hour, depending on the part). Returns ``joules_per_call=None`` with a ``reason`` -
    never 0 and never an exception - when no counter exists, one cannot be read (root-only
    since Linux 5.10: the reason names the file and the fix) or none advanced; when no
    counter exists or the first read fails, ``call`` is not run at all. Exceptions raised
    by ``call`` propagate.
    """
    if isinstance(calls, bool) or not isinstance(calls, int) or calls < 1:
        raise ValueError(f"calls must be a positive int; got {calls!r}")
    sources = _summed(energy_sources(root))
    if not sources:
        return EnergyResult(None, None, NOT_AVAILABLE, calls=calls)
    source_text = " + ".join(s.label for s in sources)
    before, reason = _read_counters(sources)
    if before is None:
        return EnergyResult(None, source_text, reason, calls=calls)
    start = time.perf_counter()
    for _ in range(calls):
        call()
    seconds = time.perf_counter() - start
    after, reason = _read_counters(sources)
    if after is None:
        return EnergyResult(None, source_text, reason, calls=calls, seconds=seconds)
    domains: dict[str, float] = {}
    total_uj = 0
    for source, b, a in zip(sources, before, after, strict=True):
        delta = _delta_uj(source, b, a)
        if delta is None:
            return EnergyResult(
                None,
                source_text,
                f"not measured: {source.path} went backwards ({b} -> {a} µJ) and its wrap "
                "point (max_energy_range_uj) is unknown",
                calls=calls,
                seconds=seconds,
            )
        domains[source.label] = delta / 1e6 / calls
        total_uj += delta
    if total_uj <= 0:
        return EnergyResult(
            None,
            source_text,
            f"not measured: the counters did not advance over {calls} calls "
            f"({seconds * 1e3:.3g} ms); they update about every millisecond, so measure "
            "more calls",
            calls=calls,
            seconds=seconds,
        )
    joules = total_uj / 1e6 / calls
    if not math.isfinite(joules):  # pragma: no cover - integers in, finite out
        return EnergyResult(None, source_text, "not measured: non-finite result", calls=calls)
    return EnergyResult(joules, source_text, None, calls=calls, seconds=seconds, domains=domains)
