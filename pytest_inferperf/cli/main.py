"""The ``inferperf`` command line.

Owns: argument parsing, exit codes (0 ok, 1 regression or failure found,
2 usage error, 3 an unexpected error: one line, the traceback with ``-v``, 130
interrupted) and printing; each sub-command calls the engine.

Must not: measure or compute anything itself.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar

from ..core.default_paths import BASELINES_DIR, REPORT_DIR

if TYPE_CHECKING:  # the engine is imported by each command when it runs
    from ..measure.cache import ResultCache
    from ..measure.target import Analysis, Options

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_CRASH, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


def clean(text: str, *, keep_newlines: bool = False) -> str:
    """Text for the terminal: control characters from models or files shown escaped."""
    from ..report.terminal import clean as escape

    return escape(text, keep_newlines=keep_newlines)


T = TypeVar("T")


def terminal_safe(value: T) -> T:
    """A copy of a Profile, Verdict or comparison with every string in it escaped, so a
    name with a newline cannot split a row of the rendered (multi-line) text."""
    from ..report.terminal_safe import terminal_safe as escaped

    return escaped(value)


def _doctor(args: argparse.Namespace) -> int:
    from ..measure import backends
    from ..pmu.doctor import run_doctor
    from ..report.doctor import render_json, render_text

    report = run_doctor(backends=backends.statuses())
    print(render_json(report) if args.json else render_text(report))
    return EXIT_OK


def _explain(args: argparse.Namespace) -> int:
    from ..diagnose.classify import RuleContext, diagnose_in
    from ..diagnose.hooks import PluginLoadError, diagnosis_additions, registry
    from ..diagnose.thresholds_by_core import check_core, core_facts, resolve_core
    from ..ingest.perf_stat import PerfStatError, load_report
    from ..report.explain import explain_json, explain_text

    arch = None
    cpu = ""
    if args.cpu:
        problem = check_core(args.cpu)
        if problem:
            print(f"inferperf explain: {problem}", file=sys.stderr)
            return EXIT_USAGE
        cpu = resolve_core(args.cpu) or args.cpu  # what users type -> the core's slug
        family = core_facts(cpu).family
        arch = "x86" if family == "x86" else ("arm" if family.startswith("arm") else None)
    try:
        report = load_report(args.file, arch=arch)
    except PerfStatError as exc:
        print(f"inferperf explain: {exc}", file=sys.stderr)
        return EXIT_USAGE
    hint = report.core_hint or ""
    core = cpu or resolve_core(hint) or hint  # a file's name for its core, as --cpu's
    report = report.on_core(core)
    # Per-core formula constants (core.metrics.TOPDOWN_MODELS) are keyed by the core's
    # row: detection's 'amd-epyc-zen4' is the 'amd-zen4' row.
    metrics = report.metrics(core_facts(core).slug if core else "", calls=args.calls or 1)

    # A perf stat run does not know its calls: without --calls, per-call values are totals.
    def kept(name: str) -> bool:
        return bool(args.calls) or not name.endswith("_per_call")

    metrics = {k: v for k, v in metrics.items() if kept(k)}
    session: dict[str, object] | None = None
    if args.intra_op_threads is not None or args.spinning is not None:
        session = {}
        if args.intra_op_threads is not None:
            session["intra_op_threads"] = args.intra_op_threads
        if args.spinning is not None:
            session["allow_spinning"] = args.spinning == "on"
    ctx = RuleContext.of(core, unavailable=report.unavailable, session=session, cpu_count=args.cpus)
    counted = [(run.counts, run.context(core, args.calls or 1)) for run in report.runs]
    try:
        added, findings = diagnosis_additions(registry(), counted, metrics, ctx, keep=kept)
    except PluginLoadError as exc:
        print(f"inferperf explain: {exc}", file=sys.stderr)
        return EXIT_USAGE
    metrics = {**metrics, **added}
    diagnosis = diagnose_in(ctx, metrics, extra_findings=findings)
    if args.json:
        import json

        document = explain_json(
            str(args.file), report, core, metrics, diagnosis, core_given=bool(args.cpu)
        )
        print(json.dumps(document, indent=2))
        return EXIT_OK
    text = explain_text(str(args.file), report, core, metrics, diagnosis, verbose=args.verbose)
    print(clean(text, keep_newlines=True))
    return EXIT_OK


def _metrics(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from ..core.metrics import METRICS

    rows = [
        (
            name,
            m.description + (f" ({m.unit})" if m.unit else ""),
            m.better,
            ", ".join(m.inputs) or "timer / memory",
            f"{m.tolerance:.0%}",
            "yes" if m.gates else "no",
        )
        for name, m in METRICS.items()
    ]
    print(
        tabulate(
            rows,
            headers=("metric", "what", "better", "inputs", "tolerance", "gates"),
            disable_numparse=True,
        )
    )
    print("\nBudget keywords: <metric>_min=, <metric>_max= in @pytest.mark.perf(...).")
    return EXIT_OK


# -- analyse | validate | compare --------------------------------------------------------
class _ProgressLine:
    """One line on stderr saying what is being measured; rewritten in place on a terminal."""

    def __init__(self, stream=None) -> None:
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.label = ""
        self._phase = ""
        self._shown = False

    def for_target(self, label: str) -> Callable[[str], None]:
        self.label, self._phase = label, ""
        return self.update

    def update(self, text: str) -> None:
        line = clean(f"measuring {self.label}: {text}")  # a file name can hold escapes
        if self.tty:
            self.stream.write(f"\r\x1b[K{line}")
            self._shown = True
        else:  # a log, not a terminal: one line per phase, not per repeat
            phase = text.split(" ", 1)[0]
            if phase == self._phase:
                return
            self._phase = phase
            self.stream.write(line + "\n")
        self.stream.flush()

    def clear(self) -> None:
        if self.tty and self._shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._shown = False


def _shape_arg(text: str) -> tuple[str, str]:
    from ..measure.target import parse_shape_arg

    try:
        return parse_shape_arg(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(_worded(exc)) from None


def _quality_arg(text: str) -> tuple[str, float]:
    import math

    name, sep, value = text.rpartition("=")
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not sep or not name or not math.isfinite(number):
        raise argparse.ArgumentTypeError(
            f"--quality {text!r}: write NAME=VALUE, e.g. mobilenet_v2=0.718 (NAME is a "
            "compared variant, VALUE a finite number such as its accuracy)"
        )
    return name, number


def _options(args: argparse.Namespace, **defaults: object) -> Options:
    from ..measure.target import Options

    values = {k: getattr(args, k) for k in ("threads", "warmup", "repeat", "timeout", "backend")}
    values = {k: (defaults[k] if v is None and k in defaults else v) for k, v in values.items()}
    return Options(
        shapes=tuple(args.shape or ()),
        flamegraph=getattr(args, "flamegraph", False),
        **{k: v for k, v in values.items() if v is not None},
    )


def _cache(args: argparse.Namespace) -> ResultCache:
    from ..measure.cache import ResultCache, cache_dir

    return ResultCache(cache_dir(args.cache_dir))


def _when(stored: str) -> str:
    try:
        return datetime.fromisoformat(stored).strftime("%Y-%m-%d %H:%M UTC")
    except ValueError:
        return stored or "an earlier run"


#: How this command line spells each setting the engine's messages name (errors.SETTINGS).
SPELLING = {
    "shape": "--shape",
    "threads": "--threads",
    "backend": "--backend",
    "tolerance": "--tolerance",
    "quality": "--quality",
    "quantize": "--quantize",
    "out": "--out",
    "baseline": "--baseline",
    "any_model": "--any-model",
    "processes": "--processes",
    "timeout": "the timeout (--timeout)",
}


def _worded(exc: BaseException) -> str:
    """An engine error's message with its settings named as this command line spells them."""
    from ..core.errors import InferperfError

    return exc.text(SPELLING) if isinstance(exc, InferperfError) else str(exc)


