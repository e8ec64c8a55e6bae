"""Text that leaves the tool is escaped: terminal (control characters) and junit (XML)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from pytest_inferperf.report.terminal import clean, render_summary, xml_safe

pytest_plugins = ["pytester"]

HOSTILE = "\x1b[2J\x1b[31mred\rover\nrow\x00\x07\u202eevil"


def test_clean_shows_every_control_character():
    text = clean(HOSTILE)
    assert not any(ch in text for ch in "\x1b\r\n\x00\x07\u202e")
    assert "\\x1b[2J" in text and "\\x0d" in text and "\\u202e" in text


def test_clean_keeps_the_layout_of_a_message_when_asked():
    assert clean("line 1\n\tline 2\x1b[0m", keep_newlines=True) == "line 1\n\tline 2\\x1b[0m"


def test_xml_safe_escapes_what_xml_cannot_hold():
    assert xml_safe("a\x00b\x1bc\ud800d") == "a\\x00b\\x1bc\\ud800d"
    assert xml_safe("ok µs →") == "ok µs →"


def test_a_hostile_record_cannot_split_the_table_or_drive_the_terminal():
    record = {
        "key": "t.py::test@" + HOSTILE,
        "metrics": {},
        "status": "passed",
        "outcome": "passed",
        "failed": False,
        "change": HOSTILE,
        "diagnosis": HOSTILE,
        "unavailable": {"cycles": HOSTILE},
        "artifacts": {"x": HOSTILE},
    }
    text = render_summary([record], [HOSTILE], [HOSTILE], [HOSTILE], update=True)
    assert "\x1b" not in text and "\r" not in text and "\x00" not in text
    table = text.split("\n\n")[0].splitlines()
    assert len(table) == 3  # header, rule, one row: the name's newline did not split it


def test_hostile_variant_names_leave_terminal_and_junit_safe(pytester):
    pytester.makepyfile(
        test_a=f"""
        import pytest
        @pytest.mark.perf(warmup=1, repeat=3, tolerance=0.5, latency_p50_ms_max=1e-9)
        def test_x(pmu_profile):
            pmu_profile(lambda: sum(range(100)), name={HOSTILE!r})
    """
    )
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "--inferperf",
        "--inferperf-flamegraphs",
        "none",
        "--junitxml",
        "junit.xml",
    )
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "\x1b[2J" not in out and "\x00" not in out and "\u202e" not in out
    assert "\\x1b[2J" in out
    tree = ET.parse(Path(pytester.path, "junit.xml"))  # well-formed
    names = [p.get("name") for p in tree.iter("property")]
    assert any("\\x1b[2J" in n for n in names)
    assert all("\x1b" not in n and "\x00" not in n for n in names)
