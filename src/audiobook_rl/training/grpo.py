"""The GRPO objective as verl computes it (``verl/trainer/ppo/core_algos.py``), for the local backend.

- advantage: within each group (all calls of all rollouts of one task), ``(r - mean) / (std + eps)``
  with the unbiased std (``torch.std``), as ``compute_grpo_outcome_advantage`` with
  ``norm_adv_by_std_in_grpo=True`` (a group of one keeps its reward, as there); with
  ``train.norm_adv_by_std: false`` (verl's ``norm_adv_by_std_in_grpo=False``), ``r - mean`` only, so
  rewards that differ by thousandths give advantages of thousandths, not ±1;
- loss: vanilla PPO clip with asymmetric bounds ``[1 - clip_low, 1 + clip_high]``, the dual-clip
  bound ``clip_ratio_c`` for negative advantages, aggregated as the mean over all response tokens
  (``loss_agg_mode="token-mean"``); no entropy bonus. The seed has no KL term; ``train.kl_coef`` > 0
  adds verl's KL loss to the policy GRPO started from (``use_kl_loss`` with ``kl_loss_type:
  low_var_kl``: :func:`kl_low_var`, the same token-mean).
"""

from __future__ import annotations

from collections import defaultdict

import torch


def group_advantages(rewards: list[float], groups: list[str], eps: float = 1e-6, by_std: bool = True) -> list[float]:
    """GRPO outcome advantages: each reward less its group's mean, divided by the group's unbiased
    std unless ``by_std`` is off."""
    by_group: dict[str, list[int]] = defaultdict(list)
    for i, g in enumerate(groups):
        by_group[g].append(i)
    out = [0.0] * len(rewards)
    for idx in by_group.values():
        r = torch.tensor([rewards[i] for i in idx], dtype=torch.float64)
        if len(idx) == 1:  # verl: a lone sample gets mean 0 and std 1, i.e. keeps its reward
            mean, std = torch.tensor(0.0, dtype=torch.float64), torch.tensor(1.0, dtype=torch.float64)
        else:
            mean, std = r.mean(), r.std()
        for k, i in enumerate(idx):
            out[i] = float((r[k] - mean) / (std + eps)) if by_std else float(r[k] - mean)
    return out


def ppo_clip_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_low: float = 0.2,
    clip_high: float = 0.3,
    clip_c: float = 3.0,
) -> tuple[torch.Tensor, dict]:
    """Token-mean PPO-clip loss with dual clip; ``advantages`` is per row (B) or per token (B × T).

    Returns the loss and statistics: ``clip_frac`` (share of tokens where the clipped term was
    taken), ``dual_clip_frac`` and ``ratio_mean``.
    """
    if advantages.dim() == 1:
        advantages = advantages.unsqueeze(-1).expand_as(logp)
    # Clamped as in verl, so a stale sample cannot overflow exp().
    ratio = torch.exp(torch.clamp(logp - old_logp, -20.0, 20.0))
    loss1 = -advantages * ratio
    loss2 = -advantages * torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high)
    clipped = torch.maximum(loss1, loss2)
    loss3 = -advantages * clip_c
    dual = torch.minimum(loss3, clipped)
    per_token = torch.where(advantages < 0, dual, clipped)
    n = mask.sum().clamp(min=1.0)
    loss = (per_token * mask).sum() / n
    with torch.no_grad():
        stats = {
            "clip_frac": float(((loss2 > loss1).float() * mask).sum() / n),
            "dual_clip_frac": float((((loss3 < clipped) & (advantages < 0)).float() * mask).sum() / n),
            "ratio_mean": float((ratio * mask).sum() / n),
        }
    return loss, stats


def kl_low_var(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """Per-token KL estimate to the reference policy, verl's ``low_var_kl`` (k3, Schulman 2020):
    ``exp(ref - logp) - (ref - logp) - 1``, clamped as verl clamps it. Non-negative, and unbiased for
    KL(π ‖ π_ref) on tokens sampled from π."""
    kl = torch.clamp(ref_logp - logp, min=-20.0, max=20.0)
    return torch.clamp(torch.exp(kl) - kl - 1.0, min=-10.0, max=10.0)
