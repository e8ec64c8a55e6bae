"""What crosses between the simulate backend's parent and its valgrind child.

Owns: the typed records of that conversation, each with ``to_json`` / ``from_json``
(or ``to_dict`` / ``from_dict``), and the environment the child starts with:

* :class:`ChildOptions` - parent -> child at start (``ENV_OPTIONS``): repeats, calls
  per repeat, how instrumentation is switched on;
* :class:`ChildRecord` (with :class:`PlanStep` and :class:`Instrumentation`) -
  child -> parent: what the child ran for one region, written as a JSON file by a
  child for one test or sent in a :class:`RegionReply` by a shared child (one
  JSON line per region it measured, and one when each of its tests ended);
* :class:`ChildRun` - what one child run left behind, as the parent reads it;
* :func:`child_env` - the child's environment (and :data:`CHILD_ENV`);
* :func:`claim` / :func:`claimed_by` - which shared child runs a test (a file per test).

Also the two errors every side raises (:class:`SimulateUnavailable`,
:class:`SimulateError`) and :func:`tail` (the last lines of a child's output for
an error message).

Must not: start processes, measure, or build Profiles. Imports nothing of the
simulate backend's other modules (every one of them imports this one).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.errors import InferperfError
from ...onnxrt.telemetry import ENV as TELEMETRY_ENV
from ..child_process import ENV_CHILD

if TYPE_CHECKING:
    from .callgrind import CallgrindDump

BACKEND = "simulate"
CHILD_BACKEND = "simulate-child"

ENV_VARIANT = "INFERPERF_SIMULATE_VARIANT"  # the pmu_profile name= to measure ("" = none)
ENV_OPTIONS = "INFERPERF_SIMULATE_OPTIONS"  # JSON of ChildOptions

HASH_SEED = "0"
DEFAULT_REPEATS = 3  # counts are deterministic: a few repeats show that, more cost minutes
DEFAULT_CALLS = 1  # calls of the workload per repeat (per callback)

#: Environment of the child: spinning off and one thread where a variable can say so,
#: because callgrind counts only the thread that runs the callback. Python objects are
#: allocated with the C allocator: pymalloc's pool bookkeeping depends on what start-up
#: left in its pools (-0.2% to -0.37% for an allocation-heavy loop after extra imports),
#: glibc's per-size caches do not (0.0007% for the same pair; docs/simulate.md).
CHILD_ENV = {
    "PYTHONHASHSEED": HASH_SEED,
    "PYTHONMALLOC": "malloc",
    # ONNX Runtime 1.29+ uploads telemetry from background threads some seconds after
    # import (DNS lookups, HTTP): under valgrind that lands inside regions and, through
    # the one simulated cache and branch predictor, moved their miss counts by up to 40%.
    TELEMETRY_ENV: "1",
    "OMP_WAIT_POLICY": "PASSIVE",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}
#: Removed from the child's environment: xdist worker identity, the parent's current
#: test, and coverage start-up hooks (coverage tracing would be counted).
CHILD_ENV_DROP = (
    "PYTEST_XDIST_WORKER",
    "PYTEST_XDIST_WORKER_COUNT",
    "PYTEST_XDIST_TESTRUNUID",
    "PYTEST_CURRENT_TEST",
    "COVERAGE_PROCESS_START",
)
CHILD_ENV_DROP_PREFIXES = ("COV_CORE_",)


class SimulateUnavailable(InferperfError, RuntimeError):
    """The simulate backend cannot run here; the message says why and what to install."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class SimulateError(InferperfError, RuntimeError):
    """A simulation run failed; the message names the step, the cause and the child's output."""


# -- parent -> child -------------------------------------------------------------
@dataclass(frozen=True)
class ChildOptions:
    """How the child measures: repeats, calls per repeat, and the instrumentation switch.

    ``trigger`` "vgdb": the child switches instrumentation on after its warm-up (by a
    client request, else with ``vgdb``, ``vgdb_prefix``); "start": it is on from the
    start. ``dumps``: callgrind's ``--callgrind-out-file`` without its ``.%p``, where
    the child reads the instructions of its own first counted callback.
    """

    repeats: int = DEFAULT_REPEATS
    calls: int = DEFAULT_CALLS
    trigger: str = "start"
    vgdb: str | None = None
    vgdb_prefix: str | None = None
    dumps: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "repeats": self.repeats,
            "calls": self.calls,
            "trigger": self.trigger,
            "vgdb": self.vgdb,
            "vgdb_prefix": self.vgdb_prefix,
            "dumps": self.dumps,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_json(cls, text: str | None) -> ChildOptions:
        data = json.loads(text or "{}")
        return cls(
            repeats=int(data.get("repeats", DEFAULT_REPEATS)),
            calls=int(data.get("calls", DEFAULT_CALLS)),
            trigger=str(data.get("trigger", "start")),
            vgdb=data.get("vgdb"),
            vgdb_prefix=data.get("vgdb_prefix"),
            dumps=data.get("dumps"),
        )


