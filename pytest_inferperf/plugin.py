"""pytest wiring for inferperf: options, ini, the ``perf`` marker, fixtures, xdist.

Only hooks and fixtures live here; measuring, judging and rendering are the
engine's (``runner``, ``verdict``, ``report``), which never import pytest.

Flow: the ``pmu_profile`` fixture measures (on the xdist worker that runs
the test) and records Profiles on the item; after the test body passes,
each Profile is judged against the marker's budgets and its baseline; the
verdicts ride on the call report to the controller, which prints one table
and, with ``--update-baselines``, does the one baseline write pass.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from . import child_process

# Loading this module is what every pytest run pays once the package is installed,
# with or without --inferperf: it imports pytest and the standard library only. The
# engine (numpy, ONNX Runtime, counters, judging) is imported inside the hooks that
# need it, and only when --inferperf asks for it or a test uses pmu_profile.
if TYPE_CHECKING:
    from .budgets import PerfSpec
    from .pmu.simulate_shared import SharedChild
    from .profile import Profile
    from .verdict import Verdict

BACKEND_CHOICES = ("auto", "perf", "simulate", "none")
FLAMEGRAPH_CHOICES = ("failed", "all", "none")
STACKS_IN_BASELINE_BYTES = 256 << 10  # folded stacks kept with a baseline, for diffs
MARKERS = ("inferperf", "perf")  # the unambiguous name first; "perf" is the short one
FIXTURES = ("pmu_profile",)  # a test that uses one of these is an inferperf test
SHORT_UPDATE = "--update-baselines"
# (variant name, profile, the workload as a no-argument callable for the sampling pass)
PROFILES = pytest.StashKey["list[tuple[str, Profile, Callable[[], Any]]]"]()
VERDICTS = pytest.StashKey["list[Verdict]"]()
# variant name -> the same measurement again (a suspected timing regression is confirmed)
REMEASURE = pytest.StashKey["dict[str, Callable[[], Profile]]"]()
CONFIRM_PAUSE_S = 0.5
EARLY_WARNINGS = pytest.StashKey[list[str]]()  # found before pytest_configure
SHORT_UPDATE_TAKEN = pytest.StashKey[bool]()  # another plugin owns --update-baselines
FLAME_PROBLEM = "flamegraphs not written"  # an artifact note: the folder could not be written


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("inferperf", "CPU inference performance (pytest-inferperf)")

    def option(name: str, ini: str, help: str, **kwargs: Any) -> None:
        group.addoption(name, dest=ini, help=help, **kwargs)
        ini_type = "bool" if kwargs.get("action") == "store_true" else "string"
        parser.addini(ini, help=help, type=ini_type, default=False if ini_type == "bool" else None)

    option(
        "--inferperf",
        "inferperf",
        action="store_true",
        default=None,
        help="measure tests that use pmu_profile and check their perf budgets and baselines",
    )
    option(
        "--inferperf-update-baselines",
        "inferperf_update_baselines",
        action="store_true",
        default=None,
        help="write this run's profiles as the new baselines (also "
        f"{SHORT_UPDATE} where no other plugin or conftest defines it)",
    )
    option(
        "--inferperf-baselines",
        "inferperf_baselines",
        metavar="DIR",
        default=None,
        help="baseline folder (default: baselines/ under the rootdir)",
    )
    option(
        "--inferperf-backend",
        "inferperf_backend",
        choices=BACKEND_CHOICES,
        default=None,
        help="counter backend: perf (perf_event_open on every thread), simulate "
        "(deterministic counts from valgrind's callgrind, for machines without a "
        "PMU), none (timing and memory only), auto (perf; simulate instead where "
        "the machine has no hardware counters and inferperf_simulate_without_pmu "
        "is set); default auto",
    )
    parser.addini(
        "inferperf_simulate_without_pmu",
        type="bool",
        default=False,
        help="let --inferperf-backend auto use the simulate backend on machines "
        "without hardware counters (never chosen without this)",
    )
    parser.addini(
        "inferperf_simulate_shared",
        type="bool",
        default=True,
        help="simulate backend: run every simulated test in one valgrind child "
        "(its start-up paid once); false: one child per test",
    )
    parser.addini(
        "inferperf_progress_interval",
        default="60",
        help="seconds between progress lines of a long profile when the output "
        "is not a terminal (CI logs); on a terminal one status is kept up "
        "to date in place; -q shows none",
    )
    option(
        "--inferperf-require-pmu",
        "inferperf_require_pmu",
        action="store_true",
        default=None,
        help="fail, instead of skip, a budget that needs counters this machine cannot count",
    )
    option(
        "--inferperf-report",
        "inferperf_report",
        metavar="DIR",
        default=None,
        help="write each profile and verdict as JSON under DIR",
    )
    option(
        "--inferperf-json",
        "inferperf_json",
        metavar="PATH",
        default=None,
        help="write the whole run as one JSON document (commit, machine, every test's "
        "verdict and metrics, a github-action-benchmark list)",
    )
    option(
        "--inferperf-html",
        "inferperf_html",
        metavar="PATH",
        default=None,
        help="write the whole run as one self-contained HTML page (the table, then each "
        "test as inferperf analyse shows a model, flamegraphs embedded)",
    )
    option(
        "--inferperf-explain",
        "inferperf_explain",
        action="store_true",
        default=None,
        help="show the diagnosis's full reasoning for failed tests (also with -v)",
    )
    option(
        "--inferperf-flamegraphs",
        "inferperf_flamegraphs",
        choices=FLAMEGRAPH_CHOICES,
        default=None,
        help="attach flamegraphs (native perf stacks or Python stacks, ONNX Runtime "
        "operators, difference from the baseline) to failed tests (default), all "
        "profiled tests, or none",
    )
    option(
        "--inferperf-fail-stale",
        "inferperf_fail_stale",
        action="store_true",
        default=None,
        help="fail a test whose baseline is stale (credibly better than the baseline)",
    )
    option(
        "--inferperf-strict",
        "inferperf_strict",
        action="store_true",
        default=None,
        help="fail, instead of warn about, an inconclusive change: one the noise floor "
        "(the machine's state now and at baseline time) cannot tell apart from the "
        "machine (for dedicated runners)",
    )


def _get(config: pytest.Config, name: str) -> Any:
    value = config.getoption(name)
    return value if value is not None else config.getini(name)


def _choice(config: pytest.Config, name: str, choices: tuple[str, ...], default: str) -> str:
    value = _get(config, name) or default
    if value not in choices:
        raise pytest.UsageError(
            f"{name} = {value!r} in the ini file: choose one of {', '.join(choices)}"
        )
    return str(value)


@dataclass
class Settings:
    enabled: bool
    update: bool
    baselines: Path
    backend: str
    require_pmu: bool
    report_dir: Path | None
    run_json: Path | None
    run_html: Path | None
    fail_stale: bool
    strict: bool
    explain: bool
    flamegraphs: str
    flamegraphs_asked: bool  # --inferperf-flamegraphs (or its ini) named by the user
    worker_index: int | None
    workers: int

    @classmethod
    def from_config(cls, config: pytest.Config) -> Settings:
        root = Path(config.rootpath)
        baselines = _get(config, "inferperf_baselines")
        report = _get(config, "inferperf_report")
        run_json = _get(config, "inferperf_json")
        run_html = _get(config, "inferperf_html")
        backend = _choice(config, "inferperf_backend", BACKEND_CHOICES, "auto")
        workerinput = getattr(config, "workerinput", None)
        worker_index = None
        if workerinput is not None:
            worker_index = int(str(workerinput.get("workerid", "gw0"))[2:] or 0)
        workers = int(
            (workerinput or {}).get("workercount") or getattr(config.option, "numprocesses", 0) or 0
        )
        return cls(
            enabled=bool(_get(config, "inferperf") or _get(config, "inferperf_update_baselines")),
            update=bool(_get(config, "inferperf_update_baselines")),
            baselines=(root / baselines) if baselines else root / "baselines",
            backend=backend,
            require_pmu=bool(_get(config, "inferperf_require_pmu")),
            report_dir=(root / report) if report else None,
            run_json=Path(config.invocation_params.dir, run_json) if run_json else None,
            run_html=Path(config.invocation_params.dir, run_html) if run_html else None,
            fail_stale=bool(_get(config, "inferperf_fail_stale")),
            strict=bool(_get(config, "inferperf_strict")),
            explain=bool(_get(config, "inferperf_explain")) or config.option.verbose > 0,
            flamegraphs=_choice(config, "inferperf_flamegraphs", FLAMEGRAPH_CHOICES, "failed"),
            flamegraphs_asked=bool(_get(config, "inferperf_flamegraphs")),
            worker_index=worker_index,
            workers=workers,
        )


@dataclass
class InferperfPlugin:
    """Per-session state; registered as ``inferperf-session``."""

    config: pytest.Config
    settings: Settings
    records: list[dict] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    write_errors: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)  # run-level files written
    warnings: list[str] = field(default_factory=list)
    shared: SharedChild | None = None  # the simulate backend's child for many tests
    claimed: dict[Path, str] = field(default_factory=dict)  # baseline file -> its test's key

    # -- collection ------------------------------------------------------
    @pytest.hookimpl(wrapper=True)
    def pytest_pycollect_makeitem(self, collector: pytest.Collector, name: str, obj: object):
        result = yield
        items = result if isinstance(result, list) else [result] if result is not None else []
        for item in items:
            if isinstance(item, pytest.Function) and uses_inferperf(item):
                from .budgets import MarkerError

                try:
                    spec_for(item)
                except MarkerError as exc:
                    raise collector.CollectError(f"{item.nodeid}: {exc}") from None
        return result

    # -- progress of long profiles ---------------------------------------------
    def live_line(self, item: pytest.Item, variant: str) -> Any:
        """The live progress line for one profile of ``item`` (progress.LiveLine), or quiet."""
        from . import progress

        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        writer = getattr(reporter, "_tw", None)
        out = getattr(writer, "_file", None)
        if out is None or self.config.option.verbose < 0 or _is_worker(self.config):
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

    # -- the simulate backend's child for many tests --------------------------
    def shared_child(self, item: pytest.Item) -> SharedChild | None:
        """The valgrind child that runs ``item`` among the session's next tests; None: alone.

        Started for every later test that uses ``pmu_profile``. A child that failed
        before it served a region is not replaced: the rest run one child per test.
        """
        if not self.config.getini("inferperf_simulate_shared") or _is_worker(self.config):
            return None
        current = self.shared
        if current is not None and current.serves(item.nodeid):
            return current
        if current is not None:
            current.close()
            if current.served == 0:
                return None
        items = item.session.items
        later = items[items.index(item) :] if item in items else [item]
        nodeids = [i.nodeid for i in later if "pmu_profile" in getattr(i, "fixturenames", ())]
        from .pmu.simulate import session_mode
        from .pmu.simulate_shared import SharedChild

        mode = session_mode(
            spec_for(i) for i in later if "pmu_profile" in getattr(i, "fixturenames", ())
        )
        self.shared = SharedChild(nodeids or [item.nodeid], rootdir=self.config.rootpath, mode=mode)
        return self.shared

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if child_process.is_shared_child():  # run only what the parent waits for
            from .pmu import simulate_shared

            why = simulate_shared.child_test_starting(item.nodeid)
            if why:
                pytest.skip(why)

    # -- running ---------------------------------------------------------
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item):
        result = yield
        profiles = item.stash.get(PROFILES, [])
        if not profiles or not self.settings.enabled or child_process.in_child():
            return result
        verdicts = []
        for name, profile, call in profiles:
            verdict, baseline = self._judge(item, name, profile)
            verdict = self._confirm(item, name, verdict, call)
            if self._wants_flamegraphs(verdict):
                verdict = self._attach_flamegraphs(verdict, baseline, call, item)
            verdicts.append(verdict)
        item.stash[VERDICTS] = verdicts
        from .partial import partial_label

        for verdict in verdicts:
            for metric, value in verdict.metrics.items():
                _add_property(item, f"inferperf.{_suffix(verdict, item)}{metric}", value)
            partial = partial_label(verdict.profile.to_dict())
            if partial:
                _add_property(item, f"inferperf.{_suffix(verdict, item)}partial", partial)
        from .report.terminal import clean

        failed = [v for v in verdicts if v.failed]
        if failed:
            from .verdict import failure_text

            pytest.fail(
                clean("\n\n".join(failure_text(v) for v in failed), keep_newlines=True),
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

    def _confirm(
        self, item: pytest.Item, name: str, verdict: Verdict, call: Callable[[], Any]
    ) -> Verdict:
        """A timing regression that alone would fail the test, measured again first."""
        remeasure = item.stash.get(REMEASURE, {}).get(name)
        if remeasure is None or not verdict.needs_confirmation:
            return verdict
        import time

        from .verdict import with_confirmation

        time.sleep(CONFIRM_PAUSE_S)
        try:
            profile = _with_operator_times(remeasure(), call)
        except TimeoutError as exc:  # the first measurement stands, and says why
            from dataclasses import replace

            return replace(
                verdict,
                confirmation={
                    "held": True,
                    "pause_s": CONFIRM_PAUSE_S,
                    "text": f"not measured again ({exc}): the first measurement stands",
                },
            )
        again, _ = self._judge(item, name, profile.with_(model=verdict.profile.model))
        return with_confirmation(verdict, again, pause_s=CONFIRM_PAUSE_S)

    def _wants_flamegraphs(self, verdict: Verdict) -> bool:
        mode = self.settings.flamegraphs
        if mode == "none":
            return False
        # Stacks are stored with a new baseline so later failures get a differential view.
        return mode == "all" or verdict.failed or self.settings.update

    def _attach_flamegraphs(
        self, verdict: Verdict, baseline: Profile | None, call: Callable[[], Any], item: pytest.Item
    ) -> Verdict:
        from dataclasses import replace

        from .flame import capture
        from .output_errors import describe, make_folder

        out_dir = self.settings.report_dir or Path(self.config.rootpath) / "inferperf-report"
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
        base_stacks = (baseline.stacks or {}) if baseline is not None else {}
        try:
            operators, op_reason = _operator_table(verdict.profile, call)
            graphs = capture(
                call,
                name=verdict.key,
                out_dir=folder,
                operators=operators,
                model_name=_model_name(call),
                baseline_stacks=base_stacks or None,
                baseline_operators=(baseline.operators or None) if baseline is not None else None,
            )
        except Exception as exc:  # a disk full mid-write, a sampler's bug: never the test's
            return replace(verdict, artifact_notes={FLAME_PROBLEM: describe(exc, folder)})
        artifacts = {
            k: _relative(Path(v), self.config)
            for k, v in graphs.paths.items()
            if k.endswith(".svg")
        }
        notes = dict(graphs.reasons)
        if op_reason:
            notes["operators"] = op_reason
        if baseline is not None and not base_stacks:
            notes["diff"] = "no stacks stored with the baseline (re-run --update-baselines)"
        for kind, path in artifacts.items():
            _add_property(item, f"inferperf.flamegraph.{kind}", path)
        profile = verdict.profile
        if graphs.folded:
            profile = profile.with_(stacks=graphs.stacks_record(STACKS_IN_BASELINE_BYTES))
        return replace(verdict, profile=profile, artifacts=artifacts, artifact_notes=notes)

    def _judge(
        self, item: pytest.Item, name: str, profile: Profile
    ) -> tuple[Verdict, Profile | None]:
        from .baseline import BaselineError, baseline_path, class_folder, load_baseline
        from .verdict import judge

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
        return judge(
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
        """Metrics and findings added by ``pytest_inferperf_*`` hooks in conftest files."""
        from .classify import RuleContext
        from .hooks import extra_findings, extra_metrics
        from .metrics import METRICS, context_of, profile_metrics

        pm = self.config.pluginmanager
        added = extra_metrics(pm, profile.totals, context_of(profile), builtin=METRICS)
        cpu = profile.machine.get("cpu") or {}
        ctx = RuleContext.of(
            str(cpu.get("core_slug", "")),
            unavailable=profile.unavailable,
            session=profile.session,
            cpu_count=cpu.get("cpu_count"),
        )
        return added, extra_findings(pm, {**profile_metrics(profile), **added}, ctx)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        report = yield
        if report.when == "call" and VERDICTS in item.stash:
            verdicts = item.stash[VERDICTS]
            from .verdict import failure_text

            report.inferperf = [
                {**v.summary_dict(), "failure": failure_text(v) if v.failed else None}
                for v in verdicts
            ]
            _html_extras(item, report, verdicts)
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
        if report.when == "teardown" and child_process.is_shared_child():
            from .pmu import simulate_shared

            simulate_shared.child_test_finished(report.nodeid)
        entries = getattr(report, "inferperf", None)
        if report.when != "call" or not entries:
            return
        for entry in entries:
            self.records.append({**entry, "nodeid": report.nodeid, "outcome": report.outcome})

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if child_process.is_shared_child():
            from .pmu import simulate_shared

            simulate_shared.child_session_finished()
        if self.shared is not None:
            self.shared.close()
        if _is_worker(self.config) or not self.records:
            return
        from .baseline import sweep_interrupted_writes

        removed = sweep_interrupted_writes(self.settings.baselines)
        if removed:
            self.outputs.append(
                f"removed {len(removed)} temp file(s) an interrupted baseline write had left"
            )
        # Baselines first: no report output may decide whether a passing run is kept.
        if self.settings.update:
            try:
                self._update_baselines()
            except KeyboardInterrupt:
                self._say_written_on_interrupt()
                raise
        self._write_outputs(session)
        if self.write_errors and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _say_written_on_interrupt(self) -> None:
        """Ctrl-C in the write pass: what was written, before the interrupt goes on."""
        from .report.terminal import clean

        terminal = self.config.pluginmanager.getplugin("terminalreporter")
        lines = [
            *self.written,
            *(f"ERROR {e}" for e in self.write_errors),
            f"interrupted: {len(self.written)} baseline(s) written before the interrupt; "
            "every other baseline is as it was (each write is atomic)",
        ]
        for line in lines:
            if terminal is not None:
                terminal.write_line(clean(line))
            else:
                sys.stderr.write(clean(line) + "\n")

    def _write_outputs(self, session: pytest.Session) -> None:
        """Every report the run asked for; each problem one line, never an exception.

        A problem with an output the user named (``--inferperf-report``, ``--inferperf-json``,
        ``--inferperf-html``, ``--inferperf-flamegraphs``) is an error that fails the run;
        with one nobody named (the default flamegraph folder, the CI job summary) a warning.
        """
        from .output_errors import describe

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
            note for r in self.records if (note := r.get("artifact_notes", {}).get(FLAME_PROBLEM))
        )
        for problem in problems:
            (self.write_errors if settings.flamegraphs_asked else self.warnings).append(
                f"{FLAME_PROBLEM}: {problem}"
            )

    def _write_run_json(self, session: pytest.Session) -> None:
        """The run-level JSON (``--inferperf-json``)."""
        from .report.run import commit_of, run_document

        document = run_document(
            self.records,
            commit=commit_of(self.config.rootpath),
            written=self.written,
            exit_status=int(session.exitstatus),
        )
        path = self.settings.run_json
        assert path is not None
        _write_text(path, json.dumps(document, indent=1, allow_nan=False) + "\n")
        self.outputs.append(f"wrote {_relative(path, self.config)}")

    def _write_step_summary(self) -> None:
        """The GitHub job summary, where ``$GITHUB_STEP_SUMMARY`` names one."""
        from .report.markdown import append_step_summary
        from .report.run import run_markdown

        append_step_summary(run_markdown(self.records, written=self.written))

    def _write_run_html(self, path: Path) -> None:
        """The run as one page; flamegraphs embedded and linked relative to the page."""
        from .report.html import render_run_html

        records, svgs = [], {}
        for record in self.records:
            artifacts = {}
            for kind, rel in record.get("artifacts", {}).items():
                target = Path(self.config.rootpath, rel)
                link = os.path.relpath(target, path.parent)
                artifacts[kind] = link
                with contextlib.suppress(OSError, UnicodeDecodeError):  # else linked only
                    svgs[link] = target.read_text(encoding="utf-8")
            records.append({**record, "artifacts": artifacts})
        page = render_run_html(records, title="pytest --inferperf", svgs=svgs)
        _write_text(path, page)
        self.outputs.append(f"wrote {_relative(path, self.config)}")

    def _write_reports(self) -> None:
        from .baseline import short_hash

        folder = self.settings.report_dir
        assert folder is not None
        folder.mkdir(parents=True, exist_ok=True)
        for record in self.records:
            stem = "".join(c if c.isalnum() or c in "._-" else "_" for c in record["key"])[:120]
            path = folder / f"{stem}-{short_hash(record['key'])}.json"
            _write_text(path, json.dumps(record, indent=1))

    def _update_baselines(self) -> None:
        from .baseline import BaselineError, baseline_path, load_baseline, save_baseline
        from .partial import partial_label
        from .profile import Profile

        by_path: dict[Path, set[str]] = {}
        for record in self.records:  # xdist workers cannot see each other's claims
            with contextlib.suppress(BaselineError, KeyError, TypeError):
                profile = record["profile"]
                by_path.setdefault(
                    baseline_path(
                        self.settings.baselines,
                        profile["machine_class"],
                        profile["backend"],
                        record["key"],
                    ),
                    set(),
                ).add(record["key"])
        shared = {key for keys in by_path.values() if len(keys) > 1 for key in keys}
        for record in sorted(self.records, key=lambda r: r["key"]):
            if record["key"] in shared:
                others = sorted(
                    k
                    for keys in by_path.values()
                    if record["key"] in keys
                    for k in keys
                    if k != record["key"]
                )
                self.write_errors.append(
                    f"not written: {record['key']} and {', '.join(others)} map to the same "
                    "baseline file; rename one of the tests"
                )
                continue
            ran_clean = record["outcome"] == "passed" or (
                record["outcome"] == "skipped" and record["nothing_checked"]
            )
            if not ran_clean or record["failed"]:
                continue
            profile = Profile.from_dict(record["profile"])
            path = baseline_path(
                self.settings.baselines, profile.machine_class, profile.backend, record["key"]
            )
            partial = partial_label(record["profile"])
            if partial:  # a run cut at its timeout never becomes the reference
                self.write_errors.append(
                    f"not written {_relative(path, self.config)}: {partial}; the old baseline "
                    "(if any) is kept. Raise the marker's timeout= or lower repeat=, then run "
                    "--update-baselines again."
                )
                continue
            try:
                old = load_baseline(path)
            except BaselineError:
                old = None
            try:
                save_baseline(path, profile)
            except BaselineError as exc:
                self.write_errors.append(str(exc))
                continue
            self.written.append(_update_line(_relative(path, self.config), old, record))
            if record.get("busy"):
                self.warnings.append(
                    f"{record['key']}: baseline recorded on a busy machine "
                    f"({'; '.join(record['busy'])}): its timings read slow, and every later "
                    "comparison says so; re-record it on a quiet machine"
                )

    def pytest_report_header(self, config: pytest.Config) -> list[str] | None:
        if not self.settings.enabled:
            return None
        from .machine import this_cpu

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
        from .report.terminal import render_summary

        text = render_summary(
            self.records,
            self.written,
            self.write_errors,
            self.warnings,
            update=self.settings.update,
            outputs=self.outputs,
        )
        if text:
            terminalreporter.section("inferperf")
            terminalreporter.write_line(text)


def _add_property(item: pytest.Item, name: str, value: object) -> None:
    """A junit ``<property>``: name and text value XML-safe (pytest escapes neither name)."""
    from .report.terminal import xml_safe

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


def _update_line(path: str, old: Profile | None, record: dict) -> str:
    from .metrics import profile_metrics

    new = record["metrics"]
    if old is None:
        return f"created {path}"
    before = profile_metrics(old)
    keys = [
        k
        for k in (
            "ipc",
            "l1_miss",
            "cpu_ms_per_call",
            "latency_p50_ms",
            "latency_p99_ms",
            "peak_rss_mb",
        )
        if k in new and k in before
    ]
    changes = ", ".join(f"{k} {before[k]:.4g} -> {new[k]:.4g}" for k in keys)
    return f"updated {path}: {changes}" if changes else f"updated {path}"


def _write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (a temp file beside it, then a rename)."""
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:60]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


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


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def uses_inferperf(item: pytest.Item) -> bool:
    """Whether ``item`` is an inferperf test: it uses ``pmu_profile`` or an ``inferperf`` marker.

    Another suite's own ``perf`` marker on tests that never measure is not ours.
    """
    names = getattr(item, "fixturenames", ())
    return any(f in names for f in FIXTURES) or item.get_closest_marker("inferperf") is not None


