"""Which of the parent's command-line options a simulation child repeats.

The splitting is checked against argparse itself: a command line argparse accepts,
split and put back together, parses to the same values (hypothesis); the policy on
pytest's own parser in a real session (pytester); the end-to-end effect, a
conftest option reaching the valgrind child, in the slow tests of
tests/test_simulate_shared.py.
"""

from __future__ import annotations

import argparse

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_inferperf.plugin.child_args import (
    OptionArity,
    child_args,
    dropped,
    option_arities,
    repeated_args,
    split_options,
)

ARITIES = {
    "-p": OptionArity("plugins", None),
    "-k": OptionArity("keyword", None),
    "-v": OptionArity("verbose", 0),
    "-q": OptionArity("verbose", 0),
    "-x": OptionArity("maxfail", 0),
    "-s": OptionArity("capture_no", 0),
    "-n": OptionArity("numprocesses", None),
    "-W": OptionArity("pythonwarnings", None),
    "--tb": OptionArity("tbstyle", None),
    "--inferperf": OptionArity("inferperf", 0),
    "--update-baselines": OptionArity("inferperf_update_baselines", 0),
    "--cov": OptionArity("cov_source", "?"),
    "--metadata": OptionArity("metadata", 2),
    "--n-iter": OptionArity("n_iter", None),
    "--model-dir": OptionArity("model_dir", None),
    "--offset": OptionArity("offset", None),
}


def test_a_conftest_option_plugins_and_warnings_reach_the_child_and_the_runs_own_do_not():
    line = [
        "-q", "--inferperf", "--update-baselines", "--n-iter", "50000", "tests/",
        "-pno:xdist", "-vx", "-n2", "--tb=short", "-W", "error", "--cov", "src",
        "t.py::test_a", "--metadata", "key", "value", "--offset=-5", "-k", "", "--",
        "--model-dir", "m",
    ]  # fmt: skip
    assert repeated_args(line, ARITIES) == [
        "--n-iter=50000",
        "-p",
        "no:xdist",
        "-W",
        "error",
        "--offset=-5",
    ]


def test_short_options_come_apart_as_argparse_reads_them():
    given_ = split_options(["-sxpno:cacheprovider", "-n", "3", "-W", "-error"], ARITIES)
    assert [(g.option, g.values) for g in given_] == [
        ("-s", ()),
        ("-x", ()),
        ("-p", ("no:cacheprovider",)),
        ("-n", ("3",)),
        ("-W", ("-error",)),
    ]
    # a value that looks like an option stays joined to its short option
    assert given_[-1].tokens() == ["-W-error"]
    assert given_[2].tokens() == ["-p", "no:cacheprovider"]


def test_an_optional_value_is_taken_only_when_it_is_not_an_option():
    given_ = split_options(["--cov", "--n-iter", "4", "--cov", "pkg", "tests/"], ARITIES)
    assert [(g.option, g.values) for g in given_] == [
        ("--cov", ()),
        ("--n-iter", ("4",)),
        ("--cov", ("pkg",)),
    ]


def test_negative_numbers_are_values_not_options():
    assert split_options(["--offset", "-3", "-5"], ARITIES)[0].values == ("-3",)


@pytest.mark.parametrize(
    ("dest", "expected"),
    [
        ("n_iter", False),
        ("plugins", False),
        ("override_ini", False),
        ("inifilename", False),
        ("pythonwarnings", False),
        ("importmode", False),
        ("keyword", True),
        ("numprocesses", True),
        ("xmlpath", True),
        ("inferperf_backend", True),
        ("benchmark_autosave", True),
        ("cov_source", True),
        ("hypothesis_seed", True),
        ("usepdb", True),
        ("timeout", True),
    ],
)
def test_what_a_child_repeats_by_the_options_dest(dest, expected):
    assert dropped(dest) is expected


# -- against argparse ------------------------------------------------------------
_PLAIN = st.text(alphabet=st.sampled_from("abz09:/.=_ "), max_size=6)
_VALUE = st.one_of(_PLAIN, _PLAIN.map(lambda v: "-" + v))  # "-x" only joined to its option
_OPTIONS = {
    "--flag": 0,
    "-f": 0,
    "-g": 0,
    "--one": None,
    "-o": None,
    "--maybe": "?",
    "--pair": 2,
    "--many": "+",
}


