"""Perf budgets: the ``@pytest.mark.perf(...)`` keywords, validated and checked.

Owns: which keywords the marker accepts (``<metric>_min`` / ``<metric>_max``
for every metric in ``metrics.METRICS``, ``stage_ms_max`` for ``region()``
stages, ``tolerance``, and the runner overrides), turning them into a
:class:`PerfSpec` with clear errors (and a did-you-mean) for anything wrong, and
checking budgets against a Profile's metrics and stage times. Pure: no pytest, no
files.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import InferperfError
from ..core.metrics import METRICS, missing_inputs
from ..core.numbers import number
from ..measure.stages import EVERY_STAGE, metric_label, stage_metric, stage_of
from ..pmu.events import CATALOGUE

RUNNER_KEYWORDS = {
    "warmup": "int",
    "warmup_max": "int",
    "repeat": "int",
    "timeout": "number",
    "min_time": "number",
    "pin": "cpus",
    "threads": "int",
}
#: ``stage_ms_max={"preprocess": 5}``: a ``region()`` stage's wall ms per measured call.
STAGE_BUDGET = "stage_ms_max"
OTHER_KEYWORDS = ("tolerance", STAGE_BUDGET)
#: Where a stage budget's wall time cannot be judged (an emulator's clock), latency cannot.
_STAGE_CLOCK = "latency_mean_ms"


class MarkerError(InferperfError, ValueError):
    """A ``perf`` marker keyword or value that cannot work; says which and the fix."""


@dataclass(frozen=True)
class Budget:
    metric: str
    kind: str  # "min" | "max"
    limit: float

    @property
    def keyword(self) -> str:
        stage = stage_of(self.metric)
        if stage is not None:
            return f"{STAGE_BUDGET}[{stage!r}]"
        return f"{self.metric}_{self.kind}"

    @property
    def label(self) -> str:
        """What the budget limits, as output shows it: ``stage preprocess ms/call``."""
        stage = stage_of(self.metric)
        return self.metric if stage is None else f"{metric_label(self.metric)} ms/call"


@dataclass(frozen=True)
class PerfSpec:
    """Everything one test's ``perf`` marker asked for."""

    budgets: tuple[Budget, ...] = ()
    tolerance: float | Mapping[str, float] | None = None
    runner: Mapping[str, Any] = field(default_factory=dict)

    def tolerances(self) -> dict[str, float] | None:
        """Per-metric tolerances for the baseline comparison (None: the defaults)."""
        if self.tolerance is None:
            return None
        if isinstance(self.tolerance, Mapping):
            return dict(self.tolerance)
        return {name: float(self.tolerance) for name in (*METRICS, EVERY_STAGE)}


def budget_keywords() -> list[str]:
    return [f"{name}_{kind}" for name in METRICS for kind in ("min", "max")]


def all_keywords() -> list[str]:
    return [*budget_keywords(), *RUNNER_KEYWORDS, *OTHER_KEYWORDS]


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def parse_marker(
    args: tuple[Any, ...], kwargs: Mapping[str, Any], *, marker: str = "perf"
) -> PerfSpec:
    """Validate one ``perf`` (or ``inferperf``) marker's arguments.

    Raises :class:`MarkerError` on anything wrong, naming the marker as written.
    """
    if args:
        raise MarkerError(
            f"@pytest.mark.{marker} takes keywords only, got positional {args!r}: "
            f"write e.g. @pytest.mark.{marker}(ipc_min=1.2, latency_p99_max_ms=8). If this "
            "suite has a perf marker of its own, write the budgets as "
            "@pytest.mark.inferperf(...) instead"
        )
    budgets: list[Budget] = []
    runner: dict[str, Any] = {}
    tolerance: float | dict[str, float] | None = None
    for key, value in kwargs.items():
        if key == "tolerance":
            tolerance = _parse_tolerance(value, marker)
        elif key == STAGE_BUDGET:
            budgets.extend(_parse_stage_budgets(value, marker))
        elif key in RUNNER_KEYWORDS:
            runner[key] = _parse_runner_value(key, value, marker)
        elif (target := budget_target(key)) is not None:
            if not _is_number(value):
                raise MarkerError(
                    f"@pytest.mark.{marker}({key}={value!r}): a budget must be a finite number"
                )
            metric, kind = target
            if uncountable := _not_counted_here(metric):
                raise MarkerError(_read_from_files_only(key, metric, uncountable, marker))
            budgets.append(Budget(metric, kind, float(value)))
        else:
            raise MarkerError(_unknown_keyword(key, marker))
    for metric in {b.metric for b in budgets}:
        lo = next((b.limit for b in budgets if b.metric == metric and b.kind == "min"), None)
        hi = next((b.limit for b in budgets if b.metric == metric and b.kind == "max"), None)
        if lo is not None and hi is not None and lo > hi:
            raise MarkerError(
                f"@pytest.mark.{marker}: {metric}_min={lo:g} is above {metric}_max={hi:g}; "
                "no value can meet both"
            )
    return PerfSpec(tuple(budgets), tolerance, runner)


