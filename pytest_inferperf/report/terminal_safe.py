"""Values made safe to print: every string inside them terminal-escaped.

Owns: :func:`terminal_safe`, a copy of a value (a Profile, a Verdict, a comparison, a
diagnosis; any nesting of dataclasses, mappings, lists and tuples) whose every string
has its control characters shown as visible escapes (``report.terminal.clean``). Names
from report.json files, baselines and models (test names, node names, op types, model
paths, labels) reach the terminal through the CLI's text renderers; escaping them
*before* rendering keeps the renderer's own layout (newlines between table rows) while a
newline, carriage return or ANSI escape inside a name can neither split a row nor drive
the terminal.

Must not: change numbers, keys' meaning or what is written to files (JSON, HTML keep the
original text; only what is printed goes through here).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from .terminal import clean

_MAX_DEPTH = 64


def terminal_safe(value: Any, _depth: int = 0) -> Any:
    """``value`` with every string in it escaped for the terminal (a copy; ``value`` is
    untouched). A dataclass that cannot be rebuilt is returned as it was: the printed
    text is cleaned again as a whole, so nothing raw reaches the terminal either way."""
    if isinstance(value, str):
        return clean(value)
    if _depth > _MAX_DEPTH or isinstance(value, bool | int | float | bytes) or value is None:
        return value
    depth = _depth + 1
    if isinstance(value, Mapping):
        items = {terminal_safe(k, depth): terminal_safe(v, depth) for k, v in value.items()}
        rebuild: Any = type(value)
        try:
            return rebuild(items)  # dict, or a mapping type built from one
        except TypeError:
            return items
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a namedtuple
        return type(value)(*(terminal_safe(v, depth) for v in value))
    if isinstance(value, list | tuple):
        return type(value)(terminal_safe(v, depth) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {
            f.name: terminal_safe(getattr(value, f.name), depth)
            for f in dataclasses.fields(value)
            if f.init
        }
        try:
            return dataclasses.replace(value, **changes)
        except Exception:  # a value object whose checks refuse the copy: printed as it is
            return value
    return value
