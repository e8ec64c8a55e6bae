"""Reading the plugin's text whatever width it was fitted to.

The plugin wraps its failure paragraphs and moves table columns to a second line to fit
the terminal or log width (``report.terminal.fit``, ``text_width``); a word, a number
or a path is never split. :func:`said` matches glob patterns (``*`` as in
``fnmatch_lines``) in order against the output with every run of whitespace, line
breaks included, read as one space, so an assertion about what was said does not depend
on where a line was broken.
"""

from __future__ import annotations

import re

import pytest


def flat(text: str) -> str:
    """``text`` with every run of whitespace, line breaks included, as one space."""
    return " ".join(text.split())


def said(result: pytest.RunResult, *patterns: str) -> None:
    """Assert that ``patterns`` appear in this order in ``result``'s stdout, each where
    the whitespace of the output and of the pattern is read as one space."""
    text = flat(result.stdout.str())
    at = 0
    for pattern in patterns:
        regex = re.escape(flat(pattern).strip("*")).replace(r"\*", ".*?")
        found = re.compile(regex).search(text, at)
        assert found is not None, f"{pattern!r} not said (in order) in:\n{result.stdout.str()}"
        at = found.end()


def table_row(result: pytest.RunResult, test_id: str) -> str:
    """The inferperf table's row of ``test_id``, with the columns the table moved to the
    lines under it (indented) joined on, whitespace read as one space."""
    lines = result.stdout.lines
    start = max(i for i, line in enumerate(lines) if line.startswith(test_id + " "))
    row = [lines[start]]
    for line in lines[start + 1 :]:
        if not line.startswith("    "):
            break
        row.append(line)
    return flat("\n".join(row))
