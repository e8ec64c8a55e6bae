"""valgrind for the simulate backend: is it here, which command, which caches.

Owns: whether the simulate backend can run here (:func:`available`), valgrind's
version, running without address-space randomisation, the cache geometries
callgrind simulates (from sysfs, fitted to what callgrind accepts) and the
command line of a child (:func:`child_command`).

Must not: start the child, talk to it, or build Profiles.
"""

from __future__ import annotations

import functools
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ...pmu.cpu import SystemPaths
from .protocol import ChildOptions

#: The static function of CPython's ``Modules/_ctypes/callbacks.c`` that runs a
#: ctypes callback: callgrind collects only inside it.
REGION_FUNCTION = "closure_fcn"
OUT_STEM = "callgrind.out"
#: pytest plugins the child blocks by default: hypothesis's plugin alone costs the
#: child ~10 s under valgrind (its lazy imports at session end), for nothing a perf
#: test needs; pytest-randomly would reorder the tests the parent hands over in its
#: own order. Pass ``block_plugins=()`` where a suite's options need them.
BLOCK_PLUGINS = ("hypothesispytest", "randomly")
MIN_LINE = 16  # callgrind refuses cache lines below 16 bytes (cachegrind's cg_arch.c)

#: What callgrind simulates: "full" (--cache-sim=yes --branch-sim=yes: instructions,
#: cache and branch events) or "instructions" (neither simulation: instructions only,
#: the same Ir counts, and the instrumented region runs faster).
MODES = ("full", "instructions")
MODE_TEXT = {
    "full": "full (instruction, cache and branch simulation)",
    "instructions": "instructions only (no cache or branch simulation)",
}


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise ValueError(f"mode={mode!r}: the simulate mode is one of {', '.join(MODES)}")
    return mode


def available() -> str | None:
    """None when the simulate backend can run here, else why not (one line)."""
    if not sys.platform.startswith("linux"):
        return (
            f"not available: the simulate backend needs valgrind on Linux; this is {sys.platform}"
        )
    if shutil.which("valgrind") is None:
        return "not available: valgrind is not installed: apt install valgrind"
    try:
        import _ctypes
    except ImportError as exc:
        return f"not available: this Python has no ctypes ({exc}), which marks the region"
    path = getattr(_ctypes, "__file__", None)
    if path:
        try:
            data = Path(path).read_bytes()
        except OSError:
            data = None
        if data is not None and b"\0" + REGION_FUNCTION.encode() + b"\0" not in data:
            return (
                f"not available: CPython's _ctypes module ({path}) has no "
                f"{REGION_FUNCTION} symbol (a stripped build), and callgrind finds the "
                "measured region by that name"
            )
    return None


