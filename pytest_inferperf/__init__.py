"""pytest-inferperf: why your CPU inference got slower, from the CPU's counters.

The public API; everything else may move.
"""

from .pmu.base import Count, CounterSample, EventStatus
from .profile import Profile, ProfileFormatError
from .runner import MeasurementTimeout, RunnerConfigError, profile
from .stages import region

__all__ = [
    "Count",
    "CounterSample",
    "EventStatus",
    "MeasurementTimeout",
    "Profile",
    "ProfileFormatError",
    "RunnerConfigError",
    "profile",
    "region",
]
__version__ = "0.1.0"
