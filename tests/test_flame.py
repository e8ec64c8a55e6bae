"""Flamegraphs: perf script folding, folded files, SVG rendering and escaping, diffs,
the operator view, the Python sampler, and real ``perf record`` windows with cleanup."""

from __future__ import annotations

import functools
import hashlib
import html
import itertools
import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pytest_inferperf.measure.flame import Flamegraphs, capture, safe_name
from pytest_inferperf.measure.flame.diff import diff_stacks, frame_totals, largest_changes
from pytest_inferperf.measure.flame.fold import (
    TRUNCATED,
    Frame,
    cap_folded,
    fold_perf_script,
    format_folded,
    frame_name,
    parse_folded,
    parse_perf_script,
    read_folded,
    write_folded,
)
from pytest_inferperf.measure.flame.ops import operator_stacks
from pytest_inferperf.measure.flame.pysampler import sample_python
from pytest_inferperf.measure.flame.record import NOT_INSTALLED, refusal_reason, sample_native
from pytest_inferperf.measure.flame.svg import WIDTH, render_svg
from pytest_inferperf.onnxrt.sessions import OperatorStat

FIXTURES = Path(__file__).parent / "fixtures" / "perfscript"
SVG_NS = "{http://www.w3.org/2000/svg}"
PERF = shutil.which("perf")
needs_perf = pytest.mark.skipif(
    PERF is None, reason="perf is not installed (apt install linux-perf)"
)

# --------------------------------------------------------------------------- helpers

_BUFFER = bytes(1 << 21)


def sha256_workload() -> None:
    """Spends nearly all its time in OpenSSL's SHA-256 (native, GIL released)."""
    hashlib.sha256(_BUFFER).digest()


def recognisable_python_workload() -> int:
    total = 0
    for i in range(20_000):
        total += i * i
    return total


def _children() -> set[str]:
    """``pid cmdline`` of every live child process of this test process."""
    me = str(os.getpid())
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, UnicodeDecodeError):
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[1] == me and fields[0] != "Z":
            found.add(f"{entry.name} {cmdline.strip()}")
    return found


def _perf_recording_me() -> list[str]:
    """Any process whose command line is ``perf record ... -p <this pid>``."""
    me = os.getpid()
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        words = [a.decode(errors="replace") for a in args]
        if "record" in words and "-p" in words and str(me) in words:
            out.append(" ".join(words))
    return out


def _parse_svg(text: str) -> ET.Element:
    return ET.fromstring(text.encode("utf-8"))


def _frames(root: ET.Element) -> dict[str, ET.Element]:
    return {g.get("data-n"): g for g in root.iter(f"{SVG_NS}g") if g.get("class") == "f"}


def _rect(g: ET.Element) -> ET.Element:
    rect = g.find(f"{SVG_NS}rect")
    assert rect is not None
    return rect


def _rgb(fill: str) -> tuple[int, int, int]:
    r, g, b = fill.removeprefix("rgb(").removesuffix(")").split(",")
    return int(r), int(g), int(b)


# --------------------------------------------------------------------------- perf script parsing


def test_recorded_x86_64_dwarf_script_folds_to_the_workloads_native_frames():
    folded = fold_perf_script((FIXTURES / "x86_64_dwarf_hashlib.txt").read_text())
    assert folded.samples == 45
    assert folded.events == {"cpu-clock": 45}
    assert sum(folded.stacks.values()) == 45
    assert folded.stripped == {"libcrypto.so.3": 6, "libz.so.1.2.13": 6}
    assert folded.python_samples == 0
    frames = [f for stack in folded.stacks for f in stack.split(";")]
    assert all("+0x" not in f for f in frames), "offsets must be stripped"
    assert all(stack.startswith("python;") for stack in folded.stacks)
    sha = [s for s in folded.stacks if s.endswith(";SHA256_Update;[libcrypto.so.3]")]
    assert sha and all(
        ";_hashlib_openssl_sha256;_hashlib_openssl_sha256_impl_[i];" in s for s in sha
    )
    # root first: the process entry point comes before the interpreter loop
    assert all(s.index("Py_BytesMain") < s.index("_PyEval_EvalFrameDefault") for s in sha)
    assert any(s.endswith(";deflate;[libz.so.1.2.13]") for s in folded.stacks)
    kernel = [s for s in folded.stacks if "__x64_sys_getrandom_[k]" in s]
    assert kernel and all(
        s.index("__GI___getrandom") < s.index("entry_SYSCALL_64_after_hwframe_[k]") for s in kernel
    )


def test_recorded_onnxruntime_fp_script_shows_the_stripped_library():
    folded = fold_perf_script((FIXTURES / "x86_64_fp_onnxruntime.txt").read_text())
    lib = "onnxruntime_pybind11_state.cpython-311-x86_64-linux-gnu.so"
    assert folded.samples == 21
    assert folded.stripped == {lib: 12}  # the other samples are in Python, numpy, libc
    # garbage outermost addresses of broken frame-pointer chains are dropped
    assert folded.stacks[f"python;[{lib}]"] == 6
    assert not any("[unknown]" in stack for stack in folded.stacks)
    for stack in folded.stacks:
        parts = stack.split(";")
        assert all(a != b for a, b in itertools.pairwise(parts)), "unresolved runs collapse"
    assert any(
        s.endswith(
            "asm_exc_page_fault_[k];exc_page_fault_[k];handle_mm_fault_[k];__handle_mm_fault_[k]"
        )
        for s in folded.stacks
    )


def test_constructed_arm64_script_folds_exactly():
    folded = fold_perf_script((FIXTURES / "arm64_constructed.txt").read_text())
    gemm = "onnxruntime::Gemm<float>::Compute(onnxruntime::OpKernelContext*) const"
    operation = (
        "MlasSgemmOperation(CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, unsigned long, unsigned long, "
        "unsigned long, float, float const*, unsigned long, float const*, unsigned long, "
        "float, float*, unsigned long)_[i]"
    )
    assert folded.stacks == {
        "python3;__libc_start_call_main;Py_RunMain;_PyEval_EvalFrameDefault;"
        f"{gemm};"
        "onnxruntime::concurrency::ThreadPool::ParallelFor(long, double, "
        "std::function<void (long, long)> const&);"
        "std::_Function_handler<void (long, long), onnxruntime::Gemm<float>::Compute("
        "onnxruntime::OpKernelContext*) const::{lambda(long, long)#1}>::_M_invoke("
        "std::_Any_data const&, long&&, long&&);"
        f"MlasSgemmThreaded(void*, int);{operation};MlasSgemmKernelNeon": 1,
        "python3;Py_RunMain;getrandom;el0t_64_sync_[k];el0t_64_sync_handler_[k];el0_svc_[k];"
        "do_el0_svc_[k];el0_svc_common.constprop.0_[k];invoke_syscall_[k];"
        "__arm64_sys_getrandom_[k];get_random_bytes_user_[k];_copy_to_iter_[k];"
        "__arch_copy_to_user_[k]": 1,
        "ORT worker 3;thread_start;start_thread;[libonnxruntime.so.1.17.1]": 1,
        "ORT worker 3;thread_start;start_thread;[libonnxruntime.so.1.17.1];[unknown]": 1,
        "python3;Py_RunMain;py::encode:/srv/app/tokenizer.py;_PyEval_EvalFrameDefault;"
        "py::slow_tokenize:/srv/app/tokenizer.py": 1,
        f"python3;{gemm};[libcustom_ops.so]": 1,
        "python3;getrandom;invoke_syscall_[k];[kernel.kallsyms]_[k]": 1,
        "python3;MlasSgemmKernelNeon": 1,
    }
    assert folded.events == {"cycles": 7, "cpu-clock:u": 1}
    assert folded.stripped == {"libonnxruntime.so.1.17.1": 2, "libcustom_ops.so": 1}
    assert folded.python_samples == 1
    samples = list(parse_perf_script((FIXTURES / "arm64_constructed.txt").read_text()))
    assert [s.comm for s in samples][2:4] == ["ORT worker 3", "ORT worker 3"]
    assert samples[2].tid == 4251 and samples[0].period == 500000
    assert samples[6].tid == 4242 and samples[6].time == pytest.approx(5120.109411)
    assert samples[0].frames[0] == Frame(
        0xFFFFA1C2D3E0,
        "MlasSgemmKernelNeon+0x1a0",
        "/usr/lib/aarch64-linux-gnu/libonnxruntime.so.1.17.1",
    )


