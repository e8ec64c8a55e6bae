"""Run a workload the way a careful engineer would, and return its Profile.

Owns: warm-up until the timings are steady (up to a cap), calibrating calls
per repeat, counting each repeat separately, per-call latency, peak RSS of
the measured region and its growth above the region's starting RSS, the
machine's conditions around the measurement (``conditions.recorded``),
stage attribution, the counting overhead, the
measurement environment (gc, seed, CPU pinning, all restored), the timeout
(partial results) and what happens when the workload raises.

Must not: judge the result (budgets, baselines) or render it.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import math
import os
import random
import resource
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone
from typing import Any

from ..core.errors import InferperfError
from ..core.profile import (
    LatencyStats,
    MemoryStats,
    Profile,
    Repeat,
    StageStats,
    Steadiness,
)
from ..core.watchdog import CallOverrun, Watchdog
from ..pmu import make_backend
from ..pmu.base import CounterBackend, CounterSample, needs_screening
from ..pmu.events import DEFAULT_EVENTS
from ..pmu.trust import screen
from . import conditions
from .machine import machine_facts, this_cpu
from .stages import REST_STAGE, StageRecorder, recording

OVERHEAD_SAMPLES = 5


class RunnerConfigError(InferperfError, ValueError):
    """A runner setting that cannot work; the message names it and the fix."""


class MeasurementTimeout(InferperfError, TimeoutError):
    """Not even one measured repeat finished within the timeout."""

    def __init__(self, message: str, *, hint: str = "") -> None:
        self.about(message, hint=hint)
        super().__init__(self.text())


@dataclass(frozen=True)
class RunSettings:
    """How a workload is run. Stored in the Profile."""

    warmup: int = 3
    warmup_max: int = 50
    repeat: int = 30
    timeout: float = 60.0
    min_time: float = 0.01
    steady_window: int = 5
    steady_threshold: float = 0.05
    pin: tuple[int, ...] | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        def need(ok: bool, text: str) -> None:
            if not ok:
                raise RunnerConfigError(text)

        need(
            _is_int(self.warmup) and self.warmup >= 0,
            f"warmup={self.warmup!r}: the number of warm-up calls must be an integer >= 0",
        )
        need(
            _is_int(self.warmup_max) and self.warmup_max >= self.warmup,
            f"warmup_max={self.warmup_max!r} must be an integer >= warmup ({self.warmup})",
        )
        need(
            _is_int(self.repeat) and self.repeat >= 1,
            f"repeat={self.repeat!r}: the number of measured repeats must be an integer >= 1",
        )
        need(
            _is_number(self.timeout) and self.timeout > 0,
            f"timeout={self.timeout!r}: the time limit in seconds must be a number > 0",
        )
        need(
            _is_number(self.min_time) and self.min_time >= 0,
            f"min_time={self.min_time!r}: the minimum repeat length in seconds must be >= 0",
        )
        need(
            _is_int(self.steady_window) and self.steady_window >= 2,
            f"steady_window={self.steady_window!r} must be an integer >= 2",
        )
        need(
            _is_number(self.steady_threshold) and self.steady_threshold > 0,
            f"steady_threshold={self.steady_threshold!r} must be a number > 0 (e.g. 0.05)",
        )
        if self.pin is not None:
            available = sorted(os.sched_getaffinity(0))
            need(
                all(_is_int(c) for c in self.pin) and set(self.pin) <= set(available),
                f"pin={self.pin!r}: CPUs must be among those this process may use: {available}",
            )

    def to_dict(self) -> dict:
        data = asdict(self)
        data["pin"] = None if self.pin is None else list(self.pin)
        return data


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def normalise_pin(pin: int | Sequence[int] | None) -> tuple[int, ...] | None:
    if pin is None:
        return None
    if isinstance(pin, int):
        return (pin,)
    return tuple(pin)


# -- pure helpers ------------------------------------------------------------
def mad_over_median(durations: Sequence[float]) -> float:
    """The median absolute deviation of ``durations`` over their median (0 for a median <= 0).

    What the warm-up's steadiness test (:func:`is_steady`) needs: a scale that one slow
    call in the window (an interrupt, a page fault, a collection) does not move, so a
    workload whose calls agree is declared steady despite it. The median absolute
    deviation ignores up to half the values (breakdown point 50%: Rousseeuw and Croux,
    "Alternatives to the Median Absolute Deviation", JASA 88(424), 1993); the range
    (:func:`measure.simulate.noise.range_over_median`) is moved by any one of them.
    ``steady_threshold`` is documented as this ratio (docs/api.md).
    """
    med = statistics.median(durations)
    if med <= 0:
        return 0.0
    return statistics.median(abs(d - med) for d in durations) / med


def is_steady(
    durations: Sequence[float], *, warmup: int, window: int, threshold: float
) -> tuple[bool, float]:
    """Steady once, after the first ``warmup`` calls, the last ``window`` agree."""
    tail = list(durations[warmup:])[-window:]
    if len(tail) < window:
        return False, math.inf
    spread = mad_over_median(tail)
    return spread <= threshold, spread


#: Most calls in one repeat. A sub-microsecond workload would otherwise get tens of
#: thousands per repeat (the loop's own timing costs more than the call), and a trivial
#: test would take seconds; 1,000 calls already average out the timer's resolution.
MAX_CALLS_PER_REPEAT = 1000


def calls_per_repeat(typical_call_ns: float, min_time: float) -> int:
    """Enough calls that one repeat lasts ``min_time`` seconds (at least one, at most
    :data:`MAX_CALLS_PER_REPEAT`)."""
    if typical_call_ns <= 0:
        return 1
    return min(MAX_CALLS_PER_REPEAT, max(1, math.ceil(min_time * 1e9 / typical_call_ns)))


# -- the environment -----------------------------------------------------------
#: Before a process's first measurement, its other threads are given time to stop
#: using the CPU. numpy's OpenBLAS starts its worker threads when numpy is imported,
#: and each spins for 2**THREAD_TIMEOUT ticks of its cycle counter before it sleeps
#: (OpenBLAS driver/others/blas_server.c, THREAD_TIMEOUT 28 unless built otherwise or
#: set by OPENBLAS_THREAD_TIMEOUT at start-up): measured here, 66 ms of a whole CPU on
#: the project's 4 GHz x86 VM, longer where that counter ticks slower (Arm's generic
#: timer runs at tens of MHz). The engine imports numpy just before a process's first
#: measurement, so the spin landed in it: a fresh process's first test read +35% CPU
#: time per call (a 0.6 ms call; its latency unchanged), which a baseline's or a
#: confirmation's fresh process would take for the workload's.
SETTLE_WINDOW_S = 0.02
#: Most seconds waited (less where the measurement's timeout is short: a quarter of it).
SETTLE_MAX_S = 2.0
#: Other threads using less than this share of one CPU count as settled.
SETTLE_BUSY_SHARE = 0.25
_settled = False


def settle_other_threads(limit_s: float = SETTLE_MAX_S) -> float:
    """Once per process: wait, in windows of :data:`SETTLE_WINDOW_S` and at most
    ``limit_s`` seconds, until the process's other threads use less than
    :data:`SETTLE_BUSY_SHARE` of a CPU. Returns the seconds waited (0 after the first
    call). The workload's own threads are not running then: nothing of it is called."""
    global _settled
    if _settled:
        return 0.0
    _settled = True
    begin = time.perf_counter()
    while time.perf_counter() - begin < limit_s:
        cpu0, own0, wall0 = time.process_time(), time.thread_time(), time.perf_counter()
        time.sleep(SETTLE_WINDOW_S)
        others = (time.process_time() - cpu0) - (time.thread_time() - own0)
        if others < SETTLE_BUSY_SHARE * (time.perf_counter() - wall0):
            break
    return time.perf_counter() - begin


