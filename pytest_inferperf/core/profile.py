"""The Profile: one measured workload, immutable, serialisable.

Owns: the :class:`Profile` record and its parts (latency, memory, steady
state, per-repeat samples, stages with their per-repeat times, per-operator
and per-op-type times, the machine's conditions while measuring, the model that was
measured), the JSON schema version, and loading and validating
a serialised Profile. Fields added since version 1 are optional: an older
file loads with them empty, so no version bump was needed for them. A
baseline file, ``report.json`` and a CLI result are all serialised Profiles: the
full form is version 1, a baseline file's compact form version 2 (:mod:`.baseline_file`
maps it to the full form, and :meth:`Profile.load` reads both).

Must not: measure (that is ``measure.runner``) or judge (that is ``diagnose.assessment``).
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from . import baseline_file
from .errors import InferperfError
from .profile_check import InvalidProfile, check_profile
from .safe_read import UnreadableFile, read_limited
from .samples import CounterSample, EventStatus

SCHEMA_VERSION = 1
#: A thread counts as busy in a region when it ran for a tenth of its wall time or more
#: (engineering judgement: an ONNX Runtime pool thread that only woke for bookkeeping
#: stays below it, one that took a share of every operator is far above).
BUSY_THREAD_SHARE = 0.10
SCHEMA_NAME = "pytest-inferperf/profile"
MAX_PROFILE_BYTES = 64 << 20  # a profile is tens of KiB; refuse to parse anything huge


class ProfileFormatError(InferperfError, ValueError):
    """A serialised Profile that cannot be read; the message names the file and the fix.

    ``cause`` is the message without the fix, for a front-end that names its own way of
    recording the file again (the plugin's baseline update, the CLI's ``analyse``).
    """

    def __init__(self, cause: str) -> None:
        self.cause = cause
        super().__init__(f"{cause} {FIX}")


#: What to do about an unreadable profile, in the engine's words.
FIX = "Restore it from version control, or delete it and record it again."


def nearest_rank(sorted_values: Sequence[float], pct: float) -> float:
    """The nearest-rank percentile: the smallest value with at least pct% at or below it."""
    if not sorted_values:
        raise ValueError("percentile of no values")
    rank = max(1, math.ceil(pct / 100.0 * len(sorted_values)))
    return float(sorted_values[rank - 1])


@dataclass(frozen=True)
class LatencyStats:
    """Per-call latency over every measured call, in milliseconds."""

    calls: int
    mean_ms: float
    min_ms: float
    max_ms: float
    stddev_ms: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    calls_per_second: float

    @classmethod
    def from_durations_ns(cls, durations_ns: Sequence[int]) -> LatencyStats:
        if not durations_ns:
            raise ValueError("latency of no calls")
        ms = sorted(d / 1e6 for d in durations_ns)
        mean = statistics.fmean(ms)
        return cls(
            calls=len(ms),
            mean_ms=mean,
            min_ms=ms[0],
            max_ms=ms[-1],
            stddev_ms=statistics.pstdev(ms) if len(ms) > 1 else 0.0,
            p50_ms=nearest_rank(ms, 50),
            p95_ms=nearest_rank(ms, 95),
            p99_ms=nearest_rank(ms, 99),
            calls_per_second=1000.0 / mean if mean > 0 else math.inf,
        )


@dataclass(frozen=True)
class MemoryStats:
    """Resident memory of the measured region and how it was obtained.

    ``peak_rss_bytes`` is the absolute peak: it includes everything the process held
    when the region began, so it depends on which tests ran before. ``start_rss_bytes``
    is the RSS when the region began (after freed heap memory was handed back to the
    OS); the growth above it is the region's own (None in profiles recorded before it
    was stored, and where the peak is the process-lifetime peak).
    """

    peak_rss_bytes: int | None
    method: str  # "clear_refs" (region peak) | "ru_maxrss" (process-lifetime peak)
    note: str | None = None
    start_rss_bytes: int | None = None

    @property
    def growth_bytes(self) -> int | None:
        if self.peak_rss_bytes is None or self.start_rss_bytes is None:
            return None
        if self.method != "clear_refs":
            return None
        return max(0, self.peak_rss_bytes - self.start_rss_bytes)


@dataclass(frozen=True)
class Steadiness:
    """Whether warm-up reached a steady state before measuring."""

    reached: bool
    warmup_calls: int
    spread: float  # relative spread of the last ``window`` warm-up calls
    threshold: float
    window: int


@dataclass(frozen=True)
class Repeat:
    """One repeat: ``calls`` calls counted as one region."""

    calls: int
    wall_ns: int
    sample: CounterSample

    def to_dict(self) -> dict[str, Any]:
        return {"calls": self.calls, "wall_ns": self.wall_ns, "sample": self.sample.to_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Repeat:
        sample = CounterSample.from_dict(data["sample"])
        return cls(int(data["calls"]), int(data["wall_ns"]), sample)


@dataclass(frozen=True)
class StageStats:
    """Time and counts attributed to one ``region(name)`` over all repeats."""

    name: str
    calls: int
    wall_ns: int
    counts: Mapping[str, float] = field(default_factory=dict)
    repeat_wall_ns: tuple[int, ...] = ()  # per measured repeat; () in older profiles

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "calls": self.calls,
            "wall_ns": self.wall_ns,
            "counts": dict(self.counts),
            "repeat_wall_ns": list(self.repeat_wall_ns),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StageStats:
        return cls(
            str(data["name"]),
            int(data["calls"]),
            int(data["wall_ns"]),
            {k: float(v) for k, v in data.get("counts", {}).items()},
            tuple(int(v) for v in data.get("repeat_wall_ns", ())),
        )


@dataclass(frozen=True)
class Profile:
    """One measured workload. Built by the runner, read by everything after it."""

    name: str
    machine_class: str
    backend: str
    machine: Mapping[str, Any]
    events: tuple[EventStatus, ...]
    repeats: tuple[Repeat, ...]
    latency: LatencyStats
    memory: MemoryStats
    steady: Steadiness
    settings: Mapping[str, Any] = field(default_factory=dict)
    session: Mapping[str, Any] | None = None
    stages: tuple[StageStats, ...] = ()
    overhead: Mapping[str, float] = field(default_factory=dict)
    partial: bool = False
    partial_reason: str | None = None
    operators: tuple[Mapping[str, Any], ...] = ()
    # Per op type: {"op_type", "nodes", "mean_us", "runs_us": [µs in each profiled run]}
    op_types: tuple[Mapping[str, Any], ...] = ()
    roofline: Mapping[str, Any] | None = None  # ceilings and per-operator points
    energy: Mapping[str, Any] | None = None  # joules per call, or why not available
    stacks: Mapping[str, Any] | None = None  # {"view": "native", "folded": {stack: count}}
    artifacts: Mapping[str, str] = field(default_factory=dict)
    outputs_ok: bool = True
    created: str = ""
    # The machine's state while measuring (conditions.recorded): steal, other CPUs' busy
    # time, load, context switches, CPU vs wall, the calibration workload's timings.
    conditions: Mapping[str, Any] | None = None
    # What was measured: {"sha256", "path", "inputs": [{"name", "shape", "dtype"}]}.
    model: Mapping[str, Any] | None = None
    # Timing metrics measured in several processes (a baseline recorded with
    # inferperf_processes > 1): {"cpu_ms_per_call": [value in each process], ...}, this
    # process's first. Empty: measured in this one process only (between_processes).
    processes: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION

    # -- derived views --------------------------------------------------
    @property
    def calls(self) -> int:
        return sum(r.calls for r in self.repeats)

    @property
    def totals(self) -> dict[str, float]:
        """Each counted event summed over every repeat."""
        out: dict[str, float] = {}
        for rep in self.repeats:
            for name, count in rep.sample.counts.items():
                out[name] = out.get(name, 0.0) + count.value
        return out

    def per_repeat(self, event: str) -> list[float]:
        """``event`` per call, one value per repeat (the distribution comparisons use)."""
        return [
            rep.sample.counts[event].value / rep.calls
            for rep in self.repeats
            if event in rep.sample.counts and rep.calls
        ]

    def busy_threads(self, share: float = BUSY_THREAD_SHARE) -> int | None:
        """Threads that ran for at least ``share`` of the measured wall time (their
        ``task_clock`` summed over the repeats); None where no thread's was counted."""
        wall = sum(rep.wall_ns for rep in self.repeats)
        per_tid: dict[int, float] = {}
        for rep in self.repeats:
            for tid, counts in rep.sample.per_thread.items():
                if "task_clock" in counts:
                    per_tid[tid] = per_tid.get(tid, 0.0) + float(counts["task_clock"])
        if not per_tid or wall <= 0:
            return None
        return sum(1 for busy in per_tid.values() if busy >= share * wall)

    def status(self, event: str) -> EventStatus | None:
        return next((e for e in self.events if e.name == event), None)

    @property
    def unavailable(self) -> dict[str, str]:
        return {e.name: e.reason or "not counted" for e in self.events if not e.available}

    def with_(self, **changes: Any) -> Profile:
        return replace(self, **changes)

    # -- serialisation --------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_NAME,
            "schema_version": self.schema_version,
            "name": self.name,
            "created": self.created,
            "machine_class": self.machine_class,
            "backend": self.backend,
            "machine": dict(self.machine),
            "settings": dict(self.settings),
            "session": None if self.session is None else dict(self.session),
            "events": [e.to_dict() for e in self.events],
            "latency": vars_of(self.latency),
            "memory": vars_of(self.memory),
            "steady": vars_of(self.steady),
            "partial": self.partial,
            "partial_reason": self.partial_reason,
            "overhead": dict(self.overhead),
            "stages": [s.to_dict() for s in self.stages],
            "repeats": [r.to_dict() for r in self.repeats],
            "operators": [dict(o) for o in self.operators],
            "op_types": [dict(o) for o in self.op_types],
            "roofline": None if self.roofline is None else dict(self.roofline),
            "energy": None if self.energy is None else dict(self.energy),
            "stacks": None if self.stacks is None else dict(self.stacks),
            "artifacts": dict(self.artifacts),
            "outputs_ok": self.outputs_ok,
            "conditions": None if self.conditions is None else dict(self.conditions),
            "model": None if self.model is None else dict(self.model),
            "processes": {k: list(v) for k, v in self.processes.items()},
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, sort_keys=False, allow_nan=False)

    def to_baseline_json(self) -> str:
        """The compact form a baseline file holds (:mod:`.baseline_file`, version 2)."""
        return baseline_file.dumps(baseline_file.compact(self.to_dict()))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "<profile>") -> Profile:
        return _from_dict(data, source)

    @classmethod
    def load(cls, path: str | Path) -> Profile:
        path = Path(path)
        try:
            raw = read_limited(path, MAX_PROFILE_BYTES, what="profile")
        except UnreadableFile as exc:
            cause = FileNotFoundError(str(exc)) if exc.missing else None
            raise ProfileFormatError(f"{exc}.") from cause
        try:
            text = raw.decode("utf-8")
            data = json.loads(text, parse_constant=_reject_constant)
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise ProfileFormatError(
                f"{path} is not a valid profile: not UTF-8 JSON ({exc})."
            ) from None
        return _from_dict(data, str(path))


