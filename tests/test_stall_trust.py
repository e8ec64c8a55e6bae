"""Stall counts a core's kernel backs with an event the core does not have are not used:
AMD Zen 2 and later have no PMCx087, which Linux used for stalled-cycles-frontend and
-backend until commit c7b2edd8377b (Linux 6.9), in the plugin and in ``explain`` alike."""

from __future__ import annotations

import json

import pytest

from pytest_inferperf.cli.main import main
from pytest_inferperf.pmu.base import Count, CounterSample, EventStatus
from pytest_inferperf.pmu.cpu import CpuInfo
from pytest_inferperf.pmu.trust import distrusted, unsupported_stalls

STALLS = ("stall_frontend", "stall_backend")


@pytest.mark.parametrize("slug", ["amd-zen2", "amd-zen3", "amd-epyc-zen4", "amd-ryzen-zen5"])
def test_a_kernel_that_counts_backend_stalls_on_zen2_on_counted_neither(slug):
    drop = unsupported_stalls(slug, ["cycles", *STALLS], [])
    assert set(drop) == set(STALLS)
    assert drop["stall_backend"].startswith("not a stall count: AMD Zen 2 and later do not have")
    assert "c7b2edd8377b (Linux 6.9)" in drop["stall_backend"]
    assert drop["stall_frontend"] == "not a stall count: PMCx087 too, on the same kernel"


def test_a_kernel_that_refuses_backend_stalls_counts_the_frontend_from_pmc0a9():
    assert unsupported_stalls("amd-zen3", ["cycles", "stall_frontend"], ["stall_backend"]) == {}
    # frontend alone, nothing to show the kernel: not used
    alone = unsupported_stalls("amd-zen3", ["stall_frontend"], [])
    assert alone["stall_frontend"].startswith("not known to be a stall count: AMD Zen 2")


@pytest.mark.parametrize("slug", ["amd-zen", "amd-zen+", "amd-epyc-zen", "intel-skylake", ""])
def test_zen1_and_other_cores_keep_their_stall_counts(slug):
    # Zen 1 has PMCx087; Intel's stalled-cycles are other events
    assert unsupported_stalls(slug, STALLS, []) == {}


def _cpu(slug: str) -> CpuInfo:
    return CpuInfo(
        "x86_64", "AuthenticAMD", "AMD EPYC (Zen 4)", slug, None, 2, (), "6.1", 2, False, ()
    )


def _sample(**raw: int) -> CounterSample:
    return CounterSample(counts={n: Count(float(v), v, 10, 10) for n, v in raw.items()})


def test_the_plugin_takes_them_out_with_the_reason():
    statuses = {n: EventStatus(n, True, source="cpu") for n in ("cycles", *STALLS)}
    sample = _sample(cycles=9_000_000, stall_frontend=40_000, stall_backend=250_000)
    drop = distrusted(_cpu("amd-epyc-zen4"), statuses, [sample])
    assert set(drop) == set(STALLS)
    # a kernel with the fix: stall_backend did not open (ENOENT), the frontend is PMCx0A9
    statuses["stall_backend"] = EventStatus("stall_backend", False, reason="ENOENT")
    assert distrusted(_cpu("amd-epyc-zen4"), statuses, [sample]) == {}


ZEN3_RUN = """ Performance counter stats for './clear':

    28,161,726,414      cycles
       141,032,827      stalled-cycles-frontend   #    0.50% frontend cycles idle
       796,792,139      stalled-cycles-backend    #    2.80% backend cycles idle
     1,140,172,646      instructions              #    0.04  insn per cycle
     6,882,968,897      L1-dcache-loads
     3,267,546,914      L1-dcache-load-misses     #   47.45% of all L1-dcache accesses

      11.829600000 seconds time elapsed
"""


def _explain(tmp_path, capsys, text: str, cpu: str) -> dict:
    """``inferperf explain FILE --json --cpu CPU`` on ``text``, through the command line."""
    path = tmp_path / "run.txt"
    path.write_text(text)
    assert main(["explain", str(path), "--json", "--cpu", cpu]) == 0
    return json.loads(capsys.readouterr().out)


