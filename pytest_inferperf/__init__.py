"""pytest-inferperf: why your CPU inference got slower, from the CPU's counters.

The public API; everything else may move.
"""

from .pmu.base import Count, CounterSample, EventStatus

__all__ = ["Count", "CounterSample", "EventStatus"]
__version__ = "0.1.0"