def spec_for(item: pytest.Item) -> PerfSpec:
    """The merged budget markers of an item (closest first wins per keyword).

    ``inferperf`` markers when the item has any (the unambiguous name), else ``perf``.
    """
    from .budgets import parse_marker

    name = "inferperf" if item.get_closest_marker("inferperf") is not None else "perf"
    kwargs: dict[str, Any] = {}
    for mark in reversed(list(item.iter_markers(name))):
        if mark.args:
            parse_marker(mark.args, {}, marker=name)
        kwargs.update(mark.kwargs)
    return parse_marker((), kwargs, marker=name)


def physical_cores() -> int:
    """Physical cores this process may run on (SMT siblings counted once)."""
    cores = set()
    for cpu in os.sched_getaffinity(0):
        path = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology/core_cpus_list")
        try:
            cores.add(path.read_text().strip())
        except OSError:
            cores.add(str(cpu))
    return len(cores) or 1


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """``pytest_inferperf_metrics`` / ``pytest_inferperf_rules`` in conftest files."""
    from . import hooks

    pluginmanager.add_hookspecs(hooks)


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
        from .telemetry import keep_out_of_measurements

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
            f"{name}(**budgets): inferperf budgets (<metric>_min / <metric>_max), tolerance= "
            "for the baseline comparison, and runner overrides (warmup, repeat, timeout, "
            "threads, pin) for tests that use the pmu_profile fixture",
        )
    settings = Settings.from_config(config)
    plugin = InferperfPlugin(config, settings)
    plugin.warnings.extend(config.stash.get(EARLY_WARNINGS, []))
    if settings.enabled and not _is_worker(config) and settings.workers > 1:
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
    if settings.enabled:
        from . import watchdog

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


