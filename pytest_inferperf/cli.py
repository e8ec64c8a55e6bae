"""The ``inferperf`` command line.

Owns: argument parsing, exit codes (0 ok, 1 regression or failure found,
2 usage error) and printing; each sub-command calls the engine.

Must not: measure or compute anything itself.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _doctor(args: argparse.Namespace) -> int:
    from .doctor import render_json, render_text, run_doctor

    report = run_doctor()
    print(render_json(report) if args.json else render_text(report))
    return EXIT_OK


def _explain(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from .classify import diagnose, render
    from .metrics import METRICS, compute
    from .perfstat import PerfStatError, load
    from .thresholds import core_facts

    arch = None
    if args.cpu:
        family = core_facts(args.cpu).family
        arch = "x86" if family == "x86" else ("arm" if family.startswith("arm") else None)
    try:
        stat = load(args.file, arch=arch)
    except PerfStatError as exc:
        print(f"inferperf explain: {exc}", file=sys.stderr)
        return EXIT_USAGE
    core = args.cpu or stat.core_hint or ""
    metrics = compute(stat.counts, stat.context(core, calls=args.calls or 1))
    if not args.calls:  # a perf stat run does not know its calls: per-call values are totals
        metrics = {k: v for k, v in metrics.items() if not k.endswith("_per_call")}
    session: dict[str, object] | None = None
    if args.intra_op_threads is not None or args.spinning is not None:
        session = {}
        if args.intra_op_threads is not None:
            session["intra_op_threads"] = args.intra_op_threads
        if args.spinning is not None:
            session["allow_spinning"] = args.spinning == "on"
    diagnosis = diagnose(metrics, core=core, unavailable=stat.unavailable, session=session,
                         cpu_count=args.cpus)

    where = f"{args.file} ({stat.format}"
    where += f", {stat.elapsed_s:.3f} s elapsed)" if stat.elapsed_s else ")"
    print(f"perf stat: {where}; core: {core or 'unknown (pass --cpu)'}")
    if args.verbose:
        rows = [(e.event.text, "-" if (n := _logical(e, stat.arch)) is None else n,
                 e.status if e.value is None else f"{e.value:,.2f}".rstrip("0").rstrip("."),
                 e.unit, "" if e.running_pct is None else f"{e.running_pct:.2f}%")
                for e in stat.entries]
        print(tabulate(rows, headers=("perf event", "logical", "value", "unit", "running"),
                       disable_numparse=True))
        print()
    rows = []
    for name, value in metrics.items():
        spec = METRICS[name]
        mux = [stat.multiplexed[i] for i in spec.inputs if i in stat.multiplexed]
        rows.append((name, _value(value), spec.unit, spec.description,
                     f"{min(mux):.0f}%" if mux else ""))
    print(tabulate(rows, headers=("metric", "value", "unit", "what", "running"),
                   disable_numparse=True))
    if stat.unavailable:
        print("not counted: " + "; ".join(f"{k} ({v})" for k, v in stat.unavailable.items()))
    if stat.unmapped:
        print("ignored (no logical name): " + ", ".join(stat.unmapped))
    print()
    print(render(diagnosis, verbose=args.verbose))
    return EXIT_OK


def _logical(entry, arch: str) -> str | None:
    from .perfstat import logical_name

    return logical_name(entry.event, arch)


def _value(value: float) -> str:
    if abs(value) >= 1e6:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:,.1f}"
    return f"{value:.3f}"


def _metrics(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from .compare import DEFAULT_TOLERANCES, FALLBACK_TOLERANCE
    from .metrics import METRICS
    from .verdict import GATED_METRICS

    rows = [
        (name, m.description + (f" ({m.unit})" if m.unit else ""), m.better,
         ", ".join(m.inputs) or "timer / memory",
         f"{DEFAULT_TOLERANCES.get(name, FALLBACK_TOLERANCE):.0%}",
         "yes" if name in GATED_METRICS else "no")
        for name, m in METRICS.items()
    ]
    print(tabulate(rows, headers=("metric", "what", "better", "inputs", "tolerance", "gates"),
                   disable_numparse=True))
    print("\nBudget keywords: <metric>_min=, <metric>_max= in @pytest.mark.perf(...).")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="inferperf",
        description="Explain why CPU inference got slower, from the CPU's performance counters.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    doctor = sub.add_parser(
        "doctor", help="what this machine can count, what it cannot and why; the machine class"
    )
    doctor.add_argument("--json", action="store_true", help="machine-readable output")
    doctor.set_defaults(func=_doctor)
    metrics = sub.add_parser(
        "metrics", help="every metric: what it is, its inputs, its baseline tolerance"
    )
    metrics.set_defaults(func=_metrics)
    explain = sub.add_parser(
        "explain", help="diagnose a saved 'perf stat' output (text, -x, CSV or -j JSON)",
        description="Read perf stat output, compute the metrics and explain why the run is "
        "slow. Exit status: 0 explained, 2 unreadable or not perf stat output.",
    )
    explain.add_argument("file", metavar="FILE", help="perf stat output (text, -x, CSV, -j)")
    explain.add_argument("--cpu", metavar="CORE",
                         help="core slug when the file does not name it, e.g. cortex-a72, "
                              "neoverse-n1, neoverse-v2")
    explain.add_argument("--calls", type=int, metavar="N",
                         help="inference calls in the run, for per-call metrics")
    explain.add_argument("--cpus", type=int, metavar="N", help="CPUs the run could use")
    explain.add_argument("--intra-op-threads", type=int, metavar="N",
                         help="ONNX Runtime intra_op_num_threads of the run")
    explain.add_argument("--spinning", choices=("on", "off"),
                         help="whether ORT's session.intra_op.allow_spinning was on")
    explain.add_argument("-v", "--verbose", action="store_true",
                         help="every event, every finding and the full reasoning")
    explain.set_defaults(func=_explain)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
