"""The ``simulate`` backend: deterministic counts from valgrind's callgrind.

Owns: running a measured region under ``valgrind --tool=callgrind`` in a
child process that re-runs the same pytest test, and turning callgrind's
dumps into a :class:`~pytest_inferperf.profile.Profile` with backend
``simulate``. For machines without a hardware PMU (most CI runners, VMs).

How (see ``docs/simulate.md``):

* **parent** (:func:`profile_via_child`, called by ``pmu_profile`` inside the
  test body): optionally runs the workload natively for latency and memory,
  then starts ``valgrind --tool=callgrind ... python -m pytest <nodeid>`` with
  ``INFERPERF_SIMULATE_CHILD`` set, and reads one callgrind dump per callback
  (parser: ``pmu/callgrind.py``).
* **child** (:func:`child_measure`, what ``pmu_profile`` does when
  :func:`in_child`): warms the workload up without instrumentation, switches
  callgrind's instrumentation on (``vgdb ... instrumentation on``), then runs
  each repeat as ONE ctypes callback (:func:`run_as_callback`: libc ``qsort``
  on a two-element array whose compare function is the workload). callgrind
  counts only inside ``closure_fcn`` (``--toggle-collect``), the static
  function of CPython's ``_ctypes`` that runs a callback, and dumps once per
  callback (``--dump-after``), so start-up, imports and warm-up are never
  counted; instrumentation goes off again after the region. The child writes
  a small JSON result and returns a smoke-like Profile so the test body goes on.
* events: ``instructions`` = Ir, ``l1d_access`` = Dr+Dw, ``l1d_refill`` =
  D1mr+D1mw, ``l1i_access`` = Ir, ``l1i_refill`` = I1mr, ``llc_read`` =
  I1mr+D1mr (L1 read misses, i.e. reads that reach the last level),
  ``llc_miss`` = ILmr+DLmr (last-level read misses), ``branches`` = Bc+Bi,
  ``branch_misses`` = Bcm+Bim. Nothing with a time base (cycles, stalls) and
  no software event is counted; each says why.

Must not: judge (budgets, baselines) or render. The child never writes
baselines: the plugin checks :func:`in_child` first.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import json
import os
import platform
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..child_process import ENV_CHILD, in_child, is_shared_child
from ..errors import InferperfError
from ..profile import LatencyStats, MemoryStats, Profile, Repeat, Steadiness
from ..result_digest import result_digest
from ..runner import (
    Runner,
    RunSettings,
    _note,
    _session_facts,
    measurement_environment,
    outputs_finite,
    stamped_profile,
    uncounted_profile,
)
from ..telemetry import ENV as TELEMETRY_ENV
from . import simulate_noise
from .base import Count, CounterSample, EventStatus
from .callgrind import CallgrindDump, CallgrindFormatError, parse_callgrind, read_dumps
from .cpu import SystemPaths
from .events import DEFAULT_EVENTS, check_names

if TYPE_CHECKING:
    from .simulate_shared import SharedChild

__all__ = [
    "CallgrindFormatError",
    "SimulateError",
    "SimulateUnavailable",
    "available",
    "cache_config",
    "child_measure",
    "in_child",
    "parse_callgrind",
    "profile_via_child",
    "run_as_callback",
]

BACKEND = "simulate"
CHILD_BACKEND = "simulate-child"

ENV_VARIANT = "INFERPERF_SIMULATE_VARIANT"  # the pmu_profile name= to measure ("" = none)
ENV_OPTIONS = "INFERPERF_SIMULATE_OPTIONS"  # JSON: repeats, calls, instrumentation trigger

#: The static function of CPython's ``Modules/_ctypes/callbacks.c`` that runs a
#: ctypes callback: callgrind collects only inside it.
REGION_FUNCTION = "closure_fcn"
HASH_SEED = "0"
DEFAULT_REPEATS = 3  # counts are deterministic: a few repeats show that, more cost minutes
DEFAULT_CALLS = 1  # calls of the workload per repeat (per callback)
#: Warm-up calls in the child: ``settings.warmup``, and at least CHILD_MIN_WARMUP, a
#: fixed number so that every run reaches the region in the same state. CPython's
#: specialising interpreter quickens a code object after 8 calls and specialises its
#: instructions after that, thousands of instructions that must not land in a
#: repeat. Only a workload so expensive that the warm-up passes CHILD_WARMUP_MAX_S
#: stops earlier (after one call at least): at over a second per call under valgrind
#: (millions of instructions) those thousands are below 0.1%, and a call costs about
#: as much uninstrumented as instrumented, so more warm-up would cost minutes.
CHILD_MIN_WARMUP = 10
CHILD_WARMUP_MAX_S = 10.0
DEFAULT_TIMEOUT = 600.0  # seconds for the whole child run
TRIGGER_TIMEOUT = 120.0  # seconds the child waits for vgdb to switch instrumentation on
OUT_STEM = "callgrind.out"
#: pytest plugins the child blocks by default: hypothesis's plugin alone costs the
#: child ~10 s under valgrind (its lazy imports at session end), for nothing a perf
#: test needs; pytest-randomly would reorder the tests the parent hands over in its
#: own order. Pass ``block_plugins=()`` where a suite's options need them.
BLOCK_PLUGINS = ("hypothesispytest", "randomly")
#: Relative spread of the repeats' instructions per call above which the Profile warns.
REPEAT_SPREAD_WARN = 0.01
MIN_LINE = 16  # callgrind refuses cache lines below 16 bytes (cachegrind's cg_arch.c)

#: Environment of the child: spinning off and one thread where a variable can say so,
#: because callgrind counts only the thread that runs the callback. Python objects are
#: allocated with the C allocator: pymalloc's pool bookkeeping depends on what start-up
#: left in its pools (-0.2% to -0.37% for an allocation-heavy loop after extra imports),
#: glibc's per-size caches do not (0.0007% for the same pair; docs/simulate.md).
CHILD_ENV = {
    "PYTHONHASHSEED": HASH_SEED,
    "PYTHONMALLOC": "malloc",
    # ONNX Runtime 1.29+ uploads telemetry from background threads some seconds after
    # import (DNS lookups, HTTP): under valgrind that lands inside regions and, through
    # the one simulated cache and branch predictor, moved their miss counts by up to 40%.
    TELEMETRY_ENV: "1",
    "OMP_WAIT_POLICY": "PASSIVE",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}
#: Removed from the child's environment: xdist worker identity, the parent's current
#: test, and coverage start-up hooks (coverage tracing would be counted).
CHILD_ENV_DROP = (
    "PYTEST_XDIST_WORKER",
    "PYTEST_XDIST_WORKER_COUNT",
    "PYTEST_XDIST_TESTRUNUID",
    "PYTEST_CURRENT_TEST",
    "COVERAGE_PROCESS_START",
)
CHILD_ENV_DROP_PREFIXES = ("COV_CORE_",)

#: What callgrind simulates: "full" (--cache-sim=yes --branch-sim=yes: instructions,
#: cache and branch events) or "instructions" (neither simulation: instructions only,
#: the same Ir counts, and the instrumented region runs faster).
MODES = ("full", "instructions")
MODE_TEXT = {
    "full": "full (instruction, cache and branch simulation)",
    "instructions": "instructions only (no cache or branch simulation)",
}
#: Events counted in instructions-only mode.
INSTRUCTION_EVENTS = ("instructions",)

#: logical event -> the callgrind events summed for it.
EVENT_FORMULAS: dict[str, tuple[str, ...]] = {
    "instructions": ("Ir",),
    "l1d_access": ("Dr", "Dw"),
    "l1d_refill": ("D1mr", "D1mw"),
    "l1i_access": ("Ir",),
    "l1i_refill": ("I1mr",),
    "llc_read": ("I1mr", "D1mr"),
    "llc_miss": ("ILmr", "DLmr"),
    "branches": ("Bc", "Bi"),
    "branch_misses": ("Bcm", "Bim"),
}

_NO_TIME = (
    "not available: the simulate backend counts instructions, cache and branch "
    "events, not cycles (no IPC)"
)
_REASONS: dict[str, str] = {
    "cycles": _NO_TIME,
    "stall_frontend": "not available: the simulate backend has no pipeline model (no stall cycles)",
    "l2_access": "not available: callgrind simulates L1 and the last level only, not a middle L2",
    "op_retired": "not available: the simulate backend counts instructions, not micro-ops",
    "dtlb_access": "not available: callgrind does not simulate TLBs",
    "task_clock": "not available: the simulated region runs under valgrind in a child "
    "process; software events would count valgrind, not the workload",
}
_REASON_OF = {
    "stall_backend": "stall_frontend",
    "stall_backend_mem": "stall_frontend",
    "stall_slot": "stall_frontend",
    "stall_slot_frontend": "stall_frontend",
    "stall_slot_backend": "stall_frontend",
    "l2_refill": "l2_access",
    "op_spec": "op_retired",
    "l1d_tlb_refill": "dtlb_access",
    "dtlb_walk": "dtlb_access",
    "itlb_access": "dtlb_access",
    "itlb_walk": "dtlb_access",
    "page_faults": "task_clock",
    "major_faults": "task_clock",
    "context_switches": "task_clock",
    "cpu_migrations": "task_clock",
}


class SimulateUnavailable(InferperfError, RuntimeError):
    """The simulate backend cannot run here; the message says why and what to install."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class SimulateError(InferperfError, RuntimeError):
    """A simulation run failed; the message names the step, the cause and the child's output."""


