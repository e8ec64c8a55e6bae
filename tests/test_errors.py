"""Every error pytest-inferperf raises on purpose has one base: InferperfError."""

from __future__ import annotations

import importlib

import pytest

from pytest_inferperf.core.errors import InferperfError, UsageError

# (module, class, the standard base it kept so older ``except`` clauses still catch it)
ERRORS = [
    ("measure.target", "UsageError", ValueError),
    ("judge.baseline_store", "BaselineError", Exception),
    ("judge.budgets", "MarkerError", ValueError),
    ("judge.comparison", "IncomparableError", ValueError),
    ("diagnose.hooks", "HookResultError", ValueError),
    ("onnxrt.input_memory", "InputsTooLarge", ValueError),
    ("onnxrt.sessions", "ModelError", ValueError),
    ("onnxrt.sessions", "InputSpecError", ValueError),
    ("ingest.perf_stat", "PerfStatError", ValueError),
    ("core.profile", "ProfileFormatError", ValueError),
    ("core.profile_check", "InvalidProfile", ValueError),
    ("measure.runner", "RunnerConfigError", ValueError),
    ("measure.runner", "MeasurementTimeout", TimeoutError),
    ("core.safe_read", "UnreadableFile", OSError),
    ("cli.validate", "ModelMismatch", ValueError),
    ("pmu.base", "CountersError", RuntimeError),
    ("measure.simulate.callgrind", "CallgrindFormatError", ValueError),
    ("pmu.events", "UnknownEventError", ValueError),
    ("pmu.perf_event", "PerfOpenError", OSError),
    ("measure.simulate.backend", "SimulateUnavailable", RuntimeError),
    ("measure.simulate.backend", "SimulateError", RuntimeError),
]


@pytest.mark.parametrize(("module", "name", "std"), ERRORS, ids=[e[1] for e in ERRORS])
def test_every_error_has_the_one_base_and_keeps_its_standard_one(module, name, std):
    cls = getattr(importlib.import_module(f"pytest_inferperf.{module}"), name)
    assert issubclass(cls, InferperfError)
    assert issubclass(cls, std)
    args = (2, "the cause") if name == "PerfOpenError" else ("the cause",)
    with pytest.raises(InferperfError, match="the cause"):
        raise cls(*args)


def test_perf_open_error_keeps_its_errno_under_the_new_base():
    from pytest_inferperf.pmu.perf_event import PerfOpenError

    error = PerfOpenError(2, "no PMU exposed")
    assert (error.errno, error.reason) == (2, "no PMU exposed")


def test_usage_error_lives_in_errors_and_analyse_only_uses_it():
    from pytest_inferperf.measure import target as analyse

    assert analyse.UsageError is UsageError
    assert UsageError.__module__ == "pytest_inferperf.core.errors"


def test_no_error_class_of_the_package_lacks_the_base():
    """A new error class without the base fails here (control flow classes excepted)."""
    import pkgutil

    import pytest_inferperf

    missing = []
    for info in pkgutil.walk_packages(pytest_inferperf.__path__, "pytest_inferperf."):
        if info.name.startswith("pytest_inferperf.plugin") or info.name.endswith("__main__"):
            continue  # pytest wiring: its failures are pytest's own outcomes
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional dependency missing here
            continue
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, Exception)
                and value.__module__ == info.name
                and not value.__name__.startswith("_")
                and not issubclass(value, InferperfError)
            ):
                missing.append(f"{info.name}.{value.__name__}")
    assert missing == []


# -- engine messages name no command-line flag; the CLI adds its own spelling ------------
def test_a_usage_error_names_its_setting_plainly_and_the_cli_spells_it():
    from pytest_inferperf.cli.main import SPELLING, _worded

    error = UsageError("write NAME=N", setting="shape", value="'x'", hint="Or see {out}.")
    assert str(error) == "shape 'x': write NAME=N Or see the output folder setting."
    assert _worded(error) == "--shape 'x': write NAME=N Or see --out."
    assert error.text({"shape": "inferperf_shape"}).startswith("inferperf_shape 'x': ")
    assert set(SPELLING) == set(__import__("pytest_inferperf.core.errors").core.errors.SETTINGS)


