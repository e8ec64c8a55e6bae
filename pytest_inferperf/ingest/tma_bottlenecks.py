"""Intel TMA's bottleneck view: the names perf and toplev print it under.

Owns: which printed name is which entry of the view, and the scale its values are
printed in. The view (TMA 4.4 on; pmu-tools README: "an abstraction or summarization of
the 100+ TMA tree nodes into a 12-entry vector of familiar performance issues") gives
each cause its *total pipeline cost*: the share of all the issue slots it took,
wherever in the tree those slots were counted, the entries adding up to 100 with
Other_Bottlenecks (Linux perf x86 metric files: ``tma_bottleneck_other_bottlenecks =
100 - (the rest)``). Every formula is ``100 * (...)`` with no ScaleUnit, so perf prints
the number without ``%`` and toplev in its ``Scaled_Slots`` domain: a percentage always.

The names changed with the TMA versions the Linux perf x86 metric files carry: toplev's
class names in TMA 4.4 (``Mispredictions``, ``Memory_Bandwidth``: "perf vendor events:
Update Intel icelake", Linux 6.1), ``tma_info_<name>`` in TMA 4.5, ``tma_info_bottleneck_
<name>`` in TMA 4.7 (``cache_memory_bandwidth`` for ``memory_bandwidth``, the view grown
to twelve entries), ``tma_bottleneck_<name>`` in TMA 5.0 (``data_cache_memory_bandwidth``
in 5.01). toplev prints them in its ``Info.Bottleneck`` area (``Bottleneck`` from TMA
5.0), under the class name.

Must not: judge anything.
"""

from __future__ import annotations

import re

# The entry's name (any era) -> our metric. The entries with no category of ours (what
# Intel calls irregular overhead, branching overhead and the rest) are read and shown,
# not judged.
BOTTLENECKS: dict[str, str] = {
    "mispredictions": "bottleneck_mispredictions",
    "big_code": "bottleneck_big_code",
    "instruction_fetch_bw": "bottleneck_fetch_bandwidth",
    "memory_bandwidth": "bottleneck_memory_bandwidth",
    "cache_memory_bandwidth": "bottleneck_memory_bandwidth",
    "data_cache_memory_bandwidth": "bottleneck_memory_bandwidth",
    "memory_latency": "bottleneck_memory_latency",
    "cache_memory_latency": "bottleneck_memory_latency",
    "data_cache_memory_latency": "bottleneck_memory_latency",
    "memory_data_tlbs": "bottleneck_data_tlbs",
    "memory_synchronization": "bottleneck_memory_sync",
    "compute_bound_est": "bottleneck_compute",
    "irregular_overhead": "bottleneck_irregular",
    "branching_overhead": "bottleneck_branching",
    "useful_work": "bottleneck_useful_work",
    "base_non_br": "bottleneck_useful_work",  # TMA 4.7's name for useful work
    "other_bottlenecks": "bottleneck_other",
}
# The printed name's prefix in perf's metric files (none in TMA 4.4 and in toplev).
_PREFIX = re.compile(r"^(?:tma_)?(?:info_)?(?:bottleneck_)?", re.IGNORECASE)
# A regular-expression alternative for every printed form (prefixes optional).
_LONGEST_FIRST = sorted(BOTTLENECKS, key=len, reverse=True)
PRINTED = r"(?:info_)?(?:bottleneck_)?(?:" + "|".join(_LONGEST_FIRST) + ")"


def metric_of(name: str) -> str | None:
    """Our metric for a printed entry of the view, under any of its names; None for
    any other name."""
    return BOTTLENECKS.get(_PREFIX.sub("", name.strip()).lower())


def fraction(printed: float) -> float:
    """A printed value of the view (a percentage of the slots) as a fraction."""
    return printed / 100.0
