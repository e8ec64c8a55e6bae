"""The fixtures a test uses: ``pmu_profile`` and ``perf_threads``.

Owns: turning a fixture call into one measurement. Must not: judge or render.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from .. import child_process
from .keys import PROFILES, REMEASURE
from .marker import spec_for
from .operator_pass import with_operator_times
from .session import plugin_of

# Loading this module is what every pytest run pays once the package is installed,
# with or without --inferperf: it imports pytest and the standard library only. The
# engine (numpy, ONNX Runtime, counters, judging) is imported inside the hooks that
# need it, and only when --inferperf asks for it or a test uses pmu_profile.
if TYPE_CHECKING:
    from ..budgets import PerfSpec
    from ..profile import Profile


@pytest.fixture
def pmu_profile(request: pytest.FixtureRequest) -> Callable[..., Profile]:
    """Measure a workload: ``pmu_profile(fn, *args, name=None, **kwargs) -> Profile``.

    With ``--inferperf`` the workload is warmed until steady and counted over
    the marker's repeats; without it, it runs once as a smoke call and no
    budget is checked. Call it more than once with ``name=`` to profile variants.
    """
    from ..runner import profile, smoke

    plugin = plugin_of(request.config)
    settings = plugin.settings
    spec = spec_for(request.node)
    recorded = request.node.stash.setdefault(PROFILES, [])

    def run(fn: Callable[..., Any], *args: Any, name: str | None = None, **kwargs: Any) -> Profile:
        variant = name or ""
        call = functools.partial(fn, *args, **kwargs)
        if child_process.in_child():  # re-run of this test under valgrind: judge nothing
            from ..pmu import simulate

            return simulate.child_measure(
                call, name=variant or None, settings=_run_settings(spec), nodeid=request.node.nodeid
            )
        if any(existing == variant for existing, *_ in recorded):
            raise pytest.UsageError(
                f"{request.node.nodeid}: pmu_profile was called twice with "
                f"{'no name' if not variant else f'name={variant!r}'}; give each call its own "
                "name= so each gets its own baseline"
            )
        if not settings.enabled:
            return smoke(fn, *args, name=variant or None, **kwargs)
        options = {k: v for k, v in spec.runner.items() if k != "threads"}
        if "pin" not in options and settings.worker_index is not None:
            cpus = sorted(os.sched_getaffinity(0))
            options["pin"] = cpus[settings.worker_index % len(cpus)]
        backend = _backend(settings.backend, request.config)
        from ..progress import ProgressCounters, ticking

        line = plugin.live_line(request.node, variant)
        try:
            if backend == "simulate":
                from ..pmu import simulate

                reason = simulate.available()
                if reason:
                    pytest.skip(f"inferperf: the simulate backend is {reason}")
                line.phase("simulating: native run, then the region under valgrind")
                # the marker's timeout= bounds the child too
                limit = (
                    {"timeout": float(spec.runner["timeout"])} if "timeout" in spec.runner else {}
                )
                with ticking(line):
                    result = simulate.profile_via_child(
                        request.node.nodeid,
                        variant or None,
                        rootdir=request.config.rootpath,
                        settings=_run_settings(spec),
                        native=call,
                        name=variant or request.node.name,
                        shared=plugin.shared_child(request.node),
                        mode=simulate.mode_for(simulate.spec_metrics(spec)),
                        run_twice=settings.update,
                        **limit,
                    )
            else:
                from ..pmu import make_backend

                measure = functools.partial(
                    profile,
                    fn,
                    *args,
                    name=variant or request.node.name,
                    backend=backend,
                    **options,
                    **kwargs,
                )
                line.phase("warm-up")
                counters = ProgressCounters(
                    make_backend(backend), _run_settings(spec).repeat, line.phase
                )
                result = measure(backend=counters)
                request.node.stash.setdefault(REMEASURE, {})[variant] = measure
            if "onnxruntime" in sys.modules:
                line.phase("operator times (ONNX Runtime profiler)")
            result = with_operator_times(result, call)
        finally:
            line.done()
        if result.model is None and "onnxruntime" in sys.modules:
            from ..identity import model_of_call

            result = result.with_(model=model_of_call(call))
        recorded.append((variant, result, call))
        return result

    return run


def _run_settings(spec: PerfSpec) -> Any:
    """The marker's runner overrides as the runner's settings (threads is the session's)."""
    from ..runner import RunSettings, normalise_pin

    options = {k: v for k, v in spec.runner.items() if k not in ("threads", "pin")}
    options.setdefault("warmup_max", max(RunSettings.warmup_max, options.get("warmup", 0)))
    return RunSettings(**options, pin=normalise_pin(spec.runner.get("pin")))


def _backend(choice: str, config: pytest.Config) -> str:
    """The backend ``auto`` stands for: perf, or simulate only where the ini asks for it."""
    if choice != "auto":
        return choice
    from ..pmu.perf_event import syscall_number

    try:
        syscall_number()
    except OSError:
        return "none"
    if config.getini("inferperf_simulate_without_pmu") and not _has_hardware_counters():
        return "simulate"
    return "perf"


@functools.lru_cache(maxsize=1)
def _has_hardware_counters() -> bool:
    from ..machine import this_cpu
    from ..pmu.events import resolve
    from ..pmu.perf_backend import probe_event

    cpu = this_cpu()
    for event in resolve(["cycles", "instructions"], cpu).events.get("instructions", ()):
        if probe_event(event, exclude_kernel=True, paranoid=cpu.paranoid) is None:
            return True
    return False


@pytest.fixture
def perf_threads(request: pytest.FixtureRequest) -> int:
    """The intra-op thread count the ``perf`` marker asks for (``threads=``; default 1)."""
    return int(spec_for(request.node).runner.get("threads", 1))
