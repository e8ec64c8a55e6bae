"""pytest-inferperf: why your CPU inference got slower, from the CPU's counters.

The public API; everything else may move. Names are imported on first use
(PEP 562), so that pytest loading the plugin in a suite that never asks for
``--inferperf`` pays for nothing but the plugin's hooks.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .core.profile import Profile as Profile
    from .core.profile import ProfileFormatError as ProfileFormatError
    from .measure.runner import MeasurementTimeout as MeasurementTimeout
    from .measure.runner import RunnerConfigError as RunnerConfigError
    from .measure.runner import profile as profile
    from .measure.stages import region as region
    from .pmu.base import Count as Count
    from .pmu.base import CounterSample as CounterSample
    from .pmu.base import EventStatus as EventStatus

_PUBLIC = {
    "Count": ".pmu.base",
    "CounterSample": ".pmu.base",
    "EventStatus": ".pmu.base",
    "MeasurementTimeout": ".measure.runner",
    "Profile": ".core.profile",
    "ProfileFormatError": ".core.profile",
    "RunnerConfigError": ".measure.runner",
    "profile": ".measure.runner",
    "region": ".measure.stages",
}

__all__ = [*sorted(_PUBLIC), "__version__"]


class _Package(types.ModuleType):
    """The package module: a submodule never hides a public name it shares.

    ``pytest_inferperf.core.profile`` is both a submodule (the Profile model) and the
    public function ``profile()``; importing the submodule must not rebind the name.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _PUBLIC and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from .core.version import version

        return version()
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # Not cached in this namespace: the submodule in sys.modules is the one the engine
    # uses, also after a harness (pytester's in-process runs) has put sys.modules back.
    return getattr(importlib.import_module(module, __name__), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
