"""The simulate backend's child side: measuring the region inside the valgrind child.

Owns: what runs in the pytest process that valgrind runs (see ``docs/simulate.md``):
the region as ONE ctypes callback per repeat (:func:`run_as_callback`: libc ``qsort``
on a two-element array whose compare function is the workload; callgrind counts only
inside ``closure_fcn`` and dumps once per callback), the uninstrumented warm-up,
switching callgrind's instrumentation on and off through vgdb, and sending the
:class:`~.protocol.ChildRecord` back (a JSON file, or the pipe of a shared
child, which runs ahead of the parent and sends every region of its tests as it is
measured; the test start/finish calls the child's plugin object makes).
:func:`child_measure` returns a smoke-like Profile so the test body goes on.

Must not: judge (budgets, baselines) or render; start valgrind or build the
simulated Profile (the parent does: :mod:`.parent`).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from ...core.profile import Profile
from ...core.result_digest import result_digest
from ..child_process import ENV_CHILD, ENV_CLAIMS, ENV_SHARED, is_shared_child
from ..runner import (
    RunSettings,
    add_note,
    measurement_environment,
    outputs_finite,
    session_facts,
    uncounted_profile,
    workload_name,
)
from .callgrind import CallgrindFormatError, dump_files, read_dump
from .client_requests import START_INSTRUMENTATION, STOP_INSTRUMENTATION, client_requests
from .cpu_features import seen_features
from .protocol import (
    CHILD_BACKEND,
    CLIENT_REQUEST,
    DEFAULT_CALLS,
    ENV_OPTIONS,
    ENV_VARIANT,
    ChildOptions,
    ChildRecord,
    Instrumentation,
    PlanStep,
    RegionReply,
    SimulateError,
    child_repeats,
    claim,
)

#: Warm-up calls in the child: CHILD_MIN_WARMUP calls of the workload come before the
#: first counted repeat, the discarded callback's included (``settings.warmup`` of them
#: at least uninstrumented), a fixed number so that every run reaches the region in the
#: same state. CPython 3.11's specialising interpreter quickens a code object at its 8th
#: call (``QUICKENING_WARMUP_DELAY``; a loop's backward jumps count too) and specialises
#: each instruction the first time it runs after that, so a function the workload
#: calls once per call runs specialised from its 9th call on: 7 uninstrumented calls
#: and the discarded callback's one, and the repeats run specialised code. Un-quickened,
#: ONNX Runtime's ``session.run`` path costs about 2,700 instructions more per call
#: (49.3k against 46.6k for a one-node model after 3 and after 10 warm-up calls,
#: measured under callgrind). On the example's 20-million-instruction MiniLM int8 (two
#: runs each, ONNX Runtime 1.32) the repeats spread 0.009-0.030% after 7 + 1 calls,
#: 0.020-0.024% after 10 + 1 and 0.040% after 5 + 1, the counts per call within 0.015%
#: of each other; each uninstrumented call saved is 0.16 s of the child's time there.
#: Python 3.12 quickens code when it is created and needs fewer calls, 3.10 does not
#: specialise; the same number holds for all (measured on 3.11).
#: A large call does not need the full warm-up, and eight calls of one cost many
#: seconds: once CHILD_UNINSTRUMENTED_WARMUP uninstrumented calls took over
#: CHILD_WARMUP_CHECK_S, the warm-up stops and the first counted callback (discarded)
#: says how many instructions a call has. A call of CHILD_LARGE_CALL_INSTRUCTIONS or
#: more goes on to the repeats: 10,000 instructions are 0.02% of 50 million, the
#: counts' own spread. A smaller one (slow under valgrind: float FMA code runs at about
#: 5 million instructions a second there) is topped up: instrumentation off, the
#: remaining warm-up calls, instrumentation on, one more discarded callback. The
#: decision rests on counted instructions, so a busy machine cannot change what is
#: counted, only whether the check happens. Only a workload so expensive that the
#: warm-up passes CHILD_WARMUP_MAX_S stops earlier (after one call at least).
CHILD_MIN_WARMUP = 8
CHILD_UNINSTRUMENTED_WARMUP = 3
CHILD_WARMUP_CHECK_S = 3.0
CHILD_LARGE_CALL_INSTRUCTIONS = 50_000_000
CHILD_WARMUP_MAX_S = 10.0
TRIGGER_TIMEOUT = 120.0  # seconds the child waits for vgdb to switch instrumentation on

#: The clock of the warm-up budget and of the plan's steps: this process's CPU time, not
#: wall time. The parent stops a shared child (SIGSTOP) while it times something; a
#: wall clock would count that pause as the workload's time, cut the warm-up short
#: (and so change the counts) depending on how long the parent's tests ran, and inflate
#: the slowdown against native. valgrind runs one guest thread at a time, so while the
#: child runs its CPU time is its wall time.
_clock_ns = time.process_time_ns


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


# -- which region this child measures ------------------------------------------------
@dataclass(frozen=True)
class ChildRequest:
    """What the parent asked the child for (from the environment, or a shared child's pipe)."""

    result_path: Path
    variant: str
    options: ChildOptions = field(default_factory=ChildOptions)
    #: Sends the result to the parent (a shared child's reply pipe); None: the JSON file.
    respond: Callable[[ChildRecord], None] | None = None

    def send(self, record: ChildRecord) -> None:
        if self.respond is not None:
            self.respond(record)
        else:
            record.write(self.result_path)


def child_request() -> ChildRequest | None:
    path = os.environ.get(ENV_CHILD)
    if not path:
        return None
    return ChildRequest(
        result_path=Path(path),
        variant=os.environ.get(ENV_VARIANT, ""),
        options=ChildOptions.from_json(os.environ.get(ENV_OPTIONS)),
    )


_measured_variants: set[str] = set()


def request_here(
    nodeid: str | None, variant: str, settings: RunSettings | None = None
) -> ChildRequest | None:
    """What to measure if this region is the child's to measure, else None (run it uncounted).

    A child for one test measures the variant named in its environment, once; a
    shared child every region of its tests, once each, ahead of the parent: the
    repeats from the runner's ``settings`` (the same marker and ini the parent
    reads), the dumps moved into a folder of the region's own before its record goes.
    """
    request = child_request()
    if request is None:
        raise SimulateError(
            f"child_measure runs only in a simulation child ({ENV_CHILD} is "
            "not set); use profile_via_child in the test process"
        )
    if is_shared_child():
        here = nodeid or os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0]
        link = _child_link()
        if (here, variant) in link.measured or link.parent_gone():
            return None
        link.measured.add((here, variant))
        repeats = child_repeats((settings or RunSettings()).repeat)
        return replace(
            request,
            variant=variant,
            options=replace(request.options, repeats=repeats, calls=DEFAULT_CALLS),
            respond=functools.partial(link.region, here, variant, request.options.dumps),
        )
    if variant != request.variant or variant in _measured_variants:
        return None
    _measured_variants.add(variant)
    return request