def child_repeats(settings_repeat: int) -> int:
    """Measured repeats of a region in the child: the runner's ``repeat``, at most
    :data:`DEFAULT_REPEATS` (the parent expects the same; a shared child, which runs
    ahead of the parent, works it out from the same marker and ini)."""
    return min(settings_repeat, DEFAULT_REPEATS)


# -- child -> parent -------------------------------------------------------------
@dataclass(frozen=True)
class PlanStep:
    """One callback the child ran: ``kind`` warmup | repeat | overhead (callgrind dumps each)."""

    kind: str
    calls: int
    wall_ns: int

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "calls": self.calls, "wall_ns": self.wall_ns}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PlanStep:
        return cls(str(data["kind"]), int(data["calls"]), int(data["wall_ns"]))


#: Instrumentation.mode of a switch by valgrind client request (no vgdb process).
CLIENT_REQUEST = "client request"


@dataclass(frozen=True)
class Instrumentation:
    """How callgrind's instrumentation was switched: ``mode`` CLIENT_REQUEST, "vgdb" or
    "on from the start"."""

    mode: str
    ok: bool = True
    detail: str | None = None
    seconds: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mode": self.mode, "ok": self.ok}
        if self.detail is not None:
            out["detail"] = self.detail
        if self.seconds is not None:
            out["seconds"] = self.seconds
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Instrumentation:
        return cls(
            mode=str(data.get("mode", "on from the start")),
            ok=bool(data.get("ok", True)),
            detail=data.get("detail"),
            seconds=data.get("seconds"),
        )


@dataclass
class ChildRecord:
    """What the child ran for one region: the callbacks (``plan``) in the order callgrind
    dumped them, the warm-up, the instrumentation switch, and what the workload did
    (its result's digest, its session runs per call) for the honesty check.

    ``error`` is set when the workload raised in the child.
    """

    variant: str
    repeats: int = DEFAULT_REPEATS
    calls: int = DEFAULT_CALLS
    pid: int | None = None
    plan: list[PlanStep] = field(default_factory=list)
    session: dict[str, Any] | None = None
    warmup_ns: list[int] = field(default_factory=list)
    instrumentation: Instrumentation | None = None
    instrumentation_off: Instrumentation | None = None
    outputs_ok: bool = True
    result_digest: str | None = None
    #: ONNX Runtime session runs in one call of the workload, per session label
    session_runs: dict[str, int] | None = None
    threads: list[str] = field(default_factory=list)
    other_threads_cpu_ns: dict[str, int] | None = None
    region_wall_ns: int | None = None
    #: CPU features numpy saw in the child (valgrind's emulated CPU); None: unknown
    cpu_features: list[str] | None = None
    error: str | None = None

    @property
    def instrumented(self) -> bool:
        """False only when switching instrumentation on was tried and failed."""
        return self.instrumentation is None or self.instrumentation.ok

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "variant": self.variant,
            "pid": self.pid,
            "repeats": self.repeats,
            "calls": self.calls,
            "plan": [p.to_dict() for p in self.plan],
            "session": self.session,
            "warmup": {"calls": len(self.warmup_ns), "durations_ns": list(self.warmup_ns)},
            "outputs_ok": self.outputs_ok,
            "result_digest": self.result_digest,
            "session_runs": self.session_runs,
            "threads": list(self.threads),
            "other_threads_cpu_ns": self.other_threads_cpu_ns,
            "region_wall_ns": self.region_wall_ns,
            "cpu_features": self.cpu_features,
        }
        if self.instrumentation is not None:
            out["instrumentation"] = self.instrumentation.to_dict()
        if self.instrumentation_off is not None:
            out["instrumentation_off"] = self.instrumentation_off.to_dict()
        if self.error is not None:
            out["error"] = self.error
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, default=str)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ChildRecord:
        warmup = data.get("warmup") or {}
        on, off = data.get("instrumentation"), data.get("instrumentation_off")
        runs = data.get("session_runs")
        return cls(
            variant=str(data.get("variant", "")),
            repeats=int(data.get("repeats", DEFAULT_REPEATS)),
            calls=int(data.get("calls", DEFAULT_CALLS)),
            pid=data.get("pid"),
            plan=[PlanStep.from_dict(p) for p in data.get("plan") or ()],
            session=data.get("session"),
            warmup_ns=[int(d) for d in warmup.get("durations_ns") or ()],
            instrumentation=Instrumentation.from_dict(on) if on is not None else None,
            instrumentation_off=Instrumentation.from_dict(off) if off is not None else None,
            outputs_ok=bool(data.get("outputs_ok", True)),
            result_digest=data.get("result_digest"),
            session_runs={str(k): int(v) for k, v in runs.items()} if runs else None,
            threads=[str(t) for t in data.get("threads") or ()],
            other_threads_cpu_ns=data.get("other_threads_cpu_ns"),
            region_wall_ns=data.get("region_wall_ns"),
            cpu_features=(
                [str(f) for f in data["cpu_features"]]
                if isinstance(data.get("cpu_features"), list)
                else None
            ),
            error=data.get("error"),
        )

    @classmethod
    def from_json(cls, text: str) -> ChildRecord:
        return cls.from_dict(json.loads(text))

    def write(self, path: Path) -> None:
        """Write the record atomically (the parent reads the file once the child exited)."""
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(self.to_json())
        os.replace(tmp, path)


