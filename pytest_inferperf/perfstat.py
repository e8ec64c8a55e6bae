"""Reading ``perf stat`` output into our logical counts.

Owns: parsing ``perf stat -x<sep>`` CSV (``-x,``, ``-x;`` ...), ``perf stat -j`` JSON
lines and the plain text report (locale digit grouping ``1,234`` / ``1.234`` /
``1 234`` with narrow or plain no-break spaces, ``(57.14%)`` multiplexing,
``<not supported>`` / ``<not counted>``, ``# ...`` shadow comments, ``seconds time
elapsed``); mapping perf's event names (generic names, Arm sysfs names,
``pmu/event/`` and ``pmu/event=0x11/`` forms, raw ``r11`` codes, ``:u``-style
modifiers) to the logical names of :mod:`pmu.events`; and turning a report into
counts, unavailable reasons and a :class:`metrics.MetricContext`.

Must not: run perf, or judge anything.

Facts used: on Arm, Linux maps the generic events onto PMUv3 events as
``drivers/perf/arm_pmuv3.c`` says (``cache-references`` = L1D_CACHE,
``cache-misses`` = L1D_CACHE_REFILL, ``branches`` = PC_WRITE_RETIRED,
``branch-misses`` = BR_MIS_PRED, ``dTLB-load-misses`` = L1D_TLB_REFILL); on x86
``cache-*`` count the LLC and ``dTLB-load-misses`` the walks. perf prints counts
already scaled by time_enabled/time_running, with the running percentage beside them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .metrics import MetricContext
from .pmu.events import CATALOGUE

NOT_SUPPORTED = "<not supported>"
NOT_COUNTED = "<not counted>"
REASONS = {
    NOT_SUPPORTED: "perf stat: <not supported> (the kernel or this CPU has no such event)",
    NOT_COUNTED: "perf stat: <not counted> (never got a counter: the group did not fit, or "
                 "the task never ran on that PMU's CPUs)",
}


class PerfStatError(ValueError):
    """Text that is not perf stat output, or a file that cannot be read."""


# -- event names -----------------------------------------------------------------------

_GENERIC: dict[str, str] = {
    "cycles": "cycles", "cpu-cycles": "cycles",
    "instructions": "instructions",
    "branches": "branches", "branch-instructions": "branches", "branch-loads": "branches",
    "branch-misses": "branch_misses", "branch-load-misses": "branch_misses",
    "stalled-cycles-frontend": "stall_frontend", "idle-cycles-frontend": "stall_frontend",
    "stalled-cycles-backend": "stall_backend", "idle-cycles-backend": "stall_backend",
    "l1-dcache-loads": "l1d_access", "l1-dcache-load-misses": "l1d_refill",
    "l1-icache-loads": "l1i_access", "l1-icache-load-misses": "l1i_refill",
    "llc-loads": "llc_read", "llc-load-misses": "llc_miss",
    "dtlb-loads": "dtlb_access", "itlb-loads": "itlb_access",
    "task-clock": "task_clock", "cpu-clock": "task_clock",
    "page-faults": "page_faults", "faults": "page_faults",
    "major-faults": "major_faults",
    "context-switches": "context_switches", "cs": "context_switches",
    "cpu-migrations": "cpu_migrations", "migrations": "cpu_migrations",
}
_GENERIC_BY_ARCH: dict[str, dict[str, str]] = {
    # drivers/perf/arm_pmuv3.c armv8_pmuv3_perf_map / armv8_pmuv3_perf_cache_map
    "arm": {"cache-references": "l1d_access", "cache-misses": "l1d_refill",
            "dtlb-load-misses": "l1d_tlb_refill"},
    # x86: generic cache-* are LLC; hw-cache DTLB/ITLB read misses are page walks
    "x86": {"cache-references": "llc_read", "cache-misses": "llc_miss",
            "dtlb-load-misses": "dtlb_walk", "itlb-load-misses": "itlb_walk"},
}
_ARM_NAMES: dict[str, str] = {}
_ARM_CODES: dict[int, str] = {}
for _logical, _spec in CATALOGUE.items():
    for _name, _code in _spec.arm:
        _ARM_NAMES.setdefault(_name, _logical)
        _ARM_CODES.setdefault(_code, _logical)

_PMU_EVENT = re.compile(r"(?P<pmu>[A-Za-z0-9_.\-]+)/(?P<terms>[^/]*)/(?P<mods>[A-Za-z]*)")
_RAW = re.compile(r"r(?P<code>[0-9a-fA-F]{1,4})")
_ARM_PMU = re.compile(r"armv[89]_(?P<core>(?:cortex|neoverse)_[a-z]\d+[a-z]?)")
_X86_PMUS = ("cpu", "cpu_core", "cpu_atom")


@dataclass(frozen=True)
class EventName:
    """A perf event name taken apart."""

    text: str  # as printed
    pmu: str | None
    base: str  # lower case, modifiers and PMU removed ("cpu_cycles", "r11", "event=0x11")
    modifiers: str
    code: int | None  # raw Arm event code, for rNNNN and pmu/event=0xNN/

    @property
    def arch_hint(self) -> str | None:
        if self.pmu and (self.pmu.startswith(("armv8_", "armv9_", "arm_"))):
            return "arm"
        if self.pmu in _X86_PMUS:
            return "x86"
        if self.pmu is None and self.base in _ARM_NAMES:
            return "arm"
        return None

    @property
    def core_hint(self) -> str | None:
        match = _ARM_PMU.match(self.pmu or "")
        return match.group("core").replace("_", "-") if match else None


def split_event(text: str) -> EventName:
    """``armv8_pmuv3_0/l1d_cache_refill/u`` -> pmu, base, modifiers (and a code if raw)."""
    name = text.strip()
    match = _PMU_EVENT.fullmatch(name)
    if match:
        pmu, terms, mods = match.group("pmu"), match.group("terms").lower(), match.group("mods")
        code = None
        term = re.search(r"(?:^|,)(?:event|config)=(0x[0-9a-f]+|\d+)", terms)
        if term:
            code = int(term.group(1), 0)
        base = terms.split(",", 1)[0]
        return EventName(name, pmu, base, mods, code)
    base, _, mods = name.partition(":")
    base = base.lower()
    raw = _RAW.fullmatch(base)
    return EventName(name, None, base, mods, int(raw.group("code"), 16) if raw else None)


def logical_name(event: str | EventName, arch: str = "arm") -> str | None:
    """Our logical name for a perf event name, or None when we have none for it.

    Raw codes (``r11``, ``pmu/event=0x11/``) are read with the Arm PMUv3 code table and
    only when ``arch`` is ``"arm"``: on x86 the same digits mean another event.
    """
    ev = split_event(event) if isinstance(event, str) else event
    if ev.base in _GENERIC:
        return _GENERIC[ev.base]
    if ev.base in _GENERIC_BY_ARCH.get(arch, {}):
        return _GENERIC_BY_ARCH[arch][ev.base]
    if ev.base in _ARM_NAMES:
        return _ARM_NAMES[ev.base]
    if ev.code is not None and arch == "arm":
        return _ARM_CODES.get(ev.code)
    return None


# -- numbers ----------------------------------------------------------------------------

_GROUPING_ONLY = ("\u00a0", "\u202f", "\u2009", "'", " ")


def parse_number(token: str, decimal: str | None = None) -> float:
    """A number as perf prints it in any locale: ``1,234,567``, ``1.234.567,89``, ``1 234``.

    ``decimal`` is the locale's decimal mark when known (``.`` or ``,``). Without it, a
    single separator followed by exactly three digits is read as digit grouping (perf
    prints counts as integers), anything else as the decimal mark.
    """
    text = token.strip()
    for ch in _GROUPING_ONLY:
        text = text.replace(ch, "")
    if not text or not re.fullmatch(r"[0-9.,]+", text) or not text[0].isdigit():
        raise ValueError(f"not a number: {token!r}")
    if decimal is None:
        if "." in text and "," in text:
            decimal = "." if text.rfind(".") > text.rfind(",") else ","
        elif text.count(".") + text.count(",") == 0:
            decimal = "."
        else:
            sep = "." if "." in text else ","
            tail = text.rpartition(sep)[2]
            decimal = "" if (text.count(sep) > 1 or len(tail) == 3) else sep
    grouping = {".": ",", ",": ".", "": ".,"}[decimal]
    for ch in grouping:
        text = text.replace(ch, "")
    if decimal == ",":
        text = text.replace(",", ".")
    if text.count(".") > 1:
        raise ValueError(f"not a number: {token!r}")
    return float(text)


def _is_number(token: str) -> bool:
    try:
        parse_number(token)
    except ValueError:
        return False
    return True


def _is_value(token: str) -> bool:
    return token.strip() in (NOT_SUPPORTED, NOT_COUNTED) or _is_number(token)


def _looks_like_event(token: str) -> bool:
    token = token.strip()
    return bool(token) and not token[0].isdigit() and token[0] not in "<(#"


# -- records ------------------------------------------------------------------------------


@dataclass(frozen=True)
class PerfStatEntry:
    """One counter line of a perf stat report."""

    event: EventName
    value: float | None  # perf's (already scaled) value; None when not counted/supported
    unit: str
    status: str  # "counted" | NOT_SUPPORTED | NOT_COUNTED
    running_pct: float | None = None  # share of the time the event had a counter

    @property
    def value_in_base_units(self) -> float | None:
        """Times in ns (task-clock is printed in msec), everything else as printed."""
        if self.value is None:
            return None
        scale = {"msec": 1e6, "ms": 1e6, "us": 1e3, "usec": 1e3, "ns": 1.0, "nsec": 1.0,
                 "s": 1e9, "sec": 1e9, "seconds": 1e9}.get(self.unit.strip().lower(), 1.0)
        return self.value * scale


@dataclass(frozen=True)
class PerfStat:
    """A parsed perf stat report, and its counts under our logical names."""

    format: str  # "csv" | "json" | "text"
    entries: tuple[PerfStatEntry, ...]
    arch: str  # "arm" | "x86"
    elapsed_s: float | None = None
    user_s: float | None = None
    sys_s: float | None = None
    separator: str | None = None
    counts: dict[str, float] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)
    multiplexed: dict[str, float] = field(default_factory=dict)  # logical -> running %
    unmapped: tuple[str, ...] = ()
    superseded: tuple[str, ...] = ()  # events whose logical name another event gave first

    @property
    def core_hint(self) -> str | None:
        """The core named by a PMU in the event names (``armv8_cortex_a72`` -> cortex-a72)."""
        hints = [e.event.core_hint for e in self.entries if e.event.core_hint]
        return "+".join(dict.fromkeys(hints)) if hints else None

    @property
    def wall_ns(self) -> float:
        if self.elapsed_s is not None:
            return self.elapsed_s * 1e9
        duration = next((e for e in self.entries
                         if e.event.base == "duration_time" and e.value is not None), None)
        if duration is not None:
            return float(duration.value_in_base_units or 0.0)
        return 0.0

    def context(self, core: str = "", calls: int = 1) -> MetricContext:
        """The MetricContext of this run (a perf stat run knows no latency)."""
        return MetricContext(calls=calls, wall_ns=self.wall_ns,
                             core=core or self.core_hint or "")


def _collect(fmt: str, entries: list[PerfStatEntry], arch: str | None, **extra) -> PerfStat:
    if not entries:
        raise PerfStatError(
            "no perf stat counter lines found (expected 'perf stat' text output, "
            "'perf stat -x,' CSV or 'perf stat -j' JSON)")
    if arch is None:
        hints = {e.event.arch_hint for e in entries} - {None}
        arch = "x86" if hints == {"x86"} else "arm"
    # Several perf names can give one logical event (branches and br_pred, cycles:u and
    # cycles:k). Lines of the same name are summed (one per PMU on big.LITTLE, per CPU with
    # -A, per interval with -I); of different names, the first that was counted is used.
    groups: dict[str, dict[tuple[str, str], list[PerfStatEntry]]] = {}
    unmapped: list[str] = []
    for entry in entries:
        logical = logical_name(entry.event, arch)
        if logical is None:
            if entry.event.base != "duration_time":
                unmapped.append(entry.event.text)
            continue
        key = (entry.event.base, entry.event.modifiers)
        groups.setdefault(logical, {}).setdefault(key, []).append(entry)
    counted: dict[str, float] = {}
    missing: dict[str, str] = {}
    running: dict[str, float] = {}
    superseded: list[str] = []
    for logical, by_name in groups.items():
        names = list(by_name.values())
        use = next((g for g in names if any(e.status == "counted" for e in g)), names[0])
        superseded.extend(e.event.text for g in names if g is not use for e in g)
        for entry in use:
            if entry.status != "counted":
                missing.setdefault(logical, REASONS[entry.status])
                continue
            counted[logical] = counted.get(logical, 0.0) + float(entry.value_in_base_units or 0)
            if entry.running_pct is not None and entry.running_pct < 100.0:
                running[logical] = min(running.get(logical, 100.0), entry.running_pct)
    unavailable = {k: v for k, v in missing.items() if k not in counted}
    return PerfStat(fmt, tuple(entries), arch, counts=counted, unavailable=unavailable,
                    multiplexed=running, unmapped=tuple(dict.fromkeys(unmapped)),
                    superseded=tuple(dict.fromkeys(superseded)), **extra)


# -- CSV ----------------------------------------------------------------------------------

_CSV_SEPARATORS = (",", ";", "\t", "|")
_CPU_PREFIX = re.compile(r"CPU\d+")


def _csv_fields(line: str, sep: str) -> list[str]:
    fields = [f.strip() for f in line.split(sep)]
    if fields and _CPU_PREFIX.fullmatch(fields[0]):
        fields = fields[1:]  # perf stat -A: one line per CPU, summed below
    if (len(fields) >= 4 and _is_number(fields[0]) and _is_value(fields[1])
            and not _looks_like_event(fields[2]) and _looks_like_event(fields[3])):
        fields = fields[1:]  # perf stat -I: a timestamp first; intervals are summed
    return fields


def _csv_score(lines: list[str], sep: str) -> int:
    score = 0
    for line in lines:
        fields = _csv_fields(line, sep)
        if len(fields) >= 3 and _is_value(fields[0]) and _looks_like_event(fields[2]):
            score += 1
    return score


def _csv_value(token: str, sep: str) -> float:
    # -x, output has no digit grouping; with another separator a comma is a decimal mark
    # (perf prints %f in the user's locale: "12,34;msec;task-clock" under de_DE).
    return parse_number(token, "," if (sep != "," and "," in token and "." not in token)
                        else ".")


def parse_csv(text: str, sep: str | None = None, *, arch: str | None = None) -> PerfStat:
    """``perf stat -x<sep>``: value, unit, event, run time, running %, metric, metric unit."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if sep is None:
        scores = {s: _csv_score(lines, s) for s in _CSV_SEPARATORS}
        sep = max(scores, key=lambda s: scores[s])
        if scores[sep] == 0:
            raise PerfStatError("no perf stat CSV lines found")
    entries: list[PerfStatEntry] = []
    for line in lines:
        fields = _csv_fields(line, sep)
        if len(fields) < 3 or not _looks_like_event(fields[2]) or not fields[0]:
            continue  # metric-only lines (",,,,,1.23,insn per cycle") and noise
        raw = fields[0]
        if raw in (NOT_SUPPORTED, NOT_COUNTED):
            value, status = None, raw
        else:
            try:
                value, status = _csv_value(raw, sep), "counted"
            except ValueError:
                continue
        pct = None
        if len(fields) > 4 and fields[4]:
            try:
                pct = _csv_value(fields[4], sep)
            except ValueError:
                pct = None
        entries.append(PerfStatEntry(split_event(fields[2]), value, fields[1], status, pct))
    return _collect("csv", entries, arch, separator=sep)


