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


def test_recording_writes_the_examples_baselines_and_prints_them_for_the_host(guest, tmp_path):
    script = guest.guest_steps("quick", steadiness=False, record=True)
    commands = [line for line in script.splitlines() if line.startswith("python3 ")]
    assert len(commands) == 3
    assert f"--inferperf {guest.RECORD_FLAGS} examples/test_inference.py" in commands[2]
    assert "--update-baselines" in guest.RECORD_FLAGS
    # The last step prints every baseline file; run it on two real files and decode them
    # back as the host does, byte for byte.
    step = next(line for line in script.splitlines() if line.startswith("find baselines"))
    folder = tmp_path / "baselines" / "arm64-cortex-a72" / "examples" / "test_inference.py"
    folder.mkdir(parents=True)
    files = {
        "baselines/arm64-cortex-a72/examples/test_inference.py/test_minilm.json": (
            b'{\n  "a": 1\n}\n'
        ),
        "baselines/arm64-cortex-a72/examples/test_inference.py/test_x~detail.json": bytes(
            range(256)
        )
        * 40,
    }
    for path, content in files.items():
        (tmp_path / path).write_bytes(content)
    out = subprocess.run(
        ["sh", "-c", step], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert guest.baseline_files(out.stdout.splitlines()) == files
    assert guest.baseline_files(["noise", *out.stdout.splitlines(), "more"]) == files


@pytest.mark.parametrize(
    "path",
    ["../outside.json", "baselines/../../x.json", "/etc/x.json", "baselines/a.txt", "tests/a.json"],
)
def test_a_printed_file_outside_baselines_is_never_taken(guest, path):
    lines = [f"{guest.MARK} file {path}", "e30=", f"{guest.MARK} endfile"]
    assert guest.baseline_files(lines) == {}


def test_a_file_that_does_not_decode_is_not_taken(guest):
    lines = [f"{guest.MARK} file baselines/a/b.json", "!!not base64!!", f"{guest.MARK} endfile"]
    assert guest.baseline_files(lines) == {}