@contextlib.contextmanager
def measurement_environment(settings: RunSettings) -> Iterator[None]:
    """gc collected then off, fixed seeds, optional pinning; all restored after.

    What survived the collection is frozen (``gc.freeze``) until the end, so the
    collection just before the measured repeats (of the warm-up's garbage) examines
    only objects made since, not every object of pytest, numpy and the test: a full
    collection of such a process takes about 10 ms, once per test. A freeze the test
    made itself is left as it is."""
    gc_was_enabled = gc.isenabled()
    freezes = False
    py_state = random.getstate()
    np_random = _numpy_random()
    np_state = np_random.get_state() if np_random else None
    affinity = os.sched_getaffinity(0) if settings.pin is not None else None
    try:
        gc.collect()
        gc.disable()
        freezes = gc.get_freeze_count() == 0
        if freezes:
            gc.freeze()
        random.seed(settings.seed)
        if np_random:
            np_random.seed(settings.seed)
        if settings.pin is not None:
            os.sched_setaffinity(0, settings.pin)
        yield
    finally:
        if affinity is not None:
            os.sched_setaffinity(0, affinity)
        if np_random and np_state is not None:
            np_random.set_state(np_state)
        random.setstate(py_state)
        if freezes:
            gc.unfreeze()
        if gc_was_enabled:
            gc.enable()


