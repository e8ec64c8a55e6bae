"""``inferperf compare``: several analysed targets side by side with the first.

Owns: :func:`side_by_side` and its result :class:`SideBySide` (rows of
:class:`MetricRow` and :class:`OpTypeRow`, the verdicts, the Pareto front) with its JSON
form, and the helpers it is built from: :func:`entry_labels`, :func:`op_type_times`,
:func:`match_quality`, :func:`op_type_precision`; the entries' short column names
(:func:`column_names`, ``SideBySide.columns`` and ``legend``).

Must not: measure (:mod:`..measure.target`), write files (:mod:`..report.files`), format a
report (``report``), parse arguments or print (``cli``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import UsageError
from ..core.metrics import METRICS, profile_metrics
from ..core.profile import Profile
from ..judge.comparison import IncomparableError, check_comparable
from ..measure.target import Analysis, is_callable_target
from ..onnxrt.precision import precision_findings, precision_table

if TYPE_CHECKING:
    import pluggy

# A credible change in a metric that does not gate (percentiles, memory, OS events) is
# reported as worse / better: only gated metrics regress (a row's ``gates``).
UNGATED_STATUS = {"regressed": "worse", "improved": "better"}


@dataclass(frozen=True)
class MetricRow:
    """One metric across the profiles; deltas and statuses against the first."""

    metric: str
    unit: str
    better: str
    values: tuple[float | None, ...]
    deltas: tuple[float | None, ...]
    statuses: tuple[str, ...]  # "" for the first; ok / regressed / improved / noise / ""


@dataclass(frozen=True)
class OpTypeRow:
    """Time per inference of one operator type (sum of its nodes' mean times)."""

    op_type: str
    nodes: tuple[int, ...]
    us_per_call: tuple[float | None, ...]
    deltas: tuple[float | None, ...]
    #: per profile, what the op type computes in (``float``, ``int8``, ``float x int4
    #: weights``) and its weights' stored type when narrower; "" when unknown
    precision: tuple[str, ...] = ()


@dataclass(frozen=True)
class SideBySide:
    """Several analyses compared with the first: what ``compare`` prints and writes."""

    entries: tuple[Analysis, ...]
    metrics: tuple[MetricRow, ...]
    op_types: tuple[OpTypeRow, ...]
    verdicts: tuple[Any, ...]  # Verdict per entry against the first; None: first/incomparable
    notes: tuple[str, ...] = ()
    quality: Mapping[str, float] = field(default_factory=dict)
    quality_higher_is_better: bool = True
    front: tuple[str, ...] = ()
    artifacts: Mapping[str, str] = field(default_factory=dict)  # name -> file (relative)
    assessments: tuple[Any, ...] = ()  # each entry judged once: its verdict, or on its own

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(e.label for e in self.entries)

    @property
    def columns(self) -> tuple[str, ...]:
        """The entries' short column names in the terminal tables (``A``, ``B``, ...),
        spelt out by :attr:`legend`; files keep the labels."""
        return column_names(len(self.entries))

    @property
    def legend(self) -> tuple[tuple[str, str, str], ...]:
        """(column name, label, source) per entry: what each short column stands for."""
        return tuple(
            (name, e.label, e.source) for name, e in zip(self.columns, self.entries, strict=True)
        )

    @property
    def regressions(self) -> list[tuple[str, Any]]:
        """(label, MetricChange) of every credible, gated regression against the first."""
        return [
            (e.label, c)
            for e, v in zip(self.entries, self.verdicts, strict=True)
            if v is not None
            for c in v.regressions
        ]

    @property
    def failed(self) -> bool:
        return bool(self.regressions)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": "pytest-inferperf/compare",
            "schema_version": 1,
            "reference": self.labels[0],
            "entries": [
                {
                    "label": e.label,
                    "source": e.source,
                    "cached_from": e.cached.stored if e.cached else None,
                    "profile": e.profile.to_dict(),
                }
                for e in self.entries
            ],
            "metrics": [
                {
                    "metric": r.metric,
                    "unit": r.unit,
                    "better": r.better,
                    "values": dict(zip(self.labels, r.values, strict=True)),
                    "deltas": _json_numbers(self.labels, r.deltas),
                    "statuses": dict(zip(self.labels, r.statuses, strict=True)),
                }
                for r in self.metrics
            ],
            "operator_types": [
                {
                    "op_type": r.op_type,
                    "nodes": dict(zip(self.labels, r.nodes, strict=True)),
                    "us_per_call": dict(zip(self.labels, r.us_per_call, strict=True)),
                    "deltas": _json_numbers(self.labels, r.deltas),
                    "precision": dict(
                        zip(self.labels, r.precision or ("",) * len(self.labels), strict=True)
                    ),
                }
                for r in self.op_types
            ],
            "regressions": [
                {
                    "label": label,
                    "metric": c.metric,
                    "baseline": c.baseline,
                    "current": c.current,
                    "delta": _json_number(c.delta),
                    "detail": c.detail,
                }
                for label, c in self.regressions
            ],
            "notes": list(self.notes),
            "quality": dict(self.quality),
            "quality_higher_is_better": self.quality_higher_is_better,
            "pareto_front": list(self.front),
            "artifacts": dict(self.artifacts),
        }


