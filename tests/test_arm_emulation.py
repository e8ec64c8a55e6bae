"""Emulated and odd Arm PMUs: detection, true reasons, footers, counts that cannot be used.

The trees model what QEMU's virt machine shows a Linux guest (measured with
``qemu-system-aarch64 -M virt -icount shift=0``, see docs/counting.md): a PMU
named ``armv8_pmuv3`` listing only ``cpu_cycles``, ``inst_retired`` and, for
``-cpu neoverse-n1``, ``stall_frontend``/``stall_backend``; the device tree's
``compatible`` is ``linux,dummy-virt``; ``-cpu max`` has implementer 0x00.
"""

from __future__ import annotations

import shutil
import sys
import textwrap
from pathlib import Path

import pytest
from sysfs_trees import build_arm_tree

from pytest_inferperf.judge.budgets import check_budgets, parse_marker
from pytest_inferperf.measure.flame import capture
from pytest_inferperf.measure.flame.record import no_samples_reason, sample_native
from pytest_inferperf.onnxrt.sessions import OperatorStat
from pytest_inferperf.pmu.base import Count, CounterSample, EventStatus
from pytest_inferperf.pmu.cpu import SystemPaths, emulation_evidence, identify
from pytest_inferperf.pmu.doctor import DoctorReport
from pytest_inferperf.pmu.events import DEFAULT_EVENTS, reason_cause, reason_group, resolve
from pytest_inferperf.pmu.trust import distrusted, emulated_reason, screen
from pytest_inferperf.report.doctor import render_text
from pytest_inferperf.report.terminal import not_counted_lines, render_summary

QEMU_LISTS = {
    "cortex-a72": ("cpu_cycles", "inst_retired"),
    "neoverse-n1": ("cpu_cycles", "inst_retired", "stall_frontend", "stall_backend"),
}


def qemu_tree(root: Path, core: str, *, dummy_virt: bool = True, implementer=None) -> Path:
    """An arm64 tree as QEMU's virt machine shows it to the guest."""
    build_arm_tree(root, [(core, 2)], implementer=implementer)
    devices = root / "sys/bus/event_source/devices"
    pmu = devices / ("armv8_" + core.replace("-", "_"))
    pmu = pmu.rename(devices / "armv8_pmuv3")
    for event in (pmu / "events").iterdir():
        if event.name not in QEMU_LISTS[core]:
            event.unlink()
    if dummy_virt:
        dt = root / "proc/device-tree"
        dt.mkdir(parents=True)
        (dt / "compatible").write_bytes(b"linux,dummy-virt\0")
    return root


def test_qemu_virt_machine_is_emulated_and_has_its_own_machine_class(tmp_path):
    cpu = identify(SystemPaths(qemu_tree(tmp_path, "neoverse-n1")))
    assert cpu.core == "Neoverse N1"
    assert cpu.emulation == "QEMU's virt machine (device tree compatible 'linux,dummy-virt')"
    assert cpu.machine_class == "arm64-neoverse-n1+emulated"
    assert cpu.to_dict()["machine_class"] == "arm64-neoverse-n1+emulated"


def test_real_silicon_trees_are_not_emulated(tmp_path):
    cpu = identify(SystemPaths(build_arm_tree(tmp_path, [("neoverse-n1", 4)], pmu_naming="acpi")))
    assert cpu.emulation is None
    assert cpu.machine_class == "arm64-neoverse-n1"


def test_implementer_zero_is_emulated_without_a_device_tree(tmp_path):
    cpu = identify(
        SystemPaths(qemu_tree(tmp_path, "cortex-a72", dummy_virt=False, implementer=0x00))
    )
    assert cpu.emulation == "CPU implementer 0x00, which no silicon vendor has (QEMU's 'max' CPU)"
    assert cpu.machine_class.endswith("+emulated")