def vars_of(obj: Any) -> dict[str, Any]:
    return dict(obj.__dict__)


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not allowed in a profile")


def _from_dict(data: Any, source: str) -> Profile:
    if not isinstance(data, Mapping) or data.get("schema") != SCHEMA_NAME:
        raise ProfileFormatError(
            f'{source} is not an inferperf profile (no "schema": "{SCHEMA_NAME}").'
        )
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ProfileFormatError(f"{source} has no valid schema_version.")
    if version > baseline_file.SCHEMA_VERSION:
        raise ProfileFormatError(
            f"{source} uses profile schema version {version}, newer than this inferperf "
            f"understands ({baseline_file.SCHEMA_VERSION}). Upgrade pytest-inferperf."
        )
    if version == baseline_file.SCHEMA_VERSION:  # a compact baseline file
        try:
            data = baseline_file.expand(data)
        except InvalidProfile as exc:
            raise ProfileFormatError(f"{source} is not a valid profile: {exc}.") from None
        version = SCHEMA_VERSION
    try:
        check_profile(data, schema_version=SCHEMA_VERSION)
    except InvalidProfile as exc:
        raise ProfileFormatError(f"{source} is not a valid profile: {exc}.") from None
    try:
        latency = LatencyStats(**_floats(data["latency"], int_keys=("calls",)))
        memory = data["memory"]
        steady = data["steady"]
        profile = Profile(
            name=str(data["name"]),
            machine_class=str(data["machine_class"]),
            backend=str(data["backend"]),
            machine=_mapping(data.get("machine", {})),
            events=tuple(EventStatus.from_dict(e) for e in data.get("events", [])),
            repeats=tuple(Repeat.from_dict(r) for r in data["repeats"]),
            latency=latency,
            memory=MemoryStats(
                peak_rss_bytes=None
                if memory.get("peak_rss_bytes") is None
                else int(memory["peak_rss_bytes"]),
                method=str(memory["method"]),
                note=memory.get("note"),
                start_rss_bytes=None
                if memory.get("start_rss_bytes") is None
                else int(memory["start_rss_bytes"]),
            ),
            steady=Steadiness(
                reached=bool(steady["reached"]),
                warmup_calls=int(steady["warmup_calls"]),
                spread=float(steady["spread"]),
                threshold=float(steady["threshold"]),
                window=int(steady["window"]),
            ),
            settings=_mapping(data.get("settings", {})),
            session=None if data.get("session") is None else _mapping(data["session"]),
            stages=tuple(StageStats.from_dict(s) for s in data.get("stages", [])),
            overhead={k: float(v) for k, v in data.get("overhead", {}).items()},
            partial=bool(data.get("partial", False)),
            partial_reason=data.get("partial_reason"),
            operators=tuple(_mapping(o) for o in data.get("operators", [])),
            op_types=tuple(_op_type(o) for o in data.get("op_types", [])),
            roofline=None if data.get("roofline") is None else _mapping(data["roofline"]),
            energy=None if data.get("energy") is None else _mapping(data["energy"]),
            stacks=None if data.get("stacks") is None else _stacks(data["stacks"]),
            artifacts={str(k): str(v) for k, v in data.get("artifacts", {}).items()},
            outputs_ok=bool(data.get("outputs_ok", True)),
            created=str(data.get("created", "")),
            conditions=None if data.get("conditions") is None else _mapping(data["conditions"]),
            model=None if data.get("model") is None else _mapping(data["model"]),
            processes=_processes(data.get("processes") or {}),
            schema_version=version,
        )
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
        what = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
        raise ProfileFormatError(f"{source} is not a valid profile: {what}.") from None
    _check_finite(profile, source)
    return profile


