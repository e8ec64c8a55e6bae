"""Native stack sampling of this process with ``perf record``, as a separate pass.

Owns: one sampling window around a workload. It starts ``perf record -p <this
pid>`` as a child with events disabled (``-D -1``) and a control FIFO pair
(``--control fifo:ctl,ack``), writes ``enable`` and waits for perf's ``ack`` (that
ack is also the proof perf has attached), runs the workload repeatedly for the
window, writes ``disable``, stops perf (SIGINT, then SIGKILL if it hangs), runs
``perf script`` and folds the text. ``-p`` covers every thread of the process,
threads started later included (perf inherits to them), so ONNX Runtime's pool
threads are sampled.

It always cleans up: no perf process, perf.data, FIFO or perf map file it made
outlives the call, whether the workload returns, raises or is interrupted.

Where perf is missing, refused or records nothing, the result has no stacks and
a ``reason`` saying why and what to do; those never raise. Bad arguments do. A
window that ran but collected no samples (a PMU that counts but does not
interrupt) is said in one line (:func:`no_samples_reason`); the caller's Python
sampler and operator view stand in.

On Python 3.12+ the perf trampoline (``sys.activate_stack_trampoline("perf")``)
is on during the window so Python functions show up as ``py::name:file`` frames;
CPython builds without frame pointers need ``call_graph="dwarf"`` for that.

Must not: run while counters are counting (this is its own pass), or draw.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ...core.watchdog import PassStopped, pass_guard
from .fold import FoldedStacks, fold_perf_script
from .pysampler import run_window

__all__ = [
    "NOT_INSTALLED",
    "NativeSamples",
    "choose_event",
    "no_samples_reason",
    "refusal_reason",
    "sample_native",
]

NOT_INSTALLED = (
    "not available: perf not installed: apt install linux-perf (Debian), "
    "apt install linux-tools-$(uname -r) (Ubuntu) or dnf install perf (Fedora)"
)
_CALL_GRAPH = re.compile(r"fp|lbr|dwarf(,\d+)?")
_STDERR_TAIL = 600


@dataclass(frozen=True)
class NativeSamples:
    """What one ``perf record`` window saw.

    ``folded`` is ``{"comm;frame;...;leaf": samples}``; ``reason`` is ``None`` when
    stacks were recorded and otherwise says why there are none. ``stripped`` counts
    samples per library perf could not name frames in (PyPI ONNX Runtime wheels are
    stripped); ``python_samples`` those with Python (trampoline) frames.
    """

    folded: dict[str, int]
    samples: int
    event: str
    reason: str | None
    call_graph: str = "fp"
    stripped: dict[str, int] = field(default_factory=dict)
    python_samples: int = 0
    calls: int = 0
    stopped: bool = False  # the window hit the pass's timeout (``reason`` says after how long)


def _unavailable(
    event: str, reason: str, call_graph: str, calls: int = 0, stopped: bool = False
) -> NativeSamples:
    return NativeSamples({}, 0, event, reason, call_graph, calls=calls, stopped=stopped)


def choose_event() -> str:
    """``cycles`` where a hardware PMU opens for this process, else ``cpu-clock``."""
    try:
        from ...pmu import perf_event as pe

        fd = pe.open_event(pe.PERF_TYPE_HARDWARE, 0, tid=0, inherit=False, exclude_kernel=True)
    except Exception:  # no PMU (ENOENT on VMs), refused, or not Linux
        return "cpu-clock"
    os.close(fd)
    return "cycles"


def refusal_reason(stderr: str) -> str | None:
    """Why perf refused to record, from its stderr, or ``None`` if it did not refuse."""
    text = stderr.lower()
    level = re.search(r"perf_event_paranoid setting is (-?\d+)", stderr)
    if level or "access to performance monitoring" in text or "eacces" in text:
        shown = level.group(1) if level else _paranoid()
        return (
            f"not available: perf refused: perf_event_paranoid is {shown} (EACCES) and this "
            "user may not sample this process. Run `sudo sysctl kernel.perf_event_paranoid=1`, "
            "grant CAP_PERFMON (`sudo setcap cap_perfmon,cap_sys_ptrace+ep $(which perf)`), "
            "or run as root"
        )
    if "operation not permitted" in text or "eperm" in text:
        return (
            "not available: perf refused: perf_event_open is blocked (EPERM), typically by "
            "seccomp or a container policy: `docker run --cap-add PERFMON --security-opt "
            "seccomp=unconfined`, or run outside the container"
        )
    if "no permission" in text or "permission denied" in text:
        return f"not available: perf refused: {_tail(stderr)}"
    return None


def no_samples_reason(event: str, seconds: float, calls: int, stderr: str) -> str:
    """One line for a ``perf record`` that ran and collected no samples.

    Seen where a PMU counts but never interrupts (GitHub's Arm runners: ``perf stat``
    counts, ``perf record -e cycles`` collects nothing). perf's own progress lines
    (``[ perf record: ... ]``) say nothing about why and are left out.
    """
    said = [
        line
        for line in stderr.splitlines()
        if line.strip() and not line.strip().startswith("[ perf record:")
    ]
    detail = f" (perf said: {_tail(chr(10).join(said))})" if said else ""
    return (
        f"not available: perf record collected no samples of {event} in {seconds:g} s "
        f"({calls} calls){detail}; counting works but sampling does not here (as on "
        "GitHub's Arm runners): the Python sampler and the operator view stand in"
    )


def _paranoid() -> str:
    try:
        return Path("/proc/sys/kernel/perf_event_paranoid").read_text().strip()
    except OSError:
        return "?"


def _tail(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    text = " | ".join(lines)
    return text if len(text) <= _STDERR_TAIL else "..." + text[-_STDERR_TAIL:]


def _failure(stderr: str, what: str) -> str:
    return refusal_reason(stderr) or f"not available: {what}: {_tail(stderr) or 'no message'}"


class _Stopped(Exception):
    """perf exited or did not answer during set-up; carries the reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _fifo_dir(workdir: Path, stack: contextlib.ExitStack) -> Path:
    """Where the control FIFOs live: ``workdir`` unless its path would confuse ``--control``."""
    if "," not in str(workdir) and ":" not in str(workdir):
        return workdir
    return Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="inferperf-perfctl-")))