def _usage(command: str, exc: Exception) -> int:
    print(clean(f"inferperf {command}: {_worded(exc)}", keep_newlines=True), file=sys.stderr)
    return EXIT_USAGE


def _analyse_entry(
    target: str, options: Options, args: argparse.Namespace, out: str, progress: _ProgressLine
) -> Analysis:
    from ..measure.target import analyse_target

    try:
        result = analyse_target(
            target,
            options,
            out_dir=out,
            cache=_cache(args),
            force=args.force,
            progress=progress.for_target(os.path.basename(target)),
        )
    finally:
        progress.clear()
    if result.cached:
        print(
            clean(
                f"{target}: cached result from {_when(result.cached.stored)}; "
                "--force to measure again"
            ),
            file=sys.stderr,
        )
    for note in result.notes:
        print(clean(f"{target}: {note}"), file=sys.stderr)
    return result


def _analyse_cmd(args: argparse.Namespace) -> int:
    from ..core.errors import UsageError
    from ..diagnose.assessment import assess_profile
    from ..diagnose.hooks import PluginLoadError, hook_results, registry
    from ..report import markdown, text
    from ..report.files import write_analysis

    progress = _ProgressLine()
    try:
        options = _options(args, threads=1, warmup=3, repeat=30, timeout=60.0, backend="perf")
        plugins = registry()  # a plugin that cannot load fails before measuring
        result = _analyse_entry(args.target, options, args, args.out, progress)
        added, findings = hook_results(plugins, result.profile)
        assessment = assess_profile(  # judged once, hooks included; every output reads it
            result.profile, extra_metrics=added, extra_findings=findings
        )
        files = write_analysis(assessment, args.out, title=f"inferperf: {args.target}")
    except (UsageError, TimeoutError, PluginLoadError) as exc:
        return _usage("analyse", exc)
    profile = result.profile
    if args.json:
        print(profile.to_json())
    else:
        shown = terminal_safe(assessment)  # names escaped, the layout kept
        print(clean(text.render_profile(shown), keep_newlines=True))
        print()
        print(f"wrote {files['json']} and {files['html']}")
    markdown.append_step_summary(markdown.render_profile(assessment))
    if not profile.outputs_ok:
        print(f"inferperf analyse: {args.target} returned NaN or infinity", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def _validate_cmd(args: argparse.Namespace) -> int:
    from ..core.errors import UsageError
    from ..report import markdown
    from ..report.verdict import change_summary, failure_text
    from .validate import validate_target

    progress = _ProgressLine()
    overrides = {k: getattr(args, k) for k in ("threads", "warmup", "repeat", "timeout", "backend")}
    try:
        result = validate_target(
            args.target,
            args.baseline,
            tolerance=args.tolerance,
            overrides=overrides,
            shapes=tuple(args.shape or ()),
            any_model=args.any_model,
            strict=args.strict,
            progress=progress.for_target(os.path.basename(args.target)),
            processes=args.processes,
        )
    except (UsageError, TimeoutError) as exc:
        return _usage("validate", exc)
    finally:
        progress.clear()
    markdown.append_step_summary(
        markdown.render_validation(result.label, result.baseline_path, result.verdict)
    )
    verdict = terminal_safe(result.verdict)  # names from the files escaped, the layout kept
    if verdict.failed:
        print(clean(failure_text(verdict), keep_newlines=True))
        return EXIT_FAILED
    if verdict.outcome == "inconclusive":
        print(
            clean(
                f"inconclusive: {result.label} against {result.baseline_path}: "
                f"{change_summary(verdict)}"
            )
        )
        for reason in verdict.inconclusive:
            print(clean(f"  {reason}"))
        print("  (a warning, not a failure; --strict fails it)")
        return EXIT_OK
    print(clean(f"ok: {result.label} against {result.baseline_path}: {change_summary(verdict)}"))
    return EXIT_OK


def _compare_cmd(args: argparse.Namespace) -> int:
    from dataclasses import replace
    from pathlib import Path

    from ..core.errors import UsageError
    from ..diagnose.hooks import PluginLoadError, registry
    from ..measure.target import Analysis, load_profile
    from ..onnxrt.quantize import quantize_dynamic
    from ..report import markdown, text
    from ..report.files import write_comparison
    from .compare import entry_labels, side_by_side

    progress = _ProgressLine()
    targets = list(args.targets)
    try:
        try:
            plugins = registry()  # before measuring: a plugin that cannot load wastes no run
        except PluginLoadError as exc:
            raise UsageError(str(exc)) from None
        if args.quantize:
            if len(targets) != 1 or targets[0].endswith(".json"):
                raise UsageError(
                    "--quantize dynamic takes exactly one ONNX model: "
                    "`inferperf compare model.onnx --quantize dynamic`."
                )
            source = Path(targets[0])
            quantized = Path(args.out) / f"{source.stem}_int8_dynamic.onnx"
            print(f"quantizing {source} -> {quantize_dynamic(source, quantized)}", file=sys.stderr)
            targets.append(str(quantized))
        if len(targets) < 2:
            raise UsageError(
                "compare needs at least two profiles or models, or one model "
                "with --quantize dynamic."
            )
        options = _options(args, threads=1, warmup=3, repeat=30, timeout=60.0, backend="perf")
        entries = []
        for target in targets:
            if target.endswith(".json"):
                entries.append(Analysis(target, target, load_profile(target, "profile")))
            else:
                entries.append(_analyse_entry(target, options, args, args.out, progress))
        labels = entry_labels(targets, [e.profile for e in entries])
        entries = [replace(e, label=label) for e, label in zip(entries, labels, strict=True)]
        side = side_by_side(
            entries,
            quality=args.quality or (),
            quality_higher_is_better=not args.quality_lower_is_better,
            any_model=args.any_model,
            plugins=plugins,
        )
        side, files = write_comparison(
            side, args.out, title=f"inferperf compare: {', '.join(labels)}"
        )
    except (UsageError, TimeoutError) as exc:
        return _usage("compare", exc)
    print(clean(text.render_comparison(terminal_safe(side), args.out), keep_newlines=True))
    print()
    print(f"wrote {files['json']} and {files['html']}")
    markdown.append_step_summary(markdown.render_comparison(side))
    return EXIT_FAILED if side.failed else EXIT_OK


def _accept_cmd(args: argparse.Namespace) -> int:
    from ..core.errors import UsageError
    from ..report.terminal import text_width, written_lines
    from .accept import (
        busy_text,
        plan,
        read_run_outputs,
        refused_text,
        written_text,
    )

    try:
        chosen = plan(read_run_outputs(args.inputs), match=args.k)
    except UsageError as exc:
        return _usage("accept", exc)
    said = f"inferperf accept: {chosen.read} record(s) read"
    if chosen.run_documents:
        said += f", checked against {', '.join(chosen.run_documents)}"
    if chosen.unmatched:
        said += f", {chosen.unmatched} not matching -k"
    if chosen.ignored:
        said += f"; ignored {len(chosen.ignored)} JSON file(s) that are no record: " + (
            ", ".join(chosen.ignored[:3]) + (", ..." if len(chosen.ignored) > 3 else "")
        )
    print(clean(said))
    ok = not chosen.refused
    for refusal in chosen.refused:
        print(clean(refused_text(refusal)))
    for kept in chosen.kept:
        print(clean(f"kept {kept.key}: {kept.reason}"))
    written = 0
    for done in chosen.write(args.baselines or BASELINES_DIR, dry_run=args.dry_run):
        shown = str(done.path) if done.path is not None else ""
        wrote, text = written_text(done, shown, dry_run=args.dry_run)
        ok = ok and wrote
        written += wrote
        width = text_width(shutil.get_terminal_size().columns, sys.stdout.isatty())
        print("\n".join(written_lines(text, width)))  # as the plugin's summary shows it
        warning = busy_text(done.record) if wrote else None
        if warning:
            print(clean(f"warning: {warning}"))
    refused = len(chosen.refused) + len(chosen.records) - written
    verb = "would be written (--dry-run: nothing written)" if args.dry_run else "written"
    print(f"inferperf accept: {written} baseline(s) {verb}, {refused} not accepted")
    return EXIT_OK if ok else EXIT_FAILED


def _add_accept_command(sub: argparse._SubParsersAction) -> None:
    accept = sub.add_parser(
        "accept",
        help="write baselines from a pytest --inferperf run's outputs, without measuring",
        description="Write the profiles a pytest --inferperf run measured (its "
        "--inferperf-report folder; its --inferperf-json run JSON is checked against it) as "
        "baselines, as --update-baselines would have: a test that passed, or failed on its "
        "own profile's verdict (a regression now accepted). Refused, each with its reason: "
        "a test that failed otherwise, a partial profile, two tests sharing a file, one key "
        "measured differently in two inputs. Exit status: 0 all accepted, 1 some refused, "
        "2 an input missing, corrupt or holding no record (nothing written).",
    )
    accept.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help="a report folder (--inferperf-report DIR), a run JSON (--inferperf-json) "
        "or a record file",
    )
    accept.add_argument(
        "--baselines",
        metavar="DIR",
        help="baseline folder (default ./baselines, the plugin's default)",
    )
    accept.add_argument(
        "--dry-run", action="store_true", help="say what would be written; write nothing"
    )
    accept.add_argument(
        "-k", metavar="SUBSTRING", help="accept only the keys that contain SUBSTRING"
    )
    _verbose(accept)
    accept.set_defaults(func=_accept_cmd)


