"""Command-line options, ini keys and the Settings they resolve to.

Owns: every --inferperf* option and inferperf_* ini key, their defaults and
validation. Must not: measure, judge or render.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..core.default_paths import BASELINES_DIR
from ..measure import backends
from .keys import FLAMEGRAPH_CHOICES, SHORT_UPDATE

# Loading this module is what every pytest run pays once the package is installed,
# with or without --inferperf: it imports pytest and the standard library only. The
# engine (numpy, ONNX Runtime, counters, judging) is imported inside the hooks that
# need it, and only when --inferperf asks for it or a test uses pmu_profile.
if TYPE_CHECKING:
    pass


def pytest_addoption(parser: pytest.Parser) -> None:
    """The inferperf options (each with its ini key) and the ini-only keys, in the order
    ``pytest --help`` lists them."""
    group = parser.getgroup("inferperf", "CPU inference performance (pytest-inferperf)")

    def option(name: str, ini: str, help: str, **kwargs: Any) -> None:
        group.addoption(name, dest=ini, help=help, **kwargs)
        if kwargs.get("action") == "store_true":
            parser.addini(ini, help=help, type="bool", default=False)
        else:
            parser.addini(ini, help=help, type="string", default=None)

    _add_measuring_options(option)
    _add_ini_only_keys(parser)
    _add_requirement_options(option)
    _add_output_options(option)
    _add_judging_options(option)


#: Adds one option and its ini key: (name, ini key, help, **argparse keywords).
_Option = Callable[..., None]


def _add_measuring_options(option: _Option) -> None:
    """Whether to measure, the baselines it is judged against, and the counter backend."""
    option(
        "--inferperf",
        "inferperf",
        action="store_true",
        default=None,
        help="measure tests that use pmu_profile and check their perf budgets and baselines",
    )
    option(
        "--inferperf-update-baselines",
        "inferperf_update_baselines",
        action="store_true",
        default=None,
        help="write this run's profiles as the new baselines (also "
        f"{SHORT_UPDATE} where no other plugin or conftest defines it)",
    )
    option(
        "--inferperf-baselines",
        "inferperf_baselines",
        metavar="DIR",
        default=None,
        help=f"baseline folder (default: {BASELINES_DIR}/ under the rootdir)",
    )
    option(
        "--inferperf-backend",
        "inferperf_backend",
        choices=backends.names(),
        default=None,
        help=f"counter backend: {backends.described()}; default auto",
    )


def _add_ini_only_keys(parser: pytest.Parser) -> None:
    """The keys set in the ini file only: when and how the simulate backend runs, progress lines."""
    parser.addini(
        "inferperf_simulate_without_pmu",
        type="bool",
        default=False,
        help="let --inferperf-backend auto use the simulate backend on machines "
        "without hardware counters (never chosen without this)",
    )
    parser.addini(
        "inferperf_simulate_shared",
        type="bool",
        default=True,
        help="simulate backend: run the simulated tests in shared valgrind children "
        "(each one's start-up paid once); false: one child per test",
    )
    parser.addini(
        "inferperf_simulate_children",
        default="auto",
        help="simulate backend: how many shared valgrind children split the session's "
        "simulated tests and measure them in parallel; auto: one per CPU (at most one "
        "per test)",
    )
    parser.addini(
        "inferperf_progress_interval",
        default="60",
        help="seconds between progress lines of a long profile when the output "
        "is not a terminal (CI logs); on a terminal one status is kept up "
        "to date in place; -q shows none",
    )


def _add_requirement_options(option: _Option) -> None:
    """What a run requires of the machine and the baselines, else a test fails."""
    option(
        "--inferperf-require-pmu",
        "inferperf_require_pmu",
        action="store_true",
        default=None,
        help="fail, instead of skip, a budget that needs counters this machine cannot count",
    )
    option(
        "--inferperf-require-baseline",
        "inferperf_require_baseline",
        action="store_true",
        default=None,
        help="fail a profiled test that has no baseline for this machine class and "
        "backend (a CI runner of a new class), instead of passing it with 'no baseline'; "
        "ignored with --inferperf-update-baselines",
    )


def _add_output_options(option: _Option) -> None:
    """The files a run writes and what the terminal report shows of failed tests."""
    option(
        "--inferperf-report",
        "inferperf_report",
        metavar="DIR",
        default=None,
        help="write each profile and verdict as JSON under DIR",
    )
    option(
        "--inferperf-json",
        "inferperf_json",
        metavar="PATH",
        default=None,
        help="write the whole run as one JSON document (commit, machine, every test's "
        "verdict and metrics, a github-action-benchmark list)",
    )
    option(
        "--inferperf-html",
        "inferperf_html",
        metavar="PATH",
        default=None,
        help="write the whole run as one self-contained HTML page (the table, then each "
        "test as inferperf analyse shows a model, flamegraphs embedded)",
    )
    option(
        "--inferperf-explain",
        "inferperf_explain",
        action="store_true",
        default=None,
        help="show the diagnosis's full reasoning for failed tests (also with -v)",
    )
    option(
        "--inferperf-flamegraphs",
        "inferperf_flamegraphs",
        choices=FLAMEGRAPH_CHOICES,
        default=None,
        help="attach flamegraphs (native perf stacks or Python stacks, ONNX Runtime "
        "operators, difference from the baseline) to failed tests (default), all "
        "profiled tests, or none",
    )


def _add_judging_options(option: _Option) -> None:
    """How a change against the baseline is judged: stale, inconclusive, confirmed in
    fresh processes, and the processes a new baseline is recorded over."""
    option(
        "--inferperf-fail-stale",
        "inferperf_fail_stale",
        action="store_true",
        default=None,
        help="fail a test whose baseline is stale (credibly better than the baseline)",
    )
    option(
        "--inferperf-strict",
        "inferperf_strict",
        action="store_true",
        default=None,
        help="fail, instead of warn about, an inconclusive change: one the noise floor "
        "(the machine's state now and at baseline time) cannot tell apart from the "
        "machine (for dedicated runners)",
    )
    option(
        "--inferperf-processes",
        "inferperf_processes",
        metavar="N",
        default=None,
        help="fresh processes a suspected timing regression is measured in before it "
        "fails (each process has its own memory layout and hash seed, which repeats "
        "inside one process cannot vary); 0: measure it again in this process only; "
        f"default {DEFAULT_PROCESSES}",
    )
    option(
        "--inferperf-baseline-processes",
        "inferperf_baseline_processes",
        metavar="N",
        default=None,
        help="processes a new baseline's timings are recorded over with "
        "--inferperf-update-baselines (this one and N-1 fresh ones), so later runs are "
        f"judged against the spread between processes; default {DEFAULT_BASELINE_PROCESSES}",
    )


#: Fresh processes a suspected timing regression is measured in (between_processes:
#: 4 fresh against 2 baseline processes leave 4 degrees of freedom).
DEFAULT_PROCESSES = 4
#: Processes a new baseline is recorded over: this one and one fresh process that
#: measures each test for fresh_processes.BASELINE_PROCESS_REPEATS repeats. Two give
#: the baseline a spread of its own at about 1.4x a plain run's cost; a third
#: process would add about half a plain run again (docs/benchmarks/update-cost.md)
#: for one more degree of freedom, where the four confirming processes already give
#: three. docs/benchmarks/process-noise-two-processes/ measured the verdicts with 2: no
#: false failure in 54 runs (quiet, beside a neighbour, beside a second copy), every
#: slowed test caught (18/18: x1.2 on a 1 ms loop, x1.5 on a 25 µs call, x3 beside the
#: neighbour).
DEFAULT_BASELINE_PROCESSES = 2


def _count(config: pytest.Config, name: str, default: int, least: int) -> int:
    """A process count option: a whole number >= ``least``."""
    value = _get(config, name)
    if value is None or str(value).strip() == "":
        return default
    try:
        count = int(str(value).strip())
    except ValueError:
        count = least - 1
    if count < least:
        flag = "--" + name.replace("_", "-")
        raise pytest.UsageError(
            f"{flag} / {name} = {value!r}: give a whole number of processes, {least} or "
            f"more (default {default})"
        )
    return count


def _get(config: pytest.Config, name: str) -> Any:
    value = config.getoption(name)
    return value if value is not None else config.getini(name)


def _choice(config: pytest.Config, name: str, choices: tuple[str, ...], default: str) -> str:
    value = _get(config, name) or default
    if value not in choices:
        raise pytest.UsageError(
            f"{name} = {value!r} in the ini file: choose one of {', '.join(choices)}"
        )
    return str(value)


def _children(value: str) -> int | None:
    """``inferperf_simulate_children``: a count, or None for ``auto`` (one per CPU)."""
    text = str(value).strip().lower()
    if text in ("", "auto"):
        return None
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise pytest.UsageError(
            f"inferperf_simulate_children = {value!r} in the ini file: give how many valgrind "
            "children the simulate backend may run at once (1 or more), or auto for one "
            "per CPU"
        )
    return count


@dataclass
class Settings:
    enabled: bool
    update: bool
    baselines: Path
    backend: str
    require_pmu: bool
    report_dir: Path | None
    run_json: Path | None
    run_html: Path | None
    fail_stale: bool
    strict: bool
    explain: bool
    flamegraphs: str
    flamegraphs_asked: bool  # --inferperf-flamegraphs (or its ini) named by the user
    worker_index: int | None
    workers: int
    simulate_children: int | None = None  # None: one per CPU
    processes: int = DEFAULT_PROCESSES  # fresh processes that confirm a timing regression
    baseline_processes: int = DEFAULT_BASELINE_PROCESSES  # processes a new baseline spans
    require_baseline: bool = False  # a profile without a baseline for its class fails

    @classmethod
    def from_config(cls, config: pytest.Config) -> Settings:
        root = Path(config.rootpath)
        baselines = _get(config, "inferperf_baselines")
        report = _get(config, "inferperf_report")
        run_json = _get(config, "inferperf_json")
        run_html = _get(config, "inferperf_html")
        backend = _choice(config, "inferperf_backend", backends.names(), "auto")
        workerinput = getattr(config, "workerinput", None)
        worker_index = None
        if workerinput is not None:
            worker_index = int(str(workerinput.get("workerid", "gw0"))[2:] or 0)
        workers = int(
            (workerinput or {}).get("workercount") or getattr(config.option, "numprocesses", 0) or 0
        )
        return cls(
            enabled=bool(_get(config, "inferperf") or _get(config, "inferperf_update_baselines")),
            update=bool(_get(config, "inferperf_update_baselines")),
            baselines=(root / baselines) if baselines else root / BASELINES_DIR,
            backend=backend,
            require_pmu=bool(_get(config, "inferperf_require_pmu")),
            report_dir=(root / report) if report else None,
            run_json=Path(config.invocation_params.dir, run_json) if run_json else None,
            run_html=Path(config.invocation_params.dir, run_html) if run_html else None,
            fail_stale=bool(_get(config, "inferperf_fail_stale")),
            strict=bool(_get(config, "inferperf_strict")),
            explain=bool(_get(config, "inferperf_explain")) or config.option.verbose > 0,
            flamegraphs=_choice(config, "inferperf_flamegraphs", FLAMEGRAPH_CHOICES, "failed"),
            flamegraphs_asked=bool(_get(config, "inferperf_flamegraphs")),
            worker_index=worker_index,
            workers=workers,
            simulate_children=_children(config.getini("inferperf_simulate_children")),
            processes=_count(config, "inferperf_processes", DEFAULT_PROCESSES, 0),
            baseline_processes=_count(
                config, "inferperf_baseline_processes", DEFAULT_BASELINE_PROCESSES, 1
            ),
            require_baseline=bool(_get(config, "inferperf_require_baseline")),
        )