# -- availability ---------------------------------------------------------------
def available() -> str | None:
    """None when the simulate backend can run here, else why not (one line)."""
    if not sys.platform.startswith("linux"):
        return (
            f"not available: the simulate backend needs valgrind on Linux; this is {sys.platform}"
        )
    if shutil.which("valgrind") is None:
        return "not available: valgrind is not installed: apt install valgrind"
    try:
        import _ctypes
    except ImportError as exc:
        return f"not available: this Python has no ctypes ({exc}), which marks the region"
    path = getattr(_ctypes, "__file__", None)
    if path:
        try:
            data = Path(path).read_bytes()
        except OSError:
            data = None
        if data is not None and b"\0" + REGION_FUNCTION.encode() + b"\0" not in data:
            return (
                f"not available: CPython's _ctypes module ({path}) has no "
                f"{REGION_FUNCTION} symbol (a stripped build), and callgrind finds the "
                "measured region by that name"
            )
    return None


@functools.lru_cache(maxsize=4)
def valgrind_version(valgrind: str = "valgrind") -> str:
    """``valgrind-3.19.0`` (or ``unknown``)."""
    try:
        out = subprocess.run(
            [valgrind, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


@functools.lru_cache(maxsize=1)
def no_aslr_prefix() -> tuple[str, ...]:
    """``setarch <arch> -R``: run the child with address-space randomisation off.

    Where the heap and stacks start moves which paths malloc takes and how data
    aligns, so it moves the counts a little; () where ``setarch`` is missing or
    may not change the personality (a container's seccomp profile can forbid it).
    """
    setarch = shutil.which("setarch")
    if setarch is None:
        return ()
    prefix = (setarch, platform.machine(), "-R")
    try:
        ok = (
            subprocess.run(
                [*prefix, "true"], capture_output=True, timeout=30, check=False
            ).returncode
            == 0
        )
    except (OSError, subprocess.SubprocessError):
        ok = False
    return prefix if ok else ()


# -- events ----------------------------------------------------------------------
def unavailable_reason(event: str) -> str:
    """Why the simulate backend does not count ``event``."""
    return _REASONS.get(
        _REASON_OF.get(event, event), f"not available: the simulate backend does not count {event}"
    )


def logical_counts(raw: Mapping[str, int]) -> dict[str, int]:
    """callgrind event totals -> logical event counts (only where every input is present)."""
    return {
        name: sum(raw[part] for part in parts)
        for name, parts in EVENT_FORMULAS.items()
        if all(part in raw for part in parts)
    }


def mode_for(metrics: Iterable[str] | None) -> str:
    """The cheapest mode that counts every input of ``metrics`` (None: all of them).

    "instructions" when none of the metrics needs a cache or branch event, else "full".
    """
    if metrics is None:
        return "full"
    from .. import metrics as metrics_mod

    simulated = set(EVENT_FORMULAS) - set(INSTRUCTION_EVENTS)
    for name in metrics:
        metric = metrics_mod.METRICS.get(name)
        inputs = set(metric.inputs) if metric is not None else simulated
        if inputs & simulated:
            return "full"
    return "instructions"


def spec_metrics(spec: Any) -> list[str]:
    """The metrics a test's marker asks for: its budgets and its per-metric tolerances."""
    names = [b.metric for b in getattr(spec, "budgets", ())]
    tolerance = getattr(spec, "tolerance", None)
    if isinstance(tolerance, Mapping):
        names.extend(tolerance)
    return names


def session_mode(specs: Iterable[Any]) -> str:
    """The mode one child for many tests needs: "full" if any of them needs it."""
    modes = {mode_for(spec_metrics(spec)) for spec in specs}
    return "full" if "full" in modes or not modes else "instructions"


def event_statuses(
    events: Sequence[str], raw_names: Sequence[str] = (), mode: str = "full"
) -> dict[str, EventStatus]:
    """Per requested event: counted (and from which callgrind events), or why not."""
    present = set(raw_names)
    out: dict[str, EventStatus] = {}
    for name in check_names(events):
        parts = EVENT_FORMULAS.get(name)
        if parts is None:
            out[name] = EventStatus(name, False, reason=unavailable_reason(name))
        elif mode == "instructions" and name not in INSTRUCTION_EVENTS:
            out[name] = EventStatus(
                name,
                False,
                reason=(
                    "not simulated: instructions-only mode, chosen because no budget or "
                    "tolerance of this test needs a cache or branch event (a budget such as "
                    'l1_miss_max or branch_miss_max, or profile_via_child(mode="full"), '
                    "simulates them)"
                ),
            )
        elif present and not set(parts) <= present:
            missing = ", ".join(p for p in parts if p not in present)
            out[name] = EventStatus(
                name,
                False,
                reason=(
                    f"not available: callgrind did not report {missing} (cache or branch "
                    "simulation off?)"
                ),
            )
        else:
            out[name] = EventStatus(name, True, source=f"callgrind {'+'.join(parts)}")
    return out


# -- caches ----------------------------------------------------------------------
@dataclass(frozen=True)
class CacheGeometry:
    """One simulated cache: callgrind's ``--I1/--D1/--LL=<size>,<assoc>,<line size>``."""

    size: int
    assoc: int
    line: int

    @property
    def value(self) -> str:
        return f"{self.size},{self.assoc},{self.line}"


def _power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def fit_geometry(size: int, assoc: int, line: int) -> tuple[CacheGeometry | None, str | None]:
    """A geometry callgrind accepts for this cache, and a note when it had to change.

    callgrind needs a power-of-two line of at least 16 bytes and a power-of-two
    number of sets. A cache whose set count is not a power of two (e.g. 30 MiB,
    20-way) keeps its size: the sets round down to a power of two and the
    associativity grows to match (30 MiB 20-way 64 B -> 30-way), as cachegrind
    itself tweaks such last-level caches. None when no exact fit exists.
    """
    if size <= 0 or assoc <= 0 or line <= 0:
        return None, f"size {size}, {assoc}-way, line {line}: not a usable geometry"
    if not _power_of_two(line) or line < MIN_LINE:
        return None, f"line size {line} B is not a power of two >= {MIN_LINE}"
    if size % (assoc * line):
        return None, f"{size} B is not a whole number of {assoc}-way sets of {line} B lines"
    sets = size // (assoc * line)
    if _power_of_two(sets):
        return CacheGeometry(size, assoc, line), None
    fitted = 1 << (sets.bit_length() - 1)
    if size % (fitted * line):
        return None, f"{sets} sets is not a power of two and no exact refit exists"
    new_assoc = size // (fitted * line)
    return CacheGeometry(size, new_assoc, line), (
        f"{sets} sets is not a power of two: simulated as {fitted} sets, {new_assoc}-way "
        f"(same size)"
    )


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    match = re.fullmatch(r"(\d+)\s*([KMG]?)", text)
    if not match:
        return None
    return int(match.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[match.group(2)]


def cache_config(
    paths: SystemPaths | None = None, cpu: int = 0
) -> tuple[dict[str, CacheGeometry], dict[str, str]]:
    """The I1, D1 and LL geometries of this machine from sysfs, and a note per cache.

    LL is the highest-level unified (else data) cache. A cache that sysfs does not
    describe completely (size, ``ways_of_associativity``, ``coherency_line_size``) or
    that callgrind cannot represent is left to callgrind's own choice, with a note.
    """
    paths = paths or SystemPaths()
    base = paths.cpus / f"cpu{cpu}" / "cache"
    found: list[tuple[int, str, Path]] = []
    for index in sorted(base.glob("index*")):
        level = _read_int(index / "level")
        try:
            kind = (index / "type").read_text().strip()
        except OSError:
            continue
        if level is not None:
            found.append((level, kind, index))
    choose = {
        "I1": [f for f in found if f[0] == 1 and f[1] in ("Instruction", "Unified")],
        "D1": [f for f in found if f[0] == 1 and f[1] in ("Data", "Unified")],
        "LL": sorted(
            (f for f in found if f[0] > 1 and f[1] in ("Unified", "Data")),
            key=lambda f: (f[0], f[1] == "Unified"),
        ),
    }
    config: dict[str, CacheGeometry] = {}
    notes: dict[str, str] = {}
    for name, candidates in choose.items():
        if not candidates:
            notes[name] = f"callgrind's default: sysfs lists no {name} cache under {base}"
            continue
        level, kind, index = candidates[-1]
        size, assoc, line = (
            _read_int(index / f) for f in ("size", "ways_of_associativity", "coherency_line_size")
        )
        where = f"sysfs cpu{cpu} {index.name} (L{level} {kind})"
        if size is None or assoc is None or line is None:
            notes[name] = f"callgrind's default: {where} lacks size, ways or line size"
            continue
        geometry, note = fit_geometry(size, assoc, line)
        if geometry is None:
            notes[name] = f"callgrind's default: {where}: {note}"
            continue
        config[name] = geometry
        notes[name] = where + (f"; {note}" if note else "")
    return config, notes


def cache_options(config: Mapping[str, CacheGeometry]) -> list[str]:
    return [f"--{name}={config[name].value}" for name in ("I1", "D1", "LL") if name in config]


# -- the region: one ctypes callback ------------------------------------------------
_COMPARE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)


@functools.lru_cache(maxsize=1)
def _qsort() -> Any:
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    qsort = libc.qsort
    qsort.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, _COMPARE]
    qsort.restype = None
    return qsort


def run_as_callback(call: Callable[[], Any], calls: int = 1) -> object:
    """Run ``call()`` ``calls`` times inside ONE ctypes callback; return the last result.

    The callback is the compare function of libc ``qsort`` on a two-element
    array, which calls it exactly once. Under callgrind with
    ``--toggle-collect=closure_fcn`` only this region is counted. An exception
    from ``call`` is re-raised here (ctypes itself would swallow it).
    """
    if not isinstance(calls, int) or isinstance(calls, bool) or calls < 0:
        raise ValueError(f"calls={calls!r}: the number of calls must be an integer >= 0")
    state: list[Any] = [0, None, None]  # entries, result, error

    def compare(_a: Any, _b: Any) -> int:
        state[0] += 1
        if state[0] == 1:
            try:
                result = None
                for _ in range(calls):
                    result = call()
                state[1] = result
            except BaseException as exc:
                state[2] = exc
        return 0

    callback = _COMPARE(compare)
    pair = (ctypes.c_int * 2)(0, 1)
    _qsort()(pair, 2, ctypes.sizeof(ctypes.c_int), callback)
    if state[2] is not None:
        raise state[2]
    if state[0] != 1:
        raise SimulateError(
            f"libc qsort called the compare function {state[0]} times on two "
            "elements, not once: the region cannot be isolated on this libc"
        )
    return state[1]


def _nothing() -> None:
    return None


# -- the child -------------------------------------------------------------------
@dataclass(frozen=True)
class ChildRequest:
    """What the parent asked the child for (from the environment)."""

    result_path: Path
    variant: str
    repeats: int = DEFAULT_REPEATS
    calls: int = DEFAULT_CALLS
    trigger: str = "start"  # "vgdb": switch instrumentation on after warm-up; "start": it is on
    vgdb: str | None = None
    vgdb_prefix: str | None = None
    #: Sends the result to the parent (a shared child's reply pipe); None: the JSON file.
    respond: Callable[[Mapping[str, Any]], None] | None = None

    def send(self, record: Mapping[str, Any]) -> None:
        if self.respond is not None:
            self.respond(record)
        else:
            _write_json(self.result_path, record)


def child_request() -> ChildRequest | None:
    path = os.environ.get(ENV_CHILD)
    if not path:
        return None
    options = json.loads(os.environ.get(ENV_OPTIONS) or "{}")
    return ChildRequest(
        result_path=Path(path),
        variant=os.environ.get(ENV_VARIANT, ""),
        repeats=int(options.get("repeats", DEFAULT_REPEATS)),
        calls=int(options.get("calls", DEFAULT_CALLS)),
        trigger=str(options.get("trigger", "start")),
        vgdb=options.get("vgdb"),
        vgdb_prefix=options.get("vgdb_prefix"),
    )


_measured_variants: set[str] = set()


def _request_here(nodeid: str | None, variant: str) -> ChildRequest | None:
    """The parent's request if it is for this region (``nodeid``, ``variant``), else None.

    A child for one test measures the variant named in its environment, once; a
    shared child (:mod:`.simulate_shared`) the region the parent is waiting for.
    """
    from . import simulate_shared

    request = child_request()
    if request is None:
        raise SimulateError(
            f"child_measure runs only in a simulation child ({ENV_CHILD} is "
            "not set); use profile_via_child in the test process"
        )
    if is_shared_child():
        here = nodeid or os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0]
        wanted = simulate_shared.child_request_for(here, variant)
        if wanted is None:
            return None
        return replace(
            request,
            variant=variant,
            repeats=int(wanted["repeats"]),
            calls=int(wanted["calls"]),
            respond=simulate_shared.child_reply,
        )
    if variant != request.variant or variant in _measured_variants:
        return None
    _measured_variants.add(variant)
    return request


