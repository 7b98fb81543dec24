"""The shuffled-reward control: did the policy learn from the reward, or only change?

Training with ``train.reward.shuffle: true`` is training as usual except that, at every step, the
rewards of that step's episodes are permuted across the episodes (:func:`shuffle_rewards`). The
batch keeps the same rewards (same mean, same spread, so the same update sizes) but who gets which
reward is random, so nothing about *which* script is better reaches the policy. Permuting across the
whole step, not within each task's group, also severs the link between a task and its rewards; the
group-normalised advantages of GRPO then carry no information about either. What such a run still
gains over the base is what training does without a reward signal (format drift, length changes,
the judge's preferences for any change); the real-reward arm's gain beyond it is what the reward
explains (cf. Shao et al. 2025, "Spurious Rewards: Rethinking Training Signals in RLVR", where random
rewards gave most of a reported gain on some Qwen models).

The permutation comes from its own generator, ``numpy.random.default_rng((seed, step))``, not from
the training generator, so switching the control on draws nothing from the training randomness:
step 1's rollouts are the same in both arms, and a resumed run permutes a step exactly as before.
Episodes without a reward (None: a judge failure) keep None in place; the rewards that exist are
permuted among the episodes that have one, so a failure never receives a made-up reward.

:func:`reward_effect` compares the two arms over their seeds (:mod:`.seeds`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from . import seeds


@dataclass(frozen=True)
class RewardEffect:
    """The real-reward arm against the shuffled-reward arm."""

    real: seeds.ArmSummary
    shuffled: seeds.ArmSummary
    difference: seeds.ArmComparison  # real − shuffled: the gain the reward explains, with P(real > shuffled)

    @property
    def explained_share(self) -> float | None:
        """(real gain − shuffled gain) / real gain: a secondary number, only when the real arm gained."""
        real, diff = self.real.mean, self.difference.mean_diff
        if real is None or diff is None or real <= 0:
            return None
        return diff / real


def reward_permutation(n: int, *, seed: int, step: int) -> list[int]:
    """A permutation of ``range(n)``, the same for the same (seed, step) on every machine:
    episode ``i`` receives the reward of episode ``perm[i]``."""
    if n < 0:
        raise ValueError(f"cannot permute {n} episodes")
    return [int(i) for i in np.random.default_rng((seed, step)).permutation(n)]


def shuffle_rewards(rewards: Sequence[float | None], *, seed: int, step: int) -> list[float | None]:
    """The step's rewards permuted across the episodes that have one; None stays where it is."""
    have = [i for i, r in enumerate(rewards) if r is not None]
    perm = reward_permutation(len(have), seed=seed, step=step)
    out = list(rewards)
    for target, source in zip(have, perm):
        out[target] = rewards[have[source]]
    return out


def reward_effect(
    real: Mapping[str, Mapping[str, object]],
    shuffled: Mapping[str, Mapping[str, object]],
    *,
    samples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
    min_seeds: int = seeds.MIN_SEEDS,
    resample_slices: bool = True,
) -> RewardEffect:
    """Both arms summarised and compared (each: training seed → slice id → gain on test)."""
    options = dict(samples=samples, seed=seed, confidence=confidence, min_seeds=min_seeds, resample_slices=resample_slices)
    return RewardEffect(
        real=seeds.arm_summary(real, **options),
        shuffled=seeds.arm_summary(shuffled, **options),
        difference=seeds.compare_arms(real, shuffled, **options),
    )
