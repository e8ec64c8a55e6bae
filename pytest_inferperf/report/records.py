"""The record of one judged profile, as it travels from an xdist worker to the controller.

Owns: :class:`ProfileRecord`, the one typed value both sides use: the worker builds it
from a verdict (:meth:`ProfileRecord.of_verdict`) and puts its :meth:`to_json` on the
call report (``report.inferperf``, a list of plain dicts, so xdist's report
serialisation, pytest-html and junit users see JSON-able values only); the controller
reads it back with :meth:`ProfileRecord.from_json` and adds the test's node id and
outcome. The per-test JSON files (``--inferperf-report``), the run JSON and the
renderers take :meth:`to_json`.

Must not: import pytest, measure, judge or render. A key it does not know (a newer
worker's) is kept as it is and written back, never dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from ..core.errors import InferperfError

if TYPE_CHECKING:
    from ..core.profile import Profile


class RecordFormatError(InferperfError, ValueError):
    """A record that is not one: a missing key or a value of the wrong type."""


@dataclass(frozen=True)
class ProfileRecord:
    """One profile of one test, judged on the worker (field names are its JSON keys)."""

    key: str  # the baseline key: the test's path and name, then ``@<variant>``
    status: str  # the verdict's one-word status for the table
    failed: bool
    nothing_checked: bool  # no budget could be checked on this machine
    metrics: dict[str, float]
    baseline_note: str
    baseline_error: str | None = None
    change: str = ""  # the summary table's "vs baseline" cell
    unchecked: list[str] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)
    diagnosis: str = ""  # the primary finding's headline
    diagnosis_detail: dict[str, Any] | None = None  # the whole diagnosis as judged there
    change_explanation: dict[str, Any] | None = None
    profile: dict[str, Any] = field(default_factory=dict)  # Profile.to_dict(): the measurement
    artifacts: dict[str, str] = field(default_factory=dict)  # view -> path from the rootdir
    artifact_notes: dict[str, str] = field(default_factory=dict)  # view -> why it is missing
    verdict: str = ""  # passed | regressed | inconclusive | ...
    inconclusive: list[str] = field(default_factory=list)
    carried_by: str = ""
    confirmation: dict[str, Any] | None = None
    noise_floor: dict[str, Any] | None = None
    busy: list[str] = field(default_factory=list)  # why the machine was busy now
    baseline_busy: list[str] = field(default_factory=list)
    # each region() stage: ms per call, share of the call, against the baseline
    stages: list[dict[str, Any]] = field(default_factory=list)
    failure: str | None = None  # the failure text, for a failed profile
    nodeid: str = ""  # set on the controller, from the report
    outcome: str = ""  # the test's outcome (passed / failed / skipped), from the report
    extra: dict[str, Any] = field(default_factory=dict, compare=False)  # keys it does not know

    # -- the worker's side ------------------------------------------------------------
    @classmethod
    def of_verdict(cls, verdict: Any, failure: str | None = None) -> ProfileRecord:
        """The record of an :class:`~pytest_inferperf.diagnose.assessment.Assessment` (its
        summary)."""
        from .verdict import record_of

        return cls.from_json({**record_of(verdict), "failure": failure})

    def to_json(self) -> dict[str, Any]:
        """Plain JSON types only: what rides on ``report.inferperf`` and goes into files."""
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"}
        if not self.nodeid:
            del data["nodeid"], data["outcome"]
        return {**data, **self.extra}

    # -- the controller's side --------------------------------------------------------
    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProfileRecord:
        """A record from :meth:`to_json`'s dict; :class:`RecordFormatError` if it is not one."""
        if not isinstance(data, Mapping):
            raise RecordFormatError(f"an inferperf record is a dict, got {type(data).__name__}")
        known = {f.name: f for f in fields(cls) if f.name != "extra"}
        missing = [n for n in _REQUIRED if n not in data]
        if missing:
            raise RecordFormatError(f"an inferperf record lacks {', '.join(missing)}")
        values = {k: v for k, v in data.items() if k in known}
        for name, kind in _TYPES.items():
            if name in values and values[name] is not None and not isinstance(values[name], kind):
                raise RecordFormatError(
                    f"inferperf record {data.get('key')!r}: {name} is "
                    f"{type(values[name]).__name__}, expected {kind.__name__}"
                )
        extra = {k: v for k, v in data.items() if k not in known}
        return cls(**values, extra=extra)

    def of_test(self, nodeid: str, outcome: str) -> ProfileRecord:
        """This record with the node id and outcome of the report that carried it."""
        return replace(self, nodeid=nodeid, outcome=outcome)

    # -- what the controller asks of it -----------------------------------------------
    @property
    def ran_clean(self) -> bool:
        """Whether this profile may become a baseline: its test passed (or skipped only
        because nothing could be checked here) and the profile itself did not fail."""
        clean = self.outcome == "passed" or (self.outcome == "skipped" and self.nothing_checked)
        return clean and not self.failed

    @property
    def acceptable(self) -> bool:
        """Whether ``inferperf accept`` may make this profile a baseline after the run: it
        ran clean, or its test failed on this profile alone (a regression the team now
        accepts, or no baseline where ``--inferperf-require-baseline`` wanted one). A
        failed test whose profile passed failed on something else (another profile,
        ``--inferperf-require-pmu``); a test whose own code failed leaves no record. (A
        partial profile is refused by the write pass.)"""
        return self.ran_clean or (self.failed and self.outcome == "failed")

    @property
    def machine_class(self) -> str:
        return str(self.profile.get("machine_class", ""))

    @property
    def backend(self) -> str:
        return str(self.profile.get("backend", ""))

    def measured(self) -> Profile:
        """The Profile this record carries (validated, as a baseline file is on load)."""
        from ..core.profile import Profile

        return Profile.from_dict(self.profile)


_REQUIRED = ("key", "status", "failed", "nothing_checked", "metrics", "baseline_note", "profile")
_TYPES: dict[str, type] = {
    "key": str,
    "status": str,
    "failed": bool,
    "nothing_checked": bool,
    "metrics": dict,
    "baseline_note": str,
    "change": str,
    "diagnosis_detail": dict,
    "profile": dict,
    "unchecked": list,
    "unavailable": dict,
    "artifacts": dict,
    "artifact_notes": dict,
    "inconclusive": list,
    "busy": list,
    "baseline_busy": list,
    "stages": list,
}
