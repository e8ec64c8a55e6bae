"""The terminal summary table of ``pytest --inferperf``."""

from __future__ import annotations

from pytest_inferperf.report.terminal import render_summary, simulated_lines


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
