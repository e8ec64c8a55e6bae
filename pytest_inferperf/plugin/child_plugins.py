"""Installed plugins a simulation child starts without.

Owns: which of the session's installed plugins (setuptools entry points) a valgrind
child leaves unloaded (``-p no:<name>``). Under valgrind each plugin's import is paid
again at emulated speed: pytest-html (with jinja2), pytest-metadata, pytest-benchmark
and pytest-timeout took a child's ``pytest --co`` of the example from 2.5-2.7 s to
2.1-2.2 s. Only the plugins of :data:`UNNEEDED_IN_CHILD` are candidates: they report,
time or bound tests, and change nothing a test does. A candidate still loads when the
measured tests use one of its fixtures (autouse included) or its item classes, carry
one of its markers, or when the child would be given one of its options (the ini
file's ``addopts``, ``PYTEST_ADDOPTS``, the options the child repeats) or one of its
ini settings (without the plugin they would be unknown: an error under
``--strict-config`` or ``filterwarnings = error``), or when a plugin that loads
requires its distribution (pytest-html needs pytest-metadata).

Must not: measure or start children (``..pmu`` takes the names); block a plugin it
cannot show unneeded: where pytest keeps what it reads elsewhere, nothing is blocked.
"""

from __future__ import annotations

import os
import re
import shlex
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import pytest

from .child_args import OptionRecorder, child_args, record_addoption

#: Candidates, by distribution name (lower case, ``-`` for ``_``), with the markers each
#: registers: reporting (html, metadata, json, Markdown, report logs, CI annotations,
#: terminal styles, assertion diffs), coverage, benchmarking and timeouts.
UNNEEDED_IN_CHILD: dict[str, tuple[str, ...]] = {
    "pytest-html": (),
    "pytest-metadata": (),
    "pytest-benchmark": ("benchmark",),
    "pytest-timeout": ("timeout",),
    "pytest-cov": ("no_cover",),
    "pytest-sugar": (),
    "pytest-instafail": (),
    "pytest-json-report": (),
    "pytest-md-report": (),
    "pytest-reportlog": (),
    "pytest-github-actions-annotate-failures": (),
    "pytest-icdiff": (),
    "pytest-clarity": (),
}

_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _top(module: str | None) -> str:
    return (module or "").split(".")[0]


def _dist_name(dist: Any) -> str:
    try:
        return _key(str(dist.metadata["Name"]))
    except Exception:  # a distribution without metadata: never a candidate
        return ""


def _requires(dist: Any) -> set[str]:
    """The distributions ``dist`` needs to run (its extras' requirements left out)."""
    needs = set()
    for requirement in getattr(dist, "requires", None) or ():
        name, _, condition = requirement.partition(";")
        match = _REQUIREMENT_NAME.match(name)
        if match and "extra" not in condition:
            needs.add(_key(match.group(1)))
    return needs


def _fixture_packages(items: Iterable[pytest.Item]) -> set[str] | None:
    """Top-level packages of every fixture the items use and of their classes; None
    where an item does not say (another pytest): then no plugin can be shown unneeded."""
    packages = set()
    for item in items:
        packages.add(_top(type(item).__module__))
        info = getattr(item, "_fixtureinfo", None)
        defs = getattr(info, "name2fixturedefs", None)
        if defs is None:
            return None
        for fixturedefs in defs.values():
            for fixturedef in fixturedefs:
                packages.add(_top(getattr(getattr(fixturedef, "func", None), "__module__", "")))
    return packages


def _ini_keys(config: pytest.Config) -> set[str] | None:
    """The ini settings this run sets (the ini file and ``-o``); None where unknown."""
    values = getattr(config, "_inicfg", None)  # pytest 9: overrides included
    if values is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            values = getattr(config, "inicfg", None)
    if values is None or not hasattr(values, "keys"):
        return None
    keys = set(values.keys())
    for override in getattr(config, "_override_ini", None) or ():
        keys.add(str(override).split("=", 1)[0])
    return keys


def _given_options(config: pytest.Config, extra_args: Sequence[str]) -> set[str]:
    """The option strings a child's pytest reads: addopts, PYTEST_ADDOPTS, its own line."""
    tokens = [str(t) for t in config.getini("addopts")]
    with_env = os.environ.get("PYTEST_ADDOPTS", "")
    try:
        tokens += shlex.split(with_env)
    except ValueError:
        tokens += with_env.split()
    tokens += [str(t) for t in extra_args]
    return {t.split("=", 1)[0] for t in tokens if t.startswith("-")}


def _registers(modules: Iterable[object]) -> OptionRecorder | None:
    """The options and ini names ``modules``' ``pytest_addoption`` hooks register; None
    where a hook fails when run again (its options stay unknown)."""
    recorder = OptionRecorder()
    return recorder if all(record_addoption(m, recorder) for m in modules) else None


def unneeded_plugins(
    config: pytest.Config, items: Sequence[pytest.Item], extra_args: Sequence[str] = ()
) -> tuple[str, ...]:
    """The entry-point names (``pytest11``) a simulation child of ``items`` may leave
    unloaded: every one of each distribution it starts without."""
    manager = config.pluginmanager
    modules: dict[str, list[object]] = {}
    dists: dict[str, Any] = {}
    for plugin, dist in manager.list_plugin_distinfo():
        modules.setdefault(_dist_name(dist), []).append(plugin)
        dists.setdefault(_dist_name(dist), dist)
    candidates = {name for name in modules if name in UNNEEDED_IN_CHILD}
    if not candidates:
        return ()
    packages = _fixture_packages(items)
    ini = _ini_keys(config)
    if packages is None or ini is None:
        return ()
    markers = {mark.name for item in items for mark in item.iter_markers()}
    given = _given_options(config, extra_args)
    blocked = set()
    for name in candidates:
        own = {_top(getattr(module, "__name__", None)) for module in modules[name]}
        recorded = _registers(modules[name])
        if (
            own & packages
            or markers & set(UNNEEDED_IN_CHILD[name])
            or recorded is None
            or given & set(recorded.options)
            or ini & set(recorded.ini)
        ):
            continue
        blocked.add(name)
    needs = {name: _requires(dist) for name, dist in dists.items()}
    changed = True
    while changed:  # a plugin that loads keeps what its distribution requires
        kept = set().union(*(needs[name] for name in dists if name not in blocked))
        changed = bool(kept & blocked)
        blocked -= kept
    return tuple(
        entry.name
        for name, dist in dists.items()
        if name in blocked
        for entry in getattr(dist, "entry_points", None) or ()
        if entry.group == "pytest11"
    )


def child_line(config: pytest.Config, items: Sequence[pytest.Item]) -> tuple[str, ...]:
    """What a simulation child of ``items`` adds to its command line: the parent's
    options it repeats (:func:`.child_args.child_args`), then ``-p no:<name>`` for each
    plugin it starts without."""
    args = child_args(config)
    blocked = unneeded_plugins(config, items, args)
    return (*args, *(token for name in blocked for token in ("-p", f"no:{name}")))
