"""Extension points: pluggy hook specifications for extra metrics and extra findings.

Owns: the hook specifications of the ``pytest_inferperf`` project (its own
:class:`pluggy.PluginManager`, separate from pytest's), the ``hookspec`` /
``hookimpl`` markers plugins use, and the helpers that call the hooks and merge
their results.

Must not: judge or compute anything itself, or import pytest.

A plugin is any object or module with ``@hookimpl``-marked functions::

    from pytest_inferperf.hooks import hookimpl

    @hookimpl
    def pytest_inferperf_metrics(counts, context):
        if "l1d_refill" in counts and "cycles" in counts:
            return {"l1d_refills_per_kcycle": 1000 * counts["l1d_refill"] / counts["cycles"]}
        return {}

Plugins are registered with :func:`plugin_manager` (``plugins=``) or found through the
``pytest_inferperf`` setuptools entry-point group (``load_entrypoints=True``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import pluggy

from .errors import InferperfError

if TYPE_CHECKING:
    from .classify import Finding, RuleContext
    from .metrics import MetricContext

PROJECT = "pytest_inferperf"
ENTRY_POINT_GROUP = PROJECT

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def pytest_inferperf_metrics(
    counts: Mapping[str, float], context: MetricContext
) -> dict[str, float]:
    """Add derived metrics.

    ``counts`` are the counter totals of a region by logical event name (``cycles``,
    ``l1d_refill``, ...); ``context`` is the :class:`~pytest_inferperf.metrics.MetricContext`
    (calls, wall time, core slug, MIDR, latency). Return ``{metric name: value}``; leave a
    metric out when its inputs were not counted (never return 0 for "unknown"). Results of
    all plugins are merged; a name that clashes with a built-in metric is an error.
    """


@hookspec
def pytest_inferperf_rules(metrics: Mapping[str, float], context: RuleContext) -> list[Finding]:
    """Add findings to a diagnosis.

    ``metrics`` are all metrics (built-in and hook-added); ``context`` is the
    :class:`~pytest_inferperf.classify.RuleContext` (core slug and facts, unavailable
    events with reasons, session settings, CPU count). Return
    :class:`~pytest_inferperf.classify.Finding` objects with evidence whose ``source``
    says where each threshold comes from; they are ranked with the built-in findings by
    confidence. Return an empty list when nothing applies.
    """


def plugin_manager(
    plugins: Iterable[Any] = (), *, load_entrypoints: bool = False
) -> pluggy.PluginManager:
    """A plugin manager with these hook specifications and ``plugins`` registered."""
    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(sys.modules[__name__])
    for plugin in plugins:
        pm.register(plugin)
    if load_entrypoints:
        pm.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
    return pm


class HookResultError(InferperfError, ValueError):
    """A hook implementation returned something unusable; the message names it."""


def extra_metrics(
    pm: pluggy.PluginManager,
    counts: Mapping[str, float],
    context: MetricContext,
    builtin: Iterable[str] = (),
) -> dict[str, float]:
    """Call ``pytest_inferperf_metrics`` and merge the results into one dict."""
    taken = set(builtin)
    merged: dict[str, float] = {}
    for result in pm.hook.pytest_inferperf_metrics(counts=counts, context=context):
        if result is None:
            continue
        if not isinstance(result, Mapping):
            raise HookResultError(
                f"pytest_inferperf_metrics must return a dict of floats, got {type(result)!r}"
            )
        for name, value in result.items():
            if name in taken:
                raise HookResultError(
                    f"pytest_inferperf_metrics: metric {name!r} is already defined"
                )
            merged[str(name)] = float(value)
            taken.add(name)
    return merged


def extra_findings(
    pm: pluggy.PluginManager, metrics: Mapping[str, float], context: RuleContext
) -> list[Finding]:
    """Call ``pytest_inferperf_rules`` and flatten the results (for ``diagnose``)."""
    from .classify import Finding

    found: list[Finding] = []
    for result in pm.hook.pytest_inferperf_rules(metrics=metrics, context=context):
        for finding in result or ():
            if not isinstance(finding, Finding):
                raise HookResultError(
                    f"pytest_inferperf_rules must return Finding objects, got {type(finding)!r}"
                )
            if not 0.0 <= finding.confidence <= 1.0:
                raise HookResultError(
                    f"pytest_inferperf_rules: {finding.category} has confidence "
                    f"{finding.confidence}, outside 0..1"
                )
            found.append(finding)
    return found
