"""perf stat output -> logical counts, and ``inferperf explain`` on recorded files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_inferperf.cli.main import build_parser, main
from pytest_inferperf.core.metrics import n2_revision
from pytest_inferperf.diagnose.classify import diagnose
from pytest_inferperf.ingest.perf_stat import (
    PerfStatError,
    load,
    logical_name,
    parse,
    parse_csv,
    parse_number,
    parse_report,
    parse_text,
    split_event,
)

FIXTURES = Path(__file__).parent / "fixtures" / "perfstat"
A72 = FIXTURES / "a72_plain.txt"
N1 = FIXTURES / "n1_stat.csv"
NNBSP, NBSP = "\u202f", "\u00a0"
SWISS = "\u2019"  # glibc localedata de_CH/fr_CH/it_CH: thousands_sep "<U2019>"


# -- numbers ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("token", "decimal", "expected"),
    [
        ("1,234,567", None, 1234567),
        ("1.234.567", None, 1234567),
        (f"1{NNBSP}234{NNBSP}567", None, 1234567),
        (f"1{NBSP}234{NBSP}567", None, 1234567),
        ("1 234 567", None, 1234567),
        ("1'234'567", None, 1234567),
        ("1,234", None, 1234),
        ("1.234", None, 1234),
        ("12", None, 12),
        ("0", None, 0),
        ("1,234.56", None, 1234.56),
        ("1.234,56", None, 1234.56),
        ("12,34", None, 12.34),
        ("2.505873344", None, 2.505873344),
        ("2,505873344", None, 2.505873344),
        ("1.234", ",", 1234),
        ("1.234", ".", 1.234),
        (f"9{NNBSP}612,48", ",", 9612.48),
        (f"881{SWISS}968{SWISS}231", None, 881968231),
    ],
)
def test_parse_number_in_every_locale(token, decimal, expected):
    assert parse_number(token, decimal) == pytest.approx(expected)


@pytest.mark.parametrize("token", ["", "abc", "1.2.3.4,5,6x", ".5", "<not counted>"])
def test_parse_number_rejects(token):
    with pytest.raises(ValueError):
        parse_number(token)


# -- event names ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "arch", "logical"),
    [
        ("cycles", "arm", "cycles"),
        ("cpu_cycles", "arm", "cycles"),
        ("armv8_pmuv3_0/cpu_cycles/", "arm", "cycles"),
        ("armv8_pmuv3_0/cpu_cycles/u", "arm", "cycles"),
        ("cycles:u", "arm", "cycles"),
        ("instructions:uk", "arm", "instructions"),
        ("inst_retired", "arm", "instructions"),
        ("L1-dcache-loads", "arm", "l1d_access"),
        ("L1-dcache-load-misses:u", "arm", "l1d_refill"),
        ("l1d_cache_refill", "arm", "l1d_refill"),
        ("branch-misses", "arm", "branch_misses"),
        ("br_mis_pred", "arm", "branch_misses"),
        ("br_mis_pred_retired", "arm", "branch_misses"),
        ("br_pred", "arm", "branches"),
        ("stalled-cycles-frontend", "arm", "stall_frontend"),
        ("stall_frontend", "arm", "stall_frontend"),
        ("stall_slot_backend", "arm", "stall_slot_backend"),
        ("task-clock", "arm", "task_clock"),
        ("page-faults", "arm", "page_faults"),
        ("context-switches", "arm", "context_switches"),
        ("cpu-migrations", "arm", "cpu_migrations"),
        ("dtlb_walk", "arm", "dtlb_walk"),
        ("ll_cache_miss_rd", "arm", "llc_miss"),
        ("r11", "arm", "cycles"),
        ("r0008", "arm", "instructions"),
        ("r4005", "arm", "stall_backend_mem"),
        ("r3d:u", "arm", "stall_slot_backend"),
        ("armv8_pmuv3_0/event=0x11/", "arm", "cycles"),
        ("armv8_pmuv3_0/event=0x0003/u", "arm", "l1d_refill"),
        # Linux's generic map differs by architecture (drivers/perf/arm_pmuv3.c vs x86)
        ("dTLB-load-misses", "arm", "l1d_tlb_refill"),
        ("dTLB-load-misses", "x86", "dtlb_walk"),
        ("cache-misses", "arm", "l1d_refill"),
        ("cache-misses", "x86", "llc_miss"),
        ("r11", "x86", None),
        ("ref-cycles", "arm", None),
        ("cpu_core/cycles/", "x86", "cycles"),
        # a hybrid x86 machine prints the modifiers inside the slashes
        ("cpu_core/cycles:u/", "x86", "cycles"),
        ("cpu_atom/instructions:uk/", "x86", "instructions"),
    ],
)
def test_logical_names(name, arch, logical):
    assert logical_name(name, arch) == logical


def test_split_event_hints():
    ev = split_event("armv8_cortex_a72/l2d_cache_refill/u")
    assert (ev.pmu, ev.base, ev.modifiers, ev.core_hint, ev.arch_hint) == (
        "armv8_cortex_a72",
        "l2d_cache_refill",
        "u",
        "cortex-a72",
        "arm",
    )
    assert split_event("armv8_neoverse_n1/cpu_cycles/").core_hint == "neoverse-n1"
    assert split_event("cpu_atom/instructions/").arch_hint == "x86"
    assert split_event("r11:u").code == 0x11
    ev = split_event("cpu_core/instructions:u/")
    assert (ev.pmu, ev.base, ev.modifiers, ev.arch_hint) == ("cpu_core", "instructions", "u", "x86")


def test_a_hardware_event_that_read_zero_over_millions_of_cycles_is_not_a_zero():
    # A hypervisor that lists a PMU it does not count prints 0, not <not supported>
    # (one published run read 630 M cycles and 0 of everything else): the zeros are
    # the counter's silence, so no IPC of 0 and no 0% stall is judged from them. Counts
    # made up for the test; software events keep their zeros.
    text = (
        " Performance counter stats for './app':\n\n"
        "            391.03 msec task-clock          #    0.213 CPUs utilized\n"
        "                 0      cpu-migrations      #    0.000 /sec\n"
        "       630,725,775      cycles              #    1.613 GHz\n"
        "                 0      stalled-cycles-frontend\n"
        "                 0      instructions        #    0.00  insn per cycle\n"
        "                 0      branch-misses\n\n"
        "       1.834332719 seconds time elapsed\n"
    )
    stat = parse(text)
    assert stat.counts == {
        "task_clock": pytest.approx(391.03e6),
        "cpu_migrations": 0.0,
        "cycles": 630_725_775.0,
    }
    for name in ("stall_frontend", "instructions", "branch_misses"):
        assert stat.unavailable[name].startswith("listed but did not count"), name
        assert "630,725,775 instructions or cycles" in stat.unavailable[name]
    # Below a million cycles a zero proves nothing either way: it stays a count.
    small = parse(text.replace("630,725,775", "630,775"))
    assert small.counts["instructions"] == 0.0


def test_hybrid_text_output_sums_both_core_pmus():
    # `perf stat -e cycles:u,instructions:u` on a hybrid Intel machine (perf's own layout:
    # one line per core PMU, modifiers inside the slashes); counts made up for the test.
    text = (
        " Performance counter stats for './a.out':\n\n"
        "     1,000,000,000      cpu_core/cycles:u/\n"
        "       400,000,000      cpu_atom/cycles:u/\n"
        "     3,000,000,000      cpu_core/instructions:u/   #    3.00  insn per cycle\n"
        "       600,000,000      cpu_atom/instructions:u/   #    1.50  insn per cycle\n\n"
        "       0.350000000 seconds time elapsed\n"
    )
    stat = parse(text)
    assert stat.counts == {"cycles": 1.4e9, "instructions": 3.6e9}
    assert not stat.unmapped


# -- CSV ------------------------------------------------------------------------------------

# (perf name, logical, unit) -- one name per logical event so nothing is superseded
_CSV_EVENTS = [
    ("cycles", "cycles", ""),
    ("instructions", "instructions", ""),
    ("armv8_pmuv3_0/l1d_cache_refill/", "l1d_refill", ""),
    ("L1-dcache-loads", "l1d_access", ""),
    ("branch-misses", "branch_misses", ""),
    ("r17", "l2_refill", ""),
    ("stall_backend", "stall_backend", ""),
    ("page-faults", "page_faults", ""),
    ("task-clock", "task_clock", "msec"),
]


@st.composite
def csv_reports(draw):
    sep = draw(st.sampled_from([",", ";"]))
    comma_decimal = sep == ";" and draw(st.booleans())  # -x; under a de_DE locale
    chosen = draw(
        st.lists(
            st.sampled_from(_CSV_EVENTS),
            min_size=1,
            max_size=len(_CSV_EVENTS),
            unique_by=lambda e: e[1],
        )
    )
    lines, expect_counts, expect_missing, expect_mux = (
        ["# started on Mon Jan  1 00:00:00 2024", ""],
        {},
        {},
        {},
    )
    for name, logical, unit in chosen:
        mod = draw(st.sampled_from(["", ":u", ":k", ":uk"]))
        event = name + mod if "/" not in name else name + mod.lstrip(":")
        status = draw(st.sampled_from(["counted"] * 4 + ["<not supported>", "<not counted>"]))
        pct = draw(st.sampled_from([100.0, 100.0, 66.67, 42.86, 57.14]))
        runtime = draw(st.integers(0, 10**12))
        if status != "counted":
            value_text = status
            expect_missing[logical] = status
            pct = 0.0 if status == "<not counted>" else 100.0
        elif unit == "msec":
            hundredths = draw(st.integers(0, 10**9))
            value_text = f"{hundredths // 100}.{hundredths % 100:02d}"
            expect_counts[logical] = hundredths / 100 * 1e6  # msec -> ns
        else:
            value = draw(st.integers(1, 10**15))
            value_text = str(value)
            expect_counts[logical] = float(value)
        if status == "counted" and pct < 100.0:
            expect_mux[logical] = pct
        pct_text = f"{pct:.2f}"
        if comma_decimal:
            value_text, pct_text = value_text.replace(".", ","), pct_text.replace(".", ",")
        metric = draw(st.sampled_from([("", ""), ("1.23", "insn per cycle")]))
        if comma_decimal:
            metric = (metric[0].replace(".", ","), metric[1])
        lines.append(sep.join([value_text, unit, event, str(runtime), pct_text, *metric]))
    cycles = expect_counts.get("cycles", 0.0)
    stalled = expect_counts.get("stall_backend", 0.0)
    if cycles >= 1e6 and stalled > cycles * 1.05:  # more stall cycles than cycles
        del expect_counts["stall_backend"]
        expect_mux.pop("stall_backend", None)
        expect_missing["stall_backend"] = "of the cycles counted"
    return sep, "\n".join(lines) + "\n", expect_counts, expect_missing, expect_mux


@settings(max_examples=200, deadline=None)
@given(csv_reports())
def test_csv_round_trip(report):
    sep, text, counts, missing, mux = report
    for stat in (parse(text), parse_csv(text, sep)):
        assert stat.format == "csv" and stat.separator == sep
        assert stat.counts.keys() == counts.keys()
        for name, value in counts.items():
            assert stat.counts[name] == pytest.approx(value, rel=1e-12, abs=1e-6)
        assert set(stat.unavailable) == set(missing)
        for name, status in missing.items():
            assert status in stat.unavailable[name]
        assert stat.multiplexed == pytest.approx(mux)


def test_csv_multiplexed_values_are_kept_as_perf_scaled_them():
    stat = parse(
        "1000,,cycles:u,428600,42.86,,\n2000,,instructions:u,428600,42.86,2.00,insn per cycle\n"
    )
    assert stat.counts == {"cycles": 1000.0, "instructions": 2000.0}
    assert stat.multiplexed == {"cycles": 42.86, "instructions": 42.86}


def test_csv_big_little_pmus_are_summed_and_partial_not_counted_is_counted():
    text = (
        "100,,armv8_cortex_a53/cpu_cycles/,10,100.00,,\n"
        "300,,armv8_cortex_a72/cpu_cycles/,10,100.00,,\n"
        "<not counted>,,armv8_cortex_a53/inst_retired/,0,0.00,,\n"
        "500,,armv8_cortex_a72/inst_retired/,10,100.00,,\n"
    )
    stat = parse(text)
    assert stat.counts == {"cycles": 400.0, "instructions": 500.0}
    assert stat.unavailable == {}
    assert stat.core_hint == "cortex-a53+cortex-a72"


def test_csv_per_cpu_and_interval_lines_are_summed():
    per_cpu = "CPU0,100,,cycles,10,100.00,,\nCPU1,50,,cycles,10,100.00,,\n"
    assert parse(per_cpu).counts == {"cycles": 150.0}
    interval = (
        "1.001000000,100,,cycles,10,100.00,,\n"
        "2.002000000,120,,cycles,10,100.00,,\n"
        "2.002000000,<not counted>,,instructions,0,0.00,,\n"
    )
    stat = parse(interval)
    assert stat.counts == {"cycles": 220.0}
    assert "instructions" in stat.unavailable


def test_first_counted_name_wins_over_an_unsupported_alias():
    text = "<not supported>,,branches:u,0,100.00,,\n823,,armv8_cortex_a72/br_pred/u,10,100.00,,\n"
    stat = parse(text)
    assert stat.counts == {"branches": 823.0} and stat.unavailable == {}
    assert stat.superseded == ("branches:u",)


def test_json_lines():
    text = (
        '{"counter-value" : "1234.000000", "unit" : "", "event" : "cycles:u", '
        '"event-runtime" : 100, "pcnt-running" : 57.00, "metric-value" : "0", '
        '"metric-unit" : "GHz"}\n'
        '{"counter-value" : "<not supported>", "unit" : "", '
        '"event" : "stalled-cycles-frontend", '
        '"event-runtime" : 0, "pcnt-running" : 100.00}\n'
    )
    stat = parse(text)
    assert stat.format == "json"
    assert stat.counts == {"cycles": 1234.0} and stat.multiplexed == {"cycles": 57.0}
    assert "not supported" in stat.unavailable["stall_frontend"]


# -- plain text -----------------------------------------------------------------------------


@st.composite
def text_reports(draw):
    grouping, decimal = draw(
        st.sampled_from(
            [
                (",", "."),
                (".", ","),
                (NNBSP, ","),
                (NBSP, ","),
                ("'", "."),
                (SWISS, "."),
                (" ", ","),
            ]
        )
    )

    def group(n: int) -> str:
        return f"{n:,}".replace(",", grouping)

    values = draw(st.lists(st.integers(1, 10**13), min_size=4, max_size=4))
    cs, cyc, ins, l1 = values
    ms = draw(st.integers(0, 10**9))
    elapsed = draw(st.integers(1, 10**12))
    pct = draw(st.sampled_from(["57.14", "100.00", "42.86"]))
    dec = lambda s: s.replace(".", decimal)  # noqa: E731
    ms_text = f"{group(ms // 100)}{decimal}{ms % 100:02d}"
    lines = [
        "",
        " Performance counter stats for './bench':",
        "",
        f"{ms_text:>24} msec task-clock:u           #    1.000 CPUs utilized",
        f"{group(cs):>19}      context-switches:u     #    0.000 /sec",
        f"{group(cyc):>19}      cycles:u               #    2.800 GHz      ({dec(pct)}%)",
        f"{group(ins):>19}      instructions:u         #    {dec('1.23')}  insn per cycle",
        "                                          #    0.10  stalled cycles per insn",
        f"{group(l1):>19}      armv8_pmuv3_0/l1d_cache_refill/u",
        "    <not supported>      stalled-cycles-frontend:u",
        "      <not counted>      L1-dcache-loads:u                                (0.00%)",
        "",
        f"{elapsed // 10**9:>10}{decimal}{elapsed % 10**9:09d} seconds time elapsed",
        "",
    ]
    expected = {
        "task_clock": ms / 100 * 1e6,
        "context_switches": cs,
        "cycles": cyc,
        "instructions": ins,
        "l1d_refill": l1,
    }
    return "\n".join(lines), expected, float(pct), elapsed / 1e9


@settings(max_examples=200, deadline=None)
@given(text_reports())
def test_text_round_trip_in_every_locale(report):
    text, expected, pct, elapsed = report
    stat = parse(text)
    assert stat.format == "text"
    assert stat.counts.keys() == expected.keys()
    for name, value in expected.items():
        assert stat.counts[name] == pytest.approx(value, rel=1e-12, abs=1e-6), name
    assert set(stat.unavailable) == {"stall_frontend", "l1d_access"}
    assert "not supported" in stat.unavailable["stall_frontend"]
    assert "not counted" in stat.unavailable["l1d_access"]
    assert stat.elapsed_s == pytest.approx(elapsed)
    assert stat.multiplexed == ({"cycles": pct} if pct < 100 else {})


def test_text_interval_mode_is_summed():
    text = (
        "#           time             counts unit events\n"
        "     1.001094052          1,234,567      cycles:u\n"
        "     1.001094052    <not counted>      instructions:u\n"
        "     2.002188104          1,000,000      cycles:u\n"
    )
    stat = parse_text(text)
    assert stat.counts == {"cycles": 2_234_567.0}
    assert "instructions" in stat.unavailable


def test_text_with_repeats():
    text = (
        "     1,234      cycles:u     ( +-  0.25% )\n"
        "       1.2345 +- 0.0012 seconds time elapsed  ( +-  0.10% )\n"
    )
    stat = parse(text)
    assert stat.counts == {"cycles": 1234.0} and stat.multiplexed == {}
    assert stat.elapsed_s == pytest.approx(1.2345)


# -- the recorded fixtures ---------------------------------------------------------------------


def test_a72_plain_text_fixture():
    stat = load(A72)
    assert (stat.format, stat.arch, stat.core_hint) == ("text", "arm", "cortex-a72")
    assert stat.counts["task_clock"] == pytest.approx(9_612.48e6)
    assert stat.counts["cycles"] == 14_418_722_914
    assert stat.counts["l2_refill"] == 94_478_103
    assert stat.counts["l1d_tlb_refill"] == 9_214_377  # r05 = L1D_TLB_REFILL
    assert stat.counts["branches"] == 823_180_455  # br_pred; 'branches' is not supported
    assert set(stat.unavailable) == {"stall_frontend", "stall_backend"}
    assert stat.multiplexed["cycles"] == 57.12 and "task_clock" not in stat.multiplexed
    assert (stat.elapsed_s, stat.user_s, stat.sys_s) == (2.505873344, 9.402115, 0.21498)


def test_n1_csv_fixture():
    stat = load(N1)
    assert (stat.format, stat.separator, stat.arch) == ("csv", ",", "arm")
    assert stat.core_hint is None  # armv8_pmuv3_0 does not name the core: use --cpu
    assert stat.counts["stall_frontend"] == 16_851_924_768
    assert stat.counts["l1d_tlb_refill"] == 52_963_217  # dTLB-load-misses on Arm
    assert stat.counts["task_clock"] == pytest.approx(16_049.45e6)
    assert set(stat.unavailable) == {"llc_read", "llc_miss"}
    assert all("not counted" in r for r in stat.unavailable.values())
    assert stat.unmapped == ("ref-cycles:u",)
    assert stat.wall_ns == 4_015_123_456  # duration_time
    assert stat.multiplexed["l1i_refill"] == 66.67


@pytest.mark.parametrize(
    "text",
    ["", "   \n", "hello world\nthis is not perf\n", "Performance counter stats for 'x':\n\n"],
)
def test_not_perf_stat(text):
    with pytest.raises(PerfStatError):
        parse(text)


def test_load_missing_file(tmp_path):
    with pytest.raises(PerfStatError, match="cannot read"):
        load(tmp_path / "nope.txt")


# -- inferperf explain ---------------------------------------------------------------------


def test_explain_a72(capsys):
    assert main(["explain", str(A72)]) == 0
    out = capsys.readouterr().out
    assert "core: cortex-a72" in out
    assert "l2_mpki" in out and "14.561" in out
    assert "Diagnosis (cortex-a72): L2/LLC residency" in out
    assert "not judged: frontend_bound, backend_bound" in out


def test_explain_a72_verbose_says_why_not_judged(capsys):
    assert main(["explain", str(A72), "-v"]) == 0
    out = capsys.readouterr().out
    assert "no STALL_BACKEND on Cortex-A72" in out
    assert "r05:u" in out and "l1d_tlb_refill" in out  # the events table
    assert "AWS Graviton perfrunbook (debug_hw_perf.md): l2-mpki > 10" in out


def test_explain_n1_needs_cpu_for_width(capsys):
    assert main(["explain", str(N1), "--cpu", "neoverse-n1"]) == 0
    out = capsys.readouterr().out
    assert "frontend bound (I-cache / ITLB) [frontend_bound]" in out
    assert "ignored (no logical name): ref-cycles:u" in out
    assert main(["explain", str(N1)]) == 0
    out = capsys.readouterr().out
    assert "core: aarch64" in out  # armv8_pmuv3_0 names no core, but shows the ISA
    assert "no core named (Arm (AArch64/AArch32) names in the file)" in out
    assert "[frontend_bound]" in out  # judged from MPKI and stalls even without a width


def test_explain_with_session_facts(capsys):
    args = [
        "explain",
        str(A72),
        "--intra-op-threads",
        "2",
        "--spinning",
        "on",
        "--cpus",
        "4",
        "--calls",
        "5000",
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    # 3.836 CPUs busy > 1.5 x 2 threads = 3.0, spinning on: thread_spinning comes first.
    # (21,408 faults / 5,000 calls = 4.3 per call < 10; with --calls 500 it would be 42.8
    # per call > 10 and page faults would lead instead.)
    assert "[thread_spinning]" in out.split("Diagnosis", 1)[1].splitlines()[0]
    assert "page_faults_per_call" in out  # --calls enables per-call metrics


def test_explain_exit_codes(tmp_path, capsys):
    assert main(["explain", str(tmp_path / "missing.txt")]) == 2
    err = capsys.readouterr().err
    assert "cannot read the perf stat output: " in err and "missing.txt does not exist" in err
    assert "perf stat -o FILE" in err
    junk = tmp_path / "junk.txt"
    junk.write_text("nothing to see\n")
    assert main(["explain", str(junk)]) == 2
    err = capsys.readouterr().err
    assert "no perf stat counter lines" in err and "topdown-tool" in err
    binary = tmp_path / "binary.bin"
    binary.write_bytes(bytes(range(256)))
    assert main(["explain", str(binary)]) == 2


def test_doctor_is_still_there():
    parser = build_parser()
    assert parser.parse_args(["doctor", "--json"]).json is True
    assert parser.parse_args(["explain", "f", "--cpu", "neoverse-v2", "-v"]).cpu == "neoverse-v2"


# -- perf versions, LL/L3 names, several runs, top-down (issue #14) ---------------------


@pytest.mark.parametrize(
    "line",
    [
        "       8,812.34 msec task-clock                #    0.998 CPUs utilized",  # perf 4.14+
        "       8812.340000 task-clock (msec)         #    0.998 CPUs utilized",  # 3.13-4.13
        "       8812.340000 task-clock                #    0.998 CPUs utilized",  # 3.x
        "       8812.340000 task-clock-msecs         #      0.998 CPUs",  # 2.6.3x
    ],
)
def test_task_clock_is_milliseconds_in_every_perf_version(line):
    text = f"{line}\n                37      page-faults\n\n  8.830 seconds time elapsed\n"
    stat = parse(text)
    assert stat.counts["task_clock"] == pytest.approx(8_812.34e6)  # ns
    metrics = stat.metrics("cortex-a72")
    assert metrics["cpu_utilisation"] == pytest.approx(8.81234 / 8.830)
    assert metrics["page_faults_per_sec"] == pytest.approx(37 / 8.81234)  # not millions


def test_a_bare_integer_task_clock_is_nanoseconds():
    # A recent perf's plain report (corpus perfninja_worked_conditional_store_1): a bare
    # integer, perf's own figure 0.999 CPUs over 2.870 s. As ms it would be 999,390 CPUs.
    text = (
        "     2,868,419,549      task-clock                       #    0.999 CPUs utilized\n"
        "               528      page-faults                      #  184.073 /sec\n\n"
        "       2.870168980 seconds time elapsed\n"
    )
    stat = parse(text)
    assert stat.counts["task_clock"] == pytest.approx(2_868_419_549)  # ns, as printed
    metrics = stat.metrics()
    assert metrics["cpu_utilisation"] == pytest.approx(0.9994, abs=1e-4)
    assert metrics["page_faults_per_sec"] == pytest.approx(184.07, abs=0.01)  # perf's figure
    # without the elapsed time or perf's figure, an integer is still read as ns ...
    assert parse("  2,868,419,549  task-clock\n").counts["task_clock"] == 2_868_419_549
    # ... and perf's own "CPUs utilized" overrules the form: 2,868 as ms gives 0.999
    text_ms = (
        "   2,868  task-clock   #    0.999 CPUs utilized\n\n"
        "       2.870168980 seconds time elapsed\n"
    )
    assert parse(text_ms).counts["task_clock"] == pytest.approx(2_868e6)


@pytest.mark.parametrize(
    ("name", "logical"),
    [
        ("l3d_cache", "llc_read"),
        ("l3d_cache_refill", "llc_miss"),
        ("ll_cache_rd", "llc_read"),
        ("ll_cache_miss_rd", "llc_miss"),
        ("LLC-loads", "llc_read"),
        ("LLC-load-misses", "llc_miss"),
        ("armv8_pmuv3_0/l3d_cache_refill/", "llc_miss"),
        ("r2a", "llc_miss"),
        ("r2b", "llc_read"),
        ("ll_cache_miss:u", "llc_miss"),
    ],
)
def test_ll_and_l3_events_have_logical_names(name, logical):
    assert logical_name(name, "arm") == logical


def test_l3_refills_give_llc_mpki():
    text = (
        "  1,000,000,000      instructions:u\n     20,000,000      l3d_cache_refill:u\n"
        "     25,000,000      l3d_cache:u\n"
    )
    stat = parse(text)
    assert stat.unmapped == ()
    metrics = stat.metrics("neoverse-n1")
    assert metrics["llc_mpki"] == pytest.approx(20.0)
    assert metrics["llc_miss"] == pytest.approx(0.8)


TWO_RUNS = """\
 Performance counter stats for './stride':

    10,000,000,000      instructions:u            #    0.20  insn per cycle
    50,000,000,000      cycles:u

      20.0 seconds time elapsed

 Performance counter stats for './stride':

    40,000,000,000      cycles:u
    34,000,000,000      stalled-cycles-backend:u  #   85.00% backend cycles idle
