"""Counter groups: families stay together and fit the PMU."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pytest_inferperf.pmu.events import DEFAULT_EVENTS, FAMILIES, SOFTWARE_EVENTS, pack_groups

HARDWARE = [n for n in DEFAULT_EVENTS if n not in SOFTWARE_EVENTS]


def test_ratio_pairs_share_a_group_with_six_counters():
    groups = pack_groups(DEFAULT_EVENTS, 6)
    where = {name: i for i, g in enumerate(groups) for name in g}
    for a, b in [
        ("cycles", "instructions"),
        ("l1d_access", "l1d_refill"),
        ("l2_access", "l2_refill"),
        ("llc_read", "llc_miss"),
        ("branches", "branch_misses"),
    ]:
        assert where[a] == where[b]
    assert all(len(g) <= 6 for g in groups)
    assert ["task_clock"] in groups
    assert ["page_faults", "major_faults", "context_switches", "cpu_migrations"] in groups


@given(
    names=st.lists(st.sampled_from(HARDWARE), unique=True, min_size=1),
    capacity=st.integers(1, 8),
)
def test_every_event_placed_once_within_capacity(names, capacity):
    groups = pack_groups(names, capacity)
    flat = [n for g in groups for n in g]
    assert sorted(flat) == sorted(names)
    assert all(1 <= len(g) <= capacity for g in groups)
    for family in FAMILIES:
        members = [n for n in family if n in names]
        if members and len(members) <= capacity:
            assert len({i for i, g in enumerate(groups) for n in g if n in members}) == 1
