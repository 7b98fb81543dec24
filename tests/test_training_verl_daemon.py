"""Rollouts without a reward (a judge that kept failing, a skipped over-long call) never become a
0 reward: Agent Lightning's own batch building, with their task's whole group marked for the drop
that its trainer applies after the advantages, and the rewards averaged over real ones only."""

from __future__ import annotations

import math

import pytest
import torch


from agentlightning import RolloutLegacy, Triplet  # noqa: E402
from agentlightning.verl.daemon import AgentModeDaemon  # noqa: E402

from audiobook_rl.training.verl.daemon import RewardedGroupsDaemon  # noqa: E402

# Two tasks (groups) of two rollouts each, create + rewrite per rollout: task B's judge failed once.
REWARDS = {("A", 0): 0.75, ("A", 1): 0.25, ("B", 0): 0.5, ("B", 1): None}


def daemon(cls, is_train=True, rewards=REWARDS):
    d = cls.__new__(cls)  # no store, proxy or server: only the batch building is exercised
    d.mode, d.trace_aggregator, d.pad_token_id, d.reward_fillna_value = "v1", {"level": "transition"}, 0, 0.0
    d._use_mrope, d.processor, d.is_train = False, None, is_train
    d._completed_rollouts_v0, d._task_id_to_original_sample = {}, {}
    for (task, k), reward in rewards.items():
        rid = f"{task}{k}"
        d._task_id_to_original_sample[rid] = {"data_id": task, "data_source": "audiobook"}
        triplets = [Triplet(prompt={"token_ids": [1, 2, 3]}, response={"token_ids": [4, 5]}, reward=None),
                    Triplet(prompt={"token_ids": [1, 2, 3, 4]}, response={"token_ids": [6, 7]}, reward=reward)]
        d._completed_rollouts_v0[rid] = RolloutLegacy(rollout_id=rid, final_reward=reward, triplets=triplets)
    d._total_tasks_queued = len(rewards)
    return d


def train_batch(cls, rewards=REWARDS):
    batch, metrics = daemon(cls, rewards=rewards).get_train_data_batch(16, 8, torch.device("cpu"), global_steps=7)
    groups = list(batch.non_tensor_batch["data_id_list"])
    dropped = batch.batch["is_drop_mask"].tolist()
    return groups, dropped, metrics


def test_a_group_with_a_rollout_without_reward_leaves_the_update_and_is_counted():
    groups, dropped, metrics = train_batch(RewardedGroupsDaemon)
    assert [g for g, d in zip(groups, dropped) if d] == ["B"] * 4  # both rollouts of B, both calls each
    assert not any(d for g, d in zip(groups, dropped) if g == "A")
    assert metrics["training/n_groups_dropped"] == 1 and metrics["training/n_rollouts_without_reward"] == 1
    assert metrics["training/reward"] == pytest.approx((0.75 + 0.25 + 0.5) / 3)  # real rewards only


def test_agent_lightning_alone_would_train_on_a_made_up_zero():
    groups, dropped, metrics = train_batch(AgentModeDaemon)
    assert not any(dropped)
    assert metrics["training/reward"] == pytest.approx((0.75 + 0.25 + 0.5 + 0.0) / 4)


def test_the_validation_reward_is_the_mean_of_real_rewards():
    metrics = daemon(RewardedGroupsDaemon, is_train=False).get_test_metrics()
    assert metrics["val/reward"] == pytest.approx(0.5) and metrics["val/n_rollouts_without_reward"] == 1


def test_a_step_where_no_task_has_a_reward_stops_instead_of_training_on_nothing():
    none = {key: None for key in REWARDS}
    with pytest.raises(RuntimeError, match="no rollout of any task has a reward"):
        train_batch(RewardedGroupsDaemon, none)
    assert math.isnan(daemon(RewardedGroupsDaemon, is_train=False, rewards=none).get_test_metrics()["val/reward"])