"""


def test_two_runs_are_kept_apart_and_metrics_combined_per_run():
    report = parse_report(TWO_RUNS)
    assert [r.counts["cycles"] for r in report.runs] == [50e9, 40e9]  # never 90e9
    metrics = report.metrics("cortex-a76")
    assert metrics["ipc"] == pytest.approx(0.2)  # from run 1 only
    assert metrics["backend_stalled"] == pytest.approx(0.85)  # 34/40, not 34/90
    assert metrics["cycles_per_call"] == pytest.approx(45e9)  # median of 50e9 and 40e9
    with pytest.raises(PerfStatError, match="2 separate perf stat runs"):
        parse(TWO_RUNS)


PRE_POST_WITHOUT_HEADERS = """\
pre:

     1,000,000,000      cycles
     2,000,000,000      instructions              #    2.00  insn per cycle

       0.500000000 seconds time elapsed

post:

       800,000,000      cycles
     1,200,000,000      instructions              #    1.50  insn per cycle

       0.400000000 seconds time elapsed
       0.390000000 seconds user
"""


def test_counters_after_a_footer_are_another_run_even_without_a_header():
    # Blocks pasted into a commit message without their headers (pre: / post:) are two
    # builds; averaging them would give 900 M cycles that neither build ran.
    report = parse_report(PRE_POST_WITHOUT_HEADERS)
    assert [r.counts["cycles"] for r in report.runs] == [1e9, 8e8]
    assert [r.elapsed_s for r in report.runs] == [0.5, 0.4]
    assert report.runs[1].user_s == pytest.approx(0.39)


def test_a_title_with_nothing_under_it_does_not_lend_its_title_to_the_next_run():
    text = (
        " Performance counter stats for 'a':\n\n"
        " Performance counter stats for 'b':\n\n  1,000  cycles\n\n  1.0 seconds time elapsed\n"
    )
    (run,) = parse_report(text).runs
    assert run.title == "Performance counter stats for 'b'" and run.counts["cycles"] == 1000


def test_median_of_three_runs():
    block = " Performance counter stats for 'x':\n\n  {c:,}  cycles\n  {i:,}  instructions\n\n"
    text = "".join(block.format(c=10**9, i=i) for i in (1 * 10**9, 3 * 10**9, 2 * 10**9))
    assert parse_report(text).metrics()["ipc"] == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # perf 4.x --topdown (per core)
        (
            "        retiring      bad speculation       frontend bound        backend bound\n"
            "S0-C0    2     23.8%       11.6%            28.3%           36.3%\n",
            {
                "retiring": 0.238,
                "bad_speculation": 0.116,
                "frontend_bound": 0.283,
                "backend_bound": 0.363,
            },
        ),
        # ... with the other cores' rows left out as an author quotes it (Damageboy, "This
        # Goes to Eleven" part 3, 2020, `perf stat -a --topdown`; perf's own
        # Documentation/topdown.txt ends its table with the same "...")
        (
            "        retiring      bad speculation       frontend bound        backend bound\n"
            "...\n"
            "S0-C3 1    37.6%                32.3%                16.9%                13.2%\n",
            {
                "retiring": 0.376,
                "bad_speculation": 0.323,
                "frontend_bound": 0.169,
                "backend_bound": 0.132,
            },
        ),
        # perf 6.x default output on a hybrid Intel core
        (
            "  TopdownL1 (cpu_core)  #  53.4 %  tma_backend_bound\n"
            "                        #   0.2 %  tma_bad_speculation\n"
            "                        #  13.8 %  tma_frontend_bound\n"
            "                        #  32.5 %  tma_retiring\n",
            {
                "backend_bound": 0.534,
                "bad_speculation": 0.002,
                "frontend_bound": 0.138,
                "retiring": 0.325,
            },
        ),
        # -M TopdownL1 (fractions in the shadow comments)
        (
            "  7,017,115,812  uops_issued.any  #  0.91 Backend_Bound  (14.33%)\n"
            " 19,206,823,557  cpu_clk_unhalted.thread  #  0.09 Retiring  (14.30%)\n",
            {"backend_bound": 0.91, "retiring": 0.09},
        ),
        # --topdown -I: the mean over the intervals
        (
            "#   time   %  tma_retiring %  tma_backend_bound %  tma_frontend_bound %  "
            "tma_bad_speculation\n"
            "   1.001141351    11.5   34.9   46.9   6.7\n"
            "   2.006141972    13.5   28.1   50.3   8.1\n",
            {
                "retiring": 0.125,
                "backend_bound": 0.315,
                "frontend_bound": 0.486,
                "bad_speculation": 0.074,
            },
        ),
        # -M PipelineL1,PipelineL2 on AMD Zen 4, quoted with the event columns cut away
        # (perf-book, corpus perfbook_sha256_pipeline_zen4): the level-2 names are not
        # level-1 ones, and the leading "%" of a line is no event
        (
            " 0.0 %  bad_speculation_mispredicts        (20.08%) \n"
            " 0.0 %  bad_speculation                    (20.08%)\n"
            " 6.1 %  frontend_bound                     (20.00%)\n"
            "65.9 %  backend_bound_cpu                  (20.00%)\n"
            " 1.7 %  backend_bound_memory               (20.00%)\n"
            "67.5 %  backend_bound                      (20.00%)\n"
            "26.3 %  retiring                           (20.08%)\n"
            "20.2 %  retiring_fastpath                  (19.99%)\n",
            {
                "bad_speculation": 0.0,
                "frontend_bound": 0.061,
                "backend_bound": 0.675,
                "retiring": 0.263,
                "core_bound": 0.659,
                "memory_bound": 0.017,
                "branch_mispredicts": 0.0,
            },
        ),
        # perf 6.x default output on a core with TMA level 2 (Sapphire Rapids layout):
        # the backend's, bad speculation's and the front end's parts under TopdownL2
        (
            "  TopdownL1        #     21.1 %  tma_backend_bound\n"
            "                   #      7.5 %  tma_bad_speculation\n"
            "                   #     30.2 %  tma_frontend_bound\n"
            "                   #     41.3 %  tma_retiring\n"
            "  TopdownL2        #      8.5 %  tma_core_bound\n"
            "                   #     12.6 %  tma_memory_bound\n"
            "                   #      6.9 %  tma_branch_mispredicts\n"
            "                   #     11.6 %  tma_fetch_latency\n",
            {
                "backend_bound": 0.211,
                "bad_speculation": 0.075,
                "frontend_bound": 0.302,
                "retiring": 0.413,
                "core_bound": 0.085,
                "memory_bound": 0.126,
                "branch_mispredicts": 0.069,
                "fetch_latency": 0.116,
            },
        ),
        # -M TopdownL2 in perf 5.x (names without tma_, values as fractions)
        (
            "  7,017,115,812  cycle_activity.stalls_mem_any  #  0.62 Memory_Bound  (14.33%)\n"
            "  2,117,115,812  exe_activity.1_ports_util  #  0.21 Core_Bound  (14.30%)\n",
            {"memory_bound": 0.62, "core_bound": 0.21, "backend_bound": 0.83},
        ),
    ],
)
def test_perf_topdown_outputs(text, expected):
    stat = parse(text)
    assert stat.perf_metrics == pytest.approx(expected)
    assert stat.metrics() == pytest.approx({**stat.metrics(), **expected})


def test_intel_topdown_events_are_fractions_of_slots():
    text = (
        "  10,000,000,000  slots\n   2,000,000,000  topdown-retiring\n"
        "     500,000,000  topdown-bad-spec\n   1,500,000,000  topdown-fe-bound\n"
        "   6,000,000,000  topdown-be-bound\n"
    )
    stat = parse(text)
    assert stat.arch == "x86" and stat.unmapped == ()
    assert stat.perf_metrics == pytest.approx(
        {"retiring": 0.2, "bad_speculation": 0.05, "frontend_bound": 0.15, "backend_bound": 0.6}
    )


def test_intel_topdown_mem_bound_splits_the_backend():
    # Level 2 in the same slots (Sapphire Rapids): tma_memory_bound = topdown-mem-bound /
    # slots, tma_core_bound = max(0, tma_backend_bound - tma_memory_bound).
    text = (
        "  10,000,000,000  slots\n   2,000,000,000  topdown-retiring\n"
        "     500,000,000  topdown-bad-spec\n   1,500,000,000  topdown-fe-bound\n"
        "   6,000,000,000  topdown-be-bound\n   4,500,000,000  topdown-mem-bound\n"
        "     300,000,000  topdown-br-mispredict\n"
    )
    stat = parse(text)
    assert stat.unmapped == ()
    assert stat.perf_metrics["memory_bound"] == pytest.approx(0.45)
    assert stat.perf_metrics["core_bound"] == pytest.approx(0.15)
    assert stat.perf_metrics["branch_mispredicts"] == pytest.approx(0.03)
    assert stat.perf_metrics["machine_clears"] == pytest.approx(0.02)
    # ... and the front end's: tma_fetch_latency = topdown-fetch-lat / slots, the
    # bandwidth the rest (Linux perf x86 sapphirerapids metrics: tma_fetch_bandwidth =
    # max(0, tma_frontend_bound - tma_fetch_latency)).
    fetch = parse(text + "     900,000,000  topdown-fetch-lat\n").perf_metrics
    assert fetch["fetch_latency"] == pytest.approx(0.09)
    assert fetch["fetch_bandwidth"] == pytest.approx(0.06)


def test_old_topdown_slot_events():
    # perf 4.6+ generic topdown events: the level-1 formulas of the 2016 patch set.
    text = (
        "  4,000  topdown-total-slots\n  2,000  topdown-slots-issued\n"
        "  1,600  topdown-slots-retired\n    800  topdown-fetch-bubbles\n"
        "    100  topdown-recovery-bubbles\n"
    )
    assert parse(text).perf_metrics == pytest.approx(
        {"frontend_bound": 0.2, "bad_speculation": 0.125, "retiring": 0.4, "backend_bound": 0.275}
    )


def test_intels_tma_names_show_an_x86_run():
    # Only Intel's metric files name top-down metrics tma_* (Linux perf
    # pmu-events/arch/x86); a file of nothing else is an x86 run, not one read as Arm's.
    only_metrics = "3.1 %  tma_memory_bound\n33.2 %  tma_branch_mispredicts\n"
    assert parse(only_metrics).arch == "x86"
    perf6 = "  TopdownL1 (cpu_core)  #  53.4 %  tma_backend_bound\n"
    assert parse(perf6).arch == "x86"
    amd = " 6.1 %  frontend_bound   (20.00%)\n67.5 %  backend_bound   (20.00%)\n"
    assert parse(amd).arch == "arm"  # AMD's and Arm's metric files have no tma_ prefix


def test_csv_and_json_metric_columns_give_topdown():
    csv = "53.4,,TopdownL1,,,53.4,%  tma_backend_bound\n1000,,cycles,1000,100.00,,\n"
    assert parse(csv).perf_metrics == pytest.approx({"backend_bound": 0.534})
    csv2 = "40.1,,TopdownL2,,,40.1,%  tma_memory_bound\n1000,,cycles,1000,100.00,,\n"
    assert parse(csv2).perf_metrics == pytest.approx({"memory_bound": 0.401})
    json_lines = (
        '{"counter-value" : "1000.0", "unit" : "", "event" : "cycles", '
        '"event-runtime" : 1, "pcnt-running" : 100.00}\n'
        '{"metric-value" : "32.5", "metric-unit" : "%  tma_retiring"}\n'
    )
    stat = parse(json_lines)
    assert stat.format == "json" and stat.perf_metrics == pytest.approx({"retiring": 0.325})


def test_metric_group_repeats_are_averaged_not_summed():
    text = (
        "  100  cpu_clk_unhalted.thread  # 0.5 Retiring\n"
        "  102  cpu_clk_unhalted.thread\n  <not counted>  cpu_clk_unhalted.thread\n"
    )
    assert parse(text).counts["cycles"] == pytest.approx(101)


def test_interval_lines_are_still_summed():
    text = "  1.000  100  cycles\n  2.000  150  cycles\n"
    assert parse(text).counts["cycles"] == 250


# -- properties ------------------------------------------------------------------------------

counts_st = st.integers(min_value=1, max_value=10**13)


def _grouped(n: int) -> str:
    return f"{n:,}"


@settings(max_examples=60, deadline=None)
@given(runs=st.lists(st.tuples(counts_st, counts_st), min_size=1, max_size=4), headed=st.booleans())
def test_property_runs_never_mix(runs, headed):
    header = " Performance counter stats for 'x':\n\n" if headed else "\n"
    text = "".join(
        f"{header}  {_grouped(c)}  cycles\n"
        f"  {_grouped(i)}  instructions\n\n  1.0 seconds time elapsed\n\n"
        for c, i in runs
    )
    report = parse_report(text)
    assert [(r.counts["cycles"], r.counts["instructions"]) for r in report.runs] == runs
    ipcs = sorted(i / c for c, i in runs)
    assert min(ipcs) - 1e-9 <= report.metrics()["ipc"] <= max(ipcs) + 1e-9


@settings(max_examples=60, deadline=None)
@given(
    ms=st.decimals(min_value="0.01", max_value="999999.99", places=2),
    style=st.sampled_from(
        [
            ("{v:,.2f} msec task-clock"),  # perf 4.14+: %'18.2f
            ("{v:.6f} task-clock (msec)"),  # perf 3.13-4.13: %18.6f
            ("{v:.6f} task-clock"),
        ]
    ),
)
def test_property_task_clock_forms_agree(ms, style):
    stat = parse("   " + style.format(v=float(ms)) + "\n")
    assert stat.counts["task_clock"] == pytest.approx(float(ms) * 1e6)


# -- explain: --cpu and --json --------------------------------------------------------------


def test_explain_unknown_cpu_is_a_usage_error_with_a_did_you_mean(capsys):
    assert main(["explain", str(A72), "--cpu", "cortex-a27"]) == 2
    err = capsys.readouterr().err
    assert "unknown core 'cortex-a27'. Did you mean cortex-a72" in err
    assert err.count("\n") == 1  # one paragraph
    assert main(["explain", str(A72), "--cpu", "intel-core-skylake"]) == 0


def test_explain_json_is_the_diagnosis_as_data(capsys):
    assert main(["explain", str(A72), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["schema"] == "inferperf-explain/1" and data["core"] == "cortex-a72"
    assert data["core_from"] == "file"
    primary = data["diagnosis"]["primary"]
    assert primary["category"] == "l2_llc_residency"
    l2 = next(e for e in primary["evidence"] if e["metric"] == "l2_mpki")
    assert l2["value"] == pytest.approx(14.561, abs=1e-3) and l2["threshold"] == 10.0
    assert l2["crossed"] and "AWS" in l2["source"]
    assert "backend_bound" in data["diagnosis"]["not_judged"]
    (run,) = data["runs"]
    assert run["counts"]["l2_refill"] == 94_478_103
    assert {
        "event": "r05:u",
        "logical": "l1d_tlb_refill",
        "value": 9_214_377.0,
        "unit": "",
        "status": "counted",
        "running_pct": 42.85,
    } in run["events"]


def test_explain_says_two_runs_of_one_command_were_combined(explain_text):
    out = explain_text(TWO_RUNS, "--cpu", "cortex-a76")
    # one command, event sets that differ: combined (each metric from the run that
    # counted its inputs), never summed
    assert "combined 2 runs of the same command" in out
    assert "backend_stalled  0.850" in out
    assert "[backend_bound]" in out


# Real output (fixtures/perfstat/n2_topdownl1_false_sharing.txt, verbatim), published
# without an interpretation, so not in the corpus: Jing Zhang,
# "[PATCH v4 0/6] Add metrics for neoverse-n2", linux-kernel, 2022-12-23
# (https://lore.kernel.org/all/1671799045-1108027-1-git-send-email-renyu.zj@linux.alibaba.com/),
# on Yitian 710 (Neoverse N2), perf's shadow fractions computed with the erratum correction.
N2_TOPDOWN_L1 = (FIXTURES / "n2_topdownl1_false_sharing.txt").read_text()


def test_neoverse_n2_topdown_keeps_perfs_value_when_the_counts_give_an_impossible_one():
    stat = parse(N2_TOPDOWN_L1)
    # cpu_cycles is printed once per metric group: the three copies are averaged
    assert stat.counts["cycles"] == pytest.approx(
        (4_310_905_590 + 4_330_308_058 + 4_316_583_673) / 3
    )
    assert stat.perf_metrics == pytest.approx(
        {"bad_speculation": 0.0, "retiring": 0.040, "frontend_bound": 0.271, "backend_bound": 0.694}
    )
    # Uncorrected N2 r0p3 formula: 0.99845 x (1 - 25.01e9 / (5 x 4.319e9)) = -0.158, which
    # no fraction of slots can be (STALL_SLOT counts one slot per cycle too many on r0p0):
    # perf's own 4.0 % stands.
    metrics = stat.metrics("neoverse-n2")
    assert metrics["retiring"] == pytest.approx(0.040)
    assert metrics["backend_bound"] == pytest.approx(0.694)
    # With the erratum correction (an N2 r0p0 such as Cobalt 100) the counts give it too:
    # 0.99845 x (1 - (25.01e9 - 4.319e9) / (5 x 4.319e9)) = 0.0417.
    assert stat.metrics("azure-cobalt-100")["retiring"] == pytest.approx(0.0417, abs=5e-4)


def _n2_counts_only(text: str) -> str:
    """The run with perf's printed fractions cut: each line up to its ``#`` comment, the
    comment-only lines gone (what ``perf stat -e`` of the same events prints)."""
    lines = [line.split(" #", 1)[0].rstrip() for line in text.splitlines()]
    return "\n".join(line for line in lines if not line.lstrip().startswith("#")) + "\n"


def _n2_run(cycles: int, stall_slot: int, stall_frontend: int, printed: str = "") -> str:
    """A constructed N2 TopdownL1 run in perf 6.x's layout (for the revision rules only:
    the real outputs on record are all r0p0)."""
    return (
        " Performance counter stats for './bench':\n\n"
        f"     {cycles:>13,}      cpu_cycles{printed}\n"
        f"     {stall_slot:>13,}      stall_slot\n"
        f"     {stall_frontend:>13,}      stall_slot_frontend\n"
        "     9,000,000,000      stall_slot_backend\n"
        "     8,000,000,000      op_spec\n"
        "     7,900,000,000      op_retired\n"
        "        10,000,000      br_mis_pred\n\n"
        "       1.000000000 seconds time elapsed\n\n"
    )


def test_neoverse_n2_takes_the_revision_perfs_printed_fraction_shows():
    # The kernel patch's run: perf printed retiring 4.0 %, which r0p0's formula gives
    # from the counts (0.99845 x (1 - (25.01e9 - 4.319e9) / (5 x 4.319e9)) = 0.042) and
    # r0p3's does not (-0.158): the counts are read as r0p0's, every share from them.
    report = parse_report(N2_TOPDOWN_L1).on_core("neoverse-n2")
    assert report.revision.startswith("neoverse-n2-r0p0: perf printed retiring 0.040")
    metrics = report.metrics("neoverse-n2")
    assert metrics["retiring"] == pytest.approx(0.0417, abs=5e-4)
    assert metrics["frontend_bound"] == pytest.approx(0.271)  # perf's (no BR_MIS_PRED)
    assert "stall_slot" not in report.unavailable


def test_neoverse_n2_slots_beyond_five_a_cycle_are_r0p0s():
    # The same counts without perf's fractions: STALL_SLOT 25.01e9 over 4.319e9 cycles is
    # 5.79 slots a cycle, which only r0p0's extra slot per cycle gives.
    report = parse_report(_n2_counts_only(N2_TOPDOWN_L1)).on_core("neoverse-n2")
    assert report.runs[0].perf_metrics == {}
    assert report.revision == (
        "neoverse-n2-r0p0: stall_slot counted 5.79 slots per cycle, more than the 5 an N2 "
        "has: only r0p0's extra slot per cycle gives that"
    )
    assert report.metrics("neoverse-n2")["retiring"] == pytest.approx(0.0417, abs=5e-4)


def test_neoverse_n2_slot_events_wait_for_the_revision_where_the_file_shows_none():
    # 4.2 and 2.0 slots a cycle: possible on both revisions, and nothing printed. Read as
    # r0p3 the front end would be 0.40 - 0.001 = 0.399; as r0p0, 0.199: not guessed.
    text = _n2_run(10_000_000_000, 42_000_000_000, 20_000_000_000)
    report = parse_report(text).on_core("neoverse-n2")
    assert report.revision == ""
    assert report.unavailable["stall_slot"].startswith("not known to count the slots")
    assert "--cpu neoverse-n2-r0p0" in report.unavailable["stall_slot"]
    assert "stall_slot_frontend" in report.unavailable
    metrics = report.metrics("neoverse-n2")
    assert "frontend_bound" not in metrics and "retiring" not in metrics
    # STALL_SLOT_BACKEND counts the same on both: 9e9 / 5e10 - 3 x 1e7 / 1e10 = 0.177
    assert metrics["backend_bound"] == pytest.approx(0.177)
    # Named, the revision's formula is taken
    for row, frontend in (("neoverse-n2-r0p0", 0.199), ("neoverse-n2-r0p3", 0.399)):
        named = parse_report(text).on_core(row)
        assert named.metrics(row)["frontend_bound"] == pytest.approx(frontend), row


def test_neoverse_n2_r0p3_is_read_from_perfs_printed_fraction_too():
    # perf printed 39.9 % frontend_bound: r0p3's formula (0.399), not r0p0's (0.199).
    printed = "                       #     39.9 %  frontend_bound"
    text = _n2_run(10_000_000_000, 42_000_000_000, 20_000_000_000, printed)
    report = parse_report(text).on_core("neoverse-n2")
    assert report.revision.startswith("neoverse-n2-r0p3: perf printed frontend_bound 0.399")
    assert report.metrics("neoverse-n2")["frontend_bound"] == pytest.approx(0.399)


def test_neoverse_n2_runs_that_show_different_revisions_leave_it_open():
    r0p3 = _n2_run(10_000_000_000, 42_000_000_000, 20_000_000_000, "  #  39.9 %  frontend_bound")
    r0p0 = _n2_run(10_000_000_000, 55_000_000_000, 20_000_000_000)  # 5.5 slots a cycle
    report = parse_report(r0p3 + r0p0).on_core("neoverse-n2")
    assert len(report.runs) == 2 and report.revision == ""
    assert "stall_slot" in report.unavailable


def test_explain_names_the_n2_revision_read_and_takes_yitian_as_r0p0(capsys):
    fixture = str(FIXTURES / "n2_topdownl1_false_sharing.txt")
    assert main(["explain", fixture, "--cpu", "n2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["revision"].startswith("neoverse-n2-r0p0: perf printed retiring 0.040")
    assert data["metrics"]["retiring"] == pytest.approx(0.0417, abs=5e-4)
    assert main(["explain", fixture, "--cpu", "Yitian 710"]) == 0
    out = capsys.readouterr().out
    assert "core: neoverse-n2-r0p0" in out and "revision read from the file" not in out
    assert "retiring         0.042" in out


@given(
    cycles=st.floats(1e8, 1e11),
    stall=st.floats(0.05, 0.95),
    frontend=st.floats(0.0, 0.9),
    useful=st.floats(0.5, 1.0),
    r0p0=st.booleans(),
)
@settings(max_examples=200, deadline=None)
def test_n2_revision_recovers_the_formula_perf_printed(cycles, stall, frontend, useful, r0p0):
    # Counts a revision's PMU gives (r0p0 adds one slot per cycle to STALL_SLOT and
    # STALL_SLOT_FRONTEND), and the retiring perf prints from them with that revision's
    # formula, rounded to perf 6.x's 0.1 %: the revision is the one perf used.
    extra = cycles if r0p0 else 0.0
    counts = {
        "cycles": cycles,
        "stall_slot": stall * 5 * cycles + extra,
        "stall_slot_frontend": frontend * stall * 5 * cycles + extra,
        "op_spec": 1e9,
        "op_retired": useful * 1e9,
    }
    printed = {"retiring": round((1 - stall) * useful, 3)}
    revision, why = n2_revision(counts, printed)
    assert revision == ("r0p0" if r0p0 else "r0p3") and why


# Real output (fixtures/perfstat/zen4_pipeline_l2_serialpi.txt, verbatim; its README):
# two `perf stat -M PipelineL2` runs on an AMD Zen 4, from KeithJH/BenchPiCalc
# notes/SerialPi.md. perf printed the level-2 shares; each level-1 share from the raw
# events (Linux amdzen4 PipelineL1: slots = 6 x ls_not_halted_cyc) is the sum of its
# level-2 parts, each printed to 0.1 %.
ZEN4_PIPELINE_L2 = (FIXTURES / "zen4_pipeline_l2_serialpi.txt").read_text()


@pytest.mark.parametrize(
    ("run", "perf_printed"),
    [
        (
            0,
            {
                "backend_bound": 0.531 + 0.025,
                "retiring": 0.400 + 0.004,
                "frontend_bound": 0.004 + 0.036,
                "bad_speculation": 0.000 + 0.000,
                "core_bound": 0.531,
                "memory_bound": 0.025,
                "branch_mispredicts": 0.000,
                "machine_clears": 0.000,
                "fetch_latency": 0.036,
                "fetch_bandwidth": 0.004,
                # retiring_microcode: retiring x ex_ret_ucode_ops / ex_ret_ops
                "microcode_sequencer": 0.004,
            },
        ),
        (
            1,
            {
                "backend_bound": 0.722 + 0.042,
                "retiring": 0.169 + 0.006,
                "frontend_bound": 0.006 + 0.054,
                "bad_speculation": 0.001 + 0.000,
                "core_bound": 0.722,
                "memory_bound": 0.042,
                "branch_mispredicts": 0.001,
                "machine_clears": 0.000,
                "fetch_latency": 0.054,
                "fetch_bandwidth": 0.006,
                "microcode_sequencer": 0.006,
            },
        ),
    ],
)
def test_amd_zen4_dispatch_slots_give_the_level1_shares_perf_prints(run, perf_printed):
    stat = parse_report(ZEN4_PIPELINE_L2).runs[run]
    assert stat.arch == "x86"
    metrics = stat.metrics("amd-zen4")
    for name, printed in perf_printed.items():
        assert metrics[name] == pytest.approx(printed, abs=0.0011), name
    # Without the core the width is unknown (Zen 5 dispatches 8 per cycle): no share
    # from the counts; the backend is perf's printed parts summed (perf knew the core).
    unnamed = stat.metrics()
    assert "retiring" not in unnamed
    assert unnamed["microcode_sequencer"] == pytest.approx(perf_printed["microcode_sequencer"])
    assert unnamed["backend_bound"] == pytest.approx(perf_printed["backend_bound"])
    assert unnamed["frontend_bound"] == pytest.approx(perf_printed["frontend_bound"])
    assert stat.metrics("amd-zen5")["backend_bound"] == pytest.approx(
        perf_printed["backend_bound"] * 6 / 8, abs=0.001
    )


def test_explain_takes_the_zen4_shares_under_any_name_of_the_core(capsys):
    """The CLI resolves what users type, and detection's slug, to the core's row."""
    path = str(FIXTURES / "zen4_pipeline_l2_serialpi.txt")
    for cpu in ("zen4", "Zen 4", "amd-epyc-zen4"):
        assert main(["explain", path, "--cpu", cpu, "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        # the median of the two runs: 0.556 and 0.764 -> 0.660
        assert data["metrics"]["backend_bound"] == pytest.approx(0.660, abs=0.002), cpu


def test_amd_zen4_raw_events_read_as_their_counts():
    stat = parse_report(ZEN4_PIPELINE_L2).runs[0]
    assert stat.counts["branch_misses"] == 71_390_980  # ex_ret_brn_misp
    assert stat.counts["op_spec"] == 555_386_556_760  # de_src_op_disp.all
    # ex_ret_ops and ls_not_halted_cyc printed once per metric group: averaged
    assert stat.counts["op_retired"] == pytest.approx((554_914_348_227 + 555_175_764_260) / 2)
    assert stat.counts["cycles"] == pytest.approx(
        (228_799_322_771 + 228_759_804_488 + 228_841_683_026 + 228_889_915_295) / 4
    )
    # The cmask=0x6 copy counts cycles with all six slots empty: another event, never
    # summed into the slots left empty.
    assert stat.counts["stall_slot_frontend"] == 53_811_244_721
    assert "cpu/de_no_dispatch_per_slot.no_ops_from_frontend,cmask=0x6/" in stat.unmapped


@pytest.mark.parametrize(
    ("text", "core", "expected"),
    [
        # Intel TMA level 3 (Linux perf x86 metrics, Ice Lake on): tma_l2_bound's stall
        # term (STALLS_L1D_MISS - STALLS_L2_MISS) / CLKS, tma_l3_bound = (STALLS_L2_MISS
        # - STALLS_L3_MISS) / CLKS, tma_dram_bound STALLS_L3_MISS / CLKS.
        (
            "   10,000,000,000      cycles\n"
            "    7,000,000,000      memory_activity.stalls_l1d_miss\n"
            "    5,000,000,000      memory_activity.stalls_l2_miss\n"
            "    1,000,000,000      memory_activity.stalls_l3_miss\n",
            "sapphirerapids",
            {"l2_bound": 0.2, "l3_bound": 0.4, "dram_stalled": 0.1},
        ),
        # tma_l1_bound = (CYCLE_ACTIVITY.STALLS_MEM_ANY - .STALLS_L1D_MISS) / CLKS (Linux
        # perf x86 skl-metrics.json; Golden Cove on EXE_ACTIVITY.BOUND_ON_LOADS -
        # MEMORY_ACTIVITY.STALLS_L1D_MISS); the page walks' active cycles over the cycles,
        # tma_load_stlb_miss (DTLB_LOAD_MISSES.WALK_ACTIVE / CLKS), the part of
        # tma_dtlb_load that walked.
        (
            "   10,000,000,000      cycles\n"
            "    6,000,000,000      cycle_activity.stalls_mem_any\n"
            "    4,500,000,000      cycle_activity.stalls_l1d_miss\n"
            "    1,200,000,000      dtlb_load_misses.walk_active\n"
            "      300,000,000      dtlb_store_misses.walk_active\n",
            "skylake",
            {"l1_bound": 0.15, "dtlb_load_bound": 0.12, "dtlb_store_bound": 0.03},
        ),
        # Haswell's names: *_PENDING for the stalls with a miss outstanding.
        (
            "   10,000,000,000      cycles\n"
            "    6,000,000,000      cycle_activity.stalls_ldm_pending\n"
            "    4,000,000,000      cycle_activity.stalls_l1d_pending\n"
            "    3,000,000,000      cycle_activity.stalls_l2_pending\n",
            "haswell",
            {"l1_bound": 0.2, "l2_bound": 0.1},
        ),
    ],
)
def test_intel_memory_levels_from_the_stall_events(text, core, expected):
    # Constructed in perf's layout.
    metrics = parse(text).metrics(core)
    assert {name: metrics[name] for name in expected} == pytest.approx(expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "  TopdownL3   #     12.0 %  tma_l2_bound\n"
            "              #     30.5 %  tma_l3_bound\n"
            "              #      8.0 %  tma_dram_bound\n",
            {"l2_bound": 0.12, "l3_bound": 0.305, "dram_stalled": 0.08},
        ),
        (
            "  TopdownL3   #     21.0 %  tma_l1_bound\n"
            "  TopdownL4   #     14.5 %  tma_dtlb_load\n"
            "              #      6.0 %  tma_dtlb_store\n",
            {"l1_bound": 0.21, "dtlb_load_bound": 0.145, "dtlb_store_bound": 0.06},
        ),
    ],
)
def test_intel_memory_levels_as_perf_prints_them(text, expected):
    # Constructed in perf's layout: perf -M TopdownL3 / TopdownL4.
    assert parse(text).perf_metrics == pytest.approx(expected)


def test_perfs_topdown_tree_as_a_mail_quotes_it_is_read():
    # Chen Yu (Intel), LKML, 25 Jun 2024, "[PATCH 2/2] sched/fair: Enhance sync wakeup
    # for short duration tasks", verbatim:
    # perf's top-down tree quoted without its events, one tab per level, netperf and
    # netserver on different CPUs. Level 3 reads L1_Bound and L3_Bound; the L3 names the
    # memory part (contested accesses, the false sharing the author found with perf c2c).
    text = (
        "30.5 %  tma_backend_bound\n"
        "\t16.8 %  tma_memory_bound\n"
        "\t\t11.0 %  tma_l1_bound\n"
        "\t\t32.4 %  tma_l3_bound\n"
        "\t\t\t59.5 %  tma_contested_accesses  <----\n"
        "\t\t\t11.1 %  tma_data_sharing\n"
    )
    assert parse(text).perf_metrics == pytest.approx(
        {
            "backend_bound": 0.305,
            "memory_bound": 0.168,
            "l1_bound": 0.11,
            "l3_bound": 0.324,
            # level 4 under L3_Bound: the lines another core wrote, his false sharing,
            # and those other cores read
            "contested_accesses": 0.595,
            "data_sharing": 0.111,
        }
    )


def test_the_single_stalled_cycles_event_of_2011_is_the_backends():
    # perf of April 2011 (before Linux commit 8f622422 split it) printed one generic
    # "stalled-cycles" event, "of all cycles are idle": on Nehalem UOPS_EXECUTED
    # .CORE_ACTIVE_CYCLES,c=1,i=1, which that commit made STALLED_CYCLES_BACKEND.
    stat = parse(
        "     9,755,544,436 cycles\n"
        "     2,555,944,921 stalled-cycles           #   26.20% of all cycles are idle\n"
    )
    assert stat.counts["stall_backend"] == 2_555_944_921
    assert "stalled-cycles" not in stat.unmapped


def test_intel_dram_stalls_read_from_the_event_the_core_counts():
    # Constructed in perf's layout (Sapphire Rapids prints the older
    # cycle_activity.stalls_l3_miss as 0 beside memory_activity.stalls_l3_miss, its
    # event: Intel perfmon SPR lists only the latter). The name that read 0 where the
    # other counted is not used; either gives dram_stalled = stalls / cycles.
    text = (
        "   40,000,000,000      cycles\n"
        "   60,000,000,000      instructions\n"
        "                0      cycle_activity.stalls_l3_miss\n"
        "    6,000,000,000      memory_activity.stalls_l3_miss\n"
        "\n       4.998554800 seconds time elapsed\n"
    )
    stat = parse(text)
    assert stat.arch == "x86"
    assert stat.counts["stall_l3_miss"] == 6_000_000_000
    assert stat.metrics("sapphirerapids")["dram_stalled"] == pytest.approx(0.15)
    assert "cycle_activity.stalls_l3_miss" in stat.superseded
    skylake = parse(
        text.replace("memory_activity", "x_unused").replace(
            "                0      cycle_activity", "    4,000,000,000      cycle_activity"
        )
    )
    assert skylake.metrics("skylake")["dram_stalled"] == pytest.approx(0.10)


# -- perf's generic hardware-cache names (every alias perf accepts) ---------------------------

# tools/perf/util/evsel.c: evsel__hw_cache, evsel__hw_cache_op, evsel__hw_cache_result
_PERF_CACHES = {
    "l1d": ("L1-dcache", "l1-d", "l1d", "L1-data"),
    "l1i": ("L1-icache", "l1-i", "l1i", "L1-instruction"),
    "ll": ("LLC", "L2"),
    "dtlb": ("dTLB", "d-tlb", "Data-TLB"),
    "itlb": ("iTLB", "i-tlb", "Instruction-TLB"),
    "bpu": ("branch", "branches", "bpu", "btb", "bpc"),
}
_PERF_READ = ("load", "loads", "read")
_PERF_RESULTS = {"access": ("refs", "Reference", "ops", "access"), "miss": ("misses", "miss")}
# drivers/perf/arm_pmuv3.c armv8_pmuv3_perf_cache_map; x86 *_hw_cache_event_ids
_READS = {
    "arm": {
        ("l1d", "access"): "l1d_access",
        ("l1d", "miss"): "l1d_refill",
        ("l1i", "access"): "l1i_access",
        ("l1i", "miss"): "l1i_refill",
        ("ll", "access"): "llc_read",
        ("ll", "miss"): "llc_miss",
        ("dtlb", "access"): "dtlb_access",
        ("dtlb", "miss"): "l1d_tlb_refill",
        ("itlb", "access"): "itlb_access",
        ("itlb", "miss"): "l1i_tlb_refill",  # L1I_TLB_REFILL
        ("bpu", "access"): "branches",
        ("bpu", "miss"): "branch_misses",
    },
    "x86": {
        ("l1d", "access"): "l1d_access",
        ("l1d", "miss"): "l1d_refill",
        ("l1i", "access"): "l1i_access",
        ("l1i", "miss"): "l1i_refill",
        ("ll", "access"): "llc_read",
        ("ll", "miss"): "llc_miss",
        ("dtlb", "access"): "dtlb_access",
        ("dtlb", "miss"): "dtlb_walk",
        ("itlb", "access"): "itlb_access",
        ("itlb", "miss"): "itlb_walk",
        ("bpu", "access"): "branches",
        ("bpu", "miss"): "branch_misses",
    },
}


def _hw_cache_names():
    """Every name perf decodes to a read: cache alone, cache-op, cache-result,
    cache-op-result and cache-result-op (parse_events__decode_legacy_cache)."""
    for cache, cache_names in _PERF_CACHES.items():
        for name in cache_names:
            yield name, cache, "access"
            for op in _PERF_READ:
                yield f"{name}-{op}", cache, "access"
            for result, result_names in _PERF_RESULTS.items():
                for res in result_names:
                    yield f"{name}-{res}", cache, result
                    for op in _PERF_READ:
                        yield f"{name}-{op}-{res}", cache, result
                        yield f"{name}-{res}-{op}", cache, result


@pytest.mark.parametrize("arch", ["arm", "x86"])
def test_every_hw_cache_alias_perf_accepts_maps_like_its_load_form(arch):
    generic = {"branches": "branches"}  # the hardware event "branches" wins, as in perf
    names = list(_hw_cache_names())
    assert len(names) > 300
    for name, cache, result in names:
        expected = generic.get(name.lower(), _READS[arch][(cache, result)])
        assert logical_name(name, arch) == expected, name
        assert logical_name(name.upper() + ":u", arch) == expected, name
    # the op-less forms that published outputs use
    assert logical_name("L1-icache-misses", "arm") == logical_name("L1-icache-load-misses", "arm")
    assert logical_name("LLC-misses", "x86") == "llc_miss"
    assert logical_name("dTLB-misses", "x86") == "dtlb_walk"
    assert logical_name("iTLB-misses", "x86") == "itlb_walk"


@pytest.mark.parametrize(
    "name",
    [
        "L1-dcache-stores",
        "L1-dcache-store-misses",
        "L1-dcache-prefetches",
        "L1-dcache-prefetch-misses",
        "LLC-speculative-read-misses",
        "node-loads",
        "node-load-misses",
        "L1-dcache-load-misses-loads",  # a second op: perf refuses it
        "L1-dcache-misses-miss",  # a second result
        "L1-dcache-bogus",
    ],
)
def test_hw_cache_names_that_are_not_reads_have_no_logical_name(name):
    assert logical_name(name, "arm") is None
    assert logical_name(name, "x86") is None


def test_op_less_l1i_misses_give_the_l1i_mpki():
    text = (
        " Performance counter stats for './bsort':\n\n"
        "         957828603      instructions\n"
        "          58003648      L1-icache-misses\n\n"
        "       0.282472631 seconds time elapsed\n"
    )
    report = parse_report(text)
    assert report.runs[0].counts == {"instructions": 957828603.0, "l1i_refill": 58003648.0}
    assert report.metrics()["l1i_mpki"] == pytest.approx(58003648 / 957828603 * 1000)


# -- digit grouping with two numbers on one line (-I: time, then the count) -----------------


@st.composite
def interval_reports(draw):
    grouping, decimal = draw(
        st.sampled_from(
            [(",", "."), (".", ","), (" ", ","), (NNBSP, ","), (NBSP, ","), (SWISS, ".")]
        )
    )

    def group(n: int) -> str:
        return f"{n:,}".replace(",", grouping)

    rows = draw(
        st.lists(st.tuples(st.integers(1, 10**12), st.integers(1, 10**12)), min_size=1, max_size=4)
    )
    pad = draw(st.integers(1, 12))
    lines = ["#           time             counts unit events"]
    for i, (cycles, insns) in enumerate(rows, 1):
        stamp = f"{i:6d}{decimal}{1_001_094 + i:09d}"
        lines.append(f"{stamp}{' ' * pad}{group(cycles):>19}      cycles:u")
        lines.append(f"{stamp}{' ' * pad}{group(insns):>19}      instructions:u")
    lines += ["", f"{len(rows):10d}{decimal}002000000 seconds time elapsed", ""]
    expected = {"cycles": sum(c for c, _ in rows), "instructions": sum(i for _, i in rows)}
    return "\n".join(lines), expected


@settings(max_examples=150, deadline=None)
@given(interval_reports())
def test_interval_time_and_grouped_count_are_two_numbers_in_every_grouping(report):
    text, expected = report
    stat = parse(text)
    assert stat.counts == pytest.approx(expected, rel=1e-12, abs=1e-6)


@pytest.mark.parametrize("grouping", [",", ".", " ", NNBSP, NBSP, SWISS])
def test_a_three_digit_count_after_a_single_space_stays_apart(grouping):
    # "1,001 123 cycles": the time and a count of 123 apart by one space are two numbers
    decimal = "." if grouping == "," else ","
    count = grouping.join(["4", "567"])
    text = f"     1{decimal}001 123 cycles\n     1{decimal}001 {count} instructions\n"
    stat = parse(text)
    assert stat.counts == {"cycles": 123.0, "instructions": 4567.0}


def test_a_file_that_names_no_core_hints_its_instruction_set_when_its_events_show_it():
    # Arm PMUv3 names show AArch64; Intel EVENT.UMASK names show x86; generic names
    # (cycles, cache-misses) show nothing, whatever the parser assumes for them.
    arm = parse_report("  1,000  l1d_cache_refill\n  5,000  cycles\n")
    assert (arm.core_hint, arm.isa_hint) == ("aarch64", "aarch64")
    x86 = parse_report("  1,000  inst_retired.any\n  5,000  cycles\n")
    assert x86.core_hint == "x86-64"
    plain = parse_report("  1,000  cache-misses\n  5,000  cycles\n")
    assert (plain.core_hint, plain.isa_hint) == (None, None)
    named = parse_report("  1,000  armv8_cortex_a72/l1d_cache_refill/\n")
    assert named.core_hint == "cortex-a72"


def test_perfs_footer_gives_the_cpus_busy_where_task_clock_was_not_counted(capsys):
    # perf prints the command's rusage (all its threads) as seconds user / sys
    # (print_footer, tools/perf/util/stat-display.c): the CPU time task-clock counts.
    footer = "\n  10.0 seconds time elapsed\n\n  52.0 seconds user\n   3.0 seconds sys\n"
    counts = "  1,000,000,000  cycles\n  2,000,000,000  instructions\n"
    report = parse_report(counts + footer)
    assert report.metrics()["cpu_utilisation"] == pytest.approx(5.5)
    with_clock = parse_report("  20,000.00 msec task-clock\n" + counts + footer)
    assert with_clock.metrics()["cpu_utilisation"] == pytest.approx(2.0)  # task-clock wins
    no_sys = parse_report(counts + "\n  10.0 seconds time elapsed\n  52.0 seconds user\n")
    assert "cpu_utilisation" not in no_sys.metrics()


@pytest.mark.parametrize("target", ["'system wide'", "'CPU(s) 1'", "'CPU(s) 0-7'"])
def test_counting_cpus_gives_no_cpus_busy(target):
    # perf stat -a / -C counts task-clock (cpu-clock) on each counted CPU for the whole
    # window, idle or not: its "CPUs utilized" is the number of CPUs counted, not what a
    # program kept busy, so no cpu_utilisation (the thread rules would read it as busy).
    block = (
        f" Performance counter stats for {target}:\n\n"
        "     80,123.40 msec cpu-clock                 #    8.006 CPUs utilized\n"
        "  1,000,000,000      cycles\n  2,000,000,000      instructions\n\n"
        "      10.007 seconds time elapsed\n"
    )
    assert "cpu_utilisation" not in parse_report(block).metrics()
    command = parse_report(block.replace(target, "'./bench'")).metrics()
    assert command["cpu_utilisation"] == pytest.approx(80.1234 / 10.007)


def test_rates_per_cpu_second_use_perfs_footer_where_task_clock_was_not_counted():
    # perf's footer is the rusage of the command it started, the CPU time task-clock
    # counts (print_footer, tools/perf/util/stat-display.c): it stands in for task-clock
    # in the rates per CPU-second, as in the CPUs busy. Constructed in perf's layout.
    block = (
        " Performance counter stats for './read --variant mmap':\n\n"
        "          15658693      faults\n\n"
        "     238.343423262 seconds time elapsed\n\n"
        "      43.273421000 seconds user\n"
        "     284.094372000 seconds sys\n"
    )
    metrics = parse_report(block).metrics()
    assert metrics["page_faults_per_sec"] == pytest.approx(15658693 / (43.273421 + 284.094372))
    # counting CPUs whole, the counts are every task's and the footer the command's: no rate
    wide = parse_report(block.replace("'./read --variant mmap'", "'system wide'")).metrics()
    assert "page_faults_per_sec" not in wide
    # task-clock, where counted, is the CPU time
    counted = parse_report(
        block.replace("      faults", "      faults\n  100,000.00 msec task-clock")
    )
    assert counted.metrics()["page_faults_per_sec"] == pytest.approx(156586.93)


def test_the_kernels_share_of_the_cpu_time_comes_from_perfs_footer_and_is_noted_past_half():
    # Constructed in perf's layout: the command's rusage, sys / (user + sys).
    counts = "  1,000,000,000  cycles\n  1,200,000,000  instructions\n"
    kernel = parse_report(
        counts + "\n  1.05 seconds time elapsed\n\n  0.275 seconds user\n  0.763 seconds sys\n"
    )
    metrics = kernel.metrics()
    assert metrics["kernel_share"] == pytest.approx(0.763 / 1.038)
    notes = diagnose(metrics, core="zen4").notes
    assert any(n.startswith("74% of the CPU time was spent in the kernel") for n in notes)
    user = parse_report(
        counts + "\n  1.05 seconds time elapsed\n\n  0.900 seconds user\n  0.100 seconds sys\n"
    ).metrics()
    assert user["kernel_share"] == pytest.approx(0.1)
    assert not any("spent in the kernel" in n for n in diagnose(user, core="zen4").notes)
    # no footer (the lines cut off): no share, not a 0
    assert "kernel_share" not in parse_report(counts).metrics()
    # counting CPUs whole, the footer is the command's (sleep: all sys), not the counts'
    wide = parse_report(
        " Performance counter stats for 'system wide':\n\n"
        + counts
        + "\n  1.001 seconds time elapsed\n\n  0.000 seconds user\n  0.001 seconds sys\n"
    ).metrics()
    assert "kernel_share" not in wide
    assert not any("spent in the kernel" in n for n in diagnose(wide, core="zen4").notes)


@pytest.mark.parametrize("order", [0, 1])
def test_a_read_event_wins_over_the_generic_cache_event_of_the_same_name(order):
    # x86 cache-misses (LONGEST_LAT_CACHE.MISS) counts prefetches and code reads too;
    # LLC-load-misses is the data reads the LLC MPKI thresholds are about.
    lines = ["  192,135  cache-misses\n", "  5,291  LLC-load-misses\n"]
    text = "  1,000,000  cycles\n" + "".join(lines[::-1] if order else lines)
    stat = parse(text, arch="x86")
    assert stat.counts["llc_miss"] == 5291
    assert stat.superseded == ("cache-misses",)


def test_explain_says_which_names_gave_way(tmp_path, capsys):
    path = tmp_path / "x86.txt"
    path.write_text(
        "  1,000,000  cycles\n  1,000,000  instructions\n"
        "  192,135  cache-misses\n  5,291  LLC-load-misses\n"
    )
    assert main(["explain", str(path), "--cpu", "skylake", "-v"]) == 0
    out = capsys.readouterr().out
    assert "not used (another name of the same logical event was): cache-misses" in out
    assert main(["explain", str(path), "--cpu", "skylake", "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert run["superseded"] == ["cache-misses"] and run["counts"]["llc_miss"] == 5291


def test_a_counted_ref_cycles_shows_x86():
    # Intel's fixed counter 2; Arm's perf map has no ref-cycles (<not supported> there).
    generic = "  1,000  cycles\n  900  instructions\n  50  cache-misses\n"
    assert parse(generic).arch == "arm"  # nothing shows the instruction set: Arm
    x86 = parse(generic + "  2,000  ref-cycles\n")
    assert x86.arch == "x86" and x86.counts["llc_miss"] == 50
    assert parse(generic + "  <not supported>  ref-cycles\n").arch == "arm"


@pytest.mark.parametrize(
    "event",
    [
        "power/energy-pkg/",
        "msr/tsc/",
        "cstate_core/c6-residency/",
        "uncore_imc/cas_count_read/",
        "amd_l3/l3_lookup_state.all_coherent_accesses_to_l3/",
        "ibs_op/cnt_ctl=1/",
    ],
)
def test_a_pmu_only_x86_kernels_register_shows_x86(event):
    # arch/x86/events/: msr, power (RAPL), cstate_*, uncore_*, amd_*, ibs_*
    generic = "  1,000  cycles\n  900  instructions\n  50  cache-misses\n"
    run = parse(generic + f"  7  {event}\n")
    assert run.arch == "x86" and run.counts["llc_miss"] == 50
    # an Arm system PMU of another name shows nothing (arm_cmn, arm_dsu, hisi_*)
    assert parse(generic + "  7  arm_cmn_0/hnf_cache_miss/\n").arch == "arm"


def test_more_stall_cycles_than_cycles_is_not_a_share_of_them():
    # An SGI machine's system-wide run published on linux-mm (2014): 151% frontend and
    # 115% backend "cycles idle". Within the slack a multiplexed estimate allows, kept.
    text = (
        " 355,222,544,890,379 cycles\n"
        " 536,445,412,234,588 stalled-cycles-frontend\n"
        " 409,110,531,310,223 stalled-cycles-backend\n"
        " 148,286,797,266,411 instructions\n"
    )
    run = parse(text)
    assert "stall_frontend" not in run.counts and "stall_backend" not in run.counts
    assert run.unavailable["stall_frontend"].startswith("151% of the cycles counted")
    assert run.unavailable["stall_backend"].startswith("115% of the cycles counted")
    near = parse(" 1,000,000 cycles\n 1,040,000 stalled-cycles-backend\n")
    assert near.counts["stall_backend"] == 1_040_000


def test_user_only_switches_and_migrations_are_not_zeros():
    # perf_exclude_event() (kernel/events/core.c) drops software events raised with kernel
    # registers from a :u event: the scheduler's switches and migrations never count.
    run = parse(
        "  10,962.45 msec task-clock:u\n"
        "          0      context-switches:u\n"
        "          0      cpu-migrations:u\n"
        "    793,915      page-faults:u\n"
        " 33,552,130,646  cycles:u\n"
    )
    assert "context_switches" not in run.counts and "cpu_migrations" not in run.counts
    assert run.unavailable["context_switches"].startswith(
        "counted in user mode only: the counter excludes the kernel (:u)"
    )
    assert run.counts["page_faults"] == 793_915  # a fault is taken in user mode: counted
    both = parse("  0  context-switches:uk\n  0  cpu-migrations\n 5,000,000 cycles\n")
    assert both.counts["context_switches"] == 0 and both.counts["cpu_migrations"] == 0


# -- names that count different events on Arm and x86 ---------------------------------

GENERIC_ONLY = """ Performance counter stats for './walk':

     4,000,000,000      cycles
     2,000,000,000      instructions              #    0.50  insn per cycle
        90,000,000      cache-references
        50,000,000      cache-misses              #   55.56 % of all cache refs
        12,000,000      dTLB-load-misses

       1.333000000 seconds time elapsed
