"""Session threads are checked before ONNX Runtime starts them: never a segfault.

ONNX Runtime creates its pool threads while the session is made; a thread it cannot
create (``--threads 100000``, or a few hundred under ``ulimit -v``) kills or hangs the
process. These tests run the real CLI in its own process (an address-space limit must
not reach pytest's) and check the refusal is exit 2 with one paragraph.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from pytest_inferperf.onnxrt.sessions import (
    MAX_SESSION_THREADS,
    SessionSettings,
    SessionSettingsError,
    check_session_threads,
    thread_space_problem,
)

GIB = 1 << 30


def _model(tmp_path):
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    return path


def _cli(tmp_path, *args: str, limit: int | None = None) -> subprocess.CompletedProcess:
    setup = (
        f"resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit})); " if limit is not None else ""
    )
    return subprocess.run(
        [
            sys.executable,
            "-c",
            f"import resource, sys; {setup}"
            "from pytest_inferperf.cli.main import main; sys.exit(main(sys.argv[1:]))",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )


def test_a_hundred_thousand_threads_are_refused_before_the_session(tmp_path):
    done = _cli(tmp_path, "analyse", str(_model(tmp_path)), "--threads", "100000")
    assert done.returncode == 2, done.stderr
    assert f"at most {MAX_SESSION_THREADS}" in done.stderr
    assert "--threads 100000" in done.stderr and "0 to let ONNX Runtime choose" in done.stderr
    assert "Traceback" not in done.stderr


def test_threads_beyond_the_address_space_limit_are_refused(tmp_path):
    """Under ulimit -v 4 GB, 400 threads hung ONNX Runtime's session creation."""
    done = _cli(
        tmp_path, "analyse", str(_model(tmp_path)), "--threads", "400", limit=4_000_000 * 1024
    )
    assert done.returncode == 2, done.stderr
    assert "do not fit in this process's address-space limit (ulimit -v: 3.8 GiB" in done.stderr
    assert "Use at most" in done.stderr and "Traceback" not in done.stderr


def test_the_cap_holds_for_the_settings_and_for_a_parallel_session():
    with pytest.raises(SessionSettingsError, match=r"intra_op_threads=1025 is more than"):
        SessionSettings(intra_op_threads=MAX_SESSION_THREADS + 1)
    parallel = SessionSettings(
        intra_op_threads=MAX_SESSION_THREADS, inter_op_threads=8, execution_mode="parallel"
    )
    with pytest.raises(SessionSettingsError, match=r"1032 is more than one session may start"):
        check_session_threads(parallel)
    check_session_threads(SessionSettings(intra_op_threads=2))  # no limit here: fine


@pytest.mark.parametrize(
    ("threads", "limit", "used", "stack", "refused"),
    [
        (250, int(3.8 * GIB), 200 << 20, 8 << 20, False),  # created, measured
        (350, int(3.8 * GIB), 200 << 20, 8 << 20, True),  # hung, measured
        (100_000, None, 200 << 20, 8 << 20, False),  # no limit: the fixed cap decides
        (1, 1 << 20, 1 << 20, None, False),  # one thread is the caller's own
        (64, 2 * GIB, 2 * GIB, None, True),  # nothing left
    ],
)
def test_the_address_space_rule(threads, limit, used, stack, refused):
    problem = thread_space_problem(threads, limit=limit, used=used, stack=stack)
    assert (problem is not None) == refused
    if refused:
        assert problem.startswith(f"{threads} ONNX Runtime threads do not fit")