def test_emulation_evidence_is_pure_and_names_every_sign():
    both = emulation_evidence(("linux,dummy-virt",), [0x000F0510])
    assert both == (
        "QEMU's virt machine (device tree compatible 'linux,dummy-virt'); "
        "CPU implementer 0x00, which no silicon vendor has (QEMU's 'max' CPU)"
    )
    assert emulation_evidence(("raspberrypi,4-model-b", "brcm,bcm2711"), [0x410FD083]) is None


def test_missing_events_say_whether_the_real_core_has_them(tmp_path):
    cpu = identify(SystemPaths(qemu_tree(tmp_path, "neoverse-n1")))
    res = resolve(DEFAULT_EVENTS, cpu)
    assert set(res.events) >= {"cycles", "instructions", "stall_frontend", "stall_backend"}
    hidden = (
        "not listed by this PMU (armv8_pmuv3); real Neoverse N1 cores implement it: "
        "the hypervisor or kernel hides it"
    )
    for name in (
        "l1d_refill",
        "l1i_access",
        "l2_refill",
        "llc_miss",
        "dtlb_walk",
        "branches",
        "branch_misses",
    ):
        assert res.unavailable[name].startswith(hidden + " (armv8_pmuv3 lists no "), name
    assert "L1D_CACHE_REFILL (0x3)" in res.unavailable["l1d_refill"]
    for name in ("stall_slot", "op_retired", "stall_backend_mem"):
        assert res.unavailable[name].startswith("not implemented on Neoverse N1 ("), name
    # Grouping: 13 hidden events share one cause, 6 unimplemented ones another.
    groups = {reason_group(r) for r in res.unavailable.values()}
    assert groups == {hidden, "not implemented on Neoverse N1"}
    assert reason_cause(res.unavailable["l1d_refill"]) == hidden


def test_a72_lacks_stalls_but_has_branch_predictions(tmp_path):
    cpu = identify(SystemPaths(qemu_tree(tmp_path, "cortex-a72")))
    res = resolve(DEFAULT_EVENTS, cpu)
    assert res.unavailable["stall_frontend"].startswith("not implemented on Cortex-A72 (")
    # BR_PRED/BR_MIS_PRED exist on a real A72 (the fallback pair): hidden, not absent.
    assert res.unavailable["branches"].startswith(
        "not listed by this PMU (armv8_pmuv3); real Cortex-A72 cores implement it"
    )


def test_a_core_without_arm_data_says_so(tmp_path):
    build_arm_tree(tmp_path, [("neoverse-n1", 2)], implementer=0x51)  # a Qualcomm part
    for event in (tmp_path / "sys/bus/event_source/devices/armv8_neoverse_n1/events").iterdir():
        if event.name != "cpu_cycles":
            event.unlink()
    cpu = identify(SystemPaths(tmp_path))
    reason = resolve(["l1d_refill"], cpu).unavailable["l1d_refill"]
    assert reason.startswith(
        f"not listed by this PMU (armv8_neoverse_n1); Arm publishes no "
        f"event list for {cpu.core} to say whether the core has it ("
    )


def test_reason_group_keeps_other_reasons_headlines():
    assert (
        reason_group("no PMU exposed (ENOENT): this machine gives ...") == "no PMU exposed (ENOENT)"
    )
    assert (
        reason_group("not available: perf refused: paranoid 3: fix")
        == "not available: perf refused"
    )
    assert reason_group("listed but did not count: x read 0") == "listed but did not count"


def test_not_counted_footer_is_one_line_per_reason(tmp_path):
    cpu = identify(SystemPaths(qemu_tree(tmp_path, "neoverse-n1")))
    unavailable = resolve(DEFAULT_EVENTS, cpu).unavailable
    records = [
        {"unavailable": unavailable},
        {"unavailable": {"l1d_refill": unavailable["l1d_refill"]}},
    ]
    lines = not_counted_lines(records)
    assert lines[0] == "Not counted here: run `inferperf doctor` for the fixes."
    assert len(lines) == 3
    hidden, absent = lines[1:]
    assert hidden.startswith(
        "  not listed by this PMU (armv8_pmuv3); real Neoverse N1 cores "
        "implement it: the hypervisor or kernel hides it: l1d_access, "
    )
    assert hidden.count("l1d_refill") == 1
    assert absent == (
        "  not implemented on Neoverse N1: stall_backend_mem, stall_slot, "
        "stall_slot_frontend, stall_slot_backend, op_retired, op_spec"
    )
    assert sum(len(line) for line in lines) < 600  # was ~4,000 characters, one reason x21