def _argparse() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(allow_abbrev=False, add_help=False)
    for option, nargs in _OPTIONS.items():
        dest = option.lstrip("-") + ("_short" if not option.startswith("--") else "")
        if nargs == 0:
            parser.add_argument(option, dest=dest, action="count")
        else:
            parser.add_argument(option, dest=dest, nargs=nargs, action="append")
    parser.add_argument("paths", nargs="*")
    return parser


def _arities() -> dict[str, OptionArity]:
    parser = _argparse()
    return {
        option: OptionArity(action.dest, action.nargs)
        for option, action in parser._option_string_actions.items()
    }


@st.composite
def _command_line(draw: st.DrawFn) -> list[str]:
    tokens: list[str] = []
    for _ in range(draw(st.integers(0, 8))):
        option = draw(st.sampled_from(sorted(_OPTIONS)))
        nargs = _OPTIONS[option]
        plain = _PLAIN
        if nargs == 0:
            tokens.append(option)
        elif nargs is None:
            value = draw(_VALUE)
            if value.startswith("-"):
                joined = f"{option}={value}" if option.startswith("--") else option + value
                tokens.append(joined)
            else:
                tokens += [option, value]
        elif nargs == "?":
            tokens += [option, *draw(st.lists(plain.filter(bool), max_size=1))]
            tokens.append("-f")  # so that a path after it is not its value
        elif nargs == 2:
            tokens += [option, draw(plain), draw(plain)]
        else:
            tokens += [option, *draw(st.lists(plain.filter(bool), min_size=1, max_size=3))]
            tokens.append("-g")
        if draw(st.booleans()):
            tokens.append(draw(st.sampled_from(["tests/", "t.py::a", "x.py"])))
    return tokens


@settings(max_examples=300, deadline=None)
@given(_command_line())
def test_a_split_command_line_parses_back_to_the_same_options(line):
    parser = _argparse()
    original = vars(parser.parse_intermixed_args(line))
    again = vars(parser.parse_intermixed_args(repeated_args(line, _arities())))
    assert again.pop("paths") == []  # positional arguments are never repeated
    original.pop("paths")
    assert again == original


# -- a real pytest session -----------------------------------------------------------
def test_the_session_repeats_a_conftest_option_and_drops_its_own_run_options(pytester):
    pytester.makeconftest(
        """
        def pytest_addoption(parser):
            parser.addoption("--n-iter", type=int, default=1)
            parser.addoption("--names", nargs="*", default=[])
        """
    )
    pytester.makepyfile(test_x="def test_a(): pass")
    config = pytester.parseconfigure(
        "--n-iter", "7", "-x", "-p", "no:randomly", "--inferperf",
        "--inferperf-backend", "simulate", "--tb=line", "-o", "xfail_strict=true",
        "--names", "a", "b", "-v", "test_x.py",
    )  # fmt: skip
    arities = option_arities(config)
    assert arities is not None and arities["--n-iter"] == OptionArity("n_iter", None)
    assert child_args(config) == (
        "--n-iter=7",
        "-p",
        "no:randomly",
        "-o",
        "xfail_strict=true",
        "--names",
        "a",
        "b",
        "-n",  # pytest-xdist is loaded: the child is one process
        "0",
    )
    assert child_args(config) is child_args(config)  # worked out once per session


def test_the_child_is_never_distributed_where_xdist_is_loaded(pytester):
    pytester.makeini("[pytest]\naddopts = -n 2\n")
    config = pytester.parseconfigure("-n", "1", "-p", "no:randomly")
    # the parent's -n is dropped, and a -n 0 on the command line beats addopts' -n 2
    assert child_args(config) == ("-p", "no:randomly", "-n", "0")


def test_without_xdist_the_child_gets_no_n_option_at_all(pytester):
    # pytest imports xdist's modules for its other entry point even so: the option,
    # not an imported module, says whether -n exists
    config = pytester.parseconfigure("-p", "no:xdist")
    assert not config.pluginmanager.hasplugin("xdist")
    assert child_args(config) == ("-p", "no:xdist")
