"""The live progress line of a long profile, on pytest's terminal.

Owns: whether a profile shows one (not in a log pytest keeps quiet, not on an xdist
worker), ``inferperf_progress_interval`` read from the ini file, and writing past
pytest's output capture. Must not: measure or time anything itself
(:mod:`measure.progress` does), or import the engine at module level.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from .context import is_worker


def live_line(config: pytest.Config, item: pytest.Item, variant: str) -> Any:
    """The live progress line for one profile of ``item`` (progress.LiveLine), or quiet."""
    from ..measure import progress

    reporter = config.pluginmanager.get_plugin("terminalreporter")
    writer = getattr(reporter, "_tw", None)
    out = getattr(writer, "_file", None)
    if writer is None or out is None or config.option.verbose < 0 or is_worker(config):
        return progress.QUIET
    try:
        interval = float(config.getini("inferperf_progress_interval"))
    except ValueError:
        raise pytest.UsageError(
            "inferperf_progress_interval = "
            f"{config.getini('inferperf_progress_interval')!r} in the ini file: "
            "give the seconds between progress lines as a number, e.g. 60"
        ) from None
    capture = config.pluginmanager.get_plugin("capturemanager")
    label = item.nodeid + (f" [{variant}]" if variant else "")
    return progress.LiveLine(
        label,
        out,
        tty=bool(getattr(reporter, "isatty", False) and writer.hasmarkup),
        width=writer.fullwidth,
        column=lambda: writer.width_of_current_line,
        interval=interval,
        uncaptured=(
            capture.global_and_fixture_disabled if capture is not None else contextlib.nullcontext
        ),
    )