def _measure_options(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    """Options of every command that measures; without defaults they follow the baseline."""

    def shown(value: object) -> str:
        return f" (default {value})" if defaults else " (default: as the baseline was)"

    parser.add_argument(
        "--shape",
        action="append",
        type=_shape_arg,
        metavar="NAME=DIMS",
        help="a symbolic dimension (sequence=128, batch=1) or a whole input "
        "(input_ids=1x128); repeatable. Default batch=1, sequence=128",
    )
    parser.add_argument(
        "--warmup",
        type=int,
        metavar="N",
        help="warm-up calls before the steady-state check" + shown(3),
    )
    parser.add_argument(
        "--repeat",
        type=int,
        metavar="N",
        help="measured repeats, each counted separately" + shown(30),
    )
    parser.add_argument(
        "--timeout",
        type=float,
        metavar="S",
        help="seconds for warm-up and repeats; partial results after it" + shown(60),
    )
    parser.add_argument(
        "--threads", type=int, metavar="N", help="ONNX Runtime intra-op threads" + shown(1)
    )
    from ..measure import backends  # the one list of backends (standard library only)

    parser.add_argument(
        "--backend",
        choices=backends.names(),
        help=f"how to measure: {backends.described()}; one that cannot run here says why"
        + shown("perf"),
    )


def _verbose(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="the full traceback of an unexpected error"
    )


def _cache_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--force", action="store_true", help="measure again even when a cached result exists"
    )
    parser.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="result cache (default $INFERPERF_CACHE_DIR, else "
        "$XDG_CACHE_HOME/inferperf, else ~/.cache/inferperf)",
    )