"""


def test_a_file_that_shows_no_instruction_set_reads_them_as_arms_and_says_so(capsys):
    from pytest_inferperf.ingest.perf_stat import parse_report

    report = parse_report(GENERIC_ONLY)
    (run,) = report.runs
    # Arm's events: the lower bound on both (an x86 LLC miss was an L1D refill first)
    assert run.counts["l1d_refill"] == 50_000_000 and "llc_miss" not in run.counts
    assert run.counts["l1d_tlb_refill"] == 12_000_000 and "dtlb_walk" not in run.counts
    assert report.ambiguous == (
        "cache-references (on x86: last-level references, on AMD the L2's)",
        "cache-misses (on x86: last-level misses, on AMD the L2's)",
        "dTLB-load-misses (on x86: page walks)",
    )
    # named x86 (a core, or a name only x86 counts): read as x86's, nothing to say
    x86 = parse_report(GENERIC_ONLY, arch="x86")
    assert x86.runs[0].counts["llc_miss"] == 50_000_000 and x86.ambiguous == ()
    hinted = parse_report(
        GENERIC_ONLY.replace("     1,333", "     1,333").replace(
            "        12,000,000      dTLB-load-misses\n",
            "        12,000,000      dTLB-load-misses\n     3,900,000,000      ref-cycles\n",
        )
    )
    assert hinted.runs[0].counts["dtlb_walk"] == 12_000_000 and hinted.ambiguous == ()


def test_explain_names_the_reading_and_the_fix(tmp_path, capsys):
    path = tmp_path / "generic.txt"
    path.write_text(GENERIC_ONLY)
    assert main(["explain", str(path)]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("read as Arm's events"))
    assert "pass --cpu to read x86's" in line and "cache-misses (on x86: last-level" in line
    assert main(["explain", str(path), "--cpu", "skylake"]) == 0
    assert "read as Arm's events" not in capsys.readouterr().out
    assert main(["explain", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    ambiguous = data["runs"][0]["ambiguous"][1]
    assert ambiguous == "cache-misses (on x86: last-level misses, on AMD the L2's)"


# -- a hybrid machine's two kinds of core ----------------------------------------------

HYBRID_TASK = """\
 Performance counter stats for './lab':

     3,061,260,865      cpu_atom/dTLB-loads/                                    (0.02%)
     2,792,200,306      cpu_core/dTLB-loads/                                    (99.98%)
         3,788,753      cpu_atom/dTLB-load-misses/  #  0.12% of all dTLB cache accesses  (0.02%)
       413,293,653      cpu_core/dTLB-load-misses/  # 14.80% of all dTLB cache accesses  (99.98%)
