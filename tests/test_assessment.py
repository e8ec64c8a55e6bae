"""Unit tests of the one judged result: assess(), the failure text, the summary cell,
the record a worker sends, and each renderer reading the Assessment (no re-diagnosis).

In-process and pure: no pytest subprocess, no measurement.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace

import numpy as np
import pytest

from pytest_inferperf.core.metrics import profile_metrics
from pytest_inferperf.core.profile import LatencyStats, MemoryStats, Profile, Repeat, Steadiness
from pytest_inferperf.diagnose.assessment import (
    Assessment,
    assess,
    assess_profile,
    diagnose_profile,
    rule_context,
)
from pytest_inferperf.diagnose.classify import (
    Evidence,
    Finding,
    diagnosis_as_dict,
    diagnosis_from_dict,
)
from pytest_inferperf.judge.budgets import Budget, PerfSpec
from pytest_inferperf.measure import conditions
from pytest_inferperf.pmu.base import Count, CounterSample, EventStatus
from pytest_inferperf.report.verdict import change_summary, failure_text, headline, record_of

CALLS = 50
QUIET = {
    "others_busy_cpus": 0.0,
    "cpus": 2,
    "steal": 0.0,
    "calibration": {
        "version": conditions.CALIBRATION_VERSION,
        "wall_ms": 10.0,
        "cpu_ms": 10.0,
        "cpu_share": 0.98,
    },
}


def make(cpu_ms: float, *, instructions: float | None = None, seed: int = 0) -> Profile:
    """A Profile of 20 repeats of 50 calls, ``cpu_ms`` each with 1% noise."""
    rng = np.random.default_rng(seed)
    reps = []
    for _ in range(20):
        ms = cpu_ms * (1 + 0.01 * rng.standard_normal())
        counts = {"task_clock": Count(ms * 1e6 * CALLS, int(ms * 1e6 * CALLS))}
        if instructions is not None:
            ins = instructions * (1 + 0.0005 * rng.standard_normal())
            counts["instructions"] = Count(ins * CALLS, int(ins * CALLS))
        reps.append(Repeat(CALLS, int(ms * 1e6 * CALLS), CounterSample(counts=counts)))
    return Profile(
        name="t",
        machine_class="x86_64-test",
        backend="perf",
        machine={"cpu": {"core_slug": "neoverse-n1", "cpu_count": 4}},
        events=(EventStatus("cycles", False, reason="no PMU exposed (ENOENT): run doctor"),),
        repeats=tuple(reps),
        latency=LatencyStats.from_durations_ns([int(cpu_ms * 1e6)] * 10),
        memory=MemoryStats(None, "none"),
        steady=Steadiness(True, 5, 0.01, 0.05, 5),
        conditions=QUIET,
    )


HOOK_FINDING = Finding(
    category="extra_work",
    title="Hook says: tokenizer in the loop",
    confidence=0.7,
    evidence=(Evidence("tokens_per_call", 900.0, 500.0, ">", "team rule"),),
    recommendations=("tokenize once, outside the timed call",),
)


# -- assess: built once, with everything ------------------------------------------------
def test_assess_holds_hook_metrics_budgets_comparison_and_the_hooks_finding():
    base, now = make(2.0, seed=1), make(3.0, seed=2)
    spec = PerfSpec(budgets=(Budget("tokens_per_call", "max", 500.0),))
    a = assess(
        "t.py::test_x",
        now,
        spec,
        baseline=base,
        baseline_note="baseline b.json",
        extra_metrics={"tokens_per_call": 900.0},
        extra_findings=[HOOK_FINDING],
    )
    assert a.metrics["tokens_per_call"] == 900.0
    assert a.metrics["cpu_ms_per_call"] == pytest.approx(profile_metrics(now)["cpu_ms_per_call"])
    (budget,) = a.budgets
    assert budget.failed and budget.value == 900.0
    assert a.comparison is not None
    change = a.comparison.get("cpu_ms_per_call")
    assert change is not None and change.delta == pytest.approx(0.5, abs=0.02)
    assert HOOK_FINDING in a.diagnosis.findings
    assert a.change is not None and a.change.slowdown is not None  # blamed, against the baseline
    assert a.outcome == "regressed" and a.failed and a.status == "FAILED"


def test_assess_without_a_baseline_says_so_and_passes():
    a = assess("t::x", make(2.0), PerfSpec(), baseline=None, baseline_note="no baseline for X")
    assert (a.comparison, a.noise, a.change) == (None, None, None)
    assert a.outcome == "passed" and a.status == "passed" and not a.failed
    assert change_summary(a) == "no baseline for X"
    assert a.carried_by == ""


def test_an_incomparable_baseline_is_noted_not_compared():
    other = replace(make(2.0), machine_class="aarch64-other")
    a = assess("t::x", make(3.0), PerfSpec(), baseline=other, baseline_note="baseline b")
    assert a.comparison is None
    assert a.baseline_note.startswith("not compared: ")
    assert not a.failed


def test_assess_profile_is_the_profile_on_its_own():
    profile = make(2.0)
    a = assess_profile(profile)
    assert isinstance(a, Assessment)
    assert (a.key, a.budgets, a.comparison) == ("t", (), None)
    assert a.metrics == profile_metrics(profile)
    assert a.diagnosis == diagnose_profile(profile, a.metrics)
    assert a.diagnosis.core == "neoverse-n1"


def test_rule_context_reads_the_profiles_cpu_facts():
    ctx = rule_context(make(2.0))
    assert (ctx.core, ctx.cpu_count) == ("neoverse-n1", 4)
    assert "cycles" in ctx.unavailable


# -- the failure text and the summary cell ------------------------------------------------
def test_failure_text_names_budget_regression_and_blame_with_the_values():
    base, now = make(2.0, instructions=1e6, seed=1), make(2.0, instructions=1.2e6, seed=2)
    spec = PerfSpec(budgets=(Budget("instructions_per_call", "max", 1.1e6),))
    a = assess("t::x", now, spec, baseline=base, baseline_note="baseline b")
    lines = failure_text(a).splitlines()
    assert lines[0] == "inferperf: t::x on x86_64-test (backend perf)"
    assert re.match(
        r"  budget   instructions_per_call = 1,(199|200),\d{3}, budget <= 1\.1e\+06 ", lines[1]
    ), lines[1]
    (regressed,) = [line for line in lines if line.startswith("  baseline instructions_per_call")]
    # the one number formatter: whole numbers with separators, never 1.2e+06
    assert re.match(
        r"  baseline instructions_per_call: (999,9\d\d|1,000,\d{3}) -> 1,(199|200),\d{3} "
        r"\(\+20\.0%, tolerance 2%; p=",
        regressed,
    ), regressed
    assert "  verdict carried by instructions_per_call (counted)" in lines
    assert any(line.startswith("Diagnosis (neoverse-n1)") for line in lines)
    assert change_summary(a).startswith("REGRESSED instructions_per_call +20.0%")


def test_failure_text_of_a_passing_assessment_has_only_its_header_and_diagnosis():
    a = assess("t::x", make(2.0, seed=1), PerfSpec(), baseline=make(2.0), baseline_note="b")
    text = failure_text(a)
    assert "budget" not in text and "baseline cpu_ms_per_call" not in text
    assert text.splitlines()[0] == "inferperf: t::x on x86_64-test (backend perf)"
    assert change_summary(a).startswith("ok (")


def test_headline_is_the_primary_finding_in_a_few_words():
    a = assess_profile(make(2.0), extra_findings=[HOOK_FINDING])
    assert headline(a.diagnosis) == "Hook says: tokenizer in the loop (70%)"
    assert headline(None) == ""


# -- the record a worker sends ----------------------------------------------------------
OLD_RECORD_FIELDS = {
    "key", "status", "failed", "nothing_checked", "metrics", "baseline_note",
    "baseline_error", "change", "unchecked", "unavailable", "diagnosis",
    "change_explanation", "profile", "artifacts", "artifact_notes", "verdict",
    "inconclusive", "carried_by", "confirmation", "noise_floor", "busy", "baseline_busy",
}  # fmt: skip


def test_the_record_keeps_every_field_and_carries_the_whole_diagnosis():
    a = assess(
        "t::x",
        make(3.0, seed=2),
        PerfSpec(),
        baseline=make(2.0, seed=1),
        baseline_note="b",
        extra_findings=[HOOK_FINDING],
    )
    record = record_of(a)
    assert set(record) == OLD_RECORD_FIELDS | {"diagnosis_detail", "stages"}
    assert record == record_of(a)
    assert record["verdict"] == "regressed" and record["failed"] is True
    json.dumps(record, allow_nan=False)
    back = diagnosis_from_dict(json.loads(json.dumps(record["diagnosis_detail"])))
    assert back.findings == a.diagnosis.findings
    assert back.not_judged == a.diagnosis.not_judged and back.core == a.diagnosis.core
    assert (
        diagnosis_as_dict(back) == {**record["diagnosis_detail"], **{}}
        or "change" in (record["diagnosis_detail"])
    )
