"""Native frames folded below ONNX Runtime's operators: ``model;op type;node;frames``.

Owns:

* :func:`node_windows` - when each node of a profiled session ran, and on which thread,
  from ONNX Runtime's profiler trace, on the clock of ``perf record -k monotonic``.
* :func:`kernel_frames` - the frames of one perf sample that are the kernel's own work:
  from the operator's ``...::Compute`` frame (or, where ONNX Runtime has no symbols,
  from its library's frame) to the leaf.
* :func:`attribute` - each perf sample that fell inside a node's run (on the node's
  thread, or on an ONNX Runtime pool thread meanwhile), counted per node and frames.
* :func:`fold_below_operators` - the operator view (µs per node, from the operator
  table) with each node's time split over the frames seen under it, in proportion to
  their samples, so every node keeps its width; :func:`symbols_note` - one line when
  the frames under the operators are mostly a library without symbols, and what stands
  in for them.
* :func:`native_operator_view` - the pass: for the sessions a workload runs, a second
  session with the profiler on runs under ``perf record`` for a window; the two
  timelines are joined.

Must not: count, judge, draw, or run perf other than through :mod:`.record`.
"""

from __future__ import annotations

import bisect
import json
import math
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .fold import UNKNOWN, Frame, PerfSample, frame_name, parse_perf_script, sanitize_frame

__all__ = [
    "NodeWindow",
    "attribute",
    "fold_below_operators",
    "kernel_frames",
    "native_operator_view",
    "node_windows",
    "symbols_note",
]

KERNEL_SUFFIX = "_kernel_time"
# ``onnxruntime::MatMul<float>::Compute(onnxruntime::OpKernelContext*) const``: where an
# operator's own work starts in a symbolised ONNX Runtime
_COMPUTE = re.compile(r"::Compute(?:Impl)?(?:\(|$| const)")
#: the frames under the operators this much in a library without symbols say so
UNSYMBOLISED_SHARE = 0.5


@dataclass(frozen=True)
class NodeWindow:
    """One run of one node: ``begin_ns``/``end_ns`` on the perf clock, ``tid`` its thread."""

    model: str
    op_type: str
    node: str
    tid: int
    begin_ns: int
    end_ns: int

    @property
    def key(self) -> str:
        """``"op_type;node"``, as in the operator view's frames."""
        return f"{sanitize_frame(self.op_type)};{sanitize_frame(self.node)}"


def node_windows(
    events: Iterable[Mapping[str, Any]], *, start_ns: int, model: str
) -> list[NodeWindow]:
    """The kernel events of an ONNX Runtime trace as windows; ``start_ns`` is the
    profiler's start on the perf clock (its ``ts``/``dur`` count µs from there)."""
    out = []
    for event in events:
        name = str(event.get("name", ""))
        args = event.get("args") or {}
        if event.get("cat") != "Node" or not name.endswith(KERNEL_SUFFIX):
            continue
        try:
            ts_ns, dur_ns = float(event["ts"]) * 1000, float(event["dur"]) * 1000
            tid = int(event["tid"])
        except (KeyError, TypeError, ValueError, OverflowError):
            continue
        if not (math.isfinite(ts_ns) and math.isfinite(dur_ns)) or dur_ns < 0:
            continue  # in ns, so a µs figure near the float limit is dropped too
        begin = start_ns + round(ts_ns)
        out.append(
            NodeWindow(
                model,
                str(args.get("op_name") or "[unknown op]"),
                name[: -len(KERNEL_SUFFIX)] or "[unnamed node]",
                tid,
                begin,
                begin + round(dur_ns),
            )
        )
    return sorted(out, key=lambda w: (w.begin_ns, w.end_ns))


def _in_ort(frame: Frame) -> bool:
    return "onnxruntime" in os.path.basename(frame.dso)


