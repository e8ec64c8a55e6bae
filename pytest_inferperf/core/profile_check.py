"""Validation of a serialised Profile before anything reads it: types, ranges, finiteness.

Owns: :func:`check_profile`, run on every document that becomes a Profile (a baseline,
a ``report.json`` given to ``validate`` / ``compare``, a cache entry, a record from an
xdist worker), so that whatever is accepted can be judged and rendered. It checks

* everywhere: no non-finite number (NaN, ``Infinity``, ``1e400``), no float outside
  the physical range ``1e-30 <= |x| <= 1e30`` (zero apart), no integer beyond
  ``2**63``, no nesting deeper than :data:`MAX_DEPTH`;
* the fields the judge and the renderers use, by name: their type (a string where a
  string is read, an object where keys are looked up), their range (counts and times
  ``>= 0``, calls ``>= 1``, at least one repeat), and the schema version.

Fields it does not know are left to their readers (new optional fields of later
versions load). A problem raises :class:`InvalidProfile` naming the field's path
(``repeats[2].sample.counts.cycles.value``) and the value.

Must not: read files (that is :mod:`.safe_read`), build the Profile (``profile``), or
coerce a wrong value into a right one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, NoReturn, TypeGuard

from .errors import InferperfError

# A field rule: checks ``value`` found at ``path`` and raises InvalidProfile if it is
# wrong. What it returns (nothing, or the value it read) is not used.
Rule = Callable[[Any, str], object]

MAX_DEPTH = 64
MAX_INT = 2**63
FLOAT_MAX = 1e30
FLOAT_MIN = 1e-30  # smallest non-zero magnitude: a count, a time or a ratio is never tinier
COUNT_MAX = 1e18  # events or nanoseconds in one region: ~30 years of one core at 1 GHz
CALLS_MAX = 2**40
NS_MAX = 2**62  # ~146 years
MS_MAX = 1e12
THREADS_MAX = 1 << 20
BYTES_MAX = 2**60


class InvalidProfile(InferperfError, ValueError):
    """A field with a value no Profile can hold; the message names the field."""


def _fail(path: str, what: str, value: Any) -> NoReturn:
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    raise InvalidProfile(f"{path or 'the document'}: {what}, got {shown}")


# -- everywhere ---------------------------------------------------------------------
def check_numbers(value: Any, path: str = "") -> None:
    """No NaN / infinite / out-of-range number and no over-deep nesting anywhere.

    Walks the document without recursion (a hostile file cannot exhaust the stack) and
    builds a field's path only for the message of a value it refuses.
    """
    stack: list[tuple[Any, tuple[str | int, ...], int]] = [(value, (), 0)]
    isfinite = math.isfinite
    while stack:
        item, where, depth = stack.pop()
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if kind is float:
            if not isfinite(item):
                _fail(_path(path, where), "a finite number (NaN, Infinity and 1e400 are not)", item)
            if item and not FLOAT_MIN <= abs(item) <= FLOAT_MAX:
                _fail(
                    _path(path, where),
                    f"a number between {FLOAT_MIN:g} and {FLOAT_MAX:g} in magnitude",
                    item,
                )
        elif kind is int:
            if not -MAX_INT <= item <= MAX_INT:
                _fail(
                    _path(path, where), "an integer beyond 2**63", f"{len(str(item))}-digit integer"
                )
        elif isinstance(item, Mapping):
            if depth >= MAX_DEPTH:
                _fail(_path(path, where), f"nested deeper than {MAX_DEPTH} levels", "...")
            for key, child in item.items():
                if type(key) is not str:
                    _fail(_path(path, where), "string keys", key)
                if type(child) not in (str, bool, type(None)):
                    stack.append((child, (*where, key), depth + 1))
        elif isinstance(item, list | tuple):
            if depth >= MAX_DEPTH:
                _fail(_path(path, where), f"nested deeper than {MAX_DEPTH} levels", "...")
            stack.extend(
                (child, (*where, i), depth + 1)
                for i, child in enumerate(item)
                if type(child) not in (str, bool, type(None))
            )
        else:
            _fail(_path(path, where), "a JSON value", type(item).__name__)


def _path(prefix: str, where: tuple[str | int, ...]) -> str:
    text = prefix
    for part in where:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


# -- field checks -------------------------------------------------------------------
def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def integer(value: Any, path: str, low: int = 0, high: int = MAX_INT) -> None:
    if not _is_int(value) or not low <= value <= high:
        _fail(path, f"an integer from {low:,} to {high:,}", value)


def number(value: Any, path: str, low: float = 0.0, high: float = FLOAT_MAX) -> None:
    if not _is_number(value) or not math.isfinite(value) or not low <= value <= high:
        _fail(path, f"a number from {low:g} to {high:g}", value)


def count(value: Any, path: str, high: float = COUNT_MAX) -> None:
    """A counted quantity: 0, or between 1e-6 (a scaled fraction of one event) and ``high``."""
    number(value, path, 0.0, high)
    if value != 0 and value < 1e-6:
        _fail(path, "0 or at least 1e-6 (a count is never a tiny fraction)", value)


def text(value: Any, path: str) -> None:
    if not isinstance(value, str):
        _fail(path, "a string", value)


def flag(value: Any, path: str) -> None:
    if not isinstance(value, bool):
        _fail(path, "true or false", value)


def mapping(value: Any, path: str) -> Mapping[Any, Any]:
    if not isinstance(value, Mapping):
        _fail(path, "an object", value)
    return value


def sequence(value: Any, path: str, *, non_empty: bool = False) -> list[Any]:
    if not isinstance(value, list | tuple):
        _fail(path, "a list", value)
    if non_empty and not value:
        _fail(path, "a list with at least one entry", value)
    return list(value)


def optional(check: Callable[..., object], value: Any, path: str, *args: Any) -> None:
    if value is not None:
        check(value, path, *args)


def _fields(
    data: Mapping[Any, Any],
    path: str,
    rules: Mapping[str, Rule],
    *,
    required: tuple[str, ...] = (),
) -> None:
    for key in required:
        if key not in data:
            raise InvalidProfile(f"missing field '{f'{path}.{key}' if path else key}'")
    for key, rule in rules.items():
        if key in data:
            rule(data[key], f"{path}.{key}" if path else key)


def _each(rule: Rule) -> Rule:
    def check(value: Any, path: str) -> None:
        for index, item in enumerate(sequence(value, path)):
            rule(item, f"{path}[{index}]")

    return check


def _values(rule: Rule) -> Rule:
    def check(value: Any, path: str) -> None:
        for key, item in mapping(value, path).items():
            rule(item, f"{path}.{key}")

    return check


def _opt(rule: Callable[..., object], *args: Any) -> Rule:
    return lambda value, path: optional(rule, value, path, *args)


def _obj(rules: Mapping[str, Rule], required: tuple[str, ...] = ()) -> Rule:
    return lambda value, path: _fields(mapping(value, path), path, rules, required=required)


def _ints(low: int = 0, high: int = MAX_INT) -> Rule:
    return lambda value, path: integer(value, path, low, high)


def _nums(low: float = 0.0, high: float = FLOAT_MAX) -> Rule:
    return lambda value, path: number(value, path, low, high)


_finite = _nums(-FLOAT_MAX, FLOAT_MAX)
_threads = _opt(integer, 0, THREADS_MAX)

_COUNT = _obj(
    {
        "value": count,
        "raw": _ints(0, 2**64),
        "enabled_ns": _ints(0, NS_MAX),
        "running_ns": _ints(0, NS_MAX),
    },
    required=("value", "raw"),
)
_SAMPLE = _obj(
    {"counts": _values(_COUNT), "per_thread": _values(_values(_nums(-COUNT_MAX, COUNT_MAX)))},
    required=("counts",),
)
_REPEAT = _obj(
    {"calls": _ints(1, CALLS_MAX), "wall_ns": _ints(0, NS_MAX), "sample": _SAMPLE},
    required=("calls", "wall_ns", "sample"),
)
_LATENCY_KEYS = ("mean_ms", "min_ms", "max_ms", "stddev_ms", "p50_ms", "p95_ms", "p99_ms")
_LATENCY = _obj(
    {
        "calls": _ints(1, CALLS_MAX * 1000),
        **dict.fromkeys(_LATENCY_KEYS, _nums(0.0, MS_MAX)),
        "calls_per_second": _nums(0.0, FLOAT_MAX),
    },
    required=("calls", *_LATENCY_KEYS, "calls_per_second"),
)
_MEMORY = _obj(
    {"peak_rss_bytes": _opt(integer, 0, BYTES_MAX), "method": text, "note": _opt(text)},
    required=("method",),
)
_STEADY = _obj(
    {
        "reached": flag,
        "warmup_calls": _ints(0, CALLS_MAX),
        "spread": _nums(-1.0, FLOAT_MAX),
        "threshold": _nums(0.0, FLOAT_MAX),
        "window": _ints(0, CALLS_MAX),
    },
    required=("reached", "warmup_calls", "spread", "threshold", "window"),
)
_EVENT = _obj(
    {"name": text, "available": flag, "source": _opt(text), "reason": _opt(text)},
    required=("name", "available"),
)
_STAGE = _obj(
    {
        "name": text,
        "calls": _ints(0, CALLS_MAX * 1000),
        "wall_ns": _ints(-NS_MAX, NS_MAX),
        "counts": _values(_nums(-COUNT_MAX, COUNT_MAX)),
        "repeat_wall_ns": _each(_ints(-NS_MAX, NS_MAX)),
    },
    required=("name", "calls", "wall_ns"),
)
_OPERATOR = _obj(
    {
        "node": _opt(text),
        "op_type": _opt(text),
        "calls": _opt(integer, 0),
        "total_us": _opt(number),
        "mean_us": _opt(number),
        "share": _opt(number),
        "input_shapes": _opt(_each(text)),
        "output_shapes": _opt(_each(text)),
        **dict.fromkeys(
            ("output_bytes", "activation_bytes", "parameter_bytes"), _opt(integer, 0, BYTES_MAX)
        ),
    }
)
_OP_TYPE = _obj(
    {"op_type": text, "nodes": _ints(0, CALLS_MAX), "mean_us": _nums(), "runs_us": _each(_nums())},
    required=("op_type",),
)
_POINT = _obj(
    {
        "node": _opt(text),
        "op_type": _opt(text),
        "bound": _opt(text),
        "matched_by": _opt(text),
        **dict.fromkeys(
            ("flops", "bytes", "intensity", "time_us", "achieved_gflops", "attainable_gflops"),
            _opt(number),
        ),
    }
)
_ROOFLINE = _obj(
    {
        "ceilings": _obj(
            {
                "peak_gflops": _nums(FLOAT_MIN),
                "bandwidth_gbs": _nums(FLOAT_MIN),
                "threads": _threads,
                "method": _opt(text),
                "ridge_intensity": _opt(number),
            },
            required=("peak_gflops", "bandwidth_gbs"),
        ),
        "points": _opt(_each(_POINT)),
        "summary": _opt(
            _obj(
                {
                    "unmatched_operators": _opt(_each(text)),
                    **dict.fromkeys(
                        (
                            "operators",
                            "memory_bound",
                            "compute_bound",
                            "matched_by_shapes",
                            "unmatched",
                        ),
                        _opt(integer, 0),
                    ),
                    **dict.fromkeys(
                        ("time_us", "gflop", "achieved_gflops", "memory_bound_time_share"),
                        _opt(number),
                    ),
                }
            )
        ),
        "reason": _opt(text),
    }
)
_ENERGY = _obj(
    {
        "joules_per_call": _opt(number),
        "source": _opt(text),
        "reason": _opt(text),
        "seconds": _opt(number),
        "watts": _opt(number),
        "calls": _opt(integer, 0),
        "domains": _opt(mapping),
    }
)
_STACKS = _obj({"view": _opt(text), "folded": _values(_ints(0, 2**53))})
_CPU = _obj(
    {
        "arch": _opt(text),
        "vendor": _opt(text),
        "core": _opt(text),
        "core_slug": _opt(text),
        "cpu_count": _opt(integer, 1, THREADS_MAX),
        "machine_class": _opt(text),
        "kernel": _opt(text),
        "paranoid": _opt(integer, -10),
        "privileged": _opt(flag),
        "caches": _opt(_each(mapping)),
    }
)
_MACHINE = _obj({"cpu": _opt(_CPU), "machine_class": _opt(text)})
_SESSION = _obj(
    {
        "providers": _opt(_each(text)),
        "intra_op_threads": _threads,
        "inter_op_threads": _threads,
        "onnxruntime": _opt(text),
        "execution_mode": _opt(text),
        "graph_optimization_level": _opt(text),
        "allow_spinning": _opt(flag),
        "enable_mem_arena": _opt(flag),
    }
)
_SIMULATION = _obj(
    {
        "warnings": _opt(_each(text)),
        "child": _opt(mapping),
        **dict.fromkeys(
            ("slowdown_vs_native", "uninstrumented_slowdown_vs_native", "child_wall_s"),
            _opt(number),
        ),
    }
)
_ANALYSE = _obj(
    {
        "dims": _opt(_values(_ints(1, MAX_INT))),
        "session_settings": _opt(_obj({"intra_op_threads": _threads})),
    }
)
_SETTINGS = _obj(
    {
        **dict.fromkeys(("warmup", "warmup_max", "steady_window"), _ints(0, MAX_INT)),
        "seed": _ints(-MAX_INT, MAX_INT),
        "repeat": _ints(1, CALLS_MAX),
        "calls_per_repeat": _ints(1, CALLS_MAX),
        "timeout": _nums(FLOAT_MIN),
        "min_time": _nums(),
        "steady_threshold": _nums(),
        "pin": _opt(_each(_ints(0, THREADS_MAX))),
        "simulation": _opt(_SIMULATION),
        "analyse": _opt(_ANALYSE),
        "operator_pass": _opt(mapping),
        "smoke": _opt(flag),
    }
)
_PROFILE = _obj(
    {
        "name": text,
        "created": text,
        "machine_class": text,
        "backend": text,
        "machine": _MACHINE,
        "settings": _SETTINGS,
        "session": _opt(_SESSION),
        "events": _each(_EVENT),
        "latency": _LATENCY,
        "memory": _MEMORY,
        "steady": _STEADY,
        "partial": flag,
        "partial_reason": _opt(text),
        "overhead": _values(_nums(-COUNT_MAX, COUNT_MAX)),
        "stages": _each(_STAGE),
        "repeats": lambda value, path: [
            _REPEAT(r, f"{path}[{i}]") for i, r in enumerate(sequence(value, path, non_empty=True))
        ],
        "operators": _each(_OPERATOR),
        "op_types": _each(_OP_TYPE),
        "roofline": _opt(_ROOFLINE),
        "energy": _opt(_ENERGY),
        "stacks": _opt(_STACKS),
        "artifacts": _values(text),
        "outputs_ok": flag,
    },
    required=("name", "machine_class", "backend", "latency", "memory", "steady", "repeats"),
)


def check_profile(data: Any, *, schema_version: int) -> None:
    """Raise :class:`InvalidProfile` unless ``data`` is a Profile document every reader can use.

    ``schema_version`` is the newest version this inferperf writes; a document must say
    a version from 1 to it.
    """
    document = mapping(data, "")
    version = document.get("schema_version")
    if not _is_int(version) or not 1 <= version <= schema_version:
        _fail("schema_version", f"a known profile schema version (1 to {schema_version})", version)
    check_numbers(document)
    _PROFILE(document, "")