def test_samples_without_call_chain_and_odd_frames():
    # `perf record` without -g: a short comm is right-aligned, the frame is on the same line.
    text = (
        "         python3 13844  2220.118523:     250000 cpu-clock:      7f3bcd79762a "
        "handle_amd+0xa (/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2)\n"
        "         python3 13844  2220.119028:     250000 cpu-clock:  ffffffff8223406e "
        "mas_walk+0x12e ([kernel.kallsyms])\n"
    )
    assert fold_perf_script(text).stacks == {
        "python3;handle_amd": 1,
        "python3;mas_walk_[k]": 1,
    }
    assert frame_name(Frame(1, "a;b+0x1f", "/x/liba.so")) == "a:b"
    assert frame_name(Frame(1, "[unknown]", "/x/libfoo.so.1 (deleted)")) == "[libfoo.so.1]"
    assert frame_name(Frame(1, "[unknown]", "[unknown]")) == "[unknown]"
    assert frame_name(Frame(0xFFFF800008E1B2C4, "[unknown]", "[unknown]")) == (
        "[kernel.kallsyms]_[k]"
    )
    assert frame_name(Frame(1, "__vdso_clock_gettime+0x5", "[vdso]")) == "__vdso_clock_gettime"
    assert frame_name(Frame(1, "[unknown]", "[vdso]")) == "[vdso]"
    assert frame_name(Frame(1, "bad\nname\x00", "/x")) == "bad name "
    # no blank line between samples, a comment line, garbage lines
    text = (
        "# ========\n# captured on: x\npy 1 1.0: 1 cpu-clock: \n\t1 f+0x1 (/a)\n"
        "py 1 2.0: 1 cpu-clock: \n\t2 g (/a)\n"
    )
    assert fold_perf_script(text, include_comm=False).stacks == {"f": 1, "g": 1}


# --------------------------------------------------------------------------- folded files

_frame_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters=";"),
    min_size=1,
    max_size=12,
)
_stacks = st.dictionaries(
    st.lists(_frame_text, min_size=1, max_size=6).map(";".join),
    st.integers(min_value=1, max_value=10**12),
    max_size=30,
)


@given(_stacks)
@settings(max_examples=150, deadline=None)
def test_folded_text_round_trips_and_is_sorted(folded):
    text = format_folded(folded)
    assert parse_folded(text) == folded
    lines = text.split("\n")[:-1]  # one line per "\n" (a frame may hold U+2028)
    assert [line.rpartition(" ")[0] for line in lines] == sorted(folded)
    # insertion order does not matter
    assert format_folded(dict(reversed(list(folded.items())))) == text


@given(_stacks)
@settings(max_examples=40, deadline=None)
def test_folded_file_round_trips(tmp_path_factory, folded):
    path = tmp_path_factory.mktemp("folded") / "x.folded"
    write_folded(path, folded)
    assert read_folded(path) == folded
    assert [p.name for p in path.parent.iterdir()] == ["x.folded"]  # no temp file left


@given(_stacks, st.integers(min_value=40, max_value=2000))
@settings(max_examples=150, deadline=None)
def test_cap_keeps_the_total_and_the_size_limit(folded, max_bytes):
    capped = cap_folded(folded, max_bytes)
    assert sum(capped.values()) == sum(folded.values())
    assert len(format_folded(capped).encode()) <= max_bytes or capped == folded
    if capped != folded:
        assert TRUNCATED in capped
        kept = {k: v for k, v in capped.items() if k != TRUNCATED}
        dropped = {k: v for k, v in folded.items() if k not in kept}
        assert all(folded[k] == v for k, v in kept.items())
        assert max(dropped.values()) <= min(kept.values(), default=10**13)


def test_cap_drops_the_rarest_stacks_first():
    folded = {"main;hot": 500, "main;warm": 20, "main;cold": 1, "main;frozen": 2}
    capped = cap_folded(folded, len("main;hot 500\nmain;warm 20\n[truncated] 3\n"))
    assert capped == {"main;hot": 500, "main;warm": 20, TRUNCATED: 3}
    assert format_folded(folded, max_bytes=10**6) == format_folded(folded)
    with pytest.raises(ValueError, match="cannot hold"):
        cap_folded(folded, 5)


def test_invalid_folded_input_is_reported_with_its_line(tmp_path):
    path = tmp_path / "bad.folded"
    path.write_text("a;b 3\n\na;c three\n")
    with pytest.raises(ValueError, match=r"bad\.folded:3: not a folded line"):
        read_folded(path)
    assert parse_folded("a;b 3\r\na;b 4\n") == {"a;b": 7}
    with pytest.raises(ValueError, match="invalid folded stack"):
        format_folded({"a;;b": 1})
    with pytest.raises(ValueError, match="non-negative int"):
        format_folded({"a": 1.5})  # type: ignore[dict-item]


# --------------------------------------------------------------------------- SVG


def test_svg_layout_widths_and_stable_colours():
    folded = {"main;parse;tokenize": 30, "main;parse;lower": 10, "main;infer": 60}
    text = render_svg(folded, title="model", subtitle="cpu-clock")
    root = _parse_svg(text)
    frames = _frames(root)
    assert set(frames) == {"all", "main", "parse", "tokenize", "lower", "infer"}
    usable = WIDTH - 20
    for name, count in {"all": 100, "main": 100, "parse": 40, "tokenize": 30, "infer": 60}.items():
        assert float(_rect(frames[name]).get("width")) == pytest.approx(
            usable * count / 100, abs=0.01
        )
        assert frames[name].get("data-c") == str(count)
    # children in name order, left to right; deeper frames higher up
    assert float(_rect(frames["infer"]).get("x")) < float(_rect(frames["parse"]).get("x"))
    assert float(_rect(frames["tokenize"]).get("y")) < float(_rect(frames["parse"]).get("y"))
    title = frames["parse"].find(f"{SVG_NS}title")
    assert title is not None and title.text == "parse (40 samples, 40.00%)"
    # the same name gets the same colour in another graph
    other = _frames(_parse_svg(render_svg({"x;infer": 5, "y": 1}, title="other")))
    assert _rect(other["infer"]).get("fill") == _rect(frames["infer"]).get("fill")
    assert text == render_svg(
        dict(reversed(list(folded.items()))), title="model", subtitle="cpu-clock"
    )
    # nothing outside the document
    assert "href" not in text and "http://" not in text.replace(
        'xmlns="http://www.w3.org/2000/svg"', ""
    )
    assert "no samples" in render_svg({}, title="empty")
    _parse_svg(render_svg({}, title="empty"))


HOSTILE = [
    "<script>alert(1)</script>",
    "]]><script>alert(2)</script><![CDATA[",
    'a & b "quoted" \'single\' <tag attr="x">',
    "</title><script>alert(3)</script>",
    "ctl\x00\x01\x1f char",
    'onload=alert(4) " onmouseover="alert(5)',
]


