"""What a simulation child reads before pytest runs in it, and the child's entry point.

Owns: both ends of the start file, and the child's entry point
(``python -m pytest_inferperf.measure.simulate.child_start``: it waits for its start file, then runs
pytest as ``python -m pytest`` would, with the start file's arguments). The start file
(:class:`ChildStart`, JSON, written atomically) carries

* the pytest arguments and the environment the child learns only once its tests are
  known: a shared child is started while the parent still collects
  (:mod:`.shared`), so valgrind starting Python overlaps collection;
* a table of bytecode the parent compiled for it. Under valgrind, compiling Python
  source is CPython's compiler running on valgrind's emulated CPU: importing this
  package's modules from source took the child 3.77 s against 3.43 s from bytecode
  (the plugin, the child's modules and the ONNX Runtime helpers, with numpy and ONNX
  Runtime; two runs each, alike). Python compiles wherever no valid cached bytecode
  lies beside a source file: under ``PYTHONDONTWRITEBYTECODE=1`` (many CI images), in
  an editable install or a fresh checkout that nothing has imported with bytecode
  writing on. The parent (:class:`BytecodeHandoff`) compiles, natively, every module
  it has loaded from a ``.py`` file (:data:`CHILD_MODULES` imported first) whose
  cached bytecode is missing or stale, into a folder of its own; the child makes
  ``SourceFileLoader`` take a handed-over file whose header matches the source's
  current size and modification time. The same table every run, so the child imports
  the same way every run (what it counts does not depend on how fast the parent was).

Must not: write beside anyone's sources (nothing in ``__pycache__``); change what a
module contains: a file whose header does not match its source, or that cannot be
read, is ignored, and the child compiles that module itself; run pytest without its
start file (a child whose parent is gone, or that waited :data:`START_WAIT_S`, exits).
Stdlib only: it runs before anything else is imported in the child.
"""

from __future__ import annotations

import atexit
import importlib
import importlib.machinery
import importlib.util
import json
import marshal
import os
import runpy
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from ..child_process import ENV_START, parent_pid

#: How long a child waits for its start file: the parent writes it once its tests are
#: known (a shared child is started before collection ends); a parent that did not
#: within this time, or that is gone, gets no run (the child exits, status 3).
START_WAIT_S = 600.0
#: What a child imports to measure that the parent may not have imported yet when the
#: first child starts (it does once it measures): the child's side and what it needs.
CHILD_MODULES = ("pytest_inferperf.measure.simulate.child", "pytest_inferperf.measure.measurer")
_HEADER = 16  # magic, flags, source mtime, source size (PEP 552, timestamp-based)
_FLAGS = (0).to_bytes(4, "little")


# -- both ends: the file format -----------------------------------------------------------
def _u32(value: float) -> bytes:
    return (int(value) & 0xFFFFFFFF).to_bytes(4, "little")


def pyc_header(source: os.stat_result) -> bytes:
    """The 16-byte header of a timestamp-based ``.pyc`` of a source with stat ``source``."""
    return importlib.util.MAGIC_NUMBER + _FLAGS + _u32(source.st_mtime) + _u32(source.st_size)


def cache_is_valid(source: str) -> bool:
    """True when the bytecode Python would read for ``source`` exists and matches it (a
    timestamp header of this interpreter's magic; a hash-based ``.pyc`` counts as valid).
    An interpreter without a cache tag caches nothing: False."""
    if sys.implementation.cache_tag is None:
        return False
    try:
        cached = importlib.util.cache_from_source(source)
        with open(cached, "rb") as handle:
            head = handle.read(_HEADER)
        stat = os.stat(source)
    except (OSError, ValueError):  # no cached file, or a source path Python cannot map
        return False
    if head[:4] != importlib.util.MAGIC_NUMBER:
        return False
    if head[4:8] != _FLAGS:  # hash-based: Python checks it (or trusts it) itself
        return True
    return head == pyc_header(stat)


# -- the parent ---------------------------------------------------------------------------
def module_sources(modules: Mapping[str, ModuleType]) -> list[str]:
    """The ``.py`` files ``modules`` were loaded from (frozen, built-in, extension and
    namespace modules have none; ``__main__`` is the parent's own script)."""
    sources = []
    for name, module in list(modules.items()):
        spec = getattr(module, "__spec__", None)
        origin = getattr(spec, "origin", None)
        if name == "__main__" or not getattr(spec, "has_location", False):
            continue
        if isinstance(origin, str) and origin.endswith(".py"):
            sources.append(origin)
    return sources


def compiled(source: str) -> bytes | None:
    """``source`` compiled as its import would, with the header of its current stat; None
    where it cannot be read or compiled (the child then fails or succeeds on its own)."""
    try:
        stat = os.stat(source)
        with open(source, "rb") as handle:
            data = handle.read()
        loader = importlib.machinery.SourceFileLoader("_inferperf_handoff", source)
        code = loader.source_to_code(data, source)
    except (OSError, SyntaxError, ValueError):
        return None
    return pyc_header(stat) + marshal.dumps(code)


