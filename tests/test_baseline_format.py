"""The compact baseline form (schema version 2): judged as the full form, stable, strict."""

from __future__ import annotations

import difflib
import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_inferperf.core import baseline_file
from pytest_inferperf.core.profile import Profile, ProfileFormatError, Repeat
from pytest_inferperf.core.samples import Count, CounterSample
from pytest_inferperf.diagnose.assessment import assess
from pytest_inferperf.judge.budgets import parse_marker
from pytest_inferperf.measure.stages import REST_STAGE

RICH = Path(__file__).parent / "fixtures" / "profiles" / "rich_profile.json"


def rich() -> Profile:
    return Profile.load(RICH)


def compact_of(profile: Profile) -> Profile:
    return Profile.from_dict(json.loads(profile.to_baseline_json()))


def slower(profile: Profile, factor: float) -> Profile:
    """``profile`` with every repeat's task clock and wall time scaled by ``factor``."""
    reps = []
    for rep in profile.repeats:
        counts = dict(rep.sample.counts)
        clock = counts["task_clock"]
        counts["task_clock"] = Count(round(clock.value * factor), round(clock.raw * factor))
        reps.append(
            Repeat(
                rep.calls, round(rep.wall_ns * factor), CounterSample(counts, rep.sample.per_thread)
            )
        )
    return profile.with_(repeats=tuple(reps))


def test_rest_stage_name_is_the_runners() -> None:
    assert baseline_file.REST_STAGE == REST_STAGE


@pytest.mark.parametrize("factor", [1.0, 1.5])
def test_a_compact_baseline_judges_as_the_full_one(factor: float) -> None:
    baseline = rich()
    current = slower(baseline, factor).with_(name=baseline.name)
    spec = parse_marker((), {})
    full = assess("t", current, spec, baseline=baseline, baseline_note="b")
    small = assess("t", current, spec, baseline=compact_of(baseline), baseline_note="b")
    assert full.outcome == small.outcome
    assert full.comparison is not None and small.comparison is not None
    assert full.comparison.changes == small.comparison.changes
    assert full.noise == small.noise


def test_what_judging_reads_survives() -> None:
    baseline = rich()
    again = compact_of(baseline)
    assert again.totals == baseline.totals
    assert [r.calls for r in again.repeats] == [r.calls for r in baseline.repeats]
    assert again.busy_threads() == baseline.busy_threads()
    # the stages' times; their event counts are the sidecar's (no verdict reads them)
    assert [replace(s, counts={}) for s in again.stages] == [
        replace(s, counts={}) for s in baseline.stages
    ]
    assert all(not s.counts for s in again.stages)
    assert again.settings == json.loads(json.dumps(baseline.settings, sort_keys=True))
    assert again.latency == baseline.latency and again.memory == baseline.memory


def test_no_thread_ids_pids_or_machine_paths() -> None:
    profile = rich().with_(
        settings={**rich().settings, "simulation": {"pid": 4242, "out": "/home/ci/run/x.out"}}
    )
    text = profile.to_baseline_json()
    per_thread = rich().repeats[0].sample.per_thread
    assert all(f'"{tid}"' not in text for tid in per_thread)
    assert "4242" not in text and "/home/ci" not in text and '"x.out"' in text
    assert '"artifacts"' not in text and '"created"' not in text


def test_layout_two_space_indent_number_arrays_on_one_line() -> None:
    text = rich().to_baseline_json()
    lines = text.splitlines()
    assert lines[1] == '  "schema": "pytest-inferperf/profile",'
    wall = next(line for line in lines if line.strip().startswith('"wall_ns": ['))
    assert wall.rstrip(",").endswith("]")
    assert len(text.encode()) < len(rich().to_json().encode()) / 3