def _send(
    ctl_fd: int,
    ack_fd: int,
    proc: subprocess.Popen,
    command: str,
    timeout: float,
    stderr_path: Path,
) -> None:
    """Write ``command`` to perf's control FIFO and wait for its ``ack``."""
    os.write(ctl_fd, command.encode() + b"\n")
    deadline = time.monotonic() + timeout
    received = b""
    while b"ack" not in received:
        if proc.poll() is not None:
            raise _Stopped(_failure(_read(stderr_path), f"perf record exited ({proc.returncode})"))
        left = deadline - time.monotonic()
        if left <= 0:
            raise _Stopped(
                f"not available: perf record did not acknowledge '{command}' within "
                f"{timeout:.0f} s: {_tail(_read(stderr_path)) or 'no message'}"
            )
        ready, _, _ = select.select([ack_fd], [], [], min(left, 0.05))
        if ready:
            with contextlib.suppress(BlockingIOError):
                received += os.read(ack_fd, 64)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _stop(proc: subprocess.Popen, timeout: float) -> None:
    """SIGINT perf so it writes its data, SIGKILL if it does not exit in ``timeout``."""
    if proc.poll() is not None:
        return
    try:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        pass
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def _trampoline(enabled: bool) -> Iterator[Path | None]:
    """CPython's perf trampoline on for the block (3.12+); yields the map file to remove."""
    activate = getattr(sys, "activate_stack_trampoline", None)
    if not enabled or activate is None or sys.is_stack_trampoline_active():  # type: ignore[attr-defined]
        yield None
        return
    map_file = Path(f"/tmp/perf-{os.getpid()}.map")
    created = not map_file.exists()
    try:
        activate("perf")
    except (ValueError, RuntimeError, OSError):
        yield None
        return
    try:
        yield map_file if created else None
    finally:
        sys.deactivate_stack_trampoline()  # type: ignore[attr-defined]