def _sample(**raw: int) -> CounterSample:
    return CounterSample(counts={n: Count(float(v), v, 10, 10) for n, v in raw.items()})


def _statuses(*names: str) -> dict[str, EventStatus]:
    return {n: EventStatus(n, True, source=f"armv8_pmuv3/events/{n}") for n in names}


def test_cycles_equal_to_instructions_exactly_is_an_emulated_pmu():
    samples = [
        _sample(cycles=77_700_000, instructions=77_700_000),
        _sample(cycles=77_650_123, instructions=77_650_123),
    ]
    evidence = emulated_reason(None, samples)
    assert evidence is not None and "cycles equal instructions exactly (155,350,123" in evidence
    real = [_sample(cycles=90_000_000, instructions=77_700_000)]
    assert emulated_reason(None, real) is None
    assert emulated_reason(None, [_sample(cycles=1000, instructions=1000)]) is None  # too few


def test_emulated_pmu_takes_out_cycles_and_silent_stalls_and_keeps_instructions(tmp_path):
    cpu = identify(SystemPaths(qemu_tree(tmp_path, "neoverse-n1")))
    statuses = _statuses("cycles", "instructions", "stall_frontend", "stall_backend")
    statuses["task_clock"] = EventStatus("task_clock", True, source="software")
    samples = [
        _sample(
            cycles=5_000_000,
            instructions=5_000_000,
            stall_frontend=0,
            stall_backend=0,
            task_clock=0,
        )
    ]
    new_statuses, new_samples = screen(cpu, statuses, samples)
    assert new_statuses["cycles"].reason.startswith("emulated PMU (QEMU's virt machine")
    for name in ("stall_frontend", "stall_backend"):  # QEMU lists them; they read 0
        assert new_statuses[name].reason.startswith("listed but did not count: ")
    for name in ("cycles", "stall_frontend", "stall_backend"):
        assert not new_statuses[name].available
        assert name not in new_samples[0].counts
    assert new_statuses["instructions"].available
    assert new_samples[0].counts["instructions"].raw == 5_000_000
    assert new_statuses["task_clock"].available  # software events are never screened


def test_a_listed_event_that_never_counts_is_not_a_zero():
    statuses = _statuses("cycles", "instructions", "l1d_refill")
    drop = distrusted(
        None, statuses, [_sample(cycles=9_000_000, instructions=4_000_000, l1d_refill=0)]
    )
    assert list(drop) == ["l1d_refill"]
    assert drop["l1d_refill"].startswith(
        "listed but did not count: armv8_pmuv3/events/l1d_refill read 0 over 9,000,000 instructions"
    )
    # Over too little work a zero proves nothing.
    assert (
        distrusted(None, statuses, [_sample(cycles=9_000, instructions=4_000, l1d_refill=0)]) == {}
    )


def test_ipc_budget_is_not_checked_on_an_emulated_pmu(tmp_path):
    cpu = identify(SystemPaths(qemu_tree(tmp_path, "neoverse-n1")))
    statuses, _ = screen(
        cpu,
        _statuses("cycles", "instructions"),
        [_sample(cycles=7_000_000, instructions=7_000_000)],
    )
    unavailable = {n: s.reason for n, s in statuses.items() if not s.available}
    spec = parse_marker((), {"ipc_min": 1.0})
    (result,) = check_budgets(spec.budgets, {}, unavailable)
    assert result.status == "unavailable" and not result.failed
    assert result.describe().startswith(
        "ipc_min=1: not checked: needs cycles, emulated PMU (QEMU's virt machine"
    )


