"""Drive a (possibly hostile) serialised Profile through every path that reads one.

Used by the fuzz tests: a document is written as a baseline file and as a report.json,
then loaded the way the plugin and the CLI load them, judged both ways against a valid
profile, rendered by every renderer (terminal table, failure text, update line, run JSON,
Markdown, HTML, text report) and passed to ``inferperf validate`` and ``inferperf
compare``. Whatever the document holds, the only outcomes allowed are: refused with a
clear error naming the file, or accepted and then judged and rendered without an
exception.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pytest_inferperf.cli.main import build_parser, run
from pytest_inferperf.core.profile import Profile
from pytest_inferperf.judge.baseline_store import BaselineError, load_baseline
from pytest_inferperf.judge.budgets import parse_marker
from pytest_inferperf.report.verdict import record_of

RICH = Path(__file__).parent / "fixtures" / "profiles" / "rich_profile.json"
SPEC = parse_marker(
    (), {"tolerance": 0.5, "latency_p50_ms_max": 1000.0, "peak_rss_mb_max": 100000.0}
)

#: Values a hostile file may hold where a field should be (JSON-encodable).
HOSTILE = [
    None,
    True,
    False,
    0,
    -1,
    1,
    -7,
    2**63,
    -(2**63),
    10**400,
    0.0,
    -0.0,
    5e-324,
    -5e-324,
    1e308,
    -1e308,
    1e-300,
    0.5,
    "",
    "x",
    "1",
    "\x1b[31mred\x1b[0m\r\n\x00",
    "\u202e",
    [],
    [None],
    [[]],
    {},
    {"": None},
    {"name": 3},
    "a" * 3000,
]


def paths(doc: Any, prefix: tuple = ()) -> Iterator[tuple]:
    """Every path (tuple of keys / indices) into ``doc``, the root excluded."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield (*prefix, key)
            yield from paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for index, value in enumerate(doc[:3]):  # the first few of each list
            yield (*prefix, index)
            yield from paths(value, (*prefix, index))


def mutate(doc: Any, path: tuple, value: Any, *, delete: bool = False) -> Any:
    """A copy of ``doc`` with ``path`` set to ``value`` (or removed)."""
    copy = json.loads(json.dumps(doc))
    target = copy
    for key in path[:-1]:
        target = target[key]
    if delete:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return copy


def dumps(doc: Any) -> str:
    """JSON text; the marker float 7.25e301 is written as 1e400 (too big for a double)."""
    return json.dumps(doc).replace("7.25e+301", "1e400")


OVERFLOW = 7.25e301  # written as 1e400 by dumps()


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        yield


def drive(text: str, folder: Path, *, cli: bool = True) -> str:
    """Every path on ``text`` as a file; returns "refused" or "accepted". Raises on a crash."""
    from pytest_inferperf.diagnose.assessment import assess as judge
    from pytest_inferperf.report.html import render_html, render_run_html
    from pytest_inferperf.report.run import run_document, run_markdown
    from pytest_inferperf.report.terminal import record_update_line, render_summary
    from pytest_inferperf.report.verdict import failure_text

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "baseline.json"
    path.write_text(text, encoding="utf-8")
    valid = Profile.load(RICH)
    try:
        loaded = load_baseline(path)
    except BaselineError as exc:
        assert str(path) in str(exc)
        outcome = "refused"
    else:
        assert loaded is not None
        outcome = "accepted"
        records = []
        for current, baseline in ((valid, loaded), (loaded, valid), (loaded, None)):
            note = "baseline x" if baseline is not None else "no baseline"
            verdict = judge("t.py::test", current, SPEC, baseline=baseline, baseline_note=note)
            failure_text(verdict)
            record = {**record_of(verdict), "nodeid": "t.py::test", "outcome": "passed"}
            json.dumps(record, allow_nan=False)
            records.append(record)
            record_update_line("baselines/x/t.json", baseline, record)
        render_summary(records, [], [], [], update=True)
        run_document(records, commit=None)
        run_markdown(records)
        render_run_html(records, title="t")
        from pytest_inferperf.diagnose.assessment import assess_profile
        from pytest_inferperf.report.text import render_profile

        render_html([assess_profile(valid), assess_profile(loaded)], title="t")
        render_html(assess_profile(loaded), title="t")
        render_profile(assess_profile(loaded))
    if cli:
        with _quiet():
            codes = [run(args) for args in _commands(str(folder))]
        assert all(code in (0, 1, 2) for code in codes), codes
        if outcome == "refused":
            assert codes == [2, 2, 2], codes
    return outcome


@functools.lru_cache(maxsize=8)
def _commands(folder: str) -> list:
    """``validate`` both ways and ``compare``, parsed once per folder (the files change)."""
    target, baseline = Path(folder) / "target.json", Path(folder) / "baseline.json"
    target.write_text(RICH.read_text(encoding="utf-8"), encoding="utf-8")
    parser = build_parser()
    return [
        parser.parse_args(argv)
        for argv in (
            ["validate", str(target), "--baseline", str(baseline)],
            ["validate", str(baseline), "--baseline", str(target)],
            ["compare", str(target), str(baseline), "--out", str(Path(folder) / "out")],
        )
    ]


def finite_or_none(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isfinite(value))


def baseline_files(folder: Path) -> Iterator[Path]:
    """The baseline files under ``folder``, in path order, without their sidecars
    (``<name>~detail.json``, written beside each)."""
    return iter(
        sorted(p for p in Path(folder).rglob("*.json") if not p.name.endswith("~detail.json"))
    )
