"""CLI exit codes mean what docs/cli.md says: a crash is 3, never 1 (a regression)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pytest_inferperf.cli import main as cli
from pytest_inferperf.onnxrt.input_memory import InputsTooLarge, check_inputs_fit

pytest_plugins = ["pytester"]


def _boom(args):
    raise RuntimeError("something inside broke")


def test_an_unexpected_error_is_exit_3_with_one_line(monkeypatch, capsys):
    monkeypatch.setattr(cli, "_metrics", _boom)
    assert cli.main(["metrics"]) == cli.EXIT_CRASH == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "inferperf metrics: unexpected error, RuntimeError: something inside broke" in err
    assert "-v" in err and "Traceback" not in err


def test_with_v_the_traceback_follows(monkeypatch, capsys):
    monkeypatch.setattr(cli, "_metrics", _boom)
    assert cli.main(["metrics", "-v"]) == 3
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "_boom" in err


def test_memory_error_is_exit_3_and_says_what_to_lower(monkeypatch, capsys):
    def oom(args):
        raise MemoryError

    monkeypatch.setattr(cli, "_metrics", oom)
    assert cli.main(["metrics"]) == 3
    assert "ran out of memory" in capsys.readouterr().err


def test_a_crash_message_cannot_drive_the_terminal(monkeypatch, capsys):
    def hostile(args):
        raise ValueError("\x1b[2J\x1b[31mcleared\rover")

    monkeypatch.setattr(cli, "_metrics", hostile)
    assert cli.main(["metrics"]) == 3
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\r" not in err and "\\x1b[2J" in err


def test_usage_errors_stay_2():
    done = subprocess.run(
        [sys.executable, "-m", "pytest_inferperf", "validate"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2


@pytest.mark.parametrize("batch", [10**12, 10**30, 20_000_000])
def test_inputs_larger_than_memory_are_refused_before_allocating(batch):
    with pytest.raises(InputsTooLarge, match=r"nothing was allocated. Lower the input sizes"):
        check_inputs_fit({"x": ((batch, 128, 60), 4)}, available=8 << 30)


def test_inputs_that_fit_pass():
    check_inputs_fit({"x": ((1, 128), 8)}, available=8 << 30)


@pytest.mark.parametrize("batch", ["1000000000000", "1" + "0" * 30, "20000000"])
def test_analyse_with_a_huge_shape_is_a_usage_error(tmp_path, batch):
    """Through the real CLI and a real model: exit 2, a clear line, no 4.8 GB allocated."""
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 60])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 60])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    # An address-space limit makes the 20,000,000 x 60 floats (4.8 GB) too large here too.
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import resource, sys; "
            "resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)); "
            "from pytest_inferperf.cli.main import main; sys.exit(main(sys.argv[1:]))",
            "analyse",
            str(path),
            "--shape",
            f"batch={batch}",
            "--out",
            str(tmp_path / "o"),
            "--cache-dir",
            str(tmp_path / "c"),
            "--backend",
            "none",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "nothing was allocated" in done.stderr
    assert "Give it with --shape" not in done.stderr
    assert "Traceback" not in done.stderr


def test_a_partial_result_is_never_cached(tmp_path):
    from pytest_inferperf.measure.cache import CacheKey, ResultCache
    from pytest_inferperf.measure.runner import profile

    calls = {"n": 0}

    def stalls():
        calls["n"] += 1
        if calls["n"] > 3:
            import time

            time.sleep(15)

    partial = profile(
        stalls, backend="none", warmup=1, warmup_max=1, repeat=10, min_time=0.0, timeout=1.0
    )
    assert partial.partial
    cache = ResultCache(tmp_path)
    key = CacheKey("0" * 64, partial.machine_class, {"repeat": 10})
    reason = cache.store(key, partial)
    assert reason is not None and "result not cached: partial (" in reason
    assert not list(tmp_path.iterdir())
    assert cache.load(key) is None
    # An entry a version before this one stored is not reused either.
    whole = partial.with_(partial=False, partial_reason=None)
    assert cache.store(key, whole) is None
    entry = cache.path_for(key)
    import json

    data = json.loads(entry.read_text())
    data["profile"]["partial"] = True
    entry.write_text(json.dumps(data))
    assert cache.load(key) is None