def kernel_frames(sample: PerfSample) -> list[str]:
    """Root-first names of the frames below the operator in ``sample``.

    From the outermost resolved ``...::Compute`` frame when ONNX Runtime has symbols,
    else from the outermost frame in an ONNX Runtime library (``[libonnxruntime.so...]``,
    its frames without symbols collapsed into one), else (frame-pointer unwinding
    through a stripped library stops early) every frame perf saw, less the unplaceable
    garbage at the outer end. Kernel frames keep their ``_[k]`` suffix.
    """
    frames = list(reversed(sample.frames))  # root first
    if not frames:
        return []
    start = next(
        (i for i, f in enumerate(frames) if f.resolved and _COMPUTE.search(f.symbol)), None
    )
    if start is None:
        start = next((i for i, f in enumerate(frames) if _in_ort(f)), None)
    if start is None:  # unwinding stopped short of ONNX Runtime: what perf did see
        start = 0
        while start < len(frames) - 1 and frame_name(frames[start]) == UNKNOWN:
            start += 1  # a broken frame-pointer chain's garbage at the outer end
    names: list[str] = []
    for frame in frames[start:]:
        name = frame_name(frame)
        if names and name == names[-1] and not frame.resolved:
            continue  # a stripped library unwinds as the same nameless frame again
        names.append(name)
    return names


def attribute(
    samples: Iterable[PerfSample], windows: Sequence[NodeWindow]
) -> dict[tuple[str, str], dict[str, int]]:
    """``{(model, "op_type;node"): {"frame;...;leaf": samples}}`` for the samples that fell
    inside a node's run: on the node's own thread, or on another thread whose stack is in
    ONNX Runtime (an intra-op pool thread working for it). Samples outside every window
    (Python, the feeds, the idle pool) are left out."""
    begins = [w.begin_ns for w in windows]
    out: dict[tuple[str, str], dict[str, int]] = {}
    for sample in samples:
        if sample.time is None or not sample.frames:
            continue
        at = round(sample.time * 1e9)
        index = bisect.bisect_right(begins, at)
        hits = [w for w in windows[max(0, index - 64) : index] if w.begin_ns <= at <= w.end_ns]
        if not hits:
            continue
        own = [w for w in hits if w.tid == sample.tid]
        if own:
            window = own[-1]
        elif any(_in_ort(f) for f in sample.frames):
            window = hits[-1]
        else:
            continue
        frames = kernel_frames(sample)
        if not frames:
            continue
        per_node = out.setdefault((window.model, window.key), {})
        stack = ";".join(frames)
        per_node[stack] = per_node.get(stack, 0) + 1
    return out


def fold_below_operators(
    op_stacks: Mapping[str, float], attributed: Mapping[tuple[str, str], Mapping[str, int]]
) -> dict[str, int]:
    """The operator view with native frames below each node that has samples.

    A node's µs (from the operator table) are split over its frames in proportion to
    their samples (rounded; what rounding leaves stays on the node itself), so each node,
    op type and model keeps the width it has without native frames. Nodes are matched by
    model and ``op_type;node``; when the view has one model, by ``op_type;node`` alone.
    """
    models = {key.split(";", 1)[0] for key in op_stacks}
    by_node: dict[str, Mapping[str, int]] = {}
    if len(models) == 1:
        for (_, node_key), node_frames in attributed.items():
            by_node.setdefault(node_key, node_frames)
    out: dict[str, int] = {}
    for key, value in op_stacks.items():
        total = round(value)
        model, _, node_key = key.partition(";")
        frames = attributed.get((model, node_key)) or by_node.get(node_key)
        samples = sum(frames.values()) if frames else 0
        if frames is None or not samples or total <= 0:
            if total > 0:
                out[key] = out.get(key, 0) + total
            continue
        given = 0
        for stack, count in sorted(frames.items(), key=lambda kv: (-kv[1], kv[0])):
            share = round(total * count / samples)
            if share <= 0:
                continue
            share = min(share, total - given)
            if share <= 0:
                break
            out[f"{key};{stack}"] = out.get(f"{key};{stack}", 0) + share
            given += share
        if total - given > 0:
            out[key] = out.get(key, 0) + total - given
    return out


def _names_ort(stack: str) -> bool:
    """Whether a folded stack names any ONNX Runtime function (its C++ namespace or MLAS)."""
    return any(f.startswith(("onnxruntime::", "Mlas")) for f in stack.split(";"))