"""


def test_a_task_is_read_on_the_core_it_ran_on_not_summed_with_an_extrapolation():
    # Constructed in perf's layout. Counting a task on a hybrid machine, cpu_atom's events
    # count only while the task runs on an E-core, and perf scales the count by the time
    # enabled over the time running ("The percentage is the event's running
    # time/enabling time": Linux tools/perf/Documentation/intel-hybrid.txt, thread mode):
    # 0.02% of the time scaled up to 3 billion loads. perf's own ratio is per PMU
    # (14.80%); adding the extrapolation would halve it.
    stat = parse(HYBRID_TASK)
    assert stat.other_cores == {"cpu_atom": pytest.approx(0.02)}
    assert stat.counts["dtlb_access"] == 2_792_200_306
    assert stat.metrics()["dtlb_miss"] == pytest.approx(0.148, abs=5e-4)


def test_counting_the_whole_system_adds_the_cores_up():
    # Counting every CPU, each PMU counts its own CPUs all the time: the lines add up.
    text = HYBRID_TASK.replace("'./lab'", "'system wide'")
    stat = parse(text)
    assert stat.other_cores == {}
    assert stat.counts["dtlb_access"] == 3_061_260_865 + 2_792_200_306
    # ... as they do where both cores counted the whole run (no percentage printed)
    pinned = parse(
        " Performance counter stats for './lab':\n\n"
        "     1,000      cpu_atom/cycles/\n     3,000      cpu_core/cycles/\n"
    )
    assert pinned.counts["cycles"] == 4_000 and pinned.other_cores == {}


# Constructed in the layout of perf's big.LITTLE lines (James Clark, "perf: Arm
# PERF_PMU_CAP_EXTENDED_HW_TYPE", linux-kernel 2023-07: `963279620
# armv8_cortex_a57/cycles/` and `752745657 armv8_cortex_a53/cycles/`), counting every
# CPU of a Juno (Cortex-A53 + A57), with an event only the A57's lines carry.
BIG_LITTLE = """\
 Performance counter stats for 'system wide':

        3347093940      armv8_cortex_a53/cycles/
        3295523067      armv8_cortex_a57/cycles/
        2100000000      armv8_cortex_a53/instructions/
        4200000000      armv8_cortex_a57/instructions/
          52000000      armv8_cortex_a57/l2d_cache_refill/

       1.002000000 seconds time elapsed