# -- facts about this process ----------------------------------------------------------
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


def _instrumentation(options: ChildOptions, state: str) -> Instrumentation:
    """Switch callgrind's instrumentation ``on``/``off``: by a client request where this
    machine has one (:mod:`.client_requests`), else through vgdb, busy until it answered.

    Off outside the region matters as much as on: everything after the region
    (pytest's reporting, interpreter shutdown) would otherwise run at the
    instrumented speed, minutes for a large import graph.
    """
    if options.trigger != "vgdb":
        return Instrumentation("on from the start")
    requests = client_requests()
    if requests is not None and requests.running_on_valgrind():
        begin = time.monotonic()
        requests.send(START_INSTRUMENTATION if state == "on" else STOP_INSTRUMENTATION)
        return Instrumentation(CLIENT_REQUEST, True, None, round(time.monotonic() - begin, 3))
    command = [options.vgdb or "vgdb", f"--pid={os.getpid()}", "--max-invoke-ms=0"]
    if options.vgdb_prefix:
        command.insert(1, f"--vgdb-prefix={options.vgdb_prefix}")
    command += ["instrumentation", state]
    begin = time.monotonic()
    try:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except OSError as exc:
        return Instrumentation("vgdb", False, f"cannot run vgdb: {exc}")
    spin = 0
    # valgrind polls vgdb only while the program runs code: keep running some.
    while proc.poll() is None:
        spin = (spin + sum(range(64))) & 0xFFFF
        if time.monotonic() - begin > TRIGGER_TIMEOUT:
            proc.kill()
            proc.wait()
            why = f"vgdb did not answer within {TRIGGER_TIMEOUT:g}s"
            return Instrumentation("vgdb", False, why)
    output = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
    return Instrumentation(
        "vgdb", proc.returncode == 0, output.strip()[-400:], round(time.monotonic() - begin, 3)
    )


def session_of(call: Callable[..., Any]) -> dict | None:
    """The ONNX Runtime session facts of a workload that is ``session.run`` (or a partial)."""
    target = call.func if isinstance(call, functools.partial) else call
    try:
        return session_facts(target)
    except Exception:
        return None


