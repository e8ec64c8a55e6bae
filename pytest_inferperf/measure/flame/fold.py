"""``perf script`` text -> folded stacks, and the folded file format.

Owns: parsing the text ``perf script`` prints by default (a header line per sample:
comm, tid, time, period, event; then one frame per line, leaf first, as
``\\t<addr> <symbol+off> (<dso>)``; a blank line between samples) on x86_64 and
arm64; turning a frame into the name a flamegraph shows; counting samples per
root-first stack; reading and writing folded files (``frame;frame;frame count``,
one stack a line, sorted) with a cap on their size.

Frame names follow the conventions ``flamegraph.pl``/inferno/speedscope know:

* the ``+0x1f`` offset is dropped; C++ names keep their spaces, templates and
  argument lists; a ``;`` inside a name becomes ``:`` (``;`` separates frames);
* kernel frames end in ``_[k]``, inlined frames in ``_[i]``;
* a frame without a symbol shows its library, ``[libonnxruntime.so.1.17.1]``
  (PyPI wheels are stripped, so that is all perf can say about them); runs of
  the same unresolved library collapse into one frame; a frame with neither
  symbol nor library is ``[unknown]``, and such frames at the outer end of a
  stack (where a broken frame-pointer chain ends in garbage) are dropped;
* Python functions seen through CPython's perf trampoline (3.12+) keep perf's
  ``py::function:/path/file.py`` name.

Must not: run perf (that is :mod:`.record`) or draw anything (that is :mod:`.svg`).
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "DEFAULT_MAX_BYTES",
    "TRUNCATED",
    "FoldedStacks",
    "Frame",
    "PerfSample",
    "cap_folded",
    "fold_perf_script",
    "fold_samples",
    "format_folded",
    "frame_name",
    "parse_folded",
    "parse_perf_script",
    "read_folded",
    "sanitize_frame",
    "write_folded",
]

TRUNCATED = "[truncated]"
"""The stack that the rarest stacks are merged into when a folded file is capped."""
DEFAULT_MAX_BYTES = 8 * 1024 * 1024
UNKNOWN = "[unknown]"
KERNEL_SUFFIX = "_[k]"
INLINE_SUFFIX = "_[i]"
PYTHON_PREFIX = "py::"

# Addresses at or above this are kernel space on x86_64 (0xffff8...) and arm64 (0xffff0...).
_KERNEL_SPACE = 0xFFFF_0000_0000_0000
_OFFSET = re.compile(r"\+0x[0-9a-fA-F]+$")
_FRAME = re.compile(r"^(?P<addr>[0-9a-fA-F]+)\s+(?P<body>.*)$")
_HEADER = re.compile(
    r"^(?P<comm>.*?)\s+"
    r"(?:(?P<pid>-?\d+)/)?(?P<tid>-?\d+)\s+"
    r"(?:\[(?P<cpu>\d+)\]\s+)?"
    r"(?P<time>\d+\.\d+):\s+"
    r"(?:(?P<period>\d+)\s+)?"
    r"(?P<event>\S+?):(?:\s+(?P<rest>.*))?$"
)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class Frame:
    """One line of a perf call chain: ``symbol`` as perf printed it (offset included)."""

    address: int | None
    symbol: str
    dso: str

    @property
    def kernel(self) -> bool:
        if self.dso.startswith(("[kernel.", "[guest.kernel")):
            return True
        return self.address is not None and self.address >= _KERNEL_SPACE

    @property
    def inlined(self) -> bool:
        return self.dso == "inlined"

    @property
    def resolved(self) -> bool:
        """Whether perf found a symbol for this address."""
        return bool(self.symbol) and self.symbol != UNKNOWN


@dataclass(frozen=True)
class PerfSample:
    """One sample of ``perf script``: who, when, which event, and its call chain leaf first."""

    comm: str
    tid: int | None
    time: float | None
    event: str
    period: int | None
    frames: tuple[Frame, ...]


@dataclass(frozen=True)
class FoldedStacks:
    """Samples counted per stack, and what the stacks could not say.

    ``stripped`` counts, per library (basename), the samples with at least one
    frame in it that perf could not name; ``python_samples`` those with at least
    one Python function (perf trampoline) frame; ``events`` the samples per event.
    """

    stacks: dict[str, int]
    samples: int
    events: dict[str, int] = field(default_factory=dict)
    stripped: dict[str, int] = field(default_factory=dict)
    python_samples: int = 0


# --------------------------------------------------------------------------- parsing


def _split_dso(body: str) -> tuple[str, str]:
    """``symbol (dso)`` -> (symbol, dso); the dso is the last balanced ``(...)``."""
    body = body.rstrip()
    if not body.endswith(")"):
        return body, ""
    depth = 0
    for i in range(len(body) - 1, -1, -1):
        ch = body[i]
        if ch == ")":
            depth += 1
        elif ch == "(":
            depth -= 1
            if depth == 0:
                if i == 0 or body[i - 1].isspace():
                    return body[:i].rstrip(), body[i + 1 : -1]
                break
    return body, ""


def _parse_frame(text: str) -> Frame:
    text = text.strip()
    match = _FRAME.match(text)
    if match:
        address: int | None = int(match["addr"], 16)
        body = match["body"]
    else:
        address, body = None, text
    symbol, dso = _split_dso(body)
    return Frame(address, symbol, dso)


def _parse_header(line: str) -> tuple[PerfSample, Frame | None]:
    match = _HEADER.match(line)
    if not match:
        comm = line.split(None, 1)[0] if line.split() else ""
        return PerfSample(comm, None, None, "", None, ()), None
    rest = (match["rest"] or "").strip()
    inline_frame = _parse_frame(rest) if _FRAME.match(rest) else None
    sample = PerfSample(
        comm=match["comm"].strip(),
        tid=int(match["tid"]),
        time=float(match["time"]),
        event=match["event"],
        period=int(match["period"]) if match["period"] else None,
        frames=(),
    )
    return sample, inline_frame


def parse_perf_script(lines: str | Iterable[str]) -> Iterator[PerfSample]:
    """The samples in ``perf script`` text (a string or an iterable of lines).

    Tolerates a missing blank line between samples, ``#`` comment lines (``--header``)
    and samples recorded without a call chain (one line each: the frame follows the
    event on the header line, and a short comm is right-aligned with spaces).
    """
    if isinstance(lines, str):
        lines = lines.splitlines()
    header: PerfSample | None = None
    frames: list[Frame] = []

    def finish() -> PerfSample | None:
        if header is None:
            return None
        return PerfSample(
            header.comm, header.tid, header.time, header.event, header.period, tuple(frames)
        )

    for raw in lines:
        line = raw.rstrip("\r\n")
        if not line.strip():
            done = finish()
            if done is not None:
                yield done
            header, frames = None, []
            continue
        if line.startswith("#"):
            continue
        # Call-chain lines start with a tab. A header starts at column 0, or after the
        # spaces that right-align a short comm when there is no call chain.
        is_header = not line.startswith("\t") and (
            not line[0].isspace() or _HEADER.match(line.strip()) is not None
        )
        if not is_header:
            if header is not None:
                frames.append(_parse_frame(line))
            continue
        done = finish()
        if done is not None:
            yield done
        header, inline_frame = _parse_header(line.strip())
        frames = [inline_frame] if inline_frame is not None else []
    done = finish()
    if done is not None:
        yield done


# --------------------------------------------------------------------------- naming


def sanitize_frame(name: str) -> str:
    """A frame name safe in a folded line: no ``;``, no control characters, not empty."""
    name = _CONTROL.sub(" ", name.replace(";", ":"))
    return name if name.strip() else UNKNOWN


def _dso_label(dso: str) -> str:
    dso = dso.strip()
    if dso.endswith(" (deleted)"):
        dso = dso[: -len(" (deleted)")]
    if not dso or dso in (UNKNOWN, "unknown"):
        return ""
    if dso.startswith("[") and dso.endswith("]"):
        return dso
    return f"[{os.path.basename(dso) or dso}]"


def frame_name(frame: Frame) -> str:
    """The name a flamegraph shows for ``frame`` (see the module docstring)."""
    symbol = _OFFSET.sub("", frame.symbol.strip())
    if frame.resolved and symbol and symbol != UNKNOWN:
        name = symbol
    else:
        name = _dso_label(frame.dso) or UNKNOWN
        if frame.kernel and name == UNKNOWN:
            name = "[kernel.kallsyms]"
    if frame.kernel:
        name += KERNEL_SUFFIX
    elif frame.inlined:
        name += INLINE_SUFFIX
    return sanitize_frame(name)


def _stack_names(sample: PerfSample, include_comm: bool) -> list[str]:
    names: list[str] = []
    frames = list(sample.frames)
    # A broken frame-pointer chain ends (outermost) in addresses perf cannot place at all;
    # they say nothing and would split one caller into several roots.
    while len(frames) > 1 and not frames[-1].resolved and not _dso_label(frames[-1].dso):
        frames.pop()
    for frame in reversed(frames):
        name = frame_name(frame)
        # Unwinding through a stripped library repeats the same nameless frame.
        if names and name == names[-1] and not frame.resolved:
            continue
        names.append(name)
    if include_comm:
        names.insert(0, sanitize_frame(sample.comm or UNKNOWN))
    if not names:
        names.append(UNKNOWN)
    return names


def fold_samples(samples: Iterable[PerfSample], *, include_comm: bool = True) -> FoldedStacks:
    """Count ``samples`` per root-first stack (the thread's comm as the root frame)."""
    stacks: dict[str, int] = {}
    events: dict[str, int] = {}
    stripped: dict[str, int] = {}
    total = python = 0
    for sample in samples:
        total += 1
        key = ";".join(_stack_names(sample, include_comm))
        stacks[key] = stacks.get(key, 0) + 1
        events[sample.event] = events.get(sample.event, 0) + 1
        libraries = {
            _dso_label(f.dso)
            for f in sample.frames
            if not f.resolved and not f.kernel and _dso_label(f.dso)
        }
        for library in libraries:
            stripped[library.strip("[]")] = stripped.get(library.strip("[]"), 0) + 1
        if any(f.symbol.startswith(PYTHON_PREFIX) for f in sample.frames):
            python += 1
    return FoldedStacks(stacks, total, events, stripped, python)


def fold_perf_script(text: str | Iterable[str], *, include_comm: bool = True) -> FoldedStacks:
    """Parse and fold ``perf script`` text (:func:`parse_perf_script`, :func:`fold_samples`)."""
    return fold_samples(parse_perf_script(text), include_comm=include_comm)


# --------------------------------------------------------------------------- folded files


def _check_stack(stack: str) -> None:
    frames = stack.split(";")
    if not stack or any(not f for f in frames) or _CONTROL.search(stack):
        raise ValueError(
            f"invalid folded stack {stack!r}: frames must be non-empty and free of newlines "
            "and control characters (use sanitize_frame on each frame)"
        )


def _line(stack: str, count: int) -> str:
    return f"{stack} {count}\n"


def cap_folded(folded: Mapping[str, int], max_bytes: int) -> dict[str, int]:
    """``folded`` cut to at most ``max_bytes`` as a file: rarest stacks go first.

    The dropped stacks' samples are merged into one ``[truncated]`` stack so the
    total is kept. Equally rare stacks go in name order, so the result does not
    depend on the mapping's order.
    """
    kept = {k: v for k, v in folded.items() if v > 0}
    sizes = {k: len(_line(k, v).encode()) for k, v in kept.items()}
    size = sum(sizes.values())
    if size <= max_bytes:
        return kept
    dropped = kept.pop(TRUNCATED, 0)
    size -= sizes.pop(TRUNCATED, 0)

    def fits() -> bool:
        return size + len(_line(TRUNCATED, dropped).encode()) <= max_bytes

    for stack, count in sorted(kept.items(), key=lambda kv: (kv[1], kv[0])):
        if dropped and fits():
            break
        del kept[stack]
        size -= sizes[stack]
        dropped += count
    if not fits():
        raise ValueError(f"max_bytes={max_bytes} cannot hold even the {TRUNCATED} line")
    kept[TRUNCATED] = dropped
    return kept


def format_folded(folded: Mapping[str, int], *, max_bytes: int | None = None) -> str:
    """Folded text, one ``stack count`` a line, sorted by stack; zero counts left out."""
    for stack, count in folded.items():
        _check_stack(stack)
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"count of {stack!r} must be a non-negative int; got {count!r}")
    data = cap_folded(folded, max_bytes) if max_bytes is not None else folded
    return "".join(_line(k, data[k]) for k in sorted(data) if data[k] > 0)