"""


def test_counting_cpus_on_big_little_with_other_events_per_kind_reads_one_kind():
    # Adding the kinds up would set the A57's L2 refills against both kinds'
    # instructions (8.3 per 1000, where the A57 had 12.4): the kind that counted the
    # most of our events is read, and the other listed.
    stat = parse(BIG_LITTLE)
    assert stat.other_cores == {"armv8_cortex_a53": 100.0}
    assert stat.counts["cycles"] == 3_295_523_067
    metrics = stat.metrics("cortex-a57")
    assert metrics["l2_mpki"] == pytest.approx(52_000_000 / 4_200_000, rel=1e-9)
    assert metrics["ipc"] == pytest.approx(4_200_000_000 / 3_295_523_067)
    # both kinds counting the same events still add up
    same = parse(
        BIG_LITTLE.replace("        52000000      armv8_cortex_a57/l2d_cache_refill/\n", "")
    )
    assert same.other_cores == {}
    assert same.counts["cycles"] == 3_347_093_940 + 3_295_523_067


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            BIG_LITTLE,
            (
                "not used (another kind of core's events: counting CPUs",
                "the kind that counted the most of them is read): armv8_cortex_a53",
            ),
        ),
        (
            HYBRID_TASK,
            (
                "not used (another kind of core, which this task hardly ran on",
                "cpu_atom (counted 0.02% of the time)",
            ),
        ),
    ],
    ids=["big_little_counting_cpus", "hybrid_task"],
)
def test_explain_says_which_kind_of_core_was_not_read(text, said, capsys, tmp_path):
    path = tmp_path / "run.txt"
    path.write_text(text)
    assert main(["explain", str(path), "-v"]) == 0
    out = capsys.readouterr().out
    assert all(line in out for line in said), out


def test_explain_json_lists_the_kind_not_read_with_its_share(capsys, tmp_path):
    path = tmp_path / "hybrid.txt"
    path.write_text(HYBRID_TASK)
    assert main(["explain", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"][0]["other_cores"] == {"cpu_atom": 0.02}


# -- quoted blocks -----------------------------------------------------------------------

QUOTABLE = """\
 Performance counter stats for './stride':

     2,270,694,215      cycles
     3,264,379,838      instructions              #    1.44  insn per cycle
           103,955      branch-misses
                                                  #    0.51  stalled cycles per insn

       0.956292825 seconds time elapsed
