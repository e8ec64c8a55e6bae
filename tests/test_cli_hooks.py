"""The ``pytest_inferperf_*`` hooks run wherever a diagnosis is made, through one
function (``diagnose.hooks.diagnosis_additions``): here ``inferperf explain``,
``analyse`` and ``compare`` with a plugin from the registry (``INFERPERF_PLUGINS``),
and the function's merging."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_inferperf.cli import main as cli_main
from pytest_inferperf.cli.main import EXIT_USAGE, main
from pytest_inferperf.core.metrics import MetricContext
from pytest_inferperf.core.profile import Profile
from pytest_inferperf.diagnose import hooks
from pytest_inferperf.diagnose.classify import Evidence, Finding, RuleContext

REPO = Path(__file__).resolve().parents[1]
A72 = "tests/fixtures/perfstat/a72_plain.txt"
RICH = REPO / "tests" / "fixtures" / "profiles" / "rich_profile.json"

HOUSE = """
from pytest_inferperf.diagnose.classify import Evidence, Finding


def pytest_inferperf_metrics(counts, context):
    if "l2_refill" in counts and counts.get("cycles"):
        return {"house_l2_refills_per_kcycle": 1000 * counts["l2_refill"] / counts["cycles"]}
    return {}


def pytest_inferperf_rules(metrics, context):
    value = metrics.get("house_l2_refills_per_kcycle")
    if value is None or value <= 5:
        return []
    evidence = Evidence("house_l2_refills_per_kcycle", value, 5.0, ">", "the house budget")
    return [Finding("house_l2", "L2 refills over the house budget", 0.9, (evidence,))]
"""


def _explain(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["explain", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def house(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "cli_house_hooks.py").write_text(HOUSE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(REPO)


def test_explain_shows_a_registered_hooks_finding(house, monkeypatch, capsys):
    monkeypatch.delenv(hooks.PLUGINS_ENV, raising=False)
    code, plain, _ = _explain([A72], capsys)
    assert code == 0 and "house_l2" not in plain
    monkeypatch.setenv(hooks.PLUGINS_ENV, "cli_house_hooks")
    code, text, _ = _explain([A72], capsys)
    assert code == 0
    # the built-in primary stays (ranked by its share of cycles); the hook's finding joins
    assert "Diagnosis (cortex-a72): L2/LLC residency (memory-bound) [l2_llc_residency]" in text
    assert "  also: house_l2 0.90" in text.splitlines()
    # everything else is as without the hook: the metric table shows built-in metrics only
    assert [line for line in text.splitlines() if "house" not in line] == plain.splitlines()


def test_explain_json_carries_the_hooks_metric_and_finding(house, monkeypatch, capsys):
    monkeypatch.setenv(hooks.PLUGINS_ENV, "cli_house_hooks")
    code, out, _ = _explain([A72, "--json"], capsys)
    assert code == 0
    document = json.loads(out)
    # 94,478,103 L2 refills over 14,418,722,914 cycles in the file, per 1000 cycles
    assert document["metrics"]["house_l2_refills_per_kcycle"] == pytest.approx(
        1000 * 94478103 / 14418722914
    )
    (house_finding,) = [
        f for f in document["diagnosis"]["secondary"] if f["category"] == "house_l2"
    ]
    assert house_finding["confidence"] == 0.9
    assert house_finding["evidence"][0]["source"] == "the house budget"


def test_explain_without_calls_drops_a_hooks_per_call_metric(tmp_path, monkeypatch, capsys):
    (tmp_path / "per_call_hooks.py").write_text(
        "def pytest_inferperf_metrics(counts, context):\n"
        "    return {'house_cycles_per_call': counts['cycles'] / context.calls}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(REPO)
    monkeypatch.setenv(hooks.PLUGINS_ENV, "per_call_hooks")
    _, out, _ = _explain([A72, "--json"], capsys)
    assert "house_cycles_per_call" not in json.loads(out)["metrics"]  # a total, not per call
    _, out, _ = _explain([A72, "--json", "--calls", "1000"], capsys)
    assert json.loads(out)["metrics"]["house_cycles_per_call"] == 14418722914 / 1000


def test_explain_says_when_a_plugin_cannot_load(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    monkeypatch.setenv(hooks.PLUGINS_ENV, "no_such_house")
    code, out, err = _explain([A72], capsys)
    assert code == EXIT_USAGE and out == ""
    assert err.startswith(
        "inferperf explain: cannot load the inferperf plugin from module 'no_such_house' named "
        "in INFERPERF_PLUGINS: ModuleNotFoundError"
    )


class _PerRun:
    """A metric from each run's counts; a finding from the merged metrics."""

    def pytest_inferperf_metrics(self, counts, context):
        if "cycles" not in counts:
            return {}
        return {"house_mcycles": counts["cycles"] / 1e6 / context.calls}

    def pytest_inferperf_rules(self, metrics, context):
        if "house_mcycles" not in metrics:
            return []
        ev = Evidence("house_mcycles", metrics["house_mcycles"], 2.0, ">", "house")
        return [Finding("house", "many cycles", 0.5, (ev,))] if ev.crossed else []


