"""How a partial run (stopped at its timeout) is named wherever it is shown.

Owns: :func:`partial_label`, ``partial (54/200 repeats, timeout 2 s)``, built from a
serialised Profile (the plain dict that travels from xdist workers), so the terminal
table, the summary, the run JSON and the junit properties all say the same words.

Must not: decide anything about a partial run (it is never written as a baseline nor
cached: the plugin and the CLI cache check ``partial`` themselves).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def partial_label(profile: Mapping[str, Any] | None) -> str | None:
    """``partial (54/200 repeats, timeout 2 s)`` for a partial profile, else None."""
    if not isinstance(profile, Mapping) or not profile.get("partial"):
        return None
    repeats = profile.get("repeats")
    done = len(repeats) if isinstance(repeats, list | tuple) else "?"
    settings = profile.get("settings")
    settings = settings if isinstance(settings, Mapping) else {}
    planned = settings.get("repeat")
    planned = planned if isinstance(planned, int) and not isinstance(planned, bool) else "?"
    timeout = settings.get("timeout")
    if (
        isinstance(timeout, int | float)
        and not isinstance(timeout, bool)
        and math.isfinite(timeout)
    ):
        limit = f"timeout {timeout:g} s"
    else:
        limit = "stopped early"
    return f"partial ({done}/{planned} repeats, {limit})"
