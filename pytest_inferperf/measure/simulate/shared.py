"""Valgrind children for many tests: the simulate backend's shared children.

Owns: starting ``valgrind ... python -m pytest_inferperf.measure.simulate.child_start`` once per
child (:func:`launch`, which the plugin calls when the session starts, before the tests are
known; the child's pytest arguments and node ids follow in its start file, written when
the children are given their tests), and taking each region's record from
the child that runs it (the parent side, :class:`SharedChild`, and the pool of them
for one session, :class:`SharedChildren`; the child's side of the conversation is in
:mod:`.child`). A child's fixed cost (valgrind start-up, imports and
collection under valgrind, ~4-7 s for an ONNX Runtime suite) is paid once per child
instead of once per test, and where the machine has CPUs to spare, several children
share the session's tests and measure them in parallel: each takes the next test no
other child took (a claim file per test), so none waits behind a long test while
another idles.

The children run ahead of the parent: each runs its tests in order and sends, one
JSON line each (:class:`~.protocol.RegionReply`), every region it measured
(its callgrind dumps already moved to a folder of their own), and a line when each
test ended. The parent takes the region it is at and keeps the others for later;
what the children measure does not depend on when the parent asks. While the parent
times something (:meth:`SharedChildren.paused`: the plugin's native runs, operator
passes and the bodies of tests without ``pmu_profile``) the children are stopped
(SIGSTOP), so they never compete with a timed run for a CPU; they go on the rest of
the time.

A region a child did not reach (another test order, a test that behaves differently
in the child) or a child that died is not an error here: :meth:`SharedChildren.measure`
returns None and the caller falls back to a child for that one test, which reports
whatever went wrong in full.

Must not: measure or build Profiles (:mod:`.parent`), or know about pytest's
objects (the plugin passes node ids).
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..child_process import ENV_CLAIMS, ENV_SHARED, start_env
from .callgrind import read_dumps
from .child_start import ChildStart, handoff, write_start
from .protocol import (
    PARENT_CLAIM,
    ChildRun,
    RegionReply,
    SimulateError,
    child_env,
    claim,
    claim_path,
    claimed_by,
    tail,
)
from .valgrind import BLOCK_PLUGINS, OUT_STEM, child_command


# -- the parent ------------------------------------------------------------------
@dataclass
class Launch:
    """A shared child's valgrind process, started before its tests are known: valgrind
    starts Python, which waits for its start file (:mod:`.child_start`) and only then
    runs pytest. ``fits``: what it was started for (the simulation mode, the rootdir,
    the folder pytest starts in, the interpreter); a child for other ones cannot use it."""

    proc: subprocess.Popen[bytes]
    workdir: Path
    hang_up: int  # the parent's end of the pipe the child watches
    replies: int  # the parent's end of the pipe the child answers on
    fits: tuple[str, str, str, str]

    def close(self) -> None:
        """End it (unused, or its work done) and remove its files."""
        for fd in (self.hang_up, self.replies):
            with contextlib.suppress(OSError):
                os.close(fd)
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=30)
        shutil.rmtree(self.workdir, ignore_errors=True)


def _fits(
    mode: str,
    rootdir: str | os.PathLike[str],
    cwd: str | os.PathLike[str] | None,
    python: str | None,
) -> tuple[str, str, str, str]:
    """What a child is started for; pytest starts in ``rootdir`` and the interpreter is
    this one unless said otherwise."""
    where = cwd if cwd is not None else rootdir
    return (mode, str(Path(rootdir)), str(Path(where)), python or sys.executable)


def launch(
    *,
    rootdir: str | os.PathLike[str],
    cwd: str | os.PathLike[str] | None = None,
    python: str | None = None,
    mode: str = "full",
    env: Mapping[str, str] | None = None,
) -> Launch:
    """Start a shared child's valgrind process (its tests and pytest arguments come later,
    in its start file). Raises :class:`SimulateError` without vgdb (a shared child
    switches instrumentation per region), ``OSError`` where it cannot start."""
    rootdir, python = Path(rootdir), python or sys.executable
    where = Path(cwd) if cwd is not None else rootdir
    workdir = Path(tempfile.mkdtemp(prefix="inferperf-simulate-shared-"))
    try:
        built = child_command(
            (),
            rootdir=rootdir,
            python=python,
            instrument_from_start=False,
            extra_args=(),
            block_plugins=(),
            workdir=workdir,
            mode=mode,
        )
        if built.from_start:
            raise SimulateError(
                "vgdb is not installed, and a shared child must switch "
                "instrumentation on and off per region"
            )
        hang_up_r, hang_up_w = os.pipe()
        reply_r, reply_w = os.pipe()
        child = child_env(workdir / "unused.json", "", built.request, env)
        child[ENV_SHARED] = f"{hang_up_r},{reply_w},{os.getpid()}"
        child.update(start_env(str(workdir / START_FILE)))
        with open(workdir / "child-output.txt", "wb") as output:
            try:
                proc = subprocess.Popen(
                    built.command,
                    cwd=where,
                    env=child,
                    stdin=subprocess.DEVNULL,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    pass_fds=(hang_up_r, reply_w),
                    start_new_session=True,
                )
            except BaseException:
                os.close(hang_up_w)
                os.close(reply_r)
                raise
            finally:
                os.close(hang_up_r)
                os.close(reply_w)
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    return Launch(proc, workdir, hang_up_w, reply_r, _fits(mode, rootdir, cwd, python))


START_FILE = "start.json"


class SharedChild:
    """A simulation child that runs ``nodeids`` in one valgrind process, ahead of the parent.

    Started by :meth:`start` (or the first :meth:`measure`); :meth:`close` ends it
    (also on failure). ``failed`` says why it no longer serves, once it does not.
    """

    def __init__(
        self,
        nodeids: Sequence[str],
        *,
        rootdir: str | os.PathLike[str],
        python: str | None = None,
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        block_plugins: Sequence[str] = BLOCK_PLUGINS,
        mode: str = "full",
        cwd: str | os.PathLike[str] | None = None,
        launched: Launch | None = None,
    ) -> None:
        self.nodeids = tuple(dict.fromkeys(nodeids))
        self.mode = mode  # what callgrind simulates for every region it serves
        self.rootdir = Path(rootdir)
        self.cwd = Path(cwd) if cwd is not None else self.rootdir  # where its pytest starts
        self.python = python or sys.executable
        self.extra_args = tuple(extra_args)
        self.env = dict(env or {})
        self.block_plugins = tuple(block_plugins)
        self.failed: str | None = None
        self.served = 0
        self._reachable = list(self.nodeids)  # tests the parent has not gone past
        self._proc: subprocess.Popen[bytes] | None = None
        self._workdir: Path | None = None
        self._hang_up: int | None = None  # the parent's end of the pipe the child watches
        self._built: Any = None
        self._launch = launched  # its process (launched early, or once it starts)
        self._told = False  # its start file is written
        self._inbox = _Inbox(self._take_dumps)  # what it sent, not yet taken

    def serves(self, nodeid: str) -> bool:
        """True while a region of ``nodeid`` may still come from this child."""
        if self.failed is not None or nodeid not in self._reachable:
            return False
        return self._inbox.may_send(nodeid)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def alive(self) -> bool:
        """True while the child runs and serves (it may still claim tests); a child found
        exited is closed, ``failed`` saying its exit status."""
        if self.failed is not None or self._proc is None:
            return False
        if self._proc.poll() is not None:
            self.close(f"the shared simulation child exited (status {self._proc.returncode})")
            return False
        return True

    def start(self) -> None:
        """Start the child now (it starts measuring its first test at once); on failure it
        no longer serves and ``failed`` says why."""
        if self._proc is not None or self.failed is not None:
            return
        try:
            self._start()
        except (OSError, SimulateError) as exc:
            self.close(f"the shared simulation child could not start: {exc}")

    def measure(
        self,
        nodeid: str,
        variant: str,
        *,
        repeats: int,
        calls: int,
        timeout: float,
        since: float | None = None,
    ) -> ChildRun | None:
        """The child's run of region (``nodeid``, ``variant``); None: measure it on its own.

        ``repeats`` and ``calls`` are what the parent expects the child to have measured
        (a region measured otherwise is measured on its own). Raises
        :class:`SimulateError` only when the child gave nothing for ``timeout`` seconds
        (a fresh child would not either); it is then ended. ``since``: when the parent
        began to wait (``time.monotonic()``; default now): the run's ``wall_s`` and the
        timeout count from then.
        """
        if not self.serves(nodeid):
            return None
        self.start()
        if self.failed is not None:
            return None
        del self._reachable[: self._reachable.index(nodeid)]  # the parent went past those
        self._inbox.forget_passed(self._reachable)
        begin = time.monotonic() if since is None else since
        try:
            reply = self._inbox.wait_for(nodeid, variant, self._reachable, begin + timeout)
        except _NoAnswer:
            tail_text = self.output_tail()
            self.close(f"no answer within timeout={timeout:g}s")
            raise SimulateError(
                f"{nodeid}: the shared simulation child gave no result within "
                f"timeout={timeout:g}s under valgrind. Raise the timeout or make the "
                f"workload smaller.\n{tail_text}"
            ) from None
        except OSError as exc:
            self.close(f"the shared simulation child stopped answering: {exc}")
            return None
        if reply is None:
            if self.failed is None and not self._inbox.finished_test(nodeid):
                self.close(f"the shared simulation child exited (status {self._status()})")
            return None
        record = reply.record
        assert record is not None and self._proc is not None and self._built is not None
        dumps = self._take_dumps(reply.dumps)
        if (record.repeats, record.calls) != (repeats, calls):
            return None  # the child read other settings than the parent: measure it alone
        self.served += 1
        return ChildRun(
            record=record,
            dumps=dumps,
            returncode=None,
            output=self.output_tail(),
            wall_s=time.monotonic() - begin,
            valgrind_options=self._built.valgrind_options,
            cache_notes=self._built.cache_notes,
            mode=self.mode,
            child={
                "mode": "shared",
                "pid": self._proc.pid,
                "tests": len(self.nodeids),
                "region_index": self.served,
                "includes_start_up": self.served == 1,
            },
        )

    def signal(self, signum: int) -> None:
        """Send ``signum`` (SIGSTOP, SIGCONT) to the running child and any vgdb it started."""
        if self._proc is not None and self._proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._proc.pid, signum)

    def output_tail(self, lines: int = 30) -> str:
        log = self._workdir / "child-output.txt" if self._workdir else None
        if log is None or not log.is_file():
            return ""
        return tail(log.read_text(errors="replace"), lines)

    def close(self, why: str | None = None) -> None:
        """End the child (its work is done or it failed) and remove its files."""
        if why and self.failed is None:
            self.failed = why
        elif self.failed is None:
            self.failed = "closed"
        if self._launch is not None:  # its pipes, valgrind and any vgdb, its files
            self._launch.close()
            self._launch = None
        self._hang_up = self._inbox.fd = None
        self._workdir = None

    # -- internals -----------------------------------------------------------
    def _start(self) -> None:
        if self._launch is None:
            self._launch = launch(
                rootdir=self.rootdir, cwd=self.cwd, python=self.python, mode=self.mode, env=self.env
            )
        launched = self._launch
        self._proc, self._workdir = launched.proc, launched.workdir
        self._hang_up, self._inbox.fd = launched.hang_up, launched.replies
        self._built = child_command(
            self.nodeids,
            rootdir=self.rootdir,
            python=self.python,
            instrument_from_start=False,
            extra_args=self.extra_args,
            block_plugins=self.block_plugins,
            workdir=self._workdir,
            mode=self.mode,
        )

    def tell(self, bytecode: Mapping[str, str]) -> None:
        """Write the started child's start file: its pytest arguments, its environment
        and the bytecode table (once; a child that failed gets none)."""
        if self._told or self._workdir is None or self.failed is not None:
            return
        self._told = True
        start = ChildStart(tuple(self._built.pytest_args), env=self.env, bytecode=bytecode)
        try:
            write_start(self._workdir / START_FILE, start)
        except OSError as exc:
            self.close(f"the shared simulation child could not be told its tests: {exc}")

    def _take_dumps(self, folder: str | None) -> list:
        """The dumps of one region (read, then their folder removed), in order."""
        if folder is None or self._proc is None:
            return []
        try:
            return read_dumps(folder, self._proc.pid, OUT_STEM)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _status(self) -> str:
        if self._proc is None:
            return "never started"
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=5)
        return str(self._proc.returncode)


class _NoAnswer(Exception):
    """The child sent no line before the deadline."""


class _Inbox:
    """What a shared child sent, as the parent reads it: its reply lines read from the
    pipe (``fd``) as they come, the regions that arrived before the parent asked for
    them kept until taken, and the tests it ran to the end. A region the parent went
    past is thrown away with its dumps (``discard``)."""

    def __init__(self, discard: Callable[[str | None], object]) -> None:
        self.fd: int | None = None  # the child's reply pipe, once it started
        self._discard = discard
        self._buffer = b""
        self._regions: dict[tuple[str, str], RegionReply] = {}  # arrived, not yet taken
        self._finished: set[str] = set()  # tests the child has run to the end

    def may_send(self, nodeid: str) -> bool:
        """True while a region of ``nodeid`` may still arrive (or is waiting)."""
        return nodeid not in self._finished or any(k[0] == nodeid for k in self._regions)

    def finished_test(self, nodeid: str) -> bool:
        return nodeid in self._finished

    def wait_for(
        self, nodeid: str, variant: str, reachable: Sequence[str], deadline: float
    ) -> RegionReply | None:
        """The region's reply, reading (and keeping) the child's lines until it arrives;
        None when the child finished that test without it, or exited. Raises
        :class:`_NoAnswer` past ``deadline`` (``time.monotonic()``)."""
        while True:
            reply = self._regions.pop((nodeid, variant), None)
            if reply is not None:
                return reply
            if nodeid in self._finished:
                return None
            reply = self._receive(deadline)
            if reply is None:
                return None
            if reply.finished:
                self._finished.add(reply.nodeid)
            elif reply.nodeid in reachable and reply.record is not None:
                self._regions[(reply.nodeid, reply.variant)] = reply
            else:
                self._discard(reply.dumps)  # a region the parent went past

    def forget_passed(self, reachable: Sequence[str]) -> None:
        """Throw away the kept regions of tests the parent went past."""
        for key in [k for k in self._regions if k[0] not in reachable]:
            self._discard(self._regions.pop(key).dumps)

    def _receive(self, deadline: float) -> RegionReply | None:
        """The child's next line; None when it closed the pipe (it exited)."""
        assert self.fd is not None
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.fd], [], [], max(0.0, min(left, 5.0)))
            if not ready:
                if time.monotonic() >= deadline:
                    raise _NoAnswer
                continue
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                return None
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return RegionReply.from_json(line)


