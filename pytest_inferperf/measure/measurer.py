"""Measuring a workload: one seam for every way of measuring it.

Owns: the :class:`Measurer` protocol, ``measure(call, *, name, settings,
progress=None) -> Profile``, and its implementations, chosen once per test by
:func:`measurer_for`:

* :class:`NativeMeasurer` - the Runner with a counter backend (``perf``:
  perf_event on every thread, or ``none``), saying "repeat k/n" as it goes
  (progress.ProgressCounters);
* :class:`SimulateMeasurer` - a native run for the timings, then the region
  under valgrind in a child (simulate.parent), in the session's shared
  child where one serves it;
* :class:`ChildMeasurer` - inside that valgrind child: the region measured for
  the parent (simulate.child); the Profile it returns is never judged;
* :class:`SmokeMeasurer` - without ``--inferperf``: one uncounted call.

Which measurer a backend gets is its row in :mod:`.backends` (the one list of
backends); this module says what ``auto`` stands for (:func:`backend_for`: perf,
none where perf_event_open does not exist, or simulate where asked for and no
hardware counter opens) and adds the operator pass and model identity every
counted profile gets (:func:`.operator_pass.with_operator_pass`, one pass for every
front-end). "The simulate backend cannot run here" is
:class:`SimulateUnavailable`, carrying the reason.

Must not: import pytest (the plugin and the CLI both use it), judge or render.
Callers make one ``measure()`` call and never branch on which measurer runs.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from . import child_process
from .backends import has_hardware_counters, stands_for
from .simulate.protocol import SimulateUnavailable

if TYPE_CHECKING:
    from ..core.profile import Profile
    from ..judge.budgets import PerfSpec
    from ..pmu.base import CounterBackend
    from .backends import Backend
    from .runner import RunSettings
    from .simulate.shared import SharedChildren

__all__ = [
    "ChildMeasurer",
    "MeasureOptions",
    "Measurer",
    "NativeMeasurer",
    "Progress",
    "SimulateMeasurer",
    "SimulateUnavailable",
    "SmokeMeasurer",
    "backend_for",
    "has_hardware_counters",
    "measurer_for",
]


class Progress(Protocol):
    """What a long measurement says while it runs (progress.LiveLine, or progress.QUIET)."""

    def phase(self, text: str) -> None: ...

    def tick(self) -> None: ...


class Measurer(Protocol):
    """One way of measuring a workload. ``name``: the variant (None: the test's own
    profile); ``settings``: warm-up, repeats, timeout, pin; ``progress``: where to
    say what runs (None: nowhere)."""

    kind: str

    def measure(
        self,
        call: Callable[[], Any],
        *,
        name: str | None,
        settings: RunSettings,
        progress: Progress | None = None,
    ) -> Profile: ...


@dataclass(frozen=True)
class MeasureOptions:
    """What a measurer needs to know about the test it measures, chosen once per test.

    ``label``: the Profile's name when ``measure()`` gets no ``name``. ``enabled``:
    False without ``--inferperf`` (one smoke call). ``update``: baselines are being
    written (a simulated baseline runs its region twice). ``simulate_without_pmu``:
    ``auto`` may stand for simulate. ``worker_index``: the xdist worker, whose
    profiles pin to one CPU each. ``spec``: the marker (runner overrides; the
    metrics it needs choose the simulate mode; its timeout bounds the child); None:
    no marker (``inferperf analyse``), every simulated event.
    ``shared_child``: the session's valgrind child for many tests, asked for only
    when a region is simulated. ``timed``: a context in which this process times
    something (the shared children stop meanwhile); None: nothing to stop.
    ``child_args``: the options of the parent's command line a simulation child repeats,
    asked for only when a region is simulated (working them out runs the project's
    ``pytest_addoption`` hooks again); ``child_cwd``: where the child starts, the
    parent's own starting folder (None: the rootdir), so that relative paths in those
    options and in the tests mean the same. ``operator_pass``: False leaves out the
    operator pass (``inferperf validate`` judges no operator table).
    """

    nodeid: str
    label: str
    rootdir: Path = Path(".")
    enabled: bool = True
    update: bool = False
    simulate_without_pmu: bool = False
    worker_index: int | None = None
    spec: PerfSpec | None = None
    shared_child: Callable[[], SharedChildren | None] | None = None
    timed: Callable[[], AbstractContextManager[Any]] | None = None
    child_args: Callable[[], tuple[str, ...]] | None = None
    child_cwd: Path | None = None
    operator_pass: bool = True

    @property
    def runner(self) -> Mapping[str, Any]:
        return self.spec.runner if self.spec is not None else {}


def measurer_for(choice: str, options: MeasureOptions) -> Measurer:
    """The measurer for ``--inferperf-backend choice``: the kind its row in
    :mod:`.backends` names (``auto``: the row it stands for here). Raises
    :class:`~.backends.UnknownBackend` for a name that is no row."""
    if not options.enabled:
        return SmokeMeasurer()
    backend = stands_for(choice, simulate_without_pmu=options.simulate_without_pmu)
    return _KINDS[backend.measurer or ""](backend, options)


def backend_for(choice: str, *, simulate_without_pmu: bool = False) -> str:
    """The backend ``choice`` stands for (:func:`.backends.stands_for`): ``auto`` is perf,
    none where perf_event_open does not exist, or simulate where ``simulate_without_pmu``
    and no hardware counter opens; any other choice is itself."""
    return stands_for(choice, simulate_without_pmu=simulate_without_pmu).name


def _quiet(progress: Progress | None) -> Any:
    from .progress import QUIET

    return QUIET if progress is None else progress


def _with_operator_pass(
    profile: Profile,
    call: Callable[[], Any],
    progress: Any,
    timed: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext,
) -> Profile:
    """:func:`.operator_pass.with_operator_pass`, saying so on ``progress``."""
    from .operator_pass import with_operator_pass

    return with_operator_pass(profile, call, timed, progress.phase)


class SmokeMeasurer:
    """Without ``--inferperf``: the workload runs once, uncounted (runner.smoke)."""

    kind = "smoke"

    def measure(
        self,
        call: Callable[[], Any],
        *,
        name: str | None,
        settings: RunSettings,
        progress: Progress | None = None,
    ) -> Profile:
        from .runner import smoke, workload_name

        return smoke(call, name=name or workload_name(getattr(call, "func", call)))


class NativeMeasurer:
    """The Runner with a counter backend (``perf`` or ``none``) in this process.

    ``counters`` makes the counter backend for the events (the backend's row in
    :mod:`.backends`; default: :func:`pmu.make_backend` of ``backend``).
    """

    kind = "native"

    def __init__(
        self,
        backend: str,
        options: MeasureOptions,
        counters: Callable[[Sequence[str]], CounterBackend] | None = None,
    ) -> None:
        self.backend = backend
        self.options = options
        self.counters = counters

    def settings_for(self, settings: RunSettings) -> RunSettings:
        """``settings``, pinned to the xdist worker's own CPU unless the marker pins."""
        from .runner import normalise_pin

        index = self.options.worker_index
        if "pin" in self.options.runner or index is None:
            return settings
        cpus = sorted(os.sched_getaffinity(0))
        return replace(settings, pin=normalise_pin(cpus[index % len(cpus)]))

    def measure(
        self,
        call: Callable[[], Any],
        *,
        name: str | None,
        settings: RunSettings,
        progress: Progress | None = None,
    ) -> Profile:
        from ..pmu import make_backend
        from ..pmu.events import DEFAULT_EVENTS
        from .progress import ProgressCounters
        from .runner import Runner, session_facts

        line = _quiet(progress)
        settings = self.settings_for(settings)
        line.phase("warm-up")
        inner = (
            self.counters(DEFAULT_EVENTS)
            if self.counters is not None
            else make_backend(self.backend, DEFAULT_EVENTS)
        )
        counters = ProgressCounters(inner, settings.repeat, line.phase)
        # a new baseline's fresh process gives its timings as measured, and nothing else:
        # no calibration (its values are taken as they are: between_processes), no
        # operator pass
        values_only = child_process.process_value_repeats() is not None
        runner = Runner(settings, backend=counters)
        if values_only:
            runner.calibrate_rounds = 0
        result = runner.run(
            call,
            name=name or self.options.label,
            session=session_facts(getattr(call, "func", call)),
        )
        if values_only or not self.options.operator_pass:
            return result
        return _with_operator_pass(result, call, line)


