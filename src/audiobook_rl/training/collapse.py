"""When training has nothing left to learn from: the collapse guard of train_grpo, and the report's verdict.

GRPO learns only from differences between the episodes of one task. A step gives no signal when
no sampled final script parses (every reward is 0) or when every task's episodes got the same
reward (every advantage is 0). A pretrained policy sampled too hot reaches that state within a few
steps and never leaves it; training on is GPU time spent on zero gradients.

Ties near the judge's maximum are no collapse: the training tasks are learned. A warm start on them
gets there in a few steps and then samples one script per task, the same four times, which the judge
scores at 0.99 to 1.0 (not always exactly 1.0: a pause or a tone off the reference). Such steps teach
nothing either, but the run goes on and says so.
"""

from __future__ import annotations

ADVICE = (
    "lower train.rollout.temperature (e.g. 0.7) or set train.rollout.top_p (e.g. 0.9), or lower train.lr, "
    "then run again (set train.collapse_patience to 0 to train on regardless)"
)


# A mean training reward this high, with no spread, is a learned step: every task's episodes tie at or
# near the judge's maximum. Warm-started runs on one GPU tie at 0.987-1.000 step after step; a policy
# that collapsed from sampling too hot ties far below (at 0: nothing parses).
SATURATED = 0.95


def no_spread(record: dict) -> bool:
    """Whether every task's episodes got the same reward in the step: the local backend logs the
    spread itself (``train_reward_group_std``), verl the range of the advantages, which GRPO makes 0
    for a task whose episodes tie (``advantage_max``, ``advantage_min``)."""
    if "train_reward_group_std" in record:
        return record["train_reward_group_std"] == 0
    if "advantage_max" in record and "advantage_min" in record:
        return abs(record["advantage_max"]) < 1e-6 and abs(record["advantage_min"]) < 1e-6
    return False


def saturated_step(record: dict) -> bool:
    """Whether every task's episodes tied at or near the judge's maximum (the tasks are learned)."""
    return no_spread(record) and record.get("train_reward", 0.0) >= SATURATED


def dead_step(record: dict) -> str | None:
    """Why the metrics line of one training step carries no learning signal, or None if it does (or
    if it carries none because the tasks are learned: see :func:`saturated_step`)."""
    if record.get("train_json_valid") == 0:
        return "no sampled final script was valid JSON"
    if no_spread(record) and not saturated_step(record):
        return "every task's episodes got the same reward"
    return None


def _first_run(records: list[dict], patience: int, test) -> dict | None:
    """The training step's line that ends the first ``patience`` lines in a row passing ``test``."""
    if patience <= 0:
        return None
    run = 0
    for record in records:
        if "train_reward" not in record:
            continue  # step 0: validation only
        run = run + 1 if test(record) else 0
        if run >= patience:
            return record
    return None


def collapse(records: list[dict], patience: int) -> tuple[int, str] | None:
    """The first step that ends ``patience`` dead training steps in a row, and why; None if none does."""
    record = _first_run(records, patience, dead_step)
    return (record["step"], dead_step(record)) if record else None


def saturation(records: list[dict], patience: int) -> int | None:
    """The first step that ends ``patience`` learned steps in a row (:func:`saturated_step`); None if none does."""
    record = _first_run(records, patience, saturated_step)
    return record["step"] if record else None
