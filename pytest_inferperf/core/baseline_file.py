"""The compact baseline file: schema version 2 of a serialised Profile, and its sidecar.

Owns: turning a full Profile document (:meth:`Profile.to_dict`, schema version 1, what
``report.json`` holds) into the compact form a baseline file holds (:func:`compact`)
and back (:func:`expand`); the optional sidecar of bulky parts (:func:`detail`,
:func:`with_detail`); the one text layout of both files (:func:`dumps`); and the digest
that ties a sidecar to its baseline (:func:`digest`).

Must not: read or write files (that is ``judge.baseline_store``), build Profiles (``profile``), or
import anything above the core: it maps plain JSON documents to plain JSON documents.

What the compact form keeps
---------------------------
Exactly what judging reads from the *baseline* side (``comparison``, ``noise``,
``between_processes``, ``change``, ``settings_change``, ``assessment``, ``validate``):

* every counted event per measured repeat, as one array per event (``repeats.counts``),
  with each repeat's ``calls`` and ``wall_ns``: every metric's point value (totals) and
  per-repeat values (the rank test) are computed from these, as from the full file;
* each busy thread's task clock summed over the repeats, largest first, without its
  thread id (``threads.task_clock_ns``): all that ``Profile.busy_threads`` reads;
* the ``region()`` stages' times (``repeat_wall_ns`` judges them); the time outside
  every region is written ``{"name": "(outside regions)", "derived": true}`` where it
  is exactly what the runner derives from the repeats and the other stages;
* latency, memory, steady state, ``processes``, ``conditions`` (the calibration), the
  run's ``settings`` (the operator pass's session options and inputs), ``session``,
  ``model``, the machine facts a comparison reads (:func:`judged_machine`: software
  versions, CPUs available and online, the core), and the names of the events that were
  not counted.

What it drops: per-thread counts and thread ids, ``enabled_ns`` / ``running_ns`` (the
scaling is in the estimate; ``raw`` is kept where it differs from it), any key named
``pid``, ``ppid`` or ``tid``, the directories of absolute paths (the file name stays),
``created`` (version control dates the file) and ``artifacts`` (files of the recording
run). The whole ``machine`` (caches, kernel, PMUs, platform), events' statuses with
reasons, ``overhead``, ``operators``, ``op_types``, ``roofline``, ``energy``, ``stacks``,
each stage's event counts (``stage_counts``: no verdict reads them; about 130 bytes a
stage) and ``created`` go to the sidecar, written with every baseline: they feed the
differential flamegraph and the op-type part of the change explanation, never a verdict
or a comparison row, so a baseline whose sidecar is missing (not committed) or belongs
to an older recording (its ``baseline_sha256`` no longer matches) judges the same.

Rounding
--------
Numbers are written as measured, with two exceptions where the stored digits exceed
what was measured:

* a counter estimate scaled for multiplexing (``raw * enabled / running``) is written
  to whole events: the counter read a whole number, and the fraction is arithmetic of
  the scaling, not an event (``raw`` keeps the read);
* ``processes`` values (a process's mean time per call in ms, and p99/p50) are written
  to 6 decimals, 1 ns: the clocks they come from (``perf_counter_ns``, the task clock)
  tick in nanoseconds, so further digits are the division's residue.

Layout (:func:`dumps`)
----------------------
Keys in a fixed order (free-form mappings sorted), 2-space indent, one key per line;
an array of numbers or strings on one line; an array of objects one object per line.
Which lines there are depends on the document's shape, never on its values, so a
re-record of an unchanged workload changes only the lines of numbers that moved.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from .profile_check import InvalidProfile

SCHEMA_NAME = "pytest-inferperf/profile"
#: The compact baseline form. The full form (``report.json``, baselines before this
#: one) is version 1 and keeps that number; a later full form takes version 3.
SCHEMA_VERSION = 2
DETAIL_SCHEMA = "pytest-inferperf/baseline-detail"
DETAIL_VERSION = 1
#: ``stages.REST_STAGE``, the runner's name for the time outside every ``region()``
#: (repeated here: the core does not import the measuring layer; a test keeps them equal).
REST_STAGE = "(outside regions)"
#: Keys whose values name a process or thread of the recording machine.
ID_KEYS = frozenset({"pid", "ppid", "tid"})
#: Decimals of ``processes`` values (ms): 1 ns.
PROCESS_DECIMALS = 6
#: ``Profile.machine`` keys a comparison reads from the baseline: the software versions
#: and the CPUs the process could use (``settings_change``); and of ``machine["cpu"]``,
#: the core and the CPUs online (``settings_change``, ``classify.rule_context``). The
#: whole ``machine`` goes to the sidecar.
JUDGED_MACHINE = frozenset({"cpus_available", "numpy", "onnxruntime", "python"})
JUDGED_CPU = frozenset({"core_slug", "cpu_count"})
#: ``Profile.conditions`` keys judging reads from the baseline: the calibration (the
#: machine's speed then, ``noise.floor_of``; its ``work`` sentence goes to the sidecar),
#: the CPUs and what else kept them busy (``conditions.busy_reasons``), the load (the
#: summary line) and the reasons a reviewer should see. The whole ``conditions`` goes to
#: the sidecar.
JUDGED_CONDITIONS = frozenset(
    {"busy_reasons", "calibration", "cpus", "load_avg_1m", "others_busy_cpus", "steal", "version"}
)
#: What ``settings_change`` reads of each operator-pass session (``settings.operator_pass.
#: sessions[i]``); and the word for options that are the profile's ``session``.
JUDGED_SESSION = ("label", "options", "inputs", "runs_per_call")
SAME_AS_SESSION = "session"
#: Significant digits of the steadiness spread (a ratio of two clock readings): clocks
#: that tick in nanoseconds over windows of seconds carry about nine, so further digits
#: are the division's residue.
RATIO_DIGITS = 9
#: Parts of the full document the sidecar holds (in this order).
DETAIL_FIELDS = (
    "created",
    "machine",
    "conditions",
    "settings",
    "events",
    "overhead",
    "operators",
    "op_types",
    "roofline",
    "energy",
    "stacks",
)
_EMPTY_DETAIL: dict[str, Any] = {
    "created": "",
    "machine": {},
    "conditions": None,
    "settings": {},
    "events": [],
    "overhead": {},
    "operators": [],
    "op_types": [],
    "roofline": None,
    "energy": None,
    "stacks": None,
}


# -- full -> compact ----------------------------------------------------------------
def compact(full: Mapping[str, Any]) -> dict[str, Any]:
    """The compact (version 2) document of a full Profile document (version 1)."""
    repeats = list(full["repeats"])
    counts = _repeat_counts(repeats)
    stages = [_compact_stage(s) for s in full.get("stages") or ()]
    out: dict[str, Any] = {
        "schema": SCHEMA_NAME,
        "schema_version": SCHEMA_VERSION,
        "name": full["name"],
        "machine_class": full["machine_class"],
        "backend": full["backend"],
        "latency": _sorted(full["latency"]),
        "memory": _sorted(full["memory"]),
        "steady": _rounded(full["steady"]),
        "repeats": {
            "calls": _per_repeat([r["calls"] for r in repeats]),
            "wall_ns": [r["wall_ns"] for r in repeats],
            "counts": {name: _per_repeat(values) for name, (values, _) in sorted(counts.items())},
        },
    }
    raw = {
        name: _per_repeat(raws) for name, (_, raws) in sorted(counts.items()) if raws is not None
    }
    if raw:
        out["repeats"]["raw"] = raw
    threads = _thread_clocks(repeats)
    if threads is not None:
        out["threads"] = {"task_clock_ns": threads}
    # Written only where they are not the usual (a baseline is never partial; the
    # write pass refuses one, but a profile document may be)
    if full.get("partial"):
        out["partial"], out["partial_reason"] = True, full.get("partial_reason")
    if full.get("outputs_ok", True) is False:
        out["outputs_ok"] = False
    if stages:
        out["stages"] = _with_rest_derived(stages, repeats)
    out["processes"] = {
        name: [_to_ns(float(v)) for v in values]
        for name, values in sorted((full.get("processes") or {}).items())
    }
    conditions = full.get("conditions")
    out["conditions"] = None if conditions is None else judged_conditions(conditions)
    for key in ("session", "model"):
        value = full.get(key)
        out[key] = None if value is None else _clean(value)
    out["settings"] = judged_settings(_clean(full.get("settings") or {}), out["session"])
    out["machine"] = judged_machine(full.get("machine") or {})
    return out


def judged_settings(settings: Mapping[str, Any], session: Any) -> dict[str, Any]:
    """The run's settings with only what ``settings_change`` reads of the operator pass:
    each session's label, options, inputs and runs per call (its timing and bookkeeping
    go to the sidecar). Options equal to the profile's ``session`` are written
    ``"options": "session"`` (the one session of a ``session.run`` workload, written
    twice otherwise)."""
    out = dict(settings)
    operator_pass = settings.get("operator_pass")
    if not isinstance(operator_pass, Mapping):
        return out
    kept: dict[str, Any] = {k: operator_pass[k] for k in ("skipped",) if k in operator_pass}
    sessions = operator_pass.get("sessions")
    if isinstance(sessions, list):
        kept["sessions"] = _options_once(
            [
                _judged_session(entry, session) if isinstance(entry, Mapping) else entry
                for entry in sessions
            ]
        )
    out["operator_pass"] = kept
    return out


def _options_once(sessions: list[Any]) -> list[Any]:
    """Each session whose options equal an earlier session's written
    ``"options": "as sessions[<i>]"`` (a pipeline's sessions are usually made alike:
    about 330 bytes each otherwise)."""
    out: list[Any] = []
    for index, entry in enumerate(sessions):
        options = entry.get("options") if isinstance(entry, Mapping) else None
        earlier = next(
            (
                i
                for i, other in enumerate(sessions[:index])
                if isinstance(options, Mapping)
                and isinstance(other, Mapping)
                and other.get("options") == options
            ),
            None,
        )
        out.append(entry if earlier is None else {**entry, "options": _as_session(earlier)})
    return out


def _as_session(index: int) -> str:
    return f"as sessions[{index}]"


def _judged_session(entry: Mapping[str, Any], session: Any) -> dict[str, Any]:
    out = {k: entry[k] for k in JUDGED_SESSION if k in entry}
    if session is not None and out.get("options") == session:
        out["options"] = SAME_AS_SESSION
    return out


def judged_conditions(conditions: Mapping[str, Any]) -> dict[str, Any]:
    """The conditions judging reads from a baseline (:data:`JUDGED_CONDITIONS`)."""
    out = {k: _clean(conditions[k]) for k in sorted(JUDGED_CONDITIONS) if k in conditions}
    calibration = out.get("calibration")
    if isinstance(calibration, Mapping):
        out["calibration"] = {k: v for k, v in calibration.items() if k != "work"}
    return out


def _per_repeat(values: list[Any]) -> list[Any] | Any:
    """One value per repeat, or the value once where every repeat has it (a count that
    never moved, often 0, reads as one number; :func:`expand` gives the list back)."""
    if len(values) > 1 and all(v == values[0] for v in values) and values[0] is not None:
        return values[0]
    return values


def _rounded(block: Mapping[str, Any]) -> dict[str, Any]:
    """``block`` sorted, its fractions to :data:`RATIO_DIGITS` significant digits."""
    out: dict[str, Any] = {}
    for key in sorted(block):
        value = block[key]
        if isinstance(value, float) and math.isfinite(value) and not value.is_integer():
            value = float(f"{value:.{RATIO_DIGITS}g}")
        out[key] = value
    return out


def judged_machine(machine: Mapping[str, Any]) -> dict[str, Any]:
    """The machine facts a comparison reads from a baseline (:data:`JUDGED_MACHINE`,
    :data:`JUDGED_CPU`); the rest (caches, kernel, PMUs, platform) go to the sidecar."""
    out = {k: _clean(machine[k]) for k in sorted(JUDGED_MACHINE) if k in machine}
    cpu = machine.get("cpu")
    if isinstance(cpu, Mapping):
        out["cpu"] = {k: _clean(cpu[k]) for k in sorted(JUDGED_CPU) if k in cpu}
    return out


def _repeat_counts(
    repeats: Sequence[Mapping[str, Any]],
) -> dict[str, tuple[list[int | None], list[int] | None]]:
    """Event -> (its estimate in each repeat, the raw reads where any differ from it).

    An event a repeat did not count is ``null`` in that repeat's place.
    """
    names = sorted({n for r in repeats for n in r["sample"]["counts"]})
    out: dict[str, tuple[list[int | None], list[int] | None]] = {}
    for name in names:
        values: list[int | None] = []
        raws: list[int] = []
        differs = False
        for rep in repeats:
            count = rep["sample"]["counts"].get(name)
            if count is None:
                values.append(None)
                raws.append(0)
                continue
            value = _whole(float(count["value"]))
            values.append(value)
            raws.append(int(count["raw"]))
            differs = differs or int(count["raw"]) != value
        out[name] = (values, raws if differs else None)
    return out


def _whole(value: float) -> int:
    """A count as a whole number of events (a scaled estimate rounded: module doc)."""
    return int(value) if value.is_integer() else round(value)


def _thread_clocks(repeats: Sequence[Mapping[str, Any]]) -> list[int | float] | None:
    """Each thread's task clock summed over the repeats (as ``busy_threads`` sums it),
    largest first, ids dropped; threads that never ran left out ([0]: none ran)."""
    per_tid: dict[str, float] = {}
    for rep in repeats:
        for tid, counts in (rep["sample"].get("per_thread") or {}).items():
            if "task_clock" in counts:
                per_tid[str(tid)] = per_tid.get(str(tid), 0.0) + float(counts["task_clock"])
    if not per_tid:
        return None
    ran = sorted((v for v in per_tid.values() if v > 0), reverse=True)
    return [_number(v) for v in ran] or [0]


def _compact_stage(stage: Mapping[str, Any]) -> dict[str, Any]:
    """A stage's times; its event counts go to the sidecar (:func:`stage_counts`)."""
    return {
        "name": stage["name"],
        "calls": stage["calls"],
        "wall_ns": stage["wall_ns"],
        "repeat_wall_ns": list(stage.get("repeat_wall_ns", ())),
    }


