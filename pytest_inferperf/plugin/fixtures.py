"""The fixtures a test uses: ``pmu_profile`` and ``perf_threads``.

Owns: turning a fixture call into one ``measure()`` call of the test's measurer
(measuring.measurer_of) and recording the profile and its re-measure for the
session object. Must not: measure, judge or render; know which measurer runs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from ..measure import child_process
from .keys import PROFILES, REMEASURE
from .marker import spec_for
from .measuring import measurer_of
from .session import plugin_of

# Loading this module is what every pytest run pays once the package is installed,
# with or without --inferperf: it imports pytest and the standard library only. The
# engine (numpy, ONNX Runtime, counters, judging) is imported inside the hooks that
# need it, and only when --inferperf asks for it or a test uses pmu_profile.
if TYPE_CHECKING:
    from ..core.profile import Profile
    from ..judge.budgets import PerfSpec


@pytest.fixture
def pmu_profile(request: pytest.FixtureRequest) -> Callable[..., Profile]:
    """Measure a workload: ``pmu_profile(fn, *args, name=None, **kwargs) -> Profile``.

    With ``--inferperf`` the workload is warmed until steady and counted over
    the marker's repeats; without it, it runs once as a smoke call and no
    budget is checked. Call it more than once with ``name=`` to profile variants.
    """
    from ..measure.measurer import SimulateUnavailable

    plugin = plugin_of(request.config)
    spec = spec_for(request.node)
    measurer = measurer_of(request.node)
    recorded = request.node.stash.setdefault(PROFILES, [])

    def run(fn: Callable[..., Any], *args: Any, name: str | None = None, **kwargs: Any) -> Profile:
        variant = name or ""
        call = functools.partial(fn, *args, **kwargs)
        if any(existing == variant for existing, *_ in recorded):
            raise pytest.UsageError(
                f"{request.node.nodeid}: pmu_profile was called twice with "
                f"{'no name' if not variant else f'name={variant!r}'}; give each call its own "
                "name= so each gets its own baseline"
            )
        settings = _run_settings(spec)
        again = functools.partial(measurer.measure, call, name=name or None, settings=settings)
        line = plugin.live_line(request.node, variant)
        try:
            result = again(progress=line)
        except SimulateUnavailable as exc:
            pytest.skip(f"inferperf: the simulate backend is {exc.reason}")
        finally:
            line.done()
        request.node.stash.setdefault(REMEASURE, {})[variant] = again
        recorded.append((variant, result, call))
        return result

    return run


def _run_settings(spec: PerfSpec) -> Any:
    """The marker's runner overrides as the runner's settings (threads is the session's)."""
    from ..measure.runner import RunSettings, normalise_pin

    options = {k: v for k, v in spec.runner.items() if k not in ("threads", "pin")}
    options.setdefault("warmup_max", max(RunSettings.warmup_max, options.get("warmup", 0)))
    fewer = child_process.process_value_repeats()  # a new baseline's fresh process
    if fewer is not None:
        options["repeat"] = min(int(options.get("repeat", RunSettings.repeat)), fewer)
    return RunSettings(**options, pin=normalise_pin(spec.runner.get("pin")))


@pytest.fixture
def perf_threads(request: pytest.FixtureRequest) -> int:
    """The intra-op thread count the ``perf`` marker asks for (``threads=``; default 1)."""
    return int(spec_for(request.node).runner.get("threads", 1))
