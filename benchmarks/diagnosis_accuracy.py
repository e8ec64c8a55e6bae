"""How often does ``inferperf explain`` name the bottleneck the author named?

Owns: running every case of the public corpus (``tests/fixtures/perfstat/corpus``: real
``perf stat`` outputs published with their author's own conclusion, one ``.txt`` with a
``.json`` sidecar each) through the real command (``inferperf explain --json``), and
printing the accuracy on the primary category per half (tuning, held-out, all) with every
miss and its reason; and the rule that puts a case in a half (:func:`assign_halves`).

Must not: change a case, or judge anything itself (the expected categories come from
the sidecars, which derive them from the authors' text).

    python benchmarks/diagnosis_accuracy.py          # table, accuracy per half, misses
    python benchmarks/diagnosis_accuracy.py --json   # the same as data

Halves. The *tuning* half is what rules and thresholds may be checked against while they
are written; the *held-out* half is only measured, so its accuracy says how the rules do
on outputs they were not fitted to. A sidecar without ``"half"`` is tuning (the first 24
cases). Cases that carry a ``"group"`` (the publication they come from) were split by
:func:`assign_halves` before any of them was run through the tool.
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
HALVES = ("tuning", "held-out")
UNREADABLE = "unreadable"  # `inferperf explain` refused the file (exit status 2)


@dataclass(frozen=True)
class Outcome:
    name: str
    cpu: str | None
    expected: tuple[str, ...]
    got: str  # the primary category, "none", or UNREADABLE
    confidence: float | None
    known_miss: str | None  # the sidecar's explanation of an expected miss
    half: str = "tuning"
    arch: str | None = None
    ml_inference: bool = False
    batch: int | None = None  # the sidecar's "round": the batch it was collected in

    @property
    def hit(self) -> bool:
        return self.got in self.expected


def cases(corpus: Path = CORPUS) -> list[tuple[str, dict]]:
    """(name, sidecar) of every corpus case, sorted by name."""
    return [(p.stem, json.loads(p.read_text())) for p in sorted(corpus.glob("*.json"))]


def half_of(case: dict) -> str:
    """The sidecar's half; a case without one is tuning."""
    return case.get("half") or "tuning"


def assign_halves(grouped: list[tuple[str, dict]]) -> dict[str, str]:
    """The half of every case that carries a ``"group"``, by a fixed rule on the sidecars.

    Cases from one publication stay together, so that nothing fitted to one output of a
    source can leak into the held-out measure through its sibling. Groups are taken
    with an ML inference case first, then larger first, then by name; each goes to the
    half with fewer cases so far, a tie to tuning. This gives both halves ML inference
    and Arm cases whenever there are two groups of each.
    """
    groups: dict[str, list[str]] = {}
    ml: dict[str, bool] = {}
    for name, case in grouped:
        group = case.get("group")
        if not group:
            continue
        groups.setdefault(group, []).append(name)
        ml[group] = ml.get(group, False) or bool(case.get("ml_inference"))
    order = sorted(groups, key=lambda g: (not ml[g], -len(groups[g]), g))
    size = {"tuning": 0, "held-out": 0}
    halves: dict[str, str] = {}
    for group in order:
        half = "tuning" if size["tuning"] <= size["held-out"] else "held-out"
        size[half] += len(groups[group])
        halves.update(dict.fromkeys(groups[group], half))
    return halves


def explain_json(path: Path, cpu: str | None) -> dict | None:
    """``inferperf explain --json`` of one file, as data; None when it cannot be read."""
    from pytest_inferperf.cli.main import main

    args = ["explain", str(path), "--json"] + (["--cpu", cpu] if cpu else [])
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        status = main(args)
    if status != 0:
        return None
    return json.loads(out.getvalue())


def run_case(name: str, case: dict, corpus: Path = CORPUS) -> Outcome:
    data = explain_json(corpus / f"{name}.txt", case.get("cpu"))
    primary = data["diagnosis"]["primary"] if data is not None else None
    got = primary["category"] if primary else ("none" if data is not None else UNREADABLE)
    return Outcome(
        name,
        case.get("cpu"),
        tuple(case["expected"]),
        got,
        primary["confidence"] if primary else None,
        case.get("xfail"),
        half_of(case),
        case.get("arch"),
        bool(case.get("ml_inference")),
        case.get("round"),
    )


