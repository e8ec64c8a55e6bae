"""Summary and Markdown rendering of the measurement-quality results (pure functions)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

DETECT = 0.80  # detection rate a level must reach
FALSE_ALARMS = 0.05  # most false alarms allowed at 0% slowdown
TIMING_METRICS = ("cpu_ms_per_call", "latency_mean_ms")
SIM_METRIC = "instructions_per_call"


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a rate k/n."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def _level_value(label: str) -> float:
    return float(label.rstrip("%")) / 100


def _detector(
    did: str,
    tool: str,
    backend: str,
    metric: str,
    tolerance: str,
    flags: Mapping[str, list[bool]],
    deltas: Mapping[str, list[float]],
    labels: Sequence[str],
) -> dict[str, Any]:
    rates: dict[str, dict[str, Any]] = {}
    for label in labels:
        got = flags.get(label, [])
        k, n = sum(got), len(got)
        lo, hi = wilson(k, n)
        d = [x for x in deltas.get(label, []) if x is not None and math.isfinite(x)]
        q = statistics.quantiles(d, n=4) if len(d) >= 2 else [None, None, None]
        rates[label] = {
            "flagged": k,
            "trials": n,
            "rate": k / n if n else None,
            "ci95": [lo, hi],
            "median_delta": statistics.median(d) if d else None,
            "iqr_delta": [q[0], q[2]],
        }
    zero = labels[0] if labels else None
    fa = rates[zero]["rate"] if zero and rates[zero]["trials"] else None
    minimum, why = None, None
    if fa is None:
        why = "no trials"
    elif fa > FALSE_ALARMS:
        why = f"false alarms {fa:.0%} > {FALSE_ALARMS:.0%}"
    else:
        for label in labels[1:]:
            r = rates[label]["rate"]
            if r is not None and r >= DETECT:
                minimum = label
                break
        if minimum is None:
            why = f"no level detected in >= {DETECT:.0%} of trials"
    raw = next((lb for lb in labels[1:] if (rates[lb]["rate"] or 0) >= DETECT), None)
    return {
        "id": did,
        "tool": tool,
        "backend": backend,
        "metric": metric,
        "tolerance": tolerance,
        "false_alarm_rate": fa,
        "rates": rates,
        "min_detectable": minimum,
        "min_detectable_text": minimum or "none",
        "why_none": why,
        "detects_80pct_from": raw or "none",
    }


def detectors(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    sens = data.get("sensitivity") or {}
    labels = list((data.get("parameters") or {}).get("levels") or [])
    tols = (data.get("parameters") or {}).get("default_tolerances") or {}
    out: list[dict[str, Any]] = []
    ours = sens.get("ours") or []
    if ours:
        for metric in TIMING_METRICS:
            for mode in ("default", "zero"):
                flags: dict[str, list[bool]] = {}
                deltas: dict[str, list[float]] = {}
                for trial in ours:
                    for label, rec in trial.items():
                        change = rec[mode].get(metric)
                        flags.setdefault(label, []).append(bool(change and change["regressed"]))
                        deltas.setdefault(label, []).append(change["delta"] if change else None)
                tol = f"{tols.get(metric, 0):.0%} (default)" if mode == "default" else "0"
                out.append(
                    _detector(
                        f"inferperf/perf/{metric}/{mode}",
                        "pytest-inferperf",
                        "perf",
                        metric,
                        tol,
                        flags,
                        deltas,
                        labels,
                    )
                )
        flags = {}
        for trial in ours:
            for label, rec in trial.items():
                flags.setdefault(label, []).append(bool(rec["verdict_failed"]))
        out.append(
            _detector(
                "inferperf/perf/verdict/default",
                "pytest-inferperf",
                "perf",
                "test verdict (all gated metrics)",
                "defaults",
                flags,
                {},
                labels,
            )
        )
    sim = sens.get("simulate") or []
    if sim:
        for mode in ("default", "zero"):
            flags, deltas = {}, {}
            for trial in sim:
                for label, rec in trial["levels"].items():
                    change = rec[mode].get(SIM_METRIC)
                    flags.setdefault(label, []).append(bool(change and change["regressed"]))
                    deltas.setdefault(label, []).append(change["delta"] if change else None)
            # the shipped default judges simulated counts by their own noise
            # (pmu/simulate_noise.py), not by the fixed tolerance of the thresholds table
            tol = "from the counts' noise (default)" if mode == "default" else "0"
            out.append(
                _detector(
                    f"inferperf/simulate/{SIM_METRIC}/{mode}",
                    "pytest-inferperf",
                    "simulate",
                    SIM_METRIC,
                    tol,
                    flags,
                    deltas,
                    labels,
                )
            )
    peer = sens.get("peer") or []
    if peer:
        thresholds = list(peer[0]["levels"][labels[0]]["flagged"]) if labels else []
        for t in thresholds:
            flags, deltas = {}, {}
            for trial in peer:
                for label, rec in trial["levels"].items():
                    flags.setdefault(label, []).append(bool(rec["flagged"][t]))
                    deltas.setdefault(label, []).append(rec["delta"])
            out.append(
                _detector(
                    f"pytest-benchmark/mean/{t}%",
                    "pytest-benchmark",
                    "timer",
                    "mean",
                    f"--benchmark-compare-fail=mean:{t}%",
                    flags,
                    deltas,
                    labels,
                )
            )
    return out


def _rank(det: Mapping[str, Any]) -> float:
    m = det.get("min_detectable")
    return _level_value(m) if m else math.inf


def _rate_txt(det: Mapping[str, Any], label: str) -> str:
    r = det["rates"].get(label) or {}
    return f"{r.get('flagged', 0)}/{r.get('trials', 0)}"


def _better(ours: float, peer: float, lower_is_better: bool = True) -> str:
    if ours == peer:
        return "same"
    return "better" if (ours < peer) == lower_is_better else "**WORSE**"


def peer_for(det: Mapping[str, Any], peers: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    """The peer setting to hold a detector against: tolerance 0 against the tightest
    threshold, the shipped tolerances against the loosest (25%, the same number)."""
    by_threshold = sorted(peers, key=lambda d: float(d["id"].rsplit("/", 1)[1].rstrip("%")))
    return by_threshold[0] if det["tolerance"] == "0" else by_threshold[-1]


def comparisons(data: Mapping[str, Any], dets: Sequence[Mapping[str, Any]]) -> list[str]:
    """Plain sentences: where pytest-inferperf is worse (or not) than its peers."""
    lines: list[str] = []
    peers = [d for d in dets if d["tool"] == "pytest-benchmark"]
    ours = [d for d in dets if d["tool"] == "pytest-inferperf"]
    labels = list((data.get("parameters") or {}).get("levels") or [])
    if peers and ours and len(labels) > 1:
        zero, top = labels[0], labels[-1]
        for d in ours:
            p = peer_for(d, peers)
            fa = _better(d["rates"][zero]["rate"] or 0.0, p["rates"][zero]["rate"] or 0.0)
            det = _better(
                d["rates"][top]["rate"] or 0.0,
                p["rates"][top]["rate"] or 0.0,
                lower_is_better=False,
            )
            raw = _better(_rank_text(d["detects_80pct_from"]), _rank_text(p["detects_80pct_from"]))
            md = _better(_rank(d), _rank(p))
            worse = [
                what
                for what, v in (
                    ("false alarms", fa),
                    (f"detection at {top}", det),
                    ("80% detection", raw),
                    ("minimum detectable", md),
                )
                if v == "**WORSE**"
            ]
            head = (
                f"**Worse than pytest-benchmark** ({', '.join(worse)})"
                if worse
                else "Not worse than pytest-benchmark"
            )
            lines.append(
                f"{head}: pytest-inferperf `{d['metric']}` ({d['backend']}, tolerance "
                f"{d['tolerance']}) vs `{p['tolerance']}`: false alarms {_rate_txt(d, zero)} vs "
                f"{_rate_txt(p, zero)} ({fa}); detection at {top} {_rate_txt(d, top)} vs "
                f"{_rate_txt(p, top)} ({det}); detected in >= 80% of trials from "
                f"{d['detects_80pct_from']} vs {p['detects_80pct_from']} ({raw}); minimum "
                f"detectable at <= 5% false alarms {d['min_detectable_text']} vs "
                f"{p['min_detectable_text']} ({md})."
            )
    cost = check_cost(data)
    if cost.get("ours_s_per_check") and cost.get("peer_s_per_check"):
        o, p_s = cost["ours_s_per_check"], cost["peer_s_per_check"]
        verdict = "**WORSE** (slower)" if o > p_s else "better (faster)"
        lines.append(
            f"Time per check: pytest-inferperf {o:.2f} s per profile (warm-up + 30 "
            f"repeats), pytest-benchmark {p_s:.2f} s per benchmark (its process "
            f"start shared by the levels): pytest-inferperf is {verdict}."
        )
    stat = (data.get("overhead") or {}).get("perf_stat") or {}
    if "perf_stat_ratio" in stat:
        a, b = stat["inferperf_ratio"] - 1, stat["perf_stat_ratio"] - 1
        spread = stat.get("plain_spread")
        word = "**WORSE than**" if a > b else "no worse than"
        noise = (
            f"; the plain loop itself varied by {spread:.0%} between rounds, so both are "
            "noise unless they exceed that"
            if spread is not None
            else ""
        )
        lines.append(
            f"Counting one whole loop: pytest-inferperf's in-process counters {a:+.1%} "
            f"wall time, `perf stat -p` attached {b:+.1%}: pytest-inferperf is {word} "
            f"perf stat by the median{noise}."
        )
    return lines


def _rank_text(label: str) -> float:
    return _level_value(label) if label and label != "none" else math.inf


def check_cost(data: Mapping[str, Any]) -> dict[str, float | None]:
    sens = data.get("sensitivity") or {}
    ours = [
        s
        for trial in sens.get("ours") or []
        for rec in trial.values()
        for s in rec["profile_s"].values()
    ]
    peer = []
    for trial in sens.get("peer") or []:
        n = len(trial["levels"]) or 1
        peer.extend(w / n for w in trial["wall_s"])
    sim = simulate_seconds(sens.get("simulate") or [])
    return {
        "ours_s_per_check": statistics.median(ours) if ours else None,
        "peer_s_per_check": statistics.median(peer) if peer else None,
        "simulate_s_per_check": statistics.median(sim) if sim else None,
    }


def simulate_seconds(trials: Sequence[Mapping[str, Any]]) -> list[float]:
    """Wall seconds per simulated profile: each trial's run time / its profiles."""
    out: list[float] = []
    for trial in trials:
        walls = trial.get("wall_s")
        if isinstance(walls, list):  # older results: a baseline run, then a run of all levels
            out.append(walls[0])
            out.append(walls[1] / (len(trial["levels"]) or 1))
        elif walls is not None:
            out.append(walls / (trial.get("profiles") or len(trial["levels"]) + 1))
    return out