def _numpy_random() -> Any:
    try:
        import numpy.random
    except ImportError:  # pragma: no cover - numpy is a dependency
        return None
    return numpy.random


# -- memory ----------------------------------------------------------------
def reset_peak_rss() -> tuple[str, str | None]:
    """Reset the peak-RSS mark (``/proc/self/clear_refs`` = 5) where allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return "clear_refs", None
    except OSError as exc:
        return "ru_maxrss", (
            f"peak RSS is the process-lifetime peak (ru_maxrss), not the region's: "
            f"/proc/self/clear_refs is not writable ({exc.strerror})"
        )


def release_free_memory() -> bool:
    """Hand the C heap's free memory back to the OS (glibc ``malloc_trim(0)``).

    Memory freed by earlier tests but kept by the allocator would otherwise be reused
    by the region without growing RSS: the region's growth would depend on what ran
    before it. False where there is no glibc.
    """
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return False
    trim.argtypes = [ctypes.c_size_t]
    trim(0)
    return True


def read_rss() -> int | None:
    """The resident set size now (``VmRSS``), or None where it cannot be read."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def read_peak_rss(method: str) -> int | None:
    if method == "clear_refs":
        try:
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


# -- the runner --------------------------------------------------------------
def add_note(exc: BaseException, text: str) -> None:
    """Add ``text`` to ``exc``'s notes (where this Python has them): which phase raised."""
    if hasattr(exc, "add_note"):
        exc.add_note(text)


def _call_timed(call: Callable[[], Any], phase: str, guard: Watchdog | None = None) -> int:
    begin = time.perf_counter_ns()
    try:
        if guard is None:
            call()
        else:
            with guard.call():
                call()
    except CallOverrun as exc:
        raise MeasurementTimeout(
            f"{exc} during {phase}, before any measured repeat.",
            hint="Raise {timeout}, or make one call shorter.",
        ) from None
    except BaseException as exc:
        add_note(exc, f"inferperf: the workload raised during {phase}")
        raise
    return time.perf_counter_ns() - begin


def measure_overhead(counters: CounterBackend, samples: int = OVERHEAD_SAMPLES) -> dict[str, float]:
    """What an empty start/stop counts: the fixed cost included in every repeat."""
    runs: list[CounterSample] = []
    for _ in range(samples):
        counters.start()
        runs.append(counters.stop())
    names = {n for s in runs for n in s.counts}
    return {
        n: statistics.median(s.counts[n].value if n in s.counts else 0.0 for s in runs)
        for n in sorted(names)
    }


