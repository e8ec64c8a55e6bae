"""One valgrind child for many tests: the simulate backend's shared child.

Owns: starting ``valgrind ... python -m pytest <every test that profiles>`` once
and asking it for one region at a time (the parent side, :class:`SharedChild`; the
child's side of the conversation is in :mod:`.simulate_child`). A child's fixed
cost (valgrind start-up, imports and collection under valgrind, ~15-20 s for an
ONNX Runtime suite) is paid once per session instead of once per test.

The conversation, one JSON line each way over two pipes (``ENV_SHARED`` names
their descriptors in the child), typed records of :mod:`.simulate_protocol`:

* parent -> child: a :class:`RegionRequest`, sent after the parent's own native
  run of that region, so the two never compete for a CPU;
* child -> parent: a :class:`RegionReply` with the region's record when it was
  measured (callgrind's dumps for it are on disk before the line is written),
  or with ``missed`` (why) when the child finished that test, or all its tests,
  without reaching the region.

The child runs a test only once the parent asked for it (the tests before it are
skipped, not run), so it never runs ahead of the parent. A region the shared
child missed (another test order, a test that behaves differently in the child)
or a shared child that died is not an error here: :meth:`SharedChild.measure`
returns None and the caller falls back to a child for that one test, which
reports whatever went wrong in full.

Must not: measure or build Profiles (:mod:`.simulate_parent`), or know about pytest's
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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from ..child_process import ENV_SHARED
from .callgrind import dump_files, read_dump
from .simulate_protocol import (
    ChildRun,
    RegionReply,
    RegionRequest,
    SimulateError,
    child_env,
    tail,
)
from .simulate_valgrind import BLOCK_PLUGINS, OUT_STEM, child_command


# -- the parent ------------------------------------------------------------------
class SharedChild:
    """A simulation child that runs ``nodeids`` in one valgrind process, region by region.

    Started on the first :meth:`measure`; :meth:`close` ends it (also on failure).
    ``failed`` says why it no longer serves, once it does not.
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
    ) -> None:
        self.nodeids = tuple(dict.fromkeys(nodeids))
        self.mode = mode  # what callgrind simulates for every region it serves
        self.rootdir = Path(rootdir)
        self.python = python or sys.executable
        self.extra_args = tuple(extra_args)
        self.env = dict(env or {})
        self.block_plugins = tuple(block_plugins)
        self.failed: str | None = None
        self.served = 0
        self._reachable = list(self.nodeids)  # tests the child has not gone past
        self._proc: subprocess.Popen[bytes] | None = None
        self._workdir: Path | None = None
        self._requests: IO[str] | None = None
        self._replies: int | None = None
        self._buffer = b""
        self._built: Any = None

    def serves(self, nodeid: str) -> bool:
        return self.failed is None and nodeid in self._reachable

    def measure(
        self, nodeid: str, variant: str, *, repeats: int, calls: int, timeout: float
    ) -> ChildRun | None:
        """The child's run of region (``nodeid``, ``variant``); None: measure it on its own.

        Raises :class:`SimulateError` only when the child ran past ``timeout``
        seconds (a fresh child would too); it is then ended.
        """
        if not self.serves(nodeid):
            return None
        try:
            self._start()
        except (OSError, SimulateError) as exc:
            self.close(f"the shared simulation child could not start: {exc}")
            return None
        del self._reachable[: self._reachable.index(nodeid)]  # the child skips those
        begin = time.monotonic()
        try:
            self._send(RegionRequest(nodeid, variant, repeats, calls))
            message = self._receive(nodeid, timeout)
        except OSError as exc:
            self.close(f"the shared simulation child stopped answering: {exc}")
            return None
        if message is None:
            self.close(f"the shared simulation child exited (status {self._status()})")
            return None
        if (message.nodeid, message.variant) != (nodeid, variant):
            self.close(
                f"the shared simulation child answered for {message.nodeid!r} "
                f"{message.variant!r}, not {nodeid!r} {variant!r}"
            )
            return None
        if message.missed is not None or message.record is None:
            with contextlib.suppress(ValueError):
                self._reachable.remove(nodeid)
            return None
        self.served += 1
        assert self._proc is not None and self._built is not None
        return ChildRun(
            record=message.record,
            dumps=self._take_dumps(),
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
        if self._requests is not None:
            with contextlib.suppress(OSError):
                self._requests.close()
            self._requests = None
        if self._replies is not None:
            with contextlib.suppress(OSError):
                os.close(self._replies)
            self._replies = None
        if self._proc is not None and self._proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._proc.pid, signal.SIGKILL)  # valgrind and any vgdb
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=30)
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None

    # -- internals -----------------------------------------------------------
    def _start(self) -> None:
        if self._proc is not None:
            return
        self._workdir = Path(tempfile.mkdtemp(prefix="inferperf-simulate-shared-"))
        built = child_command(
            self.nodeids,
            rootdir=self.rootdir,
            python=self.python,
            instrument_from_start=False,
            extra_args=self.extra_args,
            block_plugins=self.block_plugins,
            workdir=self._workdir,
            mode=self.mode,
        )
        if built.from_start:
            raise SimulateError(
                "vgdb is not installed, and a shared child must switch "
                "instrumentation on and off per region"
            )
        self._built = built
        request_r, request_w = os.pipe()
        reply_r, reply_w = os.pipe()
        env = child_env(self._workdir / "unused.json", "", built.request, self.env)
        env[ENV_SHARED] = f"{request_r},{reply_w}"
        with open(self._workdir / "child-output.txt", "wb") as output:
            try:
                self._proc = subprocess.Popen(
                    built.command,
                    cwd=self.rootdir,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    pass_fds=(request_r, reply_w),
                    start_new_session=True,
                )
            finally:
                os.close(request_r)
                os.close(reply_w)
        self._requests = os.fdopen(request_w, "w", encoding="utf-8")
        self._replies = reply_r

    def _send(self, message: RegionRequest) -> None:
        assert self._requests is not None
        self._requests.write(message.to_json() + "\n")
        self._requests.flush()

    def _receive(self, nodeid: str, timeout: float) -> RegionReply | None:
        """The child's next line; None when it closed the pipe (it exited)."""
        assert self._replies is not None
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self._replies], [], [], max(0.0, min(left, 5.0)))
            if not ready:
                if time.monotonic() >= deadline:
                    tail = self.output_tail()
                    self.close(f"no answer within timeout={timeout:g}s")
                    raise SimulateError(
                        f"{nodeid}: the shared simulation child gave no result within "
                        f"timeout={timeout:g}s under valgrind. Raise the timeout or make the "
                        f"workload smaller.\n{tail}"
                    )
                continue
            chunk = os.read(self._replies, 1 << 16)
            if not chunk:
                return None
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return RegionReply.from_json(line)

    def _take_dumps(self) -> list:
        """The dumps written since the last region (read, then removed), in order."""
        assert self._proc is not None and self._workdir is not None
        dumps = []
        at_exit = f"{OUT_STEM}.{self._proc.pid}"  # written when the child exits, not yet
        for path in dump_files(self._workdir, self._proc.pid, OUT_STEM):
            if path.name == at_exit:
                continue
            dump = read_dump(path.read_text(encoding="utf-8", errors="replace"), source=path.name)
            path.unlink()
            if not dump.at_exit:
                dumps.append(dump)
        return sorted(dumps, key=lambda d: (d.part is None, d.part or 0))

    def _status(self) -> str:
        if self._proc is None:
            return "never started"
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=5)
        return str(self._proc.returncode)
