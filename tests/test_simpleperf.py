"""Android's simpleperf stat report -> runs of counts, and ``inferperf explain`` on it.

The fixtures are simpleperf's own documented outputs, verbatim (see
tests/fixtures/perfstat/README.md); the property tests print rows with the exact
``printf`` layouts of AOSP ``simpleperf/cmd_stat.cpp`` and read them back.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_inferperf.cli.main import main
from pytest_inferperf.ingest.perf_stat import NO_RUN_TIME, REASONS, logical_name, parse_report
from pytest_inferperf.ingest.simpleperf import looks_like_simpleperf, perf_name, read_reports

HERE = Path(__file__).parent / "fixtures" / "perfstat"
SIMPLEPERF = HERE / "simpleperf"
CORPUS = HERE / "corpus"


def _run(name: str):
    (run,) = parse_report((SIMPLEPERF / name).read_text()).runs
    return run


def test_the_2022_layout_reads_counts_clock_and_total_time():
    run = _run("aosp_2022_default_events.txt")
    assert run.format == "simpleperf" and run.elapsed_s == pytest.approx(10.027923)
    assert run.counts == {
        "cycles": 16_513_564,
        "stall_frontend": 4_564_133,
        "stall_backend": 6_520_383,
        "instructions": 4_900_403,
        "branch_misses": 47_821,
        "task_clock": pytest.approx(25_274_251.0),  # 25.274251(ms) in ns
        "context_switches": 4,
        "page_faults": 466,
    }
    assert run.multiplexed == {} and run.tool_limits == ()
    # simpleperf's own "0.002520 cpus used": task-clock over the total test time
    assert run.metrics()["cpu_utilisation"] == pytest.approx(0.002520, abs=5e-7)


def test_the_2016_layout_scales_each_count_by_its_printed_share():
    # simpleperf printed the counts as read and the share of the time each ran; perf
    # prints counts scaled by enabled/running time: the reader gives perf's estimate
    run = _run("aosp_2016_multiplexed_shares.txt")
    assert run.counts == pytest.approx(
        {
            "l1d_access": 4_331_018 * 100 / 87,
            "l1d_refill": 91_721 * 100 / 87,
            "instructions": 9_688_515 * 100 / 89,
        }
    )
    assert run.multiplexed == pytest.approx(
        {"l1d_access": 87, "l1d_refill": 87, "instructions": 89}
    )
    # two events of one share keep simpleperf's ratio
    assert run.metrics()["l1_miss"] == pytest.approx(91_721 / 4_331_018)


def test_a_full_share_leaves_the_count_as_printed():
    run = _run("aosp_2016_default_events.txt")
    assert run.counts["cycles"] == 1_320_496_145 and run.counts["instructions"] == 510_426_028
    assert run.multiplexed == {}
    # simpleperf printed 2.587047 cycles per instruction
    assert 1 / run.metrics()["ipc"] == pytest.approx(2.587047, abs=5e-7)


def test_a_zero_with_no_run_time_is_not_counted_and_the_warning_is_a_limit():
    report = parse_report((SIMPLEPERF / "aosp_2022_multiplexed_warning.txt").read_text())
    (run,) = report.runs
    assert "instructions" not in run.counts
    assert run.unavailable == {"instructions": REASONS[NO_RUN_TIME]}
    # of cache-references, :u and :k the unmodified event is read, as perf stat's reader does
    assert run.counts == {"l1d_access": 490_713, "l1d_refill": 61_602}
    (limit,) = [t for t in report.limits() if "simpleperf warned" in t]
    assert "outnumbered the hardware counters" in limit and "--group" in limit


def test_per_core_rows_are_summed_as_read():
    # --per-core: the share beside a cpu's row is the thread's time there, not
    # multiplexing (simpleperf's doc), so nothing is scaled and no share is kept
    run = _run("aosp_2022_per_core.txt")
    assert run.counts == {
        "cycles": 1_667_660 + 3_850_440 + 2_463_792 + 2_350_528 + 7_919_520 + 105_622_673
    }
    assert run.multiplexed == {}


def test_per_core_rows_of_2021_with_their_time_shares_are_summed_unscaled():
    # "# percentage = event_run_time / enabled_time": the thread's time on each cpu, so a
    # row at (0%) still counted, and scaling any row would count its cycles several times
    run = _run("aosp_2021_per_core_shares.txt")
    assert run.counts == {"cycles": 56_552_838 + 25_958_605 + 22_822_698 + 6_661_495 + 1_519_093}
    assert run.multiplexed == {} and run.unavailable == {}


@pytest.mark.parametrize(
    ("name", "perf", "logical"),
    [
        ("raw-l1d-cache-refill", "l1d_cache_refill", "l1d_refill"),
        ("raw-l1i-cache-refill:u", "l1i_cache_refill:u", "l1i_refill"),
        ("raw-stall-backend", "stall_backend", "stall_backend"),
        ("raw-br-mis-pred-retired", "br_mis_pred_retired", "branch_misses"),
        ("raw-inst-retired", "inst_retired", "instructions"),
        ("raw-l2d-cache-refill", "l2d_cache_refill", "l2_refill"),
        ("raw-dtlb-walk", "dtlb_walk", "dtlb_walk"),
        ("cpu-cycles", "cpu-cycles", "cycles"),
        ("L1-dcache-load-misses", "L1-dcache-load-misses", "l1d_refill"),
        ("r11", "r11", "cycles"),
    ],
)
def test_simpleperf_names_are_perf_names(name, perf, logical):
    assert perf_name(name) == perf
    assert logical_name(perf_name(name), "arm") == logical


def test_arm_raw_events_show_the_instruction_set():
    text = (
        "Performance counter statistics:\n\n"
        "#       count  event_name             # count / runtime\n"
        "  10,000,000  cpu-cycles             # 1.000000 GHz\n"
        "   4,000,000  instructions           # 2.500000 cycles per instruction\n"
        "     300,000  raw-l1d-cache-refill   # 30.000 M/sec\n"
        "   2,000,000  raw-l1d-cache          # 200.000 M/sec\n"
        "\nTotal test time: 0.010000 seconds.\n"
    )
    (run,) = parse_report(text).runs
    assert run.arch == "arm" and run.ambiguous == ()
    assert run.counts["l1d_refill"] == 300_000 and run.counts["l1d_access"] == 2_000_000


def test_perf_stat_outputs_are_not_taken_for_simpleperf():
    # A corpus case is a simpleperf report exactly where its name says so.
    for path in sorted(CORPUS.glob("*.txt")):
        is_simpleperf = looks_like_simpleperf(path.read_text().splitlines())
        assert is_simpleperf == ("simpleperf" in path.name), path.name


# -- every layout, printed as cmd_stat.cpp prints it, read back -----------------------------

EVENTS = ["cpu-cycles", "instructions", "branch-misses", "raw-l1d-cache-refill", "cache-misses"]
_rows = st.lists(
    st.tuples(
        st.sampled_from(EVENTS),
        st.integers(1, 10**12),
        st.integers(1, 100),  # the share, %
    ),
    min_size=1,
    max_size=5,
    unique_by=lambda r: r[0],
)


def _readable(count: int) -> str:
    return f"{count:,}"  # utils.cpp ReadableCount: a comma every three digits


def _print(rows, layout: str, threads: int) -> str:
    """The report as simpleperf prints it in ``layout``, each row once per thread (the
    count split between them, as --per-thread prints a process's threads)."""
    csv = layout.startswith("csv")
    out = ["Performance counter statistics," if csv else "Performance counter statistics:", ""]
    if layout == "text2022":
        out.append("# thread_name  pid  tid  count  event_name   # count / runtime")
    for event, count, share in rows:
        parts = [count // threads] * threads
        parts[0] += count - sum(parts)
        for tid, part in enumerate(parts):
            thread = ["main thread", "100", str(100 + tid)]  # a name with a space
            if layout == "text2015":  # "%'30" PRId64 "%s  %s\n", scaled or 7 spaces
                line = f"{_readable(part):>30}{'(scaled)' if share < 100 else ' ' * 7}  {event}"
            elif layout == "text2016":  # "  %*s  %-*s   # %-*s  (%.0lf%%)%s\n"
                line = f"  {_readable(part)}  {event}   # 1.000 M/sec  ({share:.0f}%)"
            elif layout == "text2022":  # thread columns, then "  %*s  %-*s   # %-*s%s\n"
                line = "  " + "  ".join(thread) + f"  {_readable(part)}  {event}   # 1.000 M/sec"
            elif layout == "csv2016":  # "%s,%s,%s,(%.0f%%)%s\n"
                line = f"{','.join(thread)},{part},{event},1.000,M/sec,({share:.0f}%),"
            else:  # csv2022: "%s,%s,%s,%s\n"
                line = f"{','.join(thread)},{part},{event},1.000,M/sec,"
            out.append(line)
    out.append(
        "Total test time,1.500000,seconds," if csv else "\nTotal test time: 1.500000 seconds."
    )
    return "\n".join(out) + "\n"


@given(
    rows=_rows,
    layout=st.sampled_from(["text2015", "text2016", "text2022", "csv2016", "csv2022"]),
    threads=st.integers(1, 3),
)
def test_every_layout_reads_back_what_was_printed(rows, layout, threads):
    text = _print(rows, layout, threads if layout not in ("text2015", "text2016") else 1)
    (report,) = read_reports(text)
    assert report.elapsed_s == 1.5
    got = {row.event: row for row in report.rows}
    assert set(got) == {event for event, _, _ in rows}
    shared = layout.endswith("2016")
    for event, count, share in rows:
        want = count * 100 / share if shared else count
        assert got[event].count == pytest.approx(want)
        assert got[event].running_pct == (pytest.approx(share) if shared else None)


ATTACHED = "the counts are the attached tasks' while simpleperf was attached"
SYSTEM_WIDE = "the counts are every task's on the counted CPUs, not one program's"


@pytest.mark.parametrize(
    ("command", "limit"),
    [
        ("$ simpleperf stat -p 7394 --duration 10", ATTACHED),
        ("$ simpleperf stat --app com.example.app --duration 10", ATTACHED),
        ("simpleperf stat \\\n    -e cpu-cycles \\\n    --duration 20 -a", SYSTEM_WIDE),
        ("$ simpleperf stat -e cpu-cycles ./bench -a", None),  # -a is the program's own
        ("$ simpleperf stat ./bench", None),
    ],
)
def test_the_command_line_above_the_report_gives_its_scope(command, limit):
    block = (SIMPLEPERF / "aosp_2022_default_events.txt").read_text()
    report = parse_report(f"{command}\n{block}")
    scoped = [t for t in report.limits() if t.startswith("simpleperf stat -")]
    assert [limit in t for t in scoped] == ([] if limit is None else [True])


def test_the_programs_own_output_above_the_report_is_not_read_as_counts():
    block = (SIMPLEPERF / "aosp_2022_default_events.txt").read_text()
    (run,) = parse_report("$ simpleperf stat ./bench\n1000 iterations\n42 ops\n" + block).runs
    assert run.counts == _run("aosp_2022_default_events.txt").counts and run.unmapped == ()


def test_a_title_after_the_ctrl_c_that_stopped_the_run_is_read():
    # -p / --app / -a without --duration count until SIGINT: the terminal echoes "^C"
    # right before the title
    block = (SIMPLEPERF / "aosp_2022_default_events.txt").read_text()
    (run,) = parse_report("$ simpleperf stat -p 7394\n^C" + block).runs
    assert run.format == "simpleperf" and run.elapsed_s == pytest.approx(10.027923)
    assert run.counts["task_clock"] == pytest.approx(25_274_251.0)


def test_a_block_quoted_from_its_column_header_on_is_read_as_simpleperf():
    block = (SIMPLEPERF / "aosp_2022_default_events.txt").read_text()
    quoted = block[block.index("#") :]
    quoted = quoted[: quoted.index("Total test time")]  # title and total time left out
    (run,) = parse_report(quoted).runs
    assert run.format == "simpleperf" and run.elapsed_s is None
    assert run.counts == _run("aosp_2022_default_events.txt").counts


def test_interval_reports_are_runs_kept_apart(tmp_path, capsys):
    block = (SIMPLEPERF / "aosp_2022_default_events.txt").read_text()
    report = parse_report(block + "\n" + block)
    assert len(report.runs) == 2 and report.runs[0].counts == report.runs[1].counts
    path = tmp_path / "intervals.txt"
    path.write_text(block + "\n" + block)
    assert main(["explain", str(path), "-v"]) == 0
    text = capsys.readouterr().out
    assert "run 1: simpleperf stat" in text and "run 2: simpleperf stat" in text


def test_explain_names_simpleperf_as_the_source(capsys):
    path = SIMPLEPERF / "aosp_2022_default_events.txt"
    assert main(["explain", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["format"] == "simpleperf"
    assert data["metrics"]["ipc"] == pytest.approx(4_900_403 / 16_513_564)
    assert main(["explain", str(path)]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"simpleperf stat: {path} (simpleperf, 10.028 s elapsed)")
