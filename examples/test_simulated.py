"""Example perf tests for runners without a PMU: counts from the simulate backend.

Run them with ``pytest --inferperf --inferperf-backend simulate examples/test_simulated.py``
(20-30 s on a 2-vCPU VM). Each measured region runs again under valgrind's callgrind,
which counts instructions, cache and branch events deterministically: the same code
gives the same counts within 0.1%, so a regression of a few percent stands out where
timing on a shared runner moves 10-30%.

Simulate int8 models, or float models at a small input: valgrind 3.19 runs the AVX2 FMA
kernels of float32 convolutions and matrix products about 1000x slower than native,
integer kernels about 20-100x (docs/simulate.md). Sessions use one intra-op thread:
callgrind counts only the thread that runs the region.
"""

from __future__ import annotations

import pytest

from pytest_inferperf.onnxrt.sessions import make_inputs


@pytest.mark.perf(l1_miss_max=0.10, branch_miss_max=0.05, latency_p99_ms_max=60)
def test_mobilenet_v2_int8(pmu_profile, session_for, image):
    session = session_for("mobilenet_v2_int8")
    profile = pmu_profile(session.run, None, image)
    assert profile.outputs_ok


# 32 tokens, not 128: the dynamically quantised encoder still runs its float attention
# (softmax, layer norm) between the integer matrix products.
@pytest.mark.perf(l1_miss_max=0.25, branch_miss_max=0.05, latency_p99_ms_max=60)
def test_minilm_int8_short(pmu_profile, session_for, models):
    session = session_for("minilm_int8")
    tokens = make_inputs(models["minilm_int8"], {"batch": 1, "sequence": 32})
    profile = pmu_profile(session.run, None, tokens)
    assert profile.outputs_ok
