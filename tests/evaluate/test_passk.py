"""pass@k: the unbiased estimator against hand-computed values, and the bootstrap interval."""

from __future__ import annotations

import math

import pytest

from logmine.evaluate.passk import bootstrap_ci, mean_pass_at_k, pass_at_k


@pytest.mark.parametrize("n, c, k, expected", [
    (5, 2, 1, 0.4),                      # c/n
    (5, 2, 2, 1 - 3 / 10),               # 1 - C(3,2)/C(5,2)
    (10, 3, 4, 1 - 35 / 210),            # 1 - C(7,4)/C(10,4)
    (10, 0, 5, 0.0),
    (4, 4, 1, 1.0),
    (10, 3, 8, 1.0),                     # n - c < k: every draw of 8 holds a correct one
    (200, 1, 100, 0.5),
])
def test_pass_at_k_matches_hand_values(n, c, k, expected):
    assert math.isclose(pass_at_k(n, c, k), expected, rel_tol=1e-12, abs_tol=1e-12)


@pytest.mark.parametrize("n, c, k", [(5, 6, 1), (5, 2, 0), (5, 2, 6), (0, 0, 1)])
def test_invalid_arguments_raise(n, c, k):
    with pytest.raises(ValueError, match="need 0 <= c <= n and 1 <= k <= n"):
        pass_at_k(n, c, k)


def test_mean_skips_tasks_with_too_few_samples():
    assert mean_pass_at_k([(5, 2), (5, 0), (2, 2)], 4) == pytest.approx((1.0 + 0.0) / 2)
    assert mean_pass_at_k([(2, 2)], 4) is None


def test_bootstrap_interval_brackets_the_mean_and_is_degenerate_for_equal_tasks():
    counts = [(8, c) for c in (0, 1, 2, 4, 8, 8, 3, 0)]
    lo, hi = bootstrap_ci(counts, 1, resamples=2000, seed=1)
    assert lo < mean_pass_at_k(counts, 1) < hi and 0 <= lo and hi <= 1
    assert bootstrap_ci([(8, 4)] * 5, 1) == pytest.approx((0.5, 0.5))
    assert bootstrap_ci([(2, 1)], 4) is None