def parse_folded(text: str, *, source: str = "<folded>") -> dict[str, int]:
    """Folded text -> {stack: count}; repeated stacks add up, blank lines are skipped."""
    out: dict[str, int] = {}
    for number, raw in enumerate(text.split("\n"), 1):
        line = raw[:-1] if raw.endswith("\r") else raw
        if not line.strip():
            continue
        stack, sep, count_text = line.rpartition(" ")
        try:
            count = int(count_text)
        except ValueError:
            count = -1
        if not sep or not stack or count < 0:
            raise ValueError(
                f"{source}:{number}: not a folded line (want 'frame;frame;... count'): {line!r}"
            )
        out[stack] = out.get(stack, 0) + count
    return out


def read_folded(path: str | os.PathLike[str]) -> dict[str, int]:
    """Read a folded file written by :func:`write_folded`, flamegraph.pl's tools or perf."""
    return parse_folded(Path(path).read_text(encoding="utf-8"), source=os.fspath(path))


def write_folded(
    path: str | os.PathLike[str],
    folded: Mapping[str, int],
    *,
    max_bytes: int | None = DEFAULT_MAX_BYTES,
) -> Path:
    """Write ``folded`` sorted (deterministic) and atomically, capped at ``max_bytes``."""
    target = Path(path)
    text = format_folded(folded, max_bytes=max_bytes)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "x", encoding="utf-8", newline="\n") as handle:  # honours the umask
            handle.write(text)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target