def budget_target(key: str) -> tuple[str, str] | None:
    """``ipc_min`` -> (ipc, min); the unit may also follow: ``latency_p99_max_ms``."""
    if key.endswith(("_min", "_max")) and key[:-4] in METRICS:
        return key[:-4], key[-3:]
    match = _UNIT_LAST.fullmatch(key)
    if match and f"{match.group(1)}_{match.group(3)}" in METRICS:
        return f"{match.group(1)}_{match.group(3)}", match.group(2)
    return None


_UNIT_LAST = re.compile(r"(.+)_(min|max)_(ms|mb)")


def _not_counted_here(metric: str) -> list[str]:
    """The inputs of ``metric`` no counter of the product opens: values only a saved perf
    stat or toplev output holds (Intel's named stall events, perf's printed top-down
    nodes below level 2), which ``inferperf explain`` reads and a measurement never has."""
    return [e for e in METRICS[metric].inputs if e not in CATALOGUE]


def _read_from_files_only(key: str, metric: str, inputs: list[str], marker: str) -> str:
    row = METRICS[metric]
    parent = row.points_to if row.points_to in METRICS else None
    instead = (
        f"{parent}_max"
        if parent is not None and not _not_counted_here(parent)
        else "a metric of `inferperf metrics` whose inputs `inferperf doctor` lists as counted"
    )
    return (
        f"@pytest.mark.{marker}({key}=...): {metric} ({row.description}) is not measured by "
        f"the plugin: it needs {', '.join(inputs)}, which only a saved perf stat or toplev "
        "output holds (`inferperf explain` reads it there), so this budget could never be "
        f"judged. Budget {instead} instead."
    )


def _unknown_keyword(key: str, marker: str) -> str:
    guesses = difflib.get_close_matches(key, all_keywords(), n=3, cutoff=0.6)
    hint = f" Did you mean {' or '.join(guesses)}?" if guesses else ""
    return (
        f"@pytest.mark.{marker}: unknown keyword {key!r}.{hint} Budgets are <metric>_min / "
        "<metric>_max for the metrics listed by `inferperf metrics` (docs/plugin.md, Metrics); "
        f"other keywords: {', '.join([*RUNNER_KEYWORDS, *OTHER_KEYWORDS])}."
    )


def _parse_stage_budgets(value: Any, marker: str) -> list[Budget]:
    example = f'{STAGE_BUDGET}={{"preprocess": 5}}'
    if not isinstance(value, Mapping):
        raise MarkerError(
            f"@pytest.mark.{marker}({STAGE_BUDGET}={value!r}): stage budgets are a mapping "
            "from the name given to region() to the most wall milliseconds per call that "
            f"stage may take, e.g. {example}"
        )
    out = []
    for name, limit in value.items():
        if not isinstance(name, str) or not name:
            raise MarkerError(
                f"@pytest.mark.{marker}({STAGE_BUDGET}={{{name!r}: ...}}): a stage is named by "
                f"the string given to region(), e.g. {example}"
            )
        if not _is_number(limit) or limit < 0:
            raise MarkerError(
                f"@pytest.mark.{marker}({STAGE_BUDGET}={{{name!r}: {limit!r}}}): a stage "
                "budget is the most wall milliseconds per call the stage may take, a finite "
                f"number >= 0, e.g. {STAGE_BUDGET}={{{name!r}: 5}}"
            )
        out.append(Budget(stage_metric(name), "max", float(limit)))
    return out


def _parse_tolerance(value: Any, marker: str) -> float | dict[str, float]:
    def check(name: str, v: Any) -> float:
        if not _is_number(v) or v < 0:
            raise MarkerError(
                f"@pytest.mark.{marker}(tolerance{name}={v!r}): a tolerance is a relative change "
                "such as 0.05 (5%), a finite number >= 0"
            )
        return float(v)

    if isinstance(value, Mapping):
        out = {}
        for metric, v in value.items():
            if isinstance(metric, str) and stage_of(metric):
                out[metric] = check(f"[{metric!r}]", v)
                continue
            if metric not in METRICS:
                guesses = difflib.get_close_matches(str(metric), METRICS, n=2)
                hint = (
                    f" Did you mean {' or '.join(guesses)}?"
                    if guesses
                    else f" A region() stage is named {stage_metric(str(metric))!r} (every "
                    f"stage: {EVERY_STAGE!r})."
                )
                raise MarkerError(
                    f"@pytest.mark.{marker}(tolerance=...): unknown metric {metric!r}.{hint}"
                )
            out[metric] = check(f"[{metric!r}]", v)
        return out
    return check("", value)