def sample_native(
    call: Callable[[], object],
    *,
    seconds: float = 1.0,
    call_graph: str = "fp",
    event: str | None = None,
    workdir: str | os.PathLike[str],
    frequency: int = 999,
    perf: str | None = None,
    python_frames: bool = True,
    clock: str | None = None,
    on_script: Callable[[str], None] | None = None,
    attach_timeout: float = 20.0,
    stop_timeout: float = 30.0,
    script_timeout: float = 180.0,
    timeout: float | None = None,
) -> NativeSamples:
    """Sample every thread of this process with ``perf record`` while ``call()`` repeats.

    ``call_graph`` is perf's ``--call-graph``: ``"fp"`` (frame pointers, cheap; stops at
    code built without them), ``"dwarf"`` or ``"dwarf,<stack bytes>"`` (unwinds anything
    with unwind tables; ~8 KiB per sample) or ``"lbr"``. ``event`` defaults to
    :func:`choose_event`. ``frequency`` is samples per second per thread. ``perf``
    names the perf executable (default: ``perf`` on PATH). ``python_frames`` turns
    on CPython's perf trampoline where it exists (3.12+). ``clock`` is ``perf record -k``
    (``"monotonic"``: sample times on :func:`time.monotonic_ns`'s clock); ``on_script``
    receives ``perf script``'s text (per-sample times and threads) before it is folded.

    ``timeout`` bounds the window's calls (the marker's ``timeout=``): a call still
    running past it is interrupted, perf is stopped and the result has no stacks,
    ``stopped`` set and a reason saying ``native sampling pass stopped after N s``.

    Never raises for a missing or refusing perf; exceptions (and KeyboardInterrupt)
    from ``call`` propagate after perf has been stopped and its files removed.
    """
    _check_arguments(call_graph, seconds, frequency)
    executable = shutil.which(perf or "perf")
    chosen = event or "cpu-clock"
    if executable is None:
        return _unavailable(chosen, NOT_INSTALLED, call_graph)
    chosen = event or choose_event()
    work = Path(workdir)
    work.mkdir(parents=True, exist_ok=True)

    with contextlib.ExitStack() as stack:
        files = _PerfFiles.make(work, stack)
        command = _record_command(executable, chosen, frequency, call_graph, files, clock=clock)
        with open(files.stderr, "wb") as err:
            try:
                proc = subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=err,
                    start_new_session=True,
                )
            except OSError as exc:
                reason = (
                    refusal_reason(str(exc)) if exc.errno in (errno.EACCES, errno.EPERM) else None
                )
                return _unavailable(
                    chosen, reason or f"not available: cannot start perf: {exc}", call_graph
                )
        stack.callback(_stop, proc, stop_timeout)
        try:
            with _trampoline(python_frames) as map_file:
                if map_file is not None:
                    stack.callback(_unlink, map_file)
                _send(files.ctl_fd, files.ack_fd, proc, "enable", attach_timeout, files.stderr)
                with pass_guard(timeout, "native sampling pass") as guard:
                    calls = run_window(call, seconds, guard)
                with contextlib.suppress(_Stopped):
                    _send(files.ctl_fd, files.ack_fd, proc, "disable", stop_timeout, files.stderr)
        except _Stopped as stopped:
            return _unavailable(chosen, stopped.reason, call_graph)
        except PassStopped as overrun:  # perf is stopped and its files removed on the way out
            return _unavailable(chosen, str(overrun), call_graph, stopped=True)
        _stop(proc, stop_timeout)
        return _read_samples(
            executable,
            chosen,
            call_graph,
            files,
            calls=calls,
            seconds=seconds,
            script_timeout=script_timeout,
            on_script=on_script,
        )


def _check_arguments(call_graph: object, seconds: float, frequency: object) -> None:
    """Bad arguments raise (a missing or refusing perf never does)."""
    if not isinstance(call_graph, str) or not _CALL_GRAPH.fullmatch(call_graph):
        raise ValueError(
            f"call_graph must be 'fp', 'dwarf', 'dwarf,<bytes>' or 'lbr'; got {call_graph!r}"
        )
    if not seconds > 0:
        raise ValueError(f"seconds must be positive; got {seconds!r}")
    if isinstance(frequency, bool) or not isinstance(frequency, int) or frequency < 1:
        raise ValueError(f"frequency must be a positive int; got {frequency!r}")


