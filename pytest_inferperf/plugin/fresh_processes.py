"""A test measured again in fresh processes: the between-process part of the noise.

Owns: starting ``python -m pytest <the test>`` as a new process, one after another,
with the parent's options (:func:`.child_plugins.child_line`) and
``INFERPERF_PROCESS_CHILD`` naming the file it writes, reading back the Profiles it
measured (:func:`measure_in_fresh_processes`), and the child's side: writing every
profile of its test to that file instead of judging it (:class:`ProcessChild`).

Why: a process has its own address layout, hash seed and allocator state, which
repeats inside it cannot vary (:mod:`..between_processes`). A suspected timing
regression is measured again in fresh processes before it fails, and a new baseline
is recorded over several.

Must not: judge (``between_processes``, ``assessment``), measure in this process, or
import the engine at module level (the plugin loads with every pytest run).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .. import child_process
from .keys import PROFILES

if TYPE_CHECKING:
    from ..profile import Profile

#: Seconds one fresh process may take when the test's marker sets no ``timeout=``
#: (start-up, imports, fixtures, warm-up and the measured repeats).
DEFAULT_CHILD_TIMEOUT_S = 300.0
#: What the child's pytest adds to the parent's repeated options: quiet, no cache
#: writes (the parent's ``--lf`` state stays the parent's), this plugin on, nothing
#: sampled for flamegraphs.
CHILD_FLAGS = ("-q", "--no-header", "-p", "no:cacheprovider", "--inferperf")


class ProcessChild:
    """Registered only in a fresh-process child: its test's profiles go to the parent."""

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Any:
        try:
            return (yield)
        finally:
            profiles = item.stash.get(PROFILES, [])
            path = os.environ.get(child_process.ENV_PROCESS, "")
            if profiles and path:
                data = {variant: profile.to_dict() for variant, profile, _ in profiles}
                tmp = Path(path + ".tmp")
                tmp.write_text(json.dumps(data), encoding="utf-8")
                os.replace(tmp, path)


def child_command(item: pytest.Item, backend: str) -> list[str]:
    """The command line of a fresh process that measures test ``item`` again."""
    from .child_plugins import child_line

    nodeid = item.nodeid
    path = getattr(item, "path", None)
    sep = nodeid.find("::")
    # the file by its absolute path: the child starts where pytest was started, which
    # need not be the rootdir that node ids are relative to
    target = str(path) + nodeid[sep:] if path is not None and sep >= 0 else nodeid
    return [
        sys.executable,
        "-m",
        "pytest",
        *child_line(item.config, [item]),
        *CHILD_FLAGS,
        f"--inferperf-backend={backend}",
        "--inferperf-flamegraphs=none",
        target,
    ]


def measure_in_fresh_processes(
    item: pytest.Item, backend: str, count: int, timeout: float | None = None
) -> tuple[list[dict[str, Profile]], str | None]:
    """Test ``item`` measured in ``count`` new processes, one after another.

    Returns each process's profiles by variant (``""`` for an unnamed ``pmu_profile``
    call) and None, or what was measured before a process failed and why it failed.
    """
    from ..profile import Profile

    limit = timeout if timeout is not None else DEFAULT_CHILD_TIMEOUT_S
    command = child_command(item, backend)
    measured: list[dict[str, Profile]] = []
    with tempfile.TemporaryDirectory(prefix="inferperf-process-") as folder:
        for index in range(count):
            out = Path(folder, f"process-{index}.json")
            env = {**os.environ, child_process.ENV_PROCESS: str(out)}
            env.pop("GITHUB_STEP_SUMMARY", None)  # a child writes no run outputs
            try:
                proc = subprocess.run(
                    command,
                    cwd=item.config.invocation_params.dir,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    text=True,
                    timeout=limit,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                return measured, f"a fresh process ran past {limit:g} s"
            if not out.exists():
                return measured, _why_nothing(proc.returncode, proc.stdout, proc.stderr)
            try:
                data = json.loads(out.read_text(encoding="utf-8"))
                measured.append({str(k): Profile.from_dict(v) for k, v in data.items()})
            except (OSError, ValueError) as exc:
                return measured, f"a fresh process wrote an unreadable profile ({exc})"
    return measured, None


def _why_nothing(status: int, stdout: str, stderr: str) -> str:
    lines = [line for line in (stdout + "\n" + stderr).splitlines() if line.strip()]
    tail = " | ".join(lines[-3:]) if lines else "no output"
    return f"a fresh process (exit status {status}) measured nothing: {tail}"


def metric_values(
    processes: Sequence[dict[str, Profile]], variant: str
) -> list[Profile]:
    """The profiles of ``variant`` in each process that measured it."""
    return [p[variant] for p in processes if variant in p]
