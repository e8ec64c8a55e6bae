"""Which Arm PMUv3 events each core implements, as Arm publishes it.

Owns: for every core with an event list in ARM-software/data (``pmu/<core>.json``,
Apache-2.0), the event codes of this product's catalogue that the core does **not**
implement, and the question "does the real core have this event?".

Must not: read sysfs (what a PMU lists on a given machine is ``cpu``'s job) or open
counters. A PMU that lists fewer events than this table says the core has is a
hypervisor or kernel hiding them; one that lists events the core lacks is a fault.

Only the codes the catalogue maps are kept (``events.CATALOGUE``): 0x01-0x05
0x08 0x10 0x11 0x12 0x14 0x16 0x17 0x21-0x26 0x34-0x37 0x3A/0x3B 0x3D-0x3F and
0x4005. Derived from ARM-software/data ``pmu/*.json`` (2025-01 snapshot): a code
absent from a core's ``events`` list is listed here.
"""

from __future__ import annotations

_A53_A72 = frozenset(
    {
        0x21,
        0x22,
        0x23,
        0x24,
        0x25,
        0x26,
        0x34,
        0x35,
        0x36,
        0x37,
        0x3A,
        0x3B,
        0x3D,
        0x3E,
        0x3F,
        0x4005,
    }
)
_NO_SLOTS = frozenset({0x3A, 0x3B, 0x3D, 0x3E, 0x3F, 0x4005})

#: core slug (``cpu.ARM_PARTS``) -> catalogue codes the core does not implement.
NOT_IMPLEMENTED: dict[str, frozenset[int]] = {
    "cortex-a53": _A53_A72,
    "cortex-a55": _NO_SLOTS,
    "cortex-a72": _A53_A72,
    "cortex-a76": _NO_SLOTS,
    "cortex-x1": frozenset(),
    "neoverse-n1": _NO_SLOTS,
    "neoverse-n2": frozenset(),
    # its revisions, as --cpu names them (one event list: pmu/neoverse-n2.json)
    "neoverse-n2-r0p0": frozenset(),
    "neoverse-n2-r0p3": frozenset(),
    # Azure Cobalt 100 is a Neoverse N2 r0p0 under Microsoft's implementer code.
    "azure-cobalt-100": frozenset(),
    "neoverse-v1": frozenset(),
    "neoverse-v2": frozenset(),
    "neoverse-v3": frozenset(),
}


def core_implements(core_slug: str, code: int) -> bool | None:
    """True/False from Arm's event list for the core; None where Arm publishes none."""
    missing = NOT_IMPLEMENTED.get(core_slug)
    if missing is None:
        return None
    return code not in missing
