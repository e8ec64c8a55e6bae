"""Reading callgrind's output files (``callgrind.out.<pid>[.<part>]``).

Owns: parsing the header and the totals of one callgrind profile dump: the
``events:`` line (the event names, in column order), ``summary:`` and
``totals:`` (one cost per event; trailing zero columns may be left out),
``part:``, ``pid:``, ``cmd:`` and the ``desc:`` lines (the trigger of the dump
and the simulated cache geometry), and finding the dumps one run wrote.

Must not: run valgrind or know what the counts mean (that is :mod:`.events`).

Format: Valgrind's "Callgrind Format Specification" (valgrind docs,
``docs/callgrind-format``, format version 1). Cost lines are not read: a dump's
``totals:`` line already is the sum of every cost line, and ``summary:`` (in
the header) carries the same numbers; a file with neither is an error, never
a silent zero.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ...core.errors import InferperfError

#: The trigger callgrind writes for the dump made when the program exits.
TERMINATION_TRIGGER = "Program termination"

_CACHE_DESC = re.compile(
    r"^(?P<name>I1|D1|LL|L2) cache:\s*(?P<size>\d+) B,\s*(?P<line>\d+) B,\s*"
    r"(?P<assoc>\d+-way associative|direct-mapped|fully associative)"
)


class CallgrindFormatError(InferperfError, ValueError):
    """A file that is not a readable callgrind profile dump; the message says what is missing."""


@dataclass(frozen=True)
class CallgrindDump:
    """The header facts and totals of one callgrind dump."""

    events: Mapping[str, int]
    part: int | None = None
    pid: int | None = None
    trigger: str | None = None
    command: str | None = None
    caches: Mapping[str, str] = field(default_factory=dict)
    source: str = "<callgrind>"

    @property
    def at_exit(self) -> bool:
        return self.trigger == TERMINATION_TRIGGER


def _costs(names: list[str], text: str, what: str, source: str) -> dict[str, int]:
    values = text.split()
    if len(values) > len(names):
        raise CallgrindFormatError(
            f"{source}: {what} has {len(values)} costs but the events: line names "
            f"{len(names)} events"
        )
    try:
        numbers = [int(v, 0) for v in values]
    except ValueError:
        raise CallgrindFormatError(
            f"{source}: {what} is not a list of integers: {text!r}"
        ) from None
    numbers += [0] * (len(names) - len(numbers))  # trailing zero costs may be omitted
    return dict(zip(names, numbers, strict=True))


def read_dump(text: str, *, source: str = "<callgrind>") -> CallgrindDump:
    """Parse one callgrind dump: its totals per event and its header facts."""
    names: list[str] | None = None
    summary: str | None = None
    totals: str | None = None
    header: dict[str, str] = {}
    caches: dict[str, str] = {}
    trigger: str | None = None
    for raw in text.splitlines():
        key, sep, value = raw.strip().partition(":")
        if not sep or " " in key:
            continue
        value = value.strip()
        if key == "events":
            names = value.split()
        elif key == "summary":
            summary = value
        elif key == "totals":
            totals = value
        elif key == "desc":
            if value.startswith("Trigger:"):
                trigger = value[len("Trigger:") :].strip()
            match = _CACHE_DESC.match(value)
            if match:
                caches[match.group("name")] = value.split(":", 1)[1].strip()
        elif key in ("part", "pid", "cmd", "version", "creator"):
            header[key] = value
    if names is None:
        raise CallgrindFormatError(f"{source} is not a callgrind profile: it has no 'events:' line")
    if totals is None and summary is None:
        raise CallgrindFormatError(
            f"{source} has no 'totals:' or 'summary:' line (was the dump cut short?)"
        )
    events = _costs(
        names,
        totals if totals is not None else summary or "",
        "totals:" if totals is not None else "summary:",
        source,
    )
    return CallgrindDump(
        events=events,
        part=_int(header.get("part")),
        pid=_int(header.get("pid")),
        trigger=trigger,
        command=header.get("cmd"),
        caches=caches,
        source=source,
    )


def parse_callgrind(text: str) -> dict[str, int]:
    """Event name -> total cost of one callgrind dump (``totals:``, else ``summary:``)."""
    return dict(read_dump(text).events)


def _int(text: str | None) -> int | None:
    try:
        return None if text is None else int(text)
    except ValueError:
        return None


def dump_files(folder: str | os.PathLike[str], pid: int, stem: str = "callgrind.out") -> list[Path]:
    """The files ``--callgrind-out-file=<folder>/<stem>.%p`` produced for ``pid``."""
    folder = Path(folder)
    base = f"{stem}.{pid}"
    return sorted(
        p
        for p in folder.glob(f"{base}*")
        if p.name == base or re.fullmatch(re.escape(base) + r"\.\d+", p.name)
    )


def read_dumps(
    folder: str | os.PathLike[str], pid: int, stem: str = "callgrind.out"
) -> list[CallgrindDump]:
    """Every dump of ``pid`` except the one written at exit, in the order they were made."""
    dumps = []
    for path in dump_files(folder, pid, stem):
        dump = read_dump(path.read_text(encoding="utf-8", errors="replace"), source=str(path))
        if not dump.at_exit:
            dumps.append(dump)
    return sorted(dumps, key=lambda d: (d.part is None, d.part or 0))
