"""The CPU features numpy sees here, and those valgrind's emulated CPU hides."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from pytest_inferperf.measure.simulate.cpu_features import (
    features_text,
    hidden_features,
    seen_features,
)


def test_hidden_features_put_the_kernels_dispatch_first():
    native = ["SSE2", "AVX2", "AVX512F", "GFNI", "AVX512VNNI", "VAES"]
    assert hidden_features(native, ["SSE2", "AVX2"]) == ["AVX512F", "AVX512VNNI", "GFNI", "VAES"]
    assert hidden_features(native, native) == []
    assert hidden_features(None, ["SSE2"]) == [] and hidden_features(native, None) == []


def test_features_text_shortens_a_long_list():
    assert features_text(["A", "B"]) == "A, B"
    assert features_text(list("ABCDEFG"), 2) == "A, B and 5 more"


def test_seen_features_reads_numpy_dispatch_without_importing_numpy_itself():
    import numpy  # noqa: F401  (imported by the test session anyway)

    seen = seen_features()
    assert seen and ({"SSE2", "AVX2"} & seen or {"ASIMD", "NEON"} & seen)
    code = (
        "import sys, json\n"
        "from pytest_inferperf.measure.simulate.cpu_features import seen_features\n"
        "print(json.dumps([seen_features() is None, 'numpy' in sys.modules]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert json.loads(done.stdout) == [True, False]


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_valgrind_shows_no_feature_this_cpu_lacks_and_hides_avx512():
    code = (
        "import json\n"
        "from pytest_inferperf.measure.simulate.cpu_features import seen_features\n"
        "print(json.dumps(sorted(seen_features(import_numpy=True))))"
    )
    done = subprocess.run(
        ["valgrind", "-q", "--tool=none", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    emulated = set(json.loads(done.stdout.splitlines()[-1]))
    native = seen_features(import_numpy=True)
    assert native is not None and emulated and emulated <= native
    if "AVX512F" in native:  # valgrind 3.19-3.2x run no AVX-512
        assert hidden_features(native, emulated)[0] == "AVX512F"
