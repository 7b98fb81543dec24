"""Seeds per arm: IQM as rliable computes it, the stratified bootstrap replayed by hand, and the
probability of improvement (Mann-Whitney) with ties."""

import numpy as np
import pytest

from audiobook_rl.compare.seeds import MIN_SEEDS, arm_summary, compare_arms, iqm, probability_of_improvement

# seed → slice id → gain. Seed gains: s1 0.2, s2 0.2, s3 -0.1, s4 0.4 (s5 has only a judge failure).
ARM = {
    "s1": {"a": 0.1, "b": 0.3},
    "s2": {"a": 0.0, "b": 0.2, "c": 0.4},
    "s3": {"a": -0.1},
    "s4": {"b": 0.3, "a": 0.5},
    "s5": {"a": None},
}
OTHER = {"t1": {"a": 0.0, "b": 0.1}, "t2": {"a": 0.2}, "t3": {"a": -0.2, "b": 0.0}, "t4": {"a": 0.1, "b": 0.1}}


def quantile(values, q):
    v = sorted(values)
    h = q * (len(v) - 1)
    f = int(h)
    return v[f] if f + 1 == len(v) else v[f] + (h - f) * (v[f + 1] - v[f])


def mean(values):
    return sum(values) / len(values)


def r9(value):
    return round(value, 9)


def hand_iqm(values):
    v = sorted(values)
    cut = len(v) // 4
    return mean(v[cut : len(v) - cut])


@pytest.mark.parametrize(
    "values, expected",
    [
        ([3], 3.0),
        ([1, 5], 3.0),
        ([9, 1, 2], 4.0),  # n ≤ 3: nothing trimmed, the IQM is the mean (not the median 2)
        ([4, 1, 3, 100], 3.5),
        ([1, 2, 3, 7, 10], 4.0),  # n = 5: drop one each end (a fractional trim would give 3.9)
        ([1, 2, 3, 4, 5, 60], 3.5),
        ([0, 1, 2, 3, 4, 50, 70], 12.0),  # n = 7: ⌊7/4⌋ = 1 each end, not round(1.75) = 2
        ([80, 0, 1, 2, 3, 4, 5, 6], 3.5),  # n = 8: drop two each end
        ([0, 1, 2, 3, 4, 5, 6, 7, 90], 4.0),
    ],
)
def test_iqm_matches_rliable(values, expected):
    # expected values are scipy.stats.trim_mean(values, 0.25) (scipy 1.17.1), which rliable's
    # aggregate_iqm calls
    assert iqm(values) == pytest.approx(expected)


def test_iqm_of_nothing_is_refused():
    with pytest.raises(ValueError):
        iqm([])


def test_probability_of_improvement_is_mann_whitney_with_ties_half():
    # pairs: .3>.5 no, .3>.1 yes, .5=.5 half, .5>.1 yes, twice → (0 + 1 + .5 + 1 + .5 + 1) / 6
    # (scipy 1.17.1: mannwhitneyu([.3,.5,.5], [.5,.1], alternative="greater").statistic / 6 = 4/6)
    assert probability_of_improvement([0.3, 0.5, 0.5], [0.5, 0.1]) == pytest.approx(4 / 6)
    assert probability_of_improvement([0.2, 0.3], [0.2, 0.3]) == pytest.approx(0.5)
    assert probability_of_improvement([1.0], [0.0]) == 1.0


def test_per_seed_gains_mean_and_iqm():
    s = arm_summary(ARM, samples=50)
    assert s.gains == pytest.approx({"s1": 0.2, "s2": 0.2, "s3": -0.1, "s4": 0.4})
    assert s.skipped == ("s5",)
    assert s.n_seeds == 4
    assert s.mean == pytest.approx(0.175)
    assert s.iqm == pytest.approx(0.2)  # sorted -.1 .2 .2 .4, the middle two


def replay(rng, arm, samples, resample_slices=True):
    """The module's documented draws, re-done with loops: (samples × S) resampled seed gains."""
    seeds = sorted(s for s in arm if any(v is not None for v in arm[s].values()))
    slices = {s: [arm[s][k] for k in sorted(arm[s]) if arm[s][k] is not None] for s in seeds}
    S = len(seeds)
    pick = rng.integers(0, S, size=(samples, S)).tolist()
    if not resample_slices:
        return [[mean(slices[seeds[j]]) for j in row] for row in pick]
    draws = {s: rng.integers(0, len(slices[s]), size=(samples, S, len(slices[s]))).tolist() for s in seeds}
    return [
        [mean([slices[seeds[j]][i] for i in draws[seeds[j]][r][k]]) for k, j in enumerate(row)]
        for r, row in enumerate(pick)
    ]


