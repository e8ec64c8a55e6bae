"""The terminal summary table of ``pytest --inferperf``."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pytest_inferperf.core.numbers import number
from pytest_inferperf.report.terminal import (
    LOG_WIDTH,
    fit,
    fit_line,
    render_summary,
    simulated_lines,
    summary_table,
    text_width,
    update_line,
    written_lines,
)


def record(key: str, **metrics: float) -> dict:
    return {
        "key": key,
        "metrics": metrics,
        "outcome": "passed",
        "failed": False,
        "status": "passed",
        "change": "no baseline",
        "unavailable": {},
    }


def test_instructions_per_call_in_millions_where_counted():
    text = render_summary(
        [
            record("t::sim", latency_p50_ms=3.3, instructions_per_call=39_203_362, l1_miss=0.0295),
            record("t::timed", latency_p50_ms=1.25, cpu_ms_per_call=1.2),
        ],
        [],
        [],
        [],
        update=False,
    )
    header, _, sim, timed = text.splitlines()[:4]
    assert header.split()[:8] == ["test", "p50", "ms", "p99", "ms", "CPU", "ms/call", "M"]
    assert sim.split()[:7] == ["t::sim", "3.3", "-", "-", "39.2", "-", "0.0295"]
    assert timed.split()[:5] == ["t::timed", "1.25", "-", "1.2", "-"]


def test_no_instructions_column_where_nothing_counted_them():
    text = render_summary(
        [record("t::timed", latency_p50_ms=1.25, cpu_ms_per_call=1.2)], [], [], [], update=False
    )
    assert "instr/call" not in text
    assert text.splitlines()[0].split()[:8] == [
        "test",
        "p50",
        "ms",
        "p99",
        "ms",
        "CPU",
        "ms/call",
        "IPC",
    ]


def test_simulated_tests_say_what_valgrind_cost_and_warn():
    sim = record("t::sim", latency_p50_ms=3.3, instructions_per_call=39_203_362)
    sim["profile"] = {
        "settings": {
            "simulation": {
                "slowdown_vs_native": 165.8,
                "uninstrumented_slowdown_vs_native": 19.0,
                "child_wall_s": 23.91,
                "child": {"mode": "shared", "pid": 4242, "includes_start_up": True},
                "warnings": [
                    "the ONNX Runtime session has intra_op_threads=2: pool-thread work is "
                    "not counted; use intra_op_threads=1 under simulate"
                ],
            }
        }
    }
    text = render_summary([sim, record("t::timed", latency_p50_ms=1.0)], [], [], [], update=False)
    assert text.split("\n\n")[1].splitlines() == [
        "Simulated under valgrind's callgrind (instruction, cache and branch counts; no cycles):",
        "  t::sim: 166x slower than native per call instrumented, 19x uninstrumented, waited "
        "23.9 s for shared child 4242, its start-up included",
        "    warning: the ONNX Runtime session has intra_op_threads=2: pool-thread work is not "
        "counted; use intra_op_threads=1 under simulate",
    ]


def test_own_child_says_how_long_valgrind_ran_a_later_shared_region_how_long_it_waited():
    def sim(child):
        rec = record("t::sim", latency_p50_ms=1.0)
        rec["profile"] = {"settings": {"simulation": {"child_wall_s": 7.31, "child": child}}}
        return rec

    own = simulated_lines([sim({"mode": "one child for this test"})])
    later = simulated_lines([sim({"mode": "shared", "pid": 7, "includes_start_up": False})])
    assert own[1] == "  t::sim: 7.3 s in valgrind"
    assert later[1] == "  t::sim: waited 7.3 s for shared child 7"


# -- fitting the width ---------------------------------------------------------------------


def full_record(key: str, change: str = "no baseline for x86_64-amd-epyc-zen5", **metrics):
    rec = record(key, **metrics)
    rec.update(change=change, diagnosis="L1D residency (working set spills L1 data cache) (72%)")
    return rec


def test_a_terminal_gets_its_width_a_log_at_most_120_columns():
    assert text_width(200, tty=True) == 200
    assert text_width(200, tty=False) == LOG_WIDTH == 120
    assert text_width(80, tty=False) == 80  # pytest's own width without a terminal


def test_a_wrapped_line_keeps_its_indent_and_never_splits_a_word():
    line = "  no PMU exposed (ENOENT): " + ", ".join(f"event_{i}" for i in range(30))
    wrapped = fit_line(line, 60)
    assert all(len(part) <= 60 for part in wrapped)
    assert wrapped[0].startswith("  no PMU") and all(p.startswith("      ") for p in wrapped[1:])
    assert " ".join(p.strip() for p in wrapped) == line.strip()
    path = "x" * 90
    assert fit_line(f"expected {path}.", 60) == ["expected", f"    {path}."]  # whole
    assert fit("short\nlines", 10) == "short\nlines" and fit("a b", None) == "a b"


def test_the_table_is_unchanged_where_it_fits():
    records = [full_record("t::a", latency_p50_ms=1.25, cpu_ms_per_call=1.2)]
    assert summary_table(records, 500) == summary_table(records, None)
    assert "vs baseline" in summary_table(records, None).splitlines()[0]


def test_narrower_drops_empty_columns_then_shortens_titles_then_moves_text_under():
    records = [
        full_record("t.py::test_model[batch-8]", latency_p50_ms=1.25, cpu_ms_per_call=1.2),
        full_record("t.py::test_other", latency_p50_ms=0.5, cpu_ms_per_call=0.45),
    ]
    widths = {len(line) for line in summary_table(records, None).splitlines()}
    full = max(widths)
    no_empty = summary_table(records, full - 1)  # IPC, L1D miss had no value: dropped
    header = no_empty.splitlines()[0]
    assert "IPC" not in header and "L1D" not in header and "p50 ms" in header
    assert max(len(line) for line in no_empty.splitlines()) < full
    under = summary_table(records, 80)
    lines = under.splitlines()
    assert lines[0].split() == ["test", "p50", "CPU", "verdict"]
    assert lines[2].split() == ["t.py::test_model[batch-8]", "1.25", "1.2", "passed"]
    assert lines[3:5] == [
        "    no baseline for x86_64-amd-epyc-zen5; diagnosis: L1D residency (working set",
        "        spills L1 data cache) (72%)",
    ]
    assert lines[-1] == "Columns: p50 = p50 ms, CPU = CPU ms/call"
    assert all(len(line) <= 80 for line in lines)


def test_a_long_test_id_is_wrapped_in_its_cell_and_metrics_move_under_the_row():
    key = "tests/performance/test_transformer_encoder.py::test_latency[" + "x" * 60 + "]"
    rec = full_record(
        key,
        latency_p50_ms=1.25,
        latency_p99_ms=2.5,
        cpu_ms_per_call=1.2,
        instructions_per_call=39_203_362,
        ipc=1.31,
        l1_miss=0.0295,
        rss_growth_mb=0.00391,
    )
    text = summary_table([rec], 80)
    assert all(len(line) <= 80 for line in text.splitlines())
    rows = text.splitlines()[2:]
    cell = rows[: next(i for i, line in enumerate(rows) if line.startswith("    "))]
    assert "".join(line.split("  ")[0] for line in cell) == key
    assert "+RSS MiB 0.00391" in text and "p99 ms 2.5" in text  # moved, named in full


@given(
    keys=st.lists(
        st.text(alphabet="abcdefghij_:/[]-.0123456789", min_size=1, max_size=150),
        min_size=1,
        max_size=5,
        unique=True,
    ),
    values=st.lists(
        st.one_of(st.none(), st.floats(0, 1e9, allow_nan=False, allow_infinity=False)),
        min_size=7,
        max_size=7,
    ),
    width=st.integers(80, 200),
)
def test_every_width_fits_and_no_number_is_cut_or_dropped(keys, values, width):
    metrics = dict(
        zip(
            (
                "latency_p50_ms",
                "latency_p99_ms",
                "cpu_ms_per_call",
                "instructions_per_call",
                "ipc",
                "l1_miss",
                "rss_growth_mb",
            ),
            values,
            strict=True,
        )
    )
    records = [full_record(k, **{m: v for m, v in metrics.items() if v is not None}) for k in keys]
    text = summary_table(records, width)
    assert all(len(line) <= width for line in text.splitlines())
    tokens = {t.rstrip(",;") for t in text.split()}
    for name, value in metrics.items():
        if value is not None:
            scale = 1e-6 if name == "instructions_per_call" else 1.0
            assert number(value * scale, digits=3) in tokens


def test_the_update_line_lists_every_metric_gated_by_default_and_memory():
    new = {
        "latency_p50_ms": 1.5,
        "latency_mean_ms": 1.6,
        "cpu_ms_per_call": 1.4,
        "ipc": 1.25,
        "l2_miss": 0.2,
        "rss_growth_mb": 0.0,
        "peak_rss_mb": 51.0,
        "page_faults_per_call": 3.0,  # neither gated by default nor a headline metric
    }
    old = {"latency_p50_ms": 2.0, "ipc": 1.0, "rss_growth_mb": 1.0, "stage:pre": 0.5}
    assert update_line("b.json", None, new) == (
        "created b.json\n    latency_p50_ms 1.5, latency_mean_ms 1.6, cpu_ms_per_call 1.4, "
        "ipc 1.25, l2_miss 0.2, rss_growth_mb 0, peak_rss_mb 51"
    )
    assert update_line("b.json", old, {**new, "stage:pre": 0.25}, gated={"stage:pre"}) == (
        "updated b.json\n    latency_p50_ms 2 -> 1.5, latency_mean_ms 1.6, cpu_ms_per_call 1.4, "
        "ipc 1 -> 1.25, l2_miss 0.2, rss_growth_mb 1 -> 0, peak_rss_mb 51, stage pre 0.5 -> 0.25"
    )
    assert update_line("b.json", {}, {}) == "updated b.json"


def test_a_written_line_keeps_its_path_whole_and_escapes_what_it_shows():
    entry = update_line("baselines/" + "d/" * 40 + "t\x1b.json", None, {"cpu_ms_per_call": 1.0})
    head, metrics = written_lines(entry, 60)
    assert head == "created baselines/" + "d/" * 40 + "t\\x1b.json"
    assert metrics == "    cpu_ms_per_call 1"
