"""A test measured again in fresh processes: the between-process part of the noise.

Owns: starting ``python -m pytest <the test>`` as a new process, one after another,
with the parent's options (:func:`.child_plugins.child_line`) and
``INFERPERF_PROCESS_CHILD`` naming the file it writes, reading back the Profiles it
measured (:func:`measure_in_fresh_processes`), and the child's side: writing every
profile of its test to that file instead of judging it (:class:`ProcessChild`).

Why: a process has its own address layout, hash seed and allocator state, which
repeats inside it cannot vary (:mod:`..judge.between_processes`). A suspected timing
regression is measured again in fresh processes before it fails, and a new baseline
is recorded over several.

Must not: judge (``between_processes``, ``assessment``), measure in this process, or
import the engine at module level (the plugin loads with every pytest run).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..measure import child_process
from .keys import PROFILES

if TYPE_CHECKING:
    from ..core.profile import Profile

#: Seconds one fresh process may take when the test's marker sets no ``timeout=``
#: (start-up, imports, fixtures, warm-up and the measured repeats).
DEFAULT_CHILD_TIMEOUT_S = 300.0
#: What the child's pytest adds to the parent's repeated options: quiet, no cache
#: writes (the parent's ``--lf`` state stays the parent's), this plugin on, nothing
#: sampled for flamegraphs.
CHILD_FLAGS = ("-q", "--no-header", "-p", "no:cacheprovider", "--inferperf")
#: Repeats a fresh process measures each test for when it adds one value per test to
#: a new baseline (after the same warm-up until steady; timings only, no operator
#: pass). Its value is a mean over these repeats, each at least the marker's
#: ``min_time``: at the median repeat-to-repeat spread measured in
#: docs/benchmarks/update-cost.md (2.2%) its standard error is about 1%. That error
#: is part of the spread the baseline records, so it can only widen it: a
#: confirmation needs a larger t, never fails more easily, and at a spread of 1-2%
#: the 10% tolerance, not the t test, is what a change must clear. A marker's
#: smaller ``repeat=`` is kept.
BASELINE_PROCESS_REPEATS = 5


class ProcessChild:
    """Registered only in a fresh-process child: each test's profiles go to the parent,
    one JSON line per test (``{"nodeid", "profiles": {variant: Profile.to_dict()}}``)."""

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Any:
        try:
            return (yield)
        finally:
            profiles = item.stash.get(PROFILES, [])
            path = os.environ.get(child_process.ENV_PROCESS, "")
            if profiles and path:
                line = {
                    "nodeid": item.nodeid,
                    "profiles": {variant: profile.to_dict() for variant, profile, _ in profiles},
                }
                with open(path, "a", encoding="utf-8") as out:
                    out.write(json.dumps(line) + "\n")


def child_command(config: pytest.Config, nodeids: Sequence[str], backend: str) -> list[str]:
    """The command line of a fresh process that measures the tests ``nodeids`` again.

    Each test by its file's absolute path (node ids are relative to the rootdir; the
    child starts where pytest was started, which need not be the rootdir)."""
    from .child_args import child_args

    targets = []
    for nodeid in nodeids:
        path, sep, rest = nodeid.partition("::")
        targets.append(str(Path(config.rootpath, path)) + sep + rest)
    return [
        sys.executable,
        "-m",
        "pytest",
        *child_args(config),
        *CHILD_FLAGS,
        f"--inferperf-backend={backend}",
        "--inferperf-flamegraphs=none",
        *targets,
    ]


def measure_in_fresh_processes(
    config: pytest.Config,
    nodeids: Sequence[str],
    backend: str,
    count: int,
    timeout: float | None = None,
    repeats: int | None = None,
) -> tuple[list[dict[str, dict[str, Profile]]], str | None]:
    """The tests ``nodeids`` measured in ``count`` new processes, one after another (each
    process runs them all, in order).

    Returns, per process, each test's profiles by variant (``""`` for an unnamed
    ``pmu_profile`` call) and None; or what was measured before a process failed, and
    why it failed. ``timeout``: seconds one process may take (default
    :data:`DEFAULT_CHILD_TIMEOUT_S` per test). ``repeats``: each test measured for at
    most this many repeats, timings only (a new baseline's process values); None: as
    in this process (a confirmation, judged in full).
    """
    from ..core.profile import Profile
    from ..measure.in_fresh_processes import run_in_fresh_processes

    def read(out: Path) -> dict[str, dict[str, Profile]]:
        tests = {}
        for line in out.read_text(encoding="utf-8").splitlines():
            data = json.loads(line)
            tests[str(data["nodeid"])] = {
                str(k): Profile.from_dict(v) for k, v in data["profiles"].items()
            }
        return tests

    limit = timeout if timeout is not None else DEFAULT_CHILD_TIMEOUT_S * max(1, len(nodeids))
    return run_in_fresh_processes(
        child_command(config, nodeids, backend),
        count,
        read,
        limit=limit,
        cwd=config.invocation_params.dir,
        extra_env=None if repeats is None else {child_process.ENV_PROCESS_REPEATS: str(repeats)},
    )


def timing_values(profile: Profile) -> dict[str, float]:
    """What one process contributes to a baseline's process values: each timing metric
    and each ``region()`` stage's ms per call (``stage:<name>``), where above 0."""
    from ..core.metrics import METRICS, profile_metrics
    from ..measure.stages import stage_metric, stage_times

    metrics = profile_metrics(profile)
    timings = sorted(name for name, row in METRICS.items() if row.clock)  # by name, as ever
    values = {m: float(metrics[m]) for m in timings if metrics.get(m, 0) > 0}
    for stage in stage_times(profile):
        if stage.named and stage.ms_per_call > 0:
            values[stage_metric(stage.name)] = stage.ms_per_call
    return values
