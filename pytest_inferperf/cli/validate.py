"""``inferperf validate``: one target measured again (or loaded) and judged against a baseline.

Owns: :func:`validate_target` and its result :class:`Validation`, and
:func:`options_like` - the measurement options that repeat how a baseline was measured.
The verdict is :func:`diagnose.assessment.assess`'s, with the plugin's own gating and the same
``pytest_inferperf_*`` hooks (:func:`diagnose.hooks.load_plugins`).

A baseline of another model (its content hash, or its input names and shapes) is
refused with :class:`ModelMismatch` unless ``any_model`` asks to compare anyway.

Must not: measure by itself (:mod:`..measure.target` does), compare more than one Profile with
a reference (:mod:`.compare`), write files, parse arguments or print (``cli``).
A baseline that cannot be used raises :class:`core.errors.UsageError`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..core.errors import UsageError
from ..core.profile import Profile
from ..judge.comparison import IncomparableError, check_comparable
from ..measure import backends
from ..measure.identity import different_models, identity_of, model_sha256
from ..measure.in_fresh_processes import measure_in_fresh_processes, measure_target
from ..measure.machine import this_cpu
from ..measure.target import (
    Options,
    Progress,
    is_callable_target,
    load_profile,
    resolve_shapes,
)


def options_like(baseline: Profile, overrides: Mapping[str, Any]) -> tuple[Options, dict[str, int]]:
    """Measurement options matching how ``baseline`` was measured, then ``overrides``.

    Returns the options and the baseline's dims (already resolved).
    """
    facts = baseline.settings.get("analyse") or {}
    session = facts.get("session_settings") or {}
    like = Options(
        details=False,
        threads=int(session.get("intra_op_threads", 1) or 1),
        warmup=int(baseline.settings.get("warmup", 3)),
        repeat=int(baseline.settings.get("repeat", 30)),
        timeout=float(baseline.settings.get("timeout", 60.0)),
        backend=baseline.backend if baseline.backend in backends.names() else "perf",
    )
    dims = {str(k): int(v) for k, v in (facts.get("dims") or {}).items()}
    return replace(like, **{k: v for k, v in overrides.items() if v is not None}), dims


@dataclass(frozen=True)
class Validation:
    """A target judged against its baseline; ``verdict.failed`` is the exit status 1."""

    label: str
    baseline_path: str
    verdict: Any  # diagnose.assessment.Assessment


def validate_target(
    target: str,
    baseline_file: str | os.PathLike[str],
    *,
    tolerance: float | None = None,
    overrides: Mapping[str, Any] | None = None,
    shapes: Sequence[tuple[str, str]] = (),
    progress: Progress | None = None,
    any_model: bool = False,
    strict: bool = False,
    plugins: Any = None,
    processes: int = 4,
) -> Validation:
    """Measure ``target`` again (or load it, a ``.json``) and judge it against the baseline.

    The measurement repeats the baseline's settings (dims, threads, warm-up, repeats,
    backend) unless ``overrides``/``shapes`` say otherwise. Same verdict as the plugin:
    :func:`diagnose.assessment.assess` with ``tolerance`` for every metric (None: the defaults) and
    the default gating. Raises :class:`UsageError` for a missing or unreadable file, and
    for a baseline from another machine class or backend; :class:`ModelMismatch` for a
    baseline of another model (content hash, or input names and shapes) unless
    ``any_model``. ``strict``: an inconclusive change fails. ``plugins``: the plugin
    manager whose ``pytest_inferperf_*`` hooks add metrics and findings, as they do in the
    plugin (default: :func:`diagnose.hooks.plugin_manager` with the registry's plugins).
    ``processes``: a timing regression that alone would fail is measured again in that
    many fresh processes first and holds only across them (0: judged on the one
    measurement), as the plugin's ``--inferperf-processes``.
    """
    _check_arguments(tolerance, processes)
    baseline = load_profile(baseline_file, "baseline")
    profile, measured = _loaded_or_measured(
        target, baseline, baseline_file, overrides or {}, shapes, progress, any_model=any_model
    )
    why = _why_another_model(target, profile, baseline, baseline_file, any_model=any_model)
    judged = _judge(target, baseline, baseline_file, why, tolerance, strict, plugins)
    verdict = judged(profile)
    if measured is not None and processes > 0 and verdict.needs_confirmation:
        verdict = _confirmed(verdict, judged, target, *measured, baseline, processes, progress)
    return Validation(target, os.fspath(baseline_file), verdict)


def _check_arguments(tolerance: float | None, processes: int) -> None:
    """A tolerance or a number of processes no judgement can use: :class:`UsageError`."""
    if tolerance is not None and (not math.isfinite(tolerance) or tolerance < 0):
        raise UsageError(
            "a relative tolerance must be a finite number >= 0 (0.25 is 25%).",
            setting="tolerance",
            value=tolerance,
        )
    if processes < 0:
        raise UsageError(
            "a number of fresh processes must be 0 or more (0: judge the one measurement).",
            setting="processes",
            value=processes,
        )


def _loaded_or_measured(
    target: str,
    baseline: Profile,
    baseline_file: str | os.PathLike[str],
    overrides: Mapping[str, Any],
    shapes: Sequence[tuple[str, str]],
    progress: Progress | None,
    *,
    any_model: bool,
) -> tuple[Profile, tuple[Options, dict[str, int]] | None]:
    """The Profile to judge: a ``.json`` loaded, else ``target`` measured as the baseline was.

    The second item says how it was measured (None: loaded), for measuring it again.
    """
    if target.endswith(".json"):
        return load_profile(target, "report"), None
    if not is_callable_target(target) and not Path(target).is_file():
        raise UsageError(  # before any machine check: a wrong path is the first thing to fix
            f"{target} does not exist (or is not a file). Pass an ONNX "
            "model, a report.json, or MODULE:CALLABLE."
        )
    here = this_cpu().machine_class
    if baseline.machine_class != here:
        raise _incomparable(
            baseline_file,
            f"the baseline was measured on {baseline.machine_class}, this machine is {here}",
        )
    options, dims = options_like(baseline, overrides)
    if shapes:
        options = replace(options, shapes=tuple(shapes))
    if not is_callable_target(target):
        model = Path(target)
        known = identity_of(baseline) or {}
        digest = model_sha256(model)
        if not any_model and known.get("sha256") and digest and digest != known["sha256"]:
            raise _other_model(
                baseline_file,
                f"{target} (sha256 {digest[:12]}) is not the model of the baseline, "
                f"{known.get('path') or 'a model'} (sha256 {str(known['sha256'])[:12]})",
            )
        dims = {**dims, **resolve_shapes(model, options.shapes)}
    return measure_target(target, options, dims, progress), (options, dims)


def _why_another_model(
    label: str,
    profile: Profile,
    baseline: Profile,
    baseline_file: str | os.PathLike[str],
    *,
    any_model: bool,
) -> str | None:
    """Why ``profile`` measured another model than the baseline (None: the same one).

    Raises for another machine class or backend, and for another model unless ``any_model``.
    """
    try:
        check_comparable(profile, baseline)
    except IncomparableError:
        raise _incomparable(
            baseline_file,
            f"{label} is from {profile.machine_class} with the {profile.backend} backend, "
            f"the baseline from {baseline.machine_class} with the {baseline.backend} backend",
        ) from None
    why = different_models(profile, baseline)
    if why and not any_model:
        raise _other_model(baseline_file, why)
    return why


def _judge(
    label: str,
    baseline: Profile,
    baseline_file: str | os.PathLike[str],
    why: str | None,
    tolerance: float | None,
    strict: bool,
    plugins: Any,
) -> Callable[[Profile], Any]:
    """How a Profile of ``label`` is judged against the baseline, with the hooks' metrics
    and findings (``plugins``, default the registry's plugins), as the plugin judges it."""
    from ..diagnose.assessment import assess as judge
    from ..diagnose.hooks import PluginLoadError, hook_results, plugin_manager
    from ..judge.budgets import PerfSpec

    try:
        pm = plugins if plugins is not None else plugin_manager(load_entrypoints=True)
    except PluginLoadError as exc:
        raise UsageError(str(exc)) from None
    spec = PerfSpec(tolerance=tolerance)
    note = f"baseline {baseline_file}" + (f" (another model: {why})" if why else "")

    def judged(measured_profile: Profile) -> Any:
        metrics, findings = hook_results(pm, measured_profile)
        return judge(
            label,
            measured_profile,
            spec,
            baseline=baseline,
            baseline_note=note,
            extra_metrics=metrics,
            extra_findings=findings,
            strict=strict,
        )

    return judged


def _confirmed(
    verdict: Any,
    judged: Any,
    target: str,
    options: Options,
    dims: Mapping[str, int],
    baseline: Profile,
    processes: int,
    progress: Progress | None,
) -> Any:
    """A timing regression that alone would fail, measured again in fresh processes
    first, as the plugin does (:func:`diagnose.assessment.with_process_confirmation`)."""
    from ..diagnose.assessment import with_process_confirmation

    if progress is not None:
        progress(f"a timing regression: measuring again in {processes} fresh processes")
    profiles, failed = measure_in_fresh_processes(target, options, dims, processes)
    fresh = [judged(p.with_(model=verdict.profile.model)) for p in profiles]
    if len(fresh) < 2:  # a spread needs two: measured again in this process instead
        import time

        from ..diagnose.assessment import CONFIRM_PAUSE_S, replace_confirmation, with_confirmation

        time.sleep(CONFIRM_PAUSE_S)
        again = judged(measure_target(target, options, dims, progress))
        confirmed = with_confirmation(verdict, again, pause_s=CONFIRM_PAUSE_S)
        why = failed or "fewer than two fresh processes measured"
        text = f"{(confirmed.confirmation or {}).get('text')} (not in fresh processes: {why})"
        return replace_confirmation(confirmed, text)
    return with_process_confirmation(verdict, fresh, baseline, failed=failed)


class ModelMismatch(UsageError):
    """The baseline measured another model (the CLI exits 2 unless told to compare anyway)."""


def _other_model(baseline_file: str | os.PathLike[str], why: str) -> ModelMismatch:
    return ModelMismatch(
        f"baseline {os.fspath(baseline_file)} is of another model: {why}. A baseline "
        "only says something about the model it measured:",
        hint="record one for this model with `inferperf analyse MODEL --out DIR` and pass "
        "DIR/report.json to {baseline}, or pass {any_model} to compare them anyway.",
    )


def _incomparable(baseline_file: str | os.PathLike[str], why: str) -> UsageError:
    return UsageError(
        f"baseline {os.fspath(baseline_file)} cannot be compared: {why}. Profiles from "
        "another machine class or counter backend are never compared;",
        hint="record a baseline on this machine with `inferperf analyse MODEL --out DIR` and "
        "pass DIR/report.json to {baseline}.",
    )