def test_the_shuffled_reward_control_permutes_the_step_rewards_before_the_batch(monkeypatch):
    from audiobook_rl.compare.control import shuffle_rewards
    from audiobook_rl.training.verl.environment import SHUFFLE_SEED, training_env

    assert SHUFFLE_SEED not in training_env("log.jsonl") and training_env("log.jsonl", 1)[SHUFFLE_SEED] == "1"
    monkeypatch.setenv(SHUFFLE_SEED, "1")
    d = daemon(RewardedGroupsDaemon)
    batch, metrics = d.get_train_data_batch(16, 8, torch.device("cpu"), global_steps=7)
    # rollouts in (task, rollout id) order: A0, A1, B0, B1; B1's failure (None) stays in place
    order = ["A0", "A1", "B0", "B1"]
    expected = shuffle_rewards([REWARDS[(r[0], int(r[1]))] for r in order], seed=1, step=7)
    assert [d._completed_rollouts_v0[r].final_reward for r in order] == expected == [0.25, 0.5, 0.75, None]
    # the batch's rewards are the permuted ones, on both calls of each rollout (the judge's: 0.75, 0.75, 0.25, 0.25)
    rewards = batch.batch["token_level_scores"].sum(dim=-1).tolist()
    groups = list(batch.non_tensor_batch["data_id_list"])
    assert [r for r, g in zip(rewards, groups) if g == "A"] == [0.25, 0.25, 0.5, 0.5]
    dropped = batch.batch["is_drop_mask"].tolist()
    assert [g for g, x in zip(groups, dropped) if x] == ["B"] * 4  # the group drop is as without the control
    assert metrics["training/reward_shuffled"] == 1
    assert metrics["training/reward"] == pytest.approx((0.75 + 0.25 + 0.5) / 3)


def test_without_the_seed_the_rewards_are_the_judge_s():
    d = daemon(RewardedGroupsDaemon)
    _, metrics = d.get_train_data_batch(16, 8, torch.device("cpu"), global_steps=7)
    assert [d._completed_rollouts_v0[r].final_reward for r in ("A0", "A1", "B0", "B1")] == [0.75, 0.25, 0.5, None]
    assert metrics["training/reward_shuffled"] == 0


# Judge scores 0.001 apart: bfloat16 (8 bits of mantissa) holds about 0.002 near 0.5.
CLOSE = {("A", k): 0.501 + 0.001 * k for k in range(4)}


def grpo_advantages(cls, rewards=CLOSE):
    """The batch's rewards and verl's GRPO advantages of it, computed as Agent Lightning's trainer does."""
    from verl.trainer.ppo.ray_trainer import compute_advantage, compute_response_mask

    batch, _ = daemon(cls, rewards=rewards).get_train_data_batch(16, 8, torch.device("cpu"), global_steps=1)
    batch.non_tensor_batch["uid"] = batch.non_tensor_batch["data_id_list"]
    batch.batch["response_mask"] = compute_response_mask(batch)
    batch.batch["token_level_rewards"] = batch.batch["token_level_scores"]
    batch = compute_advantage(batch, adv_estimator="grpo", num_repeat=4, norm_adv_by_std_in_grpo=True)
    return batch.batch["token_level_scores"].sum(-1), batch.batch["advantages"][:, 0]


def test_rewards_reach_the_grpo_advantage_in_float32():
    from audiobook_rl.training.grpo import group_advantages

    rewards, advantages = grpo_advantages(RewardedGroupsDaemon)
    judged = [CLOSE[("A", k)] for k in range(4) for _call in range(2)]  # create and rewrite share the reward
    assert rewards.dtype == torch.float32 and rewards.tolist() == pytest.approx(judged, abs=1e-6)
    # the advantages the local backend computes from the same rewards (float64)
    assert advantages.tolist() == pytest.approx(group_advantages(judged, ["A"] * 8), abs=1e-4)


def test_agent_lightning_alone_rounds_the_rewards_to_bfloat16():
    from audiobook_rl.training.grpo import group_advantages

    rewards, advantages = grpo_advantages(AgentModeDaemon)
    judged = [CLOSE[("A", k)] for k in range(4) for _call in range(2)]
    assert rewards.dtype == torch.bfloat16
    assert advantages.tolist() != pytest.approx(group_advantages(judged, ["A"] * 8), abs=0.1)
