"""How small a change simulated counts can separate: tolerances from their own noise.

Owns: the relative noise of a simulated Profile's instructions per call (the
spread of its per-repeat values, and the difference between two runs of the
region where the region was run twice, ``settings.simulation.run_to_run``),
the tolerance a comparison of two simulated Profiles uses for
``instructions_per_call`` instead of the fixed default, and the resolution
(smallest separable change) a simulated Profile reports about itself.

Must not: measure, judge, render, or import numpy, pytest or the engine's
heavy parts (``judge.comparison`` imports it; the plugin's import must stay light).
Pure functions of numbers and Profiles.

Why a multiple and a floor: a comparison is two runs, so its change carries
the noise of both; the noise is estimated from few values (3 repeats, at most
one repeated run), and one estimate of a spread can be several times too
small. :data:`NOISE_MULTIPLE` times the largest estimate keeps false alarms
rare; :data:`RESOLUTION_FLOOR` is about twice the largest run-to-run
difference measured for inference workloads on the development VM
(0.047%, ONNX Runtime MLP; 0.002% and 0.012% for the two examples:
docs/simulate.md, "Determinism, measured"), below which three repeats cannot
tell noise that has not shown itself yet from none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

#: The metric whose tolerance comes from the counts' own noise.
METRIC = "instructions_per_call"
#: The tolerance is this many times the largest noise estimate of the two sides ...
NOISE_MULTIPLE = 5.0
#: ... and never below this relative change.
RESOLUTION_FLOOR = 0.001
BACKEND = "simulate"


def range_over_median(values: Sequence[float]) -> float | None:
    """``(max - min) / median`` of ``values``; None for fewer than 2 or a median <= 0.

    The noise a tolerance is built from must not hide the worst repeat: with the 3
    repeats a simulated Profile has, the median absolute deviation
    (:func:`measure.runner.mad_over_median`) is the smaller of the two outer
    deviations and ignores the larger one, while the range keeps it (docs/simulate.md,
    "Resolution": the noise is the repeats' ``(max - min) / median``).
    """
    clean = sorted(float(v) for v in values)
    if len(clean) < 2:
        return None
    mid = len(clean) // 2
    median = clean[mid] if len(clean) % 2 else (clean[mid - 1] + clean[mid]) / 2
    if median <= 0:
        return None
    return (clean[-1] - clean[0]) / median


def noise_estimate(per_repeat: Sequence[float], run_to_run: float | None = None) -> float:
    """The relative noise one simulated measurement shows: its repeats' spread, or the
    difference between two runs of its region, whichever is larger (0 when neither exists)."""
    estimates = [range_over_median(per_repeat), abs(run_to_run) if run_to_run is not None else None]
    return max((e for e in estimates if e is not None), default=0.0)


def tolerance_from_noise(
    noises: Iterable[float], *, multiple: float = NOISE_MULTIPLE, floor: float = RESOLUTION_FLOOR
) -> float:
    """The relative change beyond which two simulated measurements differ for real."""
    return max(floor, multiple * max((abs(n) for n in noises), default=0.0))


def per_call_instructions(profile: Any) -> list[float]:
    """Instructions per call in each repeat of ``profile``."""
    out = []
    for rep in profile.repeats:
        count = rep.sample.counts.get("instructions")
        if count is not None and rep.calls:
            out.append(count.value / rep.calls)
    return out


def run_to_run(profile: Any) -> float | None:
    """The recorded relative difference between two runs of the region, if measured."""
    sim = (profile.settings or {}).get("simulation") or {}
    entry = sim.get("run_to_run")
    if isinstance(entry, Mapping):
        value = entry.get(METRIC)
        return float(value) if isinstance(value, int | float) else None
    return None


def profile_noise(profile: Any) -> float | None:
    """The relative noise of a simulated profile's instructions per call; None otherwise."""
    if getattr(profile, "backend", None) != BACKEND:
        return None
    values = per_call_instructions(profile)
    if not values:
        return None
    return noise_estimate(values, run_to_run(profile))


def resolution(profile: Any) -> float | None:
    """The smallest change of instructions per call this profile can separate from noise
    (against a baseline as steady as itself)."""
    noise = profile_noise(profile)
    return None if noise is None else tolerance_from_noise([noise])


def mode(profile: Any) -> str:
    """What callgrind simulated for ``profile`` ("full" for profiles older than modes)."""
    sim = (getattr(profile, "settings", None) or {}).get("simulation") or {}
    return str(sim.get("mode") or "full")


def noise_tolerances(current: Any, baseline: Any) -> dict[str, float]:
    """Tolerances measured from the two profiles' own noise (both simulated), else {}.

    Not across modes: the same MobileNetV2 int8 region counted 0.1% fewer
    instructions without cache and branch simulation than with them, in two runs
    alike; such a pair keeps the fixed default.
    """
    if mode(current) != mode(baseline):
        return {}
    noises = [profile_noise(current), profile_noise(baseline)]
    if any(n is None for n in noises):
        return {}
    return {METRIC: tolerance_from_noise(n for n in noises if n is not None)}
