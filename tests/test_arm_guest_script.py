"""The CI's emulated-Arm runner (``.ci/arm-guest``): its pure parts, without booting.

Booting the guest needs qemu and minutes; CI does that. These check what the script
asks the guest to run and how it keys its cached root.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / ".ci" / "arm-guest"


@pytest.fixture(scope="module")
def guest():
    loader = importlib.machinery.SourceFileLoader("arm_guest", str(SCRIPT))
    spec = importlib.util.spec_from_loader("arm_guest", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_the_guest_runs_doctor_the_hwcounter_tests_and_the_examples_in_order(guest):
    script = guest.guest_steps("quick", steadiness=False)
    commands = [line for line in script.splitlines() if line.startswith("python3 ")]
    assert commands[0] == "python3 -m pytest_inferperf doctor"
    assert "-m hwcounters tests/test_hwcounters.py" in commands[1]
    assert commands[2].endswith(
        f'--inferperf examples/test_inference.py -k "{guest.QUICK_EXAMPLES}"'
    )
    assert len(commands) == 3
    # Every step is bracketed by markers the host times, and a failure is kept.
    assert script.count(f"{guest.MARK} begin ") == 3 == script.count(f"{guest.MARK} end rc=$rc")
    assert script.rstrip().endswith("exit $status")
    every = guest.guest_steps("all", steadiness=True)
    assert any(line.endswith("--inferperf examples/") for line in every.splitlines())
    assert "python3 .ci/guest_steadiness.py" in every


def test_guest_steps_are_valid_shell_that_keeps_the_first_failure(guest, tmp_path):
    script = guest.guest_steps("quick", steadiness=False)
    fake = tmp_path / "bin"
    fake.mkdir()
    # python3 fails for the hardware-counter step only; the script must exit with it.
    (fake / "python3").write_text('#!/bin/sh\ncase "$*" in *hwcounters*) exit 3;; esac\n')
    (fake / "python3").chmod(0o755)
    out = subprocess.run(
        ["sh", "-c", script],
        env={"PATH": f"{fake}:/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 3
    assert f"{guest.MARK} end rc=3 hardware-counter tests" in out.stdout
    assert f"{guest.MARK} end rc=0 pytest --inferperf examples/" in out.stdout


def test_root_key_follows_the_requirements(guest):
    reqs = guest.project_requirements()
    assert "onnxruntime>=1.16" in reqs and "hypothesis" in reqs
    key = guest.root_key(reqs, "linux-image-6.1.0-57-arm64")
    assert key == guest.root_key(list(reqs), "linux-image-6.1.0-57-arm64")
    assert key != guest.root_key([*reqs, "extra"], "linux-image-6.1.0-57-arm64")
    assert key != guest.root_key(reqs, "linux-image-6.1.0-58-arm64")
