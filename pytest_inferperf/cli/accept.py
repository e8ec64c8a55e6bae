"""``inferperf accept``: baselines from what a ``pytest --inferperf`` run measured, without
measuring again (a CI run whose regression the team now accepts).

Owns: reading a run's outputs (:func:`read_run_outputs`: the per-test record files of
``--inferperf-report DIR``, a run JSON of ``--inferperf-json``, or one record file),
choosing which records may become baselines (:func:`plan`: one record per key, a key
measured twice differently refused naming both files, records the run JSON does not
know refused as left by an earlier run, :attr:`ProfileRecord.acceptable`; a profile that
passed while another profile of its test failed it is kept: its baseline stands), and wording
each outcome for the command line (:func:`written_text`, :func:`refused_text`).

Must not: measure or judge (the run did), write a baseline file itself (the store's
write pass, :func:`judge.baseline_store.write_pass`, does: atomic, per-file refusals), parse
arguments or print (``cli``). An input that cannot be read raises
:class:`core.errors.UsageError` before anything is written.

A run JSON holds each test's summary (metrics, outcome), not the measured Profile a
baseline is made of: its tests are checked against the report folder's records (same
run) and are never baselines alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import UsageError
from ..core.profile import MAX_PROFILE_BYTES
from ..core.safe_read import UnreadableFile, read_limited
from ..judge.baseline_store import BaselineWrite, write_pass
from ..report.records import ProfileRecord, RecordFormatError
from ..report.run import RUN_SCHEMA

_GIVE = (
    "Give the run's report folder (pytest --inferperf-report DIR) or its run JSON "
    "(--inferperf-json FILE)."
)


@dataclass(frozen=True)
class Found:
    """A record, or a run JSON's summary of one test, and the file it was read from."""

    key: str
    source: str
    record: ProfileRecord | None = None  # None: a run JSON's summary only
    summary: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Refusal:
    """A key not accepted, and why (one line)."""

    key: str
    reason: str


@dataclass
class RunOutputs:
    """What the inputs held."""

    found: list[Found] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # JSON files that are no record
    run_documents: list[str] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)  # as given


@dataclass(frozen=True)
class Plan:
    """The records to accept, the keys refused, and what was left aside."""

    records: list[ProfileRecord]
    refused: list[Refusal]
    ignored: list[str]
    read: int  # records read (one per key and file)
    unmatched: int = 0  # records whose key did not match ``-k``
    run_documents: list[str] = field(default_factory=list)  # run JSONs checked against
    kept: list[Refusal] = field(default_factory=list)  # not written, and need not be

    def write(self, baselines: str | Path, *, dry_run: bool = False) -> Iterator[BaselineWrite]:
        """The write pass over the accepted records (nothing written with ``dry_run``)."""
        return write_pass(self.records, baselines, accepted=True, dry_run=dry_run)


# -- reading ----------------------------------------------------------------------------
def _load(path: Path) -> Any:
    try:
        data = read_limited(path, MAX_PROFILE_BYTES, what="run output")
    except UnreadableFile as exc:
        raise UsageError(f"{exc}. Nothing was written. {_GIVE}") from None
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        cause = f"not UTF-8 text (byte {exc.start})"
    except json.JSONDecodeError as exc:
        cause = f"not valid JSON ({exc})"
    except RecursionError:
        cause = "not JSON this reader can take (nested too deep)"
    raise UsageError(
        f"{path} is {cause}: it was cut short or changed after the run wrote it. Nothing "
        "was written. Download the CI run's artifact again (an interrupted upload or "
        "download leaves a cut file), or remove this file and accept the rest."
    )


def _is_record(data: object) -> bool:
    return isinstance(data, Mapping) and "key" in data and "profile" in data


def _read_document(path: Path, data: Any, out: RunOutputs, *, given: bool) -> None:
    """One loaded JSON document into ``out``; ``given``: named on the command line."""
    shown = str(path)
    if isinstance(data, Mapping) and data.get("schema") == RUN_SCHEMA:
        tests = data.get("tests")
        if not isinstance(tests, list) or not all(isinstance(t, Mapping) for t in tests):
            raise UsageError(
                f'{path} is a run JSON ({RUN_SCHEMA}) whose "tests" is not a list of '
                "tests: it was changed after the run wrote it. Nothing was written. "
                f"{_GIVE}"
            )
        out.run_documents.append(shown)
        for test in tests:
            key = test.get("key")
            if not isinstance(key, str):
                raise UsageError(
                    f'{path}: a test without a "key" in the run JSON: it was changed after '
                    f"the run wrote it. Nothing was written. {_GIVE}"
                )
            if _is_record(test):  # a run JSON that carries whole records
                _read_record(path, test, out)
            else:
                out.found.append(Found(key, shown, summary=test))
        return
    if _is_record(data):
        _read_record(path, data, out)
        return
    if given:
        raise UsageError(
            f"{path} is neither a run JSON ({RUN_SCHEMA}) nor a per-test record of "
            'pytest --inferperf (a dict with "key" and "profile"). Nothing was '
            f"written. {_GIVE}"
        )
    out.ignored.append(shown)


