"""Extension points: the hook specifications for extra metrics and extra findings, and
the one registry both front-ends load them from.

Owns: the specs of ``pytest_inferperf_metrics`` / ``pytest_inferperf_rules``, declared
with pytest's own ``hookspec`` marker (as pytest-xdist's ``newhooks.py`` does), so
pytest's plugin manager reads them as they are; :class:`InferperfPluginManager`, the
manager outside pytest (every ``inferperf`` command that diagnoses: :func:`registry`)
that reads the same specs and the same implementations; :func:`load_plugins`, the one
place plugins come from for both (the ``pytest_inferperf`` entry-point group and the
modules named in ``$INFERPERF_PLUGINS``); and :func:`diagnosis_additions`, the one
function that calls the hooks for a diagnosis and merges their results (for a Profile:
:func:`hook_results`).

Must not: judge or compute anything itself, or import pytest.

A plugin is any module or object with functions named for the hooks; the
``hookimpl`` marker (this module's, or ``pytest.hookimpl``) is optional::

    from pytest_inferperf.diagnose.hooks import hookimpl

    @hookimpl
    def pytest_inferperf_metrics(counts, context):
        if "l1d_refill" in counts and "cycles" in counts:
            return {"l1d_refills_per_kcycle": 1000 * counts["l1d_refill"] / counts["cycles"]}
        return {}

Where they are found: under pytest, in ``conftest.py`` files and installed pytest
plugins (pytest's own discovery), and, with ``--inferperf``, in the registry; outside
pytest, in the registry only (a ``conftest.py`` is pytest's). A plugin meant for both
goes in an importable module listed under the ``pytest_inferperf`` entry-point group
of its package, or named in ``INFERPERF_PLUGINS`` (comma-separated module names).
"""

from __future__ import annotations

import importlib
import inspect
import os
import statistics
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pluggy

from ..core.errors import InferperfError

if TYPE_CHECKING:
    from ..core.metrics import MetricContext
    from ..core.profile import Profile
    from .classify import Finding, RuleContext

PROJECT = "pytest_inferperf"
ENTRY_POINT_GROUP = PROJECT
PLUGINS_ENV = "INFERPERF_PLUGINS"
HOOK_PREFIX = "pytest_inferperf_"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)
#: pytest's own markers (``pytest.hookspec`` / ``pytest.hookimpl`` are these), made here
#: without importing pytest: the specs below carry pytest's, so pytest reads them as its own.
_pytest_hookspec = pluggy.HookspecMarker("pytest")
_PYTEST_IMPL = "pytest_impl"
_PYTEST_SPEC = "pytest_spec"


@_pytest_hookspec
def pytest_inferperf_metrics(
    counts: Mapping[str, float], context: MetricContext
) -> dict[str, float]:
    """Add derived metrics.

    ``counts`` are the counter totals of a region by logical event name (``cycles``,
    ``l1d_refill``, ...); ``context`` is the :class:`~pytest_inferperf.core.metrics.MetricContext`
    (calls, wall time, core slug, MIDR, latency). Return ``{metric name: value}``; leave a
    metric out when its inputs were not counted (never return 0 for "unknown"). Results of
    all plugins are merged; a name that clashes with a built-in metric is an error.
    """


@_pytest_hookspec
def pytest_inferperf_rules(metrics: Mapping[str, float], context: RuleContext) -> list[Finding]:
    """Add findings to a diagnosis.

    ``metrics`` are all metrics (built-in and hook-added); ``context`` is the
    :class:`~pytest_inferperf.diagnose.classify.RuleContext` (core slug and facts, unavailable
    events with reasons, session settings, CPU count). Return
    :class:`~pytest_inferperf.diagnose.classify.Finding` objects with evidence whose ``source``
    says where each threshold comes from; they are ranked with the built-in findings by
    confidence. Return an empty list when nothing applies.
    """


HOOKS = ("pytest_inferperf_metrics", "pytest_inferperf_rules")


class InferperfPluginManager(pluggy.PluginManager):
    """The plugin manager outside pytest: the same specs and implementations as pytest's.

    It reads the specs' pytest marker, and takes an implementation that is marked with
    this module's :data:`hookimpl` or ``pytest.hookimpl``, or is a plain function named
    ``pytest_inferperf_*`` (as pytest takes one in a ``conftest.py``).
    """

    def __init__(self) -> None:
        super().__init__(PROJECT)

    def parse_hookspec_opts(self, module_or_class: Any, name: str) -> Any:
        opts = super().parse_hookspec_opts(module_or_class, name)
        if opts is None and name.startswith(HOOK_PREFIX):
            opts = getattr(getattr(module_or_class, name, None), _PYTEST_SPEC, None)
        return opts

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        if not name.startswith(HOOK_PREFIX):
            return None
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is not None:
            return opts
        method = getattr(plugin, name, None)
        if not inspect.isroutine(method):
            return None
        marked = getattr(method, _PYTEST_IMPL, None)
        if marked is not None:
            return dict(marked)
        return {
            "wrapper": False,
            "hookwrapper": False,
            "optionalhook": False,
            "tryfirst": False,
            "trylast": False,
            "specname": None,
        }


