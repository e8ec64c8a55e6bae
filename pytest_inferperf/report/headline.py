"""The metrics a reader looks at first: one list for every renderer.

Owns: :data:`HEADLINE`, the headline metrics in the order they are shown, each with
its column title, its scale in the summary table and the views it appears in: the
run's terminal / HTML table (``table``; ``optional`` columns only where some test has
a value), the Markdown summary (``summary``), the one-cell change against the baseline
(``mover``: the largest move among these is named), the "updated <baseline>" line
(``update``) and the columns added to pytest-html's table (``pytest-html``); and the
diagnosis in a few words (:func:`diagnosis_headline`, the "diagnosis" cell): the primary
finding, how sure, and what its events can cost where that was estimated.

Must not: compute metrics, judge (``classify`` estimated the cost) or format numbers
(:mod:`..core.numbers` does).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..diagnose.classify import Diagnosis, Finding


@dataclass(frozen=True)
class Headline:
    metric: str
    title: str
    views: frozenset[str]
    scale: float = 1.0
    optional: bool = False  # a table column only where some test has a value


def _h(metric: str, title: str, views: str, scale: float = 1.0, optional: bool = False):
    return Headline(metric, title, frozenset(views.split()), scale, optional)


HEADLINE = (
    _h("latency_p50_ms", "p50 ms", "table summary update pytest-html"),
    _h("latency_p99_ms", "p99 ms", "table summary update"),
    _h("latency_mean_ms", "mean ms", "summary mover"),
    _h("cpu_ms_per_call", "CPU ms/call", "table summary mover update pytest-html"),
    # Counted work: a PMU, or the simulate backend.
    _h("instructions_per_call", "M instr/call", "table mover", 1e-6, optional=True),
    _h("ipc", "IPC", "table summary mover update"),
    _h("l1_miss", "L1D miss", "table summary mover update"),
    _h("l2_miss", "L2 miss", "mover"),
    _h("branch_miss", "branch miss", "mover"),
    # The region's growth above its starting RSS: the same whatever ran before it (the
    # absolute peak, peak_rss_mb, is in the JSON and budgets may name it).
    _h("rss_growth_mb", "+RSS MiB", "table summary"),
    _h("peak_rss_mb", "peak RSS MiB", "summary update"),
)


def headline(view: str) -> tuple[Headline, ...]:
    """The headline metrics shown in ``view``, in order."""
    return tuple(h for h in HEADLINE if view in h.views)


def names(view: str) -> tuple[str, ...]:
    return tuple(h.metric for h in headline(view))


def finding_headline(finding: Finding) -> str:
    """``page-fault / allocator overhead, up to 35% of the call: 42 page faults x <=10 µs
    / 1.2 ms CPU time per call``: the title, and the estimated cost where there is one."""
    if finding.cost is None:
        return finding.title
    return f"{finding.title}, {finding.cost.text}"


def diagnosis_headline(diagnosis: Diagnosis | None) -> str:
    """The diagnosis cell: ``L1D residency (working set spills L1 data cache) (72%)``,
    with the primary finding's estimated share of the call after its confidence
    (``page-fault / allocator overhead (98%), up to the whole call``; "" for none).

    Only material findings can be primary; those too small to matter are in the
    full reasoning (``Diagnosis.small``), never here."""
    if diagnosis is None or diagnosis.primary is None:
        return ""
    primary = diagnosis.primary
    head = f"{primary.title} ({primary.confidence:.0%})"
    # the share alone fits a table cell; the formula is in the failure block and -v
    return head if primary.cost is None else f"{head}, {primary.cost.text.split(':')[0]}"
