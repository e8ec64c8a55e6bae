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
    GivenOption,
    OptionArity,
    child_args,
    option_arities,
    project_options,
    repeated,
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
    project = frozenset({"--n-iter", "--model-dir", "--offset"})  # the conftest's
    assert repeated_args(line, ARITIES, project) == [
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
        ("plugins", True),
        ("override_ini", True),
        ("inifilename", True),
        ("pythonwarnings", True),
        ("importmode", True),
        ("confcutdir", True),
        ("log_level", True),
        ("keyword", False),
        ("numprocesses", False),
        ("xmlpath", False),
        ("verbose", False),
        ("inferperf_backend", False),
        ("usepdb", False),
        ("timeout", False),  # an installed plugin's: not the project's
        ("htmlpath", False),
    ],
)
def test_which_of_pytests_and_installed_plugins_options_a_child_repeats(dest, expected):
    option = GivenOption("--x", ("1",), OptionArity(dest, None))
    assert repeated(option, frozenset()) is expected
    assert repeated(option, frozenset({"--x"}))  # the project's own: always


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
    everything = frozenset(_OPTIONS)  # as if all were the project's: all repeated
    again = vars(parser.parse_intermixed_args(repeated_args(line, _arities(), everything)))
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


def test_the_projects_options_are_its_conftests_and_plugin_modules_not_installed_ones(
    pytester,
):
    pytester.makeconftest(
        """
        pytest_plugins = ["helpers.options"]

        def pytest_addoption(parser, pluginmanager):
            parser.getgroup("models").addoption("-M", "--model", default="m.onnx")
        """
    )
    pytester.mkpydir("helpers")
    pytester.path.joinpath("helpers", "options.py").write_text(
        "def pytest_addoption(parser):\n"
        "    parser.addoption('--batch', type=int, default=1)\n"
        "    parser.addini('batch_default', 'a batch size')\n"
    )
    sub = pytester.mkpydir("sub")
    sub.joinpath("conftest.py").write_text(
        "COUNT = []\n"
        "def pytest_addoption(parser):\n"
        "    COUNT.append(1)\n"
        "    if len(COUNT) > 1:\n"
        "        raise RuntimeError('only once')\n"
        "    parser.addoption('--once', action='store_true')\n"
    )
    config = pytester.parseconfigure(
        "--model", "a.onnx", "--batch=4", "--once", "--timeout=30", "-n", "2", "sub"
    )
    project = project_options(config)
    assert {"-M", "--model", "--batch"} <= project
    assert "--once" not in project  # its hook failed the second time: not repeated
    assert "--timeout" not in project and "-n" not in project  # installed plugins'
    assert child_args(config) == ("--model=a.onnx", "--batch=4", "-n", "0")


def test_a_run_that_simulates_nothing_never_runs_the_projects_hooks_again(pytester, monkeypatch):
    pytester.makeconftest(
        """
        import os

        def pytest_addoption(parser):
            with open(os.environ["CALLS_FILE"], "a") as calls:
                calls.write("x")
            parser.addoption("--rounds", type=int, default=10)
        """
    )
    pytester.makepyfile(
        test_x="""
        def test_a(pmu_profile, request):
            pmu_profile(sum, range(request.config.getoption("--rounds")))
        """
    )
    calls = pytester.path / "calls.txt"
    monkeypatch.setenv("CALLS_FILE", str(calls))
    result = pytester.runpytest_subprocess(
        "--inferperf", "--inferperf-backend", "none", "--rounds", "5", "-p", "no:randomly"
    )
    result.assert_outcomes(passed=1)
    assert calls.read_text() == "x"  # pytest's own call only: no child, no second run