def _thread_cpu_ns() -> dict[int, int]:
    """CPU time of every thread of this process, in ns (``schedstat``, else ``stat`` ticks)."""
    out: dict[int, int] = {}
    tick_ns = 1e9 / (os.sysconf("SC_CLK_TCK") or 100)
    with contextlib.suppress(OSError):
        for task in os.listdir("/proc/self/task"):
            base = Path("/proc/self/task") / task
            try:
                out[int(task)] = int((base / "schedstat").read_text().split()[0])
                continue
            except (OSError, ValueError, IndexError):
                pass
            try:
                fields = (base / "stat").read_text().rsplit(")", 1)[1].split()
                out[int(task)] = round((int(fields[11]) + int(fields[12])) * tick_ns)
            except (OSError, ValueError, IndexError):
                continue
    return out


def _other_threads_cpu(before: Mapping[int, int], after: Mapping[int, int]) -> dict[str, int]:
    """CPU ns each thread other than this one used between two :func:`_thread_cpu_ns`."""
    me = threading.get_native_id()
    return {
        str(tid): ns - before.get(tid, 0)
        for tid, ns in after.items()
        if tid != me and ns - before.get(tid, 0) > 0
    }


def _thread_names() -> list[str]:
    """The name of every thread of this process (``/proc/self/task/*/comm``)."""
    names = []
    with contextlib.suppress(OSError):
        for task in sorted(os.listdir("/proc/self/task"), key=int):
            try:
                names.append(Path(f"/proc/self/task/{task}/comm").read_text().strip())
            except OSError:
                names.append("?")
    return names


