"""The records that cross between the simulate parent and its child: each one read back
is the record that was written (hypothesis), and a record from an older child still
loads."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pytest_inferperf.measure.simulate.protocol import (
    ChildOptions,
    ChildRecord,
    Instrumentation,
    PlanStep,
    RegionReply,
    child_repeats,
)

names = st.text(min_size=0, max_size=20)
counts = st.integers(min_value=0, max_value=10**12)
steps = st.builds(PlanStep, st.sampled_from(["warmup", "repeat", "overhead"]), counts, counts)
switches = st.builds(
    Instrumentation,
    st.sampled_from(["client request", "vgdb", "on from the start"]),
    st.booleans(),
    st.none() | names,
    st.none() | st.floats(min_value=0, max_value=1e3, allow_nan=False),
)
records = st.builds(
    ChildRecord,
    variant=names,
    repeats=st.integers(1, 50),
    calls=st.integers(1, 1000),
    pid=st.none() | st.integers(1, 1 << 22),
    plan=st.lists(steps, max_size=8),
    session=st.none() | st.dictionaries(names, st.integers() | names, max_size=3),
    warmup_ns=st.lists(counts, max_size=12),
    instrumentation=st.none() | switches,
    instrumentation_off=st.none() | switches,
    outputs_ok=st.booleans(),
    result_digest=st.none() | st.text("0123456789abcdef", min_size=16, max_size=16),
    session_runs=st.none() | st.dictionaries(names, st.integers(0, 100), min_size=1, max_size=3),
    threads=st.lists(names, max_size=4),
    other_threads_cpu_ns=st.none() | st.dictionaries(st.integers(1, 99999).map(str), counts),
    region_wall_ns=st.none() | counts,
    cpu_features=st.none() | st.lists(names, max_size=5),
    error=st.none() | names,
)


@given(records)
def test_a_child_record_reads_back_as_written(record):
    assert ChildRecord.from_json(record.to_json()) == record


@given(records, st.none() | names, st.booleans())
def test_a_reply_carries_the_record_and_its_dumps_or_the_end_of_a_test(record, dumps, finished):
    reply = (
        RegionReply("t.py::t", finished=True)
        if finished
        else RegionReply("t.py::t", record.variant, record, dumps)
    )
    again = RegionReply.from_json(reply.to_json())
    assert again == reply
    assert (again.record is None) == finished


@given(names, st.integers(1, 50), st.integers(1, 1000))
def test_options_read_back(variant, repeats, calls):
    options = ChildOptions(repeats, calls, "vgdb", "/usr/bin/vgdb", None, f"/tmp/{variant}")
    assert ChildOptions.from_json(options.to_json()) == options


def test_the_child_measures_the_runners_repeats_up_to_the_default():
    assert [child_repeats(n) for n in (1, 2, 3, 30)] == [1, 2, 3, 3]


def test_a_record_without_the_newer_fields_loads_with_defaults():
    """What a child of the previous version wrote: no session_runs, no threads."""
    old = {
        "variant": "",
        "repeats": 3,
        "calls": 1,
        "plan": [{"kind": "repeat", "calls": 1, "wall_ns": 5}],
        "warmup": {"calls": 1, "durations_ns": [7]},
        "instrumentation": {"mode": "vgdb", "ok": True},
        "result_digest": "0123456789abcdef",
    }
    record = ChildRecord.from_dict(old)
    assert record.session_runs is None and record.threads == [] and record.instrumented
    assert record.plan == [PlanStep("repeat", 1, 5)] and record.warmup_ns == [7]
    assert ChildOptions.from_json(None) == ChildOptions()  # no options: the defaults
