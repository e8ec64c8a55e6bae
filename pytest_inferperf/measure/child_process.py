"""Which role this process plays: the environment that marks a child.

Owns: the names of the environment variables the simulate backend sets in the
valgrind child it starts, the one that marks a fresh-process child (a test measured
again in a new process for the between-process noise, plugin.fresh_processes), and
the checks for them. Kept apart (stdlib only) so the pytest plugin can ask "am I a
child?" without importing the engine.

Must not: start, talk to or measure anything.
"""

from __future__ import annotations

import os

ENV_CHILD = "INFERPERF_SIMULATE_CHILD"  # path of the JSON result the child writes
ENV_SHARED = "INFERPERF_SIMULATE_SHARED"  # "<hang-up fd>,<reply fd>,<parent pid>" in a shared child
ENV_CLAIMS = "INFERPERF_SIMULATE_CLAIMS"  # folder where shared children claim their next test
ENV_START = "INFERPERF_SIMULATE_START"  # the start file the child waits for (child_start)
#: The pid of the process that started a simulation child: the child's parent while it
#: lives. Passed, not guessed: where pytest runs as pid 1 (a container's entry point),
#: a child's parent *is* pid 1, which otherwise reads as "orphaned".
ENV_PARENT = "INFERPERF_SIMULATE_PARENT"
ENV_PROCESS = "INFERPERF_PROCESS_CHILD"  # path of the profiles a fresh-process child writes
#: In a fresh-process child that measures one value per test for a new baseline: how
#: many repeats it measures (timings only: no operator pass). Unset in a child that
#: confirms a suspected regression, which measures as the parent did.
ENV_PROCESS_REPEATS = "INFERPERF_PROCESS_REPEATS"


def start_env(start_file: str) -> dict[str, str]:
    """What a simulation child is told to find its start file and its parent by."""
    return {ENV_START: start_file, ENV_PARENT: str(os.getpid())}


def parent_pid() -> int | None:
    """In a simulation child: the pid of the process that started it, where it said."""
    try:
        return int(os.environ.get(ENV_PARENT, "")) or None
    except ValueError:
        return None


def in_child() -> bool:
    """True inside the pytest process that valgrind runs for a simulation."""
    return bool(os.environ.get(ENV_CHILD))


def is_shared_child() -> bool:
    """True in a shared simulation child."""
    return bool(os.environ.get(ENV_SHARED))


def in_process_child() -> bool:
    """True in a fresh-process child: it measures its test for the parent, judges nothing."""
    return bool(os.environ.get(ENV_PROCESS))


def process_value_repeats() -> int | None:
    """In a fresh-process child recording one value per test for a new baseline: the
    repeats it measures each test for; None in every other process."""
    if not in_process_child():
        return None
    try:
        repeats = int(os.environ.get(ENV_PROCESS_REPEATS, ""))
    except ValueError:
        return None
    return repeats if repeats >= 1 else None
