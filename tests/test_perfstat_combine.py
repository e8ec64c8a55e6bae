"""Several ``perf stat`` runs of one command combined; Arm event names as perf prints them.

The texts below follow perf's plain report layout: the header " Performance counter stats
for '<argv>':" (or 'system wide', process id '<pid>', with " (N runs)" after -r), one line
per counter, then "seconds time elapsed" (tools/perf/util/stat-display.c, print_header()
and print_footer(); the same layout as the real outputs in fixtures/perfstat/corpus/).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_inferperf.core.metrics import METRICS
from pytest_inferperf.ingest.perf_stat import (
    _ARM_CODES,
    _ARM_NAMES,
    BORROW_TOLERANCE,
    combine_runs,
    load_report,
    logical_name,
    parse_report,
    run_target,
    split_event,
)
from pytest_inferperf.pmu.events import CATALOGUE

FIXTURES = Path(__file__).parent / "fixtures" / "perfstat"
SPLIT = FIXTURES / "split_runs_n1.txt"
SPINNING = FIXTURES / "split_runs_spinning.txt"
SYSTEM_WIDE = FIXTURES / "system_wide_tlb.txt"
ARM_PMU = Path(__file__).parent / "fixtures" / "arm_pmu"


def _run(target: str, lines: dict[str, int], elapsed: float | None = 5.0) -> str:
    body = "".join(f"  {value:>18,}      {event}\n" for event, value in lines.items())
    tail = f"\n      {elapsed:.9f} seconds time elapsed\n" if elapsed is not None else ""
    return f" Performance counter stats for {target}:\n\n{body}{tail}\n"


# -- combined -------------------------------------------------------------------------------


def test_split_runs_of_one_command_are_combined():
    report = load_report(SPLIT)
    assert report.combined == ((0, 1),)
    assert report.runs_note == "combined 2 runs of the same command"
    assert report.apart == ()
    metrics = report.metrics("neoverse-n1")
    # run 2's L1I refills over run 1's instructions: 1,286,491,713 / 16,127,904,431 x 1000
    assert metrics["l1i_mpki"] == pytest.approx(1_286_491_713 / 16_127_904_431 * 1000)
    assert metrics["l1i_miss"] == pytest.approx(0.169, abs=5e-4)  # perf's own 16.90%
    assert metrics["ipc"] == pytest.approx(16_127_904_431 / 12_410_553_904)
    assert report.borrowed() == {
        0: {"l1i_access": (1,), "l1i_refill": (1,)},
        1: {"cycles": (0,), "instructions": (0,), "branches": (0,), "branch_misses": (0,)},
    }
    # the runs themselves stay as parsed: nothing is added across them
    assert [sorted(r.counts) for r in report.runs] == [
        ["branch_misses", "branches", "cycles", "instructions"],
        ["l1i_access", "l1i_refill"],
    ]


def test_a_run_with_its_own_instructions_normalises_by_them():
    text = _run("'./bench'", {"instructions:u": 10_000_000_000, "cycles:u": 8_000_000_000}) + _run(
        "'./bench'",
        {
            "instructions:u": 10_100_000_000,  # 1% more: within the tolerance
            "L1-icache-load-misses:u": 202_000_000,
        },
    )
    report = parse_report(text)
    assert report.combined == ((0, 1),)
    # its own 10.1e9 instructions, not run 1's 10.0e9 nor their median
    assert report.metrics()["l1i_mpki"] == pytest.approx(20.0)


def test_the_header_and_metrics_stay_as_they_were_when_nothing_is_combined():
    # same events in both runs: repeats, the median over them (as before)
    block = {"cycles": 10**9, "instructions": 2 * 10**9}
    report = parse_report(_run("'x'", block) + _run("'x'", {**block, "instructions": 3 * 10**9}))
    assert report.combined == ()
    assert report.runs_note == "2 runs kept apart: metrics are the median over the runs"
    assert report.metrics()["ipc"] == pytest.approx(2.5)
    assert parse_report(_run("'x'", block)).runs_note == ""


def test_instructions_that_disagree_keep_the_runs_apart():
    report = load_report(SPINNING)
    assert report.combined == ()
    (why,) = report.apart
    assert "instructions 16,127,904,431 and 18,911,630,442 differ by 14.7% (> 2%)" in why
    # each run from its own counts: run 2's L1I refills over its own instructions
    assert report.metrics()["l1i_mpki"] == pytest.approx(1_286_491_713 / 18_911_630_442 * 1000)
    assert "ipc" in report.metrics() and report.runs[1].counts.get("cycles") is None


def test_different_commands_stay_apart():
    text = _run("'./a'", {"cycles": 10**9, "instructions": 10**9}) + _run(
        "'./b'", {"L1-dcache-load-misses": 10**7}
    )
    report = parse_report(text)
    assert report.combined == ()
    assert "l1d_mpki" not in report.metrics()


def test_different_privilege_levels_stay_apart():
    text = _run("'./a'", {"cycles:u": 10**9, "instructions:u": 10**9}) + _run(
        "'./a'", {"L1-dcache-load-misses": 10**7}
    )
    report = parse_report(text)
    assert report.combined == ()
    assert report.apart == (
        "runs 1 and 2 of './a': different privilege levels counted (:u vs all levels)",
    )


def test_a_combined_pair_beside_another_command():
    text = (
        _run("'./a'", {"instructions": 10**10, "cycles": 10**10})
        + _run("'./b'", {"instructions": 10**9, "cycles": 4 * 10**9})
        + _run("'./a'", {"L1-dcache-load-misses": 10**8})
    )
    report = parse_report(text)
    assert report.groups == ((0, 2), (1,))
    assert report.runs_note == (
        "combined runs 1+3 of the same command; 2 results kept apart: metrics are the "
        "median over them"
    )
    assert report.apart == ("different targets (runs 1+3: './a', run 2: './b')",)
    assert report.metrics()["l1d_mpki"] == pytest.approx(10.0)  # ./a's only
    assert report.metrics()["ipc"] == pytest.approx((1.0 + 0.25) / 2)


def test_repeat_count_suffix_is_not_part_of_the_command():
    first = _run("'./a' (5 runs)", {"instructions": 10**9})
    second = _run("'./a' (3 runs)", {"branch-misses": 10**6})
    report = parse_report(first + second)
    assert {run_target(r).text for r in report.runs} == {"'./a'"}
    assert report.combined == ((0, 1),)
    assert report.metrics()["branch_mpki"] == pytest.approx(1.0)


def test_system_wide_runs_combine_only_over_windows_of_one_length():
    walks = _run("'system wide'", {"DTLB_WALK": 10**6}, elapsed=10.0)
    same = _run("'system wide'", {"L1D_TLB": 10**9}, elapsed=10.01)
    longer = _run("'system wide'", {"L1D_TLB": 10**9}, elapsed=20.0)
    assert parse_report(walks + same).combined == ((0, 1),)
    report = parse_report(walks + longer)
    assert report.combined == ()
    assert report.apart == (
        "runs 1 and 2 of no command ('system wide'): elapsed 10 s and 20 s differ by 50.0% (> 2%)",
    )


def test_tolerance_is_the_stated_two_percent():
    assert BORROW_TOLERANCE == 0.02
    for extra, combined in ((0.0199, True), (0.0205, False)):
        text = _run("'./a'", {"instructions": 10**10, "cycles": 10**10}) + _run(
            "'./a'", {"instructions": round(10**10 / (1 - extra)), "branch-misses": 10**7}
        )
        assert bool(parse_report(text).combined) is combined


# -- system-wide, no instructions --------------------------------------------------------------


def test_system_wide_tlb_only_run_says_what_it_cannot_give():
    report = load_report(SYSTEM_WIDE)
    metrics = report.metrics()
    assert metrics == {
        "dtlb_miss": pytest.approx(11_902_337 / 6_470_112_956),
        "itlb_miss": pytest.approx(48_213_774 / 9_214_009_331),
    }
    limits = report.limits()
    assert limits[0].startswith("no instructions counted: no rate per 1,000 instructions")
    assert "dtlb_access, dtlb_walk, itlb_access, itlb_walk" in limits[0]
    assert limits[1] == "no cycles counted: no IPC and no share of cycles stalled"
    assert limits[2].startswith("'system wide': the counts are every task's")
    rates = report.rates()
    assert rates["itlb_walk"] == pytest.approx(48_213_774 / 10.001822190)
    assert rates["dtlb_walk"] == pytest.approx(11_902_337 / 10.001822190)


def test_a_run_with_instructions_has_no_limits():
    assert load_report(SPLIT).limits() == ()


# -- properties -------------------------------------------------------------------------------

EVENTS = (
    ("cycles", "cycles"),
    ("branches", "branches"),
    ("branch-misses", "branch_misses"),
    ("L1-icache-loads", "l1i_access"),
    ("L1-icache-load-misses", "l1i_refill"),
    ("L1-dcache-loads", "l1d_access"),
    ("L1-dcache-load-misses", "l1d_refill"),
    ("ITLB_WALK", "itlb_walk"),
    ("armv8_pmuv3_0/l2d_cache_refill/", "l2_refill"),
)
run_st = st.tuples(
    st.booleans(),  # counts instructions
    st.integers(min_value=0, max_value=399),  # instructions' drift, in 1/10,000
    st.sets(st.integers(min_value=0, max_value=len(EVENTS) - 1), min_size=1),
    st.sampled_from(("'./a'", "'./b'")),
)


def _text(runs, values) -> str:
    out = []
    for has_instructions, drift, events, target in runs:
        lines = {EVENTS[i][0]: values[i] for i in sorted(events)}
        if has_instructions:
            lines["instructions"] = 10**10 + drift * 10**6
        out.append(_run(target, lines))
    return "".join(out)


@settings(max_examples=80, deadline=None)
@given(
    runs=st.lists(run_st, min_size=2, max_size=4),
    values=st.lists(
        st.integers(min_value=1, max_value=10**11), min_size=len(EVENTS), max_size=len(EVENTS)
    ),
    seed=st.integers(min_value=0, max_value=2**16),
)
def test_property_combination_is_order_independent(runs, values, seed):
    shuffled = list(range(len(runs)))
    random.Random(seed).shuffle(shuffled)
    a = parse_report(_text(runs, values))
    b = parse_report(_text([runs[i] for i in shuffled], values))
    # the same runs end up together, whatever their order in the file
    groups_a = {frozenset(g) for g in a.groups}
    groups_b = {frozenset(shuffled[i] for i in g) for g in b.groups}
    assert groups_a == groups_b
    ma, mb = a.metrics(), b.metrics()
    assert ma.keys() == mb.keys()
    for name, value in ma.items():
        assert mb[name] == pytest.approx(value, rel=1e-12)


@settings(max_examples=80, deadline=None)
@given(
    runs=st.lists(run_st, min_size=1, max_size=4),
    values=st.lists(
        st.integers(min_value=1, max_value=10**11), min_size=len(EVENTS), max_size=len(EVENTS)
    ),
)
def test_property_combining_never_invents_an_event(runs, values):
    report = parse_report(_text(runs, values))
    printed = {logical for i, (_, logical) in enumerate(EVENTS) if any(i in r[2] for r in runs)}
    if any(r[0] for r in runs):
        printed.add("instructions")
    for run in report.runs:  # every run holds only what its own block printed
        assert set(run.counts) <= printed
    for i, lent in report.borrowed().items():
        group = next(g for g in report.groups if i in g)
        for name, lenders in lent.items():
            assert name not in report.runs[i].counts
            assert all(j in group and name in report.runs[j].counts for j in lenders)
    for name in report.metrics():
        spec = METRICS.get(name)
        if spec is not None:  # every input of every metric was printed somewhere
            assert set(spec.inputs) <= printed
    # each run appears in exactly one result
    assert sorted(i for g in report.groups for i in g) == list(range(len(report.runs)))


def test_combine_runs_of_one_run_is_that_run():
    report = load_report(SYSTEM_WIDE)
    assert combine_runs(report.runs).groups == ((0,),)
    assert report.combination is None and report.groups == ((0,),)


# -- event names --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "logical"),
    [
        ("INST_RETIRED", "instructions"),
        ("CPU_CYCLES", "cycles"),
        ("ITLB_WALK", "itlb_walk"),
        ("DTLB_WALK", "dtlb_walk"),
        ("L1I_TLB", "itlb_access"),
        ("L1D_TLB", "dtlb_access"),
        ("L1D_TLB_REFILL", "l1d_tlb_refill"),
        ("L1D_CACHE_REFILL", "l1d_refill"),
        ("L1I_CACHE_REFILL", "l1i_refill"),
        ("BR_MIS_PRED", "branch_misses"),
        ("BR_PRED", "branches"),
        ("STALL_FRONTEND", "stall_frontend"),
        ("STALL_BACKEND", "stall_backend"),
        ("INST_RETIRED:u", "instructions"),
        ("ITLB_WALK:k", "itlb_walk"),
        ("armv8_pmuv3_0/inst_retired/", "instructions"),
        ("armv8_pmuv3_0/INST_RETIRED/u", "instructions"),
        ("armv8_pmuv3_0/l1i_cache_refill/", "l1i_refill"),
        ("armv8_cortex_a72/l1d_cache_refill/", "l1d_refill"),
        ("armv8_cortex_a72/l1d_cache_refill/uk", "l1d_refill"),
        ("armv8_pmuv3_0/event=0x8/", "instructions"),
        ("armv8_pmuv3_0/event=0x08/u", "instructions"),
        ("armv8_pmuv3_0/event=0x35/", "itlb_walk"),
        ("armv8_pmuv3_0/config=0x11/", "cycles"),
        ("r08", "instructions"),
        ("r8:u", "instructions"),
        ("r0034", "dtlb_walk"),
        ("cpu/instructions/", "instructions"),
        ("cpu_core/instructions/u", "instructions"),
        ("cpu_atom/cycles/k", "cycles"),
    ],
)
def test_arm_and_pmu_prefixed_names(name, logical):
    assert logical_name(name, "arm") == logical


@pytest.mark.parametrize(
    ("name", "arch"),
    [
        ("ITLB_WALK", "arm"),
        ("armv8_pmuv3_0/event=0x8/", "arm"),
        ("ARMV8_PMUV3_0/INST_RETIRED/", "arm"),
        ("cpu_core/instructions/u", "x86"),
    ],
)
def test_names_tell_the_architecture(name, arch):
    assert split_event(name).arch_hint == arch


def test_prefixed_pmu_in_upper_case_still_names_its_core():
    assert split_event("ARMV8_CORTEX_A72/L1D_CACHE_REFILL/").core_hint == "cortex-a72"


def test_raw_codes_are_not_read_as_arm_on_x86():
    assert logical_name("r08", "x86") is None
    assert logical_name("cpu/event=0xc0,umask=0x0/", "x86") is None


def _published_codes() -> dict[int, str]:
    """Arm's own names for the codes, from ARM-software/data pmu/*.json (fixtures).

    LL_CACHE (0x32) and LL_CACHE_MISS (0x33) are common events no core of the fixtures
    implements; their names are ARM-software/data's common_armv8.json ones.
    """
    out: dict[int, str] = {0x32: "ll_cache", 0x33: "ll_cache_miss"}
    for path in sorted(ARM_PMU.glob("*.json")):
        for name, code in json.loads(path.read_text())["events"].items():
            out.setdefault(code, name.lower())
    return out


def test_raw_code_table_agrees_with_arms_event_lists():
    published = _published_codes()
    extra = {"l3d_cache", "l3d_cache_refill", "ll_cache", "ll_cache_miss"}
    for code, logical in _ARM_CODES.items():
        name = published.get(code)
        assert name is not None, hex(code)
        names = {n for n, _ in CATALOGUE[logical].arm} | extra
        assert name in names, (hex(code), name, logical)
        assert _ARM_NAMES.get(name, logical) == logical or name in extra


def test_event_names_of_every_published_code_map_back_to_their_code():
    published = _published_codes()
    for code, logical in _ARM_CODES.items():
        assert logical_name(published[code].upper(), "arm") == logical
        assert logical_name(f"armv8_pmuv3_0/event={code:#x}/", "arm") == logical
        assert logical_name(f"r{code:x}", "arm") == logical


def test_the_scope_of_a_run_without_a_command_is_said_as_perf_counted_it():
    # -a counts every task on the CPUs; -p / -t the attached tasks only (-p wins over -a:
    # "PID/TID switch overriding SYSTEM", perf's util/target.c)
    cycles = {"cycles": 10**9, "instructions": 10**9}
    system = parse_report(_run("'system wide'", cycles)).limits()
    attached = parse_report(_run("process id '61238'", cycles)).limits()
    assert system == (
        "'system wide': the counts are every task's on the counted CPUs, not one program's",
    )
    assert attached == (
        "process id '61238': the counts are the attached tasks' while perf was attached, "
        "not a whole run",
    )