def _instrumentation(request: ChildRequest, state: str) -> dict[str, Any]:
    """Switch callgrind's instrumentation ``on``/``off`` through vgdb; busy until it answered.

    Off outside the region matters as much as on: everything after the region
    (pytest's reporting, interpreter shutdown) would otherwise run at the
    instrumented speed, minutes for a large import graph.
    """
    if request.trigger != "vgdb":
        return {"mode": "on from the start", "ok": True}
    command = [request.vgdb or "vgdb", f"--pid={os.getpid()}", "--max-invoke-ms=0"]
    if request.vgdb_prefix:
        command.insert(1, f"--vgdb-prefix={request.vgdb_prefix}")
    command += ["instrumentation", state]
    begin = time.monotonic()
    try:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except OSError as exc:
        return {"mode": "vgdb", "ok": False, "detail": f"cannot run vgdb: {exc}"}
    spin = 0
    # valgrind polls vgdb only while the program runs code: keep running some.
    while proc.poll() is None:
        spin = (spin + sum(range(64))) & 0xFFFF
        if time.monotonic() - begin > TRIGGER_TIMEOUT:
            proc.kill()
            proc.wait()
            return {
                "mode": "vgdb",
                "ok": False,
                "detail": f"vgdb did not answer within {TRIGGER_TIMEOUT:g}s",
            }
    output = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
    ok = proc.returncode == 0
    return {
        "mode": "vgdb",
        "ok": ok,
        "seconds": round(time.monotonic() - begin, 3),
        "detail": output.strip()[-400:],
    }


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str))
    os.replace(tmp, path)