def _plugin(config: pytest.Config) -> InferperfPlugin:
    plugin = config.pluginmanager.get_plugin("inferperf-session")
    assert isinstance(plugin, InferperfPlugin)
    return plugin


@pytest.fixture
def pmu_profile(request: pytest.FixtureRequest) -> Callable[..., Profile]:
    """Measure a workload: ``pmu_profile(fn, *args, name=None, **kwargs) -> Profile``.

    With ``--inferperf`` the workload is warmed until steady and counted over
    the marker's repeats; without it, it runs once as a smoke call and no
    budget is checked. Call it more than once with ``name=`` to profile variants.
    """
    from .runner import profile, smoke

    plugin = _plugin(request.config)
    settings = plugin.settings
    spec = spec_for(request.node)
    recorded = request.node.stash.setdefault(PROFILES, [])

    def run(fn: Callable[..., Any], *args: Any, name: str | None = None, **kwargs: Any) -> Profile:
        variant = name or ""
        call = functools.partial(fn, *args, **kwargs)
        if child_process.in_child():  # re-run of this test under valgrind: judge nothing
            from .pmu import simulate

            return simulate.child_measure(
                call, name=variant or None, settings=_run_settings(spec), nodeid=request.node.nodeid
            )
        if any(existing == variant for existing, *_ in recorded):
            raise pytest.UsageError(
                f"{request.node.nodeid}: pmu_profile was called twice with "
                f"{'no name' if not variant else f'name={variant!r}'}; give each call its own "
                "name= so each gets its own baseline"
            )
        if not settings.enabled:
            return smoke(fn, *args, name=variant or None, **kwargs)
        options = {k: v for k, v in spec.runner.items() if k != "threads"}
        if "pin" not in options and settings.worker_index is not None:
            cpus = sorted(os.sched_getaffinity(0))
            options["pin"] = cpus[settings.worker_index % len(cpus)]
        backend = _backend(settings.backend, request.config)
        from .progress import ProgressCounters, ticking

        line = plugin.live_line(request.node, variant)
        try:
            if backend == "simulate":
                from .pmu import simulate

                reason = simulate.available()
                if reason:
                    pytest.skip(f"inferperf: the simulate backend is {reason}")
                line.phase("simulating: native run, then the region under valgrind")
                # the marker's timeout= bounds the child too
                limit = (
                    {"timeout": float(spec.runner["timeout"])} if "timeout" in spec.runner else {}
                )
                with ticking(line):
                    result = simulate.profile_via_child(
                        request.node.nodeid,
                        variant or None,
                        rootdir=request.config.rootpath,
                        settings=_run_settings(spec),
                        native=call,
                        name=variant or request.node.name,
                        shared=plugin.shared_child(request.node),
                        mode=simulate.mode_for(simulate.spec_metrics(spec)),
                        run_twice=settings.update,
                        **limit,
                    )
            else:
                from .pmu import make_backend

                measure = functools.partial(
                    profile,
                    fn,
                    *args,
                    name=variant or request.node.name,
                    backend=backend,
                    **options,
                    **kwargs,
                )
                line.phase("warm-up")
                counters = ProgressCounters(
                    make_backend(backend), _run_settings(spec).repeat, line.phase
                )
                result = measure(backend=counters)
                request.node.stash.setdefault(REMEASURE, {})[variant] = measure
            if "onnxruntime" in sys.modules:
                line.phase("operator times (ONNX Runtime profiler)")
            result = _with_operator_times(result, call)
        finally:
            line.done()
        if result.model is None and "onnxruntime" in sys.modules:
            from .identity import model_of_call

            result = result.with_(model=model_of_call(call))
        recorded.append((variant, result, call))
        return result

    return run