def child_count(tests: int, wanted: int | None = None) -> int:
    """How many shared children split ``tests`` tests: ``wanted`` (the ini's
    ``inferperf_simulate_children``), else one per CPU this process may run on; at
    least one, at most one per test."""
    if wanted is None or wanted <= 0:
        try:
            wanted = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            wanted = os.cpu_count() or 1
    return max(1, min(wanted, tests))


class SharedChildren:
    """The session's shared children: ``count`` of them, each given every test.

    Each child runs the tests in the parent's order and takes the next one no other
    child took (it claims it: a file per test in a folder they share, made by a hard
    link, which fails on an existing name), so a child that finished its test goes on
    with the next free one while another still runs a long one; the parent claims the
    tests it went past without needing them, so that no child starts those.

    Every child starts at once (:meth:`start`). :meth:`paused` stops them while the
    parent times something; :meth:`measure` lets them run while it waits, and
    :meth:`running` while it works on a region (nothing timed).
    """

    def __init__(
        self,
        nodeids: Sequence[str],
        *,
        count: int = 1,
        launched: Sequence[Launch] = (),
        **child: Any,
    ) -> None:
        tests = list(dict.fromkeys(nodeids))
        count = max(1, min(count, len(tests) or 1))
        self._tests = tests
        self._order = {nodeid: index for index, nodeid in enumerate(tests)}
        self._passed = 0  # tests before this index are claimed (the parent went past them)
        self.claims = tempfile.mkdtemp(prefix="inferperf-simulate-claims-")
        child["env"] = {**dict(child.get("env") or {}), ENV_CLAIMS: self.claims}
        fits = _fits(
            child.get("mode", "full"), child["rootdir"], child.get("cwd"), child.get("python")
        )
        usable = [each for each in launched if each.fits == fits and each.proc.poll() is None]
        usable = usable[:count]
        for each in launched:  # started for another mode or place, or more than needed
            if each not in usable:
                each.close()
        self.children = [
            SharedChild(tests, launched=usable[i] if i < len(usable) else None, **child)
            for i in range(count)
        ]
        self._holds: list[bool] = []  # open paused() (True) and running() blocks, innermost last

    @property
    def served(self) -> int:
        return sum(child.served for child in self.children)

    @property
    def failed(self) -> str | None:
        """Why no child serves any more (None while one does)."""
        reasons = [child.failed for child in self.children]
        return None if any(r is None for r in reasons) else reasons[0]

    def serves(self, nodeid: str) -> bool:
        return any(child.serves(nodeid) for child in self.children)

    def covers(self, nodeid: str) -> bool:
        """True when the children were started for ``nodeid`` and the parent has not gone
        past it (a child may have failed since: then it serves no more)."""
        return self._order.get(nodeid, -1) >= self._passed

    def start(self) -> None:
        """Start every child (or take the one launched for it), then write their start
        files, with bytecode compiled while valgrind starts Python (:mod:`.child_start`)."""
        if all(child.pid is not None or child.failed for child in self.children):
            return
        for child in self.children:
            child.start()
        bytecode = handoff().table()
        for child in self.children:
            child.tell(bytecode)

    def measure(
        self, nodeid: str, variant: str, *, repeats: int, calls: int, timeout: float
    ) -> ChildRun | None:
        """The region from the child that runs ``nodeid`` (:meth:`SharedChild.measure`),
        waiting (the children going on) until one of them claimed it; None when none will
        (each is past it, or gone, or none took it within ``timeout``)."""
        begin = time.monotonic()
        deadline = begin + timeout
        self.start()
        with self.running():
            child = self._owner(nodeid, deadline, timeout)
            if child is None:
                return None
            return child.measure(
                nodeid, variant, repeats=repeats, calls=calls, timeout=timeout, since=begin
            )

    def _owner(self, nodeid: str, deadline: float, timeout: float) -> SharedChild | None:
        """The child that claimed ``nodeid``, once one has; None: the parent claimed it
        (it went past it before), or no child will (the parent claims it now). Raises
        :class:`SimulateError` when children still running took none of it, nor any later
        test, by ``deadline`` (``timeout`` seconds after the parent asked); they are ended."""
        index = self._order.get(nodeid)
        if index is None:
            return None
        for earlier in self._tests[self._passed : index]:  # went past: no child starts them
            claim(self.claims, earlier, PARENT_CLAIM)
        self._passed = max(self._passed, index)
        children = {c.pid: c for c in self.children if c.pid is not None}
        checked = 0.0  # when the parent last looked whether a child may still claim it
        while True:
            owner = claimed_by(self.claims, nodeid)
            if owner is not None:
                child = children.get(int(owner)) if owner.isdigit() else None
                return child if child is not None and child.serves(nodeid) else None
            now = time.monotonic()
            if now - checked >= 0.25 or now >= deadline:  # a scan reads every later claim
                checked = now
                past = self._claimers(self._tests[index + 1 :])  # tests are reached in order
                waiting = [c for c in self.children if c.alive() and str(c.pid) not in past]
                if not waiting or now >= deadline:
                    if not claim(self.claims, nodeid, PARENT_CLAIM):
                        if claimed_by(self.claims, nodeid) is None:  # unreadable: none serves it
                            return None
                        continue  # a child claimed it just now
                    if waiting:  # stuck on earlier tests for the whole timeout
                        tail_text = waiting[0].output_tail()
                        for child in waiting:
                            child.close(f"no answer within timeout={timeout:g}s")
                        raise SimulateError(
                            f"{nodeid}: no shared simulation child got to it within "
                            f"timeout={timeout:g}s under valgrind. Raise the timeout or make "
                            f"the workloads smaller.\n{tail_text}"
                        )
                    return None
            time.sleep(0.02)

    def _claimers(self, nodeids: Sequence[str]) -> set[str]:
        """Who claimed any of ``nodeids`` (reading only the claims that exist)."""
        made = set(os.listdir(self.claims))
        return {
            owner
            for nodeid in nodeids
            if claim_path(self.claims, nodeid).name in made
            and (owner := claimed_by(self.claims, nodeid)) is not None
        }

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """The children stopped (SIGSTOP) for the duration: the parent times something."""
        with self._held(stopped=True):
            yield

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """The children going on for the duration, even inside :meth:`paused` (the parent
        waits, or works on what nothing times)."""
        with self._held(stopped=False):
            yield

    def close(self, why: str | None = None) -> None:
        for child in self.children:
            child.close(why)
        shutil.rmtree(self.claims, ignore_errors=True)

    @contextlib.contextmanager
    def _held(self, *, stopped: bool) -> Iterator[None]:
        """The innermost :meth:`paused` or :meth:`running` block decides; the children get
        a signal only where that changes whether they are stopped."""
        before = self._stopped
        self._holds.append(stopped)
        self._follow(before)
        try:
            yield
        finally:
            before = self._stopped
            self._holds.pop()
            self._follow(before)

    @property
    def _stopped(self) -> bool:
        return bool(self._holds) and self._holds[-1]

    def _follow(self, before: bool) -> None:
        if self._stopped != before:
            self._signal(signal.SIGSTOP if self._stopped else signal.SIGCONT)

    def _signal(self, signum: int) -> None:
        for child in self.children:
            child.signal(signum)
