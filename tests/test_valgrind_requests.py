"""Valgrind client requests from Python: a no-op natively, callgrind's switch under valgrind."""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_inferperf.measure.simulate.callgrind import read_dump
from pytest_inferperf.measure.simulate.client_requests import (
    START_INSTRUMENTATION,
    STOP_INSTRUMENTATION,
    client_requests,
)

AMD64 = platform.machine().lower() in {"x86_64", "amd64"}
needs_amd64 = pytest.mark.skipif(not AMD64, reason="the sequence is written for x86-64 only")


def test_the_request_codes_are_callgrind_h_values() -> None:
    # callgrind.h: VG_USERREQ_TOOL_BASE('C','T') + 4 and + 5 (0x43 'C', 0x54 'T')
    assert (START_INSTRUMENTATION, STOP_INSTRUMENTATION) == (0x43540004, 0x43540005)


@needs_amd64
def test_natively_the_sequence_does_nothing_and_answers_the_default() -> None:
    requests = client_requests()
    assert requests is not None
    assert requests.running_on_valgrind() == 0
    assert requests.send(START_INSTRUMENTATION) == 0  # no valgrind: nothing switched


def test_another_architecture_gets_none(monkeypatch) -> None:
    client_requests.cache_clear()
    monkeypatch.setattr(platform, "machine", lambda: "riscv64")
    try:
        assert client_requests() is None
    finally:
        client_requests.cache_clear()


SNIPPET = """
from pytest_inferperf.measure.simulate.client_requests import (
    START_INSTRUMENTATION, STOP_INSTRUMENTATION, client_requests)
requests = client_requests()
print("running", requests.running_on_valgrind())
if {switch}:
    requests.send(START_INSTRUMENTATION)
total = sum(i * i for i in range(20000))
if {switch}:
    requests.send(STOP_INSTRUMENTATION)
"""


@needs_amd64
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
@pytest.mark.parametrize("switch", [True, False])
def test_under_callgrind_the_request_switches_instrumentation(tmp_path: Path, switch) -> None:
    out = tmp_path / "callgrind.out"
    done = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={out}",
            sys.executable,
            "-c",
            SNIPPET.format(switch=switch),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "running 1" in done.stdout
    instructions = read_dump(out.read_text()).events["Ir"]
    if switch:  # the generator's 20,000 steps ran instrumented: hundreds of thousands
        assert instructions > 200_000
    else:  # never switched on: callgrind counted nothing
        assert instructions == 0