def _read_record(path: Path, data: Mapping[str, Any], out: RunOutputs) -> None:
    try:
        record = ProfileRecord.from_json(data)
    except RecordFormatError as exc:
        raise UsageError(
            f"{path} is not a valid record ({exc}): it was changed after the run wrote it, "
            "or a newer pytest-inferperf wrote it. Nothing was written. Download the CI "
            "run's artifact again, or remove this file and accept the rest."
        ) from None
    out.found.append(Found(record.key, str(path), record=record))


def read_run_outputs(inputs: Sequence[str | Path]) -> RunOutputs:
    """Every record and run JSON in ``inputs``: files, and folders' top-level ``*.json``
    (their ``flamegraphs/`` and other subfolders are not read). :class:`UsageError` for a
    missing input, or a JSON file that is cut or corrupt."""
    out = RunOutputs(inputs=[str(i) for i in inputs])
    for given in inputs:
        path = Path(given)
        if path.is_dir():
            for file in sorted(path.glob("*.json")):
                if file.is_file():
                    _read_document(file, _load(file), out, given=False)
        elif path.exists() or path.is_symlink():
            _read_document(path, _load(path), out, given=True)
        else:
            raise UsageError(f"{path} does not exist. Nothing was written. {_GIVE}")
    return out


# -- choosing -----------------------------------------------------------------------------
def _same_test(summary: Mapping[str, Any], record: ProfileRecord) -> bool:
    """Whether a run JSON's summary is of the very measurement ``record`` carries."""
    return (
        summary.get("outcome") == record.outcome
        and summary.get("failed") == record.failed
        and summary.get("metrics") == record.metrics
    )


def _why_not(record: ProfileRecord) -> str:
    """Why a record that is not :attr:`ProfileRecord.acceptable` is refused (one line)."""
    if record.outcome == "failed":
        return (
            "its test failed on something else than this profile (another profile's "
            "verdict, or --inferperf-require-pmu), and this profile passed its verdict: a "
            "profile is accepted where it failed its own verdict (a regression, or no "
            "baseline under --inferperf-require-baseline) or its test passed"
        )
    if record.outcome == "skipped":
        return "its test was skipped"
    if not record.outcome:
        return "the record has no test outcome (it was not written by a run's controller)"
    return f"its test's outcome is {record.outcome}"


def plan(outputs: RunOutputs, *, match: str | None = None) -> Plan:
    """The records to accept from ``outputs``: ``match`` (``-k``) keeps the keys that
    contain it. :class:`UsageError` when nothing could ever be accepted."""
    found = [f for f in outputs.found if match is None or match in f.key]
    unmatched = sum(f.record is not None for f in outputs.found) - sum(
        f.record is not None for f in found
    )
    sources = ", ".join(outputs.inputs) or "the inputs"
    if match is not None and not found and outputs.found:
        raise UsageError(
            f"no key in {sources} contains {match!r} (-k): nothing was written. Give a part "
            "of a key as the summary table shows it (test_file.py::test_name)."
        )
    if not any(f.record is not None for f in found):
        if found:  # summaries only
            raise UsageError(
                f"{', '.join(outputs.run_documents)} holds the run's summary of each test, "
                "not the measured profiles a baseline is made of: nothing was written. "
                "Accept the run's report folder (pytest --inferperf-report DIR, kept as "
                "the CI artifact beside the run JSON): inferperf accept DIR."
            )
        raise UsageError(
            f"{sources} holds no record of pytest --inferperf: nothing was written. "
            "Run pytest with --inferperf-report DIR (and keep DIR as the CI artifact), "
            "then inferperf accept DIR."
        )
    by_key: dict[str, list[Found]] = {}
    for f in found:
        by_key.setdefault(f.key, []).append(f)
    in_runs = {f.key for f in outputs.found if f.record is None}
    refused: list[Refusal] = []
    chosen: list[ProfileRecord] = []
    for key, entries in sorted(by_key.items()):
        one = _one_record(key, entries, outputs.run_documents, in_runs)
        if isinstance(one, Refusal):
            refused.append(one)
        else:
            chosen.append(one)
    accepted, kept = _accepted_and_kept(chosen, refused)
    read = sum(1 for f in found if f.record is not None)
    return Plan(
        accepted,
        refused,
        list(outputs.ignored),
        read,
        unmatched,
        outputs.run_documents,
        kept,
    )


