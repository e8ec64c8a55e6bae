"""The baseline store: safe file names, loading corrupt files, atomic saves."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from urllib.parse import unquote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_inferperf.core.profile import (
    LatencyStats,
    MemoryStats,
    Profile,
    Repeat,
    Steadiness,
)
from pytest_inferperf.judge import baseline_store as baseline_mod
from pytest_inferperf.judge.baseline_store import (
    MAX_COMPONENT,
    BaselineError,
    baseline_path,
    class_folder,
    detail_path,
    load_baseline,
    save_baseline,
    short_hash,
)
from pytest_inferperf.pmu.base import Count, CounterSample, EventStatus

MACHINE = "x86_64-amd-epyc-zen3"
FIXTURE_OK = [HealthCheck.function_scoped_fixture]  # tmp_path is only a folder to resolve in


def make_profile(
    name: str = "test_encoder[seq128]", instructions: float = 1e6, repeats: int = 3, calls: int = 10
) -> Profile:
    reps = tuple(
        Repeat(
            calls,
            1_000_000 + i,
            CounterSample(
                counts={
                    "instructions": Count(instructions * calls + i, int(instructions * calls + i)),
                    "cycles": Count(2 * instructions * calls, int(2 * instructions * calls)),
                    "task_clock": Count(900_000.0, 900_000),
                }
            ),
        )
        for i in range(repeats)
    )
    return Profile(
        name=name,
        machine_class=MACHINE,
        backend="perf",
        machine={"cpu": {"core_slug": "amd-epyc-zen3"}},
        events=(
            EventStatus("instructions", True, "hw"),
            EventStatus("l1d_refill", False, reason="no counter"),
        ),
        repeats=reps,
        latency=LatencyStats.from_durations_ns([100_000 + 1000 * i for i in range(30)]),
        memory=MemoryStats(64 << 20, "clear_refs"),
        steady=Steadiness(True, 12, 0.01, 0.05, 5),
        settings={"repeats": repeats},
        created="2024-01-01T00:00:00Z",
    )


# -- layout ------------------------------------------------------------------
def test_layout_of_a_plain_test(tmp_path):
    path = baseline_path(
        tmp_path / "baselines", MACHINE, "perf", "examples/test_models.py::test_encoder[seq128]"
    )
    assert path == (
        tmp_path
        / "baselines"
        / MACHINE
        / "examples"
        / "test_models.py"
        / "test_encoder[seq128].json"
    )


def test_simulated_baselines_get_their_own_class_folder(tmp_path):
    path = baseline_path(tmp_path, MACHINE, "simulate", "t.py::test_x")
    assert path == tmp_path / f"{MACHINE}+simulate" / "t.py" / "test_x.json"
    assert class_folder(MACHINE, "perf") == MACHINE


def test_class_qualified_names_are_joined_with_a_dot_and_hashed(tmp_path):
    nodeid = "tests/test_m.py::TestModel::test_run[fp32]"
    path = baseline_path(tmp_path, MACHINE, "perf", nodeid)
    assert path.parent == tmp_path / MACHINE / "tests" / "test_m.py"
    assert path.name == f"TestModel.test_run[fp32]~{short_hash(nodeid)}.json"
    # the joined name never collides with a literal dotted name
    other = baseline_path(tmp_path, MACHINE, "perf", "tests/test_m.py::TestModel.test_run[fp32]")
    assert other != path


def test_case_only_differences_get_distinct_names(tmp_path):
    lower = baseline_path(tmp_path, MACHINE, "perf", "t.py::test[a]")
    upper = baseline_path(tmp_path, MACHINE, "perf", "t.py::test[A]")
    assert lower.name == "test[a].json"
    assert upper.name == f"test[A]~{short_hash('t.py::test[A]')}.json"
    assert str(lower).lower() != str(upper).lower()


def test_short_hash_is_sha256_prefix():
    # sha256("") = e3b0c44298fc1c149afbf4c8996fb924...
    assert short_hash("") == "e3b0c442"


@pytest.mark.parametrize(
    ("nodeid", "folders", "stem"),
    [
        ("../../etc/passwd::x", ["%2E%2E~", "%2E%2E~", "etc", "passwd"], "x"),
        ("./t.py::a/b", ["%2E~", "t.py"], "a%2Fb~"),
        ("t.py::con", ["t.py"], "_con~"),
        ("t.py::nul.x", ["t.py"], "_nul.x~"),
        ("t.py::a\x00b", ["t.py"], "a%00b~"),
        ("t.py::x y", ["t.py"], "x%20y~"),
        ("t.py::.hidden", ["t.py"], "%2Ehidden~"),
        ("t.py::é", ["t.py"], "%C3%A9~"),
        ("t.py::50%", ["t.py"], "50%25~"),
        ("t.py::a~b", ["t.py"], "a%7Eb~"),
        ("t.py::c:\\x", ["t.py"], "c%3A%5Cx~"),
        ("::t", ["_~"], "t"),
        ("plainfile", [], "plainfile~"),
    ],
)
def test_unsafe_components_are_escaped(tmp_path, nodeid, folders, stem):
    path = baseline_path(tmp_path, MACHINE, "perf", nodeid)
    parts = path.relative_to(tmp_path / MACHINE).parts
    assert len(parts) == len(folders) + 1
    for got, want in zip(parts[:-1], folders, strict=True):
        assert got.startswith(want) if want.endswith("~") else got == want
    if stem.endswith("~"):
        assert parts[-1] == f"{stem}{short_hash(nodeid)}.json"
    else:
        assert parts[-1] == f"{stem}.json"


def test_long_names_are_capped_and_stay_distinct(tmp_path):
    a = baseline_path(tmp_path, MACHINE, "perf", "t.py::" + "x" * 1000)
    b = baseline_path(tmp_path, MACHINE, "perf", "t.py::" + "x" * 999 + "y")
    assert len(a.name) == MAX_COMPONENT
    assert a.name.startswith("x" * 100)
    assert a != b
    folder = baseline_path(tmp_path, MACHINE, "perf", "d" * 500 + "/t.py::x").parts
    assert max(len(p) for p in folder) <= MAX_COMPONENT


def test_escape_is_never_split_by_the_cap(tmp_path):
    for pad in range(3):
        path = baseline_path(tmp_path, MACHINE, "perf", "t.py::" + "x" * (100 + pad) + "é" * 20)
        stem = path.name.rsplit("~", 1)[0]
        assert len(path.name) <= MAX_COMPONENT
        accents = (len(stem) - 100 - pad) // 6  # "é" is "%C3%A9"
        assert unquote(stem, errors="strict") == "x" * (100 + pad) + "é" * accents


def test_a_symlink_out_of_the_folder_is_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "baselines"
    (root / MACHINE).mkdir(parents=True)
    (root / MACHINE / "t.py").symlink_to(outside)
    with pytest.raises(BaselineError, match="outside the baselines folder"):
        baseline_path(root, MACHINE, "perf", "t.py::test_x")


_FRAGMENTS = st.sampled_from(
    [
        "..",
        ".",
        "/",
        "::",
        "\x00",
        "\\",
        "CON",
        "a",
        "A",
        "é",
        "É",
        "~",
        "%",
        "%2E",
        "[",
        "]",
        "x" * 300,
        " ",
        "\ud800",
        "nul",
        ":",
        "ß",
        "SS",
    ]
)
# Pieces that collide under a careless mapping: case twins, escapes written literally,
# names the rules rewrite ("" -> "_", "con" -> "_con"), "::" joined with ".".
_PIECE = st.lists(
    st.sampled_from(
        ["a", "A", "b", "_", "con", "_con", "", ".", "x y", "x%20y", "~", "a.b", "é", "%C3%A9"]
    ),
    max_size=2,
).map("".join)
_STRUCTURED = st.builds(
    lambda folders, names: "/".join(folders) + "::" + "::".join(names),
    st.lists(_PIECE, min_size=1, max_size=2),
    st.lists(_PIECE, min_size=1, max_size=2),
)
NODEIDS = st.one_of(
    _STRUCTURED,
    st.text(max_size=60),
    st.lists(st.one_of(_FRAGMENTS, st.text(max_size=8)), max_size=12).map("".join),
    st.text(alphabet="aAbB:/.", max_size=1000),
)


def _key(path: Path) -> str:
    return str(path).lower()  # what a case-insensitive file system compares


@settings(max_examples=300, deadline=None, suppress_health_check=FIXTURE_OK)
@given(nodeid=NODEIDS, backend=st.sampled_from(["perf", "simulate", "none"]))
def test_any_nodeid_maps_inside_the_folder(tmp_path, nodeid, backend):
    root = tmp_path / "b"
    path = baseline_path(root, MACHINE, backend, nodeid)
    assert path.resolve().is_relative_to(root.resolve())
    assert path.suffix == ".json"
    rel = path.relative_to(root).parts
    assert all(p.isascii() and 0 < len(p) <= MAX_COMPONENT for p in rel)
    assert all(p not in (".", "..") and not p.startswith(".") for p in rel)
    assert all(ch not in p for p in rel for ch in "\x00\\:/ ")


def _neighbours(nodeid: str) -> list[str]:
    """Node ids a careless mapping would send to the same file as ``nodeid``."""
    head, sep, tail = nodeid.partition("::")
    return [
        nodeid.swapcase(),
        nodeid.lower(),
        head + sep + tail.replace("::", "."),
        nodeid.replace("_", ""),
        nodeid + "::",
        "::" + nodeid,
    ]


@settings(max_examples=300, deadline=None, suppress_health_check=FIXTURE_OK)
@given(ids=st.lists(st.one_of(_STRUCTURED, NODEIDS), min_size=1, max_size=6))
def test_distinct_nodeids_never_share_a_path(tmp_path, ids):
    ids = sorted({n for i in ids for n in [i, *_neighbours(i)]})
    keys = {_key(baseline_path(tmp_path, MACHINE, "perf", i)) for i in ids}
    assert len(keys) == len(ids)


@settings(max_examples=300, deadline=None, suppress_health_check=FIXTURE_OK)
@given(nodeid=st.one_of(_STRUCTURED, NODEIDS))
def test_a_name_without_hash_is_the_original_verbatim(tmp_path, nodeid):
    """Why the mapping is injective: a component is either the original text verbatim (and
    lower-case), or carries the hash of what it stands for. ``~`` never survives escaping,
    so the two kinds never meet."""
    path = baseline_path(tmp_path, MACHINE, "perf", nodeid)
    *folders, name = path.relative_to(tmp_path / MACHINE).parts
    head, sep, test = nodeid.partition("::")
    originals = head.split("/") if sep else nodeid.split("/")[:-1]
    assert len(folders) == len(originals)
    for got, original in zip(folders, originals, strict=True):
        if "~" in got:
            assert got.endswith("~" + short_hash(original))
        else:
            assert got == original == original.lower()
    stem = name.removesuffix(".json")
    if "~" in stem:
        assert stem.endswith("~" + short_hash(nodeid))
    else:
        assert sep and stem == test == test.lower() and "::" not in test


@settings(max_examples=40, deadline=None, suppress_health_check=FIXTURE_OK)
@given(nodeid=NODEIDS)
def test_every_mapped_name_can_really_be_written(tmp_path, nodeid):
    path = baseline_path(tmp_path / "real", MACHINE, "perf", nodeid)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}")
    assert path.read_text() == "{}"


# -- saving and loading ------------------------------------------------------
def test_round_trip(tmp_path):
    path = baseline_path(tmp_path, MACHINE, "perf", "examples/test_models.py::test_encoder[seq128]")
    profile = make_profile()
    save_baseline(path, profile)
    loaded = load_baseline(path)
    # what judging reads comes back (the sidecar gives back the rest: below)
    assert loaded is not None and loaded.totals == profile.totals
    assert [(r.calls, r.wall_ns) for r in loaded.repeats] == [
        (r.calls, r.wall_ns) for r in profile.repeats
    ]
    assert (loaded.latency, loaded.memory, loaded.steady) == (
        profile.latency,
        profile.memory,
        profile.steady,
    )
    assert (loaded.name, loaded.machine_class, loaded.backend) == (
        profile.name,
        profile.machine_class,
        profile.backend,
    )
    assert detail_path(path).is_file()
    assert path.read_text().endswith("\n")


def test_round_trip_with_the_sidecar_gives_the_profile_back(tmp_path):
    path = baseline_path(tmp_path, MACHINE, "perf", "examples/test_models.py::test_encoder")
    profile = make_profile().with_(stacks={"view": "python", "folded": {"MainThread;f": 3}})
    save_baseline(path, profile)
    assert detail_path(path).name == "test_encoder~detail.json"
    assert load_baseline(path) == profile
    # a sidecar left from another recording is not read (the judged part is the same)
    stale = detail_path(path).read_text()
    save_baseline(path, make_profile().with_(name="again"))
    detail_path(path).write_text(stale)
    again = load_baseline(path)
    assert again.name == "again" and again.stacks is None and again.totals == profile.totals
    assert oct(path.stat().st_mode & 0o777) == oct(0o644)
    names = sorted(p.name for p in path.parent.iterdir())
    assert names == ["test_encoder.json", "test_encoder~detail.json"]  # no temp file left


def test_save_replaces_and_keeps_other_files(tmp_path):
    path = tmp_path / "c" / "t.json"
    save_baseline(path, make_profile(instructions=1e6))
    (tmp_path / "c" / "other.json").write_text("keep me")
    save_baseline(path, make_profile(instructions=2e6))
    assert load_baseline(path).repeats[0].sample.counts["instructions"].value == 2e7
    assert (tmp_path / "c" / "other.json").read_text() == "keep me"
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == [
        "other.json",
        "t.json",
        "t~detail.json",
    ]


def test_missing_baseline_is_none(tmp_path):
    assert load_baseline(tmp_path / "nope.json") is None


def _fail(err: int):
    def raise_(*_a, **_k):
        raise OSError(err, os.strerror(err))

    return raise_


def test_failed_replace_keeps_the_old_baseline(tmp_path, monkeypatch):
    path = tmp_path / "t.json"
    save_baseline(path, make_profile(instructions=1e6))
    before = path.read_bytes()
    monkeypatch.setattr(baseline_mod.os, "replace", _fail(errno.EXDEV))
    with pytest.raises(BaselineError) as info:
        save_baseline(path, make_profile(instructions=2e6))
    msg = str(info.value)
    assert str(path) in msg
    assert "Invalid cross-device link" in msg
    assert "old baseline is intact" in msg
    assert path.read_bytes() == before
    # temp files removed; the old sidecar stays (the replace of the sidecar failed first)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.json", "t~detail.json"]


def test_disk_full_removes_the_temp_file(tmp_path, monkeypatch):
    path = tmp_path / "t.json"
    monkeypatch.setattr(baseline_mod.os, "fsync", _fail(errno.ENOSPC))
    with pytest.raises(BaselineError, match="No space left on device") as info:
        save_baseline(path, make_profile())
    assert str(path) in str(info.value)
    assert "No baseline was written" in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_interrupt_during_save_removes_the_temp_file(tmp_path, monkeypatch):
    def interrupt(*_a):
        raise KeyboardInterrupt

    monkeypatch.setattr(baseline_mod.os, "replace", interrupt)
    with pytest.raises(KeyboardInterrupt):
        save_baseline(tmp_path / "t.json", make_profile())
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_folder(tmp_path):
    path = tmp_path / "ro" / "t.json"
    save_baseline(path, make_profile())
    before = path.read_bytes()
    path.parent.chmod(0o555)
    try:
        with pytest.raises(BaselineError, match="Permission denied") as info:
            save_baseline(path, make_profile(instructions=2e6))
    finally:
        path.parent.chmod(0o755)
    assert str(path) in str(info.value)
    assert path.read_bytes() == before


def test_read_only_folder_simulated(tmp_path, monkeypatch):
    # As root chmod 0o555 does not stop writes, so fail the temp file creation the way a
    # read-only folder does.
    path = tmp_path / "t.json"
    save_baseline(path, make_profile())
    before = path.read_bytes()
    monkeypatch.setattr(baseline_mod.tempfile, "mkstemp", _fail(errno.EACCES))
    with pytest.raises(BaselineError) as info:
        save_baseline(path, make_profile(instructions=2e6))
    msg = str(info.value)
    assert str(path) in msg and "Permission denied" in msg and "intact" in msg
    assert path.read_bytes() == before


def test_unwritable_parent_folder(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(BaselineError, match="cannot create the folder"):
        save_baseline(tmp_path / "file" / "sub" / "t.json", make_profile())


def test_nan_profile_is_not_saved(tmp_path):
    bad = make_profile().with_(overhead={"timer_ns": float("nan")})
    with pytest.raises(BaselineError, match="cannot be serialised"):
        save_baseline(tmp_path / "t.json", bad)
    assert list(tmp_path.iterdir()) == []


def _good_dict() -> dict:
    return make_profile().to_dict()


def _corrupt(kind: str) -> str:
    if kind == "truncated":
        return make_profile().to_json()[:200]
    data = _good_dict()
    if kind == "wrong schema":
        data["schema"] = "something/else"
    elif kind == "future version":
        data["schema_version"] = 99
    elif kind == "missing field":
        del data["latency"]
    elif kind == "wrong type":
        data["repeats"] = "many"
    elif kind == "NaN":
        return json.dumps(data).replace('"mean_ms": ', '"mean_ms": NaN, "x": ', 1)
    elif kind == "huge number":
        return json.dumps(data).replace('"calls": 30', '"calls": 1e400', 1)
    elif kind == "not an object":
        return "[1, 2, 3]"
    return json.dumps(data)


@pytest.mark.parametrize(
    ("kind", "cause"),
    [
        ("truncated", "not UTF-8 JSON"),
        ("wrong schema", "not an inferperf profile"),
        ("future version", "newer than this inferperf"),
        ("missing field", "missing field 'latency'"),
        ("wrong type", "not a valid profile"),
        ("NaN", "NaN is not allowed"),
        ("huge number", "not a valid profile: latency.calls: a finite number"),
        ("not an object", "not an inferperf profile"),
    ],
)
def test_corrupt_baseline_names_the_file_cause_and_fix(tmp_path, kind, cause):
    path = tmp_path / "t.json"
    path.write_text(_corrupt(kind))
    with pytest.raises(BaselineError) as info:
        load_baseline(path)
    msg = str(info.value)
    assert msg.startswith(f"Baseline {path} ")
    assert cause in msg
    assert "Restore it from version control" in msg
    assert "pytest --inferperf --update-baselines" in msg
    assert "\n" not in msg
    assert msg.count("Restore it") == 1


def test_binary_garbage_and_directories_are_errors(tmp_path):
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(BaselineError, match=r"bin\.json"):
        load_baseline(tmp_path / "bin.json")
    (tmp_path / "dir.json").mkdir()
    with pytest.raises(BaselineError, match=r"dir\.json is a folder, not a regular file"):
        load_baseline(tmp_path / "dir.json")