def test_summary_footer_says_the_pmu_was_emulated(tmp_path):
    cpu = identify(SystemPaths(qemu_tree(tmp_path, "neoverse-n1")))
    record = {
        "key": "test_x.py::test_y",
        "metrics": {"instructions_per_call": 77.7e6},
        "change": "no baseline",
        "status": "passed",
        "outcome": "passed",
        "failed": False,
        "unavailable": {
            "cycles": "emulated PMU (QEMU's virt machine (device tree compatible "
            "'linux,dummy-virt')): its cycles are not a CPU's"
        },
        "profile": {"machine": {"cpu": cpu.to_dict()}},
    }
    text = render_summary([record], [], [], [], update=False)
    assert (
        "PMU: emulated (QEMU's virt machine (device tree compatible 'linux,dummy-virt')): "
        "instruction counts are exact; cycles, IPC, cycle-based and time budgets are not "
        "judged here"
    ) in text
    assert "77.7" in text


def test_doctor_says_the_pmu_is_emulated_and_groups_its_notes(tmp_path):
    cpu = identify(SystemPaths(qemu_tree(tmp_path, "neoverse-n1")))
    res = resolve(DEFAULT_EVENTS, cpu)
    rows = [
        {
            "name": n,
            "description": "",
            "available": n in res.events,
            "source": "x" if n in res.events else None,
            "reason": res.unavailable.get(n),
            "listed": n in res.events,
        }
        for n in DEFAULT_EVENTS
        if not n.startswith("task")
    ]
    report = DoctorReport(
        cpu,
        rows,
        {"armv8_pmuv3": 6},
        True,
        {"busy_loop_ns": 5_000_000, "counted": {}},
        emulation=cpu.emulation,
    )
    text = render_text(report)
    assert "Machine class        arm64-neoverse-n1+emulated" in text
    assert "PMU                  emulated (QEMU's virt machine" in text
    notes = [line for line in text.splitlines() if line.startswith("[")]
    assert len(notes) == 2, notes  # one note per cause, not one per event


# -- flamegraphs where perf record collects no samples --------------------------------------


def test_no_samples_reason_is_one_line_without_perfs_progress():
    reason = no_samples_reason(
        "cycles",
        1.0,
        12,
        "[ perf record: Woken up 1 times to write "
        "data ]\n[ perf record: Captured and wrote 0.013 MB x ]\n",
    )
    assert "\n" not in reason
    assert reason == (
        "not available: perf record collected no samples of cycles in 1 s "
        "(12 calls); counting works but sampling does not here (as on GitHub's "
        "Arm runners): the Python sampler and the operator view stand in"
    )
    said = no_samples_reason("cycles", 1.0, 3, "warning: x\nmore\n")
    assert "(perf said: warning: x | more)" in said and "\n" not in said


def _empty_perf(tmp_path: Path) -> str:
    """A perf that acknowledges its control FIFO, writes a perf.data with a header and no
    samples (what GitHub's Arm runners give), and whose ``script`` prints nothing."""
    path = tmp_path / "bin" / "perf"
    path.parent.mkdir()
    path.write_text(
        f"#!{sys.executable}\n"
        + textwrap.dedent("""
        import os, signal, sys
        args = sys.argv[1:]
        if args[0] == "script":
            sys.exit(0)
        ctl, ack = args[args.index("--control") + 1].removeprefix("fifo:").split(",")
        with open(args[args.index("-o") + 1], "wb") as fh:
            fh.write(b"PERFILE2" + bytes(96))
        def done(*_):
            sys.stderr.write("[ perf record: Captured and wrote 0.010 MB perf.data ]\\n")
            sys.exit(0)
        signal.signal(signal.SIGINT, done)
        c, a = os.open(ctl, os.O_RDWR), os.open(ack, os.O_RDWR)
        while True:
            if os.read(c, 64):
                os.write(a, b"ack\\n")
    """)
    )
    path.chmod(0o755)
    return str(path)


