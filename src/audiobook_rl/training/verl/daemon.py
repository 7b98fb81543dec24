"""Agent Lightning's daemon with two changes: a rollout without a reward is never scored 0, and
rewards reach GRPO's advantage in float32.

Agent Lightning 0.3.0 (``agentlightning/verl/daemon.py``) gives a rollout that reported no reward
(a judge that kept failing, a call skipped as too long for the context, a crashed rollout) the
fill-in reward 0.0 and trains on it: a judge outage would hand good rollouts negative advantages
and move the validation curve. Here such a rollout's whole group (every rollout of its task, since
GRPO compares them with each other) leaves the update, and the training and validation rewards are
means over the rollouts that have one. Counted per step:

- ``training/n_rollouts_without_reward``, ``training/n_groups_dropped`` (in results/train/metrics.jsonl
  as ``rollouts_without_reward`` and ``groups_dropped``);
- ``val/n_rollouts_without_reward``.

The shuffled-reward control (``train.reward.shuffle``, :mod:`audiobook_rl.compare.control`): when
:data:`SHUFFLE_SEED` is set in the environment (the training process hands it to Ray, so verl's
trainer actor sees it), each training step's rewards are permuted across that step's rollouts
before the batch is built, with ``shuffle_rewards(..., seed=<train.seed>, step=<verl's global step>)``
over the rollouts sorted by (task, rollout id). Rollout ids are random, so the permutation repeats
only given the same rollouts (the local backend's is exact); validation is never shuffled.

Rewards keep float32 up to the advantage: Agent Lightning places each rollout's reward on its last
response token as bfloat16 (``torch.tensor(reward_list, dtype=torch.bfloat16)``), which holds about
0.002 near 0.5, so judge scores closer than that become equal and the group's std normalisation
magnifies the rounding; here the same positions get the float32 rewards.

Handed to ``agl.VERL(config, daemon_cls=RewardedGroupsDaemon)``; it runs in verl's trainer actor.
"""

from __future__ import annotations

import os

import numpy as np
import torch
from agentlightning.verl.daemon import AgentModeDaemon

from ...compare.control import shuffle_rewards
from .environment import SHUFFLE_SEED


class RewardedGroupsDaemon(AgentModeDaemon):
    def _without_reward(self) -> list[str]:
        return [rid for rid, r in self._completed_rollouts_v0.items() if r.final_reward is None]

    def _mean_reward(self) -> float:
        rewards = [r.final_reward for r in self._completed_rollouts_v0.values() if r.final_reward is not None]
        return float(np.mean(rewards)) if rewards else float("nan")

    def _shuffle_rewards(self, step: int) -> bool:
        """Permute this step's rewards across its rollouts when the control is on; True if it is."""
        seed = os.environ.get(SHUFFLE_SEED)
        if not seed:
            return False
        rollouts = sorted(
            self._completed_rollouts_v0.values(),
            key=lambda r: (str(self._task_id_to_original_sample[r.rollout_id]["data_id"]), r.rollout_id),
        )
        # The parent builds the batch's rewards from final_reward; None stays in place, so the
        # group drop below is the same as without the control.
        for rollout, reward in zip(rollouts, shuffle_rewards([r.final_reward for r in rollouts], seed=int(seed), step=step)):
            rollout.final_reward = reward
        return True

    def get_train_data_batch(self, max_prompt_length, max_response_length, device, global_steps):
        shuffled = self._shuffle_rewards(global_steps)
        missing = self._without_reward()
        dropped = {self._task_id_to_original_sample[rid]["data_id"] for rid in missing}
        batch, metrics = super().get_train_data_batch(max_prompt_length, max_response_length, device, global_steps)
        self._exact_rewards(batch)
        if dropped:
            groups = batch.non_tensor_batch["data_id_list"]
            # After the advantages are computed, Agent Lightning's trainer removes every sample
            # marked here (as it does with over-long prompts), so no sample of the group trains.
            drop = torch.from_numpy(np.isin(groups, list(dropped))).to(batch.batch["is_drop_mask"].device)
            if bool(drop.all()):
                raise RuntimeError(
                    f"step {global_steps}: no rollout of any task has a reward (see the runners' log lines "
                    "'no reward'); stopping instead of training on nothing. Rerun to resume from the last checkpoint."
                )
            batch.batch["is_drop_mask"] = batch.batch["is_drop_mask"] | drop
        metrics["training/reward"] = self._mean_reward()
        metrics["training/n_rollouts_without_reward"] = len(missing)
        metrics["training/n_groups_dropped"] = len(dropped)
        metrics["training/reward_shuffled"] = int(shuffled)
        return batch, metrics

    def _exact_rewards(self, batch) -> None:
        """Replace the bfloat16 rewards the parent placed on each sample's last response token by
        float32 ones (a reward of 0 has no position to find, and needs none)."""
        rounded = batch.batch["token_level_scores"]
        rewards = [self._fillna_reward(self._completed_rollouts_v0[rid]) for rid in batch.non_tensor_batch["rollout_id_list"]]
        exact = torch.tensor(rewards, dtype=torch.float32, device=rounded.device)
        batch.batch["token_level_scores"] = (rounded != 0).float() * exact.unsqueeze(-1)

    def get_test_metrics(self):
        metrics = super().get_test_metrics()
        metrics["val/reward"] = self._mean_reward()
        metrics["val/n_rollouts_without_reward"] = len(self._without_reward())
        return metrics