def _with_operator_times(profile: Profile, call: Callable[[], Any]) -> Profile:
    """The profile with ONNX Runtime's per-node and per-op-type times (onnx.operator_times)."""
    if "onnxruntime" not in sys.modules:  # no session can exist: skip the import
        return profile
    if profile.partial:  # the workload already ran past its timeout: call it no more
        return profile.with_(
            settings={
                **profile.settings,
                "operator_pass": {"skipped": "the measured run stopped at its timeout"},
            }
        )
    from .onnx import operator_times

    fields, reason = operator_times(call, latency_ms=profile.latency.mean_ms)
    settings = {
        **profile.settings,
        "operator_pass": fields.pop("operator_pass", None)
        or {"skipped": reason or "not an ONNX Runtime workload"},
    }
    return profile.with_(settings=settings, **fields)


def _operator_table(profile: Profile, call: Callable[[], Any]) -> tuple[list | None, str | None]:
    """The profile's operator table, else ONNX Runtime's per-operator times, or why not."""
    if profile.operators:
        return list(profile.operators), None
    from .onnx import operator_table

    return operator_table(call)


def _model_name(call: Callable[[], Any]) -> str:
    from .onnx import session_of

    session = session_of(getattr(call, "func", call))
    model = getattr(session, "_model_path", None) if session is not None else None
    return Path(model).stem if isinstance(model, str) else "model"