def symbols_note(attributed: Mapping[tuple[str, str], Mapping[str, int]]) -> str | None:
    """One line when most samples under the operators name no ONNX Runtime function
    (a stripped library: frame-pointer unwinding shows its frames as ``[library]`` and
    often stops inside it), and what the view shows instead; None otherwise."""
    total = unnamed = 0
    libraries: dict[str, int] = {}
    for frames in attributed.values():
        for stack, count in frames.items():
            total += count
            if _names_ort(stack):
                continue
            unnamed += count
            for frame in stack.split(";"):
                if frame.startswith("[") and "onnxruntime" in frame:
                    libraries[frame.strip("[]")] = libraries.get(frame.strip("[]"), 0) + count
    if not total or unnamed < UNSYMBOLISED_SHARE * total:
        return None
    library = (
        max(libraries.items(), key=lambda kv: (kv[1], kv[0]))[0]
        if libraries
        else "ONNX Runtime's library"
    )
    return (
        f"native frames under the operators were not symbolised: {library} has no "
        f"symbols (stripped), so {unnamed / total:.0%} of the {total:,} samples inside "
        "operators name no ONNX Runtime function; each node's time is ONNX Runtime's "
        "profiler's, and only the frames perf could name (libc, libstdc++, the kernel) "
        "are folded below it"
    )


# --------------------------------------------------------------------------- the pass


def _load_events(path: str) -> list[Mapping[str, Any]]:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):  # a trace cut short reads as no events, said below
        return []
    return [e for e in data if isinstance(e, Mapping)] if isinstance(data, list) else []


def native_operator_view(
    call: Callable[[], object],
    op_stacks: Mapping[str, float],
    *,
    seconds: float = 1.0,
    call_graph: str = "fp",
    event: str | None = None,
    perf: str | None = None,
    frequency: int = 999,
    found: Any = None,
) -> tuple[dict[str, int], str | None]:
    """``op_stacks`` with native frames folded below each node, and a note (or None).

    The sessions ``call`` runs (``onnxrt.sessions.find_session_calls``, or ``found``: a
    ``SessionSearch``) are opened a second time with ONNX Runtime's profiler on and run
    with their feeds for ``seconds`` under ``perf record -k monotonic``; each sample is
    placed in the node that was running when it was taken (:func:`attribute`). The note
    says why nothing was folded (``not available: ...``) or that the frames were not
    symbolised (:func:`symbols_note`); the view itself never loses a node's time.
    """
    from ...onnxrt.sessions import MAX_SESSIONS, find_session_calls, profiled_replica
    from .record import NOT_INSTALLED, sample_native

    if shutil.which(perf or "perf") is None:
        return dict(_rounded(op_stacks)), NOT_INSTALLED
    search = found if found is not None else find_session_calls(call)
    if not search.sessions:
        return dict(_rounded(op_stacks)), search.reason
    texts: list[str] = []
    with tempfile.TemporaryDirectory(prefix="inferperf-opnative-") as work:
        replicas = []
        try:
            for found_call in search.sessions[:MAX_SESSIONS]:
                replicas.append((found_call, profiled_replica(found_call, work)))
        except Exception as exc:  # a second session can fail where the first did not
            return dict(_rounded(op_stacks)), f"not available: a second session failed: {exc}"

        def run_all() -> None:
            for found_call, session in replicas:
                for feed in found_call.replayed:  # every feed of one call, in order
                    session.run(None, feed)

        run_all()  # warm-up outside the window
        result = sample_native(
            run_all,
            seconds=seconds,
            call_graph=call_graph,
            event=event,
            workdir=work,
            perf=perf,
            frequency=frequency,
            python_frames=False,
            clock="monotonic",
            on_script=texts.append,
        )
        windows: list[NodeWindow] = []
        offset = time.time_ns() - time.monotonic_ns()  # ORT's start is on the wall clock
        for found_call, session in replicas:
            start = session.get_profiling_start_time_ns() - offset
            windows += node_windows(
                _load_events(session.end_profiling()), start_ns=start, model=found_call.label
            )
    if result.reason or not texts:
        return dict(_rounded(op_stacks)), result.reason or "not available: perf printed nothing"
    if not windows:
        return dict(_rounded(op_stacks)), "not available: ONNX Runtime's trace had no node events"
    windows.sort(key=lambda w: (w.begin_ns, w.end_ns))
    attributed = attribute(parse_perf_script(texts[0]), windows)
    if not attributed:
        return dict(_rounded(op_stacks)), (
            f"not available: none of perf's {result.samples:,} samples fell inside an "
            "operator's run (the trace and perf's clock did not line up)"
        )
    return fold_below_operators(op_stacks, attributed), symbols_note(attributed)


def _rounded(op_stacks: Mapping[str, float]) -> Iterable[tuple[str, int]]:
    return ((k, round(v)) for k, v in op_stacks.items() if round(v) > 0)
