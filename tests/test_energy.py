"""Tests for pytest_inferperf.measure.energy on fixture sysfs trees and on this machine."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

from pytest_inferperf.measure.energy import (
    NOT_AVAILABLE,
    EnergyResult,
    EnergySource,
    energy_sources,
    measure_energy,
)

POWERCAP = Path("sys/class/powercap")
HWMON = Path("sys/class/hwmon")


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def _rapl_zone(root: Path, zone: str, name: str, energy_uj: int, max_uj: int) -> Path:
    folder = root / POWERCAP / zone
    _write(folder / "name", name)
    _write(folder / "energy_uj", str(energy_uj))
    _write(folder / "max_energy_range_uj", str(max_uj))
    _write(folder / "enabled", "1")
    return folder / "energy_uj"


@pytest.fixture
def rapl_tree(tmp_path: Path) -> Path:
    """One package with core and dram subzones, plus psys (which contains the package)."""
    _rapl_zone(tmp_path, "intel-rapl:0", "package-0", 1_000_000, 262_143_328_850)
    _rapl_zone(tmp_path, "intel-rapl:0:0", "core", 500_000, 262_143_328_850)
    _rapl_zone(tmp_path, "intel-rapl:0:1", "dram", 2_000_000, 65_712_999_613)
    _rapl_zone(tmp_path, "intel-rapl:1", "psys", 9_000_000, 262_143_328_850)
    (tmp_path / POWERCAP / "intel-rapl").mkdir()  # the control type folder, not a zone
    return tmp_path


class _Counters:
    """Advances the fixture counters by fixed amounts on every call of the workload."""

    def __init__(self, files: dict[Path, int], maxima: dict[Path, int] | None = None) -> None:
        self.files = files
        self.maxima = maxima or {}

    def __call__(self) -> None:
        for path, step in self.files.items():
            value = int(path.read_text()) + step
            limit = self.maxima.get(path)
            if limit is not None and value > limit:
                value -= limit
            path.write_text(f"{value}\n")


def test_rapl_sources_are_listed(rapl_tree: Path) -> None:
    sources = energy_sources(rapl_tree)
    assert [(s.kind, s.domain, s.parent) for s in sources] == [
        ("rapl", "package-0", None),
        ("rapl", "core", "package-0"),
        ("rapl", "dram", "package-0"),
        ("rapl", "psys", None),
    ]
    assert sources[0].path == rapl_tree / POWERCAP / "intel-rapl:0" / "energy_uj"
    assert sources[0].max_uj == 262_143_328_850
    assert sources[2].label == "rapl:package-0/dram"


def test_rapl_package_plus_dram_per_call(rapl_tree: Path) -> None:
    zone = rapl_tree / POWERCAP
    workload = _Counters(
        {
            zone / "intel-rapl:0" / "energy_uj": 30_000,  # 30 mJ per call
            zone / "intel-rapl:0:0" / "energy_uj": 20_000,  # part of the package: not added
            zone / "intel-rapl:0:1" / "energy_uj": 5_000,  # 5 mJ per call
            zone / "intel-rapl:1" / "energy_uj": 90_000,  # psys contains the package: not added
        }
    )
    result = measure_energy(workload, calls=4, root=rapl_tree)
    assert result.reason is None
    assert result.joules_per_call == pytest.approx(0.035)
    assert result.source == "rapl:package-0 + rapl:package-0/dram"
    assert result.domains == pytest.approx({"rapl:package-0": 0.030, "rapl:package-0/dram": 0.005})
    assert result.calls == 4 and result.seconds is not None and result.seconds >= 0
    data = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert data["joules_per_call"] == pytest.approx(0.035)
    assert EnergyResult.from_dict(data).joules_per_call == pytest.approx(0.035)


def test_rapl_wrap_around(tmp_path: Path) -> None:
    max_uj = 1_000_000
    energy = _rapl_zone(tmp_path, "intel-rapl:0", "package-0", 990_000, max_uj)
    # +25 mJ from 990 mJ wraps past 1 J: the counter reads 15 mJ afterwards
    result = measure_energy(_Counters({energy: 25_000}, {energy: max_uj}), calls=1, root=tmp_path)
    assert energy.read_text().strip() == "15000"
    assert result.joules_per_call == pytest.approx(0.025)


def test_counter_that_does_not_advance_is_not_zero(tmp_path: Path) -> None:
    _rapl_zone(tmp_path, "intel-rapl:0", "package-0", 1_000, 10_000_000)
    result = measure_energy(lambda: None, calls=3, root=tmp_path)
    assert result.joules_per_call is None
    assert result.reason is not None and "did not advance over 3 calls" in result.reason


def test_backwards_without_a_wrap_point(tmp_path: Path) -> None:
    folder = tmp_path / HWMON / "hwmon0"
    _write(folder / "name", "amd_energy")
    _write(folder / "energy1_input", "5000")
    _write(folder / "energy1_label", "Esocket0")

    def reset() -> None:
        (folder / "energy1_input").write_text("10\n")

    result = measure_energy(reset, calls=1, root=tmp_path)
    assert result.joules_per_call is None
    assert "went backwards" in (result.reason or "")


def test_hwmon_microjoules_prefers_socket_sensors(tmp_path: Path) -> None:
    folder = tmp_path / HWMON / "hwmon2"
    _write(folder / "name", "amd_energy")
    _write(folder / "energy1_input", "1000")
    _write(folder / "energy1_label", "Ecore000")
    _write(folder / "energy2_input", "1000")
    _write(folder / "energy2_label", "Ecore001")
    _write(folder / "energy17_input", "5000000")
    _write(folder / "energy17_label", "Esocket0")
    _write(tmp_path / HWMON / "hwmon0" / "name", "acpitz")  # no energy sensor
    sources = energy_sources(tmp_path)
    assert [s.label for s in sources] == [
        "hwmon:amd_energy/Ecore000",
        "hwmon:amd_energy/Ecore001",
        "hwmon:amd_energy/Esocket0",
    ]
    workload = _Counters(
        {
            folder / "energy1_input": 400,
            folder / "energy2_input": 400,
            folder / "energy17_input": 2_000,  # µJ: 2 mJ per call
        }
    )
    result = measure_energy(workload, calls=10, root=tmp_path)
    assert result.source == "hwmon:amd_energy/Esocket0"
    assert result.joules_per_call == pytest.approx(0.002)


def test_hwmon_without_labels_sums_every_sensor(tmp_path: Path) -> None:
    folder = tmp_path / HWMON / "hwmon1"
    _write(folder / "name", "ina3221")
    _write(folder / "energy1_input", "0")
    _write(folder / "energy2_input", "0")
    workload = _Counters({folder / "energy1_input": 700, folder / "energy2_input": 300})
    result = measure_energy(workload, calls=2, root=tmp_path)
    assert result.source == "hwmon:ina3221/energy1 + hwmon:ina3221/energy2"
    assert result.joules_per_call == pytest.approx(0.001)


def test_unreadable_counter_names_the_file_and_the_fix(
    rapl_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Tests run as root, where chmod 000 does not stop reads: simulate EACCES instead.
    real_read_text = Path.read_text

    def read_text(self: Path, *args: object, **kwargs: object) -> str:
        if self.name == "energy_uj":
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real_read_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", read_text)
    called = []
    result = measure_energy(lambda: called.append(1), calls=2, root=rapl_tree)
    assert result.joules_per_call is None
    reason = result.reason or ""
    assert str(rapl_tree / POWERCAP / "intel-rapl:0" / "energy_uj") in reason
    assert "root" in reason and "chmod o+r" in reason and "udev" in reason
    assert "5.10" in reason
    assert called == []  # nothing measured, nothing run
    assert result.source == "rapl:package-0 + rapl:package-0/dram"


def test_other_read_errors_are_reasons_too(
    rapl_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_read_text = Path.read_text
    reads = {"n": 0}

    def read_text(self: Path, *args: object, **kwargs: object) -> str:
        if self.name == "energy_uj":
            reads["n"] += 1
            if reads["n"] > 2:  # readable before the calls, gone after (driver unloaded)
                raise OSError(errno.ENODEV, "No such device", str(self))
        return real_read_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", read_text)
    result = measure_energy(lambda: None, calls=1, root=rapl_tree)
    assert result.joules_per_call is None
    assert "No such device" in (result.reason or "")


def test_garbage_counter_is_a_reason(tmp_path: Path) -> None:
    energy = _rapl_zone(tmp_path, "intel-rapl:0", "package-0", 0, 100)
    energy.write_text("n/a\n")
    result = measure_energy(lambda: None, calls=1, root=tmp_path)
    assert result.joules_per_call is None
    assert "not a number" in (result.reason or "")


def test_no_sources_in_an_empty_tree(tmp_path: Path) -> None:
    assert energy_sources(tmp_path) == []
    result = measure_energy(lambda: None, calls=1, root=tmp_path)
    assert result == EnergyResult(None, None, NOT_AVAILABLE, calls=1)


def test_calls_are_validated(tmp_path: Path) -> None:
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="calls"):
            measure_energy(lambda: None, calls=bad, root=tmp_path)  # type: ignore[arg-type]


def test_workload_exceptions_propagate(rapl_tree: Path) -> None:
    def boom() -> None:
        raise RuntimeError("model failed")

    with pytest.raises(RuntimeError, match="model failed"):
        measure_energy(boom, calls=1, root=rapl_tree)


def test_this_machine_says_not_available() -> None:
    # This VM exposes neither RAPL powercap nor hwmon energy sensors.
    if energy_sources():
        pytest.skip("this machine exposes energy counters")
    calls = []
    result = measure_energy(lambda: calls.append(1), calls=3)
    assert result.joules_per_call is None
    assert result.reason == (
        "not available: no RAPL powercap or hwmon energy sensor is exposed "
        "(typical of VMs and most Arm boards)"
    )
    assert result.to_dict()["joules_per_call"] is None
    assert calls == []  # nothing to read: the workload is not run for nothing
    assert EnergySource("rapl", "package-0", Path("/x")).label == "rapl:package-0"
