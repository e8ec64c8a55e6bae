"""Bytecode the test process hands to its simulation children, so that they do not compile.

Owns: both ends of one hand-over, and the simulation child's entry point
(``python -m pytest_inferperf.child_bytecode <pytest arguments>``, which then runs pytest
as ``python -m pytest`` would). Under valgrind, compiling Python source is CPython's
compiler running on valgrind's emulated CPU: importing this package's modules from source
took the child 3.77 s against 3.43 s from bytecode (the plugin, the child's modules and the
ONNX Runtime helpers, with numpy and ONNX Runtime; two runs each, alike). Python compiles
wherever no valid cached bytecode lies beside a source file: under
``PYTHONDONTWRITEBYTECODE=1`` (many CI images), in an editable install or a fresh checkout
that nothing has imported with bytecode writing on.

* The parent (:class:`BytecodeHandoff`): for every module it has loaded from a ``.py``
  file (:data:`CHILD_MODULES` imported first) whose cached bytecode is missing or stale,
  it compiles the source natively into a folder of its own and then writes a manifest
  (source path -> file), once per child start.
* The child (:func:`main`): waits for its manifest (the parent writes it while valgrind
  starts Python: the child reads it after its first 0.5 s), makes ``SourceFileLoader`` take
  a handed-over file whose header matches the source's current size and modification time,
  and runs pytest. The same manifest every run, so the child imports the same way every
  run (what it counts does not depend on how fast the parent compiled).

Must not: write beside anyone's sources (nothing in ``__pycache__``); change what a module
contains: a file whose header does not match its source, or that cannot be read, is
ignored, and the child compiles that module itself as before. Stdlib only: it runs before
anything else is imported in the child.
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
from pathlib import Path
from types import ModuleType
from typing import Any

from .child_process import ENV_BYTECODE

#: How long a child waits for its manifest before it compiles for itself (the parent
#: writes it within a second of the start, natively; it stopped or died otherwise).
MANIFEST_WAIT_S = 60.0
#: What a child imports to measure that the parent may not have imported yet when the
#: first child starts (it does once it measures): the child's side and what it needs.
CHILD_MODULES = ("pytest_inferperf.pmu.simulate_child", "pytest_inferperf.measure")
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
    """The parent's folder of handed-over bytecode; one per process, removed at exit.

    :meth:`reserve` names a manifest for children about to start (put it in their
    environment as :data:`ENV_BYTECODE`); :meth:`publish` compiles what they will need
    and writes that manifest (call it once they are started: the compiling overlaps
    valgrind starting Python).
    """

    def __init__(self) -> None:
        self.folder: Path | None = None
        self._files: dict[str, str] = {}  # source path -> file in the folder
        self._manifests = 0

    def reserve(self) -> str | None:
        """The path of the next manifest; None when bytecode cannot be handed over (an
        optimised interpreter: the child compiles at its own level)."""
        if sys.flags.optimize:
            return None
        if self.folder is None:
            self.folder = Path(tempfile.mkdtemp(prefix="inferperf-bytecode-"))
            atexit.register(self.close)
        self._manifests += 1
        return str(self.folder / f"manifest-{self._manifests}.json")

    def publish(self, manifest: str | None, sources: Iterable[str] | None = None) -> int:
        """Compile the sources a child will import that lack valid cached bytecode
        (default: this process's modules, :data:`CHILD_MODULES` imported first), then
        write ``manifest``
        (atomically: a child never reads half of one). Returns how many files it lists."""
        if manifest is None or self.folder is None:
            return 0
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
            self._files[source] = target.name
        partial = Path(f"{manifest}.partial")
        partial.write_text(json.dumps(self._files), encoding="utf-8")
        os.replace(partial, manifest)
        return len(self._files)

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


# -- the child ----------------------------------------------------------------------------
def read_manifest(manifest: str, wait_s: float = MANIFEST_WAIT_S) -> dict[str, str]:
    """The manifest's table (source path -> absolute file), waiting for the parent to write
    it; empty when it does not come within ``wait_s`` or cannot be read."""
    deadline = time.monotonic() + wait_s
    while not os.path.exists(manifest):
        if time.monotonic() >= deadline:
            return {}
        time.sleep(0.01)
    try:
        with open(manifest, encoding="utf-8") as handle:
            table = json.load(handle)
    except (OSError, ValueError):
        return {}
    folder = os.path.dirname(manifest)
    if not isinstance(table, dict):
        return {}
    return {str(k): os.path.join(folder, str(v)) for k, v in table.items()}


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
    """The child's entry: the parent's bytecode, then pytest with this command line."""
    manifest = os.environ.get(ENV_BYTECODE)
    if manifest:
        use_handed_bytecode(read_manifest(manifest))
    runpy.run_module("pytest", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