# -- JSON lines (perf stat -j) ------------------------------------------------------------


def parse_json_lines(text: str, *, arch: str | None = None) -> PerfStat:
    """``perf stat -j``: one JSON object per counter."""
    entries: list[PerfStatEntry] = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if not isinstance(obj, dict) or "event" not in obj or "counter-value" not in obj:
            continue
        raw = str(obj["counter-value"]).strip()
        if raw in (NOT_SUPPORTED, NOT_COUNTED):
            value, status = None, raw
        else:
            try:
                value, status = float(raw), "counted"
            except ValueError:
                continue
        pct = obj.get("pcnt-running")
        entries.append(PerfStatEntry(split_event(str(obj["event"])), value,
                                     str(obj.get("unit", "")), status,
                                     float(pct) if isinstance(pct, (int, float)) else None))
    return _collect("json", entries, arch)


# -- plain text ---------------------------------------------------------------------------

# Digits with grouping marks; a plain space groups digits only when exactly three digits
# follow it, so that the columns of "perf stat -I" (time, value) are never read as one.
_NUM = r"\d(?:[\d.,'\u00a0\u202f\u2009]|(?<=\d) (?=\d{3}(?!\d)))*"
_LINE = re.compile(
    rf"^\s*(?P<value>{NOT_SUPPORTED}|{NOT_COUNTED}|{_NUM})\s+"
    r"(?:(?P<unit>msec|ms|usec|us|nsec|ns|seconds|sec|MiB|Joules)\s+)?"
    r"(?P<event>[^\s#(]+)(?P<rest>.*)$"
)
_TIMES = re.compile(
    rf"^\s*(?P<value>{_NUM})\s+(?:\+-\s+\S+\s+)?seconds\s+(?P<what>time elapsed|user|sys)\b"
)
_RUNNING = re.compile(r"\((?P<pct>\d+(?:[.,]\d+)?)\s*%\)")