def _json_number(value: float | None) -> float | str | None:
    """A relative change from a zero reference is infinite: JSON gets "inf" / "-inf"."""
    if value is None or math.isfinite(value):
        return value
    return "inf" if value > 0 else "-inf"


def _json_numbers(
    labels: Sequence[str], values: Sequence[float | None]
) -> dict[str, float | str | None]:
    return {label: _json_number(v) for label, v in zip(labels, values, strict=True)}


def column_names(count: int) -> tuple[str, ...]:
    """``A``, ``B``, ..., ``Z``, ``AA``, ``AB``, ...: short names for ``count`` columns, so a
    table of several variants stays narrow whatever their labels (a model path, a test id)."""
    names = []
    for index in range(count):
        name, n = "", index + 1
        while n:
            n, rest = divmod(n - 1, 26)
            name = chr(ord("A") + rest) + name
        names.append(name)
    return tuple(names)


def entry_labels(sources: Sequence[str], profiles: Sequence[Profile]) -> list[str]:
    """Short, unique labels: a model's stem or a profile's name; the path when they clash."""
    names = [
        Path(s).stem if not s.endswith(".json") and not is_callable_target(s) else p.name
        for s, p in zip(sources, profiles, strict=True)
    ]
    labels = [s if names.count(n) > 1 else n for n, s in zip(names, sources, strict=True)]
    out: list[str] = []
    for label in labels:
        unique, i = label, 2
        while unique in out:
            unique, i = f"{label}#{i}", i + 1
        out.append(unique)
    return out


def _delta(first: float | None, value: float | None) -> float | None:
    if first is None or value is None:
        return None
    if first == 0:
        return 0.0 if value == 0 else math.copysign(math.inf, value)
    return (value - first) / abs(first)


def op_type_times(profile: Profile) -> dict[str, tuple[int, float]]:
    """Per operator type: (nodes, µs per inference), from ``Profile.operators``."""
    out: dict[str, tuple[int, float]] = {}
    for op in profile.operators:
        op_type = str(op.get("op_type") or "?")
        nodes, us = out.get(op_type, (0, 0.0))
        out[op_type] = (nodes + 1, us + float(op.get("mean_us") or 0.0))
    return out


def op_type_precision(profile: Profile) -> dict[str, str]:
    """Per operator type, what it computes in, with narrower stored weights:
    ``"float (int8 weights)"``, ``"int8"``; from the executed input types."""
    out = {}
    for row in precision_table(profile.operators):
        if not row["inputs"]:
            continue
        stored = [w for w in row["weights_stored"] if w not in row["computes_in"]]
        out[row["op_type"]] = row["computes_in"] + (
            f" ({', '.join(stored)} weights)" if stored else ""
        )
    return out