def profile(
    fn: Callable[..., Any],
    *args: Any,
    name: str | None = None,
    backend: str | CounterBackend = "perf",
    events: Sequence[str] = DEFAULT_EVENTS,
    session: Any = None,
    warmup: int = 3,
    warmup_max: int = 50,
    repeat: int = 30,
    timeout: float = 60.0,
    min_time: float = 0.01,
    steady_window: int = 5,
    steady_threshold: float = 0.05,
    pin: int | Sequence[int] | None = None,
    seed: int = 0,
    operators: bool = False,
    **kwargs: Any,
) -> Profile:
    """Warm ``fn(*args, **kwargs)`` until steady, count ``repeat`` repeats, return a Profile.

    With ``operators=True`` a separate pass adds ONNX Runtime's operator tables of every
    session the workload runs, whatever wraps it (:func:`.operator_pass.with_operator_times`,
    the pass every front-end runs).
    The runner's own keywords are reserved; pass a workload keyword of the same
    name through ``functools.partial``.
    """
    settings = RunSettings(
        warmup=warmup,
        warmup_max=max(warmup_max, warmup),
        repeat=repeat,
        timeout=timeout,
        min_time=min_time,
        steady_window=steady_window,
        steady_threshold=steady_threshold,
        pin=normalise_pin(pin),
        seed=seed,
    )
    call = functools.partial(fn, *args, **kwargs) if args or kwargs else fn
    if session is None:
        session = session_facts(fn)
    result = Runner(settings, backend=backend, events=events).run(
        call, name=name or workload_name(fn), session=session
    )
    if operators:
        from .operator_pass import with_operator_times

        result = with_operator_times(result, call)
    return result


def workload_name(fn: Callable[..., Any]) -> str:
    """What a workload is called where no name is given: its qualified name, else repr."""
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def session_facts(fn: Callable[..., Any]) -> dict | None:
    """The ONNX Runtime session facts of ``fn`` when it is a bound ``session.run``."""
    if "onnxruntime" not in sys.modules:  # no session behind it: skip importing onnx (~0.7 s)
        return None
    try:
        from ..onnxrt.sessions import describe_session, session_of
    except ImportError:  # pragma: no cover - onnxruntime is a dependency
        return None
    sess = session_of(fn)
    return describe_session(sess) if sess is not None else None


def outputs_finite(result: Any) -> bool:
    """False when the workload's result holds a NaN or infinite float (arrays, nested)."""
    if isinstance(result, list | tuple):
        return all(outputs_finite(r) for r in result)
    if isinstance(result, dict):
        return all(outputs_finite(r) for r in result.values())
    if isinstance(result, float):
        return math.isfinite(result)
    dtype = getattr(result, "dtype", None)
    if dtype is not None and getattr(dtype, "kind", "") in "fc":
        import numpy

        return bool(numpy.isfinite(result).all())
    return True


def smoke(fn: Callable[..., Any], *args: Any, name: str | None = None, **kwargs: Any) -> Profile:
    """Run ``fn`` once, uncounted: what ``pmu_profile`` does without ``--inferperf``."""
    from ..pmu.null_backend import NullCounters

    recorder = StageRecorder(NullCounters(events=()))
    with recording(recorder):  # region() times its stages here too: tests may read them
        begin = time.perf_counter_ns()
        result = fn(*args, **kwargs)
        wall = time.perf_counter_ns() - begin
    profile = uncounted_profile(
        name or workload_name(fn),
        "smoke",
        [wall],
        result,
        settings={"smoke": True},
        warmup_calls=0,
        memory_note="not measured in a smoke run (no --inferperf)",
    )
    return profile.with_(stages=_stage_stats(recorder, profile.repeats))


def stamped_profile(**fields: Any) -> Profile:
    """A Profile of this machine made now: machine class, machine facts and time filled in."""
    cpu = this_cpu()
    return Profile(
        machine_class=cpu.machine_class,
        machine=machine_facts(cpu),
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **fields,
    )


def uncounted_profile(
    name: str,
    backend: str,
    durations_ns: Sequence[int],
    result: Any,
    *,
    settings: Mapping[str, Any],
    warmup_calls: int,
    memory_note: str,
) -> Profile:
    """A Profile of calls that were timed but not counted (the last one is its repeat)."""
    return stamped_profile(
        name=name,
        backend=backend,
        events=(),
        repeats=(Repeat(1, int(durations_ns[-1]), CounterSample(counts={})),),
        latency=LatencyStats.from_durations_ns(list(durations_ns)),
        memory=MemoryStats(None, "none", memory_note),
        steady=Steadiness(False, warmup_calls, -1.0, 0.0, 0),
        settings=dict(settings),
        outputs_ok=outputs_finite(result),
    )


