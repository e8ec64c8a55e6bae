"""The names from before the Assessment, kept so existing imports keep working.

Owns: nothing of its own. ``Verdict`` is :class:`assessment.Assessment`, ``judge`` is
:func:`assessment.assess`; the failure text and the summary cell are
:mod:`report.verdict`'s.

Must not: grow code: judging lives in :mod:`.assessment`, rendering in :mod:`.report`.
"""

from __future__ import annotations

from .assessment import GATED_METRICS, Assessment, with_confirmation
from .assessment import assess as judge
from .report.headline import names as _names
from .report.verdict import change_summary, failure_text

Verdict = Assessment
HEADLINE_METRICS = _names("mover")

__all__ = [
    "GATED_METRICS",
    "HEADLINE_METRICS",
    "Verdict",
    "change_summary",
    "failure_text",
    "judge",
    "with_confirmation",
]