class SimulateMeasurer:
    """A native run for the timings, then the region under valgrind in a child.

    A region this measurer measured once (a confirmation re-measure) runs in a child
    of its own: the shared child has gone past its test.
    """

    kind = "simulate"

    def __init__(self, options: MeasureOptions) -> None:
        self.options = options
        self._measured: set[str] = set()
        if options.shared_child is not None:  # the shared children start now, at set-up
            options.shared_child()

    def measure(
        self,
        call: Callable[[], Any],
        *,
        name: str | None,
        settings: RunSettings,
        progress: Progress | None = None,
    ) -> Profile:
        from .simulate.valgrind import available

        reason = available()
        if reason:
            raise SimulateUnavailable(reason)
        from .progress import ticking
        from .simulate.events import mode_for, spec_metrics
        from .simulate.parent import DEFAULT_TIMEOUT, SimulateOptions, profile_via_child

        options, line, variant = self.options, _quiet(progress), name or ""
        shared = None
        if variant not in self._measured and options.shared_child is not None:
            shared = options.shared_child()
        self._measured.add(variant)
        timeout = options.runner.get("timeout")  # the marker's timeout= bounds the child too
        simulate = SimulateOptions(
            rootdir=options.rootdir,
            settings=settings,
            # no marker (inferperf analyse): every simulated event, the full mode
            mode=mode_for(spec_metrics(options.spec) if options.spec is not None else None),
            run_twice=options.update,
            timeout=DEFAULT_TIMEOUT if timeout is None else float(timeout),
            extra_args=options.child_args() if options.child_args is not None else (),
            cwd=options.child_cwd,
        )
        timed = options.timed or contextlib.nullcontext
        line.phase("simulating: native run, then the region under valgrind")
        with ticking(line):
            result = profile_via_child(
                options.nodeid,
                variant or None,
                simulate,
                native=call,
                name=name or options.label,
                shared=shared,
                timed=timed,
            )
        if not options.operator_pass:
            return result
        return _with_operator_pass(result, call, line, timed)


@dataclass
class ChildMeasurer:
    """Inside a simulation child: the region measured for the parent (simulate_child).

    The Profile it returns carries no counts (backend ``simulate-child``): the test
    body goes on, and nothing judges it or writes it as a baseline.
    """

    nodeid: str
    kind: str = field(default="simulate-child", init=False)

    def measure(
        self,
        call: Callable[[], Any],
        *,
        name: str | None,
        settings: RunSettings,
        progress: Progress | None = None,
    ) -> Profile:
        from .simulate.child import child_measure

        return child_measure(call, name=name, settings=settings, nodeid=self.nodeid)


# the measurer of each kind a row of .backends names
_KINDS: dict[str, Callable[[Backend, MeasureOptions], Measurer]] = {
    NativeMeasurer.kind: lambda backend, options: NativeMeasurer(
        backend.name, options, backend.counters
    ),
    SimulateMeasurer.kind: lambda backend, options: SimulateMeasurer(options),
}