def _one_record(
    key: str, entries: list[Found], run_documents: Sequence[str], in_runs: set[str]
) -> ProfileRecord | Refusal:
    """The one measured record of ``key`` among what the outputs hold of it, or why
    there is none to accept (two measurements, a summary only, different runs, a
    record an earlier run left)."""
    records = [f for f in entries if f.record is not None]
    distinct: dict[str, Found] = {}
    for f in records:
        assert f.record is not None
        distinct.setdefault(json.dumps(f.record.to_json(), sort_keys=True), f)
    if len(distinct) > 1:
        first, second = list(distinct.values())[:2]
        return Refusal(
            key,
            f"two different measurements, in {first.source} and {second.source}: "
            "give the outputs of one run",
        )
    if not distinct:
        return Refusal(
            key,
            f"{entries[0].source} holds its summary only, not the measured profile: "
            "give the run's report folder (--inferperf-report) too",
        )
    (mine,) = distinct.values()
    record = mine.record
    assert record is not None
    other = next(
        (f for f in entries if f.record is None and not _same_test(f.summary, record)), None
    )
    if other is not None:
        return Refusal(
            key,
            f"{other.source} and {mine.source} are of different runs (outcome or "
            "metrics differ): give the outputs of one run",
        )
    if run_documents and key not in in_runs:
        return Refusal(
            key,
            f"{mine.source} is not in the run JSON "
            f"({', '.join(run_documents)}): a record an earlier run left "
            "in the folder",
        )
    return record


def _accepted_and_kept(
    chosen: list[ProfileRecord], refused: list[Refusal]
) -> tuple[list[ProfileRecord], list[Refusal]]:
    """The chosen records to accept, and those whose baseline stands (their test failed
    on another profile's verdict); the rest are added to ``refused`` with the reason."""
    failed_keys: dict[str, list[str]] = {}
    for record in chosen:
        if record.failed:
            failed_keys.setdefault(record.nodeid, []).append(record.key)
    accepted, kept = [], []
    for record in chosen:
        others = [k for k in failed_keys.get(record.nodeid, []) if k != record.key]
        if record.acceptable:
            accepted.append(record)
        elif record.outcome == "failed" and others:
            # another profile of the test failed it; this one passed against its baseline,
            # which stands (and is accepted with the other's, making the test pass)
            kept.append(
                Refusal(
                    record.key,
                    f"passed its verdict ({record.baseline_note}); its test failed on the "
                    f"verdict of {', '.join(others)}",
                )
            )
        else:
            refused.append(Refusal(record.key, _why_not(record)))
    return accepted, kept


# -- wording ----------------------------------------------------------------------------
def written_text(done: BaselineWrite, shown: str, *, dry_run: bool = False) -> tuple[bool, str]:
    """One outcome of the write pass as the command line says it: (written, text).

    A written baseline is :func:`report.terminal.record_update_line`'s two lines, the
    plugin's own (``would create``/``would update`` with ``dry_run``)."""
    record = done.record
    if done.status == "shared":
        return False, (
            f"not written: {record.key} and {done.detail} map to the same baseline file; "
            "rename one of the tests"
        )
    if done.status == "partial":
        return False, (
            f"not written {shown}: {done.detail}; the old baseline (if any) is kept. "
            "Raise the marker's timeout= or lower repeat=, run the suite again and "
            "accept that run."
        )
    if done.status == "error":
        return False, done.detail
    from ..report.terminal import record_update_line

    text = record_update_line(shown, done.old, record.to_json())
    if dry_run:
        verb, _, rest = text.partition(" ")
        text = f"would {verb.removesuffix('d')} {rest}"
    return True, text


def busy_text(record: ProfileRecord) -> str | None:
    """The warning for a baseline measured on a busy machine, as the plugin words it."""
    if not record.busy:
        return None
    return (
        f"{record.key}: baseline recorded on a busy machine ({'; '.join(record.busy)}): "
        "its timings read slow, and every later comparison says so; re-record it on a "
        "quiet machine"
    )


def refused_text(refusal: Refusal) -> str:
    return f"not accepted {refusal.key}: {refusal.reason}"
