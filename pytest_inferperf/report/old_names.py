"""The names from before the Assessment, kept so existing imports keep working.

Owns: nothing of its own. ``Verdict`` is :class:`diagnose.assessment.Assessment`, ``judge`` is
:func:`diagnose.assessment.assess`; the failure text and the summary cell are
:mod:`verdict`'s.

Must not: grow code: judging lives in :mod:`..diagnose.assessment`, rendering in :mod:`.`.
"""

from __future__ import annotations

from ..diagnose.assessment import GATED_METRICS, Assessment, with_confirmation
from ..diagnose.assessment import assess as judge
from .headline import names as _names
from .verdict import change_summary, failure_text

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