"""


@given(mark=st.sampled_from(["> ", ">", "> > ", "# ", "#  ", "// ", " * ", "\t> "]))
def test_a_block_quoted_on_every_line_reads_as_the_block(mark):
    # A mail reader's "> " (nested "> > "), a shell or markdown comment's "# ", a C or
    # Java comment's "// " or " * ": a mark that begins every non-blank line is a quote.
    quoted = "\n".join(mark + line if line.strip() else line for line in QUOTABLE.splitlines())
    assert parse(quoted).counts == parse(QUOTABLE).counts
    assert parse(quoted).elapsed_s == pytest.approx(0.956292825)


def test_perfs_own_comment_lines_are_no_quote():
    # perf -o's "# started on" header and its shadow-comment continuation lines begin
    # with "#", the count lines do not: nothing is taken off.
    text = "# started on Mon Dec  7 10:00:00 2026\n\n" + QUOTABLE
    assert parse(text).counts == parse(QUOTABLE).counts


def test_a_hybrid_machines_top_down_groups_are_read_where_the_task_ran():
    # Constructed in perf 6.x's layout: the TopdownL1 group once per kind of core, each
    # closed by its running share; the cpu_atom group, scaled up from 0.10% of the time,
    # is not the task's (Linux perf intel-hybrid.txt).
    text = (
        "     13,897,302,659      cpu_core/cycles/                        (99.90%)\n"
        "     12,971,286,497      cpu_atom/cycles/                        (0.07%)\n"
        "             TopdownL1 (cpu_core)                 #     66.1 %  tma_backend_bound\n"
        "                                                  #      7.0 %  tma_bad_speculation\n"
        "                                                  #      2.7 %  tma_frontend_bound\n"
        "                                                  #     24.2 %  tma_retiring  (99.90%)\n"
        "                                                  #     17.7 %  tma_bad_speculation\n"
        "                                                  #     33.1 %  tma_retiring  (0.10%)\n"
        "                                                  #     39.4 %  tma_backend_bound\n"
        "                                                  #      9.9 %  tma_frontend_bound"
        "  (0.10%)\n"
    )
    assert parse(text).perf_metrics == pytest.approx(
        {
            "backend_bound": 0.661,
            "bad_speculation": 0.07,
            "frontend_bound": 0.027,
            "retiring": 0.242,
        }
    )


@pytest.mark.parametrize("core", ["amd-zen4", "amd-zen2", "amd-zen"])
def test_amd_generic_cache_events_are_the_l2s(core):
    # Linux arch/x86/events/amd/core.c: on AMD, perf's cache-references is PMCx060 (L2
    # cache requests, 0xff60) and cache-misses PMCx064 umask 0x09 (L2 misses of data
    # reads and instruction fills, 0x0964), not the last level as on Intel.
    text = (
        "   1,000,000,000      instructions\n"
        "     100,000,000      cache-references\n"
        "      15,000,000      cache-misses\n"
    )
    stat = parse(text, arch="x86")
    amd = stat.metrics(core)
    assert amd["l2_mpki"] == pytest.approx(15.0)
    assert amd["l2_miss"] == pytest.approx(0.15)
    assert "llc_mpki" not in amd
    intel = stat.metrics("intel-skylake")
    assert intel["llc_mpki"] == pytest.approx(15.0) and "l2_mpki" not in intel
    # an event that names the last level itself stays the last level's
    llc = parse(text + "       5,000,000      LLC-load-misses\n", arch="x86").metrics(core)
    assert llc["llc_mpki"] == pytest.approx(5.0)


def test_amd_generic_cache_events_keep_their_running_share_under_the_l2_names():
    # perf's layout, constructed: the shares of multiplexed cache-references/-misses go
    # with the counts to the L2's names once the core is known to be AMD's
    text = (
        "   4,000,000,000      cycles                  (66.52%)\n"
        "   6,000,000,000      instructions            (66.80%)\n"
        "      90,000,000      cache-references        (66.71%)\n"
        "      30,000,000      cache-misses            (66.62%)\n"
    )
    report = parse_report(text, arch="x86")
    assert report.multiplexed["llc_miss"] == pytest.approx(66.62)
    amd = report.on_core("amd-zen4").multiplexed
    assert amd["l2_refill"] == pytest.approx(66.62) and amd["l2_access"] == pytest.approx(66.71)
    assert "llc_miss" not in amd
    assert report.on_core("intel-skylake").multiplexed == report.multiplexed