def test_a_rerecord_changes_only_the_lines_of_changed_numbers() -> None:
    before = rich().with_(stages=())
    reps = list(before.repeats)
    counts = dict(reps[2].sample.counts)
    counts["page_faults"] = Count(7.0, 7)
    reps[2] = replace(reps[2], sample=CounterSample(counts, reps[2].sample.per_thread))
    after = before.with_(repeats=tuple(reps))
    diff = [
        line
        for line in difflib.unified_diff(
            before.to_baseline_json().splitlines(), after.to_baseline_json().splitlines(), n=0
        )
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    assert len(diff) == 2 and all('"page_faults": [' in line for line in diff)


@settings(max_examples=40, deadline=None)
@given(
    repeats=st.integers(1, 8),
    calls=st.integers(1, 50),
    values=st.lists(st.integers(0, 10**12), min_size=1, max_size=8),
    scaled=st.booleans(),
)
def test_round_trip_is_stable(repeats: int, calls: int, values: list[int], scaled: bool) -> None:
    base = rich()
    reps = []
    for i in range(repeats):
        v = values[i % len(values)]
        value = v * 1.5 + 0.25 if scaled else float(v)
        counts = {"task_clock": Count(float(v + 1), v + 1), "cycles": Count(value, v)}
        reps.append(Repeat(calls, 1000 + i, CounterSample(counts)))
    profile = base.with_(repeats=tuple(reps), stages=())
    once = profile.to_baseline_json()
    again = compact_of(profile)
    assert again.to_baseline_json() == once
    assert again.totals["task_clock"] == profile.totals["task_clock"]


def load_text(tmp_path: Path, text: str) -> Profile:
    path = tmp_path / "b.json"
    path.write_text(text)
    return Profile.load(path)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda d: d["repeats"]["counts"].update(task_clock=[1]),
            "repeats.counts.task_clock: one value per repeat (6), got 1",
        ),
        (lambda d: d["repeats"]["counts"].update(task_clock="x"), "repeats.counts.task_clock"),
        (lambda d: d.pop("latency"), "missing field 'latency'"),
        (lambda d: d.update(schema_version=3), "newer than this inferperf understands (2)"),
        (lambda d: d["repeats"].update(wall_ns=[]), "at least one entry"),
        (lambda d: d["repeats"].update(calls=[1, 2]), "repeats.calls: one value per repeat"),
        (lambda d: d.update(stages=[{"name": "x", "derived": True}]), "can be derived"),
        (lambda d: d["latency"].update(mean_ms=-1), "latency.mean_ms"),
    ],
)
def test_corrupt_compact_files_are_refused_clearly(tmp_path: Path, edit, message: str) -> None:
    doc = json.loads(rich().to_baseline_json())
    edit(doc)
    with pytest.raises(ProfileFormatError) as info:
        load_text(tmp_path, json.dumps(doc))
    assert message in str(info.value) and str(tmp_path / "b.json") in str(info.value)


def test_old_full_files_still_load(tmp_path: Path) -> None:
    assert load_text(tmp_path, rich().to_json()) == rich()


def test_sidecar_puts_the_bulky_parts_back() -> None:
    full = rich().to_dict()
    small = baseline_file.compact(full)
    side = baseline_file.detail(full, small)
    assert side is not None and baseline_file.detail_matches(side, small)
    back = Profile.from_dict(baseline_file.expand(small, baseline_file.check_detail(side)))
    assert back.stacks == rich().stacks and back.op_types == rich().op_types
    assert back.events == rich().events
    assert back.stages == rich().stages  # each stage's counts, from the sidecar
    assert any(s.counts.get("task_clock", 0) > 0 for s in back.stages)
    assert '"counts"' not in json.dumps(small["stages"])


def test_sessions_made_alike_write_their_options_once() -> None:
    full = rich().to_dict()
    options = {"intra_op_threads": 0, "providers": ["CPUExecutionProvider"], "x": 1}
    sessions = [
        {"label": f"s{i}", "options": dict(options), "inputs": [], "runs_per_call": 1}
        for i in range(3)
    ] + [{"label": "other", "options": {**options, "x": 2}, "inputs": [], "runs_per_call": 1}]
    full["settings"] = {**full["settings"], "operator_pass": {"sessions": sessions}}
    small = baseline_file.compact(full)
    written = small["settings"]["operator_pass"]["sessions"]
    assert written[0]["options"] == options
    assert [s["options"] for s in written[1:3]] == ["as sessions[0]"] * 2
    assert written[3]["options"] == {**options, "x": 2}
    back = baseline_file.expand(small)
    assert back["settings"]["operator_pass"]["sessions"] == sessions
    small["settings"]["operator_pass"]["sessions"][1]["options"] = "as sessions[7]"
    with pytest.raises(baseline_file.InvalidProfile, match=r"names no earlier session"):
        baseline_file.expand(small)