def test_hostile_frame_names_titles_and_units_are_escaped():
    folded = {f"main;{name}": i + 1 for i, name in enumerate(HOSTILE)}
    text = render_svg(
        folded,
        title=HOSTILE[3],
        subtitle=HOSTILE[1],
        unit=HOSTILE[0],
        diff={f"main;{HOSTILE[0]}": 1.0},
    )
    root = _parse_svg(text)  # well-formed
    assert text.count("<script") == 1 and text.count("</script>") == 1
    assert text.count("<![CDATA[") == 1 and text.count("]]>") == 1
    scripts = list(root.iter(f"{SVG_NS}script"))
    assert len(scripts) == 1 and "alert" not in (scripts[0].text or "")
    assert all(child.tag != f"{SVG_NS}script" for g in root.iter(f"{SVG_NS}g") for child in g)
    frames = _frames(root)
    for name in HOSTILE:
        expected = (
            name.replace("\x00", "\ufffd").replace("\x01", "\ufffd").replace("\x1f", "\ufffd")
        )
        assert expected in frames, name
    assert root.find(f"{SVG_NS}title").text == HOSTILE[3]
    assert root.get("data-unit") == HOSTILE[0]
    assert "alert" not in "".join(root.attrib)  # no attribute injected on the root


def test_differential_svg_colours_growth_red_and_shrinkage_blue():
    baseline = {"main;parse": 50, "main;infer": 50}
    current = {"main;parse": 20, "main;infer": 80}
    delta = diff_stacks(baseline, current)
    frames = _frames(_parse_svg(render_svg(current, title="d", diff=delta)))
    r, g, b = _rgb(_rect(frames["infer"]).get("fill"))
    assert r == 255 and g == b < 100  # full red: the largest change
    r, g, b = _rgb(_rect(frames["parse"]).get("fill"))
    assert b == 255 and r == g < 100
    assert _rgb(_rect(frames["main"]).get("fill")) == (245, 245, 245)  # no change
    assert frames["infer"].get("data-d") == "30"
    assert "+30.00 points vs baseline" in frames["infer"].find(f"{SVG_NS}title").text


# --------------------------------------------------------------------------- diff


def test_diff_normalises_totals_and_reports_per_frame_path():
    baseline = {"a;b": 30, "a;c": 10}  # total 40
    current = {"a;b": 40, "a;c": 40, "a;c;d": 20}  # total 100 -> baseline scaled x2.5
    assert frame_totals(current) == {"a": 100.0, "a;b": 40.0, "a;c": 60.0, "a;c;d": 20.0}
    assert diff_stacks(baseline, current) == {
        "a": 0.0,
        "a;b": pytest.approx(40 - 75),
        "a;c": pytest.approx(60 - 25),
        "a;c;d": pytest.approx(20),
    }
    # a path only in the baseline is reported as shrunk
    assert diff_stacks({"a;x": 10, "a;b": 10}, {"a;b": 20}) == {
        "a": 0.0,
        "a;b": pytest.approx(10),
        "a;x": pytest.approx(-10),
    }
    # identical shares: no change anywhere, however long each recording was
    assert set(diff_stacks({"a;b": 3, "c": 1}, {"a;b": 300, "c": 100}).values()) == {0.0}
    assert diff_stacks({}, {"a": 5}) == {"a": 5.0}
    assert diff_stacks({"a": 5}, {}) == {"a": -5.0}
    changes = largest_changes(diff_stacks(baseline, current), limit=2)
    assert changes == [("a;b", pytest.approx(-35)), ("a;c", pytest.approx(35))]


# --------------------------------------------------------------------------- operators


def test_operator_stacks_from_stats_and_dicts():
    ops = [
        OperatorStat("/enc/MatMul_1", "MatMul", 10, 1234.6, 123.46, 0.6),
        OperatorStat("/enc/Add;x", "Add", 10, 0.2, 0.02, 0.0001),
        OperatorStat("/enc/Zero", "Relu", 10, 0.0, 0.0, 0.0),
    ]
    assert operator_stacks(ops, "minilm") == {
        "minilm;MatMul;/enc/MatMul_1": 1235,
        "minilm;Add;/enc/Add:x": 1,
    }
    dicts = [op.to_dict() for op in ops] + [
        {"node": "/enc/MatMul_1", "op_type": "MatMul", "total_us": 10.0}
    ]
    assert operator_stacks(dicts, "a;b") == {
        "a:b;MatMul;/enc/MatMul_1": 1245,
        "a:b;Add;/enc/Add:x": 1,
    }
    assert operator_stacks([{"node": "n", "op_type": "Conv", "total_us": float("nan")}], "m") == {}


# --------------------------------------------------------------------------- Python sampler


def test_python_sampler_sees_the_workload_and_other_threads():
    stop = threading.Event()

    def background_spinner() -> None:
        while not stop.is_set():
            recognisable_python_workload()

    helper = threading.Thread(target=background_spinner, name="spinner-thread", daemon=True)
    helper.start()
    seconds = 0.6
    try:
        stacks = sample_python(recognisable_python_workload, seconds=seconds)
    finally:
        stop.set()
        helper.join()
    # Two Python threads busy and the sampler want the GIL: a holder gives it up after
    # the switch interval (5 ms by default), so the sampler may wait two intervals per
    # sample. Half of that floor allows for a machine whose other work delays it too.
    floor = seconds / (2 * sys.getswitchinterval()) / 2
    assert sum(stacks.values()) > floor, (sum(stacks.values()), floor)
    me = threading.current_thread().name
    mine = {k: v for k, v in stacks.items() if k.startswith(f"{me};")}
    assert mine, stacks
    # the caller's stacks start at the workload: pytest and the sampler are cut off
    assert all(k.split(";")[1].endswith(":recognisable_python_workload") for k in mine), list(mine)
    assert any(
        k.startswith("spinner-thread;") and k.endswith(":recognisable_python_workload")
        for k in stacks
    )
    assert not any("inferperf-pysampler" in k for k in stacks)
    assert sys.getswitchinterval() == pytest.approx(0.005)


def test_python_sampler_names_a_native_callable():
    stacks = sample_python(
        functools.partial(hashlib.sha256, _BUFFER), seconds=0.2, all_threads=False
    )
    me = threading.current_thread().name
    assert set(stacks) == {f"{me};_hashlib:openssl_sha256"}


def test_python_sampler_propagates_errors():
    def broken() -> None:
        raise ZeroDivisionError("boom")

    before = threading.active_count()
    with pytest.raises(ZeroDivisionError):
        sample_python(broken, seconds=0.1)
    assert threading.active_count() == before


# --------------------------------------------------------------------------- perf record


@needs_perf
def test_real_perf_record_sees_the_native_workload(tmp_path):
    before = _children()
    result = sample_native(sha256_workload, seconds=0.5, workdir=tmp_path)
    if result.reason and result.reason.startswith("not available: perf refused"):
        pytest.skip(result.reason)
    assert result.reason is None, result.reason
    assert result.event.split(":")[0] in ("cpu-clock", "cycles")
    assert result.samples >= 50 and sum(result.folded.values()) == result.samples
    assert result.calls >= 1
    hashing = sum(
        v for k, v in result.folded.items() if "crypto" in k.lower() or "sha" in k.lower()
    )
    assert hashing > result.samples / 2, result.folded
    assert list(tmp_path.iterdir()) == []  # perf.data, FIFOs, stderr removed
    assert _children() - before == set()
    assert _perf_recording_me() == []
    assert not Path(f"/tmp/perf-{os.getpid()}.map").exists() or sys.version_info < (3, 12)
    svg = render_svg(result.folded, title="sha256", subtitle=result.event)
    names = set(_frames(_parse_svg(svg)))
    assert any("crypto" in n.lower() or "sha" in n.lower() for n in names)


