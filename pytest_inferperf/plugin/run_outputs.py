"""The run-level outputs the controller writes at the end of a run.

Owns: which outputs the run asked for (``--inferperf-report``, ``--inferperf-json``,
``--inferperf-html``, the CI job summary), the paths they name, and each problem
writing them as one line: an error for an output the user named, a warning for one
nobody named; never an exception. Must not: render (``report``), write baselines, or
import the engine at module level (the plugin loads with every pytest run).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .context import relative, shown_path
from .keys import FLAME_PROBLEM
from .options import Settings

if TYPE_CHECKING:
    from ..report.records import ProfileRecord


@dataclass(eq=False)
class RunOutputs:
    """The outputs of one run's records; what was written is added to ``outputs``."""

    config: pytest.Config
    settings: Settings
    records: list[ProfileRecord]
    written: list[str]  # the baseline write pass's lines
    outputs: list[str]  # run-level files written, for the summary
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def record_dicts(self) -> list[dict[str, Any]]:
        """The records as the renderers and files take them (plain JSON)."""
        return [record.to_json() for record in self.records]

    def write_all(self, session: pytest.Session) -> None:
        """Every report the run asked for; each problem one line in ``errors`` or
        ``warnings``, never an exception.

        A problem with an output the user named (``--inferperf-report``, ``--inferperf-json``,
        ``--inferperf-html``, ``--inferperf-flamegraphs``) is an error that fails the run;
        with one nobody named (the default flamegraph folder, the CI job summary) a warning.
        """
        from ..core.output_errors import describe

        for option, path, write, asked in self._asked_for(session):
            try:
                write()
            except Exception as exc:  # a renderer's bug must not lose the run either
                shown = f"{option} {shown_path(path, self.config)}" if path else option
                (self.errors if asked else self.warnings).append(f"{shown}: {describe(exc, path)}")
        problems = dict.fromkeys(
            note for r in self.records if (note := r.artifact_notes.get(FLAME_PROBLEM))
        )
        for problem in problems:
            (self.errors if self.settings.flamegraphs_asked else self.warnings).append(
                f"{FLAME_PROBLEM}: {problem}"
            )

    def _asked_for(
        self, session: pytest.Session
    ) -> list[tuple[str, Path | None, Callable[[], None], bool]]:
        """(option, path, writer, named by the user) of each output this run writes."""
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
        return outputs

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
        self.outputs.append(f"wrote {relative(path, self.config)}")

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
        self.outputs.append(f"wrote {relative(path, self.config)}")

    def _write_reports(self) -> None:
        from ..report.files import write_records

        assert self.settings.report_dir is not None
        write_records(self.settings.report_dir, self.record_dicts())