@dataclass(frozen=True)
class _PerfFiles:
    """The files of one window: control and ack FIFOs (open), perf.data, perf's stderr;
    each removed (and each descriptor closed) when the window's stack unwinds."""

    ctl: Path
    ack: Path
    data: Path
    stderr: Path
    ctl_fd: int
    ack_fd: int

    @classmethod
    def make(cls, work: Path, stack: contextlib.ExitStack) -> _PerfFiles:
        fifo_dir = _fifo_dir(work, stack)
        tag = f"inferperf-{os.getpid()}-{time.monotonic_ns()}"
        ctl, ack = fifo_dir / f"{tag}.ctl", fifo_dir / f"{tag}.ack"
        data = work / f"{tag}.perf.data"
        stderr_path = work / f"{tag}.perf.stderr"
        for leftover in (data, Path(f"{data}.old"), stderr_path, ctl, ack):
            stack.callback(_unlink, leftover)
        os.mkfifo(ctl, 0o600)
        os.mkfifo(ack, 0o600)
        ctl_fd = os.open(ctl, os.O_RDWR)  # never blocks on a FIFO, on Linux
        stack.callback(os.close, ctl_fd)
        ack_fd = os.open(ack, os.O_RDONLY | os.O_NONBLOCK)
        stack.callback(os.close, ack_fd)
        return cls(ctl, ack, data, stderr_path, ctl_fd, ack_fd)


def _record_command(
    executable: str,
    event: str,
    frequency: int,
    call_graph: str,
    files: _PerfFiles,
    *,
    clock: str | None,
) -> list[str]:
    """``perf record`` of this process, events disabled until the control FIFO enables them."""
    return [
        executable,
        "record",
        "-p",
        str(os.getpid()),
        "-e",
        event,
        "-F",
        str(frequency),
        "--call-graph",
        call_graph,
        "-D",
        "-1",
        "--control",
        f"fifo:{files.ctl},{files.ack}",
        "--no-buildid",
        "--no-buildid-cache",
        *(["-k", clock] if clock else []),
        "-o",
        str(files.data),
    ]


def _read_samples(
    executable: str,
    chosen: str,
    call_graph: str,
    files: _PerfFiles,
    *,
    calls: int,
    seconds: float,
    script_timeout: float,
    on_script: Callable[[str], None] | None,
) -> NativeSamples:
    """What perf recorded, through ``perf script``, folded; or why there is nothing."""
    data = files.data
    if not data.exists() or data.stat().st_size == 0:
        return _unavailable(
            chosen,
            _failure(_read(files.stderr), "perf record wrote no data"),
            call_graph,
            calls,
        )
    try:
        script = subprocess.run(
            [executable, "script", "-i", str(data)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=script_timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return _unavailable(
            chosen,
            f"not available: perf script took over {script_timeout:.0f} s to read "
            f"{data.stat().st_size} bytes; record fewer seconds or use call_graph='fp'",
            call_graph,
            calls,
        )
    text = script.stdout.decode("utf-8", errors="replace")
    if on_script is not None:
        on_script(text)
    if script.returncode != 0 and not text.strip():
        return _unavailable(
            chosen,
            _failure(script.stderr.decode("utf-8", "replace"), "perf script failed"),
            call_graph,
            calls,
        )
    folded: FoldedStacks = fold_perf_script(text)
    if not folded.samples:
        return _unavailable(
            chosen,
            no_samples_reason(chosen, seconds, calls, _read(files.stderr)),
            call_graph,
            calls,
        )
    # perf names the event it really sampled (``cpu-clock:u`` after a user-only fallback)
    recorded = max(folded.events.items(), key=lambda kv: kv[1])[0] or chosen
    return NativeSamples(
        folded=folded.stacks,
        samples=folded.samples,
        event=recorded,
        reason=None,
        call_graph=call_graph,
        stripped=folded.stripped,
        python_samples=folded.python_samples,
        calls=calls,
    )


def _unlink(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()