def test_diagnosis_additions_takes_the_median_over_runs_kept_apart():
    pm = hooks.plugin_manager([_PerRun()])
    ctx = RuleContext.of("cortex-a72")
    counted = [
        ({"cycles": 1e6}, MetricContext()),
        ({"cycles": 4e6}, MetricContext()),
        ({"instructions": 1.0}, MetricContext()),  # no cycles: no value from this run
        ({"cycles": 9e6}, MetricContext(calls=1)),
    ]
    added, found = hooks.diagnosis_additions(pm, counted, {"ipc": 1.0}, ctx)
    assert added == {"house_mcycles": 4.0}  # median of 1, 4 and 9
    assert [f.category for f in found] == ["house"]
    assert found[0].evidence[0].value == 4.0
    # two runs: their mean, as the built-in metrics of two runs kept apart
    added, _ = hooks.diagnosis_additions(pm, counted[:2], {}, ctx)
    assert added == {"house_mcycles": 2.5}
    added, found = hooks.diagnosis_additions(pm, counted, {}, ctx, keep=lambda n: False)
    assert added == {} and found == []  # the rules hook sees only the kept metrics


def test_no_registered_hook_adds_nothing():
    pm = hooks.plugin_manager()
    ctx = RuleContext.of("cortex-a72")
    assert hooks.diagnosis_additions(pm, [({"cycles": 1.0}, MetricContext())], {}, ctx) == (
        {},
        [],
    )


# -- inferperf analyse and inferperf compare ----------------------------------------------

ALWAYS = """
from pytest_inferperf.diagnose.classify import Evidence, Finding


def pytest_inferperf_metrics(counts, context):
    return {"house_calls": float(context.calls)}


def pytest_inferperf_rules(metrics, context):
    ev = Evidence("house_calls", metrics["house_calls"], 0.0, ">", "house")
    return [Finding("house_always", "the house rule", 0.8, (ev,))]
"""


