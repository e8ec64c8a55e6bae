"""The controller's ``--update-baselines`` pass at the end of a run.

Owns: the new baselines' timings over ``--inferperf-baseline-processes`` processes
(this one's and fresh processes' measurements of every test to be written), wording
each outcome of the store's write pass (:func:`judge.baseline_store.write_pass`) for
the terminal as it happens, and what was written when Ctrl-C stops the pass. Must not:
write baseline files itself (the store does), judge, or import the engine at module
level (the plugin loads with every pytest run).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import TYPE_CHECKING

import pytest

from .context import relative
from .options import Settings

if TYPE_CHECKING:
    from ..core.profile import Profile
    from ..report.records import ProfileRecord


def over_processes(
    config: pytest.Config,
    settings: Settings,
    records: list[ProfileRecord],
    warnings: list[str],
) -> list[ProfileRecord]:
    """``records`` with the new baselines' timings over ``--inferperf-baseline-processes``
    processes: this one's and those of fresh processes, each running every test to be
    written (one start-up per process, not per test); where they fail, this one's alone."""
    count = settings.baseline_processes - 1
    if settings.backend == "simulate":
        return records  # simulated counts repeat to 0.1% whatever the process
    wanted = [
        r
        for r in records
        if r.ran_clean and r.backend != "simulate" and not r.profile.get("partial")
    ]
    if count < 1 or not wanted:
        return records
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
            config, nodeids, backend, count, repeats=BASELINE_PROCESS_REPEATS
        )
        processes += got
    if failed:
        warnings.append(
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
    if not updated:
        return records
    return [replace(r, profile=updated[id(r)]) if id(r) in updated else r for r in records]


def write_baselines(
    config: pytest.Config,
    settings: Settings,
    records: list[ProfileRecord],
    written: list[str],
    write_errors: list[str],
    warnings: list[str],
) -> None:
    """The baseline write pass (the store's), each outcome told as it happens."""
    from ..judge.baseline_store import write_pass
    from ..report.terminal import record_update_line

    for done in write_pass(records, settings.baselines):
        record = done.record
        shown = relative(done.path, config) if done.path is not None else ""
        if done.status == "shared":
            write_errors.append(
                f"not written: {record.key} and {done.detail} map to the same "
                "baseline file; rename one of the tests"
            )
        elif done.status == "partial":
            write_errors.append(
                f"not written {shown}: {done.detail}; the old baseline "
                "(if any) is kept. Raise the marker's timeout= or lower repeat=, then run "
                "--update-baselines again."
            )
        elif done.status == "error":
            write_errors.append(done.detail)
        else:
            written.append(record_update_line(shown, done.old, record.to_json()))
            if record.busy:
                warnings.append(
                    f"{record.key}: baseline recorded on a busy machine "
                    f"({'; '.join(record.busy)}): its timings read slow, and every later "
                    "comparison says so; re-record it on a quiet machine"
                )


def say_written_on_interrupt(
    config: pytest.Config, written: list[str], write_errors: list[str]
) -> None:
    """Ctrl-C in the write pass: what was written, before the interrupt goes on."""
    from ..report.terminal import clean, written_lines

    terminal = config.pluginmanager.getplugin("terminalreporter")
    lines = [
        *(line for entry in written for line in written_lines(entry)),
        *(clean(f"ERROR {e}") for e in write_errors),
        clean(
            f"interrupted: {len(written)} baseline(s) written before the interrupt; "
            "every other baseline is as it was (each write is atomic)"
        ),
    ]
    for line in lines:
        if terminal is not None:
            terminal.write_line(line)
        else:
            sys.stderr.write(line + "\n")
