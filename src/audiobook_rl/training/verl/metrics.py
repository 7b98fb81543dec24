"""verl's step metrics (its ``file`` logger's JSON lines) → our results/train/metrics.jsonl rows.

verl's file logger writes ``{"step": N, "data": {"training/reward": …, "actor/pg_loss": …}}`` and
truncates its file when a run starts, so every (resumed) attempt logs to a file of its own; the
attempts are read in order and a step logged again by a later attempt replaces the earlier line.
Key names are those of Agent Lightning 0.3.0's trainer and daemon on verl 0.6.1
(``agentlightning/verl/trainer.py``, ``daemon.py``, ``verl/workers/actor/dp_actor.py``).
"""

from __future__ import annotations

import math
from pathlib import Path

from ...files import read_jsonl

# our key -> verl keys, first present wins (Agent Lightning logs lengths with a suffix).
_MAIN = {
    "train_reward": ("training/reward",),
    "val_reward": ("val/reward",),
    "loss": ("actor/pg_loss",),
    "clip_frac": ("actor/pg_clipfrac",),
    "response_length": ("response_length/mean_after_processing", "response_length/mean"),
    "seconds": ("timing_s/step",),
}
_EXTRA = {
    "grad_norm": "actor/grad_norm",
    "lr": "actor/lr",
    "ppo_kl": "actor/ppo_kl",
    "entropy": "actor/entropy_loss",
    "score_mean": "critic/score/mean_after_processing",
    "n_triplets": "training/n_triplets",
    "n_rollouts_w_reward": "training/n_rollouts_w_reward",
    "val_n_rollouts": "val/n_rollouts",
    "val_n_rollouts_w_reward": "val/n_rollouts_w_reward",
    # rollouts without a reward and the groups that left the update for them (training.verl.daemon)
    "rollouts_without_reward": "training/n_rollouts_without_reward",
    "groups_dropped": "training/n_groups_dropped",
    "val_rollouts_without_reward": "val/n_rollouts_without_reward",
    # 1 when the step's rewards were permuted across its rollouts (train.reward.shuffle)
    "reward_shuffled": "training/reward_shuffled",
    "epoch": "training/epoch",
}


def convert_step(step: int, data: dict) -> dict:
    """One of our metrics rows from one verl log line; keys verl did not log are left out."""
    row: dict = {"step": int(step)}
    for ours, theirs in _MAIN.items():
        for key in theirs:
            if _number(data.get(key)):
                row[ours] = float(data[key])
                break
    for ours, key in _EXTRA.items():
        if _number(data.get(key)):
            row[ours] = float(data[key])
    return row


def convert_logs(paths: list[str | Path]) -> list[dict]:
    """Our rows, one per step, from verl log files in attempt order (a later attempt wins a step)."""
    by_step: dict[int, dict] = {}
    for path in paths:
        # A line cut short by a crash is skipped: the step is redone after resume.
        for entry in read_jsonl(path, problems=[]):
            step = int(entry["step"])
            row = convert_step(step, entry.get("data", {}))
            # A step's validation and training metrics arrive in one line, but keep both if a
            # resumed attempt re-logs only part of a step (e.g. the step-0 validation).
            by_step[step] = {**by_step.get(step, {}), **row}
    return [by_step[s] for s in sorted(by_step)]


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