@pytest.fixture
def always(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A plugin whose rule always fires, importable as ``always_hooks``; none registered yet."""
    (tmp_path / "always_hooks.py").write_text(ALWAYS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv(hooks.PLUGINS_ENV, raising=False)


@pytest.fixture
def measured(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """``inferperf analyse`` measures nothing: its target is the saved rich profile
    (every output then depends on the profile alone); the targets it was asked for."""
    from pytest_inferperf.measure.target import Analysis

    asked: list[str] = []

    def entry(target, options, args, out, progress):
        asked.append(target)
        return Analysis(target, target, Profile.load(RICH))

    monkeypatch.setattr(cli_main, "_analyse_entry", entry)
    return asked


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_analyse_shows_a_registered_hooks_finding(always, measured, tmp_path, monkeypatch, capsys):
    code, plain, _ = _run(["analyse", "m.onnx", "--out", str(tmp_path / "a")], capsys)
    assert code == 0 and "house" not in plain
    monkeypatch.setenv(hooks.PLUGINS_ENV, "always_hooks")
    code, text, _ = _run(["analyse", "m.onnx", "--out", str(tmp_path / "b")], capsys)
    assert code == 0
    calls = Profile.load(RICH).calls  # the metrics hook's value: the profile's calls
    assert calls == 1020
    # the rest is as without the hook (the folder written to aside): the diagnosis's
    # headline is the finding, with its evidence
    expected = plain.replace(
        "Diagnosis (amd-epyc-zen4): no threshold of concern crossed.\n",
        "Diagnosis (amd-epyc-zen4): the house rule [house_always], confidence 0.80\n"
        "  evidence: house_calls = 1020 > 0.0 (house)\n",
    ).replace(str(tmp_path / "a"), str(tmp_path / "b"))
    assert expected != plain.replace(str(tmp_path / "a"), str(tmp_path / "b"))
    assert text == expected
    html = (tmp_path / "b" / "report.html").read_text(encoding="utf-8")
    assert "Primary: the house rule" in html and "house_calls = 1020 &gt; 0.0" in html
    assert "house" not in (tmp_path / "a" / "report.html").read_text(encoding="utf-8")
    # report.json is the Profile: a hook adds to the judgement, not to what was measured
    assert (tmp_path / "a" / "report.json").read_bytes() == (
        tmp_path / "b" / "report.json"
    ).read_bytes()


def test_analyse_without_a_plugin_is_unchanged(always, measured, tmp_path, capsys):
    from pytest_inferperf.diagnose.assessment import assess_profile
    from pytest_inferperf.report.text import render_profile

    code, text, _ = _run(["analyse", "m.onnx", "--out", str(tmp_path)], capsys)
    assert code == 0
    unhooked = render_profile(assess_profile(Profile.load(RICH)))
    wrote = f"wrote {tmp_path / 'report.json'} and {tmp_path / 'report.html'}"
    assert text == f"{unhooked}\n\n{wrote}\n"


def test_analyse_says_when_a_plugin_cannot_load_before_measuring(
    always, measured, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv(hooks.PLUGINS_ENV, "no_such_house")
    code, out, err = _run(["analyse", "m.onnx", "--out", str(tmp_path)], capsys)
    assert code == EXIT_USAGE and out == "" and measured == []
    assert err.startswith(
        "inferperf analyse: cannot load the inferperf plugin from module 'no_such_house' named "
        "in INFERPERF_PLUGINS: ModuleNotFoundError"
    )


def _two_profiles(folder: Path) -> tuple[str, str]:
    a, b = folder / "a.json", folder / "b.json"
    a.write_bytes(RICH.read_bytes())
    b.write_bytes(RICH.read_bytes())
    return str(a), str(b)


def test_compare_shows_a_registered_hooks_finding(always, tmp_path, monkeypatch, capsys):
    a, b = _two_profiles(tmp_path)
    out_plain, out_hooked = tmp_path / "plain", tmp_path / "hooked"
    code, plain, _ = _run(["compare", a, b, "--out", str(out_plain)], capsys)
    assert code == 0
    monkeypatch.setenv(hooks.PLUGINS_ENV, "always_hooks")
    code, text, _ = _run(["compare", a, b, "--out", str(out_hooked)], capsys)
    assert code == 0
    # the terminal shows no diagnosis of its own, and compare.json none: unchanged
    assert text == plain.replace(str(out_plain), str(out_hooked))
    assert (out_plain / "compare.json").read_text(encoding="utf-8").replace(
        str(out_plain), str(out_hooked)
    ) == (out_hooked / "compare.json").read_text(encoding="utf-8")
    # each entry's diagnosis in compare.html carries the finding: the first on its own,
    # the second in its verdict against the first
    html = (out_hooked / "compare.html").read_text(encoding="utf-8")
    assert html.count("<h3>Primary: the house rule <span class='muted'>[house_always]") == 2
    assert html.count("<td>house_calls = 1020 &gt; 0.0</td><td>house</td>") == 2
    assert "house" not in (out_plain / "compare.html").read_text(encoding="utf-8")


class _TaskClock:
    """A metric from the task clock (counted without a PMU), a finding above 0.1 ms."""

    def pytest_inferperf_metrics(self, counts, context):
        return {"house_task_ms": counts["task_clock"] / 1e6 / context.calls}

    def pytest_inferperf_rules(self, metrics, context):
        ev = Evidence("house_task_ms", metrics["house_task_ms"], 0.1, ">", "house")
        return [Finding("house_cpu", "busy", 0.7, (ev,))] if ev.crossed else []


def test_side_by_side_takes_the_hooks_of_the_manager_it_is_given(always):
    from pytest_inferperf.cli.compare import side_by_side
    from pytest_inferperf.measure.target import Analysis

    entries = [Analysis(n, n, Profile.load(RICH)) for n in ("a", "b")]
    side = side_by_side(entries, plugins=hooks.plugin_manager([_TaskClock()]))
    assert side.verdicts[0] is None and side.verdicts[1] is side.assessments[1]
    for assessment in side.assessments:
        # 138,449,736 ns of task clock over 1020 calls in the rich profile
        assert assessment.metrics["house_task_ms"] == pytest.approx(138449736 / 1e6 / 1020)
        assert "house_cpu" in [f.category for f in assessment.diagnosis.findings]
    bare = side_by_side(entries, plugins=hooks.plugin_manager())
    assert all("house_task_ms" not in a.metrics for a in bare.assessments)
    assert all("house_cpu" not in str(a.diagnosis) for a in bare.assessments)
    by_default = side_by_side(entries)  # the registry's, which holds none here
    assert by_default.to_dict() == bare.to_dict()
    assert [a.metrics for a in by_default.assessments] == [a.metrics for a in bare.assessments]


def test_compare_says_when_a_plugin_cannot_load(tmp_path, monkeypatch, capsys):
    a, b = _two_profiles(tmp_path)
    monkeypatch.setenv(hooks.PLUGINS_ENV, "no_such_house")
    code, out, err = _run(["compare", a, b, "--out", str(tmp_path / "out")], capsys)
    assert code == EXIT_USAGE and out == ""
    assert err.startswith(
        "inferperf compare: cannot load the inferperf plugin from module 'no_such_house' named "
        "in INFERPERF_PLUGINS: ModuleNotFoundError"
    )