def _add_measuring_commands(sub: argparse._SubParsersAction) -> None:
    """The commands that measure, in the order ``inferperf --help`` lists them."""
    _add_analyse_command(sub)
    _add_validate_command(sub)
    _add_compare_command(sub)


def _add_analyse_command(sub: argparse._SubParsersAction) -> None:
    analyse = sub.add_parser(
        "analyse",
        aliases=["analyze"],
        help="measure an ONNX model or a Python callable; terminal, JSON and HTML report",
        description="Measure MODEL.onnx (or MODULE:CALLABLE, called with no arguments) the "
        "way `pytest --inferperf` does, then the operator table, roofline and energy in "
        "separate passes. Writes DIR/report.json (the Profile) and DIR/report.html. Exit "
        "status: 0 measured, 1 the outputs held NaN or infinity, 2 usage error.",
    )
    analyse.add_argument("target", metavar="MODEL.onnx|MODULE:CALLABLE")
    _measure_options(analyse, defaults=True)
    analyse.add_argument(
        "--out",
        metavar="DIR",
        default=REPORT_DIR,
        help=f"report folder (default ./{REPORT_DIR})",
    )
    analyse.add_argument(
        "--flamegraph",
        action="store_true",
        help="also sample native and Python stacks (a separate pass) and "
        "write flamegraphs under DIR/flamegraphs",
    )
    analyse.add_argument(
        "--json", action="store_true", help="print the Profile as JSON instead of the report"
    )
    _cache_options(analyse)
    _verbose(analyse)
    analyse.set_defaults(func=_analyse_cmd)