def register_specs(pm: pluggy.PluginManager) -> None:
    """Add the ``pytest_inferperf_*`` specs to ``pm`` (pytest's, or an inferperf one)."""
    pm.add_hookspecs(sys.modules[__name__])


class PluginLoadError(InferperfError, ImportError):
    """A plugin named in the registry could not be loaded; the message names it and the fix."""


def load_plugins(pm: pluggy.PluginManager, *, env: Mapping[str, str] | None = None) -> list[str]:
    """Register every plugin of the registry with ``pm``; the names registered.

    The registry: modules listed under the ``pytest_inferperf`` entry-point group of
    installed packages, then the modules named in ``$INFERPERF_PLUGINS``. Each is
    registered once, as ``inferperf:<name>``, whichever front-end asks.
    """
    from importlib.metadata import entry_points

    found: list[tuple[str, Any]] = [(ep.name, ep) for ep in entry_points(group=ENTRY_POINT_GROUP)]
    names = (env if env is not None else os.environ).get(PLUGINS_ENV, "")
    found.extend((n.strip(), None) for n in names.split(",") if n.strip())
    registered = []
    for name, ep in found:
        key = f"inferperf:{name}"
        if pm.has_plugin(key) or pm.is_blocked(key):
            continue
        try:
            plugin = ep.load() if ep is not None else importlib.import_module(name)
        except Exception as exc:
            where = (
                f"the {ENTRY_POINT_GROUP} entry point {name!r} ({ep.value})"
                if ep is not None
                else f"module {name!r} named in {PLUGINS_ENV}"
            )
            raise PluginLoadError(
                f"cannot load the inferperf plugin from {where}: "
                f"{type(exc).__name__}: {exc}. Install the package that provides it, make "
                f"it importable from here, or remove it from {PLUGINS_ENV}."
            ) from exc
        pm.register(plugin, key)
        registered.append(key)
    return registered


def plugin_manager(
    plugins: Iterable[Any] = (), *, load_entrypoints: bool = False
) -> pluggy.PluginManager:
    """An :class:`InferperfPluginManager` with the specs, ``plugins`` and (with
    ``load_entrypoints``) the registry's plugins (:func:`load_plugins`)."""
    pm = InferperfPluginManager()
    register_specs(pm)
    for plugin in plugins:
        pm.register(plugin)
    if load_entrypoints:
        load_plugins(pm)
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


def registry() -> pluggy.PluginManager:
    """The plugins ``inferperf``'s own commands run (``explain``, ``analyse``, ``compare``,
    ``validate``): the registry's (:func:`load_plugins`). A ``conftest.py`` is pytest's
    and is not read here. Raises :class:`PluginLoadError` for a plugin that cannot load."""
    return plugin_manager(load_entrypoints=True)


def diagnosis_additions(
    pm: pluggy.PluginManager,
    counted: Sequence[tuple[Mapping[str, float], MetricContext]],
    metrics: Mapping[str, float],
    context: RuleContext,
    *,
    keep: Callable[[str], bool] | None = None,
) -> tuple[dict[str, float], list[Finding]]:
    """What the hooks add to one diagnosis: (extra metrics, extra findings).

    The one place both hooks are called, wherever a diagnosis is made (the plugin,
    ``inferperf validate``, ``analyse``, ``compare`` and ``explain``). ``counted``: the
    counter totals of each run the diagnosis reads with its metric context (one for a
    Profile; each run of a ``perf stat`` file, whose counts are never added across runs),
    a hook metric being the median over the runs that gave it, as the built-in metrics of
    runs kept apart are (``ingest.perf_stat.PerfStatReport.metrics``). ``metrics``: the
    built-in metrics, which the rules hook sees with the added ones. ``keep``: which added
    metric names stay (all by default).
    """
    from ..core.metrics import METRICS

    per_run = [extra_metrics(pm, counts, ctx, builtin=METRICS) for counts, ctx in counted]
    names = dict.fromkeys(n for added in per_run for n in added)
    added = {
        n: float(statistics.median(a[n] for a in per_run if n in a))
        for n in names
        if keep is None or keep(n)
    }
    return added, extra_findings(pm, {**metrics, **added}, context)


def hook_results(pm: pluggy.PluginManager, profile: Profile) -> tuple[dict[str, float], list]:
    """What the hooks add to ``profile``'s judgement: (extra metrics, extra findings).

    :func:`diagnosis_additions` for a Profile: metrics from its counter totals and
    metric context, findings from all metrics and the rule context of the machine the
    profile was measured on.
    """
    from ..core.metrics import context_of, profile_metrics
    from .classify import rule_context

    return diagnosis_additions(
        pm,
        [(profile.totals, context_of(profile))],
        profile_metrics(profile),
        rule_context(profile),
    )
