"""The ``inferperf explain`` outputs shown in the docs are what the command prints today.

Every fenced example in docs/*.md that runs ``inferperf explain`` on a file of this
repository (no pipe, no abbreviation ``...`` in its output) is run again through the
real command line, and its output must match the docs line for line. A change to the
diagnosis that changes an example fails here until the docs show the new output.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from pytest_inferperf.cli.main import main

REPO = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```[a-z]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _examples() -> list[tuple[str, str, list[str]]]:
    found = []
    for doc in sorted((REPO / "docs").glob("*.md")):
        for block in FENCE.findall(doc.read_text(encoding="utf-8")):
            lines = block.rstrip("\n").split("\n")
            starts = [i for i, line in enumerate(lines) if line.startswith("$ ")]
            for n, i in enumerate(starts):
                command = lines[i][2:]
                output = lines[i + 1 : starts[n + 1] if n + 1 < len(starts) else len(lines)]
                if not command.startswith("inferperf explain ") or "|" in command:
                    continue
                args = shlex.split(command)
                if "|" in args:
                    continue
                if any("..." in line for line in output) or not output:
                    continue
                if not (REPO / args[2]).is_file():
                    continue  # an example about a file of the reader's (run.txt)
                found.append((doc.name, command, output))
    return found


EXAMPLES = _examples()


def test_the_docs_have_examples_to_check():
    assert len(EXAMPLES) >= 5


@pytest.mark.parametrize(
    ("doc", "command", "output"), EXAMPLES, ids=[f"{d}: {c[18:70]}" for d, c, _ in EXAMPLES]
)
def test_a_documented_explain_output_is_what_the_command_prints(
    doc: str,
    command: str,
    output: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(REPO)
    main(shlex.split(command)[1:])
    captured = capsys.readouterr()
    printed = (captured.out + captured.err).rstrip("\n").split("\n")
    assert [line.rstrip() for line in printed] == [line.rstrip() for line in output]
