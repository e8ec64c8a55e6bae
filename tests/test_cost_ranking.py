"""Causes are ranked by the share of the cycles they explain, shown with the formula.

Each case writes its arithmetic next to it, from the cited penalties of
``cycle_costs``: Neoverse N1 11 cycles per L2 hit, 200 per miss to DRAM (AnandTech's
Graviton2 review), 11 per mispredicted branch (N1 SOG via LLVM); the Arm family's
LLC hit 40 (Levinthal, no Arm figure on record), a walk at an LLC hit; Skylake 14 per
mispredict (LLVM); a core nobody named takes the median of the Arm, Intel and AMD
family figures (DRAM 200, mispredict 13).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_inferperf.diagnose.change import MATERIAL_SHARE
from pytest_inferperf.diagnose.classify import (
    INFERRED_TITLE,
    SPIN_INFERRED_TITLE,
    CycleShare,
    Finding,
    RuleContext,
    cycle_share,
    diagnose,
    diagnosis_as_dict,
    diagnosis_from_dict,
    rank,
)
from pytest_inferperf.diagnose.cycle_costs import (
    FAMILY_PENALTIES,
    KINDS,
    family_key,
    penalties,
)
from pytest_inferperf.diagnose.thresholds_by_core import CORES, X86_EXAMPLES, core_facts
from pytest_inferperf.report.diagnosis import render


def categories(diagnosis):
    return [f.category for f in diagnosis.findings]


# -- the penalty table ----------------------------------------------------------------


@pytest.mark.parametrize("slug", [*CORES, *X86_EXAMPLES, ""])
def test_every_core_has_penalties_or_an_explicit_family_fallback(slug):
    table = penalties(slug)
    family = FAMILY_PENALTIES[family_key(slug)]
    own = core_facts(slug).penalties  # the core's own figures, on its row
    for kind in KINDS:
        penalty = table.of(kind)
        assert penalty.cycles > 0, (slug, kind)
        assert penalty.source and penalty.label, (slug, kind)
        if kind in own:
            assert penalty == own[kind] and not penalty.fallback, (slug, kind)
        elif kind == "walk" and "llc_hit" in own:  # a walk costs the core's own LLC hit
            assert penalty.cycles == own["llc_hit"].cycles, slug
        else:  # no figure of its own: it says which family's it is
            assert penalty.fallback == family.name, (slug, kind)


def test_family_rows_are_their_own_and_cite_a_source():
    for key, family in FAMILY_PENALTIES.items():
        assert family.key == key
        for kind in KINDS:
            assert family.of(kind).fallback == ""
            assert family.of(kind).source


def test_per_core_figures_and_their_sources():
    n1 = penalties("neoverse-n1")
    assert (n1.l2_hit.cycles, n1.dram.cycles, n1.mispredict.cycles) == (11, 200, 11)
    assert "Graviton2" in n1.l2_hit.source and "AArch64SchedNeoverseN1.td" in n1.mispredict.source
    assert n1.fallbacks == ("llc_hit", "walk")  # no Arm LLC latency on record
    assert penalties("intel-core-skylake").mispredict.cycles == 14
    assert penalties("amd-epyc-zen4").mispredict.cycles == 13
    a72 = penalties("cortex-a72")
    assert a72.fallbacks == tuple(KINDS) and a72.l2_hit.fallback == "Arm family"
    # A core nobody named: the median of the three families, each kind.
    generic = penalties("")
    assert (generic.dram.cycles, generic.mispredict.cycles) == (200, 13)
    with pytest.raises(KeyError):
        n1.of("l3_hit")


# -- the failure classes ---------------------------------------------------------


def test_many_llc_misses_outrank_many_mispredicts_without_a_core():
    # IPC 0.05: 1000 instructions take 20,000 cycles. 718 LLC misses x 200 (generic
    # DRAM) = 143,600 cycles: capped at the whole. 49 mispredicts x 13 = 637: 3.2%.
    metrics = {"ipc": 0.05, "llc_mpki": 718.0, "branch_mpki": 49.0, "branch_miss": 0.2}
    diagnosis = diagnose(metrics, core="")
    assert categories(diagnosis) == ["l2_llc_residency", "branch_misprediction"]
    # capped by the slots IPC leaves unused on the widest core on record (no core
    # named: the bound must hold on every core the run may be from, generic widest
    # width 10): 1 - 0.05 / 10
    assert diagnosis.primary.share.share == pytest.approx(1 - 0.05 / 10)
    # A cap at the narrowest (2) would bound nothing once IPC passes it: at IPC 2.9 it
    # would cap every share at 0.
    fast = diagnose({"ipc": 2.9, "branch_mpki": 3.3}, core="")
    assert fast.small[0].share.share == pytest.approx(3.3 * 13 * 2.9 / 1000)
    branch = diagnosis.secondary[0]
    assert branch.confidence > diagnosis.primary.confidence  # confidence alone said branch
    assert branch.share.share == pytest.approx(49 * 13 / 20000)
    assert branch.share.text == (
        "~3.2% of cycles: 49 branch mispredictions/KI x 13 cycles (generic fallback: "
        "median of the families) / 20000 cycles/KI"
    )


def test_the_share_formula_on_a_named_core():
    # N1, IPC 0.5: 2000 cycles/KI. 5 LLC misses x 200 = 1000 cycles: 50%; capped by
    # 1 - 0.5/5 = 90% (no cap reached).
    share = cycle_share(
        "l2_llc_residency", {"ipc": 0.5, "llc_mpki": 5.0}, RuleContext.of("neoverse-n1")
    )
    assert share is not None
    assert share.share == pytest.approx(0.5)
    assert share.text == (
        "~50% of cycles: 5 LLC read misses/KI x 200 cycles (Neoverse N1: AnandTech) "
        "/ 2000 cycles/KI"
    )


def test_ilp_bound_run_is_not_nothing_crossed():
    # Skylake (width 4): IPC 2.6 < 0.75 x 4 = 3, so not near the width; backend stalls
    # 15% < 50%, L1D 0.5 and LLC 0.01 MPKI: no cause fires. 1 - 2.6/4 = 35% of the slots
    # unused; the counted misses explain (0.5 - 0.01) x 10 / 384.6 = 1.3% and
    # 0.01 x 180 / 384.6 = 0.47%: the remainder, 33%, is ILP-limited compute.
    metrics = {"ipc": 2.6, "backend_stalled": 0.15, "l1d_mpki": 0.5, "llc_mpki": 0.01}
    diagnosis = diagnose(metrics, core="intel-core-skylake")
    assert diagnosis.primary is not None
    assert diagnosis.primary.category == "ipc_collapse"
    explained = (0.49 * 10 + 0.01 * 180) / (1000 / 2.6)
    assert diagnosis.primary.share.share == pytest.approx(0.35 - explained)
    assert diagnosis.primary.evidence[0].line() == "ipc = 2.6 < 3"
    assert "not counted: l2_mpki, dtlb_mpki, branch_mpki" in diagnosis.primary.explanation
    text = render(diagnosis)
    assert "  share: ~33% of cycles: 1 - IPC 2.6 / width 4 = 35% of issue slots unused" in text


def test_ilp_needs_memory_ruled_out():
    # The same IPC with nothing counted about memory: not judged, and said so.
    diagnosis = diagnose({"ipc": 2.6}, core="intel-core-skylake")
    assert diagnosis.primary is None
    assert "memory stalls" in diagnosis.not_judged["ipc_collapse"]
    assert "no counted cause explains the IPC below" in render(diagnosis)


# The Skylake ILP case above, with six CPUs busy on average: threads that spin-wait
# pause in every spin on x86 (ONNX Runtime's SpinPause: TPAUSE or PAUSE; PAUSE up to 140
# cycles from Skylake on) and retire few instructions per cycle with nothing missed.
SPINNABLE = {"ipc": 0.16, "backend_stalled": 0.15, "l1d_mpki": 0.5, "llc_mpki": 0.01}


@pytest.mark.parametrize(
    ("core", "busy", "session", "named"),
    [
        ("intel-core-skylake", 6.0, None, False),  # spinning not ruled out
        ("intel-core-skylake", 6.0, {"allow_spinning": True, "intra_op_threads": 6}, False),
        ("intel-core-skylake", 6.0, {"allow_spinning": False, "intra_op_threads": 6}, True),
        ("intel-core-skylake", 1.0, None, True),  # one CPU busy: no threads to spin
        ("intel-core-skylake", None, None, True),  # CPU time not counted: as before
        ("cortex-a76", 6.0, None, True),  # Arm: SpinPause does nothing, spins retire fast
        ("", 6.0, None, False),  # an unnamed core may be x86
    ],
)
def test_low_ipc_with_several_cpus_busy_is_ilp_only_where_spinning_is_ruled_out(
    core, busy, session, named
):
    metrics = {**SPINNABLE, **({} if busy is None else {"cpu_utilisation": busy})}
    diagnosis = diagnose(metrics, core=core, session=session)
    if named:
        assert diagnosis.primary is not None
        assert diagnosis.primary.category == "ipc_collapse"
        return
    assert all(f.category != "ipc_collapse" for f in diagnosis.findings)
    reason = diagnosis.not_judged["ipc_collapse"]
    assert reason.startswith("IPC ipc = 0.16 < ")
    assert ", but the run kept 6 CPUs busy on average" in reason
    assert "spin-waiting not ruled out (ONNX Runtime's SpinPause" in reason
    assert "PAUSE takes up to 140 cycles from Skylake on" in reason
    assert reason.endswith(
        "to judge, measure with spinning off (ONNX Runtime: session.intra_op."
        "allow_spinning = 0) or say that it was (inferperf explain --spinning off)"
    )
    if session is None:
        assert diagnosis.primary is None
        assert render(diagnosis).startswith(
            f"Diagnosis ({diagnosis.core or 'unknown core'}): no counted cause explains "
            "the IPC below the core's width, and threads spin-waiting are not ruled out "
            "(ipc_collapse not judged)."
        )
    else:  # the session spins: its pool threads are named, not the kernels
        assert diagnosis.primary.category == "thread_spinning"


def test_low_ipc_with_several_cpus_busy_and_no_stall_count_names_the_core_bound_backend():
    # No stall fraction counted: the backend is not measured, and both readings left (a
    # dependency chain, a spin that pauses) are Core Bound (Intel TMA: tma_slow_pause
    # under tma_serializing_operation), so the parent is named, inferred, at half the
    # confidence (IPC 0.16 < 1 on Skylake: strength 0.4 + 0.6 x log(6.25)/log 4 = 1.0,
    # 0.85 x 1.0 = 0.85, halved: 0.425).
    metrics = {"ipc": 0.16, "l1d_mpki": 0.5, "llc_mpki": 0.01, "cpu_utilisation": 6.0}
    diagnosis = diagnose(metrics, core="intel-core-skylake")
    primary = diagnosis.primary
    assert (primary.category, primary.title) == ("backend_bound", SPIN_INFERRED_TITLE)
    assert primary.confidence == pytest.approx(0.425, abs=1e-3)
    assert "tma_slow_pause under tma_serializing_operation" in primary.evidence[0].source
    assert "or, with several CPUs busy, in threads that spin-wait" in primary.explanation
    assert primary.recommendations[0].startswith("Tell the two apart: measure with spinning off")
    assert "spin-waiting not ruled out" in diagnosis.not_judged["ipc_collapse"]
    # memory not measured at all: the memory-or-chain inference, as before
    bare = diagnose({"ipc": 0.16, "cpu_utilisation": 6.0}, core="intel-core-skylake")
    assert bare.primary.title == INFERRED_TITLE


def test_cycles_stalled_on_dram_name_the_memory_not_ilp():
    # Sapphire Rapids (Golden Cove, width 6): IPC 1.58 leaves 74% of the slots unused.
    # 11.6% of the cycles stalled on loads that missed the L3 (MEMORY_ACTIVITY.
    # STALLS_L3_MISS) is past Intel TMA's tma_dram_bound > 0.1: the memory is named,
    # with the measured stall as its share, and the backend stall is split (no
    # ILP-limited compute called for the rest).
    metrics = {"ipc": 1.58, "dram_stalled": 0.116, "llc_miss": 0.82, "llc_mpki": 0.87}
    diagnosis = diagnose(metrics, core="sapphirerapids")
    assert diagnosis.primary.category == "l2_llc_residency"
    assert diagnosis.primary.share.metric == "dram_stalled"
    assert diagnosis.primary.share.share == pytest.approx(0.116)
    assert "dram_stalled = 0.116 > 0.1" in render(diagnosis)
    # Below Intel's threshold it is not named on the stall alone.
    calm = diagnose({"ipc": 1.58, "dram_stalled": 0.05}, core="sapphirerapids")
    assert "l2_llc_residency" not in categories(calm)


def test_level2_memory_bound_names_memory_and_core_bound_the_backend():
    # Top-down level 2 splits the backend's slots (Backend = Memory + Core; Intel TMA
    # thresholds tma_memory_bound > 0.2, tma_core_bound > 0.1). A backend that waits on
    # memory is the memory category, with the memory part as its share; the level-1
    # backend share only supports the core-bound verdict, so it is not named for it.
    level1 = {"retiring": 0.30, "bad_speculation": 0.05, "frontend_bound": 0.10}
    memory = diagnose(
        {**level1, "backend_bound": 0.55, "memory_bound": 0.50, "core_bound": 0.05},
        core="sapphirerapids",
    )
    assert categories(memory) == ["l2_llc_residency"]
    assert memory.primary.share.metric == "memory_bound"
    assert memory.primary.share.share == pytest.approx(0.50)
    text = render(memory)
    assert "memory_bound = 0.5 > 0.2" in text
    assert "core-bound 5%, memory-bound 50%" in memory.primary.explanation
    assert "Which level served the loads was not counted" in memory.primary.explanation
    # The same level-1 backend, split the other way: core-bound, its share the core part.
    core = diagnose(
        {**level1, "backend_bound": 0.55, "memory_bound": 0.04, "core_bound": 0.51},
        core="sapphirerapids",
    )
    assert categories(core) == ["backend_bound"]
    assert core.primary.share.metric == "core_bound"
    assert core.primary.share.share == pytest.approx(0.51)
    # Both material: the larger part leads, each ranked by its own slots (the core part
    # holds none of the memory part's, so it is not ranked as its parent).
    both = diagnose(
        {**level1, "backend_bound": 0.55, "memory_bound": 0.25, "core_bound": 0.30},
        core="sapphirerapids",
    )
    assert categories(both) == ["backend_bound", "l2_llc_residency"]
    assert [f.share.share for f in (both.primary, *both.secondary)] == pytest.approx([0.30, 0.25])
    # Without level 2 the level-1 backend is named as before.
    whole = diagnose({**level1, "backend_bound": 0.55}, core="sapphirerapids")
    assert whole.primary.category == "backend_bound"
    assert whole.primary.share.metric == "backend_bound"


# A memory-bound backend at levels 1 and 2, which level 3 then splits.
MEMORY_BOUND_LEVEL2 = {
    "retiring": 0.30,
    "bad_speculation": 0.05,
    "frontend_bound": 0.10,
    "backend_bound": 0.55,
    "memory_bound": 0.50,
}


def test_level3_names_the_cache_level_that_served_the_memory_part():
    # Intel TMA level 3 splits the memory part by the level that served the loads.
    # Served by the L2 (tma_l2_bound > 0.05): L1D residency, its share the L2's part;
    # by the L3 or DRAM (tma_l3_bound > 0.05, tma_dram_bound > 0.1): L2/LLC residency,
    # its share the two together. The memory part then only supports them.
    base = {**MEMORY_BOUND_LEVEL2, "core_bound": 0.05}
    l2 = diagnose(
        {**base, "l2_bound": 0.40, "l3_bound": 0.03, "dram_stalled": 0.02}, core="icelake"
    )
    assert l2.primary.category == "l1d_residency"
    assert l2.primary.share.share == pytest.approx(0.40)
    assert "l2_llc_residency" not in categories(l2)
    l3 = diagnose(
        {**base, "l2_bound": 0.02, "l3_bound": 0.30, "dram_stalled": 0.15}, core="icelake"
    )
    assert l3.primary.category == "l2_llc_residency"
    assert l3.primary.share.share == pytest.approx(0.45)
    assert l3.primary.share.metric == "l3_bound,dram_stalled"
    assert "l1d_residency" not in categories(l3)


def test_level3_l1_bound_is_the_cores_and_level4_dtlb_the_tlbs():
    # Intel TMA L1_Bound: loads that hit L1D and still waited ("loads blocked on older
    # stores", "loads who miss in the TLB": tma_l1_bound's description), so the data was
    # in the nearest cache and the wait is the core's (tma_l1_bound > 0.1). Level 4
    # splits the DTLB part off (tma_dtlb_load > 0.1 under it): the TLB's, and L1_Bound
    # less it is the backend's share. Any level-3 node measured makes the memory part a
    # support only, so it no longer names L2/LLC residency by itself.
    base = MEMORY_BOUND_LEVEL2
    l1 = diagnose({**base, "l1_bound": 0.40}, core="icelake")
    assert l1.primary.category == "backend_bound"
    assert l1.primary.share.share == pytest.approx(0.40)
    assert l1.primary.share.metric == "l1_bound"
    assert "l2_llc_residency" not in categories(l1)
    tlb = diagnose({**base, "l1_bound": 0.40, "dtlb_load_bound": 0.30}, core="icelake")
    assert tlb.primary.category == "tlb_churn"
    assert tlb.primary.share.share == pytest.approx(0.30)
    backend = next(f for f in tlb.secondary if f.category == "backend_bound")
    assert backend.share.share == pytest.approx(0.10)  # 0.40 - 0.30
    # Stores' DTLB misses add to the loads' (tma_dtlb_store > 0.05).
    both = diagnose(
        {**base, "l1_bound": 0.40, "dtlb_load_bound": 0.30, "dtlb_store_bound": 0.06},
        core="icelake",
    )
    assert both.primary.share.share == pytest.approx(0.36)
    # With the core part measured too, the backend's share is it plus L1_Bound's own.
    core = diagnose({**base, "core_bound": 0.05, "l1_bound": 0.40}, core="icelake")
    assert core.primary.share.share == pytest.approx(0.45)


def test_level2_mispredicted_branches_judge_bad_speculation():
    # Bad speculation at level 2: mispredicted branches + machine clears. 30% of the
    # slots lost to speculation, 5% of them to branches (the rest machine clears, which
    # no branch fix helps): not branch misprediction. With 25% to branches it is, its
    # share that part (Intel TMA: tma_branch_mispredicts > 0.1).
    level1 = {"retiring": 0.40, "frontend_bound": 0.10, "backend_bound": 0.20}
    clears = diagnose(
        {**level1, "bad_speculation": 0.30, "branch_mispredicts": 0.05}, core="sapphirerapids"
    )
    assert "branch_misprediction" not in categories(clears)
    branches = diagnose(
        {**level1, "bad_speculation": 0.30, "branch_mispredicts": 0.25}, core="sapphirerapids"
    )
    assert branches.primary.category == "branch_misprediction"
    assert branches.primary.share.metric == "branch_mispredicts"
    assert branches.primary.share.share == pytest.approx(0.25)
    # Without level 2, bad speculation judges it as before.
    whole = diagnose({**level1, "bad_speculation": 0.30}, core="sapphirerapids")
    assert whole.primary.category == "branch_misprediction"
    assert whole.primary.share.metric == "bad_speculation"


def test_near_the_width_is_retiring_and_below_material_is_nothing():
    # N1: IPC 4 > 0.75 x 5 = 3.75: retiring, its share IPC / width = 80%.
    retiring = diagnose({"ipc": 4.0, "backend_stalled": 0.05}, core="neoverse-n1")
    assert categories(retiring) == ["retiring"]
    assert retiring.primary.share.share == pytest.approx(0.8)
    # IPC 3.7 just below: 1 - 3.7/5 = 26% unused; (2 - 0.5) L1D refills x 11 + 0.5 L2
    # refills x 40 = 36.5 of 270 cycles/KI = 13.5% of it explained: 12.5% < 20% is
    # left, not a real share: nothing crossed.
    below = diagnose({"ipc": 3.7, "l2_mpki": 0.5, "l1d_mpki": 2.0}, core="neoverse-n1")
    assert below.primary is None
    assert "ipc_collapse" not in below.not_judged


def test_a_frontend_run_with_a_branchy_profile_is_frontend():
    # N1, IPC 1.0: 1000 cycles/KI. L1I 40 MPKI x 11 + ITLB 2 x 40 = 520 cycles: 52%.
    # Branch 30 MPKI > 10 fires too, at 30 x 11 = 330 cycles: 33%. By confidence, the
    # frontend parent was halved by its branch child and branch led.
    metrics = {"ipc": 1.0, "l1i_mpki": 40.0, "itlb_mpki": 2.0, "branch_mpki": 30.0}
    diagnosis = diagnose(metrics, core="neoverse-n1")
    assert categories(diagnosis) == ["frontend_bound", "branch_misprediction"]
    assert diagnosis.primary.share.share == pytest.approx(0.52)
    assert diagnosis.primary.confidence < diagnosis.secondary[0].confidence
    assert diagnosis.secondary[0].share.share == pytest.approx(0.33)


# -- which causes a share can name -------------------------------------------------------


def test_a_mispredict_share_names_the_cause_below_its_threshold():
    # Skylake, IPC 1.62: 617 cycles/KI. 9.48 mispredicts < 10 (AWS), but x 14 cycles
    # (a pipeline refill, paid in series) = 133 cycles: 21.5% of the cycles.
    metrics = {"ipc": 1.62, "branch_mpki": 9.48, "l1d_mpki": 3.0, "llc_mpki": 0.1}
    diagnosis = diagnose(metrics, core="intel-core-skylake")
    assert diagnosis.primary.category == "branch_misprediction"
    assert diagnosis.primary.share.share == pytest.approx(9.48 * 14 * 1.62 / 1000)
    (evidence,) = diagnosis.primary.evidence
    # the count at which the mispredicts take a tenth of the slots, where Intel's
    # top-down flags them (tma_branch_mispredicts > 0.1): 0.1 x 617 / 14 = 4.41
    assert evidence.threshold == pytest.approx(0.1 * (1000 / 1.62) / 14)
    assert "estimated share of cycles" in evidence.source
    assert "tma_branch_mispredicts > 0.1" in evidence.source
    # 4 mispredicts: 4 x 14 / 617 = 9.1% of the cycles, under the tenth: not named.
    fewer = diagnose({**metrics, "branch_mpki": 4.0}, core="intel-core-skylake")
    assert "branch_misprediction" not in categories(fewer)
    # 5: 11.3%, past it: named, though under the AWS runbook's 10 MPKI.
    more = diagnose({**metrics, "branch_mpki": 5.0}, core="intel-core-skylake")
    assert "branch_misprediction" in categories(more) + [f.category for f in more.small]


def test_cache_misses_name_a_cause_only_through_their_thresholds():
    # V2 at IPC 3.2: L2 2 MPKI and LLC 0.5 (< 10) at typical latencies would be
    # (1.5 x 40 + 0.5 x 200) / 312.5 = 51%, but an out-of-order core overlaps misses:
    # with the top-down backend fraction 0.45 (the share itself) it stays backend_bound.
    metrics = {"ipc": 3.2, "l2_mpki": 2.0, "llc_mpki": 0.5, "backend_bound": 0.45}
    diagnosis = diagnose(metrics, core="neoverse-v2")
    assert categories(diagnosis) == ["backend_bound"]
    share = cycle_share("l2_llc_residency", metrics, RuleContext.of("neoverse-v2"))
    assert share is not None
    assert share.share == pytest.approx(0.45)  # capped at the backend fraction
    assert share.formula.endswith("= 51%, capped at backend_bound 0.45")


def test_a_material_child_ranks_its_parent_right_after_it():
    # N1, IPC 1: 12 DTLB walks x 40 = 480 cycles of 1000: 48% of the cycles, within the
    # 60% backend stall. backend_bound ranks by its child's 48%, after it.
    metrics = {"ipc": 1.0, "dtlb_mpki": 12.0, "backend_stalled": 0.6, "l2_mpki": 3.0}
    diagnosis = diagnose(metrics, core="neoverse-n1")
    assert categories(diagnosis) == ["tlb_churn", "backend_bound"]
    assert diagnosis.secondary[0].share.share == pytest.approx(0.6)


def test_remainder_ranks_below_a_counted_cause():
    # A72 (width 3), IPC 0.473: 1 - 0.473/3 = 84% unused; 66.7 mispredicts x 11 /
    # 2114 = 35% explained, 49% left. The remainder is no evidence of its own: the
    # counted cause leads.
    metrics = {"ipc": 0.473, "branch_mpki": 66.7, "l1d_mpki": 0.88}
    diagnosis = diagnose(metrics, core="cortex-a72")
    assert categories(diagnosis) == ["branch_misprediction", "ipc_collapse"]
    assert diagnosis.secondary[0].share.share > diagnosis.primary.share.share


# -- where it shows -----------------------------------------------------------------------


def test_the_share_shows_in_the_text_and_in_json():
    metrics = {"ipc": 0.05, "llc_mpki": 718.0, "branch_mpki": 49.0, "branch_miss": 0.2}
    diagnosis = diagnose(metrics, core="neoverse-n1")
    lines = render(diagnosis).splitlines()
    # 718 x 200 / 20000 = 718%: capped at the slots IPC 0.05 leaves unused on a 5-wide N1.
    assert lines[2] == (
        "  share: ~99% of cycles: 718 LLC read misses/KI x 200 cycles (Neoverse N1: "
        "AnandTech) / 20000 cycles/KI = 718%, capped at 1 - IPC 0.05 / width 5 = 99%"
    )
    assert "  also: branch_misprediction ~2.7% of cycles" in lines
    data = json.loads(json.dumps(diagnosis_as_dict(diagnosis)))
    assert data["primary"]["share"]["share"] == pytest.approx(0.99)
    assert data["primary"]["share"]["metric"] == "llc_mpki"
    assert data["secondary"][0]["share"]["text"].startswith("~2.7% of cycles: 49 branch")
    back = diagnosis_from_dict(data)
    assert back.primary.share == diagnosis.primary.share
    old = {**data, "primary": {k: v for k, v in data["primary"].items() if k != "share"}}
    assert diagnosis_from_dict(old).primary.share is None


# -- properties -----------------------------------------------------------------------------

_COUNT = st.floats(min_value=0.0, max_value=2000.0, allow_nan=False)


@given(
    ipc=st.floats(min_value=0.01, max_value=8.0, allow_nan=False),
    l1d=_COUNT,
    l2=_COUNT,
    llc=_COUNT,
    branch=_COUNT,
    core=st.sampled_from(["neoverse-n1", "cortex-a72", "intel-core-skylake", "amd-epyc-zen4", ""]),
)
def test_shares_stay_within_the_cycles_and_rank_material_first(ipc, l1d, l2, llc, branch, core):
    metrics = {"ipc": ipc, "l1d_mpki": l1d, "l2_mpki": l2, "llc_mpki": llc, "branch_mpki": branch}
    diagnosis = diagnose(metrics, core=core)
    groups = []
    for finding in diagnosis.findings:
        if finding.share is not None:
            assert 0.0 <= finding.share.share <= 1.0
        groups.append(finding.share is not None and finding.share.share >= MATERIAL_SHARE)
    # a finding with a material share is never ranked below one without
    assert groups == sorted(groups, reverse=True)


@given(st.lists(st.one_of(st.none(), st.floats(0.0, 1.0)), max_size=6))
def test_rank_is_a_permutation_largest_share_first(shares):
    findings = [
        Finding(f"custom_{i}", "x", 0.5, share=None if s is None else CycleShare(s, "f"))
        for i, s in enumerate(shares)
    ]
    ranked = rank(findings)
    assert sorted(f.category for f in ranked) == sorted(f.category for f in findings)
    material = [f.share.share for f in ranked if f.share and f.share.share >= MATERIAL_SHARE]
    assert material == sorted(material, reverse=True)
    kinds = [
        0 if f.share and f.share.share >= MATERIAL_SHARE else (1 if f.share is None else 2)
        for f in ranked
    ]
    assert kinds == sorted(kinds)


def test_spinning_is_the_cpu_time_no_configured_thread_needs():
    # A72, 2 intra-op threads, spinning on, 3.836 CPUs busy: (3.836 - 2) / 3.836 = 48%
    # of the CPU time. L2 14.56 MPKI x 40 (LLC hit, Arm family) / 2222 cycles/KI = 26%.
    session = {"intra_op_threads": 2, "allow_spinning": True}
    metrics = {"ipc": 0.45, "l2_mpki": 14.56, "cpu_utilisation": 3.836}
    diagnosis = diagnose(metrics, core="cortex-a72", session=session, cpu_count=4)
    assert categories(diagnosis)[:2] == ["thread_spinning", "l2_llc_residency"]
    assert diagnosis.primary.share.share == pytest.approx(1.836 / 3.836)
    assert diagnosis.primary.share.formula == (
        "(3.84 CPUs busy - 2 threads configured) / 3.84 CPUs busy"
    )
    assert diagnosis.secondary[0].share.share == pytest.approx(14.56 * 40 * 0.45 / 1000)


def test_a_spinning_pool_as_busy_as_its_threads_has_no_share_to_rank_by():
    # 2 intra-op threads spinning on 2 CPUs: task-clock shows 2.0 CPUs busy, the
    # threads configured. Their spin-waits between parallel sections are CPU time that
    # task-clock cannot tell from work, so (2.0 - 2) / 2.0 = 0% is a lower bound, not
    # a share: the finding ranks by its confidence, above a hook's 0.01-confident one.
    session = {"intra_op_threads": 2, "allow_spinning": True}
    metrics = {"cpu_utilisation": 2.0}
    diagnosis = diagnose(metrics, core="cortex-a72", session=session, cpu_count=2)
    assert diagnosis.primary.category == "thread_spinning"
    assert diagnosis.primary.share is None
    hook = Finding("house_rule", "our house rule", 0.01, (), ("ask the team",), "")
    assert [f.category for f in rank([hook, diagnosis.primary])] == [
        "thread_spinning",
        "house_rule",
    ]
    # Without spinning the same excess is the measured share (none: nothing to blame).
    calm = diagnose(
        metrics, core="cortex-a72", session={**session, "allow_spinning": False}, cpu_count=2
    )
    assert "thread_spinning" not in categories(calm)
