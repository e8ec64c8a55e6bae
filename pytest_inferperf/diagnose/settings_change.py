"""How a run was set up against how its baseline was: the settings and inputs that changed.

Owns: :func:`settings_changes` (two Profiles -> :class:`SettingChange` records, each in
the words a user reads: "intra-op threads 4 -> 1", "input 'images' 1x3x224x224 ->
1x3x224x280 (+25% elements)", "onnxruntime 1.19.2 -> 1.20.0", "CPUs available 4 -> 2"),
reading those facts back from any Profile, older ones included (:func:`sessions_of`),
and :func:`settings_text`, the sentence that names them.

What is compared, and where a Profile keeps it:

* each ONNX Runtime session's options (threads, spinning, graph optimisation, execution
  mode, providers, memory arena): ``settings["operator_pass"]["sessions"][i]["options"]``
  (every session the operator pass ran), else ``Profile.session`` (a workload that is
  ``session.run`` itself, and baselines recorded before the pass stored options);
* the inputs each session was fed, every run of one call in order:
  ``settings["operator_pass"]["sessions"][i]["inputs"]``, else ``Profile.model["inputs"]``;
* onnxruntime, numpy and Python versions: ``Profile.machine``;
* the CPUs the process could use (``machine["cpus_available"]``, its affinity) and the
  CPUs online (``machine["cpu"]["cpu_count"]``);
* the runner's pinning (``settings["pin"]``): how many CPUs, not which.

A fact missing on either side (an older baseline, a plain Python workload) is no
difference: nothing is compared.

Must not: measure, judge a slowdown, read files, print, or import pytest, numpy or
ONNX Runtime. Pure functions of Profiles; every stored value is read defensively (a
baseline file is the user's).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..core.profile import Profile

#: What each kind of difference is called where the sentence names it, in the order
#: named: the settings a user chose first, the software last.
KIND_HEADS = {
    "session": "the session's settings changed",
    "inputs": "the inputs changed",
    "cpus": "the CPUs it could use changed",
    "runner": "the runner's settings changed",
    "software": "the software changed",
}

#: ONNX Runtime's own names for what ``onnxrt.sessions.describe_session`` stores in short form
#: (``onnxruntime.GraphOptimizationLevel`` and ``ExecutionMode``).
_ORT_NAMES = {
    "graph_optimization_level": {
        "disable": "ORT_DISABLE_ALL",
        "basic": "ORT_ENABLE_BASIC",
        "extended": "ORT_ENABLE_EXTENDED",
        "all": "ORT_ENABLE_ALL",
    },
    "execution_mode": {"sequential": "ORT_SEQUENTIAL", "parallel": "ORT_PARALLEL"},
}

#: Session options compared, in the order named, with the words for each.
SESSION_OPTIONS = (
    ("intra_op_threads", "intra-op threads"),
    ("inter_op_threads", "inter-op threads"),
    ("allow_spinning", "spinning"),
    ("graph_optimization_level", "graph optimisation"),
    ("execution_mode", "execution mode"),
    ("providers", "execution providers"),
    ("enable_mem_arena", "CPU memory arena"),
)

#: Software versions compared: the key in ``Profile.machine`` and its name.
SOFTWARE = (("onnxruntime", "onnxruntime"), ("numpy", "numpy"), ("python", "Python"))

#: Runs of one session per call whose input shapes are written out one by one; beyond
#: this the text gives the first ones and the count (engineering judgement: a line a
#: reader can still take in).
SHAPES_WRITTEN = 4


@dataclass(frozen=True)
class SettingChange:
    """One thing about how the run was set up that differs from the baseline."""

    kind: str  # "session" | "inputs" | "cpus" | "runner" | "software" (KIND_HEADS)
    name: str  # "intra-op threads", "input 'images'", "onnxruntime", "CPUs available"
    baseline: str
    current: str
    note: str = ""  # "+25% elements"
    session: str = ""  # the session's label where the workload runs several

    @property
    def text(self) -> str:
        tags = [t for t in (self.note, f"session {self.session}" if self.session else "") if t]
        more = f" ({'; '.join(tags)})" if tags else ""
        return f"{self.name} {self.baseline} -> {self.current}{more}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "baseline": self.baseline,
            "current": self.current,
            "note": self.note,
            "session": self.session,
            "text": self.text,
        }


@dataclass(frozen=True)
class SessionFacts:
    """What one Profile says about one session: its options and the inputs of each run."""

    label: str
    options: Mapping[str, Any] | None
    runs: tuple[tuple[Mapping[str, Any], ...], ...] | None  # inputs of each run of a call
    runs_per_call: int | None = None  # where known; ``runs`` may hold only the first ones


# -- reading a Profile ----------------------------------------------------------------------


def _mapping(value: Any) -> Mapping[str, Any] | None:
    return value if isinstance(value, Mapping) else None


def _inputs(value: Any) -> tuple[Mapping[str, Any], ...] | None:
    """A list of ``{"name", "shape", "dtype"}``; None where it is not one."""
    if not isinstance(value, Sequence) or isinstance(value, str | bytes):
        return None
    rows = tuple(v for v in value if isinstance(v, Mapping) and isinstance(v.get("name"), str))
    return rows if len(rows) == len(value) else None


def _runs(value: Any) -> tuple[tuple[Mapping[str, Any], ...], ...] | None:
    if not isinstance(value, Sequence) or isinstance(value, str | bytes):
        return None
    runs = tuple(_inputs(run) for run in value)
    if any(run is None for run in runs):
        return None
    return tuple(run for run in runs if run is not None)


def sessions_of(profile: Profile) -> list[SessionFacts]:
    """Every session a Profile recorded options or inputs of, largest first.

    The operator pass's sessions where it stored them; else the one session of a
    ``session.run`` workload (``Profile.session`` and ``Profile.model["inputs"]``).
    """
    settings = _mapping(profile.settings) or {}
    operator_pass = _mapping(settings.get("operator_pass")) or {}
    entries = operator_pass.get("sessions")
    found: list[SessionFacts] = []
    if isinstance(entries, Sequence) and not isinstance(entries, str | bytes):
        for index, entry in enumerate(entries, start=1):
            entry = _mapping(entry)
            if entry is None:
                continue
            options = _mapping(entry.get("options"))
            runs = _runs(entry.get("inputs"))
            if options is None and runs is None:
                continue
            label = str(entry.get("label") or f"session {index}")
            found.append(SessionFacts(label, options, runs, _count(entry.get("runs_per_call"))))
    if found:
        return found
    options = _mapping(profile.session)
    model = _mapping(profile.model) or {}
    inputs = _inputs(model.get("inputs"))
    if options is None and not inputs:
        return []
    label = "model"
    if isinstance(entries, Sequence) and entries and isinstance(entries[0], Mapping):
        label = str(entries[0].get("label") or label)
    return [SessionFacts(label, options, (inputs,) if inputs else None, 1 if inputs else None)]


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# -- words ----------------------------------------------------------------------------------


def _option_words(key: str, value: Any) -> str:
    if key in ("intra_op_threads", "inter_op_threads"):
        return "0 (ONNX Runtime's default)" if value == 0 else str(value)
    if isinstance(value, bool):
        return "on" if value else "off"
    if key in _ORT_NAMES:
        text = str(value)
        return _ORT_NAMES[key].get(text, text.rsplit(".", 1)[-1])
    if isinstance(value, Sequence) and not isinstance(value, str):
        return ", ".join(str(v) for v in value) or "none"
    return str(value)


def _shape(row: Mapping[str, Any]) -> tuple[int, ...] | None:
    shape = row.get("shape")
    if not isinstance(shape, Sequence) or isinstance(shape, str | bytes):
        return None
    dims = []
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, int):
            return None
        dims.append(d)
    return tuple(dims)


def shape_text(shape: tuple[int, ...] | None) -> str:
    """``1x3x224x224``; a scalar is ``scalar``, an unknown shape ``?``."""
    if shape is None:
        return "?"
    return "x".join(str(d) for d in shape) if shape else "scalar"


def _elements(shape: tuple[int, ...] | None) -> int | None:
    return None if shape is None else math.prod(max(0, d) for d in shape)


def _shapes_text(shapes: Sequence[tuple[int, ...] | None]) -> str:
    """One run's shape, or each run's in order (the first :data:`SHAPES_WRITTEN`)."""
    if not shapes:
        return "absent"
    if all(s == shapes[0] for s in shapes):
        return shape_text(shapes[0])
    written = ", ".join(shape_text(s) for s in shapes[:SHAPES_WRITTEN])
    more = f", ... ({len(shapes)} runs)" if len(shapes) > SHAPES_WRITTEN else ""
    return f"{written}{more}"


def _pct(before: int, after: int) -> str:
    if before == 0:
        return "from 0"
    return f"{(after - before) / before * 100:+,.0f}%"


# -- comparing ------------------------------------------------------------------------------


def _option_changes(
    before: Mapping[str, Any], now: Mapping[str, Any], session: str
) -> list[SettingChange]:
    out = []
    for key, words in SESSION_OPTIONS:
        if key not in before or key not in now:
            continue
        a, b = before[key], now[key]
        if isinstance(a, Sequence) and not isinstance(a, str):
            a = list(a)
        if isinstance(b, Sequence) and not isinstance(b, str):
            b = list(b)
        if a != b:
            out.append(
                SettingChange(
                    "session", words, _option_words(key, a), _option_words(key, b), "", session
                )
            )
    return out


def _by_input(
    runs: Sequence[Sequence[Mapping[str, Any]]],
) -> dict[str, tuple[list[tuple[int, ...] | None], list[str]]]:
    """Input name -> (its shape in each run it was fed in, its dtypes), in order fed."""
    out: dict[str, tuple[list[tuple[int, ...] | None], list[str]]] = {}
    for run in runs:
        for row in run:
            shapes, dtypes = out.setdefault(str(row["name"]), ([], []))
            shapes.append(_shape(row))
            dtype = str(row.get("dtype", "?"))
            if dtype not in dtypes:
                dtypes.append(dtype)
    return out


def _input_changes(before: SessionFacts, now: SessionFacts, session: str) -> list[SettingChange]:
    out: list[SettingChange] = []
    if before.runs is None or now.runs is None:
        return out
    was = before.runs_per_call or len(before.runs)
    got = now.runs_per_call or len(now.runs)
    if was != got:
        out.append(SettingChange("inputs", "runs per call", str(was), str(got), "", session))
    a, b = _by_input(before.runs), _by_input(now.runs)
    for name in [*a, *(n for n in b if n not in a)]:
        shapes_a, dtypes_a = a.get(name, ([], []))
        shapes_b, dtypes_b = b.get(name, ([], []))
        if shapes_a != shapes_b:
            note = ""
            sizes_a = [_elements(s) for s in shapes_a]
            sizes_b = [_elements(s) for s in shapes_b]
            if shapes_a and shapes_b and None not in sizes_a and None not in sizes_b:
                total_a = sum(s for s in sizes_a if s is not None)
                total_b = sum(s for s in sizes_b if s is not None)
                if total_a != total_b:
                    note = f"{_pct(total_a, total_b)} elements"
            out.append(
                SettingChange(
                    "inputs",
                    f"input '{name}'",
                    _shapes_text(shapes_a),
                    _shapes_text(shapes_b),
                    note,
                    session,
                )
            )
        if dtypes_a and dtypes_b and dtypes_a != dtypes_b:
            out.append(
                SettingChange(
                    "inputs",
                    f"input '{name}' dtype",
                    ", ".join(dtypes_a),
                    ", ".join(dtypes_b),
                    "",
                    session,
                )
            )
    return out


def _session_changes(current: Profile, baseline: Profile) -> list[SettingChange]:
    now, before = sessions_of(current), sessions_of(baseline)
    if not now or not before:
        return []
    if len(now) == 1 and len(before) == 1:
        pairs = [(before[0], now[0], "")]
    else:
        keyed_before, keyed_now = _by_label(before), _by_label(now)
        pairs = [(keyed_before[k], s, s.label) for k, s in keyed_now.items() if k in keyed_before]
        gone = [s.label for k, s in keyed_before.items() if k not in keyed_now]
        new = [s.label for k, s in keyed_now.items() if k not in keyed_before]
        if gone or new:
            which = SettingChange(
                "session",
                "sessions run",
                ", ".join(s.label for s in before),
                ", ".join(s.label for s in now),
            )
            return [which, *_pair_changes(pairs)]
    return _pair_changes(pairs)


def _by_label(sessions: Sequence[SessionFacts]) -> dict[tuple[str, int], SessionFacts]:
    """Sessions keyed by label and, where several share one (one model loaded twice with
    different options), by their order among those: the first of a label on one side is
    compared with the first on the other, never with a later one."""
    seen: dict[str, int] = {}
    keyed: dict[tuple[str, int], SessionFacts] = {}
    for session in sessions:
        nth = seen.get(session.label, 0)
        seen[session.label] = nth + 1
        keyed[(session.label, nth)] = session
    return keyed


def _pair_changes(pairs: Sequence[tuple[SessionFacts, SessionFacts, str]]) -> list[SettingChange]:
    options: list[SettingChange] = []
    inputs: list[SettingChange] = []
    for before, now, label in pairs:
        if before.options is not None and now.options is not None:
            options += _option_changes(before.options, now.options, label)
        inputs += _input_changes(before, now, label)
    return [*options, *inputs]


def _cpu_changes(current: Profile, baseline: Profile) -> list[SettingChange]:
    now, before = _mapping(current.machine) or {}, _mapping(baseline.machine) or {}
    out = []
    a, b = _count(before.get("cpus_available")), _count(now.get("cpus_available"))
    if a is not None and b is not None and a != b:
        out.append(SettingChange("cpus", "CPUs available", str(a), str(b)))
    online_a = _count((_mapping(before.get("cpu")) or {}).get("cpu_count"))
    online_b = _count((_mapping(now.get("cpu")) or {}).get("cpu_count"))
    if online_a is not None and online_b is not None and online_a != online_b:
        out.append(SettingChange("cpus", "CPUs online", str(online_a), str(online_b)))
    return out


def _pin(value: Any) -> tuple[int, ...] | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,)
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return tuple(v for v in value if isinstance(v, int) and not isinstance(v, bool))
    return None


def _pin_words(pin: tuple[int, ...] | None) -> str:
    if not pin:
        return "none"
    return f"CPU {pin[0]}" if len(pin) == 1 else f"{len(pin)} CPUs ({', '.join(map(str, pin))})"


def _runner_changes(current: Profile, baseline: Profile) -> list[SettingChange]:
    now, before = _mapping(current.settings) or {}, _mapping(baseline.settings) or {}
    if "pin" not in now or "pin" not in before:
        return []
    a, b = _pin(before["pin"]), _pin(now["pin"])
    if len(a or ()) == len(b or ()):  # another CPU of the same count is not another setup
        return []
    return [SettingChange("runner", "pin", _pin_words(a), _pin_words(b))]


def _software_changes(current: Profile, baseline: Profile) -> list[SettingChange]:
    now, before = _mapping(current.machine) or {}, _mapping(baseline.machine) or {}
    sessions_now = _mapping(current.session) or {}
    sessions_before = _mapping(baseline.session) or {}
    out = []
    for key, words in SOFTWARE:
        a = before.get(key, sessions_before.get(key) if key == "onnxruntime" else None)
        b = now.get(key, sessions_now.get(key) if key == "onnxruntime" else None)
        if a is None or b is None or str(a) == str(b):
            continue
        out.append(SettingChange("software", words, str(a), str(b)))
    return out


def settings_changes(current: Profile, baseline: Profile) -> tuple[SettingChange, ...]:
    """How ``current`` was set up differently from ``baseline``, in :data:`KIND_HEADS` order."""
    found = [
        *_session_changes(current, baseline),
        *_cpu_changes(current, baseline),
        *_runner_changes(current, baseline),
        *_software_changes(current, baseline),
    ]
    order = list(KIND_HEADS)
    return tuple(sorted(found, key=lambda c: order.index(c.kind)))


def settings_text(changes: Sequence[SettingChange], limit: int = 4) -> str:
    """``the session's settings changed: intra-op threads 4 -> 1; the inputs changed: ...``

    The first ``limit`` differences, grouped by kind; "" for none.
    """
    if not changes:
        return ""
    groups: dict[str, list[str]] = {}
    for change in changes[:limit]:
        groups.setdefault(change.kind, []).append(change.text)
    text = "; ".join(f"{KIND_HEADS.get(k, k)}: {', '.join(v)}" for k, v in groups.items())
    if len(changes) > limit:
        text += f"; {len(changes) - limit} more"
    return text