def summarise(data: Mapping[str, Any]) -> dict[str, Any]:
    dets = detectors(data)
    over = data.get("overhead") or {}
    suite = data.get("suite") or {}
    head: dict[str, Any] = {}
    if isinstance(over.get("start_stop"), list):
        head["start_stop_median_us"] = {
            str(r["threads_alive"]): round(r["median_us"], 1) for r in over["start_stop"]
        }
    pvn = over.get("profile_vs_none") or {}
    if "latency_mean_ratio" in pvn:
        head["profile_perf_over_none_latency"] = round(pvn["latency_mean_ratio"], 4)
    stat = over.get("perf_stat") or {}
    if "perf_stat_ratio" in stat:
        head["loop_perf_stat_ratio"] = round(stat["perf_stat_ratio"], 4)
        head["loop_inferperf_ratio"] = round(stat["inferperf_ratio"], 4)
    elif "skipped" in stat:
        head["perf_stat"] = f"skipped: {stat['skipped']}"
    head["min_detectable"] = {d["id"]: d["min_detectable_text"] for d in dets}
    head["false_alarm_rate"] = {d["id"]: d["false_alarm_rate"] for d in dets}
    if "ratio_n2_over_n0" in suite:
        head["suite_wall_s"] = {k: round(v, 1) for k, v in suite["wall_s"].items()}
        head["suite_n2_over_n0"] = round(suite["ratio_n2_over_n0"], 3)
        head["suite_verdicts_identical"] = suite["verdicts_identical"]
    return {
        "detectors": dets,
        "headline": head,
        "comparisons": comparisons(data, dets),
        "check_cost": check_cost(data),
    }


# -- Markdown ------------------------------------------------------------------------
def _f(value: Any, fmt: str = "{:.3g}") -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return fmt.format(value)


