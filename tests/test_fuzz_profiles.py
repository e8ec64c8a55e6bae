"""Hostile profiles through the whole path: load, judge, render, update line, CLI.

Every field at every depth of a rich profile (stages, operators, op types, roofline,
energy, stacks, per-thread counts, machine facts) is replaced by hostile values (huge
integers, 1e400, subnormals, negatives, wrong types, control characters, empty and
nested containers) or removed, and the result goes through every reader
(:func:`profile_paths.drive`). The only outcomes allowed: a clear refusal naming the
file (exit 2 from the CLI), or acceptance followed by judging and rendering without an
exception. The exhaustive sweep (over 14,000 mutations) is slow; a random sample of it
runs in the default suite, and the sweep sends every eighth mutation through the CLI
(``INFERPERF_FUZZ_CLI_EVERY=1``: all of them).
"""

from __future__ import annotations

import json
import math
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profile_paths import HOSTILE, OVERFLOW, RICH, drive, dumps, mutate, paths

DOC = json.loads(RICH.read_text(encoding="utf-8"))
PATHS = list(paths(DOC))
DELETE = object()

HOSTILE_VALUES = st.one_of(
    st.sampled_from([*HOSTILE, OVERFLOW, DELETE]),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=12),
    st.recursive(
        st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=3),
        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
        max_leaves=6,
    ),
)


def _apply(path, value):
    return mutate(DOC, path, None, delete=True) if value is DELETE else mutate(DOC, path, value)


def test_there_are_enough_fields_to_mutate():
    assert len(PATHS) > 400
    assert len(PATHS) * (len(HOSTILE) + 2) >= 10_000


def test_the_unmutated_document_is_accepted_everywhere(tmp_path):
    assert drive(dumps(DOC), tmp_path) == "accepted"


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("repeats", 0, "sample", "counts", "task_clock", "value"), 5e-324),
        (("repeats", 0, "calls"), 10**4000),
        (("memory", "peak_rss_bytes"), 10**400),
        (("latency", "p50_ms"), OVERFLOW),
        (("repeats",), []),
        (("repeats", 0, "calls"), 0),
        (("repeats", 0, "calls"), -3),
        (("schema_version",), 0),
        (("schema_version",), -7),
        (("events", 0, "reason"), True),
        (("machine", "cpu"), "x"),
        (("machine", "cpu"), []),
    ],
)
def test_the_values_that_crashed_are_refused(tmp_path, path, value):
    assert drive(dumps(_apply(path, value)), tmp_path) == "refused"


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(path=st.sampled_from(PATHS), value=HOSTILE_VALUES)
def test_random_mutations_through_the_whole_path(tmp_path, path, value):
    drive(dumps(_apply(path, value)), tmp_path)


# Every mutation goes through load, judge, every renderer and the update line; every
# CLI_EVERY-th also through the CLI's validate (both ways) and compare, which write their
# reports and cost three times the rest. INFERPERF_FUZZ_CLI_EVERY=1 sends every one
# through the CLI too (14,144 mutations, about 20 minutes on the 2-CPU CI VM).
CLI_EVERY = int(os.environ.get("INFERPERF_FUZZ_CLI_EVERY", "8"))


@pytest.mark.slow
def test_every_field_at_every_depth_through_the_whole_path(tmp_path):
    failures, total, refused = [], 0, 0
    for path in PATHS:
        for value in [*HOSTILE, OVERFLOW, DELETE]:
            total += 1
            try:
                refused += (
                    drive(dumps(_apply(path, value)), tmp_path, cli=total % CLI_EVERY == 0)
                    == "refused"
                )
            except Exception as exc:
                failures.append(f"{path} = {value!r:.40}: {type(exc).__name__}: {exc}"[:300])
    assert total >= 10_000
    assert not failures, f"{len(failures)} of {total} crashed:\n" + "\n".join(failures[:40])
    assert 0 < refused < total
    assert math.isfinite(total)
