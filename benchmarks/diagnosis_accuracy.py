"""How often does ``inferperf explain`` name the bottleneck the author named?

Owns: running every case of the public corpus (``tests/fixtures/perfstat/corpus``: real
``perf stat`` outputs published with their author's own conclusion, one ``.txt`` with a
``.json`` sidecar each) through the real command (``inferperf explain --json``), and
printing the accuracy on the primary category with every miss and its reason.

Must not: change a case, or judge anything itself (the expected categories come from
the sidecars, which derive them from the authors' text).

    python benchmarks/diagnosis_accuracy.py          # table, accuracy, misses
    python benchmarks/diagnosis_accuracy.py --json   # the same as data
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests" / "fixtures" / "perfstat" / "corpus"


@dataclass(frozen=True)
class Outcome:
    name: str
    cpu: str | None
    expected: tuple[str, ...]
    got: str  # the primary category, or "none"
    confidence: float | None
    known_miss: str | None  # the sidecar's explanation of an expected miss

    @property
    def hit(self) -> bool:
        return self.got in self.expected


def cases(corpus: Path = CORPUS) -> list[tuple[str, dict]]:
    """(name, sidecar) of every corpus case, sorted by name."""
    return [(p.stem, json.loads(p.read_text())) for p in sorted(corpus.glob("*.json"))]


def explain_json(path: Path, cpu: str | None) -> dict:
    """``inferperf explain --json`` of one file, as data."""
    from pytest_inferperf.cli import main

    args = ["explain", str(path), "--json"] + (["--cpu", cpu] if cpu else [])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(args)
    if status != 0:
        raise RuntimeError(f"inferperf explain {path.name} exited {status}")
    return json.loads(out.getvalue())


def run_case(name: str, case: dict, corpus: Path = CORPUS) -> Outcome:
    data = explain_json(corpus / f"{name}.txt", case.get("cpu"))
    primary = data["diagnosis"]["primary"]
    return Outcome(
        name,
        case.get("cpu"),
        tuple(case["expected"]),
        primary["category"] if primary else "none",
        primary["confidence"] if primary else None,
        case.get("xfail"),
    )


def evaluate(corpus: Path = CORPUS) -> list[Outcome]:
    return [run_case(name, case, corpus) for name, case in cases(corpus)]


def report(outcomes: list[Outcome]) -> str:
    hits = sum(o.hit for o in outcomes)
    width = max(len(o.name) for o in outcomes)
    gots = [o.got + (f" {o.confidence:.2f}" if o.confidence is not None else "") for o in outcomes]
    exp_width = max(len("expected (author)"), *(len(" | ".join(o.expected)) for o in outcomes))
    got_width = max(len("got"), *(len(g) for g in gots))
    lines = [f"{'case':<{width}}  {'expected (author)':<{exp_width}}  {'got':<{got_width}}  ok"]
    for o, got in zip(outcomes, gots, strict=True):
        lines.append(
            f"{o.name:<{width}}  {' | '.join(o.expected):<{exp_width}}  "
            f"{got:<{got_width}}  {'yes' if o.hit else 'NO'}"
        )
    lines.append("")
    lines.append(
        f"accuracy on the primary category: {hits}/{len(outcomes)} = {hits / len(outcomes):.1%}"
    )
    misses = [o for o in outcomes if not o.hit]
    if misses:
        lines.append("misses:")
        for o in misses:
            why = o.known_miss or "not explained yet: read the case and the rules"
            lines.append(f"  {o.name}: expected {' or '.join(o.expected)}, got {o.got}. {why}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the outcomes as JSON")
    args = parser.parse_args(argv)
    outcomes = evaluate()
    if args.json:
        hits = sum(o.hit for o in outcomes)
        print(
            json.dumps(
                {
                    "cases": len(outcomes),
                    "hits": hits,
                    "accuracy": hits / len(outcomes),
                    "outcomes": [{**vars(o), "hit": o.hit} for o in outcomes],
                },
                indent=2,
            )
        )
    else:
        print(report(outcomes))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    raise SystemExit(main())