@dataclass(frozen=True)
class RegionReply:
    """Shared child -> parent: a region's record and the folder of its callgrind dumps,
    or (``finished``) that test ``nodeid`` ended in the child: a region of it not sent
    before this line was not reached there."""

    nodeid: str
    variant: str = ""
    record: ChildRecord | None = None
    dumps: str | None = None
    finished: bool = False

    def to_json(self) -> str:
        data: dict[str, Any] = {"nodeid": self.nodeid, "variant": self.variant}
        if self.record is not None:
            data["record"] = self.record.to_dict()
        if self.dumps is not None:
            data["dumps"] = self.dumps
        if self.finished:
            data["finished"] = True
        return json.dumps(data, default=str)

    @classmethod
    def from_json(cls, text: str | bytes) -> RegionReply:
        data = json.loads(text)
        record = data.get("record")
        return cls(
            nodeid=str(data.get("nodeid")),
            variant=str(data.get("variant", "")),
            record=ChildRecord.from_dict(record) if record is not None else None,
            dumps=data.get("dumps"),
            finished=bool(data.get("finished", False)),
        )


# -- claims: which shared child runs a test ------------------------------------------
#: What the parent writes in the claim of a test it went past (no child may run it).
PARENT_CLAIM = "parent"


def claim_path(folder: str | os.PathLike[str], nodeid: str) -> Path:
    """The file whose creation claims ``nodeid`` (one name per node id, any characters)."""
    return Path(folder) / f"{hashlib.sha1(nodeid.encode()).hexdigest()[:24]}.claim"


def claim(folder: str | os.PathLike[str], nodeid: str, owner: str) -> bool:
    """Claim ``nodeid`` for ``owner`` (a child's pid, or PARENT_CLAIM); False when it was
    claimed before. The claim is a hard link to a file that already holds ``owner``
    (``link`` fails on an existing name): of children trying at once, one wins, and a
    claim is never seen without its owner, even from a child killed while claiming."""
    path = claim_path(folder, nodeid)
    fd, draft = tempfile.mkstemp(dir=folder, prefix=f".{os.getpid()}-", suffix=".draft")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(owner)
        os.link(draft, path)
    except FileExistsError:
        return False
    finally:
        os.unlink(draft)
    return True


def claimed_by(folder: str | os.PathLike[str], nodeid: str) -> str | None:
    """Who claimed ``nodeid`` (a pid as text, or PARENT_CLAIM); None: nobody yet."""
    try:
        return claim_path(folder, nodeid).read_text() or None
    except FileNotFoundError:
        return None


# -- what the parent read --------------------------------------------------------
@dataclass
class ChildRun:
    """What one valgrind child run left behind."""

    record: ChildRecord
    dumps: list[CallgrindDump]
    returncode: int | None  # None: a shared child, still running
    output: str
    wall_s: float
    valgrind_options: list[str]
    cache_notes: dict[str, str] = field(default_factory=dict)
    child: dict[str, Any] = field(default_factory=lambda: {"mode": "one child for this test"})
    mode: str = "full"  # what callgrind simulated (simulate_valgrind.MODES)


def child_env(
    result: Path, variant: str, options: ChildOptions, extra: Mapping[str, str] | None
) -> dict[str, str]:
    """The child's environment: this one, less :data:`CHILD_ENV_DROP`, plus :data:`CHILD_ENV`."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in CHILD_ENV_DROP and not k.startswith(CHILD_ENV_DROP_PREFIXES)
    }
    env.update(CHILD_ENV)
    env.update(extra or {})
    env[ENV_CHILD] = str(result)
    env[ENV_VARIANT] = variant
    env[ENV_OPTIONS] = options.to_json()
    return env


def tail(text: str, lines: int = 30) -> str:
    """The last ``lines`` lines of a child's output."""
    return "\n".join(text.rstrip().splitlines()[-lines:])
