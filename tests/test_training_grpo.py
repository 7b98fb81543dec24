"""The GRPO objective against hand-computed numbers: asymmetric clip, dual clip, token mean,
group advantages with the unbiased std."""

import math

import pytest
import torch

from audiobook_rl.training.grpo import group_advantages, ppo_clip_loss

RATIOS = [0.5, 1.25, 1.5, 4.0, 10.0]  # the last token is masked out


def _case():
    old = torch.zeros(2, 5)
    logp = torch.log(torch.tensor([RATIOS, RATIOS])).requires_grad_(True)
    adv = torch.tensor([1.0, -1.0])
    mask = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 1, 0]], dtype=torch.float32)
    return logp, old, adv, mask


def test_loss_matches_hand_computation_with_asymmetric_and_dual_clip():
    logp, old, adv, mask = _case()
    loss, stats = ppo_clip_loss(logp, old, adv, mask, clip_low=0.2, clip_high=0.3, clip_c=3.0)
    # A = +1: -min(r, clip(r, 0.8, 1.3)) = -[0.5, 1.25, 1.3, 1.3]  (1.25 is inside the high bound 1.3)
    # A = -1: min(3, max(r, clip(r))) = [0.8, 1.25, 1.5, 3.0]       (dual clip caps 4.0 at c = 3)
    expected = (-(0.5 + 1.25 + 1.3 + 1.3) + (0.8 + 1.25 + 1.5 + 3.0)) / 8
    assert loss.item() == pytest.approx(expected)  # 0.275
    assert stats["clip_frac"] == pytest.approx(3 / 8)  # 1.5 and 4.0 for A > 0, 0.5 for A < 0
    assert stats["dual_clip_frac"] == pytest.approx(1 / 8)


def test_gradient_flows_only_through_unclipped_tokens():
    logp, old, adv, mask = _case()
    loss, _ = ppo_clip_loss(logp, old, adv, mask, clip_low=0.2, clip_high=0.3, clip_c=3.0)
    loss.backward()
    # d(-A r)/d logp = -A r / N on unclipped tokens, 0 where a clip (or the mask) applies
    expected = torch.tensor([[-0.5, -1.25, 0, 0, 0], [0, 1.25, 1.5, 0, 0]]) / 8
    assert torch.allclose(logp.grad, expected, atol=1e-6)


def test_symmetric_clip_would_differ():
    logp, old, adv, mask = _case()
    symmetric, _ = ppo_clip_loss(logp, old, adv, mask, clip_low=0.2, clip_high=0.2, clip_c=3.0)
    asymmetric, _ = ppo_clip_loss(logp, old, adv, mask, clip_low=0.2, clip_high=0.3, clip_c=3.0)
    assert symmetric.item() == pytest.approx(asymmetric.item() + (0.05 + 0.1 + 0.1) / 8)


def test_ratio_one_gives_policy_gradient_loss():
    logp = torch.randn(3, 4)
    adv = torch.tensor([0.5, -1.0, 2.0])
    mask = torch.ones(3, 4)
    loss, stats = ppo_clip_loss(logp, logp.clone(), adv, mask)
    assert loss.item() == pytest.approx(-adv.mean().item())
    assert stats["clip_frac"] == 0 and stats["ratio_mean"] == pytest.approx(1.0)


def test_token_mean_weights_long_responses_more():
    logp = torch.zeros(2, 4)
    mask = torch.tensor([[1, 1, 1, 1], [1, 0, 0, 0]], dtype=torch.float32)
    loss, _ = ppo_clip_loss(logp, logp, torch.tensor([1.0, -1.0]), mask)
    assert loss.item() == pytest.approx((-4 + 1) / 5)  # not the sequence mean (-1 + 1) / 2


def test_group_advantages_use_unbiased_std_per_group():
    rewards = [1.0, 0.0, 1.0, 0.0, 0.3, 0.3, 0.7]
    groups = ["a", "a", "a", "a", "b", "b", "c"]
    adv = group_advantages(rewards, groups)
    std = math.sqrt(sum((r - 0.5) ** 2 for r in rewards[:4]) / 3)  # Bessel's correction, as torch.std
    assert adv[:4] == pytest.approx([0.5 / (std + 1e-6), -0.5 / (std + 1e-6)] * 2)
    assert adv[4:6] == [0.0, 0.0]  # no spread, no signal
    assert adv[6] == pytest.approx(0.7 / (1 + 1e-6))  # a lone sample: mean 0, std 1, as verl


@pytest.mark.parametrize("by_std", [True, False])
def test_group_advantages_are_verls_with_and_without_the_std(by_std):
    import numpy as np
    from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage

    rewards = [0.501, 0.502, 0.503, 0.504, 0.9, 0.1, 0.5, 0.7]  # near-equal rewards, then a spread group
    groups = ["a"] * 4 + ["b"] * 4
    theirs, _ = compute_grpo_outcome_advantage(torch.tensor(rewards).unsqueeze(-1), torch.ones(8, 1),
                                               np.array(groups, dtype=object), norm_adv_by_std_in_grpo=by_std)
    ours = group_advantages(rewards, groups, by_std=by_std)
    assert ours == pytest.approx(theirs[:, 0].tolist(), abs=1e-4)  # verl computes in float32
    # With the std, rewards a thousandth apart become advantages of about ±1; without it they stay thousandths.
    assert max(map(abs, ours[:4])) == (pytest.approx(1.16, abs=0.01) if by_std else pytest.approx(0.0015, abs=1e-6))


def test_both_calls_of_an_episode_share_the_group_and_advantage():
    from audiobook_rl.agent.episode import Call, Episode, Reply
    from audiobook_rl.training.local_grpo import episode_rows

    def episode(task, reward):
        calls = [Call("create", [], Reply("d", [1, 2], [3])), Call("rewrite", [], Reply("f", [4, 5], [6, 7]))]
        return Episode(task, calls, reward)

    episodes = [episode("t1", r) for r in (1.0, 0.0, 0.5, 0.5)] + [episode("t2", r) for r in (0.2, 0.4, None, 0.4)]
    rows = episode_rows(episodes, [e.task_id for e in episodes], [e.reward for e in episodes])
    # a judge failure (None) is no reward of 0: its whole group (t2) stays out of the update
    assert {r.group for r in rows} == {"t1"}
    assert len(rows) == 8 and [r.response_ids for r in rows[:2]] == [[3], [6, 7]]
    # group t1 = 8 rows (4 episodes x 2 calls): mean 0.5, unbiased std over the 8 duplicated rewards
    std = math.sqrt((2 * 0.25 + 2 * 0.25) / 7)
    assert rows[0].advantage == rows[1].advantage == pytest.approx(0.5 / (std + 1e-6))
    assert rows[2].advantage == rows[3].advantage == pytest.approx(-0.5 / (std + 1e-6))


def test_kl_to_the_start_policy_is_verls_low_var_kl():
    from verl.trainer.ppo.core_algos import kl_penalty_forward

    from audiobook_rl.training.grpo import kl_low_var

    torch.manual_seed(0)
    logp, ref = -torch.rand(4, 9) * 5, -torch.rand(4, 9) * 5
    ref[0, 0] = logp[0, 0] - 30  # far apart: both clamp
    assert torch.allclose(kl_low_var(logp, ref), kl_penalty_forward(logp, ref, "low_var_kl"))
    assert torch.equal(kl_low_var(logp, logp), torch.zeros_like(logp))  # no distance to itself
    assert (kl_low_var(logp, ref) >= 0).all()