@dataclass
class Runner:
    settings: RunSettings
    backend: str | CounterBackend = "perf"
    events: Sequence[str] = DEFAULT_EVENTS
    last_result: Any = None
    calibrate_rounds: int = conditions.CALIBRATION_ROUNDS  # 0: no calibration workload

    def run(self, call: Callable[[], Any], *, name: str, session: dict | None = None) -> Profile:
        s = self.settings
        begin = time.monotonic()
        deadline = begin + s.timeout
        counters = (
            make_backend(self.backend, self.events)
            if isinstance(self.backend, str)
            else self.backend
        )
        with measurement_environment(s), Watchdog(deadline, timeout=s.timeout, name=name) as guard:
            warm, steady = self._warm_up(call, begin, deadline, guard)
            settle_other_threads(min(SETTLE_MAX_S, s.timeout / 4))
            tail = warm[s.warmup :][-s.steady_window :] or warm[-s.steady_window :]
            typical = statistics.median(tail) if tail else 0.0
            per_repeat = calls_per_repeat(typical, s.min_time)
            counters.open()
            machine_state: dict[str, Any] = {}
            try:
                overhead = measure_overhead(counters)
                recorder = StageRecorder(counters)
                with conditions.recorded(machine_state, calibrate_rounds=self.calibrate_rounds):
                    gc.collect()
                    release_free_memory()
                    mem_method, mem_note = reset_peak_rss()
                    start_rss = read_rss() if mem_method == "clear_refs" else None
                    repeats, durations, partial_reason = self._measure(
                        call, counters, recorder, per_repeat, deadline, begin, guard
                    )
                    peak = read_peak_rss(mem_method)
                statuses = counters.statuses()
            finally:
                counters.close()
        if needs_screening(counters) and repeats:  # an emulated PMU's cycles, silent events
            statuses, samples = screen(this_cpu(), statuses, [r.sample for r in repeats])
            repeats = [replace(r, sample=s) for r, s in zip(repeats, samples, strict=True)]
        if not repeats:
            raise MeasurementTimeout(
                f"{name}: no measured repeat finished within timeout={s.timeout:g}s "
                f"(warm-up took {sum(warm) / 1e9:.2f}s over {len(warm)} calls).",
                hint="Raise {timeout}, or lower `warmup`/`repeat`.",
            )
        return Profile(
            name=name,
            machine_class=this_cpu().machine_class,
            backend=counters.name,
            machine=machine_facts(),
            events=tuple(statuses[e] for e in self.events if e in statuses),
            repeats=tuple(repeats),
            latency=LatencyStats.from_durations_ns(durations),
            memory=MemoryStats(peak, mem_method, mem_note, start_rss),
            steady=steady,
            settings={**s.to_dict(), "calls_per_repeat": per_repeat},
            session=session,
            stages=_stage_stats(recorder, repeats),
            overhead=overhead,
            partial=partial_reason is not None,
            partial_reason=partial_reason,
            outputs_ok=outputs_finite(self.last_result),
            created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            conditions=machine_state or None,
        )

    def _warm_up(
        self, call: Callable[[], Any], begin: float, deadline: float, guard: Watchdog | None = None
    ) -> tuple[list[int], Steadiness]:
        s = self.settings
        durations: list[int] = []
        reached, spread = False, math.inf
        warm_budget = begin + (deadline - begin) / 2
        while len(durations) < s.warmup_max:
            durations.append(_call_timed(call, f"warm-up call {len(durations) + 1}", guard))
            if len(durations) >= s.warmup:
                reached, spread = is_steady(
                    durations, warmup=s.warmup, window=s.steady_window, threshold=s.steady_threshold
                )
                if reached or s.warmup == 0:
                    break
            if time.monotonic() > warm_budget:
                break
        if s.warmup == 0:
            reached = False
        return durations, Steadiness(
            reached=reached,
            warmup_calls=len(durations),
            spread=spread if math.isfinite(spread) else -1.0,
            threshold=s.steady_threshold,
            window=s.steady_window,
        )

    def _measure(
        self,
        call: Callable[[], Any],
        counters: CounterBackend,
        recorder: StageRecorder,
        per_repeat: int,
        deadline: float,
        begin: float,
        guard: Watchdog | None = None,
    ) -> tuple[list[Repeat], list[int], str | None]:
        s = self.settings
        repeats: list[Repeat] = []
        durations: list[int] = []
        partial: str | None = None
        last: Any = None
        perf_counter_ns = time.perf_counter_ns
        with recording(recorder):
            for index in range(s.repeat):
                if time.monotonic() > deadline:
                    partial = (
                        f"timeout: stopped at {s.timeout:g}s after {len(repeats)} of "
                        f"{s.repeat} repeats ({time.monotonic() - begin:.1f}s including warm-up)"
                    )
                    break
                calls = 0
                if guard is not None:
                    guard.progress = f"{len(repeats)} of {s.repeat} repeats"
                counters.start()
                try:
                    start = perf_counter_ns()
                    while calls < per_repeat:
                        t0 = perf_counter_ns()
                        try:
                            if guard is not None:
                                guard.armed = True
                            last = call()
                        except CallOverrun as exc:
                            partial = interrupted_reason(exc, repeats, calls, s.repeat)
                            break
                        except BaseException as exc:
                            add_note(
                                exc,
                                f"inferperf: the workload raised in measured repeat "
                                f"{index + 1}, call {calls + 1}; counters were closed",
                            )
                            raise
                        finally:
                            if guard is not None:
                                guard.armed = False
                        durations.append(perf_counter_ns() - t0)
                        calls += 1
                        if time.monotonic() > deadline:
                            break
                    wall = perf_counter_ns() - start
                finally:
                    sample = counters.stop()
                if calls:  # a repeat cut by an interrupted call keeps its finished calls
                    repeats.append(Repeat(calls, wall, sample))
                recorder.end_repeat()
                if partial is not None:
                    break
        self.last_result = last
        return repeats, durations, partial


