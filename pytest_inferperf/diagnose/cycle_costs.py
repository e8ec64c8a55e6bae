"""What one event costs in cycles, per core: the penalties a diagnosis ranks causes by.

Owns: :data:`FAMILY_PENALTIES` (the fallback of each core family, which says that it
is one, built from the figures of the cores it is named for) and :func:`penalties`, the
one reading of a core's penalties: its own figures, on its row
(:attr:`thresholds_by_core.CoreFacts.penalties`, one row per core), its family's for
the rest: cycles per L1 miss served by L2 (data or instructions), per L2
miss served by the last-level cache, per LLC miss served by DRAM, per TLB walk and per
mispredicted branch, each with its source.

Must not: judge (``classify`` weighs events with these numbers), read counters, or
hold a core's own figures (its row does) or upper bounds: the metrics' rows
(``core.metrics``, ``cost``) hold what an event can cost *at most* (to rule a cause
out); these are *typical* latencies (to rank the causes that remain). A latency is
the load-to-use time of one access; an out-of-order core overlaps several, so events x
penalty over-states the stall and shares computed from it can overlap
(``docs/diagnosis.md``, "How causes are ranked").

Sources (each row names its own):

* Mispredict penalties: the ``MispredictPenalty`` of LLVM's scheduling models, taken
  from the vendors' software optimisation guides (``AArch64SchedNeoverseN1.td``: 11,
  "Arm Neoverse N1 Software Optimization Guide"; ``X86SchedSkylakeClient.td``: 14;
  ``X86ScheduleZnver4.td``: 13, quoting AMD's Zen 4 SOG 2.8 "the branch misprediction
  penalty is in the range from 11 to 18 cycles ... the common case penalty is 13").
* Neoverse N1 latencies: AnandTech, "Cloud Clash: Amazon Graviton2 Arm against Intel
  and AMD" (2020), p. 3: L2 "access latency ... 11 cycles" (1 MB), DRAM "81ns
  structural estimate ... Arm's published 83ns"; at Graviton2's 2.5 GHz, ~200 cycles.
* AMD Zen / Zen+ latencies: AnandTech, "AMD Ryzen 7 2700X ... review" (2018), p. 3,
  AMD's figures: L2 4.6 ns / 3.0 ns, L3 11.0 ns / 9.2 ns, memory 74 ns / 66 ns
  (Zen / Zen+), in cycles at the 1800X's 4.0 GHz and the 2700X's 4.3 GHz boost.
* Intel: Levinthal, "Performance Analysis Guide for Intel Core i7 and Xeon 5500
  processors": L2 hit ~10 cycles, L3 hit (unshared line) ~40 cycles, local DRAM
  ~60 ns (~180 cycles at the Xeon 5500's ~3 GHz).
* A TLB walk: no per-core figure on record; engineering judgement, as
  the metrics' ``cost`` does: its page-table loads hit the LLC, so a walk costs
  an LLC hit.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace

from .thresholds_by_core import CORES, Penalty, core_facts

__all__ = [
    "FAMILY_PENALTIES",
    "KINDS",
    "CorePenalties",
    "Penalty",
    "family_key",
    "penalties",
]

# What each penalty is the cost of, in the words a formula uses.
KINDS: dict[str, str] = {
    "l2_hit": "an L1 miss served by L2",
    "llc_hit": "an L2 miss served by the LLC",
    "dram": "an LLC miss served by DRAM",
    "walk": "a TLB walk",
    "mispredict": "a mispredicted branch",
}


@dataclass(frozen=True)
class CorePenalties:
    """The penalties of one core (or family), one per kind of :data:`KINDS`."""

    key: str  # core slug, x86 micro-architecture, or family key
    name: str
    l2_hit: Penalty
    llc_hit: Penalty
    dram: Penalty
    walk: Penalty
    mispredict: Penalty

    def of(self, kind: str) -> Penalty:
        if kind not in KINDS:
            raise KeyError(f"no penalty kind {kind!r} (known: {', '.join(KINDS)})")
        penalty: Penalty = getattr(self, kind)
        return penalty

    @property
    def fallbacks(self) -> tuple[str, ...]:
        """The kinds whose figure is a family's, not this core's."""
        return tuple(k for k in KINDS if self.of(k).fallback)


# -- sources --------------------------------------------------------------------------

_LEVINTHAL = (
    "Intel, 'Performance Analysis Guide for Intel Core i7 and Xeon 5500 processors' "
    "(Levinthal): L2 hit ~10 cycles, L3 hit (unshared line) ~40 cycles, local DRAM ~60 ns"
)
_WALK = (
    "engineering judgement: a walk's page-table loads hit the LLC, so it costs an LLC "
    "hit (no per-core walk latency on record; as thresholds.CHANGE_COSTS)"
)


def _walk_of(llc: Penalty) -> Penalty:
    return Penalty(
        llc.cycles, f"an LLC hit, {llc.label}", f"{_WALK}; LLC hit: {llc.source}", llc.fallback
    )


# -- families: what a core without figures of its own falls back to ----------------

_ARM_LLC = Penalty(
    40.0,
    "Levinthal",
    f"{_LEVINTHAL} (no Arm LLC latency on record: the x86 figure)",
)
_N1 = CORES["neoverse-n1"].penalties
_ARM = CorePenalties(
    "arm",
    "Arm family",
    l2_hit=_N1["l2_hit"],
    llc_hit=_ARM_LLC,
    dram=_N1["dram"],
    walk=_walk_of(_ARM_LLC),
    mispredict=_N1["mispredict"],
)
_INTEL_LLC = Penalty(40.0, "Levinthal", _LEVINTHAL)
_INTEL = CorePenalties(
    "intel",
    "Intel family",
    l2_hit=Penalty(10.0, "Levinthal", _LEVINTHAL),
    llc_hit=_INTEL_LLC,
    dram=Penalty(180.0, "Levinthal", f"{_LEVINTHAL} x ~3 GHz"),
    walk=_walk_of(_INTEL_LLC),
    mispredict=CORES["intel-skylake"].penalties["mispredict"],
)
# Zen+ is the AMD core with latencies on record at its boost clock; Zen 4 the one with
# a mispredict penalty of its own.
_ZEN_PLUS = CORES["amd-zen+"].penalties
_AMD = CorePenalties(
    "amd",
    "AMD family",
    l2_hit=_ZEN_PLUS["l2_hit"],
    llc_hit=_ZEN_PLUS["llc_hit"],
    dram=_ZEN_PLUS["dram"],
    walk=_walk_of(_ZEN_PLUS["llc_hit"]),
    mispredict=CORES["amd-zen4"].penalties["mispredict"],
)


def _median(name: str, *families: CorePenalties) -> CorePenalties:
    """Each kind's median over ``families``: the fallback of a core nobody named."""
    rows = {}
    for kind in KINDS:
        values = [f.of(kind).cycles for f in families]
        rows[kind] = Penalty(
            statistics.median(values),
            "median of the families",
            "median of the Arm, Intel and AMD family figures ("
            + "; ".join(f"{f.name}: {f.of(kind).cycles:g}, {f.of(kind).label}" for f in families)
            + ")",
        )
    return CorePenalties("unknown", name, **rows)