def match_quality(
    entries: Sequence[Analysis], quality: Sequence[tuple[str, float]]
) -> dict[str, float]:
    """``--quality NAME=VALUE`` by label, source as given, or source stem."""
    out: dict[str, float] = {}
    for name, value in quality:
        match = next(
            (e.label for e in entries if name in (e.label, e.source, Path(e.source).stem)), None
        )
        if match is None:
            raise UsageError(
                f"no compared variant is called "
                f"{name!r}; the variants are {', '.join(e.label for e in entries)}.",
                setting="quality",
                value=f"{name}={value:g}",
            )
        out[match] = value
    return out


def _saved(entry: Analysis) -> bool:
    """A saved profile (``report.json``, a baseline), not a model analysed for this compare."""
    return str(entry.source).lower().endswith(".json")


def side_by_side(
    entries: Sequence[Analysis],
    *,
    quality: Sequence[tuple[str, float]] = (),
    quality_higher_is_better: bool = True,
    any_model: bool = False,
    plugins: pluggy.PluginManager | None = None,
) -> SideBySide:
    """Compare every entry with the first: metrics, operator types, verdicts, Pareto front.

    Each entry's diagnosis carries what the ``pytest_inferperf_*`` hooks add (its
    verdict's and its own assessment's, :func:`~pytest_inferperf.diagnose.hooks.hook_results`,
    the function every front-end calls): the hooks of ``plugins``, by default the
    registry's (:func:`~pytest_inferperf.diagnose.hooks.registry`; a plugin that cannot
    load is a :class:`~pytest_inferperf.core.errors.UsageError`, as for ``validate``).

    Two saved profiles (``.json``) of different models (content hash, or input names and
    shapes: :func:`~pytest_inferperf.measure.identity.different_models`) are refused with
    :class:`~pytest_inferperf.cli.validate.ModelMismatch` unless ``any_model``: a change
    between them says nothing about either model. Where one side is a model file named
    on the command line (``compare fp32.onnx int8.onnx``, ``--quantize dynamic``) the
    variants are compared on purpose, and the difference is a note.
    """
    from ..diagnose.assessment import assess_profile
    from ..report.pareto import Variant, pareto_front

    if len(entries) < 2:
        raise UsageError(
            "compare needs at least two profiles or models",
            hint="(or one model with {quantize} dynamic).",
        )
    hooked = _hook_additions(entries, plugins)
    verdicts, notes = _verdicts(entries, hooked, any_model=any_model)
    rows = _metric_rows(entries, verdicts)
    for entry in entries:
        notes.extend(
            f"{entry.label}: {finding}"
            for finding in precision_findings(precision_table(entry.profile.operators))
        )
    op_rows = _op_type_rows(entries)
    scores = match_quality(entries, quality)
    front: list[str] = []
    if scores:
        variants = [
            Variant(e.label, e.profile.latency.mean_ms, scores.get(e.label)) for e in entries
        ]
        front = pareto_front(variants, quality_higher_is_better=quality_higher_is_better)
    return SideBySide(
        tuple(entries),
        tuple(rows),
        tuple(op_rows),
        tuple(verdicts),
        tuple(notes),
        scores,
        quality_higher_is_better,
        tuple(front),
        assessments=tuple(
            v
            if v is not None
            else assess_profile(e.profile, extra_metrics=added, extra_findings=findings)
            for e, v, (added, findings) in zip(entries, verdicts, hooked, strict=True)
        ),
    )


def _hook_additions(
    entries: Sequence[Analysis], plugins: pluggy.PluginManager | None
) -> list[tuple[dict[str, float], list[Any]]]:
    """What the hooks add to each entry's diagnosis: (extra metrics, extra findings)."""
    from ..diagnose.hooks import PluginLoadError, hook_results, registry

    try:
        pm = plugins if plugins is not None else registry()
    except PluginLoadError as exc:
        raise UsageError(str(exc)) from None
    return [hook_results(pm, e.profile) for e in entries]