def interrupted_reason(
    exc: CallOverrun, repeats: Sequence[Repeat], calls: int, planned: int
) -> str:
    """The partial reason of a run whose call was interrupted at the timeout."""
    done = len(repeats) + (1 if calls else 0)
    return (
        f"timeout: {exc} in measured repeat {len(repeats) + 1}; kept {done} of {planned} "
        f"repeats ({sum(r.calls for r in repeats) + calls} calls)"
    )


def _stage_stats(recorder: StageRecorder, repeats: Sequence[Repeat]) -> tuple[StageStats, ...]:
    if not recorder.totals:
        return ()
    stages = [
        StageStats(name, t.calls, t.wall_ns, dict(t.counts), recorder.repeat_wall_ns(name))
        for name, t in recorder.totals.items()
    ]
    total_wall = sum(r.wall_ns for r in repeats)
    totals: dict[str, float] = {}
    for rep in repeats:
        for event, count in rep.sample.counts.items():
            totals[event] = totals.get(event, 0.0) + count.value
    rest_counts = {
        event: value - sum(st.counts.get(event, 0.0) for st in stages)
        for event, value in totals.items()
    }
    rest_wall = total_wall - sum(st.wall_ns for st in stages)
    rest_repeats: tuple[int, ...] = ()
    if all(len(st.repeat_wall_ns) == len(repeats) for st in stages):
        rest_repeats = tuple(
            rep.wall_ns - sum(st.repeat_wall_ns[i] for st in stages)
            for i, rep in enumerate(repeats)
        )
    stages.append(
        StageStats(REST_STAGE, sum(r.calls for r in repeats), rest_wall, rest_counts, rest_repeats)
    )
    return tuple(stages)