def test_the_shape_errors_of_the_engine_name_no_flag():
    from pytest_inferperf.cli.main import _worded
    from pytest_inferperf.measure.target import parse_shape_arg

    with pytest.raises(UsageError) as caught:
        parse_shape_arg("sequence")
    assert "--" not in str(caught.value)
    assert str(caught.value).startswith("shape 'sequence': write NAME=N")
    assert _worded(caught.value).startswith("--shape 'sequence': write NAME=N")


def test_validate_names_the_tolerance_setting_not_the_flag(tmp_path):
    from pytest_inferperf.cli.main import _worded
    from pytest_inferperf.cli.validate import validate_target

    with pytest.raises(UsageError) as caught:
        validate_target("m.onnx", tmp_path / "b.json", tolerance=-1.0)
    assert str(caught.value) == (
        "tolerance -1.0: a relative tolerance must be a finite number >= 0 (0.25 is 25%)."
    )
    assert _worded(caught.value).startswith("--tolerance -1.0: ")


def test_an_unwritable_report_folder_is_named_and_the_cli_adds_its_option(tmp_path):
    from test_assessment import make

    from pytest_inferperf.cli.main import _worded
    from pytest_inferperf.diagnose.assessment import assess_profile
    from pytest_inferperf.report.files import write_analysis

    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    profile = make(2.0)
    with pytest.raises(UsageError) as caught:
        write_analysis(assess_profile(profile), blocker / "out", title="t")
    assert "--out" not in str(caught.value)
    assert str(caught.value).endswith("Choose another folder with the output folder setting.")
    assert _worded(caught.value).endswith("Choose another folder with --out.")


def test_an_unreadable_profile_names_no_flag_and_each_front_end_adds_its_fix(tmp_path):
    from pytest_inferperf.core.profile import FIX, Profile, ProfileFormatError
    from pytest_inferperf.judge.baseline_store import BaselineError, load_baseline
    from pytest_inferperf.measure.target import load_profile

    path = tmp_path / "b.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(ProfileFormatError) as caught:
        Profile.load(path)
    assert str(caught.value) == f"{caught.value.cause} {FIX}"
    assert "--" not in str(caught.value)
    with pytest.raises(BaselineError, match=r"pytest --inferperf --update-baselines"):
        load_baseline(path)  # the plugin's baseline store: its own way to record it again
    with pytest.raises(UsageError) as cli:
        load_profile(path, "baseline")
    assert "Restore it from version control, or delete it" not in str(cli.value)
    assert "`inferperf analyse MODEL --out DIR`" in str(cli.value)


def test_a_timeout_names_the_timeout_as_each_front_end_spells_it():
    import pickle

    from pytest_inferperf.cli.main import _worded
    from pytest_inferperf.measure.runner import MeasurementTimeout

    error = MeasurementTimeout("w: no measured repeat.", hint="Raise {timeout}, or lower it.")
    assert isinstance(error, TimeoutError)
    assert str(error) == (
        "w: no measured repeat. Raise the timeout (marker keyword `timeout=` or the "
        "runner's `timeout`), or lower it."
    )
    assert _worded(error) == "w: no measured repeat. Raise the timeout (--timeout), or lower it."
    back = pickle.loads(pickle.dumps(error))  # crosses processes (xdist, the simulate child)
    assert str(back) == str(error) and _worded(back) == _worded(error)


def test_an_error_without_settings_reads_the_same_everywhere():
    from pytest_inferperf.cli.main import _worded
    from pytest_inferperf.judge.budgets import MarkerError

    error = MarkerError("@pytest.mark.perf: unknown keyword 'x'.")
    assert error.text({"shape": "--shape"}) == str(error) == _worded(error)