def busy():
    return sum(i * i for i in range(20_000))


def test_perf_with_no_samples_is_one_line_and_the_python_sampler_stands_in(tmp_path):
    perf = _empty_perf(tmp_path)
    result = sample_native(busy, seconds=0.2, workdir=tmp_path / "w", perf=perf, event="cycles")
    assert result.folded == {} and result.samples == 0
    assert result.reason.startswith(
        "not available: perf record collected no samples of cycles in 0.2 s ("
    )
    assert "\n" not in result.reason and "perf said" not in result.reason
    assert list((tmp_path / "w").iterdir()) == []

    ops = [OperatorStat("/conv1", "Conv", 5, 900.0, 180.0, 0.9)]
    graphs = capture(
        busy,
        name="t::no_samples",
        out_dir=tmp_path / "out",
        seconds=0.3,
        operators=ops,
        model_name="tiny",
        perf=perf,
        event="cycles",
    )
    assert graphs.reasons["native"].startswith(
        "not available: perf record collected no samples of cycles"
    )
    assert graphs.view == "python"
    assert {"python.svg", "operators.svg"} <= set(graphs.paths)
    assert any(":busy" in k for k in graphs.folded)  # its frame, or its genexpr below it


@pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed")
def test_doctor_runs_here_without_claiming_emulation_on_this_machine():
    from pytest_inferperf.pmu.doctor import run_doctor

    report = run_doctor()
    if report.cpu.emulation is None:
        assert report.emulation is None or "cycles equal instructions" in report.emulation


# -- the runner screens what a perf backend counted -------------------------------------------


class _EmulatedPerf:
    """A perf backend as QEMU's PMU answers: cycles == instructions, listed events at 0."""

    name = "perf"
    needs_screening = True  # a hardware PMU's counts, as the perf backend's
    events = ("cycles", "instructions", "stall_frontend", "l1d_refill", "task_clock")

    def open(self):
        pass

    def start(self):
        pass

    def stop(self):
        return self.delta({}, {})

    def snapshot(self):
        return {}

    def delta(self, begin, end):
        return _sample(
            cycles=2_000_000,
            instructions=2_000_000,
            stall_frontend=0,
            l1d_refill=0,
            task_clock=1_000_000,
        )

    def close(self):
        pass

    def statuses(self):
        return {
            n: EventStatus(
                n, True, source="software" if n == "task_clock" else f"armv8_pmuv3/events/{n}"
            )
            for n in self.events
        }


def test_runner_takes_emulated_cycles_and_silent_events_out_of_the_profile():
    from pytest_inferperf.core.metrics import profile_metrics
    from pytest_inferperf.measure.runner import Runner, RunSettings

    backend = _EmulatedPerf()
    runner = Runner(
        RunSettings(warmup=1, repeat=3, min_time=0), backend=backend, events=backend.events
    )
    profile = runner.run(lambda: None, name="emulated")
    unavailable = profile.unavailable
    assert unavailable["cycles"].startswith("emulated PMU (")
    assert "cycles equal instructions exactly" in unavailable["cycles"]
    assert unavailable["stall_frontend"].startswith("listed but did not count: ")
    assert unavailable["l1d_refill"].startswith("listed but did not count: ")
    assert "instructions" not in unavailable and "task_clock" not in unavailable
    for rep in profile.repeats:
        assert set(rep.sample.counts) == {"instructions", "task_clock"}
    metrics = profile_metrics(profile)
    assert "ipc" not in metrics and "l1_miss" not in metrics
    assert metrics["instructions_per_call"] == 2_000_000


