"""The shuffled-reward control: a seeded permutation of each step's rewards, and the gain the
reward explains."""

import random
from collections import Counter

import numpy as np
import pytest

from audiobook_rl.compare.control import reward_effect, reward_permutation, shuffle_rewards

REWARDS = [0.1, 0.9, None, 0.4, 0.4, 0.7, None, 0.2]


def test_the_permutation_is_one_and_is_fixed_by_seed_and_step():
    perm = reward_permutation(12, seed=7, step=3)
    assert sorted(perm) == list(range(12))
    assert perm == reward_permutation(12, seed=7, step=3)
    assert perm != reward_permutation(12, seed=7, step=4)
    assert perm != reward_permutation(12, seed=8, step=3)
    # the documented generator, so another backend (or a resumed run) reproduces it exactly
    assert perm == list(np.random.default_rng((7, 3)).permutation(12))
    assert reward_permutation(0, seed=1, step=1) == []


def test_every_order_is_equally_likely():
    counts = Counter(tuple(reward_permutation(3, seed=s, step=1)) for s in range(3000))
    assert len(counts) == 6
    assert all(400 < c < 600 for c in counts.values()), counts  # 500 expected; sd ≈ 20


def test_shuffled_rewards_are_the_same_rewards_moved_and_failures_stay():
    out = shuffle_rewards(REWARDS, seed=0, step=5)
    assert [i for i, r in enumerate(out) if r is None] == [2, 6]
    assert sorted(r for r in out if r is not None) == sorted(r for r in REWARDS if r is not None)
    have = [0, 1, 3, 4, 5, 7]
    perm = reward_permutation(6, seed=0, step=5)
    assert [out[i] for i in have] == [REWARDS[have[j]] for j in perm]  # episode i gets episode perm[i]'s
    assert out != REWARDS
    assert REWARDS == [0.1, 0.9, None, 0.4, 0.4, 0.7, None, 0.2]  # the input is left alone


def test_shuffling_draws_nothing_from_the_training_randomness():
    random.seed(1)
    np.random.seed(1)
    py_state, np_state = random.getstate(), np.random.get_state()
    shuffle_rewards(REWARDS, seed=3, step=9)
    assert random.getstate() == py_state
    after = np.random.get_state()
    assert after[0] == np_state[0] and (after[1] == np_state[1]).all() and after[2:] == np_state[2:]


def test_reward_effect_is_real_gain_minus_shuffled_gain():
    real = {f"r{k}": {"a": g, "b": g} for k, g in enumerate([0.30, 0.20, 0.25, 0.25])}
    shuffled = {f"s{k}": {"a": g, "b": g} for k, g in enumerate([0.05, 0.10, 0.00, 0.05])}
    e = reward_effect(real, shuffled, samples=200)
    assert e.real.mean == pytest.approx(0.25)
    assert e.shuffled.mean == pytest.approx(0.05)
    assert e.difference.mean_diff == pytest.approx(0.20)
    assert e.difference.p_improve == 1.0  # every real seed above every shuffled seed
    assert e.explained_share == pytest.approx(0.8)  # (0.25 − 0.05) / 0.25
    low, high = e.difference.mean_diff_ci
    assert 0 < low <= 0.2 <= high


def test_reward_effect_with_too_few_seeds_keeps_the_numbers_and_says_why():
    real = {"r0": {"a": 0.3}, "r1": {"a": 0.1}, "r2": {"a": 0.2}}
    shuffled = {"s0": {"a": 0.1}}
    e = reward_effect(real, shuffled)
    assert e.difference.mean_diff == pytest.approx(0.1)
    assert e.difference.mean_diff_ci is None
    assert e.difference.too_few == "too few seeds for an interval (arm X has 3; arm Y has 1; at least 4 needed)"


def test_no_explained_share_without_a_real_gain():
    lost = {f"r{k}": {"a": -0.1} for k in range(4)}
    assert reward_effect(lost, {f"s{k}": {"a": 0.0} for k in range(4)}, samples=50).explained_share is None