@needs_perf
def test_real_perf_record_with_dwarf_unwinds_into_the_interpreter(tmp_path):
    result = sample_native(sha256_workload, seconds=0.3, call_graph="dwarf", workdir=tmp_path)
    if result.reason and result.reason.startswith("not available: perf refused"):
        pytest.skip(result.reason)
    assert result.reason is None, result.reason
    deep = [k for k in result.folded if "sha256" in k.lower() and "PyEval" in k]
    assert sum(result.folded[k] for k in deep) > result.samples / 2
    assert list(tmp_path.iterdir()) == []


@needs_perf
@pytest.mark.parametrize("error", [RuntimeError("workload failed"), KeyboardInterrupt()])
def test_no_perf_left_behind_when_the_workload_raises(tmp_path, error):
    calls = []

    def failing() -> None:
        calls.append(1)
        raise error

    before = _children()
    with pytest.raises(type(error)):
        sample_native(failing, seconds=5.0, workdir=tmp_path)
    assert calls == [1]  # perf was attached and the workload ran
    assert _children() - before == set()
    assert _perf_recording_me() == []
    assert list(tmp_path.iterdir()) == []


def test_missing_perf_is_a_reason_not_an_error(tmp_path):
    calls = []
    result = sample_native(
        lambda: calls.append(1), seconds=0.1, workdir=tmp_path, perf=str(tmp_path / "no-such-perf")
    )
    assert result.reason == NOT_INSTALLED
    assert result.reason.startswith("not available: perf not installed: apt install linux-perf")
    assert result.folded == {} and result.samples == 0 and calls == []


def _fake_perf(tmp_path: Path, body: str) -> str:
    path = tmp_path / "bin" / "perf"
    path.parent.mkdir()
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body))
    path.chmod(0o755)
    return str(path)


def test_refused_perf_gives_the_paranoid_reason(tmp_path):
    fixture = FIXTURES / "refused_paranoid.stderr"
    perf = _fake_perf(
        tmp_path,
        f"""
        import sys
        sys.stderr.write(open({str(fixture)!r}).read())
        sys.exit(255)
    """,
    )
    work = tmp_path / "work"
    result = sample_native(lambda: None, seconds=0.1, workdir=work, perf=perf)
    assert result.folded == {}
    assert result.reason is not None
    assert result.reason.startswith("not available: perf refused: perf_event_paranoid is 2")
    assert "CAP_PERFMON" in result.reason
    assert list(work.iterdir()) == []
    eperm = refusal_reason(
        "Error:\nperf_event_open(..., 0) failed unexpectedly with error 1 (Operation not permitted)"
    )
    assert eperm is not None and "EPERM" in eperm and "seccomp" in eperm
    assert refusal_reason("[ perf record: Woken up 1 times to write data ]") is None


def test_hung_perf_is_killed_and_reported(tmp_path):
    perf = _fake_perf(
        tmp_path,
        """
        import time
        time.sleep(60)
    """,
    )
    before = _children()
    started = time.monotonic()
    result = sample_native(
        lambda: None,
        seconds=0.1,
        workdir=tmp_path / "w",
        perf=perf,
        attach_timeout=0.5,
        stop_timeout=2.0,
    )
    assert time.monotonic() - started < 10
    assert result.reason is not None and "did not acknowledge 'enable'" in result.reason
    assert _children() - before == set()


def test_perf_that_records_nothing_is_reported(tmp_path):
    # Acknowledges commands like perf does, writes an empty perf.data and no samples.
    perf = _fake_perf(
        tmp_path,
        """
        import os, signal, sys
        args = sys.argv[1:]
        if args[0] == "script":
            sys.exit(0)
        ctl, ack = args[args.index("--control") + 1].removeprefix("fifo:").split(",")
        open(args[args.index("-o") + 1], "wb").close()
        signal.signal(signal.SIGINT, lambda *_: sys.exit(0))
        c, a = os.open(ctl, os.O_RDWR), os.open(ack, os.O_RDWR)
        while True:
            if os.read(c, 64):
                os.write(a, b"ack\\n")
    """,
    )
    calls = []
    result = sample_native(lambda: calls.append(1), seconds=0.1, workdir=tmp_path / "w", perf=perf)
    assert calls, "the workload ran"
    assert result.folded == {}
    assert result.reason is not None and "wrote no data" in result.reason
    assert list((tmp_path / "w").iterdir()) == []


def test_bad_arguments_raise(tmp_path):
    with pytest.raises(ValueError, match="call_graph"):
        sample_native(lambda: None, call_graph="frame-pointers", workdir=tmp_path)
    with pytest.raises(ValueError, match="seconds"):
        sample_native(lambda: None, seconds=0, workdir=tmp_path)


# --------------------------------------------------------------------------- capture


def test_safe_names():
    assert safe_name("test_encoder") == "test_encoder"
    for hostile in [
        "../../etc/passwd",
        "a/b\\c",
        "x\x00y",
        "<script>alert(1)</script>",
        "..",
        "",
        "tests/test_x.py::test_a[1-2]",
        "é" * 500,
    ]:
        name = safe_name(hostile)
        assert name and len(name) <= 120
        assert all(c.isascii() and (c.isalnum() or c in "_.+=-") for c in name), name
        assert ".." not in name and not name.startswith((".", "-"))
    assert safe_name("a/b") != safe_name("a_b")


def test_capture_without_perf_writes_python_operator_and_diff_views(tmp_path):
    ops = [
        OperatorStat("/conv1", "Conv", 5, 900.0, 180.0, 0.9),
        OperatorStat("/relu", "Relu", 5, 100.0, 20.0, 0.1),
    ]
    baseline = {"MainThread;test_flame:other_function": 100}
    result = capture(
        recognisable_python_workload,
        name="tests/test_flame.py::enc[<b>]",
        out_dir=tmp_path,
        seconds=0.3,
        operators=ops,
        model_name="tiny",
        baseline_folded=baseline,
        perf=str(tmp_path / "missing-perf"),
    )
    assert isinstance(result, Flamegraphs)
    assert result.reasons["native"] == NOT_INSTALLED
    assert result.view == "python"
    assert set(result.paths) == {
        "python.folded",
        "python.svg",
        "python.speedscope.json",
        "operators.folded",
        "operators.svg",
        "operators.speedscope.json",
        "diff.svg",
    }
    assert result.primary == "operators" and next(iter(result.paths)).startswith("operators")
    for path in result.paths.values():
        p = Path(path)
        assert p.parent == tmp_path and p.stat().st_size > 0
        assert "<" not in p.name and "/" not in p.name.replace(str(tmp_path), "")
        if p.suffix == ".svg":
            _parse_svg(p.read_text())
    scope = json.loads(Path(result.paths["operators.speedscope.json"]).read_text())
    assert scope["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    (profile,) = scope["profiles"]
    assert (profile["type"], profile["unit"], profile["endValue"]) == (
        "sampled",
        "microseconds",
        1000,
    )
    names = [f["name"] for f in scope["shared"]["frames"]]
    assert sorted(
        ([names[i] for i in s], w)
        for s, w in zip(profile["samples"], profile["weights"], strict=True)
    ) == [(["tiny", "Conv", "/conv1"], 900), (["tiny", "Relu", "/relu"], 100)]
    assert read_folded(result.paths["operators.folded"]) == {
        "tiny;Conv;/conv1": 900,
        "tiny;Relu;/relu": 100,
    }
    assert read_folded(result.paths["python.folded"]) == result.folded
    assert any(k.endswith(":recognisable_python_workload") for k in result.folded)
    diff_frames = _frames(_parse_svg(Path(result.paths["diff.svg"]).read_text()))
    grown = [g for n, g in diff_frames.items() if n.endswith(":recognisable_python_workload")]
    assert grown and _rgb(_rect(grown[0]).get("fill"))[0] == 255


@needs_perf
def test_capture_with_perf_writes_native_and_python_views(tmp_path):
    result = capture(sha256_workload, name="sha", out_dir=tmp_path, seconds=0.3)
    if "native" in result.reasons:
        pytest.skip(result.reasons["native"])
    assert result.view == "native"
    assert {"native.folded", "native.svg"} <= set(result.paths)
    if sys.version_info < (3, 12):  # no perf trampoline: the Python sampler adds its view
        assert {"python.folded", "python.svg"} <= set(result.paths)
    svg = Path(result.paths["native.svg"]).read_text()
    root = _parse_svg(svg)
    assert "perf record -e" in svg
    assert any("crypto" in n.lower() or "sha" in n.lower() for n in _frames(root))
    assert read_folded(result.paths["native.folded"]) == result.folded
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        Path(p).name for p in result.paths.values()
    )