def session_runs(call: Callable[[], Any]) -> tuple[dict[str, int] | None, Any]:
    """ONNX Runtime session runs in one call of ``call``, per session label (None: no
    ONNX Runtime here), and what that call returned. A workload that is not
    ``session.run`` itself is called once, with the sessions watched
    (onnx.find_session_calls); ``session.run`` itself runs its one session once per call
    and is not called here (the second value is None then).

    The simulate backend compares these between the native run and the child: a workload
    that runs its model another number of times there did different work.
    """
    if "onnxruntime" not in sys.modules:
        return None, None
    from ...onnxrt.sessions import direct_call, find_session_calls

    direct = direct_call(call)
    if direct is not None:
        return {direct.label: 1}, None
    returned: list[Any] = [None]

    def watched() -> Any:
        returned[0] = call()
        return returned[0]

    search = find_session_calls(watched)
    return {s.label: s.runs for s in search.sessions}, returned[0]


# -- measuring the region ------------------------------------------------------------
def child_measure(
    call: Callable[[], Any],
    *,
    name: str | None = None,
    settings: RunSettings | None = None,
    nodeid: str | None = None,
) -> Profile:
    """In the simulation child: measure ``call`` if it is the requested variant.

    The requested variant: warm-up calls through the callback, uninstrumented
    (:func:`_uninstrumented_warmup`: CHILD_MIN_WARMUP calls with the discarded
    callback's, at least ``settings.warmup``; a fixed number unless the
    warm-up passes CHILD_WARMUP_MAX_S), instrumentation on (vgdb), one callback
    repeat that is discarded (it warms the simulated caches and pays one-off
    costs), ``repeats`` callback repeats of ``calls`` calls each, one empty
    callback (the region's own overhead), instrumentation off. Sends the
    :class:`ChildRecord` to the parent. Any other variant runs once, uncounted.
    Returns a smoke-like Profile (backend ``simulate-child``, no counts): the test
    body goes on; the caller must not judge it or write it as a baseline.
    ``nodeid``: the running test (a shared child serves many; default
    ``PYTEST_CURRENT_TEST``).
    """
    settings = settings or RunSettings()
    variant = name or ""
    label = name or workload_name(call)
    request = request_here(nodeid, variant, settings)
    if request is None:
        begin = _clock_ns()
        result = call()
        return _child_profile(
            label,
            [_clock_ns() - begin],
            result,
            {"simulate_child": True, "measured": False},
        )
    options = request.options
    record = ChildRecord(
        variant=variant,
        pid=os.getpid(),
        repeats=options.repeats,
        calls=options.calls,
        session=session_of(call),
    )
    warm = record.warmup_ns
    last: Any = None
    try:
        with measurement_environment(settings):
            # The warm-up runs through the same callback as the repeats, so that the
            # callback's own Python code is quickened and specialised before counting.
            wanted = max(1, settings.warmup)
            gated = options.trigger == "vgdb" and options.dumps is not None
            check_from = max(wanted, CHILD_UNINSTRUMENTED_WARMUP)
            full = _uninstrumented_warmup(wanted, options.calls)
            for index in range(full):
                if index and sum(warm) > CHILD_WARMUP_MAX_S * 1e9:
                    break
                if gated and index >= check_from and sum(warm) > CHILD_WARMUP_CHECK_S * 1e9:
                    break  # a slow call: its first counted callback says if it is large
                begin = _clock_ns()
                try:
                    if index == 0:  # this warm-up call also counts the session runs
                        record.session_runs = _watched_call(call)
                    else:
                        run_as_callback(call, 1)
                except BaseException as exc:
                    add_note(
                        exc,
                        f"inferperf: the workload raised in warm-up call {index + 1} "
                        "of the simulation child",
                    )
                    raise
                warm.append(_clock_ns() - begin)
                if options.trigger != "vgdb":  # instrumented already: callgrind dumps these
                    record.plan.append(PlanStep("warmup", 1, warm[-1]))
            # /proc read outside the switches: instrumented, each first read and its
            # Python cost about 0.1 s of callgrind's simulation. No thread starts
            # between here and the region (the warm-up started the pools), and other
            # threads' CPU time around the switches is theirs as much as the region's
            record.threads = _thread_names()
            cpu_before = _thread_cpu_ns()
            record.instrumentation = _instrumentation(options, "on")
            if record.instrumentation.ok:
                try:
                    short = gated and len(warm) < full
                    last = _measure_callbacks(call, options, record, len(warm) if short else None)
                finally:  # the rest of the child runs at uninstrumented speed
                    record.instrumentation_off = _instrumentation(options, "off")
                record.other_threads_cpu_ns = _other_threads_cpu(cpu_before, _thread_cpu_ns())
                record.outputs_ok = outputs_finite(last)
                record.result_digest = result_digest(last)
            features = seen_features()
            record.cpu_features = sorted(features) if features is not None else None
    except BaseException as exc:
        record.error = f"{type(exc).__name__}: {exc}"
        request.send(record)
        raise
    request.send(record)
    return _child_profile(label, warm, last, {"simulate_child": True, "measured": True})