def _session_of(call: Callable[..., Any]) -> dict | None:
    target = call.func if isinstance(call, functools.partial) else call
    try:
        return _session_facts(target)
    except Exception:
        return None


def child_measure(
    call: Callable[[], Any],
    *,
    name: str | None = None,
    settings: RunSettings | None = None,
    nodeid: str | None = None,
) -> Profile:
    """In the simulation child: measure ``call`` if it is the requested variant.

    The requested variant: warm-up calls through the callback, uninstrumented
    (``max(settings.warmup, CHILD_MIN_WARMUP)``, a fixed number unless the
    warm-up passes CHILD_WARMUP_MAX_S), instrumentation on (vgdb), one callback
    repeat that is discarded (it warms the simulated caches and pays one-off
    costs), ``repeats`` callback repeats of ``calls`` calls each, one empty
    callback (the region's own overhead), instrumentation off. Writes the JSON
    result for the parent. Any other variant runs once, uncounted. Returns a
    smoke-like Profile (backend ``simulate-child``, no counts): the test body
    goes on; the caller must not judge it or write it as a baseline. ``nodeid``:
    the running test (a shared child serves many; default ``PYTEST_CURRENT_TEST``).
    """
    settings = settings or RunSettings()
    variant = name or ""
    label = name or _name_of(call)
    request = _request_here(nodeid, variant)
    if request is None:
        begin = time.perf_counter_ns()
        result = call()
        return _child_profile(
            label,
            [time.perf_counter_ns() - begin],
            result,
            {"simulate_child": True, "measured": False},
        )
    record: dict[str, Any] = {
        "variant": variant,
        "pid": os.getpid(),
        "repeats": request.repeats,
        "calls": request.calls,
        "plan": [],
        "session": _session_of(call),
    }
    warm: list[int] = []
    last: Any = None
    try:
        with measurement_environment(settings):
            # The warm-up runs through the same callback as the repeats, so that the
            # callback's own Python code is quickened and specialised before counting.
            wanted = max(1, settings.warmup)
            for index in range(max(wanted, CHILD_MIN_WARMUP)):
                if index and sum(warm) > CHILD_WARMUP_MAX_S * 1e9:
                    break
                begin = time.perf_counter_ns()
                try:
                    run_as_callback(call, 1)
                except BaseException as exc:
                    _note(
                        exc,
                        f"inferperf: the workload raised in warm-up call {index + 1} "
                        "of the simulation child",
                    )
                    raise
                warm.append(time.perf_counter_ns() - begin)
                if request.trigger != "vgdb":  # instrumented already: callgrind dumps these
                    record["plan"].append({"kind": "warmup", "calls": 1, "wall_ns": warm[-1]})
            record["warmup"] = {"calls": len(warm), "durations_ns": warm}
            trigger = _instrumentation(request, "on")
            record["instrumentation"] = trigger
            if trigger["ok"]:
                try:
                    last = _measure_callbacks(call, request, record)
                finally:  # the rest of the child runs at uninstrumented speed
                    record["instrumentation_off"] = _instrumentation(request, "off")
                record["outputs_ok"] = outputs_finite(last)
                record["result_digest"] = result_digest(last)
    except BaseException as exc:
        record["error"] = f"{type(exc).__name__}: {exc}"
        request.send(record)
        raise
    request.send(record)
    return _child_profile(label, warm, last, {"simulate_child": True, "measured": True})


def _measure_callbacks(
    call: Callable[[], Any], request: ChildRequest, record: dict[str, Any]
) -> Any:
    """The instrumented part: discarded repeat, measured repeats, empty callback."""
    record["threads"] = _thread_names()
    cpu_before = _thread_cpu_ns()
    plan = record["plan"]
    last: Any = None
    for kind in ["warmup"] + ["repeat"] * request.repeats + ["overhead"]:
        calls = 0 if kind == "overhead" else request.calls
        begin = time.perf_counter_ns()
        result = run_as_callback(call if calls else _nothing, calls)
        plan.append({"kind": kind, "calls": calls, "wall_ns": time.perf_counter_ns() - begin})
        if kind == "repeat":
            last = result
    record["other_threads_cpu_ns"] = _other_threads_cpu(cpu_before, _thread_cpu_ns())
    record["region_wall_ns"] = sum(p["wall_ns"] for p in plan)
    return last


def _name_of(call: Callable[..., Any]) -> str:
    return getattr(call, "__qualname__", None) or getattr(call, "__name__", None) or repr(call)


def _child_profile(
    name: str, durations: Sequence[int], result: Any, settings: Mapping[str, Any]
) -> Profile:
    return uncounted_profile(
        name,
        CHILD_BACKEND,
        durations,
        result,
        settings=settings,
        warmup_calls=len(durations),
        memory_note="not measured in the simulation child",
    )


# -- the parent ------------------------------------------------------------------
@dataclass
class ChildRun:
    """What one valgrind child run left behind."""

    record: dict[str, Any]
    dumps: list[CallgrindDump]
    returncode: int | None  # None: a shared child, still running
    output: str
    wall_s: float
    valgrind_options: list[str]
    cache_notes: dict[str, str] = field(default_factory=dict)
    child: dict[str, Any] = field(default_factory=lambda: {"mode": "one child for this test"})
    mode: str = "full"  # what callgrind simulated (MODES)


def _child_env(
    result: Path, variant: str, options: Mapping[str, Any], extra: Mapping[str, str] | None
) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in CHILD_ENV_DROP and not k.startswith(CHILD_ENV_DROP_PREFIXES)
    }
    env.update(CHILD_ENV)
    env.update(extra or {})
    env[ENV_CHILD] = str(result)
    env[ENV_VARIANT] = variant
    env[ENV_OPTIONS] = json.dumps(dict(options))
    return env


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


@dataclass(frozen=True)
class ChildCommand:
    """The valgrind command line that runs ``pytest <nodeids>`` as a simulation child."""

    command: list[str]
    valgrind_options: list[str]
    cache_notes: dict[str, str]
    request: dict[str, Any]  # how the child switches instrumentation (ENV_OPTIONS)

    @property
    def from_start(self) -> bool:
        return self.request["trigger"] == "start"


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise ValueError(f"mode={mode!r}: the simulate mode is one of {', '.join(MODES)}")
    return mode


