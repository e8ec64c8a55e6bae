"""perf stat output -> logical counts, and ``inferperf explain`` on recorded files."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_inferperf.cli import build_parser, main
from pytest_inferperf.perfstat import (
    PerfStatError,
    load,
    logical_name,
    parse,
    parse_csv,
    parse_number,
    parse_text,
    split_event,
)

FIXTURES = Path(__file__).parent / "fixtures" / "perfstat"
A72 = FIXTURES / "a72_plain.txt"
N1 = FIXTURES / "n1_stat.csv"
NNBSP, NBSP = "\u202f", "\u00a0"


# -- numbers ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("token", "decimal", "expected"), [
    ("1,234,567", None, 1234567), ("1.234.567", None, 1234567),
    (f"1{NNBSP}234{NNBSP}567", None, 1234567), (f"1{NBSP}234{NBSP}567", None, 1234567),
    ("1 234 567", None, 1234567), ("1'234'567", None, 1234567),
    ("1,234", None, 1234), ("1.234", None, 1234), ("12", None, 12), ("0", None, 0),
    ("1,234.56", None, 1234.56), ("1.234,56", None, 1234.56), ("12,34", None, 12.34),
    ("2.505873344", None, 2.505873344), ("2,505873344", None, 2.505873344),
    ("1.234", ",", 1234), ("1.234", ".", 1.234), (f"9{NNBSP}612,48", ",", 9612.48),
])
def test_parse_number_in_every_locale(token, decimal, expected):
    assert parse_number(token, decimal) == pytest.approx(expected)


@pytest.mark.parametrize("token", ["", "abc", "1.2.3.4,5,6x", ".5", "<not counted>"])
def test_parse_number_rejects(token):
    with pytest.raises(ValueError):
        parse_number(token)


# -- event names ------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "arch", "logical"), [
    ("cycles", "arm", "cycles"), ("cpu_cycles", "arm", "cycles"),
    ("armv8_pmuv3_0/cpu_cycles/", "arm", "cycles"), ("armv8_pmuv3_0/cpu_cycles/u", "arm", "cycles"),
    ("cycles:u", "arm", "cycles"), ("instructions:uk", "arm", "instructions"),
    ("inst_retired", "arm", "instructions"), ("L1-dcache-loads", "arm", "l1d_access"),
    ("L1-dcache-load-misses:u", "arm", "l1d_refill"), ("l1d_cache_refill", "arm", "l1d_refill"),
    ("branch-misses", "arm", "branch_misses"), ("br_mis_pred", "arm", "branch_misses"),
    ("br_mis_pred_retired", "arm", "branch_misses"), ("br_pred", "arm", "branches"),
    ("stalled-cycles-frontend", "arm", "stall_frontend"),
    ("stall_frontend", "arm", "stall_frontend"),
    ("stall_slot_backend", "arm", "stall_slot_backend"), ("task-clock", "arm", "task_clock"),
    ("page-faults", "arm", "page_faults"), ("context-switches", "arm", "context_switches"),
    ("cpu-migrations", "arm", "cpu_migrations"), ("dtlb_walk", "arm", "dtlb_walk"),
    ("ll_cache_miss_rd", "arm", "llc_miss"), ("r11", "arm", "cycles"),
    ("r0008", "arm", "instructions"),
    ("r4005", "arm", "stall_backend_mem"), ("r3d:u", "arm", "stall_slot_backend"),
    ("armv8_pmuv3_0/event=0x11/", "arm", "cycles"),
    ("armv8_pmuv3_0/event=0x0003/u", "arm", "l1d_refill"),
    # Linux's generic map differs by architecture (drivers/perf/arm_pmuv3.c vs x86)
    ("dTLB-load-misses", "arm", "l1d_tlb_refill"), ("dTLB-load-misses", "x86", "dtlb_walk"),
    ("cache-misses", "arm", "l1d_refill"), ("cache-misses", "x86", "llc_miss"),
    ("r11", "x86", None), ("ref-cycles", "arm", None), ("cpu_core/cycles/", "x86", "cycles"),
])
def test_logical_names(name, arch, logical):
    assert logical_name(name, arch) == logical


def test_split_event_hints():
    ev = split_event("armv8_cortex_a72/l2d_cache_refill/u")
    assert (ev.pmu, ev.base, ev.modifiers, ev.core_hint, ev.arch_hint) == (
        "armv8_cortex_a72", "l2d_cache_refill", "u", "cortex-a72", "arm")
    assert split_event("armv8_neoverse_n1/cpu_cycles/").core_hint == "neoverse-n1"
    assert split_event("cpu_atom/instructions/").arch_hint == "x86"
    assert split_event("r11:u").code == 0x11


# -- CSV ------------------------------------------------------------------------------------

# (perf name, logical, unit) -- one name per logical event so nothing is superseded
_CSV_EVENTS = [
    ("cycles", "cycles", ""), ("instructions", "instructions", ""),
    ("armv8_pmuv3_0/l1d_cache_refill/", "l1d_refill", ""), ("L1-dcache-loads", "l1d_access", ""),
    ("branch-misses", "branch_misses", ""), ("r17", "l2_refill", ""),
    ("stall_backend", "stall_backend", ""), ("page-faults", "page_faults", ""),
    ("task-clock", "task_clock", "msec"),
]


@st.composite
def csv_reports(draw):
    sep = draw(st.sampled_from([",", ";"]))
    comma_decimal = sep == ";" and draw(st.booleans())  # -x; under a de_DE locale
    chosen = draw(st.lists(st.sampled_from(_CSV_EVENTS), min_size=1, max_size=len(_CSV_EVENTS),
                           unique_by=lambda e: e[1]))
    lines, expect_counts, expect_missing, expect_mux = ["# started on Mon Jan  1 00:00:00 2024",
                                                         ""], {}, {}, {}
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
            value = draw(st.integers(0, 10**15))
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
    stat = parse("1000,,cycles:u,428600,42.86,,\n"
                 "2000,,instructions:u,428600,42.86,2.00,insn per cycle\n")
    assert stat.counts == {"cycles": 1000.0, "instructions": 2000.0}
    assert stat.multiplexed == {"cycles": 42.86, "instructions": 42.86}


def test_csv_big_little_pmus_are_summed_and_partial_not_counted_is_counted():
    text = ("100,,armv8_cortex_a53/cpu_cycles/,10,100.00,,\n"
            "300,,armv8_cortex_a72/cpu_cycles/,10,100.00,,\n"
            "<not counted>,,armv8_cortex_a53/inst_retired/,0,0.00,,\n"
            "500,,armv8_cortex_a72/inst_retired/,10,100.00,,\n")
    stat = parse(text)
    assert stat.counts == {"cycles": 400.0, "instructions": 500.0}
    assert stat.unavailable == {}
    assert stat.core_hint == "cortex-a53+cortex-a72"


def test_csv_per_cpu_and_interval_lines_are_summed():
    per_cpu = "CPU0,100,,cycles,10,100.00,,\nCPU1,50,,cycles,10,100.00,,\n"
    assert parse(per_cpu).counts == {"cycles": 150.0}
    interval = ("1.001000000,100,,cycles,10,100.00,,\n"
                "2.002000000,120,,cycles,10,100.00,,\n"
                "2.002000000,<not counted>,,instructions,0,0.00,,\n")
    stat = parse(interval)
    assert stat.counts == {"cycles": 220.0}
    assert "instructions" in stat.unavailable


def test_first_counted_name_wins_over_an_unsupported_alias():
    text = ("<not supported>,,branches:u,0,100.00,,\n"
            "823,,armv8_cortex_a72/br_pred/u,10,100.00,,\n")
    stat = parse(text)
    assert stat.counts == {"branches": 823.0} and stat.unavailable == {}
    assert stat.superseded == ("branches:u",)


def test_json_lines():
    text = ('{"counter-value" : "1234.000000", "unit" : "", "event" : "cycles:u", '
            '"event-runtime" : 100, "pcnt-running" : 57.00, "metric-value" : "0", '
            '"metric-unit" : "GHz"}\n'
            '{"counter-value" : "<not supported>", "unit" : "", '
            '"event" : "stalled-cycles-frontend", '
            '"event-runtime" : 0, "pcnt-running" : 100.00}\n')
    stat = parse(text)
    assert stat.format == "json"
    assert stat.counts == {"cycles": 1234.0} and stat.multiplexed == {"cycles": 57.0}
    assert "not supported" in stat.unavailable["stall_frontend"]


# -- plain text -----------------------------------------------------------------------------


@st.composite
def text_reports(draw):
    grouping, decimal = draw(st.sampled_from(
        [(",", "."), (".", ","), (NNBSP, ","), (NBSP, ","), ("'", "."), (" ", ",")]))

    def group(n: int) -> str:
        return f"{n:,}".replace(",", grouping)

    values = draw(st.lists(st.integers(0, 10**13), min_size=4, max_size=4))
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
    expected = {"task_clock": ms / 100 * 1e6, "context_switches": cs, "cycles": cyc,
                "instructions": ins, "l1d_refill": l1}
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
    text = ("#           time             counts unit events\n"
            "     1.001094052          1,234,567      cycles:u\n"
            "     1.001094052    <not counted>      instructions:u\n"
            "     2.002188104          1,000,000      cycles:u\n")
    stat = parse_text(text)
    assert stat.counts == {"cycles": 2_234_567.0}
    assert "instructions" in stat.unavailable


def test_text_with_repeats():
    text = ("     1,234      cycles:u     ( +-  0.25% )\n"
            "       1.2345 +- 0.0012 seconds time elapsed  ( +-  0.10% )\n")
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


@pytest.mark.parametrize("text", ["", "   \n", "hello world\nthis is not perf\n",
                                  "Performance counter stats for 'x':\n\n"])
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
    assert "core: unknown (pass --cpu)" in out
    assert "[frontend_bound]" in out  # judged from MPKI and stalls even without a width


def test_explain_with_session_facts(capsys):
    args = ["explain", str(A72), "--intra-op-threads", "2", "--spinning", "on", "--cpus", "4",
            "--calls", "5000"]
    assert main(args) == 0
    out = capsys.readouterr().out
    # 3.836 CPUs busy > 1.5 x 2 threads = 3.0, spinning on: thread_spinning comes first.
    # (21,408 faults / 5,000 calls = 4.3 per call < 10; with --calls 500 it would be 42.8
    # per call > 10 and page faults would lead instead.)
    assert "[thread_spinning]" in out.split("Diagnosis", 1)[1].splitlines()[0]
    assert "page_faults_per_call" in out  # --calls enables per-call metrics


def test_explain_exit_codes(tmp_path, capsys):
    assert main(["explain", str(tmp_path / "missing.txt")]) == 2
    assert "cannot read" in capsys.readouterr().err
    junk = tmp_path / "junk.txt"
    junk.write_text("nothing to see\n")
    assert main(["explain", str(junk)]) == 2
    assert "no perf stat counter lines" in capsys.readouterr().err
    binary = tmp_path / "binary.bin"
    binary.write_bytes(bytes(range(256)))
    assert main(["explain", str(binary)]) == 2


def test_doctor_is_still_there():
    parser = build_parser()
    assert parser.parse_args(["doctor", "--json"]).json is True
    assert parser.parse_args(["explain", "f", "--cpu", "neoverse-v2", "-v"]).cpu == "neoverse-v2"