def _uninstrumented_warmup(wanted: int, calls: int) -> int:
    """The uninstrumented warm-up calls: ``wanted`` (the settings' warm-up, at least 1)
    and as many as CHILD_MIN_WARMUP needs beside the discarded callback's ``calls``."""
    return max(wanted, CHILD_MIN_WARMUP - calls)


def _watched_call(call: Callable[[], Any]) -> dict[str, int] | None:
    """One warm-up call, through the callback as every other, with the sessions watched."""
    runs, _ = session_runs(lambda: run_as_callback(call, 1))
    if runs is None:  # no ONNX Runtime here: an ordinary warm-up call
        run_as_callback(call, 1)
    return runs


def _measure_callbacks(
    call: Callable[[], Any], options: ChildOptions, record: ChildRecord, warmed: int | None
) -> Any:
    """The instrumented part: discarded repeat, the rest of the warm-up for a small call
    (``warmed``: the uninstrumented warm-up calls, fewer than CHILD_MIN_WARMUP; None:
    they were enough), measured repeats, empty callback. None when instrumentation did
    not come back on after that warm-up (``record.instrumentation`` says why)."""
    _counted(call, options.calls, "warmup", record)
    if warmed is not None and not _top_up(call, options, record, warmed + options.calls):
        return None
    last: Any = None
    for _ in range(options.repeats):
        last = _counted(call, options.calls, "repeat", record)
    _counted(_nothing, 0, "overhead", record)
    record.region_wall_ns = sum(p.wall_ns for p in record.plan)
    return last


def _counted(call: Callable[[], Any], calls: int, kind: str, record: ChildRecord) -> Any:
    """One callback of ``calls`` calls, instrumented: callgrind dumps it as plan step ``kind``."""
    begin = _clock_ns()
    result = run_as_callback(call, calls)
    record.plan.append(PlanStep(kind, calls, _clock_ns() - begin))
    return result


def _top_up(
    call: Callable[[], Any], options: ChildOptions, record: ChildRecord, warmed: int
) -> bool:
    """After the first counted callback of a slow call: the rest of the warm-up, up to
    CHILD_MIN_WARMUP calls, unless a call has CHILD_LARGE_CALL_INSTRUCTIONS (an unreadable
    dump counts as small). Uninstrumented where instrumentation switches off (until the
    warm-up passes CHILD_WARMUP_MAX_S), then on again with one more discarded callback;
    else instrumented, each callback discarded. False when instrumentation did not come
    back on."""
    remaining = CHILD_MIN_WARMUP - warmed  # ``warmed`` counts the discarded callback's calls
    instructions = _last_callback_instructions(options.dumps)
    large = CHILD_LARGE_CALL_INSTRUCTIONS * max(1, options.calls)
    if remaining <= 0 or (instructions is not None and instructions >= large):
        return True
    if not _instrumentation(options, "off").ok:
        for _ in range(remaining):
            _counted(call, 1, "warmup", record)
        return True
    for _ in range(remaining):
        if sum(record.warmup_ns) > CHILD_WARMUP_MAX_S * 1e9:
            break  # as in the first part of the warm-up
        begin = _clock_ns()
        run_as_callback(call, 1)
        record.warmup_ns.append(_clock_ns() - begin)
    again = _instrumentation(options, "on")
    if not again.ok:
        record.instrumentation = again
        return False
    _counted(call, options.calls, "warmup", record)  # the simulated caches are cold again
    return True


_DUMP_HEAD = 64 * 1024  # bytes of a dump read for its ``summary:`` line (in the header)