def child_command(
    nodeids: Sequence[str],
    *,
    rootdir: Path,
    python: str,
    instrument_from_start: bool,
    extra_args: Sequence[str],
    block_plugins: Sequence[str],
    workdir: Path,
    mode: str = "full",
) -> ChildCommand:
    """``[setarch -R] valgrind --tool=callgrind ... python -m pytest ... <nodeids>``."""
    valgrind = shutil.which("valgrind") or "valgrind"
    vgdb = shutil.which("vgdb")
    from_start = instrument_from_start or vgdb is None
    if check_mode(mode) == "full":
        config, notes = cache_config()
        simulation = ["--cache-sim=yes", "--branch-sim=yes", *cache_options(config)]
    else:
        notes = {name: "not simulated (instructions-only mode)" for name in ("I1", "D1", "LL")}
        simulation = ["--cache-sim=no", "--branch-sim=no"]
    prefix = workdir / "vgdb-pipe"
    options = [
        "--tool=callgrind",
        *simulation[:2],
        f"--instr-atstart={'yes' if from_start else 'no'}",
        "--collect-atstart=no",
        f"--toggle-collect={REGION_FUNCTION}",
        f"--dump-after={REGION_FUNCTION}",
        *simulation[2:],
    ]
    command = [
        *no_aslr_prefix(),
        valgrind,
        *options,
        "--vgdb=yes",
        f"--vgdb-prefix={prefix}",
        f"--log-file={workdir / 'valgrind.log'}",
        f"--callgrind-out-file={workdir / OUT_STEM}.%p",
        python,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-q",
        f"--rootdir={rootdir}",
        f"--basetemp={workdir / 'basetemp'}",
        # the node ids are the selection: a -m or -k in the project's addopts must not
        # deselect a test the parent runs (pytest -m slow against addopts -m "not slow")
        "-m",
        "",
        "-k",
        "",
    ]
    for plugin in block_plugins:
        command += ["-p", f"no:{plugin}"]
    if os.environ.get("PYTEST_XDIST_WORKER"):
        command += ["-n", "0"]  # the child is one process: valgrind follows no workers
    command += [*extra_args, *nodeids]
    request = {
        "trigger": "start" if from_start else "vgdb",
        "vgdb": vgdb,
        "vgdb_prefix": str(prefix),
    }
    return ChildCommand(command, options, notes, request)


