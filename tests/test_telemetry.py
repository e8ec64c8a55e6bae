"""ONNX Runtime's telemetry kept out of measured regions."""

from __future__ import annotations

import os
import sys

import pytest

from pytest_inferperf.onnxrt.telemetry import ENV, keep_out_of_measurements

pytest_plugins = ["pytester"]


def test_switched_off_before_onnx_runtime_is_imported(monkeypatch):
    monkeypatch.delitem(sys.modules, "onnxruntime", raising=False)
    environ: dict[str, str] = {}
    assert keep_out_of_measurements(environ) is None
    assert environ == {ENV: "1"}


@pytest.mark.parametrize("value", ["0", "1", ""])
def test_the_users_choice_stands(monkeypatch, value):
    monkeypatch.setitem(sys.modules, "onnxruntime", object())
    environ = {ENV: value}
    assert keep_out_of_measurements(environ) is None
    assert environ == {ENV: value}


def test_too_late_says_how_to_fix_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", object())
    environ: dict[str, str] = {}
    warning = keep_out_of_measurements(environ)
    assert environ == {}
    assert warning is not None and f"set {ENV}=1 in the environment" in warning


CONFTEST = """
import os
import onnxruntime  # imported by a conftest, as an ONNX project would
SEEN = os.environ.get("ORT_DISABLE_TELEMETRY", "unset")
"""

TEST = """
import conftest

def test_seen():
    print(f"telemetry variable: {conftest.SEEN}")
"""


@pytest.mark.parametrize(
    ("args", "env", "seen"),
    [
        (("--inferperf",), None, "1"),
        ((), None, "unset"),  # a plain run changes nothing
        (("--inferperf",), "0", "0"),  # telemetry kept on by the user
    ],
)
def test_plugin_switches_it_off_before_conftests_import_onnx_runtime(
    pytester, monkeypatch, args, env, seen
):
    monkeypatch.delenv(ENV, raising=False)
    if env is not None:
        monkeypatch.setenv(ENV, env)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_a=TEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s", *args)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"*telemetry variable: {seen}"])
    result.stdout.no_fnmatch_line("*imported before pytest-inferperf*")


@pytest.mark.parametrize(("command", "switched_off"), [("analyse", True), ("metrics", False)])
def test_cli_commands_that_run_a_model_switch_it_off(monkeypatch, command, switched_off):
    from pytest_inferperf.cli import main as cli

    seen = {}

    def record(args):
        seen["value"] = os.environ.get(ENV)
        return 0

    monkeypatch.setenv(ENV, "restored afterwards")  # records the original state
    monkeypatch.delenv(ENV)
    monkeypatch.delitem(sys.modules, "onnxruntime", raising=False)  # as in a fresh process
    monkeypatch.setattr(cli, "_analyse_cmd", record)
    monkeypatch.setattr(cli, "_metrics", record)
    argv = ["analyse", "model.onnx"] if command == "analyse" else ["metrics"]
    assert cli.main(argv) == 0
    assert seen["value"] == ("1" if switched_off else None)