def test_explain_drops_them_for_a_zen3_file_and_keeps_them_for_zen1(tmp_path, capsys):
    # Numbers from a Milan run published on LKML (clear_pages_erms, 2022): 2.8% backend
    # idle would cap 2,866 L1D refills per 1000 instructions at 2.8% of the cycles.
    data = _explain(tmp_path, capsys, ZEN3_RUN, "zen3")
    (run,) = data["runs"]
    assert not set(STALLS) & set(run["counts"])
    assert run["unavailable"]["stall_backend"].startswith("not a stall count")
    assert "backend_stalled" not in data["metrics"]
    assert data["diagnosis"]["primary"]["category"] == "l1d_residency"
    data = _explain(tmp_path, capsys, ZEN3_RUN, "zen+")
    assert data["metrics"]["backend_stalled"] == pytest.approx(0.0283, abs=1e-4)
    # a fixed kernel (backend refused): the frontend count stands
    fixed = ZEN3_RUN.replace(
        "       796,792,139      stalled-cycles-backend",
        "   <not supported>      stalled-cycles-backend",
    )
    data = _explain(tmp_path, capsys, fixed, "zen3")
    assert data["runs"][0]["counts"]["stall_frontend"] == 141_032_827


def test_more_stall_cycles_than_cycles_are_taken_out_in_the_plugin_too():
    statuses = {n: EventStatus(n, True, source="cpu") for n in ("cycles", *STALLS)}
    sample = _sample(cycles=9_000_000, stall_frontend=13_590_000, stall_backend=4_000_000)
    drop = distrusted(_cpu("intel-core-skylake"), statuses, [sample])
    assert list(drop) == ["stall_frontend"]
    assert drop["stall_frontend"].startswith("151% of the cycles counted")


# -- Intel Nehalem to Ivy Bridge: stall cycles of any cause -----------------------------


@pytest.mark.parametrize(
    "slug",
    [
        "intel-nehalem",
        "intel-sandybridge",
        "intel-core-sandybridge",
        "intel-xeon-ivybridge-x",
        "intel-xeon-westmere-ep",
    ],
)
def test_issue_and_execute_stalls_of_nehalem_to_ivy_bridge_are_no_shares(slug):
    drop = unsupported_stalls(slug, ["cycles", *STALLS], [])
    assert set(drop) == set(STALLS)
    assert drop["stall_frontend"].startswith("not a stall share of its end: on Nehalem")
    assert "UOPS_ISSUED.ANY, cmask=1 inv=1" in drop["stall_frontend"]
    assert "arch/x86/events/intel/core.c" in drop["stall_backend"]


@pytest.mark.parametrize("slug", ["intel-haswell", "intel-core-broadwell", "intel-skylake"])
def test_later_intel_cores_keep_them(slug):
    assert unsupported_stalls(slug, STALLS, []) == {}


SNB_RUN = """ Performance counter stats for './walk':

     4,000,000,000      cycles
     1,800,000,000      stalled-cycles-frontend   #   45.00% frontend cycles idle
       900,000,000      stalled-cycles-backend    #   22.50% backend cycles idle
     4,000,000,000      instructions              #    1.00  insn per cycle

       1.333000000 seconds time elapsed
"""


def test_explain_does_not_name_the_frontend_from_them_on_sandy_bridge(tmp_path, capsys):
    data = _explain(tmp_path, capsys, SNB_RUN, "haswell")
    assert data["diagnosis"]["primary"]["category"] == "frontend_bound"  # 45% > 30%
    data = _explain(tmp_path, capsys, SNB_RUN, "ivybridge")
    assert data["core"] == "intel-sandybridge"
    assert data["runs"][0]["unavailable"]["stall_frontend"].startswith("not a stall share")
    assert "frontend_stalled" not in data["metrics"]
    primary = data["diagnosis"]["primary"]
    assert primary is None or primary["category"] != "frontend_bound"