def _parse_runner_value(key: str, value: Any, marker: str) -> Any:
    kind = RUNNER_KEYWORDS[key]
    if kind == "int":
        low = 0 if key == "warmup" else 1
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise MarkerError(
                f"@pytest.mark.{marker}({key}={value!r}): must be an integer >= {low}"
            )
        return value
    if kind == "number":
        # min_time=0: one call per repeat
        if not _is_number(value) or not (value >= 0 if key == "min_time" else value > 0):
            bound = ">= 0" if key == "min_time" else "> 0"
            raise MarkerError(
                f"@pytest.mark.{marker}({key}={value!r}): must be a number {bound} (seconds)"
            )
        return float(value)
    cpus = (value,) if isinstance(value, int) and not isinstance(value, bool) else value
    if not isinstance(cpus, list | tuple) or not all(
        isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in cpus
    ):
        raise MarkerError(f"@pytest.mark.{marker}(pin={value!r}): a CPU number or a list of them")
    return tuple(cpus)


@dataclass(frozen=True)
class BudgetResult:
    budget: Budget
    value: float | None
    status: str  # "pass" | "fail" | "unavailable"
    reason: str | None = None

    @property
    def failed(self) -> bool:
        return self.status == "fail"

    def describe(self) -> str:
        b = self.budget
        op = ">=" if b.kind == "min" else "<="
        if self.value is None and self.status == "fail":
            return f"{b.label}, budget {op} {b.limit:g}: FAILED: {self.reason}"
        if self.value is None:
            return f"{b.keyword}={b.limit:g}: not checked: {self.reason}"
        delta = (self.value - b.limit) / b.limit * 100 if b.limit else math.inf
        verdict = "ok" if self.status == "pass" else "FAILED"
        return (
            f"{b.label} = {number(self.value)}, budget {op} {b.limit:g} "
            f"({delta:+.1f}% from the limit): {verdict}"
        )


def check_budgets(
    budgets: tuple[Budget, ...],
    metrics: Mapping[str, float],
    unavailable: Mapping[str, str],
    *,
    not_judged: Mapping[str, str] | None = None,
    stages: Mapping[str, float] | None = None,
) -> tuple[BudgetResult, ...]:
    """Each budget against the measured metrics; unmeasurable ones carry the reason.

    ``not_judged`` maps metrics this machine cannot judge (an emulator's clock) to why.
    ``stages`` maps each ``region()`` the workload entered to its wall ms per call: a
    stage budget naming a region never entered fails, listing those entered (a typo in
    the name must not pass).
    """
    results = []
    for budget in budgets:
        stage = stage_of(budget.metric)
        if stage is not None:
            results.append(_check_stage(budget, stage, stages or {}, not_judged or {}))
            continue
        if not_judged and budget.metric in not_judged:
            results.append(BudgetResult(budget, None, "unavailable", not_judged[budget.metric]))
            continue
        value = metrics.get(budget.metric)
        if value is None:
            missing = missing_inputs(budget.metric, unavailable)
            if missing:
                by_reason: dict[str, list[str]] = {}
                for event, why in missing.items():
                    by_reason.setdefault(why, []).append(event)
                reason = "; ".join(
                    f"needs {', '.join(events)}, {why}" for why, events in by_reason.items()
                )
            else:
                reason = f"{budget.metric} could not be computed from what was counted"
            results.append(BudgetResult(budget, None, "unavailable", reason))
            continue
        ok = value >= budget.limit if budget.kind == "min" else value <= budget.limit
        results.append(BudgetResult(budget, value, "pass" if ok else "fail"))
    return tuple(results)


def _check_stage(
    budget: Budget, stage: str, stages: Mapping[str, float], not_judged: Mapping[str, str]
) -> BudgetResult:
    if _STAGE_CLOCK in not_judged:
        return BudgetResult(budget, None, "unavailable", not_judged[_STAGE_CLOCK])
    value = stages.get(stage)
    if value is None:
        entered = ", ".join(repr(name) for name in stages) or "no region() at all"
        guesses = difflib.get_close_matches(stage, list(stages), n=1)
        hint = f" (did you mean {guesses[0]!r}?)" if guesses else ""
        return BudgetResult(
            budget,
            None,
            "fail",
            f"the workload never entered region({stage!r}) while measured{hint}; it "
            f"entered {entered}",
        )
    ok = value >= budget.limit if budget.kind == "min" else value <= budget.limit
    return BudgetResult(budget, value, "pass" if ok else "fail")