@pytest.mark.parametrize("resample_slices", [True, False])
def test_stratified_bootstrap_replays_the_documented_draws(resample_slices):
    samples, seed = 9, 11
    reps = replay(np.random.default_rng(seed), ARM, samples, resample_slices)
    means, iqms = [mean(r) for r in reps], [hand_iqm(r) for r in reps]
    s = arm_summary(ARM, samples=samples, seed=seed, confidence=0.8, resample_slices=resample_slices)
    assert s.mean_ci == pytest.approx((quantile(means, 0.1), quantile(means, 0.9)), abs=1e-12)
    assert s.iqm_ci == pytest.approx((quantile(iqms, 0.1), quantile(iqms, 0.9)), abs=1e-12)


def test_resampling_slices_widens_the_interval_when_slices_disagree():
    # every seed gains 0.1 on average, but its slices range from -0.4 to 0.6
    arm = {f"s{k}": {"a": 0.6, "b": -0.4, "c": 0.1} for k in range(5)}
    assert arm_summary(arm, resample_slices=False).mean_ci == pytest.approx((0.1, 0.1))
    low, high = arm_summary(arm, resample_slices=True).mean_ci
    assert low < 0 < 0.1 < high


def test_too_few_seeds_give_no_interval_but_the_point_numbers():
    three = {k: ARM[k] for k in ("s1", "s2", "s3")}
    s = arm_summary(three)
    assert MIN_SEEDS == 4
    assert (s.mean_ci, s.iqm_ci) == (None, None)
    assert s.too_few == "too few seeds for an interval (the arm has 3; at least 4 needed)"
    assert s.mean == pytest.approx(0.1)
    assert arm_summary(three, min_seeds=3).mean_ci is not None
    empty = arm_summary({"s1": {"a": None}})
    assert (empty.mean, empty.too_few, empty.skipped) == (None, "no seed has a scored slice", ("s1",))


def test_compare_arms_point_numbers():
    # X gains .2 .2 -.1 .4; Y gains .05 .2 -.1 .1 → difference of means .175 - .0625;
    # P(X > Y): per x, wins over (.05, .2, -.1, .1): .2 → 1+.5+1+1, .2 → 3.5, -.1 → .5, .4 → 4 = 11.5/16
    c = compare_arms(ARM, OTHER, samples=20)
    assert c.mean_diff == pytest.approx(0.1125)
    assert c.p_improve == pytest.approx(11.5 / 16)
    assert c.too_few is None


def test_compare_arms_resamples_each_arm_independently_x_first():
    samples, seed = 8, 5
    rng = np.random.default_rng(seed)
    rx, ry = replay(rng, ARM, samples), replay(rng, OTHER, samples)
    diffs = [mean(a) - mean(b) for a, b in zip(rx, ry)]
    # ties to 9 decimals: a mean of .1 and .3 and one of 0, .2 and .4 are the same gain
    pois = [mean([1.0 if x > y else 0.5 if x == y else 0.0 for x in map(r9, a) for y in map(r9, b)]) for a, b in zip(rx, ry)]
    c = compare_arms(ARM, OTHER, samples=samples, seed=seed, confidence=0.5)
    assert c.mean_diff_ci == pytest.approx((quantile(diffs, 0.25), quantile(diffs, 0.75)), abs=1e-12)
    assert c.p_improve_ci == pytest.approx((quantile(pois, 0.25), quantile(pois, 0.75)), abs=1e-12)


def test_compare_arms_with_a_small_arm_says_so():
    c = compare_arms(ARM, {"t1": OTHER["t1"]})
    assert (c.mean_diff_ci, c.p_improve_ci) == (None, None)
    assert c.too_few == "too few seeds for an interval (arm Y has 1; at least 4 needed)"
    assert c.p_improve == pytest.approx(mean([1.0, 1.0, 0.0, 1.0]))  # X's gains against Y's 0.05
