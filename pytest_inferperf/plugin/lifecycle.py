"""Plugin start-up and shut-down: hook specs, early option checks, configure and
unconfigure.

Owns: registering the session object. Must not: do a test's work.
"""

from __future__ import annotations

import functools
import sys
import warnings

import pytest

from .keys import EARLY_WARNINGS, MARKERS, SHORT_UPDATE, SHORT_UPDATE_TAKEN
from .measuring import register_measurers
from .options import Settings
from .session import InferperfPlugin, is_worker

# Loading this module is what every pytest run pays once the package is installed,
# with or without --inferperf: it imports pytest and the standard library only. The
# engine (numpy, ONNX Runtime, counters, judging) is imported inside the hooks that
# need it, and only when --inferperf asks for it or a test uses pmu_profile.


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """``pytest_inferperf_metrics`` / ``pytest_inferperf_rules`` in conftest files."""
    from ..diagnose import hooks

    hooks.register_specs(pluginmanager)


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(
    early_config: pytest.Config, parser: pytest.Parser, args: list[str]
):
    """Around loading the conftests: telemetry off first, ``--update-baselines`` after.

    Before any conftest imports ONNX Runtime, its telemetry threads are kept out of
    the counts. Once the conftests (and every installed plugin) have added their
    options, the short ``--update-baselines`` is added only if nobody else has it
    (snapshot tools define one); ``--inferperf-update-baselines`` always works.
    """
    options = early_config.known_args_namespace
    names = ("inferperf", "inferperf_update_baselines")
    enabled = (
        any(getattr(options, name, None) for name in names)
        or any(early_config.getini(name) for name in names)
        or SHORT_UPDATE in args
    )
    if enabled:
        from ..onnxrt.telemetry import keep_out_of_measurements

        warning = keep_out_of_measurements()
        if warning:
            early_config.stash.setdefault(EARLY_WARNINGS, []).append(warning)
    result = yield
    if option_taken(parser, SHORT_UPDATE):
        early_config.stash[SHORT_UPDATE_TAKEN] = True
    else:
        parser.getgroup("inferperf").addoption(
            SHORT_UPDATE,
            dest="inferperf_update_baselines",
            action="store_true",
            default=None,
            help="same as --inferperf-update-baselines",
        )
    return result


def option_taken(parser: pytest.Parser, name: str) -> bool:
    """Whether some plugin or conftest already defined the command-line option ``name``."""
    groups = [getattr(parser, "_anonymous", None), *getattr(parser, "_groups", ())]
    return any(
        name in option.names() for group in groups if group is not None for option in group.options
    )


def pytest_configure(config: pytest.Config) -> None:
    for name in MARKERS:
        config.addinivalue_line(
            "markers",
            f"{name}(**budgets): inferperf budgets (<metric>_min / <metric>_max, "
            "stage_ms_max={<region>: ms}), tolerance= "
            "for the baseline comparison, and runner overrides (warmup, repeat, timeout, "
            "threads, pin) for tests that use the pmu_profile fixture",
        )
    settings = Settings.from_config(config)
    plugin = InferperfPlugin(config, settings)
    early: list[str] = config.stash.get(EARLY_WARNINGS, [])
    plugin.warnings.extend(early)
    if settings.enabled and not is_worker(config) and settings.workers > 1:
        from ..pmu.cpu import physical_cores

        cores = physical_cores()
        if settings.workers > cores:
            message = (
                f"{settings.workers} xdist workers run perf tests on {cores} physical "
                "cores: shared caches and cores distort counts; use -n "
                f"{cores} or fewer"
            )
            plugin.warnings.append(message)
            warnings.warn(pytest.PytestWarning(f"inferperf: {message}"), stacklevel=1)
    config.pluginmanager.register(plugin, "inferperf-session")
    register_measurers(config)
    if settings.enabled:
        from ..diagnose import hooks

        try:  # the plugins inferperf validate sees too, with conftest files' own hooks
            hooks.load_plugins(config.pluginmanager)
        except hooks.PluginLoadError as exc:
            raise pytest.UsageError(str(exc)) from None
        from ..core import watchdog

        watchdog.set_reporter(functools.partial(_report_past_capture, config))


def _report_past_capture(config: pytest.Config, text: str) -> None:
    """A stuck call's report, on the terminal now: pytest's capture is paused to write it."""
    capman = config.pluginmanager.getplugin("capturemanager")
    terminal = config.pluginmanager.getplugin("terminalreporter")
    if capman is not None:
        capman.suspend_global_capture(in_=True)
    try:
        if terminal is not None:
            terminal.write_line("")
            terminal.write_line(text, red=True)
        else:
            sys.stderr.write(text + "\n")
    finally:
        if capman is not None:
            capman.resume_global_capture()


def pytest_unconfigure(config: pytest.Config) -> None:
    watchdog = sys.modules.get(f"{__package__}.watchdog")  # imported only when enabled
    if watchdog is not None:
        watchdog.set_reporter(None)
