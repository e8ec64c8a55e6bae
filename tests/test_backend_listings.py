"""``inferperf doctor`` lists the measuring backends of the one registry
(``measure.backends``): each one's name, and whether it runs here or why not."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from pytest_inferperf.cli.main import main
from pytest_inferperf.measure import backends
from pytest_inferperf.pmu.doctor import run_doctor
from pytest_inferperf.pmu.null_backend import NullCounters
from pytest_inferperf.report.doctor import backends_table, render_text

MISSING = backends.Backend(
    "missing",
    "a backend this machine lacks",
    lambda: "not available: no such counter unit here",
    "native",
    lambda events: NullCounters(events=events),
)


@pytest.fixture
def with_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backends, "BACKENDS", (*backends.BACKENDS, MISSING))


def test_the_table_says_yes_or_why_not():
    rows = [
        {"name": "perf", "description": "", "available": True, "reason": None},
        {
            "name": "simulate",
            "description": "",
            "available": False,
            "reason": "not available: valgrind is not installed: apt install valgrind",
        },
    ]
    assert backends_table(rows).splitlines() == [
        "backend    runs here",
        "---------  --------------------------------------------------------------",
        "perf       yes",
        "simulate   not available: valgrind is not installed: apt install valgrind",
    ]


def test_the_text_ends_with_the_backends_and_lists_none_when_not_asked(with_missing):
    report = run_doctor(backends=backends.statuses())
    text = render_text(report)
    table = backends_table(report.backends or ())
    assert text.endswith("\n\n" + table)
    assert table.splitlines()[-1] == "missing    not available: no such counter unit here"
    assert [line.split()[0] for line in table.splitlines()[2:]] == [
        "auto",
        "perf",
        "simulate",
        "none",
        "missing",
    ]
    # a report made without backends renders as before: the self-test's lines last
    assert render_text(replace(report, backends=None)) == text[: -len("\n\n" + table)]


def test_doctor_command_lists_the_registry(with_missing, capsys):
    assert main(["doctor"]) == 0
    lines = capsys.readouterr().out.splitlines()
    start = lines.index("backend    runs here")
    listed = {line.split(None, 1)[0]: line.split(None, 1)[1] for line in lines[start + 2 :]}
    expected = {b["name"]: "yes" if b["available"] else b["reason"] for b in backends.statuses()}
    assert listed == expected and listed["missing"] == "not available: no such counter unit here"
    assert main(["doctor", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["backends"] == backends.statuses()


@pytest.mark.parametrize("command", ["analyse", "validate", "compare"])
def test_the_usage_lines_of_docs_cli_name_the_registrys_backends(command, capsys):
    import re
    from pathlib import Path

    docs = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text(encoding="utf-8")
    usage = docs.split(f"## `inferperf {command}`\n\n```\n", 1)[1].split("```", 1)[0]
    (documented,) = re.findall(r"\[--backend ([a-z|]+)\]", usage)
    with pytest.raises(SystemExit):
        main([command, "--help"])
    (offered,) = re.findall(r"\[--backend \{([a-z,]+)\}\]", capsys.readouterr().out)
    assert documented.split("|") == offered.split(",") == list(backends.names())
    assert documented == "auto|perf|simulate|none"
