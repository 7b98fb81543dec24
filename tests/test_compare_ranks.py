"""Ranks, Spearman's rho and Kendall's tau-b with ties, against hand values and scipy's."""

import math

import pytest

from audiobook_rl.compare.ranks import average_ranks, kendall_tau_b, spearman

# Worked by hand below: x has one tie, y none.
X = [0.1, 0.2, 0.2, 0.4]
Y = [0.3, 0.1, 0.2, 0.4]


def test_tied_values_share_the_mean_of_their_positions():
    assert list(average_ranks(X)) == [1.0, 2.5, 2.5, 4.0]
    assert list(average_ranks([5, 1, 5, 5, 0])) == [4.0, 2.0, 4.0, 4.0, 1.0]


def test_scores_equal_to_nine_decimals_are_tied():
    # 0.1 + 0.2 is 0.30000000000000004: the same score computed another way, not a higher one
    assert list(average_ranks([0.1 + 0.2, 0.3, 0.1])) == [2.5, 2.5, 1.0]


def test_spearman_with_ties_is_pearson_of_average_ranks():
    # ranks x 1, 2.5, 2.5, 4 and y 3, 1, 2, 4 (mean 2.5): deviations (-1.5, 0, 0, 1.5) and
    # (0.5, -1.5, -0.5, 1.5); products sum to 1.5; squares to 4.5 and 5 → 1.5 / sqrt(22.5) = 1/sqrt(10).
    # The no-tie shortcut 1 - 6Σd²/(n(n²-1)) would give 1 - 6·6.5/60 = 0.35.
    assert spearman(X, Y) == pytest.approx(1 / math.sqrt(10), abs=1e-12)


def test_kendall_tau_b_counts_ties_in_the_denominator():
    # pairs (0,1) and (0,2) discordant, (0,3) (1,3) (2,3) concordant, (1,2) tied in x:
    # P - Q = 1, n0 = 6, n1 = 1, n2 = 0 → 1 / sqrt(5 · 6). tau-a would give 1/6.
    assert kendall_tau_b(X, Y) == pytest.approx(1 / math.sqrt(30), abs=1e-12)


def test_match_scipy_on_a_larger_sample_with_many_ties():
    # reference values from scipy 1.17.1: stats.spearmanr(x, y).statistic, stats.kendalltau(x, y).statistic
    x = [((i * 37) % 11) / 10 for i in range(40)]
    y = [round(((i * i * 13 + 5) % 7) / 10 + x[i] / 2, 2) for i in range(40)]
    assert spearman(x, y) == pytest.approx(0.685549460941933, abs=1e-12)
    assert kendall_tau_b(x, y) == pytest.approx(0.52126641660844, abs=1e-12)


def test_perfect_and_reversed_orders():
    assert spearman([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert kendall_tau_b([1, 2, 3], [30, 20, 10]) == pytest.approx(-1.0)


def test_undefined_for_one_item_or_a_constant_side():
    assert spearman([0.5], [0.7]) is None
    assert kendall_tau_b([0.5], [0.7]) is None
    assert spearman([0.5, 0.5, 0.5], [0.1, 0.2, 0.3]) is None
    assert kendall_tau_b([0.1, 0.2, 0.3], [0.5, 0.5, 0.5]) is None


def test_unpaired_lengths_are_refused():
    with pytest.raises(ValueError, match="paired"):
        spearman([1, 2], [1, 2, 3])
