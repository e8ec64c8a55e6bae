"""The live progress line of long profiles: on a terminal, in a CI log, and under -q."""

from __future__ import annotations

import io

# In-process runs put sys.modules back as it was after each run, and numpy's extension
# cannot be loaded twice in a process: import what the inner runs import first.
import numpy  # noqa: F401  (the calibration workload measured next to every profile)

import pytest_inferperf.onnxrt.sessions  # noqa: F401  (onnx, onnxruntime: the session facts)
from pytest_inferperf.measure.progress import QUIET, LiveLine, ProgressCounters, ticking

pytest_plugins = ["pytester"]


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _line(
    tty: bool, *, width: int = 80, column: int = 20, after: float = 2.0, interval: float = 60.0
):
    out, clock = io.StringIO(), Clock()
    line = LiveLine(
        "t.py::test_a",
        out,
        tty=tty,
        width=width,
        column=lambda: column,
        after=after,
        interval=interval,
        clock=clock,
    )
    return line, out, clock


def _screen(text: str) -> str:
    """What a terminal shows after ``text``: backspace moves left, characters overwrite."""
    cells: list[str] = []
    pos = 0
    for ch in text:
        if ch == "\b":
            pos = max(0, pos - 1)
            continue
        if pos < len(cells):
            cells[pos] = ch
        else:
            cells.append(ch)
        pos += 1
    return "".join(cells).rstrip()


def test_a_short_profile_shows_nothing():
    line, out, clock = _line(tty=True)
    line.phase("warm-up")
    clock.now += 1.9
    line.phase("repeat 1/30")
    line.done()
    assert out.getvalue() == ""


def test_on_a_terminal_the_status_is_replaced_in_place_and_erased():
    line, out, clock = _line(tty=True)
    line.phase("warm-up")
    clock.now += 3
    line.phase("repeat 1/30")
    assert _screen(out.getvalue()) == " [inferperf: 3 s, repeat 1/30]"
    clock.now += 9
    line.phase("repeat 12/30")
    assert _screen(out.getvalue()) == " [inferperf: 12 s, repeat 12/30]"
    line.done()
    assert _screen(out.getvalue()) == ""  # pytest's own line is left as it was
    assert "\n" not in out.getvalue() and "\r" not in out.getvalue()


def test_on_a_terminal_the_status_fits_the_rest_of_the_line():
    line, out, clock = _line(tty=True, width=60, column=20)
    clock.now += 5
    line.phase("native run, then the region under valgrind")
    assert _screen(out.getvalue()) == " [inferperf: 5 s, native run, then t…]"  # 60 - 20 - 2
    line, out, clock = _line(tty=True, width=40, column=25)
    clock.now += 5
    line.phase("repeat 1/3")
    assert out.getvalue() == ""  # no room for a useful status: say nothing, never wrap


def test_a_ticker_refreshes_the_elapsed_time_of_one_long_step():
    line, out, clock = _line(tty=True)
    clock.now += 3
    line.phase("under valgrind")
    clock.now += 10
    line.tick()
    assert _screen(out.getvalue()) == " [inferperf: 13 s, under valgrind]"


def test_in_a_log_a_whole_line_at_most_once_per_interval():
    line, out, clock = _line(tty=False, interval=60)
    line.phase("warm-up")
    clock.now += 30
    line.phase("repeat 1/30")
    assert out.getvalue() == ""
    clock.now += 31
    line.phase("repeat 10/30")
    clock.now += 10
    line.phase("repeat 14/30")  # within the interval of the last line: not written
    clock.now += 60
    line.phase("repeat 29/30")
    line.done()
    assert out.getvalue().splitlines() == [
        "",
        "inferperf: t.py::test_a: 61 s, repeat 10/30",
        "",
        "inferperf: t.py::test_a: 131 s, repeat 29/30",
    ]


def test_quiet_progress_and_its_ticker_do_nothing():
    with ticking(QUIET):
        QUIET.phase("x")
        QUIET.tick()
    QUIET.done()


class FakeBackend:
    name = "fake"

    def __init__(self) -> None:
        self.started = 0

    def start(self) -> None:
        self.started += 1


def test_progress_counters_skip_the_overhead_samples_and_name_each_repeat():
    said: list[str] = []
    inner = FakeBackend()
    counters = ProgressCounters(inner, 3, said.append, skip=2)
    for _ in range(5):
        counters.start()
    assert inner.started == 5
    assert said == ["repeat 1/3", "repeat 2/3", "repeat 3/3"]
    assert counters.name == "fake"


SLOW_TEST = """
    import time
    import pytest

    @pytest.mark.perf(warmup=1, repeat=4, tolerance=0.5)
    def test_slowish(pmu_profile):
        pmu_profile(time.sleep, 0.2)
"""


def test_a_long_profile_writes_progress_lines_to_a_log(pytester):
    pytester.makeini("[pytest]\ninferperf_progress_interval = 0.3\n")
    pytester.makepyfile(test_a=SLOW_TEST)
    result = pytester.runpytest("-p", "no:randomly", "--inferperf", "--inferperf-backend", "none")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["inferperf: test_a.py::test_slowish: * s, repeat */4"])


def test_quiet_runs_show_no_progress(pytester):
    pytester.makeini("[pytest]\ninferperf_progress_interval = 0.3\n")
    pytester.makepyfile(test_a=SLOW_TEST)
    result = pytester.runpytest(
        "-q", "-p", "no:randomly", "--inferperf", "--inferperf-backend", "none"
    )
    result.assert_outcomes(passed=1)
    assert "repeat 1/4" not in result.stdout.str()


def test_a_bad_interval_is_a_usage_error_naming_the_setting(pytester):
    pytester.makeini("[pytest]\ninferperf_progress_interval = soon\n")
    pytester.makepyfile(test_a=SLOW_TEST)
    result = pytester.runpytest("-p", "no:randomly", "--inferperf", "--inferperf-backend", "none")
    assert "inferperf_progress_interval = 'soon'" in result.stdout.str() + result.stderr.str()