def _html_extras(item: pytest.Item, report: pytest.TestReport, verdicts: list[Verdict]) -> None:
    """Flamegraphs in pytest-html's report: embedded, and linked relative to the report.

    Embedded SVG survives an upload of the report alone as a CI artifact; the link is
    relative to the report's folder, so it works wherever report and flamegraphs travel
    together. Nothing when pytest-html is not active.
    """
    config = item.config
    html = config.pluginmanager.getplugin("html")
    htmlpath = getattr(config.option, "htmlpath", None)
    if html is None or not htmlpath:
        return
    try:
        import pytest_html
    except ImportError:
        return
    import base64

    folder = Path(config.invocation_params.dir, htmlpath).parent
    extras = getattr(report, "extras", [])
    for verdict in verdicts:
        for kind, path in verdict.artifacts.items():
            target = Path(config.rootpath, path)
            extras.append(
                pytest_html.extras.url(
                    os.path.relpath(target, folder), name=f"{verdict.key} {kind}"
                )
            )
            try:
                svg = target.read_bytes()
            except OSError:
                continue
            extras.append(
                pytest_html.extras.svg(
                    base64.b64encode(svg).decode("ascii"), name=f"{verdict.key} {kind}"
                )
            )
    report.extras = extras


HTML_COLUMNS = (("latency_p50_ms", "p50 ms"), ("cpu_ms_per_call", "CPU ms/call"))