# --------------------------------------------------------------------------- the SVG's script

_DOM = r"""
const fs = require("fs");
const tree = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const actions = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
const byId = {};
let promptAnswer = null;
class El {
  constructor(node, parent) {
    this.tagName = node.tag; this.attrs = Object.assign({}, node.attrs);
    this.parentNode = parent; this._text = node.text || ""; this.style = {display: ""};
    this.listeners = {};
    this.children = node.children.map((c) => new El(c, this));
    const self = this;
    const names = () => (self.attrs["class"] || "").split(/\s+/).filter((x) => x);
    this.classList = {
      contains: (c) => names().includes(c),
      add: (c) => {
        if (!names().includes(c)) self.attrs["class"] = names().concat([c]).join(" ");
      },
      remove: (c) => { self.attrs["class"] = names().filter((x) => x !== c).join(" "); },
    };
    if (this.attrs.id) byId[this.attrs.id] = this;
  }
  getAttribute(k) { return k in this.attrs ? this.attrs[k] : null; }
  setAttribute(k, v) { this.attrs[k] = String(v); }
  hasAttribute(k) { return k in this.attrs; }
  getElementsByTagName(t) {
    const out = [];
    const walk = (e) => {
      for (const c of e.children) { if (c.tagName === t) out.push(c); walk(c); }
    };
    walk(this); return out;
  }
  addEventListener(type, fn) { (this.listeners[type] = this.listeners[type] || []).push(fn); }
  get textContent() { return this._text; }
  set textContent(v) { this._text = String(v); }
}
const root = new El(tree, null);
global.document = { documentElement: root, getElementById: (id) => byId[id] };
global.window = { addEventListener: () => {}, prompt: () => promptAnswer };
const script = root.getElementsByTagName("script")[0].textContent;
new Function(script)();
const frames = byId["frames"].getElementsByTagName("g");
const find = (n) => frames.find((g) => g.getAttribute("data-n") === n);
const fire = (el, type, target) => (el.listeners[type] || []).forEach((fn) => fn({target}));
const states = [];
for (const [op, arg] of actions) {
  if (op === "click") fire(byId["frames"], "click", find(arg).getElementsByTagName("rect")[0]);
  if (op === "hover") fire(byId["frames"], "mouseover", find(arg).getElementsByTagName("rect")[0]);
  if (op === "search") { promptAnswer = arg; fire(byId["search"], "click", byId["search"]); }
  if (op === "unsearch") fire(byId["unsearch"], "click", byId["unsearch"]);
  if (op === "unzoom") fire(byId["unzoom"], "click", byId["unzoom"]);
  const state = {matched: byId["matched"].textContent, details: byId["details"].textContent,
                 unzoom: byId["unzoom"].classList.contains("hide") ? "hidden" : "shown",
                 frames: {}};
  for (const g of frames) {
    const r = g.getElementsByTagName("rect")[0];
    state.frames[g.getAttribute("data-n")] = {
      display: g.style.display, parent: g.classList.contains("parent"),
      x: parseFloat(r.getAttribute("x")), width: parseFloat(r.getAttribute("width")),
      fill: r.getAttribute("fill"), text: g.getElementsByTagName("text")[0].textContent,
    };
  }
  states.push(state);
}
process.stdout.write(JSON.stringify(states));
"""