def _verdicts(
    entries: Sequence[Analysis],
    hooked: Sequence[tuple[dict[str, float], list[Any]]],
    *,
    any_model: bool,
) -> tuple[list[Any], list[str]]:
    """Each entry after the first judged against the first (None for the first and for
    one measured elsewhere) with what the hooks added to it (``hooked``, per entry), and
    the notes on what was not compared, or compared across models. Raises
    :class:`~pytest_inferperf.cli.validate.ModelMismatch` for two saved profiles of
    different models unless ``any_model``."""
    from ..diagnose.assessment import assess as judge
    from ..judge.budgets import PerfSpec
    from ..measure.identity import different_models

    first = entries[0]
    verdicts: list[Any] = [None]
    notes: list[str] = []
    for entry, (added, findings) in zip(entries[1:], hooked[1:], strict=True):
        try:
            check_comparable(entry.profile, first.profile)
        except IncomparableError:
            verdicts.append(None)
            notes.append(
                f"{entry.label} is not compared statistically with {first.label}: "
                f"measured on {entry.profile.machine_class} ({entry.profile.backend}) "
                f"against {first.profile.machine_class} ({first.profile.backend}); "
                "values are shown side by side only"
            )
            continue
        other = different_models(entry.profile, first.profile, (entry.label, first.label))
        if other and not any_model and _saved(entry) and _saved(first):
            from .validate import ModelMismatch

            raise ModelMismatch(
                f"saved profiles of different models: {other}. "
                "A change between profiles of two models says nothing about a regression "
                "of either: compare profiles of the same model, name the model files to put "
                "variants side by side (`inferperf compare fp32.onnx int8.onnx`, or one model "
                "with `--quantize dynamic`), or pass --any-model to compare them anyway."
            )
        if other:
            notes.append(f"{entry.label} is another model than {first.label}: {other}")
        verdicts.append(
            judge(
                entry.label,
                entry.profile,
                PerfSpec(),
                baseline=first.profile,
                baseline_note=f"against {first.label}",
                extra_metrics=added,
                extra_findings=findings,
            )
        )
    return verdicts, notes


def _metric_rows(entries: Sequence[Analysis], verdicts: Sequence[Any]) -> list[MetricRow]:
    """One row per metric any entry has: its values, the change from the first, and each
    comparison's status (an ungated metric's status said as such)."""
    values = [profile_metrics(e.profile) for e in entries]
    rows = []
    for name, spec in METRICS.items():
        column = tuple(v.get(name) for v in values)
        if all(c is None for c in column):
            continue
        statuses = [""]
        for verdict in verdicts[1:]:
            change = verdict.comparison.get(name) if verdict and verdict.comparison else None
            status = change.status if change else ""
            if name not in (verdict.gated if verdict else ()):
                status = UNGATED_STATUS.get(status, status)
            statuses.append(status)
        rows.append(
            MetricRow(
                name,
                spec.unit,
                spec.better,
                column,
                (None, *(_delta(column[0], c) for c in column[1:])),
                tuple(statuses),
            )
        )
    return rows


def _op_type_rows(entries: Sequence[Analysis]) -> list[OpTypeRow]:
    """One row per operator type, the slowest first: nodes, µs, the change from the
    first entry and the precision it runs in, per entry."""
    times = [op_type_times(e.profile) for e in entries]
    precisions = [op_type_precision(e.profile) for e in entries]
    op_rows = []
    order = sorted(
        {t for ts in times for t in ts},
        key=lambda t: (-max(ts.get(t, (0, 0.0))[1] for ts in times), t),
    )
    for op_type in order:
        us = tuple(ts[op_type][1] if op_type in ts else None for ts in times)
        op_rows.append(
            OpTypeRow(
                op_type,
                tuple(ts.get(op_type, (0, 0.0))[0] for ts in times),
                us,
                (None, *(_delta(us[0], u) for u in us[1:])),
                tuple(p.get(op_type, "") for p in precisions),
            )
        )
    return op_rows