def stage_counts(full: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """Each stage's event counts by stage name, as written (whole events)."""
    return {
        str(stage["name"]): {
            k: _whole(float(v)) for k, v in sorted((stage.get("counts") or {}).items())
        }
        for stage in full.get("stages") or ()
        if stage.get("counts")
    }


def _with_rest_derived(
    stages: list[dict[str, Any]], repeats: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """``stages`` with the time outside the regions marked derived where the runner's
    derivation from the repeats (as written: whole counts) and the other stages gives it
    exactly."""
    if not stages or stages[-1]["name"] != REST_STAGE:
        return stages
    derived = _rest_stage(stages[:-1], _repeats_as_written(repeats))
    if not _same_stage(stages[-1], derived):
        return stages
    return [*stages[:-1], {"name": REST_STAGE, "derived": True}]


def _repeats_as_written(repeats: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The repeats as :func:`expand` gives them back (whole counts only)."""
    return [
        {
            "calls": r["calls"],
            "wall_ns": r["wall_ns"],
            "sample": {
                "counts": {
                    name: {"value": _whole(float(c["value"]))}
                    for name, c in r["sample"]["counts"].items()
                }
            },
        }
        for r in repeats
    ]


def _to_ns(value: float) -> float:
    """A ``processes`` value to :data:`PROCESS_DECIMALS` (never rounded to 0: it must be > 0)."""
    rounded = round(value, PROCESS_DECIMALS)
    return rounded if rounded > 0 else value


def _same_stage(stored: Mapping[str, Any], derived: Mapping[str, Any]) -> bool:
    """The times the compact form writes (the counts are the sidecar's)."""
    return (
        stored.get("calls") == derived["calls"]
        and stored.get("wall_ns") == derived["wall_ns"]
        and list(stored.get("repeat_wall_ns", ())) == list(derived["repeat_wall_ns"])
    )


def _rest_stage(
    named: Sequence[Mapping[str, Any]], repeats: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The time outside every region, as ``runner._stage_stats`` derives it."""
    totals: dict[str, float] = {}
    for rep in repeats:
        for event, count in rep["sample"]["counts"].items():
            totals[event] = totals.get(event, 0.0) + float(count["value"])
    counts = {
        event: value - sum(float(s.get("counts", {}).get(event, 0.0)) for s in named)
        for event, value in totals.items()
    }
    rest_repeats: list[int] = []
    if all(len(s.get("repeat_wall_ns", ())) == len(repeats) for s in named):
        rest_repeats = [
            int(rep["wall_ns"]) - sum(int(s["repeat_wall_ns"][i]) for s in named)
            for i, rep in enumerate(repeats)
        ]
    return {
        "name": REST_STAGE,
        "calls": sum(int(r["calls"]) for r in repeats),
        "wall_ns": sum(int(r["wall_ns"]) for r in repeats) - sum(int(s["wall_ns"]) for s in named),
        "counts": counts,
        "repeat_wall_ns": rest_repeats,
    }


def _number(value: float) -> int | float:
    return int(value) if value.is_integer() else value


def _sorted(value: Any) -> Any:
    return {k: value[k] for k in sorted(value)} if isinstance(value, Mapping) else value


def _clean(value: Any) -> Any:
    """``value`` with keys sorted, process and thread ids dropped, and absolute paths
    cut to their last part."""
    if isinstance(value, Mapping):
        return {str(k): _clean(value[k]) for k in sorted(value, key=str) if k not in ID_KEYS}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if isinstance(value, str) and _absolute(value):
        return value.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    return value


def _absolute(text: str) -> bool:
    """A path of the recording machine: ``/home/...``, ``~/...``, ``C:\\...``, ``\\\\server``."""
    if "\n" in text or " " in text.strip():  # a sentence that names a path is not one
        return False
    if text.startswith(("/", "~/", "\\\\")) and len(text) > 1:
        return True
    return len(text) > 2 and text[0].isalpha() and text[1] == ":" and text[2] in "\\/"


# -- compact -> full ----------------------------------------------------------------
def expand(doc: Mapping[str, Any], detail_doc: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The full (version 1) document of a compact one, with the sidecar's parts where
    given. :class:`InvalidProfile` names the field of a document that is not one."""
    doc = _object(doc, "")
    for key in ("name", "machine_class", "backend", "latency", "memory", "steady", "repeats"):
        if key not in doc:
            raise InvalidProfile(f"missing field '{key}'")
    block = _object(doc["repeats"], "repeats")
    walls = _list(block.get("wall_ns"), "repeats.wall_ns")
    if not walls:
        raise InvalidProfile("repeats.wall_ns: a list with at least one entry, got []")
    n = len(walls)
    calls = _repeat_values(block.get("calls"), n, "repeats.calls")
    counts = {
        name: _repeat_values(values, n, f"repeats.counts.{name}")
        for name, values in _object(block.get("counts", {}), "repeats.counts").items()
    }
    raws = {
        name: _repeat_values(values, n, f"repeats.raw.{name}")
        for name, values in _object(block.get("raw", {}), "repeats.raw").items()
    }
    for name in raws:
        if name not in counts:
            raise InvalidProfile(f"repeats.raw.{name}: an event of repeats.counts, got {name!r}")
    repeats = []
    for i in range(n):
        sample: dict[str, Any] = {}
        for name, values in counts.items():
            value = values[i]
            if value is None:
                continue
            raw = raws[name][i] if name in raws else _raw_of(value, f"repeats.counts.{name}[{i}]")
            sample[name] = {"value": value, "raw": raw}
        repeats.append({"calls": calls[i], "wall_ns": walls[i], "sample": {"counts": sample}})
    threads = _object(doc.get("threads") or {}, "threads")
    clocks = _list(threads.get("task_clock_ns", []), "threads.task_clock_ns")
    if clocks:
        # Whole-run totals on the first repeat, ids by rank: what busy_threads sums.
        repeats[0]["sample"]["per_thread"] = {
            str(i): {"task_clock": v} for i, v in enumerate(clocks)
        }
    stages = _expand_stages(_list(doc.get("stages", []), "stages"), repeats)
    not_counted = _list(doc.get("not_counted", []), "not_counted")
    events = [{"name": e, "available": False, "source": None, "reason": None} for e in not_counted]
    counted = [{"name": e, "available": True, "source": None, "reason": None} for e in counts]
    processes = _object(doc.get("processes") or {}, "processes")
    full: dict[str, Any] = {
        "schema": SCHEMA_NAME,
        "schema_version": 1,
        "name": doc["name"],
        "created": "",
        "machine_class": doc["machine_class"],
        "backend": doc["backend"],
        "machine": doc.get("machine") or {},
        "settings": _expanded_settings(doc.get("settings") or {}, doc.get("session")),
        "session": doc.get("session"),
        "events": counted + events,
        "latency": doc["latency"],
        "memory": doc["memory"],
        "steady": doc["steady"],
        "partial": doc.get("partial", False),
        "partial_reason": doc.get("partial_reason"),
        "overhead": {},
        "stages": stages,
        "repeats": repeats,
        "operators": [],
        "op_types": [],
        "roofline": None,
        "energy": None,
        "stacks": None,
        "artifacts": {},
        "outputs_ok": doc.get("outputs_ok", True),
        "conditions": doc.get("conditions"),
        "model": doc.get("model"),
        "processes": dict(processes),
    }
    return with_detail(full, detail_doc) if detail_doc is not None else full


def _expanded_settings(settings: Any, session: Any) -> Any:
    """``settings`` with each operator-pass session's ``"options": "session"`` replaced by
    the profile's session options, and ``"as sessions[i]"`` by that earlier session's
    (:func:`judged_settings`)."""
    if not isinstance(settings, Mapping):
        return settings
    operator_pass = settings.get("operator_pass")
    if not isinstance(operator_pass, Mapping) or not isinstance(
        operator_pass.get("sessions"), list
    ):
        return settings
    sessions: list[Any] = []
    for entry in operator_pass["sessions"]:
        options = entry.get("options") if isinstance(entry, Mapping) else None
        if options == SAME_AS_SESSION:
            entry = {**entry, "options": session}
        elif isinstance(options, str) and options.startswith("as sessions["):
            earlier = next(
                (
                    other.get("options")
                    for i, other in enumerate(sessions)
                    if options == _as_session(i) and isinstance(other, Mapping)
                ),
                None,
            )
            if earlier is None:
                raise InvalidProfile(
                    f"settings.operator_pass.sessions[{len(sessions)}].options: {options!r} "
                    "names no earlier session"
                )
            entry = {**entry, "options": earlier}
        sessions.append(entry)
    return {**settings, "operator_pass": {**operator_pass, "sessions": sessions}}


def _repeat_values(value: Any, n: int, path: str) -> list[Any]:
    """One value per repeat: the list as written, or a number written once for all."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return [value] * n
    values = _list(value, path)
    _same_length(values, n, path)
    return values


def _raw_of(value: Any, path: str) -> int:
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise InvalidProfile(f"{path}: a number, got {value!r}")
    return round(value)


def _expand_stages(
    stages: Sequence[Any], repeats: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, stage in enumerate(stages):
        stage = _object(stage, f"stages[{i}]")
        if stage.get("derived") is True:
            if stage.get("name") != REST_STAGE or i != len(stages) - 1:
                raise InvalidProfile(
                    f"stages[{i}]: only the last stage, {REST_STAGE!r}, can be derived"
                )
            out.append({**_rest_stage(out, repeats), "counts": {}})
            continue
        out.append({"counts": {}, **stage})
    return out


def _object(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InvalidProfile(f"{path or 'the document'}: an object, got {_shown(value)}")
    return value


def _list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise InvalidProfile(f"{path}: a list, got {_shown(value)}")
    return value


def _same_length(values: Sequence[Any], n: int, path: str) -> None:
    if len(values) != n:
        raise InvalidProfile(f"{path}: one value per repeat ({n}), got {len(values)}")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# -- the sidecar -------------------------------------------------------------------
def detail(full: Mapping[str, Any], compact_doc: Mapping[str, Any]) -> dict[str, Any]:
    """The sidecar of ``compact_doc``: what :func:`compact` leaves out of ``full``, less
    thread ids, pids and machine paths (:data:`DETAIL_FIELDS`)."""
    parts = {key: full.get(key, _EMPTY_DETAIL[key]) for key in DETAIL_FIELDS}
    out = {
        "schema": DETAIL_SCHEMA,
        "schema_version": DETAIL_VERSION,
        "baseline_sha256": digest(compact_doc),
        **{key: _clean(value) for key, value in parts.items()},
    }
    counts = stage_counts(full)
    if counts:
        out["stage_counts"] = counts
    return out


def detail_matches(detail_doc: Mapping[str, Any], compact_doc: Mapping[str, Any]) -> bool:
    """Whether ``detail_doc`` was written with ``compact_doc`` (not left from an older one)."""
    return detail_doc.get("baseline_sha256") == digest(compact_doc)


def check_detail(detail_doc: Any) -> Mapping[str, Any]:
    """``detail_doc`` if it is a sidecar this inferperf reads; :class:`InvalidProfile` if not."""
    doc = _object(detail_doc, "")
    if doc.get("schema") != DETAIL_SCHEMA:
        raise InvalidProfile(f'not a baseline sidecar (no "schema": "{DETAIL_SCHEMA}")')
    version = doc.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version > DETAIL_VERSION:
        raise InvalidProfile(
            f"schema_version: a known sidecar version (1 to {DETAIL_VERSION}), got {version!r}"
        )
    return doc


def with_detail(full: Mapping[str, Any], detail_doc: Mapping[str, Any]) -> dict[str, Any]:
    """``full`` with the sidecar's parts put back (the events' statuses where it has them)."""
    out = dict(full)
    for key in DETAIL_FIELDS:
        if key in detail_doc:
            out[key] = detail_doc[key]
    counts = detail_doc.get("stage_counts")
    if isinstance(counts, Mapping) and out.get("stages"):
        out["stages"] = [
            {**stage, "counts": dict(counts.get(stage.get("name"), stage.get("counts") or {}))}
            for stage in out["stages"]
        ]
    return out


def digest(doc: Mapping[str, Any]) -> str:
    """SHA-256 of the document's canonical JSON: the same for any layout of the same data."""
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# -- layout ------------------------------------------------------------------------
def dumps(doc: Mapping[str, Any]) -> str:
    """``doc`` as text: the layout of the module doc, no trailing newline."""
    return _format(doc, 0)


def _format(value: Any, depth: int) -> str:
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        pad = "  " * (depth + 1)
        items = [f"{pad}{json.dumps(str(k))}: {_format(v, depth + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + "  " * depth + "}"
    if isinstance(value, list | tuple):
        if not value:
            return "[]"
        if any(isinstance(v, Mapping) for v in value):
            pad = "  " * (depth + 1)
            lines = [pad + _inline(v) for v in value]
            return "[\n" + ",\n".join(lines) + "\n" + "  " * depth + "]"
        return _inline(value)
    return _inline(value)


def _inline(value: Any) -> str:
    return json.dumps(value, separators=(", ", ": "), allow_nan=False, ensure_ascii=False)