def test_the_backends_attribute_not_its_name_decides_the_screening():
    from pytest_inferperf.measure.progress import ProgressCounters
    from pytest_inferperf.measure.runner import Runner, RunSettings
    from pytest_inferperf.pmu.base import needs_screening
    from pytest_inferperf.pmu.null_backend import NullCounters
    from pytest_inferperf.pmu.perf_backend import PerfEventCounters

    assert needs_screening(PerfEventCounters()) and not needs_screening(NullCounters())
    # a wrapper (the live progress line) answers for the backend it wraps
    assert needs_screening(ProgressCounters(_EmulatedPerf(), 3, lambda _: None))

    class Unscreened(_EmulatedPerf):
        needs_screening = False  # named "perf", but says its counts need no screening

    class Renamed(_EmulatedPerf):
        name = "house-pmu"  # another name, a hardware PMU's counts all the same

    settings = RunSettings(warmup=1, repeat=3, min_time=0)
    kept = Runner(settings, backend=Unscreened(), events=_EmulatedPerf.events)
    profile = kept.run(lambda: None, name="kept")
    assert "cycles" not in profile.unavailable and "stall_frontend" not in profile.unavailable
    assert profile.repeats[0].sample.counts["cycles"].value == 2_000_000
    screened = Runner(settings, backend=Renamed(), events=_EmulatedPerf.events)
    profile = screened.run(lambda: None, name="screened")
    assert profile.backend == "house-pmu"
    assert profile.unavailable["cycles"].startswith("emulated PMU (")
    assert profile.unavailable["l1d_refill"].startswith("listed but did not count: ")


def test_time_budgets_are_not_judged_on_an_emulated_machine(tmp_path):
    from pytest_inferperf.pmu.trust import unjudgeable_metrics

    cpu = identify(SystemPaths(qemu_tree(tmp_path, "neoverse-n1")))
    not_judged = unjudgeable_metrics({"cpu": cpu.to_dict()}, {})
    assert set(not_judged) == {
        "latency_mean_ms",
        "latency_p50_ms",
        "latency_p95_ms",
        "latency_p99_ms",
        "cpu_ms_per_call",
    }
    spec = parse_marker((), {"latency_p99_ms_max": 80, "peak_rss_mb_max": 1024})
    latency, memory = check_budgets(
        spec.budgets, {"latency_p99_ms": 500.0, "peak_rss_mb": 100.0}, {}, not_judged=not_judged
    )
    assert latency.status == "unavailable" and not latency.failed
    assert latency.describe().startswith(
        "latency_p99_ms_max=80: not checked: emulated machine (QEMU's virt machine"
    )
    assert memory.status == "pass"  # memory is the guest's own, and judged
    # Measured evidence alone (cycles found equal to instructions) counts too.
    measured = unjudgeable_metrics(
        {"cpu": {}}, {"cycles": "emulated PMU (cycles equal instructions exactly): x"}
    )
    assert measured["latency_p50_ms"].startswith("emulated machine (cycles equal instructions")
    assert unjudgeable_metrics({"cpu": {"emulation": None}}, {}) == {}


def test_judging_an_emulated_profile_skips_ipc_and_time_budgets_and_keeps_memory():
    from pytest_inferperf.diagnose.assessment import assess as judge
    from pytest_inferperf.measure.runner import Runner, RunSettings

    backend = _EmulatedPerf()
    profile = Runner(
        RunSettings(warmup=1, repeat=3, min_time=0), backend=backend, events=backend.events
    ).run(lambda: None, name="emulated")
    # As test_minilm_two_threads failed in the emulated A72 before time budgets were
    # skipped there: latency_p50_ms = 169.7 (the emulator's clock), budget <= 120.
    spec = parse_marker((), {"ipc_min": 1.0, "latency_p50_ms_max": 1e-9, "peak_rss_mb_max": 1e9})
    verdict = judge("t::emulated", profile, spec, baseline=None, baseline_note="no baseline")
    by_keyword = {b.budget.keyword: b for b in verdict.budgets}
    assert by_keyword["ipc_min"].status == "unavailable"
    assert by_keyword["latency_p50_ms_max"].status == "unavailable"
    assert (
        "emulated machine (cycles equal instructions exactly"
        in by_keyword["latency_p50_ms_max"].reason
    )
    assert by_keyword["peak_rss_mb_max"].status == "pass"
    assert not any(b.failed for b in verdict.budgets)