def _text_decimal(lines: Iterable[str]) -> str | None:
    """The locale's decimal mark, from a time line (perf always prints it with a fraction)."""
    for line in lines:
        match = _TIMES.match(line)
        if match:
            token = match.group("value")
            marks = [i for i, ch in enumerate(token) if ch in ".,"]
            if marks:
                return token[marks[-1]]
    return None


def parse_text(text: str, *, arch: str | None = None) -> PerfStat:
    """The plain ``perf stat`` report, in any locale."""
    lines = text.splitlines()
    decimal = _text_decimal(lines)
    times: dict[str, float] = {}
    entries: list[PerfStatEntry] = []
    for line in lines:
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        times_match = _TIMES.match(line)
        if times_match:
            times[times_match.group("what")] = parse_number(times_match.group("value"), decimal)
            continue
        match = _LINE.match(line)
        if match and not _looks_like_event(match.group("event")):
            # perf stat -I: a timestamp, then the counter line
            match = _LINE.match(line[match.start("event"):]) if match.group("unit") is None \
                else None
        if not match:
            continue
        raw, unit = match.group("value"), match.group("unit") or ""
        if raw in (NOT_SUPPORTED, NOT_COUNTED):
            value, status = None, raw
        else:
            try:
                value, status = parse_number(raw, decimal), "counted"
            except ValueError:
                continue
        rest = match.group("rest")
        comment = rest.find("#")
        tail = rest if comment < 0 else rest[comment:]
        running = _RUNNING.search(tail)
        pct = float(running.group("pct").replace(",", ".")) if running else None
        entries.append(PerfStatEntry(split_event(match.group("event")), value, unit, status, pct))
    return _collect("text", entries, arch, elapsed_s=times.get("time elapsed"),
                    user_s=times.get("user"), sys_s=times.get("sys"))