@functools.lru_cache(maxsize=4)
def valgrind_version(valgrind: str = "valgrind") -> str:
    """``valgrind-3.19.0`` (or ``unknown``)."""
    try:
        out = subprocess.run(
            [valgrind, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


@functools.lru_cache(maxsize=1)
def no_aslr_prefix() -> tuple[str, ...]:
    """``setarch <arch> -R``: run the child with address-space randomisation off.

    Where the heap and stacks start moves which paths malloc takes and how data
    aligns, so it moves the counts a little; () where ``setarch`` is missing or
    may not change the personality (a container's seccomp profile can forbid it).
    """
    setarch = shutil.which("setarch")
    if setarch is None:
        return ()
    prefix = (setarch, platform.machine(), "-R")
    try:
        ok = (
            subprocess.run(
                [*prefix, "true"], capture_output=True, timeout=30, check=False
            ).returncode
            == 0
        )
    except (OSError, subprocess.SubprocessError):
        ok = False
    return prefix if ok else ()


# -- caches ----------------------------------------------------------------------
@dataclass(frozen=True)
class CacheGeometry:
    """One simulated cache: callgrind's ``--I1/--D1/--LL=<size>,<assoc>,<line size>``."""

    size: int
    assoc: int
    line: int

    @property
    def value(self) -> str:
        return f"{self.size},{self.assoc},{self.line}"


def _power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def fit_geometry(size: int, assoc: int, line: int) -> tuple[CacheGeometry | None, str | None]:
    """A geometry callgrind accepts for this cache, and a note when it had to change.

    callgrind needs a power-of-two line of at least 16 bytes and a power-of-two
    number of sets. A cache whose set count is not a power of two (e.g. 30 MiB,
    20-way) keeps its size: the sets round down to a power of two and the
    associativity grows to match (30 MiB 20-way 64 B -> 30-way), as cachegrind
    itself tweaks such last-level caches. None when no exact fit exists.
    """
    if size <= 0 or assoc <= 0 or line <= 0:
        return None, f"size {size}, {assoc}-way, line {line}: not a usable geometry"
    if not _power_of_two(line) or line < MIN_LINE:
        return None, f"line size {line} B is not a power of two >= {MIN_LINE}"
    if size % (assoc * line):
        return None, f"{size} B is not a whole number of {assoc}-way sets of {line} B lines"
    sets = size // (assoc * line)
    if _power_of_two(sets):
        return CacheGeometry(size, assoc, line), None
    fitted = 1 << (sets.bit_length() - 1)
    if size % (fitted * line):
        return None, f"{sets} sets is not a power of two and no exact refit exists"
    new_assoc = size // (fitted * line)
    return CacheGeometry(size, new_assoc, line), (
        f"{sets} sets is not a power of two: simulated as {fitted} sets, {new_assoc}-way "
        f"(same size)"
    )


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    match = re.fullmatch(r"(\d+)\s*([KMG]?)", text)
    if not match:
        return None
    return int(match.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[match.group(2)]


def cache_config(
    paths: SystemPaths | None = None, cpu: int = 0
) -> tuple[dict[str, CacheGeometry], dict[str, str]]:
    """The I1, D1 and LL geometries of this machine from sysfs, and a note per cache.

    LL is the highest-level unified (else data) cache. A cache that sysfs does not
    describe completely (size, ``ways_of_associativity``, ``coherency_line_size``) or
    that callgrind cannot represent is left to callgrind's own choice, with a note.
    """
    paths = paths or SystemPaths()
    base = paths.cpus / f"cpu{cpu}" / "cache"
    found: list[tuple[int, str, Path]] = []
    for index in sorted(base.glob("index*")):
        level = _read_int(index / "level")
        try:
            kind = (index / "type").read_text().strip()
        except OSError:
            continue
        if level is not None:
            found.append((level, kind, index))
    choose = {
        "I1": [f for f in found if f[0] == 1 and f[1] in ("Instruction", "Unified")],
        "D1": [f for f in found if f[0] == 1 and f[1] in ("Data", "Unified")],
        "LL": sorted(
            (f for f in found if f[0] > 1 and f[1] in ("Unified", "Data")),
            key=lambda f: (f[0], f[1] == "Unified"),
        ),
    }
    config: dict[str, CacheGeometry] = {}
    notes: dict[str, str] = {}
    for name, candidates in choose.items():
        if not candidates:
            notes[name] = f"callgrind's default: sysfs lists no {name} cache under {base}"
            continue
        level, kind, index = candidates[-1]
        size, assoc, line = (
            _read_int(index / f) for f in ("size", "ways_of_associativity", "coherency_line_size")
        )
        where = f"sysfs cpu{cpu} {index.name} (L{level} {kind})"
        if size is None or assoc is None or line is None:
            notes[name] = f"callgrind's default: {where} lacks size, ways or line size"
            continue
        geometry, note = fit_geometry(size, assoc, line)
        if geometry is None:
            notes[name] = f"callgrind's default: {where}: {note}"
            continue
        config[name] = geometry
        notes[name] = where + (f"; {note}" if note else "")
    return config, notes


def cache_options(config: Mapping[str, CacheGeometry]) -> list[str]:
    return [f"--{name}={config[name].value}" for name in ("I1", "D1", "LL") if name in config]


@dataclass(frozen=True)
class ChildCommand:
    """The valgrind command line of a simulation child (``command``: valgrind running
    ``python -m pytest_inferperf.measure.simulate.child_start``) and the pytest arguments it reads
    from its start file (``pytest_args``: options, then the node ids)."""

    command: list[str]
    valgrind_options: list[str]
    cache_notes: dict[str, str]
    request: ChildOptions  # how the child switches instrumentation (repeats, calls: default)
    pytest_args: list[str] = field(default_factory=list)

    @property
    def from_start(self) -> bool:
        return self.request.trigger == "start"

    def shown(self) -> str:
        """The whole command as a shell would run it, the start file's arguments last."""
        return shlex.join([*self.command, *self.pytest_args])


def _node_arg(rootdir: Path, nodeid: str) -> str:
    """A node id as an argument that selects it from any folder: node ids are relative
    to the rootdir, the child starts where the parent did. Joined as text (a
    parametrised id may hold ``/`` or ``..``, which a path would normalise)."""
    return os.path.join(str(rootdir), nodeid)


def child_command(
    nodeids: Sequence[str],
    *,
    rootdir: Path,
    python: str,
    instrument_from_start: bool,
    extra_args: Sequence[str],
    block_plugins: Sequence[str],
    workdir: Path,
    mode: str = "full",
) -> ChildCommand:
    """``[setarch -R] valgrind --tool=callgrind ... python -m
    pytest_inferperf.measure.simulate.child_start``, and the ``pytest ... <nodeids>`` arguments of
    its start file."""
    valgrind = shutil.which("valgrind") or "valgrind"
    vgdb = shutil.which("vgdb")
    from_start = instrument_from_start or vgdb is None
    if check_mode(mode) == "full":
        config, notes = cache_config()
        simulation = ["--cache-sim=yes", "--branch-sim=yes", *cache_options(config)]
    else:
        notes = {name: "not simulated (instructions-only mode)" for name in ("I1", "D1", "LL")}
        simulation = ["--cache-sim=no", "--branch-sim=no"]
    prefix = workdir / "vgdb-pipe"
    options = [
        "--tool=callgrind",
        *simulation[:2],
        f"--instr-atstart={'yes' if from_start else 'no'}",
        "--collect-atstart=no",
        f"--toggle-collect={REGION_FUNCTION}",
        f"--dump-after={REGION_FUNCTION}",
        *simulation[2:],
    ]
    command = [
        *no_aslr_prefix(),
        valgrind,
        *options,
        "--vgdb=yes",
        f"--vgdb-prefix={prefix}",
        f"--log-file={workdir / 'valgrind.log'}",
        f"--callgrind-out-file={workdir / OUT_STEM}.%p",
        python,
        "-m",
        # ``python -m pytest`` with the arguments below, from the start file (child_start)
        "pytest_inferperf.measure.simulate.child_start",
    ]
    pytest_args = [
        # the parent's own options first: the child's below override any that remain,
        # and an option taking any number of values stops at them, not at a node id
        *extra_args,
        "-p",
        "no:cacheprovider",
        # no assertion rewriting: pytest rewrites every module of a plugin's
        # distribution and the tests and conftests on import, reading the source and
        # compiling in Python; under valgrind that is 0.5-0.9 s of the child's start-up
        # wherever no rewritten copy is cached (PYTHONDONTWRITEBYTECODE=1, common in CI
        # images). The parent reports the test's own assertions; a child needs none of
        # their explanations. Code the region runs is the same but for assert statements
        "--assert=plain",
        "-q",
        f"--rootdir={rootdir}",
        f"--basetemp={workdir / 'basetemp'}",
        # the node ids are the selection: a -m or -k in the project's addopts must not
        # deselect a test the parent runs (pytest -m slow against addopts -m "not slow")
        "-m",
        "",
        "-k",
        "",
    ]
    for plugin in block_plugins:
        pytest_args += ["-p", f"no:{plugin}"]
    pytest_args += [_node_arg(rootdir, nodeid) for nodeid in nodeids]
    request = ChildOptions(
        trigger="start" if from_start else "vgdb",
        vgdb=vgdb,
        vgdb_prefix=str(prefix),
        dumps=str(workdir / OUT_STEM),
    )
    return ChildCommand(command, options, notes, request, pytest_args)
