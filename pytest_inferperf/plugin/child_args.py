"""The parent's command-line options that a simulation child repeats.

Owns: splitting pytest's own command line (``config.invocation_params.args``) into
options with their values, by the arity pytest's parser gave each option, and
keeping those that shape what a test does, so that a valgrind child runs the test
as the parent did. Repeated: every option the project's own code registers (its
conftests' and its plugin modules' under the rootdir: ``--model-dir``,
``--batch-size``), and those of pytest's own that say which plugins, configuration
and warnings apply and how tests are imported (:data:`REPEATED_DESTS`: ``-p``,
``-c``, ``-o``, ``-W``, ``--import-mode``, ...). Not repeated: whatever selects,
orders, distributes, reports on, stops or debugs the run, this plugin's own options,
and installed plugins' options (an unknown one may select tests or write and clean
report files; a child reads them from the ini file's ``addopts`` and from
``PYTEST_ADDOPTS``, as any pytest run there does).

Must not: measure, start children (:mod:`..measure.simulate.shared`,
:mod:`..measure.simulate.parent` take the result as ``extra_args``), or import the
engine.
"""

from __future__ import annotations

import inspect
import re
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: pytest's own options a child repeats, by argparse ``dest``: which plugins load and
#: how they are configured, which warnings are errors, how tests are imported and
#: their output captured, and the logging level (a workload's log calls are part of
#: its work).
REPEATED_DESTS = _words(
    "plugins inifilename override_ini confcutdir noconftest disable_plugin_autoload "
    "importmode pyargs pythonwarnings strict strict_config strict_markers runxfail "
    "capture log_level log_format log_date_format log_auto_indent logger_disable"
)

_OWN_PACKAGE = __name__.split(".")[0]
_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


@dataclass(frozen=True)
class OptionArity:
    """What argparse knows of one option string: its ``dest`` and ``nargs`` (None: one
    value; 0: a flag; an int, ``?``, ``*`` or ``+``: as argparse reads them)."""

    dest: str
    nargs: int | str | None


@dataclass(frozen=True)
class GivenOption:
    """One option as given: the option string and the values it took."""

    option: str
    values: tuple[str, ...]
    arity: OptionArity | None  # None: not an option pytest's parser knows

    def tokens(self) -> list[str]:
        """The option as command-line tokens that parse back to the same values."""
        single = self.arity is not None and self.arity.nargs in (None, 1, "?")
        if single and len(self.values) == 1:
            value = self.values[0]
            if self.option.startswith("--"):
                return [f"{self.option}={value}"]
            # a short option's value apart, unless it looks like an option itself
            return [self.option + value] if value.startswith("-") else [self.option, value]
        return [self.option, *self.values]


def _option_like(token: str) -> bool:
    return token.startswith("-") and token != "-" and not _NUMBER.match(token)


def _takes(arity: OptionArity | None) -> int | str:
    if arity is None:
        return 0
    return 1 if arity.nargs is None else arity.nargs


def split_options(args: Sequence[str], arities: Mapping[str, OptionArity]) -> list[GivenOption]:
    """The options of a command line pytest parsed, in order, each with its values;
    positional arguments (test paths, node ids) left out, as is everything after
    ``--``. Short flags given together (``-vx``) come apart; a value joined to its
    option (``-n2``, ``--tb=short``) is read as argparse reads it."""
    given: list[GivenOption] = []
    index = 0
    while index < len(args):
        token = args[index]
        index += 1
        if token == "--":
            break
        if not _option_like(token):
            continue
        name, equals, joined = token.partition("=")
        if equals and name in arities:
            given.append(GivenOption(name, (joined,), arities[name]))
            continue
        if token.startswith("--") or len(token) == 2 or token in arities:
            arity = arities.get(token)
            values, index = _values(args, index, _takes(arity))
            given.append(GivenOption(token, values, arity))
            continue
        cluster = token[1:]
        while cluster:  # -vx, -n2, -pno:cacheprovider
            option = "-" + cluster[0]
            arity = arities.get(option)
            rest = cluster[1:]
            if arity is None or _takes(arity) == 0:
                given.append(GivenOption(option, (), arity))
                cluster = rest
                continue
            if rest:
                given.append(GivenOption(option, (rest,), arity))
            else:
                values, index = _values(args, index, _takes(arity))
                given.append(GivenOption(option, values, arity))
            break
    return given


def _values(args: Sequence[str], index: int, takes: int | str) -> tuple[tuple[str, ...], int]:
    """The values an option takes from ``args[index:]``, and the index after them. A
    command line pytest accepted gives a fixed-count option its values."""
    if isinstance(takes, int):
        end = min(len(args), index + takes)
        return tuple(args[index:end]), end
    end = index
    while end < len(args) and args[end] != "--" and not _option_like(args[end]):
        end += 1
        if takes == "?":
            break
    return tuple(args[index:end]), end