# A core family -> its fallback; x86 cores fall back by vendor (the slug's first part).
FAMILY_PENALTIES: dict[str, CorePenalties] = {
    "arm": _ARM,
    "intel": _INTEL,
    "amd": _AMD,
    "unknown": _median("generic fallback", _ARM, _INTEL, _AMD),
}


def _own(base: CorePenalties, key: str, name: str, **own: Penalty) -> CorePenalties:
    """A core with figures of its own for ``own``, its family's for the rest (marked)."""
    rows = {kind: own.get(kind) or replace(base.of(kind), fallback=base.name) for kind in KINDS}
    if "walk" not in own and "llc_hit" in own:
        rows["walk"] = _walk_of(own["llc_hit"])
    return CorePenalties(key, name, **rows)


def family_key(slug: str) -> str:
    """Which :data:`FAMILY_PENALTIES` row a core falls back to."""
    facts = core_facts(slug)
    if facts.family.startswith("arm"):
        return "arm"
    if facts.family == "x86":
        vendor = facts.slug.split("-", 1)[0]
        return vendor if vendor in FAMILY_PENALTIES else "unknown"
    return "unknown"


def penalties(slug: str) -> CorePenalties:
    """The penalties of the core ``slug`` names (read through ``thresholds_by_core.core_facts``,
    so every name it accepts works): the core's own where on record, its family's for
    the rest, each marked with what it fell back to."""
    facts = core_facts(slug)
    family = FAMILY_PENALTIES[family_key(slug)]
    return _own(family, facts.slug or family.key, facts.name or family.name, **facts.penalties)
