"""A live progress line for profiles that take a while (warm-up, repeat k/n, valgrind).

Owns: what a long measurement says while it runs, and when it says it. On a
terminal one short status is kept at the end of pytest's current line and
replaced in place (backspaces, so pytest's own line is never overwritten); in
a log (CI, no terminal) a whole line is written only after ``interval``
seconds, then at most once per ``interval``; under ``-q`` nothing. On a
terminal a profile that finishes before ``after`` seconds shows nothing. The counter
wrapper that reports "repeat k/n" just before each counted region starts
(skipping the runner's overhead samples) lives here too, so ``inferperf
analyse`` and the plugin say the same thing.

Must not: measure, judge or render results; write anything while a counted
region runs (every update happens before a repeat's counters start).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from .runner import OVERHEAD_SAMPLES

Say = Callable[[str], None]


class ProgressCounters:
    """A counter backend that says which repeat starts, just before its region starts."""

    def __init__(self, inner: Any, repeat: int, say: Say, *, skip: int = OVERHEAD_SAMPLES) -> None:
        self._inner, self._repeat, self._say = inner, repeat, say
        self._skip = skip
        self._starts = 0
        self.name = inner.name

    def open(self) -> None:
        self._inner.open()

    def start(self) -> None:
        self._starts += 1
        if self._starts > self._skip:
            self._say(f"repeat {self._starts - self._skip}/{self._repeat}")
        self._inner.start()

    def stop(self) -> Any:
        return self._inner.stop()

    def snapshot(self) -> Any:
        return self._inner.snapshot()

    def delta(self, begin: Any, end: Any) -> Any:
        return self._inner.delta(begin, end)

    def close(self) -> None:
        self._inner.close()

    def statuses(self) -> Any:
        return self._inner.statuses()

    def __getattr__(self, name: str) -> Any:  # anything else a backend offers
        return getattr(self._inner, name)


class LiveLine:
    """One test's progress: ``phase(text)`` as it goes, ``done()`` at the end.

    ``out`` is the terminal's file; ``write`` runs a writer with pytest's output
    capture suspended (the plugin passes one); ``clock`` is replaceable for tests.
    """

    def __init__(
        self,
        label: str,
        out: TextIO,
        *,
        tty: bool,
        width: int = 80,
        column: Callable[[], int] = lambda: 0,
        after: float = 2.0,
        interval: float = 60.0,
        uncaptured: Callable[[], contextlib.AbstractContextManager[Any]] = (contextlib.nullcontext),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label, self._out, self._tty = label, out, tty
        self._width, self._column = width, column
        self._after, self._interval = after, interval
        self._uncaptured, self._clock = uncaptured, clock
        self._begin = clock()
        self._last_log = self._begin
        self._shown = ""  # what stands on the terminal now (tty)
        self._text = ""
        self._lock = threading.Lock()

    # -- what the measurement says ---------------------------------------------
    def phase(self, text: str) -> None:
        with self._lock:
            self._text = text
            self._show()

    def tick(self) -> None:
        """Refresh the elapsed time (from a ticker while one long step runs)."""
        with self._lock:
            self._show()

    def done(self) -> None:
        with self._lock:
            if self._shown:
                self._emit(self._erase())
                self._shown = ""

    # -- how it is shown ---------------------------------------------------------
    def _status(self, elapsed: float) -> str:
        return f"{elapsed:.0f} s, {self._text}" if self._text else f"{elapsed:.0f} s"

    def _show(self) -> None:
        now = self._clock()
        elapsed = now - self._begin
        if self._tty:
            if elapsed < self._after:
                return
            room = self._width - self._column() - 2
            text = f" [inferperf: {self._status(elapsed)}]"
            if len(text) > room:  # cut the tail, keep the elapsed time
                text = text[: room - 2] + "…]" if room >= 20 else ""
            if text != self._shown:
                self._emit(self._erase() + text)
                self._shown = text
        elif now - self._last_log >= self._interval:
            self._last_log = now
            self._emit(f"\ninferperf: {self.label}: {self._status(elapsed)}\n")

    def _erase(self) -> str:
        n = len(self._shown)
        return "\b" * n + " " * n + "\b" * n

    def _emit(self, text: str) -> None:
        with self._uncaptured():
            self._out.write(text)
            self._out.flush()


class _Quiet:
    """The progress of a run that shows none (-q, xdist workers, short profiles)."""

    label = ""

    def phase(self, text: str) -> None:
        pass

    def tick(self) -> None:
        pass

    def done(self) -> None:
        pass


QUIET = _Quiet()


@contextlib.contextmanager
def ticking(line: LiveLine | _Quiet, every: float = 1.0) -> Iterator[None]:
    """Refresh ``line``'s elapsed time from a thread while one long step runs."""
    if line is QUIET:
        yield
        return
    stop = threading.Event()

    def run() -> None:
        while not stop.wait(every):
            line.tick()

    thread = threading.Thread(target=run, name="inferperf-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
