"""Which tests are inferperf tests, and the marker's parsed spec for one.

Owns: reading the ``perf`` marker off an item. Must not: measure or judge.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from .keys import FIXTURES

if TYPE_CHECKING:
    from ..judge.budgets import PerfSpec


def uses_inferperf(item: pytest.Item) -> bool:
    """Whether ``item`` is an inferperf test: it uses ``pmu_profile`` or an ``inferperf`` marker.

    Another suite's own ``perf`` marker on tests that never measure is not ours.
    """
    names = getattr(item, "fixturenames", ())
    return any(f in names for f in FIXTURES) or item.get_closest_marker("inferperf") is not None


def spec_for(item: pytest.Item) -> PerfSpec:
    """The merged budget markers of an item (closest first wins per keyword).

    ``inferperf`` markers when the item has any (the unambiguous name), else ``perf``.
    """
    from ..judge.budgets import parse_marker

    name = "inferperf" if item.get_closest_marker("inferperf") is not None else "perf"
    kwargs: dict[str, Any] = {}
    for mark in reversed(list(item.iter_markers(name))):
        if mark.args:
            parse_marker(mark.args, {}, marker=name)
        kwargs.update(mark.kwargs)
    return parse_marker((), kwargs, marker=name)