def _table(head: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out


def render_markdown(data: Mapping[str, Any]) -> str:
    s = data.get("summary") or summarise(data)
    m = data.get("machine") or {}
    params = data.get("parameters") or {}
    labels = list(params.get("levels") or [])
    lines = ["# Measurement quality: results", ""]
    lines.append(
        "Generated by `benchmarks/measurement_quality.py` (see "
        "[benchmarks/README.md](../../benchmarks/README.md)); do not edit by hand."
    )
    lines.append("")
    lines.append(f"Command: `{data.get('command', '')}`  ")
    lines.append(
        f"Started {data.get('started', '?')}, took {_f(data.get('duration_s'), '{:.0f}')}"
        f" s. {'Complete.' if data.get('complete') else 'INCOMPLETE (partial run).'}  "
    )
    sens = data.get("sensitivity") or {}
    sim_planned = sens.get("simulate_trials_planned", params.get("simulate_trials"))
    sim_txt = ""
    if (sens.get("simulate_status") or {}).get("available") and sim_planned is not None:
        sim_txt = f"; simulate backend: {len(sens.get('simulate') or [])} of {sim_planned} planned"
    timed_planned = sens.get("trials_planned", params.get("trials"))
    timed_txt = (
        f"{sens.get('trials_done', 0)} of {timed_planned} planned"
        if timed_planned
        else "none (timed detectors skipped)"
    )
    lines.append(
        f"Trials per level: {timed_txt}"
        + sim_txt
        + (" (--quick)" if params.get("quick") else "")
        + "."
    )
    lines.append("")
    lines.append("## Machine")
    lines.append("")
    pmu = m.get("pmu") or {}
    why = str(pmu.get("cycles") or pmu.get("error") or "?").split(":")[0]
    pmu_txt = "yes" if pmu.get("exists") else f"no: {why}"
    rows = [
        ("machine class", m.get("machine_class")),
        ("CPU", m.get("cpu_model")),
        ("CPUs (usable)", f"{m.get('cpus')} ({m.get('cpus_usable')})"),
        ("virtualised", m.get("virtualised")),
        ("kernel", m.get("kernel")),
        ("Python", m.get("python")),
        ("ONNX Runtime", m.get("onnxruntime")),
        ("numpy", m.get("numpy")),
        ("pytest-benchmark", m.get("pytest_benchmark")),
        ("hardware PMU", pmu_txt),
        ("perf_event_paranoid", m.get("perf_event_paranoid")),
        ("load average at start (1/5/15 min)", _loads(m.get("load_avg_start"))),
        *(
            [("load average after the timed sections", _loads(m["load_avg_timed_end"]))]
            if m.get("load_avg_timed_end")
            else []
        ),
        ("load average at end", _loads(m.get("load_avg_end"))),
    ]
    lines += _table(("", ""), rows)
    lines.append("")
    lines.append("## Headline")
    lines.append("")
    lines += [f"- {c}" for c in _key_numbers(data, s)]
    lines += [f"- {c}" for c in s.get("comparisons", [])]
    lines.append("")
    lines += _overhead_md(data)
    lines += _sensitivity_md(data, s, labels)
    lines += _suite_md(data)
    lines += _limits_md(data.get("limits"))
    errors = sens.get("errors") or []
    if errors:
        lines += ["## Errors during the run", ""] + [f"- {e.splitlines()[0]}" for e in errors]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _key_numbers(data: Mapping[str, Any], s: Mapping[str, Any]) -> list[str]:
    """The numbers a reader wants first, and the conditions they were measured in."""
    out: list[str] = []
    m = data.get("machine") or {}
    # Timing ends before the simulate trials, whose parallel valgrind runs load the machine
    # on purpose (they count instructions, not time); older results lack that reading.
    timed_end = m.get("load_avg_timed_end") or m.get("load_avg_end")
    loads = [x[0] for x in (m.get("load_avg_start"), timed_end) if x]
    cpus = m.get("cpus") or 1
    # The benchmark itself keeps about one CPU busy; the rest of the load is other work.
    if loads and max(loads) - 1.0 >= 0.5 * cpus:
        out.append(
            f"Conditions: 1-minute load average {min(loads):.2f} to {max(loads):.2f} on "
            f"{cpus} CPUs while timing (the benchmark itself keeps about one CPU busy): "
            "other work competed for the CPUs, and every timing number below includes "
            "that contention. A quiet or dedicated runner will do better."
        )
    elif loads:
        out.append(
            f"Conditions: 1-minute load average {min(loads):.2f} to {max(loads):.2f} on "
            f"{cpus} CPUs while timing, about what the benchmark itself causes: no other "
            "work competed. Timing on a shared VM still moves between runs (see the "
            "false alarms below)."
        )
    over = data.get("overhead") or {}
    ss = over.get("start_stop")
    if isinstance(ss, list) and ss:
        cells = ", ".join(
            f"{r['median_us']:.0f} µs with {r['threads_alive']} "
            f"thread{'' if r['threads_alive'] == 1 else 's'}"
            for r in ss
        )
        per = [r["median_us"] / r["threads_alive"] for r in ss if r["threads_alive"]]
        out.append(
            f"Fixed cost of one counted repeat (start + stop + read of every group, "
            f"median): {cells}, about {min(per):.0f}-{max(per):.0f} µs per thread. "
            "Against a 10 ms repeat that is "
            f"{ss[0]['median_us'] / 1e4:.1%} to {ss[-1]['median_us'] / 1e4:.1%}."
        )
    pvn = over.get("profile_vs_none") or {}
    if "latency_mean_ratio" in pvn:
        out.append(
            f'A measured call with counting vs without (`backend="perf"` / '
            f'`"none"`): per-call latency ratio {pvn["latency_mean_ratio"]:.3f}.'
        )
    dets = {d["id"]: d for d in s.get("detectors") or []}
    best = [d for d in dets.values() if d["tool"] == "pytest-inferperf"]
    if best:
        out.append(
            "Smallest injected slowdown detected in >= 80% of trials at <= 5% false "
            "alarms (the minimum detectable regression): "
            + "; ".join(
                f"{d['metric']} ({d['backend']}, tolerance {d['tolerance']}): "
                f"**{d['min_detectable_text']}**"
                for d in best
            )
            + "."
        )
    # the example suite as section 4 (c) measured it (physical_limits.py), else this run
    limits_suite = (data.get("limits") or {}).get("suite") or {}
    suite = limits_suite if "ratio_n2_over_n0" in limits_suite else data.get("suite") or {}
    if "ratio_n2_over_n0" in suite:
        word = "slower" if suite["ratio_n2_over_n0"] > 1 else "faster"
        where = " (section 4 (c))" if suite is limits_suite else ""
        out.append(
            f"Example suite: -n 2 takes {suite['ratio_n2_over_n0']:.2f}x the wall time of "
            f"-n 0 ({word}){where}; verdicts identical: "
            f"{'yes' if suite['verdicts_identical'] else '**NO**'}."
        )
    return out


def _loads(v: Any) -> str:
    return " / ".join(f"{x:.2f}" for x in v) if v else "-"


def _overhead_md(data: Mapping[str, Any]) -> list[str]:
    over = data.get("overhead") or {}
    lines = ["## 1. Overhead", ""]
    if "skipped" in over:
        lines += [f"Skipped: {over['skipped']}.", ""]
    ss = over.get("start_stop")
    if isinstance(ss, list):
        lines.append(
            "(a) `PerfEventCounters.start()` + `stop()` (stop reads every group), "
            "default events, timed with `time.perf_counter_ns`:"
        )
        lines.append("")
        lines += _table(
            (
                "threads alive",
                "threads counted",
                "open fds",
                "samples",
                "p10 µs",
                "median µs",
                "p90 µs",
                "start µs",
                "stop+read µs",
            ),
            [
                (
                    r["threads_alive"],
                    r["counted_threads"],
                    r["open_fds"],
                    r["samples"],
                    _f(r.get("p10_us"), "{:.1f}"),
                    _f(r["median_us"], "{:.1f}"),
                    _f(r["p90_us"], "{:.1f}"),
                    _f(r["start_median_us"], "{:.1f}"),
                    _f(r["stop_read_median_us"], "{:.1f}"),
                )
                for r in ss
            ],
        )
        lines.append("")
    elif isinstance(ss, dict) and "error" in ss:
        lines += [f"(a) error: {ss['error']}", ""]
    pvn = over.get("profile_vs_none") or {}
    if "latency_mean_ratio" in pvn:
        lines.append(
            f'(b) `profile(call, backend="perf")` vs `backend="none"` on the workload, '
            f"{pvn['pairs']} alternating pairs: per-call latency ratio (median of pairs) "
            f"**{pvn['latency_mean_ratio']:.4f}** (mean), {pvn['latency_p50_ratio']:.4f} (p50); "
            f"{_f(pvn['perf_mean_ms'])} ms vs {_f(pvn['none_mean_ms'])} ms per call, "
            f"{_f(pvn['calls_per_repeat'], '{:.0f}')} calls per repeat. An empty start/stop "
            f"counts {_f(pvn['empty_start_stop_task_clock_us'])} µs of task-clock."
        )
        lines.append("")
    elif "error" in pvn:
        lines += [f"(b) error: {pvn['error']}", ""]
    st = over.get("perf_stat") or {}
    if "perf_stat_ratio" in st:
        lines.append(
            f"(c) The same loop of {st['loop_calls']} calls ({_f(st['plain_s'])} s), "
            f"{st['rounds']} rounds in rotating order: wall time with `{st['command']}` "
            f"attached / without = **{st['perf_stat_ratio']:.4f}**; with pytest-inferperf's "
            f"in-process counters around the loop = **{st['inferperf_ratio']:.4f}**."
        )
        lines.append("")
    elif "skipped" in st:
        lines += [f"(c) perf stat: skipped: {st['skipped']}", ""]
    elif "error" in st:
        lines += [f"(c) perf stat: error: {st['error']}", ""]
    return lines


def _sensitivity_md(
    data: Mapping[str, Any], s: Mapping[str, Any], labels: Sequence[str]
) -> list[str]:
    wl = data.get("workload") or {}
    sens = data.get("sensitivity") or {}
    lines = ["## 2. Sensitivity", ""]
    if wl:
        lines.append(
            f"Workload: {wl.get('model')}; {_f(wl.get('base_ms'))} ms per call at "
            f"calibration. Injected slowdown: {wl.get('extra_work')}."
        )
        lines.append("")
        lines += _table(
            ("level", "extra iterations", "calibrated slowdown", "re-measured slowdown"),
            [
                (
                    lb,
                    (wl.get("iterations") or {}).get(lb),
                    _f((wl.get("intended_slowdown") or {}).get(lb), "{:.2%}"),
                    _f((wl.get("realised_slowdown") or {}).get(lb), "{:+.2%}"),
                )
                for lb in labels
            ],
        )
        lines.append("")
    lines.append(
        "Per trial and level: a baseline profile (no slowdown) and a current profile, "
        "measured back to back in alternating order, levels shuffled; then the verdict. "
        "Rate = flagged trials / trials: at 0% it is the false-alarm rate, above 0% the "
        "detection rate. Minimum detectable = the smallest level flagged in >= 80% of "
        'trials while false alarms stay <= 5%; ">= 80% from" is the smallest level '
        "flagged in >= 80% of trials whatever the false alarms."
    )
    lines.append("")
    dets = s.get("detectors") or []
    if dets:
        head = [
            "tool / metric",
            "backend",
            "tolerance",
            *labels,
            ">= 80% from",
            "min detectable (<= 5% false alarms)",
        ]
        rows = []
        for d in dets:
            cells = []
            for lb in labels:
                r = d["rates"].get(lb) or {}
                cells.append(f"{r.get('flagged', 0)}/{r.get('trials', 0)}")
            md = d["min_detectable_text"] + (f" ({d['why_none']})" if d["why_none"] else "")
            rows.append(
                (
                    f"{d['tool']} {d['metric']}",
                    d["backend"],
                    d["tolerance"],
                    *cells,
                    d.get("detects_80pct_from", "-"),
                    md,
                )
            )
        lines += _table(head, rows)
        lines.append("")
        lines.append(
            "Measured change (current / baseline - 1) per level: median, and in "
            "brackets the interquartile range over the trials (the noise):"
        )
        lines.append("")
        seen = set()
        rows = []
        for d in dets:
            key = (d["tool"], d["backend"], d["metric"])
            if key in seen or all(
                (d["rates"].get(lb) or {}).get("median_delta") is None for lb in labels
            ):
                continue
            seen.add(key)
            rows.append(
                (
                    f"{d['tool']} {d['metric']}",
                    d["backend"],
                    *[_delta_cell(d["rates"].get(lb) or {}) for lb in labels],
                )
            )
        lines += _table(["tool / metric", "backend", *labels], rows)
        lines.append("")
        cost = s.get("check_cost") or {}
        parts = []
        if cost.get("ours_s_per_check"):
            parts.append(
                f"pytest-inferperf {cost['ours_s_per_check']:.2f} s per profile (perf backend)"
            )
        if cost.get("peer_s_per_check"):
            parts.append(
                f"pytest-benchmark {cost['peer_s_per_check']:.2f} s per benchmark "
                "including its share of the process start"
            )
        if cost.get("simulate_s_per_check"):
            parts.append(
                f"pytest-inferperf {cost['simulate_s_per_check']:.1f} s per simulated "
                "profile (simulate backend) including its share of its pytest run"
            )
        if parts:
            lines.append(f"Time per check (median): {'; '.join(parts)}.")
        lines.append("")
    ps = sens.get("peer_status") or {}
    if ps and not ps.get("available"):
        lines += [f"pytest-benchmark: not run: {ps.get('reason')}.", ""]
    elif ps:
        lines += [f"pytest-benchmark settings: {ps.get('settings')}.", ""]
    ss = sens.get("simulate_status") or {}
    if ss:
        if ss.get("available"):
            planned = sens.get(
                "simulate_trials_planned", (data.get("parameters") or {}).get("simulate_trials")
            )
            lines += [_simulate_md(sens, labels, planned), ""]
        else:
            lines += ["simulate backend: **not usable here**, so it is not in the tables:", ""]
            lines += [f"- {x}" for x in ss.get("missing") or []]
            lines.append("")
    return lines


def _simulate_md(sens: Mapping[str, Any], labels: Sequence[str], planned: int | None) -> str:
    """What the simulate arm did, from the data: trials, cost, parallelism, verdict rule."""
    trials = sens.get("simulate") or []
    done = len(trials)
    errors = [e for e in sens.get("errors") or [] if e.startswith("simulate trial")]
    text = (
        "simulate backend (`--inferperf-backend simulate`, through the plugin and its "
        f"`--inferperf-report`): {done} of {planned} planned trials done"
    )
    if planned is not None and done < planned:
        why = []
        if errors:
            why.append(f"{len(errors)} failed (see the errors below)")
        if done + len(errors) < planned:
            why.append(f"{planned - done - len(errors)} not run (the run was interrupted)")
        text += f" ({'; '.join(why)})" if why else ""
    text += "."
    per_profile = simulate_seconds(trials)
    walls = [t["wall_s"] for t in trials if isinstance(t.get("wall_s"), int | float)]
    if trials and per_profile:
        profiles = [t.get("profiles") or len(t["levels"]) + 1 for t in trials]
        if walls:
            text += (
                f" Each trial is one pytest run of {max(profiles)} simulated profiles: "
                "its baseline (test id `base`, the plain call, a test of its own) and "
                f"one per level ({len(labels)})"
            )
        else:  # results of an older version of this script
            text += (
                " Each trial was two pytest runs: its baseline, then one profile per "
                f"level ({len(labels)})"
            )
        lo, hi = min(per_profile), max(per_profile)
        spread = f"; {lo:.0f}-{hi:.0f} s" if round(lo) != round(hi) else ""
        text += (
            f"; each profile re-runs its test under valgrind: "
            f"{statistics.median(per_profile):.0f} s per simulated profile here "
            f"(median{spread})"
        )
        if walls:
            text += f", {statistics.median(walls):.0f} s per trial"
        text += "."
    jobs = sens.get("simulate_jobs")
    if walls and jobs:
        section = sens.get("simulate_wall_s")
        took = f", {section / 60:.1f} minutes in all" if section else ""
        if jobs > 1:
            text += (
                f" {jobs} trials ran at once, in parallel pytest processes{took}, after "
                "every timed section: the counts are deterministic instruction counts, "
                "not times, so parallel runs do not disturb them, and they never "
                "competed with a timing."
            )
        else:
            text += (
                f" The trials ran one at a time{took}, after every timed section, so "
                "they never competed with a timing."
            )
    repeats = sorted({t["repeats"] for t in trials if t.get("repeats")})
    need = sens.get("rank_test_min_repeats")
    if repeats and need and max(repeats) < need:
        text += (
            f" It measures {'/'.join(map(str, repeats))} repeats per profile, fewer than "
            f"the {need} the rank test needs, so its verdict is the point change "
            "against the tolerance alone: at tolerance 0 any change, however small, is "
            "a regression."
        )
    text += (
        " The slowdown is calibrated in time; the instruction change it causes is in "
        'the "measured change" table.'
    )
    return text


def _delta_cell(rate: Mapping[str, Any]) -> str:
    med = rate.get("median_delta")
    if med is None:
        return "-"
    lo, hi = rate.get("iqr_delta") or (None, None)
    if lo is None or hi is None:
        return f"{med:+.1%}"
    return f"{med:+.1%} [{lo:+.1%}, {hi:+.1%}]"


def _suite_md(data: Mapping[str, Any]) -> list[str]:
    suite = data.get("suite") or {}
    lines = ["## 3. Suite cost", ""]
    if "skipped" in suite:
        return [*lines, f"Skipped: {suite['skipped']}.", ""]
    if "error" in suite:
        return [*lines, f"Error: {suite['error']}", ""]
    if "wall_s" not in suite:
        return [*lines, "Not run yet.", ""]
    lines.append(
        f"`{suite['command']}`, {suite['rounds']} run(s) each, alternating; median "
        f"wall time: -n 0 **{suite['wall_s']['n0']:.1f} s**, -n 2 "
        f"**{suite['wall_s']['n2']:.1f} s**, ratio -n 2 / -n 0 = "
        f"**{suite['ratio_n2_over_n0']:.3f}**. Verdicts (pass/fail per test) identical "
        f"across all runs: **{'yes' if suite['verdicts_identical'] else 'NO'}**."
    )
    lines.append("")
    first = (suite.get("runs") or {}).get("n0") or []
    second = (suite.get("runs") or {}).get("n2") or []
    if first and second:
        rows = []
        for key, v in first[0]["verdicts"].items():
            w = second[0]["verdicts"].get(key, {})
            rows.append(
                (
                    key,
                    v["status"],
                    w.get("status", "-"),
                    _f(v.get("cpu_ms_per_call")),
                    _f(w.get("cpu_ms_per_call")),
                    _f(v.get("latency_mean_ms")),
                    _f(w.get("latency_mean_ms")),
                )
            )
        lines += _table(
            (
                "test",
                "-n 0 verdict",
                "-n 2 verdict",
                "-n 0 CPU ms/call",
                "-n 2 CPU ms/call",
                "-n 0 mean ms",
                "-n 2 mean ms",
            ),
            rows,
        )
        lines.append("")
        lines.append(
            "(From the first run of each mode. Under -n 2 each worker is pinned to its own CPU.)"
        )
        lines.append("")
    return lines


def _limits_md(limits: Mapping[str, Any] | None) -> list[str]:
    """The section ``benchmarks/physical_limits.py`` adds: its own run, its own load."""
    if not limits:
        return []
    lines = ["## 4. Closer to the physical limit", ""]
    lines.append(
        f"Generated by `benchmarks/physical_limits.py` ({limits.get('cpus', '?')} "
        "CPUs), runs of their own; each part says when it ran, by which command, "
        "and the 1-minute "
        "load average at its start and end: other work shared the machine, so "
        "every comparison below is a ratio within one part, its variants "
        "interleaved."
    )
    lines.append("")
    runs = limits.get("section_runs") or {}

    def when(name: str) -> str:
        run = runs.get(name) or {
            "started": limits.get("started"),
            "load_avg": [
                (limits.get("load_avg_start") or [None])[0],
                (limits.get("load_avg_end") or [None])[0],
            ],
        }
        a, b = (run.get("load_avg") or [None, None])[:2]
        load = (
            f"load {a:.2f} to {b:.2f}"
            if isinstance(a, int | float) and isinstance(b, int | float)
            else "load ?"
        )
        cmd = run.get("command") or limits.get("command")
        return f"(Measured {run.get('started', '?')} by `{cmd}`, {load}.)"

    rows = limits.get("counting")
    if isinstance(rows, list) and rows:
        lines.append(
            "(a) Cost of one counted repeat (`start()` + `stop()`, default events; "
            "median µs, and in brackets as a multiple of one raw `read()` of a "
            "group leader timed in the same rounds). Free-running: the default "
            "(groups enabled once, one read per group at each end). Toggled: "
            "`free_running=False`, one `prctl` each way. Per-group ioctls: how "
            "it was done before (a read of every group, an enable and a disable "
            "ioctl per group, a read and the decode at stop), rebuilt from the "
            "same primitives. Decode: the deferred arithmetic, paid when a "
            "sample is first looked at, after the measured loop."
        )
        lines.append("")
        table = []
        for r in rows:
            m, x = r["median_us"], r["raw_reads_per_repeat"]
            table.append(
                (
                    r["threads_alive"],
                    _f(m["raw_read"], "{:.2f}"),
                    f"{m['free_running']:.1f} ({x['free_running']:.1f})",
                    f"{r['raw_reads_per_thread']['free_running']:.2f}",
                    f"{m['toggled']:.1f} ({x['toggled']:.1f})",
                    f"{m['old_per_group_ioctls']:.1f} ({x['old_per_group_ioctls']:.1f})",
                    f"{m['old_per_group_ioctls'] / m['free_running']:.1f}x",
                    _f(m["decode"], "{:.1f}"),
                    " / ".join(f"{v:.1f}" for v in r["empty_region_task_clock_us"].values()),
                )
            )
        lines += _table(
            (
                "threads",
                "raw read µs",
                "free-running µs (raw reads)",
                "free-running raw reads per thread",
                "toggled µs (raw reads)",
                "per-group ioctls µs (raw reads)",
                "before / now",
                "decode µs",
                "empty region counts µs task-clock (free / toggled)",
            ),
            table,
        )
        lines.append("")
        lines.append(when("counting"))
        lines.append("")
    sim = limits.get("simulate") or {}
    if "wall_s" in sim:
        lines.append(
            f"(b) `{sim['command']}` (a scratch copy, no baselines), "
            f"{sim['rounds']} round(s) each, alternating: as shipped (its "
            "`l1_miss_max` and `branch_miss_max` budgets need cache and branch "
            f"simulation: mode full) **{sim['wall_s']['full']:.1f} s**; the same "
            "tests without those two budgets (instructions-only mode, chosen "
            f"automatically) **{sim['wall_s']['instructions']:.1f} s**: "
            f"{sim['speed_up_instructions_over_full']:.2f}x faster. Instructions "
            "per call the same within 0.1%: "
            f"**{'yes' if sim['same_instructions_within_0.1pct'] else 'NO'}**."
            + (
                ""
                if sim["same_instructions_within_0.1pct"]
                else " Where they differ, valgrind's cache simulation counts the instruction "
                "after an AVX masked store (`vpmaskmovd`) once per lane; the "
                "instructions-only count is the exact one "
                "([simulate.md](../simulate.md#resolution-tolerances-from-the-counts-own-noise))."
            )
        )
        lines.append("")
        table = []
        for test, by_mode in sim["instructions_per_call"].items():
            full = by_mode.get("full")
            cheap = by_mode.get("instructions")
            rec = {m: sim["runs"][m][0]["tests"].get(test, {}) for m in ("full", "instructions")}
            res = rec["full"].get("resolution")
            table.append(
                (
                    test,
                    _f(full, "{:,.0f}"),
                    _f(cheap, "{:,.0f}"),
                    f"{(cheap - full) / full:+.4%}" if full and cheap else "-",
                    f"{res:.2%}" if isinstance(res, int | float) else "-",
                    " / ".join(
                        _f(rec[m].get("slowdown_vs_native"), "{:.0f}x")
                        for m in ("full", "instructions")
                    ),
                    " / ".join(
                        _f(rec[m].get("child_wall_s"), "{:.1f}") for m in ("full", "instructions")
                    ),
                )
            )
        lines += _table(
            (
                "test",
                "instructions/call (full)",
                "instructions/call (instructions only)",
                "difference",
                "resolution (full run)",
                "instrumented slowdown vs native (full / instructions)",
                "s in valgrind (full / instructions)",
            ),
            table,
        )
        lines.append("")
        lines.append(when("simulate"))
        lines.append("")
    elif "error" in sim:
        lines += [f"(b) error: {sim['error']}", ""]
    suite = limits.get("suite") or {}
    if "wall_s" in suite:
        lines += _workers_md("(c)", "examples", suite, when("suite"))
        lines += _startup_md((suite.get("startup") or {}).get("parts"))
    res = limits.get("resolution") or {}
    if res.get("trials"):
        fa, det = res["false_alarms"], res["detected"]
        d0, dl = res["delta_median"]["0%"], res["delta_median"][res["level"]]
        lines.append(
            f"(d) The simulate backend's tolerance from its own noise, at work: "
            f"{res['trials']} trials ({res['jobs']} at a time) of the benchmark's int8 CNN "
            "under `--inferperf --inferperf-backend simulate`, each one pytest run of a "
            "baseline, the plain call again and the call with extra work worth "
            f"{res['level']} of its instructions ({res['iterations']} loop iterations, "
            "calibrated on a first simulated run), judged with the shipped defaults. "
            f"{res['level']} change detected in **{det[0]}/{det[1]}** trials, false alarms "
            f"**{fa[0]}/{fa[1]}**; tolerance used (median) {res['tolerance_median']:.2%}; "
            f"measured change median {dl:+.3%} ({d0:+.4%} for the plain call, largest "
            f"{res['delta_max_abs_at_0']:.4%}). "
            f"{when('resolution')}"
        )
        lines.append("")
    suite40 = limits.get("suite40") or {}
    if "wall_s" in suite40:
        lines += _workers_md(
            "(e)",
            "suite40 (generated: 20 numpy calls, matmul 96-240 and sort 20k-110k, and "
            "20 ONNX Runtime calls of a 3-layer MLP 256-512-512-256, batch 8-84; 1-10 ms "
            "a call)",
            suite40,
            when("suite40"),
        )
    peers = limits.get("peers") or {}
    if peers.get("empty_function"):
        lines += _peers_md(peers, when("peers"))
    speed = limits.get("simulate_speed") or {}
    if speed:
        lines += _simulate_speed_md(speed)
    return lines


def _load_range(runs: Mapping[str, Any]) -> str:
    loads = [x for rs in runs.values() for r in rs for x in r.get("load_avg") or ()]
    return f"{min(loads):.2f}-{max(loads):.2f}" if loads else "?"


def _workers_md(label: str, target: str, suite: Mapping[str, Any], when: str) -> list[str]:
    """-n 0 against -n 2 on one suite: wall, CPU, pair ratios, verdicts, each run's load."""
    if "target" not in suite:  # a run from before parallel_suites.py: wall time only
        return [
            f"{label} `pytest --inferperf examples -n 0|2`, {suite['rounds']} round(s) "
            f"each, alternating: -n 0 **{suite['wall_s']['n0']:.1f} s**, -n 2 "
            f"**{suite['wall_s']['n2']:.1f} s**, ratio -n 2 / -n 0 = "
            f"**{suite['ratio_n2_over_n0']:.3f}**; verdicts identical: "
            f"{'yes' if suite['verdicts_identical'] else 'NO'}. {when}",
            "",
        ]
    pairs = ", ".join(f"{x:.2f}" for x in suite.get("pair_ratios_n2_over_n0") or ())
    lines = [
        f"{label} `pytest --inferperf {suite['target']} -n 0|2` ({target}; "
        f"{suite['tests']} tests, a scratch copy, no baselines, bytecode cache on), "
        f"{suite['rounds']} round(s) each, alternating: median wall time -n 0 "
        f"**{suite['wall_s']['n0']:.1f} s**, -n 2 **{suite['wall_s']['n2']:.1f} s**: "
        f"-n 2 is **{suite['speed_up_n2']:.2f}x** as fast (ratio of pairs run back to "
        f"back, -n 2 / -n 0: {pairs}). CPU time of every process (user + system, "
        f"median): -n 0 {suite['cpu_s']['n0']:.1f} s, -n 2 {suite['cpu_s']['n2']:.1f} s "
        f"({suite['cpu_ratio_n2_over_n0']:.2f}x), so with both CPUs free -n 2 could be at "
        f"most {2 / suite['cpu_ratio_n2_over_n0']:.2f}x as fast (2 x CPU(-n 0) / CPU(-n 2)"
        "; less where the tests do not split evenly). Verdicts (outcome and pass/fail per "
        f"test) identical across all runs: **{'yes' if suite['verdicts_identical'] else 'NO'}**"
        + (
            f" (differing: {', '.join(suite['verdicts_differing'])})"
            if suite.get("verdicts_differing")
            else ""
        )
        + f". 1-minute load average over its runs: {_load_range(suite['runs'])}. {when}",
        "",
    ]
    rows = []
    for tag in ("n0", "n2"):
        for i, r in enumerate(suite["runs"][tag]):
            a, b = r["load_avg"]
            rows.append(
                (
                    f"-n {tag[1:]}",
                    i + 1,
                    f"{r['wall_s']:.1f}",
                    f"{r['cpu_s']:.1f}",
                    f"{a:.2f} -> {b:.2f}",
                    r.get("summary") or "-",
                )
            )
    lines += _table(("mode", "run", "wall s", "CPU s", "load average", "pytest's summary"), rows)
    lines.append("")
    return lines


def _startup_md(parts: Mapping[str, Any] | None) -> list[str]:
    """What one process pays before its first test, with and without the bytecode cache."""
    if not parts:
        return []
    lines = [
        "What one process pays before its first test (CPU s, user + system, median of 3 "
        "after one untimed run; this machine sets `PYTHONDONTWRITEBYTECODE=1`, which makes "
        "every process compile every pure-Python module it imports, and pytest rewrite "
        "the asserts of every module of every pytest plugin, again). Under -n 2 the "
        "controller and each worker pay the pytest start-up; each worker pays the imports "
        "its tests need:",
        "",
    ]
    rows = [
        (
            f"`{name}`",
            _f((v.get("cached") or {}).get("cpu_s"), "{:.2f}"),
            _f((v.get("no_bytecode_cache") or {}).get("cpu_s"), "{:.2f}"),
        )
        for name, v in parts.items()
    ]
    lines += _table(("process", "CPU s, bytecode cached", "CPU s, no bytecode cache"), rows)
    lines.append("")
    return lines


def _peers_md(peers: Mapping[str, Any], when: str) -> list[str]:
    """pytest-inferperf, pytest-benchmark and pytest-codspeed on the same figures."""
    lines = [
        "(f) Side by side with the peers, in the same run, each with its defaults "
        "(pytest-codspeed in its walltime mode; "
        f"{peers.get('codspeed_simulation', '')}). An empty function measured: the mean "
        "per call each tool reports (its floor: what it adds to every call), the test's "
        "duration (pytest `--durations`) and the whole pytest process:",
        "",
    ]
    rows = []
    for name, v in peers["empty_function"].items():
        rows.append(
            (
                name,
                _f(v.get("per_call_ns"), "{:.0f}"),
                _f(v.get("test_s"), "{:.2f}"),
                _f(v.get("process_wall_s"), "{:.2f}"),
            )
        )
    lines += _table(("tool", "ns per call (mean)", "test s", "process wall s"), rows)
    lines.append("")
    missing = [k for k, v in (peers.get("installed") or {}).items() if not v]
    if missing:
        lines += [f"Not installed here, so not measured: {', '.join(missing)}.", ""]
    off = peers.get("installed_off") or {}
    if off:
        lines.append(
            f"A suite of {peers.get('off_tests', '?')} trivial tests (`assert i >= 0`), "
            "each plugin installed but not enabled, against all three disabled with `-p no:`"
            " (median of rounds in alternating order, bytecode cached):"
        )
        lines.append("")
        rows = [
            (
                name,
                _f(v.get("wall_s"), "{:.2f}"),
                _f(v.get("cpu_s"), "{:.2f}"),
                _f(v.get("cpu_over_none"), "{:.2f}x"),
            )
            for name, v in off.items()
        ]
        lines += _table(("plugins loaded", "wall s", "CPU s", "CPU / none"), rows)
        lines.append("")
    lines += [when, ""]
    return lines


def _simulate_speed_md(speed: Mapping[str, Any]) -> list[str]:
    """Where the simulate example's time goes (``benchmarks/simulate_speed.py``)."""
    a, b = (speed.get("load_avg_start") or [None])[0], (speed.get("load_avg_end") or [None])[0]
    load = f"load {a:.2f} to {b:.2f}" if isinstance(a, float) and isinstance(b, float) else "?"
    machine = speed.get("machine") or {}
    on = f" on {machine.get('cpu_model')}, {machine.get('cpus')} CPUs" if machine else ""
    when = f"(Measured {speed.get('started', '?')}{on} by `{speed.get('command')}`, {load}.)"
    lines = []
    up = speed.get("start_up") or {}
    if up.get("wall_s"):
        parts = "; ".join(f"{k}: **{v:.1f} s**" for k, v in up["wall_s"].items())
        own = speed.get("start_up_run") or {}
        own_when = (
            f" (Measured {own.get('started')} by `{own.get('command')}`, load "
            f"{own.get('load_avg_start', ['?'])[0]:.2f}.)"
            if own.get("started")
            else ""
        )
        lines += [
            f"(g) Where the simulate example's time goes. Starting Python and `{up['command']}`"
            f" (wall time, median of {len(next(iter(up['runs'].values())))}, alternating): "
            f"{parts}.{own_when}",
            "",
        ]
    ex = speed.get("example") or {}
    if ex.get("variants"):
        shipped = ex["variants"]["as shipped"]["runs"][0]["tests"]
        rows = []
        pids = list(dict.fromkeys(rec.get("child_pid") for rec in shipped.values()))
        for test, rec in shipped.items():
            rows.append(
                (
                    test,
                    str(pids.index(rec.get("child_pid")) + 1) if rec.get("child_pid") else "-",
                    _f(rec.get("child_wall_s"), "{:.1f}"),
                    "yes" if rec.get("includes_start_up") else "no",
                    _f(rec.get("region_repeats_s"), "{:.1f}"),
                    rec.get("mode") or "-",
                )
            )
        lines += [
            "The shipped example as shipped: shared valgrind children (one per CPU, each "
            "taking the next test no other took) start with the session, get their tests "
            "at the end of collection and run ahead of the parent, each paying its start-up "
            "once; per test, which child measured "
            "it, the seconds the parent then waited for its region, and the seconds the "
            "child spent in its measured repeats:",
            "",
        ]
        lines += _table(
            (
                "test",
                "child",
                "s waited for it",
                "includes the start-up",
                "s in the repeats",
                "mode",
            ),
            rows,
        )
        lines += [
            "",
            "Variants, alternating runs: valgrind options through `VALGRIND_OPTS`, and the "
            "code at another commit (`--against REV`: a worktree of it on `PYTHONPATH`, its "
            "own examples with this checkout's models):",
            "",
        ]
        rows = []
        for name, v in ex["variants"].items():
            diffs = v.get("instructions_vs_shipped") or {}
            rows.append(
                (
                    f"`{v.get('valgrind_opts') or name}`" if name != "as shipped" else name,
                    f"{v['wall_s']:.1f}",
                    _f(v.get("wall_over_shipped"), "{:.2f}x"),
                    ", ".join(f"{d:+.4%}" for d in diffs.values()) or "-",
                    "yes" if v.get("same_instructions_within_0.1pct") else "NO",
                    ", ".join(
                        f"{r['load_avg'][0]:.1f}" for r in v.get("runs") or () if "load_avg" in r
                    ),
                )
            )
        lines += _table(
            (
                "variant",
                "wall s (median)",
                "/ as shipped",
                "instructions/call vs as shipped",
                "same within 0.1%",
                "load at start",
            ),
            rows,
        )
        lines.append("")
    lines += _uneven_md(speed.get("uneven") or {})
    lines += _beside_md(speed.get("beside") or {})
    lines += [when, ""]
    return lines


def _beside_md(beside: Mapping[str, Any]) -> list[str]:
    """Native latency with a valgrind child running beside it, against it stopped."""
    if beside.get("error"):
        return [f"(h) A child beside a timed run: not measured: {beside['error']}.", ""]
    if not beside.get("models"):
        return []
    rows = [
        (
            name,
            f"{m['stopped_median_ms']:.3f} / {m['beside_median_ms']:.3f}",
            f"{m['stopped_p99_ms']:.3f} / {m['beside_p99_ms']:.3f}",
            f"{m['ratio_median']:.3f}x",
            f"{m['ratio_range'][0]:.2f}-{m['ratio_range'][1]:.2f}",
            f"{m['rounds_beside_slower']}/{beside['rounds']}",
        )
        for name, m in beside["models"].items()
    ]
    return [
        "(h) A shared child beside a timed run, if it did not stop: native latency of the "
        "example's models (one intra-op thread, spinning off) with one valgrind child "
        "beside them, running a MiniLM int8 session uninstrumented as a child's warm-up "
        f"does, against the same child stopped (SIGSTOP); {beside['rounds']} rounds "
        f"alternating, {beside['calls']} calls per model and round:",
        "",
        *_table(
            (
                "model",
                "median ms (stopped / beside)",
                "p99 ms (stopped / beside)",
                "beside / stopped (median of rounds)",
                "range of rounds",
                "rounds slower beside",
            ),
            rows,
        ),
        "",
    ]


def _uneven_md(uneven: Mapping[str, Any]) -> list[str]:
    """The suite of long and short simulated tests, here and at another commit."""
    if not uneven.get("variants"):
        return []
    rows = []
    for name, v in uneven["variants"].items():
        tests = v["runs"][0]["tests"]
        pids = list(dict.fromkeys(rec.get("child_pid") for rec in tests.values()))
        split = ", ".join(
            f"{t.rsplit('::', 1)[-1]}: {pids.index(rec.get('child_pid')) + 1}"
            for t, rec in tests.items()
            if rec.get("child_pid")
        )
        diffs = v.get("instructions_vs_shipped") or {}
        rows.append(
            (
                name,
                f"{v['wall_s']:.1f}",
                _f(v.get("wall_over_shipped"), "{:.2f}x"),
                split or "-",
                "yes" if v.get("same_instructions_within_0.1pct") else "NO",
                ", ".join(f"{d:+.4%}" for d in diffs.values()) or "-",
            )
        )
    return [
        "A suite of four simulated tests, long and short alternating (a Python loop, about "
        "422 and 20 million instructions a call; two children on this machine), this "
        "checkout against another commit (a worktree of it on `PYTHONPATH`), alternating, "
        f"{uneven.get('rounds')} round(s) each; which child ran each test:",
        "",
        *_table(
            (
                "code",
                "wall s (median)",
                "/ as shipped",
                "child per test",
                "same within 0.1%",
                "instructions/call vs as shipped",
            ),
            rows,
        ),
        "",
    ]