class BytecodeHandoff:
    """The parent's folder of bytecode for its children; one per process, removed at
    exit. :meth:`table` compiles what a child will import (natively: call it once the
    children are started, so that it overlaps valgrind starting Python)."""

    def __init__(self) -> None:
        self.folder: Path | None = None
        self._files: dict[str, str] = {}  # source path -> file in the folder

    def table(self, sources: Iterable[str] | None = None) -> dict[str, str]:
        """Source path -> compiled file, for the sources a child will import that lack
        valid cached bytecode (default: this process's modules, :data:`CHILD_MODULES`
        imported first). Empty for an optimised interpreter (the child compiles at its
        own level)."""
        if sys.flags.optimize:
            return {}
        if self.folder is None:
            self.folder = Path(tempfile.mkdtemp(prefix="inferperf-bytecode-"))
            atexit.register(self.close)
        if sources is None:
            for name in CHILD_MODULES:  # the parent imports them soon anyway
                importlib.import_module(name)
            sources = module_sources(sys.modules)
        for source in dict.fromkeys(sources):
            if source in self._files or cache_is_valid(source):
                continue
            data = compiled(source)
            if data is None:
                continue
            target = self.folder / f"{len(self._files)}.pyc"
            target.write_bytes(data)
            self._files[source] = str(target)
        return dict(self._files)

    def close(self) -> None:
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None


_handoff: BytecodeHandoff | None = None


def handoff() -> BytecodeHandoff:
    """This process's hand-over (made on first use)."""
    global _handoff
    if _handoff is None:
        _handoff = BytecodeHandoff()
    return _handoff


# -- the start file -----------------------------------------------------------------------
@dataclass(frozen=True)
class ChildStart:
    """What a child reads before pytest runs: pytest arguments (after any on its command
    line), environment variables to set, and the bytecode table (source -> file)."""

    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    bytecode: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(
            {"args": list(self.args), "env": dict(self.env), "bytecode": dict(self.bytecode)}
        )

    @classmethod
    def from_json(cls, text: str) -> ChildStart:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("a start file holds a JSON object")
        return cls(
            args=tuple(str(a) for a in data.get("args") or ()),
            env={str(k): str(v) for k, v in (data.get("env") or {}).items()},
            bytecode={str(k): str(v) for k, v in (data.get("bytecode") or {}).items()},
        )


def write_start(path: str | os.PathLike[str], start: ChildStart) -> None:
    """Write ``start`` at ``path`` atomically: a child never reads half of one."""
    partial = Path(f"{os.fspath(path)}.partial")
    partial.write_text(start.to_json(), encoding="utf-8")
    os.replace(partial, path)


# -- the child ----------------------------------------------------------------------------
def read_start(path: str, wait_s: float | None = None) -> ChildStart | None:
    """The start file at ``path``, waiting for the parent to write it; None when the
    parent is gone (this process was handed to another parent) or ``wait_s`` (default
    :data:`START_WAIT_S`) passed first, or the file cannot be read. The parent is the pid
    it passed (:func:`..child_process.parent_pid`); without one, pid 1 reads as orphaned."""
    expected = parent_pid()
    parent = expected if expected is not None else os.getppid()
    orphaned_at_start = expected is None and parent == 1
    deadline = time.monotonic() + (START_WAIT_S if wait_s is None else wait_s)
    while not os.path.exists(path):
        if time.monotonic() >= deadline or os.getppid() != parent or orphaned_at_start:
            return None
        time.sleep(0.01)
    try:
        with open(path, encoding="utf-8") as handle:
            return ChildStart.from_json(handle.read())
    except (OSError, ValueError, AttributeError):
        return None


def handed_code(pyc: str, source: str) -> Any:
    """The code object in ``pyc`` when its header matches ``source`` as it is now; else
    None (the source changed since the parent compiled it, or the file is unreadable)."""
    try:
        with open(pyc, "rb") as handle:
            data = handle.read()
        if data[:_HEADER] != pyc_header(os.stat(source)):
            return None
        return marshal.loads(memoryview(data)[_HEADER:])
    except (OSError, ValueError, EOFError, TypeError):
        return None


def use_handed_bytecode(table: Mapping[str, str]) -> None:
    """Make ``SourceFileLoader`` (files on ``sys.path``, editable installs) load the
    modules in ``table`` from their handed-over files."""
    if not table:
        return
    loader_class: Any = importlib.machinery.SourceFileLoader
    original = loader_class.get_code

    def get_code(self: Any, fullname: str) -> Any:
        pyc = table.get(getattr(self, "path", ""))
        code = handed_code(pyc, self.path) if pyc is not None else None
        return code if code is not None else original(self, fullname)

    loader_class.get_code = get_code


def main() -> None:
    """The child's entry: its start file, then pytest with its command line and the
    start file's arguments (as ``python -m pytest`` runs it)."""
    path = os.environ.get(ENV_START)
    if path:
        start = read_start(path)
        if start is None:
            sys.stderr.write(
                f"inferperf: no start file at {path} from the test process (it ended, or "
                f"did not write one within {START_WAIT_S:g} s): this simulation child "
                "runs nothing\n"
            )
            raise SystemExit(3)
        os.environ.update(start.env)
        sys.argv.extend(start.args)
        use_handed_bytecode(start.bytecode)
    runpy.run_module("pytest", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