def evaluate(corpus: Path = CORPUS) -> list[Outcome]:
    return [run_case(name, case, corpus) for name, case in cases(corpus)]


def accuracy(outcomes: list[Outcome]) -> tuple[int, int]:
    """(hits, cases)."""
    return sum(o.hit for o in outcomes), len(outcomes)


def by_half(outcomes: list[Outcome]) -> dict[str, list[Outcome]]:
    return {
        "tuning": [o for o in outcomes if o.half == "tuning"],
        "held-out": [o for o in outcomes if o.half == "held-out"],
        "all": list(outcomes),
    }


def held_out_batches(outcomes: list[Outcome]) -> dict[str, list[Outcome]]:
    """The held-out half by the batch each case was collected in ("round N"): each
    batch is measured once, so each keeps its own accuracy beside the half's."""
    held = [o for o in outcomes if o.half == "held-out"]
    rounds = sorted({o.batch for o in held if o.batch is not None})
    return {f"round {r}": [o for o in held if o.batch == r] for r in rounds}


def _line(label: str, outcomes: list[Outcome], indent: str = "  ") -> str:
    hits, total = accuracy(outcomes)
    share = f"{hits / total:.1%}" if total else "n/a"
    arm = sum(o.arch == "arm" for o in outcomes)
    ml = sum(o.ml_inference for o in outcomes)
    return f"{indent}{label:<9} {hits}/{total} = {share}  ({arm} Arm, {ml} ML inference)"


def report(outcomes: list[Outcome]) -> str:
    width = max(len(o.name) for o in outcomes)
    gots = [o.got + (f" {o.confidence:.2f}" if o.confidence is not None else "") for o in outcomes]
    exp_width = max(len("expected (author)"), *(len(" | ".join(o.expected)) for o in outcomes))
    got_width = max(len("got"), *(len(g) for g in gots))
    lines = [
        f"{'case':<{width}}  {'half':<8}  {'expected (author)':<{exp_width}}  "
        f"{'got':<{got_width}}  ok"
    ]
    for o, got in zip(outcomes, gots, strict=True):
        lines.append(
            f"{o.name:<{width}}  {o.half:<8}  {' | '.join(o.expected):<{exp_width}}  "
            f"{got:<{got_width}}  {'yes' if o.hit else 'NO'}"
        )
    lines.append("")
    lines.append("accuracy on the primary category:")
    for label, group in by_half(outcomes).items():
        lines.append(_line(label, group))
        if label == "held-out":
            lines.extend(_line(b, g, "    ") for b, g in held_out_batches(outcomes).items())
    misses = [o for o in outcomes if not o.hit]
    if misses:
        lines.append("misses:")
        for o in misses:
            if o.known_miss:
                why = o.known_miss
            elif o.half == "held-out":
                why = "held out: measured, not fitted (read the case and the rules)"
            else:
                why = "not explained yet: read the case and the rules"
            lines.append(
                f"  {o.name} ({o.half}): expected {' or '.join(o.expected)}, got {o.got}. {why}"
            )
    return "\n".join(lines)


def as_data(outcomes: list[Outcome]) -> dict:
    halves = {}
    for label, group in by_half(outcomes).items():
        hits, total = accuracy(group)
        halves[label] = {"cases": total, "hits": hits, "accuracy": hits / total if total else None}
    batches = {}
    for label, group in held_out_batches(outcomes).items():
        hits, total = accuracy(group)
        batches[label] = {"cases": total, "hits": hits, "accuracy": hits / total}
    hits, total = accuracy(outcomes)
    return {
        "cases": total,
        "hits": hits,
        "accuracy": hits / total,
        "halves": halves,
        "held_out_batches": batches,
        "outcomes": [{**vars(o), "hit": o.hit} for o in outcomes],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the outcomes as JSON")
    args = parser.parse_args(argv)
    outcomes = evaluate()
    if args.json:
        print(json.dumps(as_data(outcomes), indent=2))
    else:
        print(report(outcomes))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    raise SystemExit(main())