def repeated(option: GivenOption, project: frozenset[str]) -> bool:
    """True for an option a simulation child repeats: one the project registers
    (``project``: its option strings), or one of pytest's own in REPEATED_DESTS."""
    if option.option in project:
        return True
    return option.arity is not None and option.arity.dest in REPEATED_DESTS


def repeated_args(
    args: Sequence[str], arities: Mapping[str, OptionArity], project: frozenset[str]
) -> list[str]:
    """The tokens of ``args`` a simulation child repeats, in their order."""
    kept: list[str] = []
    for option in split_options(args, arities):
        if repeated(option, project):
            kept += option.tokens()
    return kept


class OptionRecorder:
    """Stands in for pytest's parser (and its option groups) while a module's
    ``pytest_addoption`` runs again: it records the option strings and ini names,
    nothing else."""

    def __init__(self) -> None:
        self.options: list[str] = []
        self.ini: list[str] = []

    def addoption(self, *opts: Any, **attrs: Any) -> None:
        self.options += [opt for opt in opts if isinstance(opt, str)]

    _addoption = addoption

    def addini(self, name: Any, *args: Any, **kwargs: Any) -> None:
        if isinstance(name, str):
            self.ini.append(name)

    def getgroup(self, *args: Any, **kwargs: Any) -> OptionRecorder:
        return self

    def __getattr__(self, name: str) -> Any:  # whatever else: nothing
        return lambda *args, **kwargs: None


def _project_module(plugin: object, rootdir: Path) -> bool:
    """True for a module of the project's own: a conftest or a plugin module under the
    rootdir, not an installed one (site-packages, even inside the rootdir), and not
    this plugin."""
    if not isinstance(plugin, types.ModuleType) or plugin.__name__.startswith(_OWN_PACKAGE):
        return False
    file = getattr(plugin, "__file__", None)
    if not file:
        return False
    path = Path(file).resolve()
    if {"site-packages", "dist-packages"} & set(path.parts):
        return False
    return path.is_relative_to(rootdir.resolve())


def project_options(config: pytest.Config) -> frozenset[str]:
    """The option strings the project's own modules register: each one's
    ``pytest_addoption`` run again against :class:`OptionRecorder` (a module whose
    hook fails there contributes none; its options are then not repeated)."""
    recorder = OptionRecorder()
    for plugin in config.pluginmanager.get_plugins():
        if _project_module(plugin, config.rootpath):
            record_addoption(plugin, recorder)
    return frozenset(recorder.options)


def record_addoption(plugin: object, recorder: OptionRecorder) -> bool:
    """Run ``plugin``'s ``pytest_addoption`` again against ``recorder``; False where it
    raised (someone else's code, run a second time: never fatal here)."""
    hook = getattr(plugin, "pytest_addoption", None)
    if not callable(hook):
        return True
    try:
        wanted = inspect.signature(hook).parameters
        given = {"parser": recorder, "pluginmanager": OptionRecorder()}
        hook(**{name: value for name, value in given.items() if name in wanted})
    except Exception:
        return False
    return True


def option_arities(config: pytest.Config) -> dict[str, OptionArity] | None:
    """Every option string pytest's parser knows in this session, or None where this
    pytest keeps its parser elsewhere (``config._parser.optparser``, an argparse parser,
    in pytest 7.4 to 9)."""
    parser: Any = getattr(getattr(config, "_parser", None), "optparser", None)
    actions = getattr(parser, "_option_string_actions", None)
    if not isinstance(actions, Mapping):
        return None
    return {
        option: OptionArity(str(action.dest), action.nargs) for option, action in actions.items()
    }


_CHILD_ARGS = pytest.StashKey[tuple[str, ...]]()


def child_args(config: pytest.Config) -> tuple[str, ...]:
    """What a simulation child of this session adds to its command line: the parent's
    options it repeats, and ``-n 0`` where pytest-xdist is loaded (computed once per
    session)."""
    cached = config.stash.get(_CHILD_ARGS, None)
    if cached is None:
        arities = option_arities(config)
        args = [str(arg) for arg in config.invocation_params.args]
        project = project_options(config)
        cached = tuple(repeated_args(args, arities, project)) if arities is not None else ()
        if config.pluginmanager.hasplugin("xdist"):
            # the child is one process (valgrind follows no workers): no -n of the
            # project's addopts or PYTEST_ADDOPTS may distribute it (pytest puts those
            # before the command line, whose last -n wins; the parent's own is dropped)
            cached += ("-n", "0")
        config.stash[_CHILD_ARGS] = cached
    return cached