def _last_callback_instructions(dumps: str | None) -> int | None:
    """Instructions in this process's newest numbered callgrind dump (written as the
    callback returned: ``--dump-after``), or None where none can be read. The file
    without a number is the one callgrind writes at exit, empty until then."""
    if not dumps:
        return None
    folder, stem = os.path.split(dumps)
    base = f"{stem}.{os.getpid()}"
    numbered = [p for p in dump_files(folder, os.getpid(), stem) if p.name != base]
    if not numbered:
        return None
    newest = max(numbered, key=lambda p: int(p.name.rsplit(".", 1)[1]))
    try:  # the header's summary line is enough: the body runs at instrumented speed here
        with open(newest, encoding="utf-8", errors="replace") as handle:
            dump = read_dump(handle.read(_DUMP_HEAD))
    except (OSError, CallgrindFormatError):
        return None
    return int(dump.events.get("Ir", 0)) or None


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


# -- a shared child's end of the conversation ------------------------------------------
class _Link:
    """The child's end: the parent's hang-up in (it never writes on that pipe, it closes
    it), records out."""

    def __init__(self, spec: str) -> None:
        fields = [int(x) for x in spec.split(",")]
        self.hang_up: IO[bytes] = os.fdopen(fields[0], "rb", buffering=0)
        self.replies: IO[str] = os.fdopen(fields[1], "w", encoding="utf-8")
        self.parent = fields[2] if len(fields) > 2 else None
        self.measured: set[tuple[str, str]] = set()
        self.regions = 0
        self.gone = False
        self.claims = os.environ.get(ENV_CLAIMS) or None  # None: every test given is ours
        self.claimed: set[str] = set()

    def ours(self, nodeid: str) -> bool:
        """True when this child runs ``nodeid``: it claimed it now or before (the first of
        the children to reach a test claims it), or no claims are shared."""
        if self.claims is None or nodeid in self.claimed:
            return True
        if claim(self.claims, nodeid, str(os.getpid())):
            self.claimed.add(nodeid)
            return True
        return False

    def parent_gone(self) -> bool:
        """True once the parent closed its end (it needs no more regions) or exited."""
        if not self.gone:
            ready, _, _ = select.select([self.hang_up], [], [], 0)
            closed = bool(ready) and not self.hang_up.read(1 << 12)
            orphaned = self.parent is not None and os.getppid() != self.parent
            self.gone = closed or orphaned
        return self.gone

    def region(self, nodeid: str, variant: str, dumps: str | None, record: ChildRecord) -> None:
        """Send a measured region's record, its callgrind dumps moved to a folder of its own
        first (they are complete on disk: callgrind writes each as its callback returns)."""
        folder = None
        if dumps:
            self.regions += 1
            where, stem = os.path.split(dumps)
            folder = f"{dumps}.region-{self.regions}"
            os.makedirs(folder, exist_ok=True)
            for path in dump_files(where, os.getpid(), stem):
                if path.name != f"{stem}.{os.getpid()}":  # the one written at exit
                    os.replace(path, os.path.join(folder, path.name))
        self.send(RegionReply(nodeid, variant, record, folder))

    def send(self, reply: RegionReply) -> None:
        with contextlib.suppress(OSError):  # the parent is gone: nothing to tell
            self.replies.write(reply.to_json() + "\n")
            self.replies.flush()


_link: _Link | None = None


def _child_link() -> _Link:
    global _link
    if _link is None:
        spec = os.environ.get(ENV_SHARED)
        if not spec:
            raise SimulateError(f"not a shared simulation child ({ENV_SHARED} is not set)")
        _link = _Link(spec)
    return _link


def die_with_parent() -> None:
    """Ask the kernel to end this shared child when its parent ends (``PR_SET_PDEATHSIG``):
    the parent stops it (SIGSTOP) while it times native runs, and a stopped child of a
    parent that crashed would wait for ever. Linux only; elsewhere nothing happens."""
    PR_SET_PDEATHSIG = 1
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    parent = _child_link().parent
    if parent is not None and os.getppid() != parent:  # it ended before the request
        os._exit(3)


def child_test_starting(nodeid: str) -> str | None:
    """Before a test runs in the child: None to run it, or why to skip it (the parent
    needs no more, or another shared child claimed the test first)."""
    link = _child_link()
    if link.parent_gone():
        return "inferperf: the parent needs no more simulations"
    if not link.ours(nodeid):
        return "inferperf: another shared simulation child runs this test"
    return None


def child_test_finished(nodeid: str) -> None:
    """After a test of this child's ran: tell the parent, so that a region of it the child
    did not reach is measured in a child of its own (a test another child ran: nothing)."""
    link = _child_link()
    if link.claims is None or nodeid in link.claimed:
        link.send(RegionReply(nodeid, finished=True))