def _add_validate_command(sub: argparse._SubParsersAction) -> None:
    validate = sub.add_parser(
        "validate",
        help="measure again (or load a report) and judge it against a baseline",
        description="Judge TARGET against --baseline with the plugin's verdict (same "
        "tolerances, statistics and gating). A model is measured again with the baseline's "
        "settings; a .json is a saved Profile. Exit status: 0 ok (or inconclusive: a change "
        "the machine's state can explain), 1 regression, 2 usage error (missing or "
        "unreadable file, another machine class or backend, a baseline of another model).",
    )
    validate.add_argument("target", metavar="MODEL.onnx|report.json|MODULE:CALLABLE")
    validate.add_argument(
        "--baseline",
        required=True,
        metavar="FILE",
        help="a saved Profile: report.json of `inferperf analyse`, or a "
        "baseline file of the plugin",
    )
    validate.add_argument(
        "--tolerance",
        type=float,
        metavar="X",
        help="relative tolerance for every metric (0.1 = 10%%); default: "
        "each metric's own (`inferperf metrics`)",
    )
    validate.add_argument(
        "--any-model",
        action="store_true",
        help="compare with a baseline of another model (content hash or "
        "input shapes differ) instead of refusing it",
    )
    validate.add_argument(
        "--strict",
        action="store_true",
        help="fail an inconclusive change (one within the noise floor of "
        "the machine's state) instead of warning",
    )
    validate.add_argument(
        "--processes",
        type=int,
        default=4,
        metavar="N",
        help="a timing regression that alone would fail is measured again in N fresh "
        "processes and fails only if it holds across them (default 4; 0: judge the one "
        "measurement), as the plugin's --inferperf-processes",
    )
    _measure_options(validate, defaults=False)
    _verbose(validate)
    validate.set_defaults(func=_validate_cmd)


