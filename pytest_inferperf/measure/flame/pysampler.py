"""A built-in Python-level sampling profiler: the fallback when perf cannot help.

Owns: running a callable repeatedly for a while on the calling thread while a
daemon thread takes ``sys._current_frames()`` about every millisecond, and
folding what it saw into ``thread;module:function;...`` stacks (root first,
leaf last, counted in samples). It needs no perf, no privileges and no PMU.

What it sees: Python functions only. Time in native code (an ONNX Runtime
``run``, a numpy kernel) is charged to the Python function that called it;
ONNX Runtime's own pool threads are invisible. The sampler thread needs the GIL
to look, so while native code holds the GIL samples wait for it: the switch
interval is lowered to the sampling interval for the window and restored after.
The frames of this module that call the workload are cut off, so the calling
thread's stacks start at the workload, and only ticks when the calling thread is
inside the workload count (for every thread).

Must not: run perf (that is :mod:`.record`) or draw (that is :mod:`.svg`).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from types import FrameType

from ...core.watchdog import CallOverrun, Watchdog, pass_guard
from .fold import sanitize_frame

__all__ = ["callable_label", "frame_label", "sample_python"]

_MAX_DEPTH = 512


def frame_label(frame: FrameType) -> str:
    """``module:function`` for a Python frame (qualified name where Python has one)."""
    code = frame.f_code
    module = frame.f_globals.get("__name__") if isinstance(frame.f_globals, dict) else None
    if not isinstance(module, str) or not module:
        module = code.co_filename.rsplit("/", 1)[-1]
    function = getattr(code, "co_qualname", code.co_name)
    return sanitize_frame(f"{module}:{function}")


def callable_label(call: Callable[..., object]) -> str:
    """``module:qualname`` of a callable (builtins and partials included), for the root."""
    target = getattr(call, "func", call)  # functools.partial
    module = getattr(target, "__module__", None) or type(target).__module__
    name = getattr(target, "__qualname__", None) or type(target).__qualname__
    return sanitize_frame(f"{module}:{name}")


def run_window(call: Callable[[], object], seconds: float, guard: Watchdog | None = None) -> int:
    """Call ``call`` until ``seconds`` have passed (at least once); the number of calls.

    ``guard`` (a :func:`~pytest_inferperf.core.watchdog.pass_guard`) is armed around each call,
    so one that runs past the pass's timeout is interrupted (armed here, not through a
    helper, so that no frame of ours sits between this loop and the workload).
    """
    deadline = time.perf_counter() + seconds
    calls = 0
    while True:
        if guard is not None:
            if time.monotonic() > guard.deadline:
                raise CallOverrun(f"{guard.name}: started after the deadline")
            guard.armed = True
        try:
            call()
        finally:
            if guard is not None:
                guard.armed = False
        calls += 1
        if time.perf_counter() >= deadline:
            return calls


_RUNNER_CODE = run_window.__code__


def _caller_stack(frame: FrameType | None) -> list[str] | None:
    """The calling thread's stack below our window loop; ``None`` outside the window."""
    labels: list[str] = []
    while frame is not None:
        if frame.f_code is _RUNNER_CODE:
            labels.reverse()
            return labels  # everything above the workload is ours or the test runner's
        if len(labels) < _MAX_DEPTH:
            labels.append(frame_label(frame))
        frame = frame.f_back
    return None


def _stack(frame: FrameType | None) -> list[str]:
    labels: list[str] = []
    while frame is not None and len(labels) < _MAX_DEPTH:
        labels.append(frame_label(frame))
        frame = frame.f_back
    labels.reverse()
    return labels


def sample_python(
    call: Callable[[], object],
    *,
    seconds: float = 1.0,
    interval: float = 0.001,
    all_threads: bool = True,
    stats: dict[str, float] | None = None,
    timeout: float | None = None,
) -> dict[str, int]:
    """Run ``call`` repeatedly for ``seconds`` while sampling Python stacks every ``interval``.

    Returns folded stacks ``{"thread;module:function;...": samples}`` with the thread's
    name as the root frame. With ``all_threads`` the other Python threads are sampled
    too (idle ones show where they wait). Exceptions from ``call`` propagate after the
    sampler thread has stopped. A ``stats`` dict, when given, receives ``calls`` (made in
    the window), ``seconds`` (its wall time) and ``caller_samples`` (samples of the
    calling thread), from which a stack's time per call is estimated. ``timeout`` bounds
    the window's calls: past it :class:`~pytest_inferperf.core.watchdog.PassStopped` is raised
    (the sampler stopped first).
    """
    if not seconds > 0:
        raise ValueError(f"seconds must be positive; got {seconds!r}")
    if not interval > 0:
        raise ValueError(f"interval must be positive; got {interval!r}")
    caller_id = threading.get_ident()
    call_label = callable_label(call)
    stacks: dict[str, int] = {}
    caller_samples = [0]
    stop = threading.Event()
    started = threading.Event()

    def sampler() -> None:
        me = threading.get_ident()
        started.set()
        while not stop.wait(interval):
            frames = sys._current_frames()
            mine = _caller_stack(frames.get(caller_id))
            if mine is None:
                continue  # the window has not started yet, or has ended
            mine = mine or [call_label]  # a native callable has no Python frame of its own
            caller_samples[0] += 1
            names = {t.ident: t.name for t in threading.enumerate()}
            for ident, frame in frames.items():
                if ident == me or (not all_threads and ident != caller_id):
                    continue
                labels = mine if ident == caller_id else _stack(frame)
                root = sanitize_frame(names.get(ident, f"thread-{ident}"))
                key = ";".join([root, *labels])
                stacks[key] = stacks.get(key, 0) + 1

    thread = threading.Thread(target=sampler, name="inferperf-pysampler", daemon=True)
    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(min(old_interval, interval))
    calls = 0
    begin = time.perf_counter()
    try:
        thread.start()
        started.wait(5.0)
        with pass_guard(timeout, "Python sampling pass") as guard:
            calls = run_window(call, seconds, guard)
    finally:
        stop.set()
        thread.join(5.0)
        sys.setswitchinterval(old_interval)
    if stats is not None:
        stats.update(
            calls=calls, seconds=time.perf_counter() - begin, caller_samples=caller_samples[0]
        )
    return dict(stacks)