def html_table_header(cells: list[str]) -> None:
    """pytest-html: the inferperf columns after the test name."""
    import html as escape

    titles = [*(title for _, title in HTML_COLUMNS), "vs baseline"]
    cells[2:2] = [f'<th class="sortable">{escape.escape(t)}</th>' for t in titles]


def html_table_row(report: pytest.TestReport, cells: list[str]) -> None:
    """pytest-html: this test's inferperf values (empty cells for other tests)."""
    import html as escape

    entries = getattr(report, "inferperf", None) or []
    values = []
    for metric, _ in HTML_COLUMNS:
        numbers = [e["metrics"][metric] for e in entries if metric in e["metrics"]]
        values.append(" / ".join(f"{n:.4g}" for n in numbers))
    values.append("; ".join(e["change"] for e in entries))
    cells[2:2] = [f"<td>{escape.escape(v)}</td>" for v in values]


def _run_settings(spec: PerfSpec) -> Any:
    """The marker's runner overrides as the runner's settings (threads is the session's)."""
    from .runner import RunSettings, normalise_pin

    options = {k: v for k, v in spec.runner.items() if k not in ("threads", "pin")}
    options.setdefault("warmup_max", max(RunSettings.warmup_max, options.get("warmup", 0)))
    return RunSettings(**options, pin=normalise_pin(spec.runner.get("pin")))


def _backend(choice: str, config: pytest.Config) -> str:
    """The backend ``auto`` stands for: perf, or simulate only where the ini asks for it."""
    if choice != "auto":
        return choice
    from .pmu.perf_event import syscall_number

    try:
        syscall_number()
    except OSError:
        return "none"
    if config.getini("inferperf_simulate_without_pmu") and not _has_hardware_counters():
        return "simulate"
    return "perf"


@functools.lru_cache(maxsize=1)
def _has_hardware_counters() -> bool:
    from .machine import this_cpu
    from .pmu.events import resolve
    from .pmu.perf_backend import probe_event

    cpu = this_cpu()
    for event in resolve(["cycles", "instructions"], cpu).events.get("instructions", ()):
        if probe_event(event, exclude_kernel=True, paranoid=cpu.paranoid) is None:
            return True
    return False


@pytest.fixture
def perf_threads(request: pytest.FixtureRequest) -> int:
    """The intra-op thread count the ``perf`` marker asks for (``threads=``; default 1)."""
    return int(spec_for(request.node).runner.get("threads", 1))