def _add_compare_command(sub: argparse._SubParsersAction) -> None:
    compare = sub.add_parser(
        "compare",
        help="profiles and models side by side, deltas against the first",
        description="Compare report.json profiles and ONNX models (analysed, cached) with "
        "the first: metrics, operator types, a differential operator flamegraph, and the "
        "Pareto front with --quality. Writes DIR/compare.json and DIR/compare.html. Exit "
        "status: 0 ok, 1 a credible regression against the first, 2 usage error.",
    )
    compare.add_argument("targets", nargs="+", metavar="A", help="report.json or MODEL.onnx")
    compare.add_argument(
        "--quantize",
        choices=("dynamic",),
        help="compare one model with its dynamically quantised int8 variant",
    )
    compare.add_argument(
        "--quality",
        action="append",
        type=_quality_arg,
        metavar="NAME=VALUE",
        help="a quality score (accuracy, F1...) of a variant; marks the "
        "latency/quality Pareto front. Repeatable",
    )
    compare.add_argument(
        "--any-model",
        action="store_true",
        help="compare saved profiles of different models (content hash or input "
        "shapes differ) instead of refusing them",
    )
    compare.add_argument(
        "--quality-lower-is-better",
        action="store_true",
        help="the quality score is an error or a loss",
    )
    compare.add_argument(
        "--out",
        metavar="DIR",
        default=REPORT_DIR,
        help=f"report folder (default ./{REPORT_DIR})",
    )
    _measure_options(compare, defaults=True)
    _cache_options(compare)
    _verbose(compare)
    compare.set_defaults(func=_compare_cmd)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="inferperf",
        description="Explain why CPU inference got slower, from the CPU's performance counters.",
    )
    from ..core.version import version

    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    doctor = sub.add_parser(
        "doctor", help="what this machine can count, what it cannot and why; the machine class"
    )
    doctor.add_argument("--json", action="store_true", help="machine-readable output")
    _verbose(doctor)
    doctor.set_defaults(func=_doctor)
    metrics = sub.add_parser(
        "metrics", help="every metric: what it is, its inputs, its baseline tolerance"
    )
    _verbose(metrics)
    metrics.set_defaults(func=_metrics)
    explain = sub.add_parser(
        "explain",
        help="diagnose a saved 'perf stat' output (text, -x, CSV or -j JSON)",
        description="Read perf stat output, compute the metrics and explain why the run is "
        "slow. Several runs in one file are kept apart. Exit status: 0 explained, 2 "
        "unreadable or not perf stat output, or an unknown --cpu.",
    )
    explain.add_argument(
        "file",
        metavar="FILE",
        help="perf stat output (text, -x CSV, -j JSON), or Arm topdown-tool's or Intel "
        "toplev's output",
    )
    from ..diagnose.thresholds_by_core import CORE_NAME_EXAMPLES

    explain.add_argument(
        "--cpu",
        metavar="CORE",
        help="the core when the file does not name it: a slug or a name as users type it, "
        f"e.g. {', '.join(CORE_NAME_EXAMPLES)} (every name: docs/diagnosis.md, 'Naming a core')",
    )
    explain.add_argument(
        "--calls", type=int, metavar="N", help="inference calls in the run, for per-call metrics"
    )
    explain.add_argument("--cpus", type=int, metavar="N", help="CPUs the run could use")
    explain.add_argument(
        "--intra-op-threads",
        type=int,
        metavar="N",
        help="ONNX Runtime intra_op_num_threads of the run",
    )
    explain.add_argument(
        "--spinning",
        choices=("on", "off"),
        help="whether ORT's session.intra_op.allow_spinning was on",
    )
    explain.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="every event, every finding and the full reasoning",
    )
    explain.add_argument(
        "--json",
        action="store_true",
        help="the parsed runs, metrics and diagnosis as JSON (for scripts)",
    )
    explain.set_defaults(func=_explain)
    _add_measuring_commands(sub)
    _add_accept_command(sub)
    return parser


