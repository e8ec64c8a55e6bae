"""Which role this process plays in a simulation: the environment that marks a child.

Owns: the names of the environment variables the simulate backend sets in the
valgrind child it starts, and the two checks for them. Kept apart (stdlib only)
so the pytest plugin can ask "am I a simulation child?" without importing the
simulate backend.

Must not: start, talk to or measure anything.
"""

from __future__ import annotations

import os

ENV_CHILD = "INFERPERF_SIMULATE_CHILD"  # path of the JSON result the child writes
ENV_SHARED = "INFERPERF_SIMULATE_SHARED"  # "<hang-up fd>,<reply fd>,<parent pid>" in a shared child
ENV_CLAIMS = "INFERPERF_SIMULATE_CLAIMS"  # folder where shared children claim their next test
ENV_START = "INFERPERF_SIMULATE_START"  # the start file the child waits for (child_start)


def in_child() -> bool:
    """True inside the pytest process that valgrind runs for a simulation."""
    return bool(os.environ.get(ENV_CHILD))


def is_shared_child() -> bool:
    """True in a shared simulation child."""
    return bool(os.environ.get(ENV_SHARED))
