"""The version is written once (pyproject.toml) and read from package metadata everywhere."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from pytest_inferperf.core.profile import Profile
from pytest_inferperf.core.version import version
from pytest_inferperf.measure import runner
from pytest_inferperf.measure.machine import machine_facts

if sys.version_info >= (3, 11):
    import tomllib
else:  # pytest itself depends on tomli before Python 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "pytest_inferperf"


def _declared() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_the_installed_version_is_the_one_pyproject_declares():
    assert version() == _declared()
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", version())


def test_no_module_writes_the_version_itself():
    written = re.compile(r"""["']""" + re.escape(_declared()) + r"""["']""")
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if written.search(line)
    ]
    assert found == []


def test_every_profile_records_the_version_that_measured_it():
    assert machine_facts()["inferperf"] == version()
    measured = runner.profile(sum, range(100), backend="none", warmup=1, repeat=2, min_time=0)
    assert measured.machine["inferperf"] == version()
    again = Profile.from_dict(json.loads(json.dumps(measured.to_dict())))
    assert again.machine["inferperf"] == version()


def test_a_baseline_without_the_version_still_loads():
    measured = runner.profile(sum, range(100), backend="none", warmup=1, repeat=2, min_time=0)
    data = measured.to_dict()
    del data["machine"]["inferperf"]
    assert "inferperf" not in Profile.from_dict(data).machine


def test_the_public_api_reports_the_same_version():
    import pytest_inferperf

    assert pytest_inferperf.__version__ == version()