def _run_child(
    nodeid: str,
    variant: str,
    *,
    rootdir: Path,
    python: str,
    timeout: float,
    repeats: int,
    calls: int,
    instrument_from_start: bool,
    extra_args: Sequence[str],
    env: Mapping[str, str] | None,
    block_plugins: Sequence[str],
    workdir: Path,
    mode: str = "full",
) -> ChildRun:
    built = child_command(
        [nodeid],
        rootdir=rootdir,
        python=python,
        instrument_from_start=instrument_from_start,
        extra_args=extra_args,
        block_plugins=block_plugins,
        workdir=workdir,
        mode=mode,
    )
    command, options, from_start = built.command, built.valgrind_options, built.from_start
    result = workdir / "child.json"
    request = {"repeats": repeats, "calls": calls, **built.request}
    begin = time.monotonic()
    proc = subprocess.Popen(
        command,
        cwd=rootdir,
        env=_child_env(result, variant, request, env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the child's own session: valgrind + vgdb
        output, _ = proc.communicate()
        raise SimulateError(
            f"{nodeid}: the simulation child ran past timeout={timeout:g}s under valgrind "
            f"(instrumentation {'from the start' if from_start else 'after warm-up'}). "
            f"Raise the timeout or make the workload smaller.\n{_tail(output)}"
        ) from None
    except BaseException:  # Ctrl-C: the child has its own session, so it got no SIGINT
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    wall = time.monotonic() - begin
    log = workdir / "valgrind.log"
    if not result.is_file():
        vg_log = log.read_text(errors="replace") if log.is_file() else ""
        raise SimulateError(
            f"{nodeid}: the simulation child (exit status {proc.returncode}) wrote no result: "
            f"did the test call pmu_profile{f' with name={variant!r}' if variant else ''}, "
            f"and does the plugin call child_measure in the child?\n"
            f"command: {shlex.join(command)}\n--- child output ---\n{_tail(output)}\n"
            f"--- valgrind log ---\n{_tail(vg_log, 10)}"
        )
    record = json.loads(result.read_text())
    return ChildRun(
        record=record,
        dumps=read_dumps(workdir, proc.pid, OUT_STEM),
        returncode=proc.returncode,
        output=output,
        wall_s=wall,
        valgrind_options=options,
        cache_notes=built.cache_notes,
        mode=mode,
    )


def profile_via_child(
    nodeid: str,
    variant: str | None = None,
    *,
    rootdir: str | os.PathLike[str],
    settings: RunSettings | None = None,
    events: Sequence[str] = DEFAULT_EVENTS,
    timeout: float = DEFAULT_TIMEOUT,
    python: str | None = None,
    native: Callable[[], Any] | None = None,
    session: Mapping[str, Any] | None = None,
    name: str | None = None,
    repeat: int | None = None,
    calls: int = DEFAULT_CALLS,
    extra_args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    block_plugins: Sequence[str] = BLOCK_PLUGINS,
    instrument_from_start: bool = False,
    workdir: str | os.PathLike[str] | None = None,
    shared: SharedChild | None = None,
    mode: str = "full",
    run_twice: bool = False,
) -> Profile:
    """Count test ``nodeid``'s ``pmu_profile(..., name=variant)`` region under callgrind.

    Runs ``valgrind --tool=callgrind ... python -m pytest <nodeid>`` in ``rootdir``;
    the child measures (:func:`child_measure`) and callgrind dumps once per
    repeat. ``native``, the workload as a no-argument callable, is first run
    here with the ``none`` backend: the latency, memory, steady state and stage
    timings of the Profile come from that native run (valgrind runs the child
    hundreds of times slower than native even where it does not instrument).
    Without it they come from the child's warm-up under valgrind, and the
    Profile says so. ``session``: the ONNX Runtime session facts (found from
    ``native`` when it is a bound ``session.run`` or a partial of one).

    ``repeat`` measured repeats (default: ``settings.repeat`` capped at
    :data:`DEFAULT_REPEATS`) of ``calls`` calls each. ``workdir`` keeps the
    callgrind files there (default: a temporary folder, removed). ``shared``: a
    :class:`~.simulate_shared.SharedChild` that runs this test among others in
    one valgrind process; where it cannot serve this region, a child for this test
    alone does. ``mode``: "full" (cache and branch simulation) or "instructions"
    (instructions only, faster; :func:`mode_for` picks it from the metrics a test
    needs); a shared child simulates what it was started with. ``run_twice``: run
    the region again in a child of its own and record how far the two runs' instructions
    per call differ (``settings.simulation.run_to_run``), the run-to-run noise a
    comparison with this profile as the baseline then allows for (simulate_noise).

    Raises :class:`SimulateUnavailable` without valgrind, :class:`SimulateError` when
    the child fails or its dumps do not match the plan.
    """
    reason = available()
    if reason is not None:
        raise SimulateUnavailable(reason)
    events = check_names(events)
    check_mode(mode)
    settings = settings or RunSettings()
    variant = variant or ""
    repeats = repeat if repeat is not None else min(settings.repeat, DEFAULT_REPEATS)
    if not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeat={repeat!r}: the number of simulated repeats must be >= 1")
    if not isinstance(calls, int) or isinstance(calls, bool) or calls < 1:
        raise ValueError(f"calls={calls!r}: calls per simulated repeat must be an integer >= 1")
    label = name or variant or nodeid.rsplit("::", 1)[-1]
    native_profile, native_digest = None, None
    if native is not None:
        native_runner = Runner(settings, backend="none", events=())
        native_profile = native_runner.run(
            native, name=label, session=session if session is not None else _session_of(native)
        )
        native_digest = result_digest(native_runner.last_result)
    root = Path(rootdir)
    keep = workdir is not None
    folder = Path(workdir) if keep else Path(tempfile.mkdtemp(prefix="inferperf-simulate-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        args = dict(
            rootdir=root,
            python=python or sys.executable,
            timeout=timeout,
            repeats=repeats,
            calls=calls,
            extra_args=extra_args,
            env=env,
            block_plugins=block_plugins,
            workdir=folder,
            mode=mode,
        )
        run = None
        if shared is not None and not instrument_from_start:
            run = shared.measure(nodeid, variant, repeats=repeats, calls=calls, timeout=timeout)
        if run is None:
            run = _run_child(nodeid, variant, instrument_from_start=instrument_from_start, **args)
        retried = None
        if not run.record.get("instrumentation", {}).get("ok", True):
            retried = run.record["instrumentation"].get("detail", "")
            if shared is not None:
                shared.close(f"vgdb could not switch instrumentation on: {retried}")
            for stale in folder.glob(f"{OUT_STEM}.*"):
                stale.unlink()
            run = _run_child(nodeid, variant, instrument_from_start=True, **args)
        result = _build_profile(
            label, nodeid, events, settings, run, native_profile, session, retried
        )
        if run_twice:
            again = folder / "run-2"
            again.mkdir()
            second = _run_child(
                nodeid, variant, instrument_from_start=False, **{**args, "workdir": again}
            )
            other = _build_profile(
                label, nodeid, events, settings, second, native_profile, session, None
            )
            result = with_run_to_run(result, other, second.wall_s)
        result = with_honesty_warning(result, native_digest, run.record.get("result_digest"))
        return with_resolution(result)
    finally:
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)


def _check_run(nodeid: str, run: ChildRun) -> list[dict[str, Any]]:
    record = run.record
    if "error" in record:
        raise SimulateError(
            f"{nodeid}: the workload raised in the simulation child: "
            f"{record['error']}\n{_tail(run.output)}"
        )
    plan = record.get("plan") or []
    if len(run.dumps) != len(plan):
        why = (
            f"callgrind never ran {REGION_FUNCTION} instrumented (is CPython's _ctypes stripped?)"
            if not run.dumps
            else f"each repeat must be exactly one ctypes callback, and a workload that runs "
            f"ctypes callbacks itself ({REGION_FUNCTION}) splits the region"
        )
        raise SimulateError(
            f"{nodeid}: callgrind wrote {len(run.dumps)} dumps for "
            f"{len(plan)} callback regions: {why}\n{_tail(run.output)}"
        )
    repeats = [d for d, p in zip(run.dumps, plan, strict=True) if p["kind"] == "repeat"]
    if not repeats or all(d.events.get("Ir", 0) == 0 for d in repeats):
        raise SimulateError(
            f"{nodeid}: callgrind counted no instructions in the measured callbacks: "
            f"instrumentation never came on, or {REGION_FUNCTION} was not found "
            f"(is CPython's _ctypes stripped?)"
        )
    return plan


def with_honesty_warning(profile: Profile, native: str | None, child: str | None) -> Profile:
    """``profile`` with a warning when the child returned other results than the native run."""
    if native is None or child is None or native == child:
        return profile
    simulation = dict(profile.settings.get("simulation") or {})
    simulation["warnings"] = [
        *simulation.get("warnings", ()),
        (
            "the workload returned different results in the simulation child than in the native "
            f"run (digest {child} vs {native}): it did different work there (pid-, time- or "
            "environment-dependent code?), so the simulated counts may not describe this run"
        ),
    ]
    simulation["result_digests"] = {"native": native, "child": child}
    return profile.with_(settings={**profile.settings, "simulation": simulation})


def _build_profile(
    name: str,
    nodeid: str,
    events: Sequence[str],
    settings: RunSettings,
    run: ChildRun,
    native: Profile | None,
    session: Mapping[str, Any] | None,
    retried: str | None,
) -> Profile:
    plan = _check_run(nodeid, run)
    record = run.record
    pairs = list(zip(run.dumps, plan, strict=True))
    raw_names = list(run.dumps[0].events)
    statuses = event_statuses(events, raw_names, run.mode)
    counted = [e for e in events if statuses[e].available]
    vg_walls = [p["wall_ns"] for _, p in pairs if p["kind"] == "repeat"]
    calls = int(record["calls"])
    vg_per_call = statistics.median(vg_walls) / calls
    warm = record.get("warmup", {}).get("durations_ns") or []
    native_per_call = native.latency.p50_ms * 1e6 if native is not None else None
    repeats = []
    for dump, step in pairs:
        if step["kind"] != "repeat":
            continue
        values = logical_counts(dump.events)
        wall = step["wall_ns"]
        counts = {e: Count(float(values[e]), int(values[e]), wall, wall) for e in counted}
        estimate = round(native_per_call * calls) if native_per_call else wall
        repeats.append(Repeat(calls, estimate, CounterSample(counts=counts)))
    overhead_dump = next(d for d, p in pairs if p["kind"] == "overhead")
    overhead_values = logical_counts(overhead_dump.events)
    overhead = {e: float(overhead_values[e]) for e in counted}
    per_call = [
        r.sample.counts["instructions"].value / r.calls
        for r in repeats
        if "instructions" in r.sample.counts and r.calls
    ]
    spread = (max(per_call) - min(per_call)) / min(per_call) if per_call and min(per_call) else None
    warnings = _warnings(record, session or (native.session if native else None))
    if spread is not None and spread > REPEAT_SPREAD_WARN:
        warnings.append(
            f"the repeats' instruction counts differ by {spread:.1%}: the workload "
            "did different work in some repeat (time- or state-dependent code, "
            "e.g. periodic bookkeeping); compare the smallest or the median repeat, "
            "or raise calls per repeat"
        )
    simulation: dict[str, Any] = {
        "tool": "callgrind",
        "mode": run.mode,
        "mode_text": MODE_TEXT[run.mode],
        "valgrind": valgrind_version(shutil.which("valgrind") or "valgrind"),
        "options": run.valgrind_options,
        "caches": dict(run.dumps[0].caches),
        "cache_source": run.cache_notes,
        "region": (
            f"one ctypes callback per repeat (libc qsort compare), callgrind "
            f"--toggle-collect={REGION_FUNCTION} --dump-after={REGION_FUNCTION}"
        ),
        "instrumentation": (
            "off during the warm-up, switched on by vgdb after it"
            if record.get("instrumentation", {}).get("mode") == "vgdb"
            else "on from the start (--instr-atstart=yes)"
        ),
        "counted_threads": "the thread that runs the callback only",
        "threads": len(record.get("threads") or []) or None,
        "other_threads_cpu_ns": record.get("other_threads_cpu_ns"),
        "child_warmup_calls": len(warm),
        "discarded_callbacks": sum(1 for p in plan if p["kind"] == "warmup"),
        "python_hash_seed": HASH_SEED,
        "env": dict(CHILD_ENV),
        "raw": [dict(d.events) for d, p in pairs if p["kind"] == "repeat"],
        "instructions_spread": spread,
        "valgrind_repeat_wall_ns": vg_walls,
        "valgrind_ns_per_call": vg_per_call,
        "native_ns_per_call": native_per_call,
        "slowdown_vs_native": (vg_per_call / native_per_call if native_per_call else None),
        "uninstrumented_slowdown_vs_native": (
            statistics.median(warm[-3:]) / native_per_call if warm and native_per_call else None
        ),
        "child_wall_s": round(run.wall_s, 2),
        "child": run.child,
        "child_exit_status": run.returncode,
        "repeat_wall_ns": (
            "calls x native median latency" if native_per_call else "wall time under valgrind"
        ),
        "warnings": warnings,
    }
    if retried is not None:
        simulation["instrumentation"] += " (vgdb could not switch it on after the warm-up)"
        simulation["vgdb_failure"] = retried
    for key in [k for k, v in simulation.items() if v is None]:
        del simulation[key]
    if native is not None:
        latency, memory, steady = native.latency, native.memory, native.steady
        stages, latency_source = (
            native.stages,
            ("native run in the pytest process (backend none), before the simulation child"),
        )
    else:
        latency = LatencyStats.from_durations_ns(warm or [repeats[0].wall_ns])
        memory = MemoryStats(
            None, "none", "not measured: the simulate backend was given no native callable"
        )
        steady = Steadiness(
            False, len(warm), -1.0, settings.steady_threshold, settings.steady_window
        )
        stages, latency_source = (
            (),
            (
                "warm-up in the simulation child under valgrind without instrumentation (NOT "
                "native: valgrind runs it several times slower)"
            ),
        )
    run_settings = {
        **settings.to_dict(),
        "repeat": len(repeats),
        "repeat_requested": settings.repeat,
        "calls_per_repeat": calls,
        "latency_source": latency_source,
        "simulation": simulation,
    }
    return stamped_profile(
        name=name,
        backend=BACKEND,
        events=tuple(statuses[e] for e in events),
        repeats=tuple(repeats),
        latency=latency,
        memory=memory,
        steady=steady,
        settings=run_settings,
        session=session or (native.session if native else None) or record.get("session"),
        stages=stages,
        overhead=overhead,
        outputs_ok=bool(record.get("outputs_ok", True)) and (native.outputs_ok if native else True),
        conditions=native.conditions if native is not None else None,  # timings' machine state
    )


def _median_per_call(profile: Profile) -> float | None:
    values = simulate_noise.per_call_instructions(profile)
    return statistics.median(values) if values else None


def with_run_to_run(profile: Profile, other: Profile, wall_s: float | None = None) -> Profile:
    """``profile`` with the relative difference of its instructions per call from
    ``other``, a second run of the same region (``settings.simulation.run_to_run``)."""
    first, second = _median_per_call(profile), _median_per_call(other)
    if not first or second is None:
        return profile
    entry: dict[str, Any] = {
        simulate_noise.METRIC: (second - first) / first,
        "runs": [first, second],
    }
    if wall_s is not None:
        entry["second_run_wall_s"] = round(wall_s, 2)
    sim = {**profile.settings.get("simulation", {}), "run_to_run": entry}
    return profile.with_(settings={**profile.settings, "simulation": sim})


def with_resolution(profile: Profile) -> Profile:
    """``profile`` with the smallest instructions-per-call change it can separate
    (``settings.simulation.resolution``, from its own noise: simulate_noise)."""
    value = simulate_noise.resolution(profile)
    if value is None:
        return profile
    sim = {
        **profile.settings.get("simulation", {}),
        "resolution": {
            simulate_noise.METRIC: value,
            "noise": simulate_noise.profile_noise(profile),
            "from": "repeats' spread"
            + (
                " and a second run of the region"
                if "run_to_run" in profile.settings.get("simulation", {})
                else ""
            ),
        },
    }
    return profile.with_(settings={**profile.settings, "simulation": sim})


def _warnings(record: Mapping[str, Any], session: Mapping[str, Any] | None) -> list[str]:
    out = []
    session = session or record.get("session") or {}
    intra = session.get("intra_op_threads")
    if isinstance(intra, int) and intra != 1:
        out.append(
            f"the ONNX Runtime session has intra_op_threads={intra}: pool-thread work "
            "is not counted; use intra_op_threads=1 under simulate"
        )
    if session.get("allow_spinning"):
        out.append(
            "ONNX Runtime spinning is on: the calling thread's spin-waits are counted as work"
        )
    return out
