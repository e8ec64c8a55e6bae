"""The parent's command-line options that a simulation child repeats.

Owns: splitting pytest's own command line (``config.invocation_params.args``) into
options with their values, by the arity pytest's parser gave each option, and
keeping those that shape what a test does, so that a valgrind child runs the test
as the parent did: a conftest's ``--model-dir`` or ``--batch-size``, ``-p``, ``-c``,
``-o``, ``-W``, ``--import-mode``. Dropped: what selects, orders, distributes, reports
on, stops or debugs the run, what the child sets itself, this plugin's own options,
and the options of plugins the child blocks (:data:`DROPPED_DESTS`,
:data:`DROPPED_PREFIXES`). The ini file's ``addopts`` and ``PYTEST_ADDOPTS`` need no
forwarding: the child reads the same ini and environment.

Must not: measure, start children (:mod:`..pmu.simulate_shared`,
:mod:`..pmu.simulate_parent` take the result as ``extra_args``), or import the
engine.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: Options (by argparse ``dest``) a child never gets. Selection and order: the child
#: runs the node ids it is given (cacheprovider, which owns --lf/--ff/--nf, is blocked
#: there). Reporting and files: the parent reports, and a child writing the same
#: JUnit XML, HTML, log file or coverage data would overwrite the parent's. Stopping
#: and debugging: nobody answers a debugger in a child, and a child is 100-1000x
#: slower than the run a --timeout was set for. Set by the child itself: assertion
#: mode, verbosity, rootdir, basetemp.
DROPPED_DESTS = _words(
    # selection and order (core, cacheprovider, stepwise)
    "keyword markexpr deselect ignore ignore_glob collect_in_virtualenv keepduplicates "
    "continue_on_collection_errors doctestmodules doctestglob lf failedfirst newfirst "
    "cacheshow cacheclear last_failed_no_failures stepwise stepwise_skip stepwise_reset "
    "cache_dir "
    # what the run shows instead of running tests
    "help version markers showfixtures show_fixtures_per_test collectonly setuponly "
    "setupplan setupshow traceconfig "
    # reporting and the files it writes
    "verbose reportchars tbstyle showlocals color code_highlight durations durations_min "
    "fulltrace showcapture no_header no_summary fold_skipped force_short_summary xfail_tb "
    "max_warnings disable_warnings xmlpath junitprefix resultlog pastebin debug log_file "
    "log_file_level log_file_format log_file_date_format log_file_mode htmlpath "
    "self_contained_html css metadata metadata_from_json metadata_from_json_file "
    "reportlog no_cov "
    # stopping and debugging
    "maxfail exitfirst usepdb usepdb_cls trace timeout timeout_method session_timeout "
    "timeout_disable_debugger_detection "
    # pytest-xdist: the child is one process
    "numprocesses dist tx maxprocesses maxschedchunk maxworkerrestart rsyncdir "
    "rsyncignore looponfail distload px testrunuid loadscopereorder "
    # set by the child itself
    "assertmode rootdir basetemp"
)
#: Families of options dropped by their ``dest`` prefix: this plugin's own (the child
#: neither judges, writes reports nor updates baselines), coverage, pytest-benchmark's
#: (its saves and comparisons), JSON reports, random test order, and the plugins a
#: child blocks (pytest-randomly, Hypothesis's pytest plugin).
DROPPED_PREFIXES = (
    "inferperf",
    "cov",
    "benchmark_",
    "json_report",
    "random_order",
    "randomly_",
    "hypothesis_",
)

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


def dropped(dest: str) -> bool:
    """True for an option a simulation child does not repeat (see the module's text)."""
    return dest in DROPPED_DESTS or dest.startswith(DROPPED_PREFIXES)


def repeated_args(args: Sequence[str], arities: Mapping[str, OptionArity]) -> list[str]:
    """The tokens of ``args`` a simulation child repeats, in their order. An option the
    parser does not know (none, where pytest accepted the line) is kept as given."""
    kept: list[str] = []
    for option in split_options(args, arities):
        if option.arity is not None and dropped(option.arity.dest):
            continue
        kept += option.tokens()
    return kept


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
        cached = tuple(repeated_args(args, arities)) if arities is not None else ()
        if config.pluginmanager.hasplugin("xdist"):
            # the child is one process (valgrind follows no workers): no -n of the
            # project's addopts or PYTEST_ADDOPTS may distribute it (pytest puts those
            # before the command line, whose last -n wins; the parent's own is dropped)
            cached += ("-n", "0")
        config.stash[_CHILD_ARGS] = cached
    return cached
