"""When training has nothing left to learn from: the collapse guard of train_grpo, and the report's verdict.

GRPO learns only from differences between the episodes of one task. A step gives no signal when
no sampled final script parses (every reward is 0) or when every task's episodes got the same
reward (every advantage is 0). A pretrained policy sampled too hot reaches that state within a few
steps and never leaves it; training on is GPU time spent on zero gradients.
"""

from __future__ import annotations

ADVICE = (
    "lower train.rollout.temperature (e.g. 0.7) or set train.rollout.top_p (e.g. 0.9), or lower train.lr, "
    "then run again (set train.collapse_patience to 0 to train on regardless)"
)


def dead_step(record: dict) -> str | None:
    """Why the metrics line of one training step carries no learning signal, or None if it does."""
    if record.get("train_json_valid") == 0:
        return "no sampled final script was valid JSON"
    if record.get("train_reward_group_std") == 0:
        return "every task's episodes got the same reward"
    return None


def collapse(records: list[dict], patience: int) -> tuple[int, str] | None:
    """The first step that ends ``patience`` dead training steps in a row, and why; None if none does."""
    if patience <= 0:
        return None
    run = 0
    for record in records:
        if "train_reward" not in record:
            continue  # step 0: validation only
        reason = dead_step(record)
        run = run + 1 if reason else 0
        if run >= patience:
            return record["step"], reason
    return None
