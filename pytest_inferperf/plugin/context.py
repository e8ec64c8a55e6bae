"""What the session's pieces ask of this pytest run: whether this process is an xdist
worker, how wide its text may be, paths as the user reads them, a test's baseline key
and its junit properties.

Owns: those small answers, read from pytest's config and items. Must not: judge,
measure, write files, or import the engine at module level (the plugin loads with
every pytest run).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from ..diagnose.assessment import Assessment as Verdict


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def output_width(config: pytest.Config) -> int:
    """The columns the plugin's text may take: pytest's terminal width on a terminal, at
    most ``report.terminal.LOG_WIDTH`` in a log (pytest's width there: ``$COLUMNS``, or 80)."""
    from ..report.terminal import LOG_WIDTH, text_width

    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:  # -p no:terminal: a log
        return LOG_WIDTH
    tty = bool(getattr(reporter, "isatty", False))
    return text_width(config.get_terminal_writer().fullwidth, tty)


def shown_path(path: Path, config: pytest.Config) -> str:
    """``path`` as the user wrote it: relative to where pytest was started, when inside."""
    try:
        return os.path.relpath(path, config.invocation_params.dir)
    except ValueError:
        return str(path)


def relative(path: Path, config: pytest.Config) -> str:
    """``path`` relative to the rootdir, where it is inside; else as it is."""
    try:
        return str(Path(path).relative_to(config.rootpath))
    except ValueError:
        return str(path)


def baseline_key(item: pytest.Item) -> str:
    """The key of ``item``'s baseline: its file's path from the rootdir, then its name.

    The same as the node id for a file inside the rootdir (so existing baselines keep
    their names). For a file outside it, where pytest's id may lose the path (``::test_a``
    for both ``one/test_one.py`` and ``two/test_two.py``), the path relative to the rootdir
    (``../one/test_one.py``), or the absolute path where there is no relative one.
    """
    file_part, sep, test_part = item.nodeid.partition("::")
    path = getattr(item, "path", None)
    if not sep or path is None:
        return item.nodeid
    root = Path(item.config.rootpath)
    try:
        relative = Path(path).relative_to(root).as_posix()
    except ValueError:
        try:
            relative = Path(os.path.relpath(path, root)).as_posix()
        except ValueError:  # another drive
            relative = Path(path).as_posix()
    return item.nodeid if relative == file_part else f"{relative}::{test_part}"


def add_property(item: pytest.Item, name: str, value: object) -> None:
    """A junit ``<property>``: name and text value XML-safe (pytest escapes neither name)."""
    from ..report.terminal import xml_safe

    safe = (
        value if isinstance(value, int | float) and not isinstance(value, bool) else xml_safe(value)
    )
    item.user_properties.append((xml_safe(name).replace("\n", "\\n").replace("\r", "\\r"), safe))


def property_prefix(verdict: Verdict, item: pytest.Item) -> str:
    """What a profile's junit property names start with after ``inferperf.``: nothing for
    the test's own profile, ``<variant>.`` for a named ``pmu_profile`` call."""
    base = baseline_key(item)
    return "" if verdict.key == base else verdict.key[len(base) + 1 :] + "."
