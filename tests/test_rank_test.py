"""The one rank test of a change (judge/comparison.rank_test): the exact and the
normal-approximation paths of the Mann-Whitney U test, and the medians' direction."""

from __future__ import annotations

import math

import pytest

from pytest_inferperf.judge.comparison import (
    ALPHA,
    EXACT_MAX_PAIRS,
    MIN_REPEATS,
    RankTest,
    judge_metric,
    rank_test,
)

LOW = [1.0, 2.0, 3.0, 4.0, 5.0]
HIGH = [6.0, 7.0, 8.0, 9.0, 10.0]


def test_exact_path_complete_separation_of_five_a_side():
    # 25 pairs <= EXACT_MAX_PAIRS, no ties: exact. U = 0 is 1 of C(10, 5) = 252 orderings
    # on each side: p = 2 / 252 = 0.0079 (scipy.stats.mannwhitneyu(..., method="exact")).
    assert len(LOW) * len(HIGH) <= EXACT_MAX_PAIRS
    test = rank_test(HIGH, LOW, +1.0)
    assert test == RankTest(pytest.approx(2 / 252), True)
    assert test is not None and test.credible and test.p_value < ALPHA


def test_exact_path_overlap_is_not_credible():
    # 5 a side with one pair swapped: U = 1; U <= 1 in 2 of the 252 orderings on each
    # side: p = 4 / 252 = 0.0159, above ALPHA.
    test = rank_test([1.0, 2.0, 3.0, 4.0, 6.0], [5.0, 7.0, 8.0, 9.0, 10.0], -1.0)
    assert test is not None
    assert test.p_value == pytest.approx(4 / 252)
    assert test.same_way  # medians 3 -> 8: down, as the move
    assert not test.credible  # 0.0159 is above ALPHA 0.01


def test_normal_approximation_path_beyond_the_exact_size():
    # 21 x 20 = 420 pairs > EXACT_MAX_PAIRS: the normal approximation with continuity
    # correction. x = 10..30, y = 0.5..19.5 (no ties): x's rank sum 596, U1 = 596 - 21*22/2
    # = 365, mean 21*20/2 = 210, variance 21*20*42/12 = 1470,
    # z = (155 - 0.5) / sqrt(1470) = 4.02967, p = erfc(z / sqrt(2)) = 5.5854e-05.
    x = [float(v) for v in range(10, 31)]
    y = [v + 0.5 for v in range(20)]
    assert len(x) * len(y) > EXACT_MAX_PAIRS
    test = rank_test(x, y, +0.3)
    assert test is not None
    z = (365 - 210 - 0.5) / math.sqrt(1470)
    assert test.p_value == pytest.approx(math.erfc(z / math.sqrt(2)), rel=1e-12)
    assert test.p_value == pytest.approx(5.5854472635555406e-05, rel=1e-9)
    assert test.credible


def test_medians_moving_against_the_point_values_are_not_credible():
    # The samples separate (p = 2/252) but the point values (a mean moved by an outlier
    # elsewhere) say the metric went the other way: the medians must agree with it.
    test = rank_test(HIGH, LOW, -0.2)
    assert test is not None and test.p_value < ALPHA
    assert not test.same_way and not test.credible
    # no move at all is never credible either
    assert rank_test(HIGH, LOW, 0.0) == RankTest(pytest.approx(2 / 252), False)


def test_too_few_values_on_a_side_leave_the_point_values_to_decide():
    assert rank_test(HIGH[: MIN_REPEATS - 1], LOW, 1.0) is None
    assert rank_test(HIGH, LOW[: MIN_REPEATS - 1], 1.0) is None
    assert rank_test([], [], 1.0) is None


def test_judge_metric_decides_with_the_same_rank_test():
    # ipc: higher is better; 5 repeats a side, every new one below every old one
    change = judge_metric(
        "ipc",
        baseline=3.0,
        current=2.0,
        tolerance=0.05,
        baseline_repeats=[2.9, 3.0, 3.1, 3.05, 2.95],
        current_repeats=[1.9, 2.0, 2.1, 2.05, 1.95],
    )
    assert change.status == "regressed" and change.credible
    assert change.p_value == pytest.approx(2 / 252)
    assert change.detail == "p=0.00794, Mann-Whitney U over 5 vs 5 repeats"
    # the same samples with the point values moved up: the medians disagree
    against = judge_metric(
        "ipc",
        baseline=2.0,
        current=3.0,
        tolerance=0.05,
        baseline_repeats=[2.9, 3.0, 3.1, 3.05, 2.95],
        current_repeats=[1.9, 2.0, 2.1, 2.05, 1.95],
    )
    assert against.status == "noise" and not against.credible
    assert against.detail.endswith("; per-repeat medians moved the other way")
