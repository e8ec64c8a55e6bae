"""The per-session plugin object: collection, the call hook that judges each
profile, the worker -> controller records (:class:`report.records.ProfileRecord` on
``report.inferperf``), the end-of-run outputs and the baseline write pass.

Owns: what happens between pytest's hooks for one session, and wording the outcomes
of the store's write pass (:func:`judge.baseline_store.write_pass`) for the terminal. Must not:
measure (fixtures), read the machine (``pmu.cpu``), write baseline or report files
itself (``baseline``, ``report.files``), capture flamegraphs (``flame.capture_for``),
diagnose or render text (the engine and ``report``).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..core.default_paths import REPORT_DIR
from .html import html_extras, html_table_header, html_table_row
from .keys import (
    FLAME_PROBLEM,
    MEASURERS,
    MISSING_BASELINES,
    PROFILES,
    REMEASURE,
    SHORT_UPDATE,
    SHORT_UPDATE_TAKEN,
    VERDICTS,
)
from .marker import spec_for, uses_inferperf
from .options import Settings

# Loading this module is what every pytest run pays once the package is installed,
# with or without --inferperf: it imports pytest and the standard library only. The
# engine (numpy, ONNX Runtime, counters, judging) is imported inside the hooks that
# need it, and only when --inferperf asks for it or a test uses pmu_profile.
if TYPE_CHECKING:
    from ..core.profile import Profile
    from ..report.old_names import Verdict
    from ..report.records import ProfileRecord


@dataclass(eq=False)  # hashed by identity: pluggy keeps plugins in sets (get_plugins)
class InferperfPlugin:
    """Per-session state; registered as ``inferperf-session``."""

    config: pytest.Config
    settings: Settings
    records: list[ProfileRecord] = field(default_factory=list)  # every judged profile
    written: list[str] = field(default_factory=list)
    write_errors: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)  # run-level files written
    warnings: list[str] = field(default_factory=list)
    claimed: dict[Path, str] = field(default_factory=dict)  # baseline file -> its test's key

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
        from ..measure import progress

        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        writer = getattr(reporter, "_tw", None)
        out = getattr(writer, "_file", None)
        if (
            writer is None
            or out is None
            or self.config.option.verbose < 0
            or is_worker(self.config)
        ):
            return progress.QUIET
        try:
            interval = float(self.config.getini("inferperf_progress_interval"))
        except ValueError:
            raise pytest.UsageError(
                "inferperf_progress_interval = "
                f"{self.config.getini('inferperf_progress_interval')!r} in the ini file: "
                "give the seconds between progress lines as a number, e.g. 60"
            ) from None
        capture = self.config.pluginmanager.get_plugin("capturemanager")
        label = item.nodeid + (f" [{variant}]" if variant else "")
        return progress.LiveLine(
            label,
            out,
            tty=bool(getattr(reporter, "isatty", False) and writer.hasmarkup),
            width=writer.fullwidth,
            column=lambda: writer.width_of_current_line,
            interval=interval,
            uncaptured=(
                capture.global_and_fixture_disabled
                if capture is not None
                else contextlib.nullcontext
            ),
        )

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
        verdicts, missing = [], item.stash.setdefault(MISSING_BASELINES, {})
        for name, profile, call in profiles:
            verdict, baseline = self._judge(item, name, profile)
            if baseline is None and self._requires_baseline(verdict):
                missing[verdict.key] = self._missing_baseline(verdict)
            verdict = self._confirm(item, name, verdict, call, baseline)
            if self._wants_flamegraphs(verdict):
                verdict = self._attach_flamegraphs(verdict, baseline, call, item)
            verdicts.append(verdict)
        item.stash[VERDICTS] = verdicts
        from ..core.partial import partial_label

        for verdict in verdicts:
            for metric, value in verdict.metrics.items():
                _add_property(item, f"inferperf.{_suffix(verdict, item)}{metric}", value)
            partial = partial_label(verdict.profile.to_dict())
            if partial:
                _add_property(item, f"inferperf.{_suffix(verdict, item)}partial", partial)
        from ..report.terminal import clean, fit

        failed = [v for v in verdicts if v.failed]
        if failed or missing:
            from ..report.old_names import failure_text

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

    def _requires_baseline(self, verdict: Verdict) -> bool:
        """``--inferperf-require-baseline``: whether this profile, which has no baseline
        file for its machine class and backend, fails for it (never while recording)."""
        return (
            self.settings.require_baseline
            and not self.settings.update
            and verdict.baseline_error is None
        )

    def _missing_baseline(self, verdict: Verdict) -> str:
        """The failure paragraph of a profile without the baseline it was required to have."""
        from ..judge.baseline_store import baseline_path
        from ..report.verdict import missing_baseline_text

        profile = verdict.profile
        path = baseline_path(
            self.settings.baselines, profile.machine_class, profile.backend, verdict.key
        )
        return missing_baseline_text(
            verdict.key, profile.machine_class, profile.backend, _relative(path, self.config)
        )

    def _confirm(
        self,
        item: pytest.Item,
        name: str,
        verdict: Verdict,
        call: Callable[[], Any],
        baseline: Profile | None = None,
    ) -> Verdict:
        """A timing regression that alone would fail the test, measured again first: in
        fresh processes (``--inferperf-processes``), else in this one after a pause."""
        remeasure = item.stash.get(REMEASURE, {}).get(name)
        if remeasure is None or not verdict.needs_confirmation:
            return verdict
        failed = None
        # simulated counts repeat to 0.1% whatever the process: its timings are measured
        # again here, never by starting valgrind in fresh processes
        native = "simulate" not in (verdict.profile.backend, self.settings.backend)
        if self.settings.processes > 0 and baseline is not None and native:
            from ..diagnose.assessment import with_process_confirmation
            from .fresh_processes import measure_in_fresh_processes

            processes, failed = measure_in_fresh_processes(
                self.config,
                [item.nodeid],
                verdict.profile.backend,
                self.settings.processes,
                timeout=_child_timeout(verdict.profile),
            )
            measured = [p.get(item.nodeid, {}).get(name) for p in processes]
            fresh = [
                self._judge(item, name, p.with_(model=verdict.profile.model))[0]
                for p in measured
                if p is not None
            ]
            if len(fresh) >= 2:  # a spread needs two; fewer: measured again here instead
                return with_process_confirmation(verdict, fresh, baseline, failed=failed)
        import time

        from ..diagnose.assessment import CONFIRM_PAUSE_S, with_confirmation

        time.sleep(CONFIRM_PAUSE_S)
        try:
            profile = remeasure()  # the same measure() call again, operator pass included
        except TimeoutError as exc:  # the first measurement stands, and says why
            return replace(
                verdict,
                confirmation={
                    "held": True,
                    "pause_s": CONFIRM_PAUSE_S,
                    "text": f"not measured again ({exc}): the first measurement stands",
                },
            )
        again, _ = self._judge(item, name, profile.with_(model=verdict.profile.model))
        confirmed = with_confirmation(verdict, again, pause_s=CONFIRM_PAUSE_S)
        if failed and confirmed.confirmation is not None:
            text = f"{confirmed.confirmation['text']} (not in fresh processes: {failed})"
            from ..diagnose.assessment import replace_confirmation

            return replace_confirmation(confirmed, text)
        return confirmed

    def _wants_flamegraphs(self, verdict: Verdict) -> bool:
        mode = self.settings.flamegraphs
        if mode == "none":
            return False
        # A new baseline is sampled only under "all": a sampling pass per test would make
        # recording several times slower than a run (issue 38). Its operator table, which
        # the primary differential view needs, comes from the operator pass regardless.
        return mode == "all" or verdict.failed

    def _attach_flamegraphs(
        self, verdict: Verdict, baseline: Profile | None, call: Callable[[], Any], item: pytest.Item
    ) -> Verdict:
        from dataclasses import replace

        from ..core.output_errors import describe, make_folder
        from ..core.watchdog import pass_timeout
        from ..measure.flame import capture_for

        out_dir = self.settings.report_dir or Path(self.config.rootpath) / REPORT_DIR
        folder = out_dir / "flamegraphs"
        if verdict.profile.partial:  # past its timeout already: no sampling pass
            return replace(
                verdict,
                artifact_notes={
                    "flamegraphs": "not sampled: the measured run stopped at its timeout"
                },
            )
        problem = make_folder(folder)
        if problem is not None:  # output never decides a test: say so once, judge as before
            return replace(verdict, artifact_notes={FLAME_PROBLEM: problem})
        try:
            graphs = capture_for(
                call,
                name=verdict.key,
                out_dir=folder,
                relative_to=self.config.rootpath,
                profile=verdict.profile,
                find_operators=True,
                baseline=baseline,
                timeout=pass_timeout(verdict.profile.settings),
            )
        except Exception as exc:  # a disk full mid-write, a sampler's bug: never the test's
            return replace(verdict, artifact_notes={FLAME_PROBLEM: describe(exc, folder)})
        notes = dict(graphs.notes)
        if "diff" in notes and baseline is not None and not baseline.stacks:
            notes["diff"] = "no stacks stored with the baseline (re-run --update-baselines)"
        for kind, path in graphs.artifacts.items():
            _add_property(item, f"inferperf.flamegraph.{kind}", path)
        profile = verdict.profile
        if graphs.stacks:
            profile = profile.with_(stacks=graphs.stacks)
        return replace(verdict, profile=profile, artifacts=graphs.artifacts, artifact_notes=notes)

    def _judge(
        self, item: pytest.Item, name: str, profile: Profile
    ) -> tuple[Verdict, Profile | None]:
        from ..diagnose.assessment import assess
        from ..judge.baseline_store import BaselineError, baseline_path, class_folder, load_baseline

        base = baseline_key(item)
        key = base if not name else f"{base}@{name}"
        spec = spec_for(item)
        path = baseline_path(self.settings.baselines, profile.machine_class, profile.backend, key)
        other = self.claimed.setdefault(path, key)
        if other != key:  # two tests, one file: judging either against the other is wrong
            pytest.fail(
                f"inferperf: {key} and {other} map to the same baseline file "
                f"{_relative(path, self.config)}; neither is compared nor written. "
                "Rename one of the tests (or give the pmu_profile calls distinct "
                "name=).",
                pytrace=False,
            )
        baseline, error = None, None
        try:
            baseline = load_baseline(path)
            note = (
                f"baseline {_relative(path, self.config)}"
                if baseline is not None
                else f"no baseline for {class_folder(profile.machine_class, profile.backend)}"
            )
        except BaselineError as exc:
            note, error = "baseline unreadable", str(exc)
        if self.settings.update:
            error = None  # the unreadable baseline is being replaced
        extra_metrics, extra_findings = self._hook_results(profile)
        return assess(
            key,
            profile,
            spec,
            baseline=baseline,
            baseline_note=note,
            baseline_error=error,
            compare_fails=not self.settings.update,
            stale_fails=self.settings.fail_stale,
            extra_metrics=extra_metrics,
            extra_findings=extra_findings,
            verbose=self.settings.explain,
            strict=self.settings.strict,
        ), baseline

    def _hook_results(self, profile: Profile) -> tuple[dict[str, float], list]:
        """Metrics and findings added by ``pytest_inferperf_*`` hooks (conftest files,
        installed pytest plugins and the inferperf plugin registry)."""
        from ..diagnose.hooks import hook_results

        return hook_results(self.config.pluginmanager, profile)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        report = yield
        if report.when == "call" and VERDICTS in item.stash:
            verdicts = item.stash[VERDICTS]
            from ..report.old_names import failure_text
            from ..report.records import ProfileRecord

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

        removed = sweep_interrupted_writes(self.settings.baselines)
        if removed:
            self.outputs.append(
                f"removed {len(removed)} temp file(s) an interrupted baseline write had left"
            )
        # Baselines first: no report output may decide whether a passing run is kept.
        if self.settings.update:
            try:
                self._baselines_over_processes()
                self._update_baselines()
            except KeyboardInterrupt:
                self._say_written_on_interrupt()
                raise
        self._write_outputs(session)
        if self.write_errors and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _baselines_over_processes(self) -> None:
        """The new baselines' timings over ``--inferperf-baseline-processes`` processes:
        this one's and those of fresh processes, each running every test to be written
        (one start-up per process, not per test); where they fail, this one's alone."""
        count = self.settings.baseline_processes - 1
        if self.settings.backend == "simulate":
            return  # simulated counts repeat to 0.1% whatever the process
        wanted = [
            r
            for r in self.records
            if r.ran_clean and r.backend != "simulate" and not r.profile.get("partial")
        ]
        if count < 1 or not wanted:
            return
        from ..core.profile import Profile
        from .fresh_processes import (
            BASELINE_PROCESS_REPEATS,
            measure_in_fresh_processes,
            timing_values,
        )

        nodeids = list(dict.fromkeys(r.nodeid for r in wanted))
        by_backend = {r.backend for r in wanted}
        processes: list[dict[str, dict[str, Profile]]] = []
        failed = None
        for backend in sorted(by_backend):
            got, failed = measure_in_fresh_processes(
                self.config, nodeids, backend, count, repeats=BASELINE_PROCESS_REPEATS
            )
            processes += got
        if failed:
            self.warnings.append(
                f"the new baselines' timings are from fewer processes than {count + 1}: {failed}"
            )
        updated = {}
        for record in wanted:
            # the key is the test's path and name, then "@<variant>" for a named call
            name = record.nodeid.partition("::")[2]
            variant = record.key.partition("::")[2][len(name) + 1 :]
            others = [
                timing_values(p[record.nodeid][variant])
                for p in processes
                if variant in p.get(record.nodeid, {})
            ]
            if not others:
                continue
            mine = timing_values(Profile.from_dict(record.profile))
            values = {
                metric: [value, *(o[metric] for o in others if o.get(metric, 0) > 0)]
                for metric, value in mine.items()
            }
            updated[id(record)] = {**record.profile, "processes": values}
        if updated:
            self.records = [
                replace(r, profile=updated[id(r)]) if id(r) in updated else r for r in self.records
            ]

    def _say_written_on_interrupt(self) -> None:
        """Ctrl-C in the write pass: what was written, before the interrupt goes on."""
        from ..report.terminal import clean, written_lines

        terminal = self.config.pluginmanager.getplugin("terminalreporter")
        lines = [
            *(line for entry in self.written for line in written_lines(entry)),
            *(clean(f"ERROR {e}") for e in self.write_errors),
            clean(
                f"interrupted: {len(self.written)} baseline(s) written before the interrupt; "
                "every other baseline is as it was (each write is atomic)"
            ),
        ]
        for line in lines:
            if terminal is not None:
                terminal.write_line(line)
            else:
                sys.stderr.write(line + "\n")

    def _write_outputs(self, session: pytest.Session) -> None:
        """Every report the run asked for; each problem one line, never an exception.

        A problem with an output the user named (``--inferperf-report``, ``--inferperf-json``,
        ``--inferperf-html``, ``--inferperf-flamegraphs``) is an error that fails the run;
        with one nobody named (the default flamegraph folder, the CI job summary) a warning.
        """
        from ..core.output_errors import describe

        settings = self.settings
        outputs: list[tuple[str, Path | None, Callable[[], None], bool]] = []
        if settings.report_dir is not None:
            outputs.append(("--inferperf-report", settings.report_dir, self._write_reports, True))
        if settings.run_json is not None:
            outputs.append(
                (
                    "--inferperf-json",
                    settings.run_json,
                    functools.partial(self._write_run_json, session),
                    True,
                )
            )
        if settings.run_html is not None:
            outputs.append(
                (
                    "--inferperf-html",
                    settings.run_html,
                    functools.partial(self._write_run_html, settings.run_html),
                    True,
                )
            )
        outputs.append(("GITHUB_STEP_SUMMARY", None, self._write_step_summary, False))
        for option, path, write, asked in outputs:
            try:
                write()
            except Exception as exc:  # a renderer's bug must not lose the run either
                shown = f"{option} {_shown_path(path, self.config)}" if path else option
                (self.write_errors if asked else self.warnings).append(
                    f"{shown}: {describe(exc, path)}"
                )
        problems = dict.fromkeys(
            note for r in self.records if (note := r.artifact_notes.get(FLAME_PROBLEM))
        )
        for problem in problems:
            (self.write_errors if settings.flamegraphs_asked else self.warnings).append(
                f"{FLAME_PROBLEM}: {problem}"
            )

    def _write_run_json(self, session: pytest.Session) -> None:
        """The run-level JSON (``--inferperf-json``)."""
        from ..report.files import write_text_atomic
        from ..report.run import commit_of, run_document

        document = run_document(
            self.record_dicts(),
            commit=commit_of(self.config.rootpath),
            written=self.written,
            exit_status=int(session.exitstatus),
        )
        path = self.settings.run_json
        assert path is not None
        write_text_atomic(path, json.dumps(document, indent=1, allow_nan=False) + "\n")
        self.outputs.append(f"wrote {_relative(path, self.config)}")

    def _write_step_summary(self) -> None:
        """The GitHub job summary, where ``$GITHUB_STEP_SUMMARY`` names one."""
        from ..report.markdown import append_step_summary
        from ..report.run import run_markdown

        append_step_summary(run_markdown(self.record_dicts(), written=self.written))

    def _write_run_html(self, path: Path) -> None:
        """The run as one page; flamegraphs embedded and linked relative to the page."""
        from ..report.files import write_text_atomic
        from ..report.html import render_run_html

        records, svgs = [], {}
        for record in self.record_dicts():
            artifacts = {}
            for kind, rel in record.get("artifacts", {}).items():
                target = Path(self.config.rootpath, rel)
                link = os.path.relpath(target, path.parent)
                artifacts[kind] = link
                with contextlib.suppress(OSError, UnicodeDecodeError):  # else linked only
                    svgs[link] = target.read_text(encoding="utf-8")
            records.append({**record, "artifacts": artifacts})
        page = render_run_html(records, title="pytest --inferperf", svgs=svgs)
        write_text_atomic(path, page)
        self.outputs.append(f"wrote {_relative(path, self.config)}")

    def _write_reports(self) -> None:
        from ..report.files import write_records

        assert self.settings.report_dir is not None
        write_records(self.settings.report_dir, self.record_dicts())

    def _update_baselines(self) -> None:
        """The baseline write pass (the store's), each outcome told as it happens."""
        from ..judge.baseline_store import write_pass
        from ..report.terminal import record_update_line

        for done in write_pass(self.records, self.settings.baselines):
            record = done.record
            shown = _relative(done.path, self.config) if done.path is not None else ""
            if done.status == "shared":
                self.write_errors.append(
                    f"not written: {record.key} and {done.detail} map to the same "
                    "baseline file; rename one of the tests"
                )
            elif done.status == "partial":
                self.write_errors.append(
                    f"not written {shown}: {done.detail}; the old baseline "
                    "(if any) is kept. Raise the marker's timeout= or lower repeat=, then run "
                    "--update-baselines again."
                )
            elif done.status == "error":
                self.write_errors.append(done.detail)
            else:
                self.written.append(record_update_line(shown, done.old, record.to_json()))
                if record.busy:
                    self.warnings.append(
                        f"{record.key}: baseline recorded on a busy machine "
                        f"({'; '.join(record.busy)}): its timings read slow, and every later "
                        "comparison says so; re-record it on a quiet machine"
                    )

    def pytest_report_header(self, config: pytest.Config) -> list[str] | None:
        if not self.settings.enabled:
            return None
        from ..measure.machine import this_cpu

        cpu = this_cpu()
        lines = [
            f"inferperf: backend {self.settings.backend}, machine class "
            f"{cpu.machine_class}, baselines {_relative(self.settings.baselines, config)}"
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


def _child_timeout(profile: Profile) -> float | None:
    """How long one fresh process of this profile may take: three times the marker's
    ``timeout=`` (start-up and fixtures come on top of the measurement), else the default."""
    timeout = profile.settings.get("timeout")
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        return None
    return 3.0 * float(timeout) + 30.0


def _add_property(item: pytest.Item, name: str, value: object) -> None:
    """A junit ``<property>``: name and text value XML-safe (pytest escapes neither name)."""
    from ..report.terminal import xml_safe

    safe = (
        value if isinstance(value, int | float) and not isinstance(value, bool) else xml_safe(value)
    )
    item.user_properties.append((xml_safe(name).replace("\n", "\\n").replace("\r", "\\r"), safe))


def _suffix(verdict: Verdict, item: pytest.Item) -> str:
    base = baseline_key(item)
    return "" if verdict.key == base else verdict.key[len(base) + 1 :] + "."


def baseline_key(item: pytest.Item) -> str:
    """The key of ``item``'s baseline: its file's path from the rootdir, then its name.

    The same as the node id for a file inside the rootdir (so existing baselines keep
    their names). For a file outside it, where pytest's id may lose the path (``::test_a``
    for both ``one/test_one.py`` and ``two/test_two.py``), the path relative to the rootdir
    (``../one/test_one.py``), or the absolute path where there is no relative one.
    """
    file_part, sep, test_part = item.nodeid.partition("::")
    path = getattr(item, "path", None)
    if not sep or path is None:
        return item.nodeid
    root = Path(item.config.rootpath)
    try:
        relative = Path(path).relative_to(root).as_posix()
    except ValueError:
        try:
            relative = Path(os.path.relpath(path, root)).as_posix()
        except ValueError:  # another drive
            relative = Path(path).as_posix()
    return item.nodeid if relative == file_part else f"{relative}::{test_part}"


def output_width(config: pytest.Config) -> int:
    """The columns the plugin's text may take: pytest's terminal width on a terminal, at
    most ``report.terminal.LOG_WIDTH`` in a log (pytest's width there: ``$COLUMNS``, or 80)."""
    from ..report.terminal import LOG_WIDTH, text_width

    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:  # -p no:terminal: a log
        return LOG_WIDTH
    tty = bool(getattr(reporter, "isatty", False))
    return text_width(config.get_terminal_writer().fullwidth, tty)


def _shown_path(path: Path, config: pytest.Config) -> str:
    """``path`` as the user wrote it: relative to where pytest was started, when inside."""
    try:
        return os.path.relpath(path, config.invocation_params.dir)
    except ValueError:
        return str(path)


def _relative(path: Path, config: pytest.Config) -> str:
    try:
        return str(Path(path).relative_to(config.rootpath))
    except ValueError:
        return str(path)


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def plugin_of(config: pytest.Config) -> InferperfPlugin:
    plugin = config.pluginmanager.get_plugin("inferperf-session")
    assert isinstance(plugin, InferperfPlugin)
    return plugin