#: Commands that run a model (ONNX Runtime's telemetry is kept out of their counts).
MEASURING_COMMANDS = ("analyse", "validate", "compare")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    return run(args)


def run(args: argparse.Namespace) -> int:
    """Run parsed arguments: the command's exit status; 3 for any unexpected error."""
    try:
        if args.command in MEASURING_COMMANDS:  # before ONNX Runtime is imported
            from ..onnxrt.telemetry import keep_out_of_measurements

            keep_out_of_measurements()
        return int(args.func(args))
    except KeyboardInterrupt:
        print(f"inferperf {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        return _crashed(args, exc)


def _crashed(args: argparse.Namespace, exc: BaseException) -> int:
    """An unexpected error: one line naming it (the traceback with -v), exit status 3."""
    if isinstance(exc, MemoryError):
        cause = "ran out of memory (MemoryError): lower --shape, --repeat or the model's size"
    else:
        cause = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    print(
        f"inferperf {args.command}: unexpected error, {clean(cause)[:2000]}. This is a "
        "bug of inferperf or of the workload; "
        + (
            "the traceback follows."
            if getattr(args, "verbose", False)
            else "run again with -v for the traceback."
        ),
        file=sys.stderr,
    )
    if getattr(args, "verbose", False):
        import traceback

        traceback.print_exception(exc, file=sys.stderr)
    return EXIT_CRASH


if __name__ == "__main__":
    raise SystemExit(main())
