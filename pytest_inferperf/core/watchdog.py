"""The hard timeout of a measurement: a call that runs past it is interrupted.

Owns: :class:`Watchdog`, armed by the runner around each call of the workload. A
watcher thread waits for the deadline; if a call is then still running it sends
``SIGALRM`` to the main thread, whose handler raises :class:`CallOverrun` into the
workload's Python code. ``SIGALRM`` also breaks blocking system calls (``sleep``,
``read``, ``select``): they return ``EINTR`` and the handler runs. A call in native
code that neither returns to Python nor gives way to a signal cannot be interrupted
inside the process: after a grace period the watcher reports it once (which call,
the partial results so far, every thread's Python stack, and how to let the session go
on: pytest-xdist with pytest-timeout's thread method) through the reporter the plugin
installs (the terminal, past pytest's capture), and keeps signalling until the call
gives way. Running the call in a worker thread to abandon it was considered and
refused: a call stuck holding the GIL stops every thread anyway, one that released it
keeps running and is counted in every later measurement (counters follow every thread
of the process), and signals reach only the main thread, so a ``sleep`` could no longer
be interrupted.

The handler only raises while a call is armed, never inside the runner's own
bookkeeping (counters, stage records), so an interrupted run still closes its
counters and keeps every repeat that finished. Another ``SIGALRM`` handler (e.g.
pytest-timeout's) is restored afterwards and receives every alarm that is not ours.

The passes around a measurement (ONNX Runtime's operator pass, the flamegraph
sampling passes) call the workload again; :func:`pass_guard` bounds each by the same
timeout, and a pass that runs past it stops with :class:`PassStopped` (an ordinary
exception carrying the note "... pass stopped after N s"), never a hang.

Must not: measure, judge, or end the process.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from .errors import InferperfError

#: Seconds past the deadline before a call that ignores the signal is reported as stuck.
STUCK_GRACE_S = 5.0
#: How often the watcher signals a call that has not given way yet.
RESIGNAL_S = 1.0

_reporter: Callable[[str], None] | None = None


class CallOverrun(BaseException):
    """A call of the workload ran past the timeout and was interrupted.

    A ``BaseException`` (like ``KeyboardInterrupt``) so that a workload's own
    ``except Exception`` cannot swallow it.
    """


class PassStopped(InferperfError, Exception):
    """A pass around a measurement (operator times, flamegraph sampling) hit its timeout.

    The message is the note the profile keeps: ``not available: <what> stopped after
    N s (timeout=T s) ...``.
    """


#: The bound of a pass when the measurement named no timeout (the runner's default).
PASS_TIMEOUT_S = 60.0


def pass_timeout(settings: Any) -> float:
    """The timeout a pass gets: the run's ``timeout`` from a profile's settings, else
    :data:`PASS_TIMEOUT_S`."""
    value = settings.get("timeout") if isinstance(settings, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        return PASS_TIMEOUT_S
    return float(min(value, 1e9))


@contextlib.contextmanager
def pass_guard(timeout: float | None, what: str) -> Iterator[Watchdog | None]:
    """Bound a pass that calls the workload (or a session) several times by ``timeout``.

    Yields the armed-per-call :class:`Watchdog` (``None`` without a timeout); arm each
    call with :func:`bounded_call`. A call interrupted past the deadline, or a call
    started after it, ends the block with :class:`PassStopped` naming ``what``.
    """
    if timeout is None:
        yield None
        return
    begin = time.monotonic()
    guard = Watchdog(begin + timeout, timeout=timeout, name=what)
    try:
        with guard:
            yield guard
    except CallOverrun as exc:
        raise _stopped(what, begin, timeout) from exc


def _stopped(what: str, begin: float, timeout: float) -> PassStopped:
    return PassStopped(
        f"not available: {what} stopped after {time.monotonic() - begin:.1f} s "
        f"(timeout={timeout:g} s): one call of the workload took too long; raise the "
        "marker's `timeout=` to let the pass finish"
    )


def bounded_call(guard: Watchdog | None, call: Callable[[], Any]) -> Any:
    """``call()`` armed under a :func:`pass_guard` watchdog (unbounded with ``None``)."""
    if guard is None:
        return call()
    if time.monotonic() > guard.deadline:  # also where no signal handler could be installed
        raise CallOverrun(f"{guard.name}: started after the deadline")
    guard.armed = True
    try:
        return call()
    finally:
        guard.armed = False


def set_reporter(report: Callable[[str], None] | None) -> Callable[[str], None] | None:
    """Where a stuck call is reported (default: standard error); returns the previous one."""
    global _reporter
    previous, _reporter = _reporter, report
    return previous


def _report(text: str) -> None:
    report = _reporter
    if report is not None:
        with contextlib.suppress(Exception):
            report(text)
            return
    with contextlib.suppress(OSError):
        os.write(2, (text + "\n").encode("utf-8", "replace"))


class Watchdog:
    """Arms around each call (``armed``) and interrupts one that passes ``deadline``."""

    def __init__(
        self, deadline: float, *, timeout: float, name: str, grace: float | None = None
    ) -> None:
        self.deadline = deadline  # time.monotonic() value
        self.timeout = timeout
        self.name = name
        self.grace = STUCK_GRACE_S if grace is None else grace
        self.armed = False
        self.progress = "no measured repeat finished yet"
        self.fired = False
        self.stuck_reported = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._previous: Any = None
        self._main = threading.main_thread().ident
        self._installed = False

    # -- lifetime -------------------------------------------------------------------
    def __enter__(self) -> Watchdog:
        if threading.current_thread() is threading.main_thread() and hasattr(signal, "SIGALRM"):
            with contextlib.suppress(ValueError, OSError):
                self._previous = signal.signal(signal.SIGALRM, self._on_alarm)
                self._installed = True
        if self._installed:
            self._thread = threading.Thread(
                target=self._watch, name="inferperf-watchdog", daemon=True
            )
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.armed = False
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._installed:
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(signal.SIGALRM, self._previous)

    # -- the main thread --------------------------------------------------------------
    def _on_alarm(self, signum: int, frame: Any) -> None:
        if self.fired and self.armed:
            self.armed = False  # raised once per call; the runner re-arms the next one
            late = time.monotonic() - self.deadline
            raise CallOverrun(
                f"{self.name}: a call of the workload ran past timeout={self.timeout:g}s "
                f"and was interrupted ({late:.1f}s after the deadline)"
            )
        previous = self._previous
        if not self.fired and callable(previous):  # not our alarm: the previous owner's
            previous(signum, frame)

    @contextlib.contextmanager
    def call(self) -> Iterator[None]:
        """Arm around one call (the runner's hot loop sets ``armed`` itself)."""
        self.armed = True
        try:
            yield
        finally:
            self.armed = False

    # -- the watcher thread -------------------------------------------------------------
    def _watch(self) -> None:
        if self._stop.wait(max(0.0, self.deadline - time.monotonic())):
            return
        self.fired = True
        while not self._stop.is_set():
            if self.armed and self._main is not None:  # None: no main thread to interrupt
                with contextlib.suppress(OSError, ValueError):
                    signal.pthread_kill(self._main, signal.SIGALRM)
                if (
                    not self.stuck_reported
                    and time.monotonic() > self.deadline + self.grace
                    and self.armed
                ):
                    self.stuck_reported = True
                    self._report_stuck()
            self._stop.wait(RESIGNAL_S if self.stuck_reported else 0.05)

    def _report_stuck(self) -> None:
        late = time.monotonic() - self.deadline
        _report(
            f"inferperf: {self.name}: a call of the workload has run {late:.0f}s past "
            f"timeout={self.timeout:g}s and does not give way: it is in native code that "
            f"neither returns to Python nor yields to a signal. Partial results so far: "
            f"{self.progress}. The test fails with them once the call returns. A call that "
            "never returns cannot be abandoned inside this process (its thread may hold the "
            "interpreter, and would be counted in every later measurement): to let the other "
            "tests run, use pytest-xdist with pytest-timeout's thread method (`-n 1 "
            "--timeout=<seconds well above the marker's timeout> --timeout-method=thread`): "
            "the stuck worker is ended, its test reported as crashed, and the session goes on "
            "in a new worker (without -n the same options end the run instead of hanging). "
            "Every thread's Python stack follows:"
        )
        with contextlib.suppress(Exception):
            faulthandler.dump_traceback(file=sys.__stderr__ or 2, all_threads=True)