def _mapping(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"expected an object, got {type(value).__name__}")
    return dict(value)


def _processes(value: Any) -> dict[str, tuple[float, ...]]:
    """``processes``: each metric's values, finite and > 0 (a time or a count per call)."""
    out = {}
    for name, values in _mapping(value).items():
        if not isinstance(values, list) or not values:
            raise TypeError(f"processes[{name!r}] must be a non-empty list of numbers")
        row = tuple(float(v) for v in values)
        if any(not math.isfinite(v) or v <= 0 for v in row):
            raise ValueError(f"processes[{name!r}] holds a value that is not finite and > 0")
        out[str(name)] = row
    return out


def _op_type(value: Any) -> dict[str, Any]:
    row = _mapping(value)
    return {
        "op_type": str(row["op_type"]),
        "nodes": int(row.get("nodes", 0)),
        "mean_us": float(row.get("mean_us", 0.0)),
        "runs_us": [float(v) for v in row.get("runs_us", [])],
    }


def _stacks(value: Any) -> dict[str, Any]:
    data = _mapping(value)
    folded = _mapping(data.get("folded", {}))
    return {
        "view": str(data.get("view", "")),
        "folded": {str(k): int(v) for k, v in folded.items()},
    }


def _floats(data: Mapping[str, Any], *, int_keys: Sequence[str] = ()) -> dict[str, Any]:
    if not isinstance(data, Mapping):
        raise TypeError(f"expected an object, got {type(data).__name__}")
    return {k: int(v) if k in int_keys else float(v) for k, v in data.items()}


def _check_finite(profile: Profile, source: str) -> None:
    values = [v for v in vars_of(profile.latency).values() if isinstance(v, float)]
    for rep in profile.repeats:
        values.extend(c.value for c in rep.sample.counts.values())
    if any(not math.isfinite(v) for v in values):
        raise ProfileFormatError(f"{source} contains NaN or infinite values.")
