"""Talking to the CPU: identification, the event catalogue, counter backends.

``make_backend`` picks a counter backend by name (``perf`` or ``none``, what the
Runner counts with in this process); everything else imports from the
submodules. The simulate backend (``simulate*`` modules) measures in a valgrind
child instead and is reached through ``pytest_inferperf.measure.measurer``.
"""

from __future__ import annotations

from collections.abc import Sequence

from .base import CounterBackend, CountersError
from .events import DEFAULT_EVENTS

BACKENDS = ("perf", "none")


def make_backend(name: str = "perf", events: Sequence[str] = DEFAULT_EVENTS) -> CounterBackend:
    """A counter backend by name: ``perf`` (perf_event_open) or ``none``."""
    if name in ("perf", "perf_event", "auto"):
        from .perf_backend import PerfEventCounters

        return PerfEventCounters(events=events)
    if name == "none":
        from .null_backend import NullCounters

        return NullCounters(events=events)
    raise CountersError(f"unknown counter backend {name!r}: choose one of {', '.join(BACKENDS)}")
