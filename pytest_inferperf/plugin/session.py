"""The per-session plugin object: the hooks pytest calls for one session, wired to the
pieces that do the work.

Owns: what happens between pytest's hooks for one session: collection's marker check,
the call hook that judges each profile (:class:`.judging.ProfileJudge`), confirms a
timing regression (:mod:`.confirming`) and adds flamegraphs (:mod:`.flamegraph_pass`),
the worker -> controller records (:class:`report.records.ProfileRecord` on
``report.inferperf``), and at the end the baseline write pass (:mod:`.baseline_writes`),
the run's outputs (:mod:`.run_outputs`), the header and the summary. Must not: measure
(fixtures), read the machine (``pmu.cpu``), write baseline or report files itself
(``judge.baseline_store``, ``report.files``), capture flamegraphs (``flame.capture_for``), diagnose
or render text (the engine and ``report``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pytest

from .context import add_property, is_worker, output_width, property_prefix, relative
from .html import html_extras, html_table_header, html_table_row
from .keys import (
    MEASURERS,
    MISSING_BASELINES,
    PROFILES,
    SHORT_UPDATE,
    SHORT_UPDATE_TAKEN,
    VERDICTS,
)
from .marker import spec_for, uses_inferperf
from .options import Settings

# Loading this module is what every pytest run pays once the package is installed,
# with or without --inferperf: it imports pytest and the standard library only. The
# engine (numpy, ONNX Runtime, counters, judging) is imported inside the hooks that
# need it, and only when --inferperf asks for it or a test uses pmu_profile. So are the
# pieces the hooks delegate to: a run without --inferperf compiles and loads none of them.
if TYPE_CHECKING:
    from ..report.records import ProfileRecord
    from .judging import ProfileJudge

__all__ = ["InferperfPlugin", "is_worker", "output_width", "plugin_of"]


@dataclass(eq=False)  # hashed by identity: pluggy keeps plugins in sets (get_plugins)
class InferperfPlugin:
    """Per-session state; registered as ``inferperf-session``. Its methods are pytest's
    hooks; the work behind each is delegated to the modules named in this module's
    docstring."""

    config: pytest.Config
    settings: Settings
    records: list[ProfileRecord] = field(default_factory=list)  # every judged profile
    written: list[str] = field(default_factory=list)
    write_errors: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)  # run-level files written
    warnings: list[str] = field(default_factory=list)

    @functools.cached_property
    def judge(self) -> ProfileJudge:
        """Judges this session's profiles (and remembers which test claimed which file)."""
        from .judging import ProfileJudge

        return ProfileJudge(self.config, self.settings)

    def record_dicts(self) -> list[dict[str, Any]]:
        """The records as the renderers and files take them (plain JSON)."""
        return [record.to_json() for record in self.records]

    # -- collection ------------------------------------------------------
    @pytest.hookimpl(wrapper=True)
    def pytest_pycollect_makeitem(self, collector: pytest.Collector, name: str, obj: object):
        result = yield
        items = result if isinstance(result, list) else [result] if result is not None else []
        for item in items:
            if isinstance(item, pytest.Function) and uses_inferperf(item):
                from ..judge.budgets import MarkerError

                try:
                    spec_for(item)
                except MarkerError as exc:
                    raise collector.CollectError(f"{item.nodeid}: {exc}") from None
        return result

    # -- progress of long profiles ---------------------------------------------
    def live_line(self, item: pytest.Item, variant: str) -> Any:
        """The live progress line for one profile of ``item`` (progress.LiveLine), or quiet."""
        from .progress_line import live_line

        return live_line(self.config, item, variant)

    # -- running ---------------------------------------------------------
    def _judges_here(self) -> bool:
        """False in a simulation child: its parent judges what it measured."""
        provider = self.config.pluginmanager.get_plugin(MEASURERS)
        return bool(getattr(provider, "judges", True))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item):
        result = yield
        profiles = item.stash.get(PROFILES, [])
        if not profiles or not self.settings.enabled or not self._judges_here():
            return result
        from .confirming import confirm
        from .flamegraph_pass import attach_flamegraphs, wants_flamegraphs

        verdicts, missing = [], item.stash.setdefault(MISSING_BASELINES, {})
        for name, profile, call in profiles:
            verdict, baseline = self.judge.judge(item, name, profile)
            if baseline is None and self.judge.requires_baseline(verdict):
                missing[verdict.key] = self.judge.missing_baseline(verdict)
            verdict = confirm(self.judge, item, name, verdict, baseline)
            if wants_flamegraphs(self.settings, verdict):
                verdict = attach_flamegraphs(
                    self.config, self.settings, verdict, baseline, call, item
                )
            verdicts.append(verdict)
        item.stash[VERDICTS] = verdicts
        from ..core.partial import partial_label

        for verdict in verdicts:
            prefix = f"inferperf.{property_prefix(verdict, item)}"
            for metric, value in verdict.metrics.items():
                add_property(item, f"{prefix}{metric}", value)
            partial = partial_label(verdict.profile.to_dict())
            if partial:
                add_property(item, f"{prefix}partial", partial)
        from ..report.terminal import clean, fit

        failed = [v for v in verdicts if v.failed]
        if failed or missing:
            from ..report.verdict import failure_text

            text = "\n\n".join([*(failure_text(v) for v in failed), *missing.values()])
            pytest.fail(
                fit(clean(text, keep_newlines=True), output_width(self.config)),
                pytrace=False,
            )
        unchecked = [b.describe() for v in verdicts for b in v.unchecked]
        if unchecked and self.settings.require_pmu:
            pytest.fail(
                clean(
                    "inferperf: budgets could not be checked on this machine "
                    f"(--inferperf-require-pmu): {'; '.join(unchecked)}"
                ),
                pytrace=False,
            )
        if all(v.nothing_checked for v in verdicts):
            pytest.skip(
                clean(f"inferperf: budgets not checked on this machine: {'; '.join(unchecked)}")
            )
        return result

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        report = yield
        if report.when == "call" and VERDICTS in item.stash:
            verdicts = item.stash[VERDICTS]
            from ..report.records import ProfileRecord
            from ..report.verdict import failure_text

            missing = item.stash.get(MISSING_BASELINES, {})
            records = [
                ProfileRecord.of_verdict(v, failure_text(v) if v.failed else None) for v in verdicts
            ]
            # a profile without the baseline it was required to have failed on its own:
            # `inferperf accept` takes what it measured as that baseline
            records = [
                replace(r, failed=True, failure=missing[r.key], status="FAILED (no baseline)")
                if r.key in missing
                else r
                for r in records
            ]
            # plain dicts: xdist serialises reports as JSON, pytest-html and junit read them
            report.inferperf = [r.to_json() for r in records]
            html_extras(item, report, verdicts)
        return report

    # -- pytest-html's table, when that plugin runs --------------------------
    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_header(self, cells: list[str]) -> None:
        if self.settings.enabled:
            html_table_header(cells)

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_row(self, report: pytest.TestReport, cells: list[str]) -> None:
        if self.settings.enabled:
            html_table_row(report, cells)

    # -- controller ------------------------------------------------------
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        entries = getattr(report, "inferperf", None)
        if report.when != "call" or not entries:
            return
        from ..report.records import ProfileRecord, RecordFormatError

        for entry in entries:
            try:
                record = ProfileRecord.from_json(entry)
            except RecordFormatError as exc:  # another plugin's report.inferperf, or a bug
                self.warnings.append(f"{report.nodeid}: result not read ({exc})")
                continue
            self.records.append(record.of_test(report.nodeid, report.outcome))

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if is_worker(self.config) or not self.records:
            return
        from ..judge.baseline_store import sweep_interrupted_writes
        from . import baseline_writes
        from .run_outputs import RunOutputs

        removed = sweep_interrupted_writes(self.settings.baselines)
        if removed:
            self.outputs.append(
                f"removed {len(removed)} temp file(s) an interrupted baseline write had left"
            )
        # Baselines first: no report output may decide whether a passing run is kept.
        if self.settings.update:
            try:
                self.records = baseline_writes.over_processes(
                    self.config, self.settings, self.records, self.warnings
                )
                baseline_writes.write_baselines(
                    self.config,
                    self.settings,
                    self.records,
                    self.written,
                    self.write_errors,
                    self.warnings,
                )
            except KeyboardInterrupt:
                baseline_writes.say_written_on_interrupt(
                    self.config, self.written, self.write_errors
                )
                raise
        outputs = RunOutputs(self.config, self.settings, self.records, self.written, self.outputs)
        outputs.write_all(session)
        self.write_errors.extend(outputs.errors)
        self.warnings.extend(outputs.warnings)
        if self.write_errors and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_report_header(self, config: pytest.Config) -> list[str] | None:
        if not self.settings.enabled:
            return None
        from ..measure.machine import this_cpu

        cpu = this_cpu()
        lines = [
            f"inferperf: backend {self.settings.backend}, machine class "
            f"{cpu.machine_class}, baselines {relative(self.settings.baselines, config)}"
        ]
        if config.stash.get(SHORT_UPDATE_TAKEN, False):
            lines.append(
                f"inferperf: {SHORT_UPDATE} belongs to another plugin or conftest here; "
                "use --inferperf-update-baselines to write inferperf baselines"
            )
        lines.extend(f"inferperf: WARNING {w}" for w in self.warnings)
        return lines

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.settings.enabled:
            return
        from ..report.terminal import render_summary

        text = render_summary(
            self.record_dicts(),
            self.written,
            self.write_errors,
            self.warnings,
            update=self.settings.update,
            outputs=self.outputs,
            width=output_width(self.config),
        )
        if text:
            terminalreporter.section("inferperf")
            terminalreporter.write_line(text)


def plugin_of(config: pytest.Config) -> InferperfPlugin:
    plugin = config.pluginmanager.get_plugin("inferperf-session")
    assert isinstance(plugin, InferperfPlugin)
    return plugin