# -- entry points ------------------------------------------------------------------------


def parse(text: str, *, arch: str | None = None) -> PerfStat:
    """Parse perf stat output in whichever format it is (CSV, JSON lines, text).

    ``arch`` (``"arm"`` / ``"x86"``) decides the arch-specific generic names and raw codes;
    by default it is read from the PMU names in the file, else Arm.
    """
    if not text.strip():
        raise PerfStatError("empty file: no perf stat output")
    body = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if body and sum(ln.lstrip().startswith("{") for ln in body) * 2 > len(body):
        return parse_json_lines(text, arch=arch)
    text_score = sum(1 for ln in body if _TIMES.match(ln) or (
        (m := _LINE.match(ln)) is not None and _looks_like_event(m.group("event"))))
    csv_scores = {s: _csv_score(body, s) for s in _CSV_SEPARATORS}
    sep = max(csv_scores, key=lambda s: csv_scores[s])
    if csv_scores[sep] > 0 and csv_scores[sep] >= text_score:
        return parse_csv(text, sep, arch=arch)
    return parse_text(text, arch=arch)


def load(path: str | Path, *, arch: str | None = None) -> PerfStat:
    """Read and parse a perf stat output file; :class:`PerfStatError` says what is wrong."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise PerfStatError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")  # old locales' no-break space is 0xA0
    try:
        return parse(text, arch=arch)
    except PerfStatError as exc:
        raise PerfStatError(f"{path}: {exc}") from None
