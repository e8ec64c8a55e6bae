"""The ``simulate`` backend: deterministic counts from valgrind's callgrind.

Owns (through its parts): running a measured region under ``valgrind
--tool=callgrind`` in a child process that re-runs the same pytest test, and
turning callgrind's dumps into a :class:`~pytest_inferperf.core.profile.Profile` with backend
``simulate``. For machines without a hardware PMU (most CI runners, VMs).

How (see ``docs/simulate.md``):

* **parent** (:mod:`.parent`: :func:`profile_via_child`, called by the
  simulate measurer inside the test body): optionally runs the workload natively
  for latency and memory, then starts ``valgrind --tool=callgrind ... python -m
  pytest <nodeid>`` with ``INFERPERF_SIMULATE_CHILD`` set, and reads one
  callgrind dump per callback (parser: :mod:`.callgrind`).
* **child** (:mod:`.child`: :func:`child_measure`, what the child's
  measurer does in the valgrind child): warms the workload up without
  instrumentation, switches callgrind's instrumentation on (``vgdb ...
  instrumentation on``), then runs each repeat as ONE ctypes callback
  (:func:`run_as_callback`: libc ``qsort`` on a two-element array whose
  compare function is the workload). callgrind counts only inside
  ``closure_fcn`` (``--toggle-collect``), the static function of CPython's
  ``_ctypes`` that runs a callback, and dumps once per callback
  (``--dump-after``), so start-up, imports and warm-up are never counted;
  instrumentation goes off again after the region. The child sends a small
  typed record back and returns a smoke-like Profile so the test body goes on.
* events: ``instructions`` = Ir, ``l1d_access`` = Dr+Dw, ``l1d_refill`` =
  D1mr+D1mw, ``l1i_access`` = Ir, ``l1i_refill`` = I1mr, ``llc_read`` =
  I1mr+D1mr (L1 read misses, i.e. reads that reach the last level),
  ``llc_miss`` = ILmr+DLmr (last-level read misses), ``branches`` = Bc+Bi,
  ``branch_misses`` = Bcm+Bim. Nothing with a time base (cycles, stalls) and
  no software event is counted; each says why.

The backend is split by process role, with no cycle between the parts:
``protocol`` (the typed records that cross between parent and child, the
child's environment, the errors), ``valgrind`` (availability, cache
geometry, the child's command line), ``events`` (callgrind events as
logical events, modes), ``child``, ``parent`` and
``shared`` (one child for many tests). This module gathers their public
names for callers; nothing in the package imports it.

Must not: hold code of its own (each part owns its piece), judge or render.
The child never writes baselines: the child's measurer judges nothing.
"""

from __future__ import annotations

from ..child_process import ENV_CHILD, in_child
from ..runner import RunSettings
from .callgrind import CallgrindFormatError, parse_callgrind
from .child import (
    CHILD_MIN_WARMUP,
    CHILD_WARMUP_MAX_S,
    child_measure,
    run_as_callback,
    session_runs,
)
from .events import (
    EVENT_FORMULAS,
    INSTRUCTION_EVENTS,
    event_statuses,
    logical_counts,
    mode_for,
    session_mode,
    spec_metrics,
    unavailable_reason,
)
from .parent import (
    DEFAULT_TIMEOUT,
    SimulateOptions,
    build_profile,
    profile_via_child,
    with_honesty_warning,
    with_resolution,
    with_run_to_run,
    with_session_runs_warning,
)
from .protocol import (
    BACKEND,
    CHILD_ENV,
    ENV_OPTIONS,
    ENV_VARIANT,
    ChildOptions,
    ChildRecord,
    ChildRun,
    PlanStep,
    SimulateError,
    SimulateUnavailable,
)
from .valgrind import (
    BLOCK_PLUGINS,
    MODES,
    REGION_FUNCTION,
    CacheGeometry,
    ChildCommand,
    available,
    cache_config,
    cache_options,
    child_command,
    fit_geometry,
)

__all__ = [
    "BACKEND",
    "BLOCK_PLUGINS",
    "CHILD_ENV",
    "CHILD_MIN_WARMUP",
    "CHILD_WARMUP_MAX_S",
    "DEFAULT_TIMEOUT",
    "ENV_CHILD",
    "ENV_OPTIONS",
    "ENV_VARIANT",
    "EVENT_FORMULAS",
    "INSTRUCTION_EVENTS",
    "MODES",
    "REGION_FUNCTION",
    "CacheGeometry",
    "CallgrindFormatError",
    "ChildCommand",
    "ChildOptions",
    "ChildRecord",
    "ChildRun",
    "PlanStep",
    "RunSettings",
    "SimulateError",
    "SimulateOptions",
    "SimulateUnavailable",
    "available",
    "build_profile",
    "cache_config",
    "cache_options",
    "child_command",
    "child_measure",
    "event_statuses",
    "fit_geometry",
    "in_child",
    "logical_counts",
    "mode_for",
    "parse_callgrind",
    "profile_via_child",
    "run_as_callback",
    "session_mode",
    "session_runs",
    "spec_metrics",
    "unavailable_reason",
    "with_honesty_warning",
    "with_resolution",
    "with_run_to_run",
    "with_session_runs_warning",
]
