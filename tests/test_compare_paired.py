"""A checkpoint against the base on the same slices: every number checked by hand."""

import numpy as np
import pytest

from audiobook_rl.compare.paired import Paired, differences, direction, paired

# Slices a-d are scored at both; e only by the base, f failed at the checkpoint (None), g's score
# is not a number. Differences a..d: 0.4, 0.0, -0.1, 0.0.
CKPT = {"a": 0.5, "b": 0.6, "c": 0.2, "d": 0.4, "f": None, "g": "0.9"}
BASE = {"a": 0.1, "b": 0.6, "c": 0.3, "d": 0.4, "e": 0.2, "f": 0.3, "g": 0.1}


def quantile(values, q):
    """Linear interpolation between order statistics (Hyndman & Fan type 7), written out."""
    v = sorted(values)
    h = q * (len(v) - 1)
    f = int(h)
    return v[f] if f + 1 == len(v) else v[f] + (h - f) * (v[f + 1] - v[f])


def test_only_slices_scored_on_both_sides_are_paired():
    assert differences(CKPT, BASE) == pytest.approx({"a": 0.4, "b": 0.0, "c": -0.1, "d": 0.0})
    p = paired(CKPT, BASE)
    assert p.n == 4
    assert p.mean_diff == pytest.approx(0.075)
    assert p.mean_checkpoint == pytest.approx(0.425)
    assert p.mean_base == pytest.approx(0.35)


def test_probability_of_improvement_counts_ties_half():
    # one win (a), two ties (b, d), one loss (c): (1 + 0.5·2) / 4
    assert paired(CKPT, BASE).p_improve == pytest.approx(0.5)
    # a tie that only floating point breaks is still a tie
    assert paired({"x": 0.1 + 0.2, "y": 0.5}, {"x": 0.3, "y": 0.4}).p_improve == pytest.approx(0.75)


def test_relative_change_is_over_the_paired_slices_and_secondary():
    p = paired(CKPT, BASE)
    assert p.relative_change == pytest.approx(100 * (0.425 - 0.35) / 0.35)
    assert paired({"a": 0.2, "b": 0.4}, {"a": 0.0, "b": 0.0}).relative_change is None  # base 0: no %


def test_bootstrap_interval_replays_the_documented_draws():
    samples, seed = 7, 3
    idx = np.random.default_rng(seed).integers(0, 4, size=(samples, 4)).tolist()
    d = [0.4, 0.0, -0.1, 0.0]  # a, b, c, d in id order
    w = [1.0, 0.5, 0.0, 0.5]
    means = [sum(d[i] for i in row) / 4 for row in idx]
    shares = [sum(w[i] for i in row) / 4 for row in idx]
    p = paired(CKPT, BASE, samples=samples, seed=seed, confidence=0.9)
    assert p.diff_ci == pytest.approx((quantile(means, 0.05), quantile(means, 0.95)), abs=1e-12)
    assert p.p_improve_ci == pytest.approx((quantile(shares, 0.05), quantile(shares, 0.95)), abs=1e-12)


def test_same_seed_same_interval_other_seed_other_interval():
    a = {f"s{i}": 0.1 * (i % 7) for i in range(20)}
    b = {f"s{i}": 0.05 * (i % 5) for i in range(20)}
    assert paired(a, b, seed=1) == paired(a, b, seed=1)
    assert paired(a, b, seed=1).diff_ci != paired(a, b, seed=2).diff_ci


def test_pairing_removes_slice_difficulty():
    # slices differ wildly in difficulty, the checkpoint is +0.1 on every one: resampling pairs
    # gives exactly 0.1; resampling the two sides apart would give a wide interval around it
    base = {f"s{i}": v for i, v in enumerate([0.0, 0.8, 0.1, 0.7, 0.2, 0.6])}
    ckpt = {k: v + 0.1 for k, v in base.items()}
    p = paired(ckpt, base)
    assert p.diff_ci == pytest.approx((0.1, 0.1))
    assert p.p_improve == 1.0 and p.p_improve_ci == (1.0, 1.0)


def test_too_few_pairs_give_no_interval():
    one = paired({"a": 0.5}, {"a": 0.1, "b": 0.2})
    assert (one.n, one.mean_diff, one.diff_ci, one.p_improve_ci) == (1, pytest.approx(0.4), None, None)
    assert paired({"a": None}, {"a": 0.1}) == Paired(0, None, None, None, None, None, None, None)
    assert direction(one) == "too few"


def test_direction_needs_the_interval_off_zero_and_the_minimum_effect():
    up = Paired(8, 0.05, (0.01, 0.09), 0.8, (0.6, 1.0), 0.5, 0.45, 11.1)
    assert direction(up) == "up"
    assert direction(up, min_effect=0.06) == "flat"
    assert direction(Paired(8, -0.05, (-0.09, -0.01), 0.2, (0.0, 0.4), 0.4, 0.45, -11.1)) == "down"
    assert direction(Paired(8, 0.05, (-0.01, 0.09), 0.6, (0.4, 0.8), 0.5, 0.45, 11.1)) == "flat"


def test_nonsense_settings_are_refused():
    with pytest.raises(ValueError, match="confidence"):
        paired(CKPT, BASE, confidence=95)
    with pytest.raises(ValueError, match="samples"):
        paired(CKPT, BASE, samples=0)
