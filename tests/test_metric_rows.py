"""A metric's facts live on its row (``core.metrics.METRICS``) and nowhere else.

Every fact the product keeps about a metric (unit, better direction, tolerance,
absolute floor, whether it gates, its clock, its words, its short title, the category
it points to, its cost, the levels beneath it, its export unit) is a field of
:class:`core.metrics.Metric`; the modules that use a fact read it from the row. The
last tests scan the package: no module besides ``core/metrics.py`` keeps a table keyed
by metric names.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pytest_inferperf.core.metrics import METRICS
from pytest_inferperf.diagnose.thresholds_by_core import CATEGORIES
from pytest_inferperf.pmu.events import SOFTWARE_EVENTS

PACKAGE = Path(__file__).resolve().parent.parent / "pytest_inferperf"


@pytest.mark.parametrize("name", sorted(METRICS))
def test_every_row_carries_its_facts(name: str) -> None:
    row = METRICS[name]
    assert row.name == name
    assert row.better in ("higher", "lower")
    assert row.description and row.source
    # a tolerance is on every row: none falls back silently (the fallback is for the
    # metrics hooks add, which have no row)
    assert 0 < row.tolerance < 1
    assert row.floor >= 0
    assert row.clock in (None, "cpu", "wall")
    assert row.points_to is None or row.points_to in CATEGORIES
    assert not (row.symptom and row.points_to), "a symptom never points to a cause"
    if row.cost is not None:
        assert row.cost.source and row.points_to is not None
        assert row.cost.kind in (
            "event_us",
            "mpki_cycles",
            "cycle_fraction",
            "instructions",
            "ipc",
            "utilisation",
        )
    assert all(METRICS[b].unit == row.unit == "MPKI" for b in row.beneath)


def test_a_timing_has_a_clock_and_words() -> None:
    clocks = {n: m.clock for n, m in METRICS.items() if m.clock}
    assert clocks == {
        "cpu_ms_per_call": "cpu",
        "cycles_per_call": "cpu",
        "latency_mean_ms": "wall",
        "latency_p50_ms": "wall",
        "latency_p95_ms": "wall",
        "latency_p99_ms": "wall",
        "latency_tail_ratio": "wall",
    }
    assert all(METRICS[n].label for n in clocks)
    assert METRICS["cpu_ms_per_call"].said == "CPU time"
    assert METRICS["ipc"].said == "ipc"  # no label: its name


def test_what_gates_by_default_follows_its_rule() -> None:
    # Gated by default: metrics counted by a PMU (judged on per-repeat distributions, so
    # noise alone rarely trips them) and the time a call costs (CPU time, mean latency);
    # software-event rates, percentiles, tails and memory only when a test names them.
    # perf's footer (the rusage of user and sys time) is software too.
    software = {*SOFTWARE_EVENTS, "user_time", "sys_time"}
    rule = {n for n, m in METRICS.items() if any(e not in software for e in m.inputs)} | {
        "cpu_ms_per_call",
        "latency_mean_ms",
    }
    assert {n for n, m in METRICS.items() if m.gates} == rule


def test_the_cache_levels_beneath_nest() -> None:
    assert METRICS["l1d_mpki"].beneath == ("l2_mpki", "llc_mpki")
    assert METRICS["l2_mpki"].beneath == ("llc_mpki",)


def test_the_exported_metrics_are_the_rows_with_an_export_unit() -> None:
    from pytest_inferperf.report.run import TREND_METRICS

    assert set(TREND_METRICS) == {n for n, m in METRICS.items() if m.export_unit}


def test_the_views_kept_for_other_modules_agree_with_the_rows() -> None:
    """Names other modules still import are built from the rows, or (pending, see
    ``PENDING``) must agree with them."""
    from pytest_inferperf.diagnose.assessment import GATED_METRICS
    from pytest_inferperf.judge import noise
    from pytest_inferperf.judge.comparison import DEFAULT_TOLERANCES

    assert {n: m.tolerance for n, m in METRICS.items()} == DEFAULT_TOLERANCES
    assert {n for n, m in METRICS.items() if m.gates} == GATED_METRICS
    assert all(noise.clock_of(n) == m.clock for n, m in METRICS.items())
    assert all(noise._what(n) == m.said for n, m in METRICS.items())


# -- no metric-keyed table outside core/metrics.py -------------------------------------

#: Dicts keyed by metric names that are declarative data, not a fact of the metric.
ALLOWED = {
    # the names perf stat prints for its own top-down level 1, mapped to ours: a fact of
    # perf's output format, read when ingesting it
    ("ingest/perf_stat.py", "_TOPDOWN_NAMES"),
}
#: Metric facts still kept outside their rows in a module this change did not own: each
#: must go (read the row instead); until then the test above holds them equal to the rows.
PENDING: set[tuple[str, str]] = set()


def _metric_keyed_dicts(path: Path) -> list[tuple[str, int]]:
    """``(owner, line)`` of each dict literal in ``path`` with two or more string keys that
    are metric names. ``owner`` is the name it is assigned to, else the enclosing
    function. A dict whose keys are all diagnosis categories is keyed by category (some
    categories share a name with a top-down metric)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, owner: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = owner
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = child.name
            elif isinstance(child, (ast.Assign, ast.AnnAssign)):
                targets = child.targets if isinstance(child, ast.Assign) else [child.target]
                name = next((t.id for t in targets if isinstance(t, ast.Name)), owner)
            if isinstance(child, ast.Dict):
                keys = [k.value for k in child.keys if isinstance(k, ast.Constant)]
                strings = [k for k in keys if isinstance(k, str)]
                metric_keys = [k for k in strings if k in METRICS]
                by_category = all(k in CATEGORIES for k in strings)
                if len(metric_keys) >= 2 and not by_category:
                    found.append((owner, child.lineno))
            visit(child, name)

    visit(tree, "<module>")
    return found


def _package_tables() -> set[tuple[str, str]]:
    tables = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == "core/metrics.py":
            continue
        tables |= {(rel, owner) for owner, _line in _metric_keyed_dicts(path)}
    return tables


def test_the_scan_finds_a_metric_keyed_table(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        'UNITS = {"ipc": "", "l1d_mpki": "MPKI"}\n'
        'TITLES = {"retiring": "compute-bound", "backend_bound": "backend"}\n'
        "def f(m):\n"
        '    return {"cpu_ms_per_call": "CPU", "latency_p50_ms": "p50"}.get(m)\n'
    )
    assert _metric_keyed_dicts(sample) == [("UNITS", 1), ("f", 4)]


def test_no_module_outside_core_metrics_keeps_a_metric_keyed_table() -> None:
    tables = _package_tables()
    assert tables - ALLOWED - PENDING == set(), "read the fact from core.metrics' row"
    # an allowance that no longer matches anything is removed
    assert tables >= (ALLOWED | PENDING)