def _tree(element: ET.Element) -> dict:
    return {
        "tag": element.tag.removeprefix(SVG_NS),
        "attrs": dict(element.attrib),
        "text": element.text or "",
        "children": [_tree(child) for child in element],
    }


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_svg_script_hover_zoom_and_search(tmp_path):
    folded = {
        "main;parse;tokenize": 30,
        "main;parse;lower": 10,
        "main;infer": 60,
        "main;<b>odd & name</b>": 5,
    }
    svg = render_svg(folded, title="t", unit="samples")
    (tmp_path / "tree.json").write_text(json.dumps(_tree(_parse_svg(svg))))
    actions = [
        ["hover", "parse"],
        ["click", "parse"],
        ["search", "^(tokenize|lower)$"],
        ["unzoom", None],
        ["search", "<b>odd"],
        ["search", "(unbalanced"],
        ["unsearch", None],
    ]
    (tmp_path / "actions.json").write_text(json.dumps(actions))
    (tmp_path / "dom.js").write_text(_DOM)
    out = subprocess.run(
        [
            "node",
            str(tmp_path / "dom.js"),
            str(tmp_path / "tree.json"),
            str(tmp_path / "actions.json"),
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    hover, zoom, search, unzoom, odd, fallback, cleared = json.loads(out.stdout)
    assert hover["details"] == "parse (40 samples, 38.10%)"
    full = WIDTH - 20
    f = zoom["frames"]
    assert zoom["unzoom"] == "shown"
    assert f["parse"]["width"] == pytest.approx(full) and f["parse"]["x"] == pytest.approx(10)
    assert f["tokenize"]["width"] == pytest.approx(full * 30 / 40, abs=0.01)
    assert f["lower"]["width"] == pytest.approx(full * 10 / 40, abs=0.01)
    assert f["main"]["parent"] and f["all"]["parent"] and f["main"]["width"] == pytest.approx(full)
    assert f["infer"]["display"] == "none" and f["<b>odd & name</b>"]["display"] == "none"
    assert f["tokenize"]["text"] == "tokenize"
    # search while zoomed: the share of the zoomed frame
    assert search["matched"] == "matched 100.00%"
    assert search["frames"]["tokenize"]["fill"] == "rgb(230,0,230)"
    assert search["frames"]["infer"]["fill"] != "rgb(230,0,230)"
    assert unzoom["matched"] == "matched 38.10%" and unzoom["unzoom"] == "hidden"
    assert unzoom["frames"]["infer"]["display"] == ""
    assert unzoom["frames"]["parse"]["width"] == pytest.approx(full * 40 / 105, abs=0.01)
    assert odd["matched"] == "matched 4.76%"
    assert fallback["matched"] == "matched 0.00%"  # invalid regex -> plain substring
    assert cleared["matched"] == " " and all(
        fr["fill"] != "rgb(230,0,230)" for fr in cleared["frames"].values()
    )


@needs_perf
def test_perf_killed_mid_record_is_reported_and_cleaned_up(tmp_path):
    import os
    import signal

    def perf_children() -> list[int]:
        found = []
        for pid in os.listdir("/proc"):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read().split(b"\0")
            except (OSError, ValueError, IndexError):
                continue
            if ppid == os.getpid() and b"record" in cmd:
                found.append(int(pid))
        return found

    killed = []

    def workload():
        if not killed:
            for pid in perf_children():
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
        sum(range(10_000))

    workdir = tmp_path / "w"
    started = time.monotonic()
    result = sample_native(workload, seconds=0.5, workdir=workdir)
    assert killed, "perf record was running during the window"
    assert time.monotonic() - started < 60
    assert result.folded == {} and result.reason
    assert perf_children() == []
    assert not workdir.exists() or list(workdir.iterdir()) == []


# --------------------------------------------------------------------------- absolute diffs


def _op(node: str, op_type: str, mean_us: float, runs: int = 10, **extra: object) -> dict:
    return {
        "node": node,
        "op_type": op_type,
        "calls": runs,
        "mean_us": mean_us,
        "total_us": mean_us * runs,
        "share": 0.0,
        **extra,
    }


def test_a_3x_slowdown_reads_plus_200_percent_on_every_frame():
    from pytest_inferperf.measure.flame.diff import change_text, diff_per_call, total_change

    base = {"m;MatMul;mm": 100.0, "m;Softmax;sm": 20.0}
    now = {k: 3 * v for k, v in base.items()}
    changes = diff_per_call(base, now)
    assert changes["m"] == (120.0, 360.0) and changes["m;MatMul;mm"] == (100.0, 300.0)
    assert (
        change_text(*total_change(base, now), "µs per call")
        == "120 -> 360 µs per call (+240, 3.00x, +200%)"
    )
    assert change_text(0.0, 5.0, "µs") == "new: 5 µs"
    assert change_text(5.0, 0.0, "µs") == "gone: was 5 µs"


def test_operator_diff_is_absolute_per_call_so_a_slower_matmul_is_never_blue():
    from pytest_inferperf.measure.flame import operator_diff_svg

    # MatMul +85% per call while Softmax grew 2.5x: MatMul's *share* fell (20% -> 16%),
    # which a share-based diff paints blue; in time per call it is slower, so red
    base = [_op("mm", "MatMul", 100.0), _op("sm", "Softmax", 400.0)]
    now = [_op("mm", "MatMul", 185.0), _op("sm", "Softmax", 1000.0)]
    svg = operator_diff_svg(base, now, title="t", baseline_label="fp32", model_name="enc")
    frames = _frames(_parse_svg(svg))
    r, g, b = _rgb(_rect(frames["MatMul"]).get("fill"))
    assert r == 255 and g == b and g < 245  # red
    assert (
        "100 -> 185 µs per call (+85, 1.85x, +85%)" in frames["MatMul"].find(f"{SVG_NS}title").text
    )
    assert (frames["MatMul"].get("data-b"), frames["MatMul"].get("data-a")) == ("100", "185")
    assert "against fp32: 500 -> 1,185 µs per call (+685, 2.37x, +137%)" in html.unescape(svg)
    assert "absolute change, nothing rescaled" in svg
    shares = _frames(
        _parse_svg(
            render_svg(
                operator_stacks(now, "enc"),
                title="t",
                diff=diff_stacks(operator_stacks(base, "enc"), operator_stacks(now, "enc")),
            )
        )
    )
    assert _rgb(_rect(shares["MatMul"]).get("fill"))[2] == 255  # what share-based showed


def test_operator_diff_of_a_3x_slower_model_shows_3x_in_totals_and_tooltips():
    from pytest_inferperf.measure.flame import operator_diff_svg

    base = [_op("mm", "MatMul", 100.0), _op("sm", "Softmax", 20.0)]
    now = [_op("mm", "MatMul", 300.0), _op("sm", "Softmax", 60.0)]
    svg = operator_diff_svg(base, now, title="t", model_name="enc")
    assert "120 -> 360 µs per call (+240, 3.00x, +200%)" in html.unescape(svg)
    for name in ("enc", "MatMul", "mm", "Softmax", "sm"):
        g = _frames(_parse_svg(svg))[name]
        assert "3.00x, +200%)" in g.find(f"{SVG_NS}title").text, name


def test_operator_stacks_root_is_each_session_and_per_call_multiplies_runs():
    ops = [
        _op("a", "MatMul", 10.0, model="encoder", session_runs_per_call=2),
        _op("b", "Gemm", 5.0, model="classifier"),
    ]
    assert operator_stacks(ops, "x") == {"encoder;MatMul;a": 100, "classifier;Gemm;b": 50}
    assert operator_stacks(ops, "x", per_call=True) == {
        "encoder;MatMul;a": 20.0,
        "classifier;Gemm;b": 5.0,
    }


def test_sampled_diff_is_in_ms_per_call_when_both_runs_counted_their_calls(tmp_path):
    # the baseline: the workload's stack took 2 ms per call
    baseline = {
        "view": "python",
        "calls": 10,
        "ms_per_count": 1.0,
        "folded": {"MainThread;test_flame:recognisable_python_workload": 20},
    }
    result = capture(
        recognisable_python_workload,
        name="d",
        out_dir=tmp_path,
        seconds=0.3,
        baseline_stacks=baseline,
        perf=str(tmp_path / "missing-perf"),
    )
    assert result.view == "python" and result.calls > 0 and result.ms_per_count > 0
    record = result.stacks_record(1 << 20)
    assert record["calls"] == result.calls and record["ms_per_count"] == result.ms_per_count
    svg = Path(result.paths["diff.svg"]).read_text()
    assert "differential in ms per call" in svg and "python stacks, time per call: " in svg
    old = capture(
        recognisable_python_workload,
        name="e",
        out_dir=tmp_path,
        seconds=0.3,
        baseline_folded=baseline["folded"],
        perf=str(tmp_path / "missing-perf"),
    )
    assert (
        "share-based: the baseline stored no call count" in Path(old.paths["diff.svg"]).read_text()
    )


def test_a_stripped_native_view_says_so_in_one_line_and_what_was_used():
    from pytest_inferperf.measure.flame import _stripped_note
    from pytest_inferperf.measure.flame.record import NativeSamples

    lib = "onnxruntime_pybind11_state.cpython-311-x86_64-linux-gnu.so"
    native = NativeSamples(
        {"python;[x]": 988, "python;memcpy": 12}, 1000, "cpu-clock", None, stripped={lib: 988}
    )
    note = _stripped_note(native, "the operators view has each operator's time")
    assert note == (
        f"{lib} has no symbols (stripped): 99% of the native samples cannot be "
        "split into functions; the operators view has each operator's time"
    )
    assert "\n" not in note
    symbolised = NativeSamples({"python;f": 10}, 10, "cpu-clock", None, stripped={lib: 2})
    assert _stripped_note(symbolised, "x") is None


# --------------------------------------------------------------------------- through the plugin

_PIPELINE = """
    import os
    import numpy as np, onnx, onnxruntime as ort, pytest
    from onnx import TensorProto, helper, numpy_helper

    def session(matmuls):
        rng = np.random.default_rng(0)
        nodes, weights, prev = [], [], "x"
        for i in range(matmuls):
            weights.append(numpy_helper.from_array(
                (rng.standard_normal((128, 128)) / 12).astype(np.float32), f"w{i}"))
            nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"m{i}"], name=f"mm{i}"))
            prev = f"m{i}"
        nodes.append(helper.make_node("Tanh", [prev], ["y"], name="tanh"))
        graph = helper.make_graph(
            nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 128])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 128])], weights)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        return ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"])

    @pytest.mark.perf(warmup=1, repeat=3, tolerance=0.5, latency_p50_ms_max=LIMIT)
    def test_pipeline(pmu_profile):
        s = session(int(os.environ.get("MATMULS", "1")))
        feed = {"x": np.ones((64, 128), np.float32)}
        def pipeline():  # preprocess, run, post-process
            x = {"x": feed["x"] * 0.5}
            return float(s.run(None, x)[0].sum())
        pmu_profile(pipeline)
"""


@pytest.mark.slow
def test_a_failing_wrapped_workload_gets_an_operator_diff_in_time_per_call(pytester, monkeypatch):
    pytester.makepyfile(test_a=textwrap.dedent(_PIPELINE).replace("LIMIT", "1e9"))
    args = (
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "--inferperf",
        "--inferperf-backend",
        "none",
    )
    first = pytester.runpytest_subprocess(*args, "--inferperf-update-baselines")
    first.assert_outcomes(passed=1)
    pytester.makepyfile(test_a=textwrap.dedent(_PIPELINE).replace("LIMIT", "0.000001"))
    monkeypatch.setenv("MATMULS", "3")
    result = pytester.runpytest_subprocess(*args, "--inferperf-flamegraphs", "failed")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*flamegraph operators.svg: inferperf-report/flamegraphs/*",
            "*flamegraph operators.diff.svg: inferperf-report/*",
        ]
    )
    (diff,) = (pytester.path / "inferperf-report" / "flamegraphs").glob("*.operators.diff.svg")
    frames = _frames(_parse_svg(diff.read_text()))
    matmul = frames["MatMul"]
    before, after = float(matmul.get("data-b")), float(matmul.get("data-a"))
    assert after > 1.5 * before  # three MatMuls against one: slower, never an improvement
    assert _rgb(_rect(matmul).get("fill"))[0] == 255
    assert " -> " in matmul.find(f"{SVG_NS}title").text


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_svg_script_hover_of_a_per_call_diff_shows_before_after_and_ratio(tmp_path):
    from pytest_inferperf.measure.flame.diff import diff_per_call

    base = {"m;MatMul;mm": 100.0, "m;Softmax;sm": 20.0}
    now = {k: 3 * v for k, v in base.items()}
    svg = render_svg(now, title="t", unit="µs per call", change=diff_per_call(base, now))
    (tmp_path / "tree.json").write_text(json.dumps(_tree(_parse_svg(svg))))
    (tmp_path / "actions.json").write_text(json.dumps([["hover", "MatMul"], ["hover", "m"]]))
    (tmp_path / "dom.js").write_text(_DOM)
    out = subprocess.run(
        [
            "node",
            str(tmp_path / "dom.js"),
            str(tmp_path / "tree.json"),
            str(tmp_path / "actions.json"),
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    matmul, model = json.loads(out.stdout)
    assert matmul["details"] == (
        "MatMul (300 µs per call, 83.33%; 100 -> 300 µs per call (+200, 3.00x, +200%))"
    )
    assert model["details"].endswith("120 -> 360 µs per call (+240, 3.00x, +200%))")


# --------------------------------------------------------------------------- native below ops

ORT_NODES = FIXTURES / "x86_64_fp_ort_nodes.txt"
ORT_TRACE = FIXTURES / "x86_64_fp_ort_nodes.trace.json"
STATE_SO = "onnxruntime_pybind11_state.cpython-311-x86_64-linux-gnu.so"


def _recorded_ort_nodes():
    from pytest_inferperf.measure.flame.native_ops import node_windows

    trace = json.loads(ORT_TRACE.read_text())
    windows = node_windows(trace["events"], start_ns=trace["start_ns"], model=trace["model"])
    return windows, list(parse_perf_script(ORT_NODES.read_text()))


def test_recorded_samples_go_to_the_node_that_was_running_on_their_thread():
    """Real perf script (-k monotonic) against the real ONNX Runtime trace of the same
    runs: each sample is placed by time, checked against a plain scan of the windows."""
    from pytest_inferperf.measure.flame.native_ops import attribute

    windows, samples = _recorded_ort_nodes()
    assert len(windows) == 396 and len(samples) == 12  # 198 nodes, two runs
    assert {w.tid for w in windows} == {8685}
    attributed = attribute(samples, windows)
    expected: dict[str, int] = {}
    for sample in samples:  # independent: every window, linearly
        at = round(sample.time * 1e9)
        inside = [w for w in windows if w.begin_ns <= at <= w.end_ns]
        in_ort = any("onnxruntime" in f.dso for f in sample.frames)
        if inside and (sample.tid == inside[0].tid or in_ort):
            expected[inside[0].key] = expected.get(inside[0].key, 0) + 1
    got = {key: sum(frames.values()) for (_, key), frames in attributed.items()}
    assert got == expected
    assert sum(got.values()) == 7  # 3 fell between nodes; the idle pool thread is left out
    assert {model for model, _ in attributed} == {"minilm_l3_st"}
    pool = attributed[("minilm_l3_st", "MatMul;/model/encoder/layer.1/intermediate/dense/MatMul")]
    assert pool == {f"[{STATE_SO}]": 1}  # pool thread 8713, working for the main thread
    transpose = attributed[
        ("minilm_l3_st", "Transpose;/model/encoder/layer.0/attention/self/Transpose_1")
    ]
    assert transpose == {
        "non-virtual thunk to std::__cxx11::basic_stringstream<char, std::char_traits<char>, "
        "std::allocator<char> >::~basic_stringstream();[unknown];"
        "std::__ostream_insert<char, std::char_traits<char> >": 1
    }


def test_a_stripped_onnxruntime_says_its_native_frames_were_not_symbolised():
    from pytest_inferperf.measure.flame.native_ops import attribute, symbols_note

    windows, samples = _recorded_ort_nodes()
    note = symbols_note(attribute(samples, windows))
    assert note == (
        "native frames under the operators were not symbolised: "
        f"{STATE_SO} has no symbols (stripped), so 100% of the 7 samples inside operators "
        "name no ONNX Runtime function; each node's time is ONNX Runtime's profiler's, and "
        "only the frames perf could name (libc, libstdc++, the kernel) are folded below it"
    )


def _constructed_windows():
    from pytest_inferperf.measure.flame.native_ops import NodeWindow

    us = 1_000  # ns
    base = 1_000 * 1_000_000_000  # 1000 s on the monotonic clock
    return [
        NodeWindow("tiny", "MatMul", "/l0/MatMul", 4242, base + 100 * us, base + 600 * us),
        NodeWindow("tiny", "Softmax", "/l0/Softmax", 4242, base + 650 * us, base + 800 * us),
    ]


def test_symbolised_frames_start_at_the_kernels_compute_and_pool_threads_count():
    from pytest_inferperf.measure.flame.native_ops import attribute, kernel_frames, symbols_note

    samples = list(
        parse_perf_script((FIXTURES / "x86_64_symbolised_ort_constructed.txt").read_text())
    )
    assert len(samples) == 6
    matmul = "onnxruntime::MatMul<float>::Compute(onnxruntime::OpKernelContext*) const"
    assert kernel_frames(samples[0]) == [
        matmul,
        "MlasGemmBatch",
        "MlasSgemmOperation",
        "MlasSgemmKernelFma3",
    ]
    attributed = attribute(samples, _constructed_windows())
    assert attributed == {
        ("tiny", "MatMul;/l0/MatMul"): {
            f"{matmul};MlasGemmBatch;MlasSgemmOperation;MlasSgemmKernelFma3": 2,
            "onnxruntime::concurrency::ThreadPoolTempl<onnxruntime::Env>::WorkerLoop(int);"
            "onnxruntime::concurrency::ThreadPool::RunInParallel;MlasSgemmOperation;"
            "MlasSgemmKernelFma3": 1,
        },
        ("tiny", "Softmax;/l0/Softmax"): {
            "onnxruntime::Softmax<float>::Compute(onnxruntime::OpKernelContext*) const;"
            "onnxruntime::ComputeSoftmax<float>": 1
        },
    }  # the interpreter and the idle pool thread after the Softmax are in no node
    assert symbols_note(attributed) is None


def test_folding_below_a_node_splits_its_time_and_keeps_every_width():
    from pytest_inferperf.measure.flame.native_ops import fold_below_operators

    op_stacks = {"tiny;MatMul;/l0/MatMul": 1000, "tiny;Softmax;/l0/Softmax": 999, "tiny;Add;a": 7}
    attributed = {
        ("tiny", "MatMul;/l0/MatMul"): {"Compute;Kernel": 3, "Compute;memcpy": 1},
        ("tiny", "Softmax;/l0/Softmax"): {"x": 1, "y": 1, "z": 1},
        ("other", "Add;a"): {"never": 5},  # another model's node of the same name
    }
    folded = fold_below_operators(op_stacks, attributed)
    assert folded == {
        "tiny;MatMul;/l0/MatMul;Compute;Kernel": 750,
        "tiny;MatMul;/l0/MatMul;Compute;memcpy": 250,
        "tiny;Softmax;/l0/Softmax;x": 333,
        "tiny;Softmax;/l0/Softmax;y": 333,
        "tiny;Softmax;/l0/Softmax;z": 333,
        "tiny;Add;a;never": 7,  # one model in the view: matched by op type and node
    }
    two_models = {**op_stacks, "other;Add;a": 10}
    folded = fold_below_operators(two_models, attributed)
    assert folded["tiny;Add;a"] == 7 and folded["other;Add;a;never"] == 10
    assert sum(folded.values()) == sum(two_models.values())
    uneven = fold_below_operators({"m;Op;n": 10}, {("m", "Op;n"): {"a": 1, "b": 1, "c": 1}})
    assert uneven == {"m;Op;n;a": 3, "m;Op;n;b": 3, "m;Op;n;c": 3, "m;Op;n": 1}


def test_native_operator_view_without_perf_keeps_the_operator_view_and_says_why(tmp_path):
    from pytest_inferperf.measure.flame.native_ops import native_operator_view

    stacks = {"tiny;Conv;/conv1": 900.4, "tiny;Relu;/relu": 0.2}
    folded, why = native_operator_view(
        recognisable_python_workload, stacks, perf=str(tmp_path / "missing-perf")
    )
    assert folded == {"tiny;Conv;/conv1": 900} and why == NOT_INSTALLED


@needs_perf
def test_native_operator_view_with_no_session_says_why():
    from pytest_inferperf.measure.flame.native_ops import native_operator_view

    folded, why = native_operator_view(recognisable_python_workload, {"m;Op;n": 5})
    assert folded == {"m;Op;n": 5}
    assert why == (
        "not available: no ONNX Runtime session ran in one watched call of the workload "
        "(InferenceSession.run was never called)"
    )


@pytest.mark.slow  # a real perf record of ONNX Runtime, ~7 s: CI's slow job runs it
@needs_perf
def test_a_real_wrapped_onnxruntime_run_gets_native_frames_below_its_nodes(tmp_path):
    """perf record -e cpu-clock here: a tokenise/run/post-process wrapper around MiniLM;
    the operator view keeps each node's µs and gains the frames perf saw below them."""
    from pytest_inferperf.onnxrt.sessions import (
        default_dims,
        make_inputs,
        make_session,
        operator_table,
    )

    model = Path(__file__).parent / "fixtures" / "exports" / "minilm_l3_st.onnx"
    session = make_session(model)
    feeds = make_inputs(model, {**default_dims(model), "sequence_length": 32})

    def pipeline() -> float:
        return float(session.run(None, dict(feeds))[0].mean())

    ops, why = operator_table(pipeline)
    assert why is None and ops
    result = capture(
        pipeline,
        name="wrapped",
        out_dir=tmp_path,
        seconds=0.5,
        operators=ops,
        model_name="minilm",
    )
    if "native" in result.reasons:
        pytest.skip(result.reasons["native"])
    plain = operator_stacks(ops, "minilm")
    folded = read_folded(result.paths["operators.folded"])
    below = {k: v for k, v in folded.items() if k.count(";") > 2}
    assert below, result.reasons
    for stack in below:  # every one sits below a node of the operator table
        assert ";".join(stack.split(";")[:3]) in plain
    node_totals: dict[str, int] = {}
    for stack, count in folded.items():
        node = ";".join(stack.split(";")[:3])
        node_totals[node] = node_totals.get(node, 0) + count
    assert node_totals == plain  # no node lost or gained time
    assert result.reasons["operators.stripped"].startswith(
        "native frames under the operators were not symbolised: onnxruntime_pybind11_state."
    )  # the PyPI wheel is stripped
    svg = Path(result.paths["operators.svg"]).read_text()
    assert "model -&gt; op type -&gt; node; native frames below" in svg


def test_kernel_frames_of_a_chain_that_stops_short_of_onnxruntime():
    from pytest_inferperf.measure.flame.native_ops import kernel_frames

    _, samples = _recorded_ort_nodes()
    # a page fault in malloc, its chain ending in a garbage address (0 in no library)
    assert kernel_frames(samples[1]) == [
        "_int_malloc",
        "asm_exc_page_fault_[k]",
        "exc_page_fault_[k]",
        "handle_mm_fault_[k]",
        "__handle_mm_fault_[k]",
        "do_anonymous_page_[k]",
    ]
    assert kernel_frames(samples[0]) == [f"[{STATE_SO}]"]


_EVENT_VALUE = st.one_of(
    st.none(), st.integers(-10, 10**7), st.floats(allow_nan=True), st.text(max_size=8)
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.fixed_dictionaries(
            {},
            optional={
                "cat": st.sampled_from(["Node", "Session", 3]),
                "name": st.sampled_from(["/a_kernel_time", "_kernel_time", "b", ""]),
                "ts": _EVENT_VALUE,
                "dur": _EVENT_VALUE,
                "tid": _EVENT_VALUE,
                "args": st.one_of(st.none(), st.fixed_dictionaries({"op_name": _EVENT_VALUE})),
            },
        ),
        max_size=12,
    )
)
@example([{"cat": "Node", "name": "/a_kernel_time", "ts": float("nan"), "dur": 1, "tid": 3}])
@example([{"cat": "Node", "name": "/a_kernel_time", "ts": 1, "dur": float("inf"), "tid": 3}])
@example([{"cat": "Node", "name": "/a_kernel_time", "ts": 1, "dur": -1, "tid": 3}])
@example([{"cat": "Node", "name": "/a_kernel_time", "ts": 0, "dur": 1.8e305, "tid": 0}])
@example([{"cat": "Node", "name": "/a_kernel_time", "ts": 0, "dur": 1, "tid": float("inf")}])
def test_node_windows_read_any_trace_events_without_raising(events):
    from pytest_inferperf.measure.flame.native_ops import node_windows

    windows = node_windows(events, start_ns=5_000, model="m")
    assert [w.begin_ns for w in windows] == sorted(w.begin_ns for w in windows)
    assert all(w.node and w.op_type and w.model == "m" for w in windows)
    assert len(windows) <= sum(1 for e in events if e.get("cat") == "Node")
