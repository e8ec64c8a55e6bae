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
