"""Which installed plugins a simulation child starts without.

Real pytest sessions (pytester, in-process) with this environment's installed
plugins: pytest-html (which requires pytest-metadata), pytest-benchmark and
pytest-timeout are candidates (UNNEEDED_IN_CHILD); pytest-xdist and this plugin are
not. The end-to-end effect, a child that starts without them and still measures, is in
the slow tests of tests/test_simulate_shared.py.
"""

from __future__ import annotations

import itertools

import pytest

from pytest_inferperf.plugin.child_plugins import (
    UNNEEDED_IN_CHILD,
    _requires,
    child_line,
    unneeded_plugins,
)

pytest.importorskip("pytest_html")
pytest.importorskip("pytest_benchmark")
pytest.importorskip("pytest_timeout")

ALL = {"html", "html_fixtures", "metadata", "benchmark", "timeout"}


def _items(pytester: pytest.Pytester, *args: str) -> tuple[pytest.Config, list[pytest.Item]]:
    items, recorder = pytester.inline_genitems("-p", "no:randomly", *args)
    assert items, recorder.getfailedcollections()
    return items[0].config, items


def test_reporting_timing_and_timeout_plugins_stay_out_of_a_plain_tests_child(pytester):
    pytester.makepyfile(test_a="def test_a(): pass")
    config, items = _items(pytester)
    assert set(unneeded_plugins(config, items)) == ALL
    line = child_line(config, items)
    assert ("-p", "no:metadata") in itertools.pairwise(line)
    assert "no:xdist" not in line and "no:inferperf" not in line


def test_a_plugins_fixture_keeps_it_and_only_it(pytester):
    pytester.makepyfile(test_a="def test_a(benchmark): benchmark(len, 'x')")
    config, items = _items(pytester)
    assert set(unneeded_plugins(config, items)) == ALL - {"benchmark"}


def test_a_fixture_the_tests_fixture_requests_counts_too(pytester):
    pytester.makeconftest(
        "import pytest\n@pytest.fixture\ndef timed(benchmark):\n    return benchmark\n"
    )
    pytester.makepyfile(test_a="def test_a(timed): pass")
    config, items = _items(pytester)
    assert "benchmark" not in unneeded_plugins(config, items)


def test_a_plugins_marker_keeps_it(pytester):
    pytester.makepyfile(test_a="import pytest\n@pytest.mark.timeout(30)\ndef test_a(): pass\n")
    config, items = _items(pytester)
    assert "timeout" not in unneeded_plugins(config, items)
    assert UNNEEDED_IN_CHILD["pytest-timeout"] == ("timeout",)


def test_an_option_in_addopts_keeps_the_plugin_and_what_it_requires(pytester):
    pytester.makeini("[pytest]\naddopts = --self-contained-html\n")
    pytester.makepyfile(test_a="def test_a(): pass")
    config, items = _items(pytester)
    kept = ALL - set(unneeded_plugins(config, items))
    # pytest-html reads its option; it requires pytest-metadata, which stays too
    assert kept == {"html", "html_fixtures", "metadata"}


def test_an_option_in_pytest_addopts_keeps_the_plugin(pytester, monkeypatch):
    monkeypatch.setenv("PYTEST_ADDOPTS", "--benchmark-disable")
    pytester.makepyfile(test_a="def test_a(): pass")
    config, items = _items(pytester)
    assert "benchmark" not in unneeded_plugins(config, items)


@pytest.mark.parametrize("how", ["ini", "override"])
def test_an_ini_setting_of_the_plugin_keeps_it(pytester, how):
    if how == "ini":
        pytester.makeini("[pytest]\ntimeout = 30\n")
        args: tuple[str, ...] = ()
    else:
        args = ("-o", "timeout=30")
    pytester.makepyfile(test_a="def test_a(): pass")
    config, items = _items(pytester, *args)
    assert "timeout" not in unneeded_plugins(config, items)
    assert "html" in unneeded_plugins(config, items)


def test_every_test_of_a_shared_child_counts(pytester):
    pytester.makepyfile(test_a="def test_a(): pass\ndef test_b(benchmark): benchmark(len, 'x')\n")
    config, items = _items(pytester)
    assert "benchmark" in unneeded_plugins(config, items[:1])
    assert "benchmark" not in unneeded_plugins(config, items)


def test_nothing_is_blocked_where_an_item_does_not_say_which_fixtures_it_uses(pytester):
    pytester.makepyfile(test_a="def test_a(): pass")
    config, _ = _items(pytester)

    class Bare:  # an item of a pytest that keeps its fixtures elsewhere
        def iter_markers(self):
            return iter(())

    assert unneeded_plugins(config, [Bare()]) == ()  # type: ignore[list-item]


def test_requirements_of_extras_are_not_needs():
    class Dist:
        requires: tuple[str, ...] = (
            "jinja2>=3",
            "pytest-metadata>=2",
            "pytest-mock>=3.7; extra == 'test'",
            'selenium>=4.3; extra == "test"',
            "tomli; python_version < '3.11'",
        )

    assert _requires(Dist()) == {"jinja2", "pytest-metadata", "tomli"}
