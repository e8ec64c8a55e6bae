"""What ``inferperf compare | validate | analyse | explain`` print is terminal-safe.

Names come from files the tool did not write (report.json, baselines, models, perf stat
output): an ANSI escape, a carriage return or a newline in a test name, node name, op
type or model path must reach the terminal as a visible escape, and must not split a
row of the printed tables. Each command runs for real (``main``); the assertions read
what it printed.
"""

from __future__ import annotations

import json
from pathlib import Path

from profile_paths import RICH

from pytest_inferperf.cli.main import main
from pytest_inferperf.report.terminal_safe import terminal_safe

HOSTILE = "\x1b[31mRED\x1b[0m\nFAKE ROW\r\x07"
SHOWN = r"\x1b[31mRED\x1b[0m\x0aFAKE ROW\x0d\x07"


def _assert_safe(printed: str) -> None:
    assert "\x1b" not in printed and "\r" not in printed and "\x07" not in printed
    assert not any(line.startswith("FAKE ROW") for line in printed.splitlines()), printed


def _hostile_profile(path: Path, *, slower: float = 1.0) -> Path:
    data = json.loads(RICH.read_text(encoding="utf-8"))
    data["name"] = "test" + HOSTILE
    for i, op in enumerate(data["operators"]):
        op["node"], op["op_type"] = f"n{i}{HOSTILE}", f"Op{i}{HOSTILE}"
    for row in data["op_types"]:
        row["op_type"] += HOSTILE
        row["mean_us"] *= slower
        row["runs_us"] = [v * slower for v in row["runs_us"]]
    data["model"] = {
        "sha256": "a" * 64,
        "path": f"m{HOSTILE}.onnx",
        "inputs": [{"name": "x" + HOSTILE, "shape": [1], "dtype": "float32"}],
    }
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_compare_of_hostile_profiles_prints_every_name_escaped(tmp_path, capsys):
    a = _hostile_profile(tmp_path / "a.json")
    b = _hostile_profile(tmp_path / "b.json", slower=2.0)
    assert main(["compare", str(a), str(b), "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr()
    _assert_safe(printed.out + printed.err)
    assert f"Op0{SHOWN}" in printed.out  # the op-type row, on one line
    rows = [line for line in printed.out.splitlines() if line.startswith("Op0")]
    assert len(rows) == 1 and rows[0].rstrip().endswith("[1]")
    # the files keep the original text: only what is printed is escaped
    written = json.loads((tmp_path / "out" / "compare.json").read_text(encoding="utf-8"))
    assert "test" + HOSTILE in _strings(written)


def _strings(value: object) -> set[str]:
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        value = [*value.keys(), *value.values()]
    if isinstance(value, list):
        return set().union(*(_strings(v) for v in value)) if value else set()
    return set()


def test_validate_of_a_hostile_profile_prints_names_escaped(tmp_path, capsys):
    a = _hostile_profile(tmp_path / "a.json")
    data = json.loads(a.read_text(encoding="utf-8"))
    for rep in data["repeats"]:  # 3x the time: a failure whose text names the test
        rep["sample"]["counts"]["task_clock"]["value"] *= 3
        rep["wall_ns"] *= 3  # the same CPUs busy (3x the CPU time alone reads as a pool)
    slow = tmp_path / "slow.json"
    slow.write_text(json.dumps(data), encoding="utf-8")
    rc = main(["validate", str(slow), "--baseline", str(a)])
    printed = capsys.readouterr()
    _assert_safe(printed.out + printed.err)
    assert rc == 1, printed.out + printed.err
    assert "cpu_ms_per_call" in printed.out


def test_analyse_of_a_model_with_hostile_names_prints_them_escaped(tmp_path, capsys):
    import onnx
    from onnx import TensorProto, helper
    from onnx_graphs import make_model

    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu" + HOSTILE)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 64])],
    )
    path = tmp_path / "hostile\x1b[2Jmodel.onnx"
    onnx.save(model, path)
    argv = ["analyse", str(path), "--repeat", "3", "--warmup", "1", "--out", str(tmp_path / "o")]
    argv += ["--backend", "none", "--cache-dir", str(tmp_path / "cache")]
    for _ in range(2):  # measured, then the cached result
        assert main(argv) == 0
        printed = capsys.readouterr()
        _assert_safe(printed.out + printed.err)
        assert "relu" + SHOWN in printed.out
        assert r"hostile\x1b[2Jmodel" in printed.out + printed.err
    assert "cached result from" in printed.err


def test_explain_of_a_perf_stat_file_with_hostile_event_names(tmp_path, capsys):
    text = (Path(__file__).parent / "fixtures" / "perfstat" / "a72_plain.txt").read_text()
    text = text.replace("python3 bench_bert_tiny.py", "python3 \x1b[31mbench\x07")
    text = text.replace("r05:u", "r05\x1b[2J:u")
    path = tmp_path / "stat.txt"
    path.write_text(text)
    main(["explain", str(path)])
    printed = capsys.readouterr()
    _assert_safe(printed.out + printed.err)


def test_terminal_safe_escapes_strings_at_every_depth_and_nothing_else(tmp_path):
    from pytest_inferperf.core.profile import Profile

    assert terminal_safe(("a\nb", {"k\r": ["\x1b", 2, 1.5, None]}, b"\x1b")) == (
        r"a\x0ab",
        {r"k\x0d": [r"\x1b", 2, 1.5, None]},
        b"\x1b",
    )
    profile = Profile.load(_hostile_profile(tmp_path / "p.json"))
    safe = terminal_safe(profile)
    assert isinstance(safe, Profile) and safe.name == "test" + SHOWN
    assert safe.operators[0]["node"] == "n0" + SHOWN
    assert safe.latency == profile.latency and safe.repeats == profile.repeats
    assert profile.name == "test" + HOSTILE  # the original is untouched
