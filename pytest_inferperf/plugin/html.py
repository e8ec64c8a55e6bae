"""pytest-html integration: the inferperf columns, the stage tables and embedded flamegraphs.

Owns: pytest-html's hooks' cells and extras. Must not: judge or measure.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

# Loading this module is what every pytest run pays once the package is installed,
# with or without --inferperf: it imports pytest and the standard library only. The
# engine (numpy, ONNX Runtime, counters, judging) is imported inside the hooks that
# need it, and only when --inferperf asks for it or a test uses pmu_profile.
if TYPE_CHECKING:
    from ..diagnose.assessment import Assessment as Verdict


def html_extras(item: pytest.Item, report: pytest.TestReport, verdicts: list[Verdict]) -> None:
    """The ``region()`` stages and the flamegraphs in pytest-html's report.

    Each profile's stages are a table (ms per call, share of the call, against the
    baseline), for passing tests too. Flamegraphs are embedded, and linked relative to the
    report: embedded SVG survives an upload of the report alone as a CI artifact; the link
    is relative to the report's folder, so it works wherever report and flamegraphs travel
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
    import html as escape

    from ..report.html import stages_html

    folder = Path(config.invocation_params.dir, htmlpath).parent
    extras = getattr(report, "extras", [])
    for verdict in verdicts:
        stages = [row.to_dict() for row in verdict.stages]
        if stages:
            extras.append(
                pytest_html.extras.html(
                    f"<p><b>{escape.escape(verdict.key)}: stages</b></p>{stages_html(stages)}"
                )
            )
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
    report.extras = extras  # type: ignore[attr-defined]  # pytest-html reads the extras


def _columns() -> tuple[tuple[str, str], ...]:
    """The headline metrics pytest-html's table shows (report.headline, view pytest-html)."""
    from ..report.headline import headline

    return tuple((h.metric, h.title) for h in headline("pytest-html"))


def html_table_header(cells: list[str]) -> None:
    """pytest-html: the inferperf columns after the test name."""
    import html as escape

    titles = [*(title for _, title in _columns()), "vs baseline"]
    cells[2:2] = [f'<th class="sortable">{escape.escape(t)}</th>' for t in titles]


def html_table_row(report: pytest.TestReport, cells: list[str]) -> None:
    """pytest-html: this test's inferperf values (empty cells for other tests)."""
    import html as escape

    from ..core.numbers import number
    from ..report.records import ProfileRecord

    records = [ProfileRecord.from_json(e) for e in getattr(report, "inferperf", None) or []]
    values = []
    for metric, _ in _columns():
        found = [r.metrics[metric] for r in records if metric in r.metrics]
        values.append(" / ".join(number(n) for n in found))
    values.append("; ".join(r.change for r in records))
    cells[2:2] = [f"<td>{escape.escape(v)}</td>" for v in values]
