"""The simulate backend's parent side: a region counted by callgrind, as a Profile.

Owns: :func:`profile_via_child` (called by the simulate measurer inside the test
body): the native run of the workload for latency and memory, starting
``valgrind --tool=callgrind ... python -m pytest <nodeid>`` as a child for one
test (or asking the shared child, :mod:`.shared`), reading one callgrind
dump per callback (:mod:`.callgrind`) and turning them into a Profile with
backend ``simulate``; the honesty check (did the child do the work the native run
did: result digests and ONNX Runtime session runs per call), the run-to-run noise
of a second run and the resolution that noise allows.

How a region is simulated is one value, :class:`SimulateOptions`.

Must not: judge (budgets, baselines) or render; run in the child (that is
:mod:`.child`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.profile import LatencyStats, MemoryStats, Profile, Repeat, Steadiness
from ...core.result_digest import result_digest
from ...pmu.base import Count, CounterSample
from ...pmu.events import DEFAULT_EVENTS, check_names
from ..child_process import start_env
from ..runner import Runner, RunSettings, stamped_profile
from . import noise as simulate_noise
from .callgrind import read_dumps
from .child import session_of, session_runs
from .child_start import ChildStart, handoff, write_start
from .cpu_features import features_text, hidden_features, seen_features
from .events import event_statuses, logical_counts
from .protocol import (
    BACKEND,
    CHILD_ENV,
    CLIENT_REQUEST,
    DEFAULT_CALLS,
    HASH_SEED,
    ChildRecord,
    ChildRun,
    PlanStep,
    SimulateError,
    SimulateUnavailable,
    child_env,
    child_repeats,
    tail,
)
from .valgrind import (
    BLOCK_PLUGINS,
    MODE_TEXT,
    OUT_STEM,
    REGION_FUNCTION,
    available,
    check_mode,
    child_command,
    valgrind_version,
)

if TYPE_CHECKING:
    from .shared import SharedChildren

DEFAULT_TIMEOUT = 600.0  # seconds for the whole child run
#: Relative spread of the repeats' instructions per call above which the Profile warns.
REPEAT_SPREAD_WARN = 0.01
#: How the summary names the switch that turned instrumentation on after the warm-up.
SWITCHED_BY = {CLIENT_REQUEST: "a valgrind client request", "vgdb": "vgdb"}


@dataclass(frozen=True)
class SimulateOptions:
    """How a region is simulated.

    ``rootdir``: the child's pytest rootdir; ``cwd``: the folder it starts in (default:
    ``rootdir``). ``settings``: the runner's settings
    (the native run's, and the child's warm-up). ``repeat`` measured repeats (default:
    ``settings.repeat`` capped at :data:`DEFAULT_REPEATS`) of ``calls`` calls each.
    ``timeout``: seconds for the whole child run. ``python``: the child's interpreter
    (default: this one). ``extra_args`` / ``env`` / ``block_plugins``: the child's
    pytest command line and environment. ``instrument_from_start``: no vgdb switch
    (instrumentation on from the start). ``workdir`` keeps the callgrind files there
    (default: a temporary folder, removed). ``mode``: "full" (cache and branch
    simulation) or "instructions" (instructions only, faster; simulate_events.mode_for
    picks it from the metrics a test needs); a shared child simulates what it was
    started with. ``run_twice``: run the region again in a child of its own and record
    how far the two runs' instructions per call differ (``settings.simulation.run_to_run``),
    the run-to-run noise a comparison with this profile as the baseline then allows for.
    """

    rootdir: Path
    settings: RunSettings = field(default_factory=RunSettings)
    events: tuple[str, ...] = DEFAULT_EVENTS
    timeout: float = DEFAULT_TIMEOUT
    python: str | None = None
    repeat: int | None = None
    calls: int = DEFAULT_CALLS
    extra_args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    block_plugins: tuple[str, ...] = BLOCK_PLUGINS
    instrument_from_start: bool = False
    workdir: Path | None = None
    mode: str = "full"
    run_twice: bool = False
    cwd: Path | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "rootdir", Path(self.rootdir))
        if self.cwd is not None:
            object.__setattr__(self, "cwd", Path(self.cwd))
        if self.workdir is not None:
            object.__setattr__(self, "workdir", Path(self.workdir))
        object.__setattr__(self, "events", tuple(check_names(self.events)))
        object.__setattr__(self, "extra_args", tuple(self.extra_args))
        object.__setattr__(self, "block_plugins", tuple(self.block_plugins))
        check_mode(self.mode)
        repeats = self.repeats
        if not isinstance(repeats, int) or isinstance(repeats, bool) or repeats < 1:
            raise ValueError(
                f"repeat={self.repeat!r}: the number of simulated repeats must be >= 1"
            )
        calls = self.calls
        if not isinstance(calls, int) or isinstance(calls, bool) or calls < 1:
            raise ValueError(f"calls={calls!r}: calls per simulated repeat must be an integer >= 1")

    @property
    def repeats(self) -> int:
        if self.repeat is not None:
            return self.repeat
        return child_repeats(self.settings.repeat)


def run_child(
    nodeid: str,
    variant: str,
    options: SimulateOptions,
    workdir: Path,
    *,
    instrument_from_start: bool,
) -> ChildRun:
    """One valgrind child for test ``nodeid``, run to its end; its record and dumps."""
    built = child_command(
        [nodeid],
        rootdir=options.rootdir,
        python=options.python or sys.executable,
        instrument_from_start=instrument_from_start,
        extra_args=options.extra_args,
        block_plugins=options.block_plugins,
        workdir=workdir,
        mode=options.mode,
    )
    command, from_start = built.command, built.from_start
    result = workdir / "child.json"
    request = replace(built.request, repeats=options.repeats, calls=options.calls)
    timeout = options.timeout
    start_file = workdir / "start.json"
    env = child_env(result, variant, request, options.env)
    env.update(start_env(str(start_file)))
    begin = time.monotonic()
    proc = subprocess.Popen(
        command,
        cwd=options.cwd or options.rootdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    try:
        # compiled while valgrind starts Python in the child
        write_start(start_file, ChildStart(tuple(built.pytest_args), bytecode=handoff().table()))
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the child's own session: valgrind + vgdb
        output, _ = proc.communicate()
        raise SimulateError(
            f"{nodeid}: the simulation child ran past timeout={timeout:g}s under valgrind "
            f"(instrumentation {'from the start' if from_start else 'after warm-up'}). "
            f"Raise the timeout or make the workload smaller.\n{tail(output)}"
        ) from None
    except BaseException:  # Ctrl-C: the child has its own session, so it got no SIGINT
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    wall = time.monotonic() - begin
    log = workdir / "valgrind.log"
    if not result.is_file():
        vg_log = log.read_text(errors="replace") if log.is_file() else ""
        raise SimulateError(
            f"{nodeid}: the simulation child (exit status {proc.returncode}) wrote no result: "
            f"did the test call pmu_profile{f' with name={variant!r}' if variant else ''}, "
            f"and does the plugin call child_measure in the child?\n"
            f"command: {built.shown()}\n--- child output ---\n{tail(output)}\n"
            f"--- valgrind log ---\n{tail(vg_log, 10)}"
        )
    return ChildRun(
        record=ChildRecord.from_json(result.read_text()),
        dumps=read_dumps(workdir, proc.pid, OUT_STEM),
        returncode=proc.returncode,
        output=output,
        wall_s=wall,
        valgrind_options=built.valgrind_options,
        cache_notes=built.cache_notes,
        mode=options.mode,
    )


def profile_via_child(
    nodeid: str,
    variant: str | None,
    options: SimulateOptions,
    *,
    native: Callable[[], Any] | None = None,
    session: Mapping[str, Any] | None = None,
    name: str | None = None,
    shared: SharedChildren | None = None,
    timed: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext,
) -> Profile:
    """Count test ``nodeid``'s ``pmu_profile(..., name=variant)`` region under callgrind.

    Runs ``valgrind --tool=callgrind ... python -m pytest <nodeid>`` in
    ``options.rootdir``; the child measures (simulate_child.child_measure) and
    callgrind dumps once per repeat. ``native``, the workload as a no-argument
    callable, is first run here with the ``none`` backend: the latency, memory,
    steady state and stage timings of the Profile come from that native run
    (valgrind runs the child hundreds of times slower than native even where it
    does not instrument). Without it they come from the child's warm-up under
    valgrind, and the Profile says so. ``session``: the ONNX Runtime session facts
    (found from ``native`` when it is a bound ``session.run`` or a partial of one).
    ``shared``: the session's :class:`~.shared.SharedChildren`, one of
    which runs this test among others; where they cannot serve this region, a child
    for this test alone does. ``timed``: the context the native run is timed in (the
    plugin's stops any shared children meanwhile).

    Raises :class:`SimulateUnavailable` without valgrind, :class:`SimulateError` when
    the child fails or its dumps do not match the plan.
    """
    reason = available()
    if reason is not None:
        raise SimulateUnavailable(reason)
    settings = options.settings
    variant = variant or ""
    label = name or variant or nodeid.rsplit("::", 1)[-1]
    native_profile, native_digest, native_runs = None, None, None
    if native is not None:
        native_runner = Runner(settings, backend="none", events=())
        facts = dict(session) if session is not None else session_of(native)
        with timed():
            native_profile = native_runner.run(native, name=label, session=facts)
        native_digest = result_digest(native_runner.last_result)
        native_runs, _ = session_runs(native)
    keep = options.workdir is not None
    folder = options.workdir or Path(tempfile.mkdtemp(prefix="inferperf-simulate-"))
    folder.mkdir(parents=True, exist_ok=True)
    # Nothing from here on is timed: shared children go on (even inside a paused body).
    going_on = shared.running() if shared is not None else contextlib.nullcontext()
    with going_on:
        try:
            run = None
            if shared is not None and not options.instrument_from_start:
                run = shared.measure(
                    nodeid,
                    variant,
                    repeats=options.repeats,
                    calls=options.calls,
                    timeout=options.timeout,
                )
            if run is None:
                run = run_child(
                    nodeid,
                    variant,
                    options,
                    folder,
                    instrument_from_start=options.instrument_from_start,
                )
            retried = None
            if not run.record.instrumented:
                retried = (run.record.instrumentation and run.record.instrumentation.detail) or ""
                if shared is not None:
                    shared.close(f"vgdb could not switch instrumentation on: {retried}")
                for stale in folder.glob(f"{OUT_STEM}.*"):
                    stale.unlink()
                run = run_child(nodeid, variant, options, folder, instrument_from_start=True)
            result = build_profile(label, nodeid, options, run, native_profile, session, retried)
            if options.run_twice:
                again = folder / "run-2"
                again.mkdir()
                second = run_child(nodeid, variant, options, again, instrument_from_start=False)
                other = build_profile(label, nodeid, options, second, native_profile, session, None)
                result = with_run_to_run(result, other, second.wall_s)
            child_features = run.record.cpu_features
            hidden = hidden_features(
                seen_features(import_numpy=True) if child_features is not None else None,
                child_features,
            )
            result = with_honesty_warning(result, native_digest, run.record.result_digest, hidden)
            result = with_session_runs_warning(result, native_runs, run.record.session_runs)
            return with_resolution(result)
        finally:
            if not keep:
                shutil.rmtree(folder, ignore_errors=True)


def check_run(nodeid: str, run: ChildRun) -> list[PlanStep]:
    """The child's plan, once its dumps match it one to one; else why not (SimulateError)."""
    record = run.record
    if record.error is not None:
        raise SimulateError(
            f"{nodeid}: the workload raised in the simulation child: "
            f"{record.error}\n{tail(run.output)}"
        )
    plan = record.plan
    if len(run.dumps) != len(plan):
        why = (
            f"callgrind never ran {REGION_FUNCTION} instrumented (is CPython's _ctypes stripped?)"
            if not run.dumps
            else f"each repeat must be exactly one ctypes callback, and a workload that runs "
            f"ctypes callbacks itself ({REGION_FUNCTION}) splits the region"
        )
        raise SimulateError(
            f"{nodeid}: callgrind wrote {len(run.dumps)} dumps for "
            f"{len(plan)} callback regions: {why}\n{tail(run.output)}"
        )
    repeats = [d for d, p in zip(run.dumps, plan, strict=True) if p.kind == "repeat"]
    if not repeats or all(d.events.get("Ir", 0) == 0 for d in repeats):
        raise SimulateError(
            f"{nodeid}: callgrind counted no instructions in the measured callbacks: "
            f"instrumentation never came on, or {REGION_FUNCTION} was not found "
            f"(is CPython's _ctypes stripped?)"
        )
    return plan


def _with_facts(profile: Profile, **facts: Any) -> Profile:
    simulation = {**(profile.settings.get("simulation") or {}), **facts}
    return profile.with_(settings={**profile.settings, "simulation": simulation})


def _with_warning(profile: Profile, warning: str, **facts: Any) -> Profile:
    warnings = (profile.settings.get("simulation") or {}).get("warnings", ())
    return _with_facts(profile, warnings=[*warnings, warning], **facts)


def with_honesty_warning(
    profile: Profile, native: str | None, child: str | None, hidden: Sequence[str] = ()
) -> Profile:
    """``profile`` with a warning when the child returned other results than the native run,
    and ``emulated_cpu_lacks`` when valgrind's CPU hid features this one has (``hidden``):
    then other kernels ran in the child, which explains different results."""
    if hidden:
        profile = _with_facts(profile, emulated_cpu_lacks=list(hidden))
    if native is None or child is None or native == child:
        return profile
    if hidden:
        why = (
            "libraries that choose kernels by CPU feature (ONNX Runtime, numpy, BLAS) chose "
            f"others for valgrind's emulated CPU, which lacks {features_text(hidden, 2)} of "
            "this one: the simulated counts are of those kernels, not of the ones this "
            "machine runs natively"
        )
    else:
        why = (
            "it did different work there (pid-, time- or environment-dependent code?), so "
            "the simulated counts may not describe this run"
        )
    return _with_warning(
        profile,
        "the workload returned different results in the simulation child than in the native "
        f"run (digest {child} vs {native}): {why}",
        result_digests={"native": native, "child": child},
    )


def with_session_runs_warning(
    profile: Profile, native: Mapping[str, int] | None, child: Mapping[str, int] | None
) -> Profile:
    """``profile`` with a warning when one call of the workload ran its ONNX Runtime
    sessions another number of times in the child than in the native run (the results
    may still agree: a loop until a deadline, a retry, a cache filled only here)."""
    if native is None or child is None or dict(native) == dict(child):
        return profile
    names = sorted(set(native) | set(child))
    text = ", ".join(f"{n}: {child.get(n, 0)} vs {native.get(n, 0)}" for n in names)
    return _with_warning(
        profile,
        "the workload ran its ONNX Runtime sessions a different number of times per call in "
        f"the simulation child than in the native run ({text}): it did different work there "
        "(time-, pid- or environment-dependent code?), so the simulated counts may not "
        "describe this run",
        session_runs={"native": dict(native), "child": dict(child)},
    )


def build_profile(
    name: str,
    nodeid: str,
    options: SimulateOptions,
    run: ChildRun,
    native: Profile | None,
    session: Mapping[str, Any] | None,
    retried: str | None,
) -> Profile:
    """The simulated Profile of one child run (and the native run's timings, if any)."""
    events, settings = options.events, options.settings
    plan = check_run(nodeid, run)
    record = run.record
    pairs = list(zip(run.dumps, plan, strict=True))
    raw_names = list(run.dumps[0].events)
    statuses = event_statuses(events, raw_names, run.mode)
    counted = [e for e in events if statuses[e].available]
    calls = record.calls
    native_per_call = native.latency.p50_ms * 1e6 if native is not None else None
    repeats = _repeats(pairs, counted, calls, native_per_call)
    overhead_dump = next(d for d, p in pairs if p.kind == "overhead")
    overhead_values = logical_counts(overhead_dump.events)
    overhead = {e: float(overhead_values[e]) for e in counted}
    spread = _instructions_spread(repeats)
    warnings = session_warnings(record, session or (native.session if native else None))
    if spread is not None and spread > REPEAT_SPREAD_WARN:
        warnings.append(
            f"the repeats' instruction counts differ by {spread:.1%}: the workload "
            "did different work in some repeat (time- or state-dependent code, "
            "e.g. periodic bookkeeping); compare the smallest or the median repeat, "
            "or raise calls per repeat"
        )
    simulation = _simulation_record(run, plan, pairs, spread, native_per_call, warnings, retried)
    latency, memory, steady, stages, latency_source = _timings(
        native, record.warmup_ns, repeats, settings
    )
    run_settings = {
        **settings.to_dict(),
        "repeat": len(repeats),
        "repeat_requested": settings.repeat,
        "calls_per_repeat": calls,
        "latency_source": latency_source,
        "simulation": simulation,
    }
    return stamped_profile(
        name=name,
        backend=BACKEND,
        events=tuple(statuses[e] for e in events),
        repeats=tuple(repeats),
        latency=latency,
        memory=memory,
        steady=steady,
        settings=run_settings,
        session=session or (native.session if native else None) or record.session,
        stages=stages,
        overhead=overhead,
        outputs_ok=record.outputs_ok and (native.outputs_ok if native else True),
        conditions=native.conditions if native is not None else None,  # timings' machine state
    )


def _repeats(
    pairs: Sequence[tuple[Any, Any]],
    counted: Sequence[str],
    calls: int,
    native_per_call: float | None,
) -> list[Repeat]:
    """One Repeat per repeat dump: its logical counts, and its wall time as the native
    median latency times the calls (valgrind's own wall time where there is none)."""
    repeats = []
    for dump, step in pairs:
        if step.kind != "repeat":
            continue
        values = logical_counts(dump.events)
        wall = step.wall_ns
        counts = {e: Count(float(values[e]), int(values[e]), wall, wall) for e in counted}
        estimate = round(native_per_call * calls) if native_per_call else wall
        repeats.append(Repeat(calls, estimate, CounterSample(counts=counts)))
    return repeats


def _instructions_spread(repeats: Sequence[Repeat]) -> float | None:
    """(max - min) / min of the repeats' instructions per call; None without counts."""
    per_call: list[float] = [
        r.sample.counts["instructions"].value / r.calls
        for r in repeats
        if "instructions" in r.sample.counts and r.calls
    ]
    if per_call and min(per_call) > 0:
        return (max(per_call) - min(per_call)) / min(per_call)
    return None


def _simulation_record(
    run: ChildRun,
    plan: Sequence[Any],
    pairs: Sequence[tuple[Any, Any]],
    spread: float | None,
    native_per_call: float | None,
    warnings: list[str],
    retried: str | None,
) -> dict[str, Any]:
    """``settings.simulation``: how the region was simulated, what valgrind saw, and
    how its timings compare with the native run's (keys without a value left out)."""
    record = run.record
    warm = record.warmup_ns
    vg_walls = [p.wall_ns for _, p in pairs if p.kind == "repeat"]
    vg_per_call = statistics.median(vg_walls) / record.calls
    switched = record.instrumentation.mode if record.instrumentation else None
    simulation: dict[str, Any] = {
        "tool": "callgrind",
        "mode": run.mode,
        "mode_text": MODE_TEXT[run.mode],
        "valgrind": valgrind_version(shutil.which("valgrind") or "valgrind"),
        "options": run.valgrind_options,
        "caches": dict(run.dumps[0].caches),
        "cache_source": run.cache_notes,
        "region": (
            f"one ctypes callback per repeat (libc qsort compare), callgrind "
            f"--toggle-collect={REGION_FUNCTION} --dump-after={REGION_FUNCTION}"
        ),
        "instrumentation": (
            f"off during the warm-up, switched on by {SWITCHED_BY[switched]} after it"
            if switched in SWITCHED_BY
            else "on from the start (--instr-atstart=yes)"
        ),
        "counted_threads": "the thread that runs the callback only",
        "threads": len(record.threads) or None,
        "other_threads_cpu_ns": record.other_threads_cpu_ns,
        "child_warmup_calls": len(warm),
        "discarded_callbacks": sum(1 for p in plan if p.kind == "warmup"),
        "python_hash_seed": HASH_SEED,
        "env": dict(CHILD_ENV),
        "raw": [dict(d.events) for d, p in pairs if p.kind == "repeat"],
        "instructions_spread": spread,
        "valgrind_repeat_wall_ns": vg_walls,
        "valgrind_ns_per_call": vg_per_call,
        "native_ns_per_call": native_per_call,
        "slowdown_vs_native": (vg_per_call / native_per_call if native_per_call else None),
        "uninstrumented_slowdown_vs_native": (
            statistics.median(warm[-3:]) / native_per_call if warm and native_per_call else None
        ),
        "child_wall_s": round(run.wall_s, 2),
        "child": run.child,
        "child_exit_status": run.returncode,
        "repeat_wall_ns": (
            "calls x native median latency" if native_per_call else "wall time under valgrind"
        ),
        "warnings": warnings,
    }
    if retried is not None:
        simulation["instrumentation"] += " (vgdb could not switch it on after the warm-up)"
        simulation["vgdb_failure"] = retried
    for key in [k for k, v in simulation.items() if v is None]:
        del simulation[key]
    return simulation


def _timings(
    native: Profile | None,
    warm: Sequence[int],
    repeats: Sequence[Repeat],
    settings: Any,
) -> tuple[LatencyStats, MemoryStats, Steadiness, tuple, str]:
    """Latency, memory, steadiness and stages: the native run's, else the child's
    uninstrumented warm-up under valgrind (said in the returned latency source)."""
    if native is not None:
        return (
            native.latency,
            native.memory,
            native.steady,
            native.stages,
            "native run in the pytest process (backend none), before the simulation child",
        )
    latency = LatencyStats.from_durations_ns(list(warm) or [repeats[0].wall_ns])
    memory = MemoryStats(
        None, "none", "not measured: the simulate backend was given no native callable"
    )
    steady = Steadiness(False, len(warm), -1.0, settings.steady_threshold, settings.steady_window)
    return (
        latency,
        memory,
        steady,
        (),
        "warm-up in the simulation child under valgrind without instrumentation (NOT "
        "native: valgrind runs it several times slower)",
    )


def _median_per_call(profile: Profile) -> float | None:
    values = simulate_noise.per_call_instructions(profile)
    return statistics.median(values) if values else None


def with_run_to_run(profile: Profile, other: Profile, wall_s: float | None = None) -> Profile:
    """``profile`` with the relative difference of its instructions per call from
    ``other``, a second run of the same region (``settings.simulation.run_to_run``)."""
    first, second = _median_per_call(profile), _median_per_call(other)
    if not first or second is None:
        return profile
    entry: dict[str, Any] = {
        simulate_noise.METRIC: (second - first) / first,
        "runs": [first, second],
    }
    if wall_s is not None:
        entry["second_run_wall_s"] = round(wall_s, 2)
    sim = {**profile.settings.get("simulation", {}), "run_to_run": entry}
    return profile.with_(settings={**profile.settings, "simulation": sim})


def with_resolution(profile: Profile) -> Profile:
    """``profile`` with the smallest instructions-per-call change it can separate
    (``settings.simulation.resolution``, from its own noise: simulate_noise)."""
    value = simulate_noise.resolution(profile)
    if value is None:
        return profile
    sim = {
        **profile.settings.get("simulation", {}),
        "resolution": {
            simulate_noise.METRIC: value,
            "noise": simulate_noise.profile_noise(profile),
            "from": "repeats' spread"
            + (
                " and a second run of the region"
                if "run_to_run" in profile.settings.get("simulation", {})
                else ""
            ),
        },
    }
    return profile.with_(settings={**profile.settings, "simulation": sim})


def session_warnings(record: ChildRecord, session: Mapping[str, Any] | None) -> list[str]:
    """What the session's settings make the simulated counts miss or over-count."""
    out = []
    session = session or record.session or {}
    intra = session.get("intra_op_threads")
    if isinstance(intra, int) and intra != 1:
        out.append(
            f"the ONNX Runtime session has intra_op_threads={intra}: pool-thread work "
            "is not counted; use intra_op_threads=1 under simulate"
        )
    if session.get("allow_spinning"):
        out.append(
            "ONNX Runtime spinning is on: the calling thread's spin-waits are counted as work"
        )
    return out
