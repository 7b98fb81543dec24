"""Training steps as the workflow names them, and which of them is best.

``results/models/step_{step}/`` and ``results/eval/step_{step}/`` take a step number, ``best`` or
``sft``: :data:`WILDCARD` is the one constraint of the ``{step}`` wildcard, so every per-step rule
(export, generate, judge) accepts the same names. ``best`` is the best validation step of the
training run (``train/summary.json``: ``best_step``); ``sft`` is the policy after the supervised
warm start on the training references (rule sft_policy), where GRPO starts when ``sft.epochs`` > 0.

**Best** is one rule everywhere (training's ``best_step``, the report's best checkpoint, the run
index): the *trained* step with the highest score, the earlier step on ties (fewer updates for the
same score). Step 0, the base policy, is the baseline a checkpoint is compared against, never the
best: a run whose checkpoints all score below its baseline still names its best checkpoint, and the
change against the baseline is then negative.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from .errors import UserError

BEST = "best"
SFT = "sft"
WILDCARD = r"\d+|best|sft"


def parse(step: str) -> int | str:
    """A ``{step}`` wildcard as the stages record it: a number, ``"best"`` or ``"sft"``."""
    return step if step in (BEST, SFT) else int(step)


def order(step: int | str) -> tuple[int, int]:
    """Sort key of evaluated steps: the base policy (0), the warm start (``sft``), then training steps."""
    if step == SFT:
        return (1, 0)
    return (0, 0) if step == 0 else (2, int(step))


def best_step(values: Mapping[int, float | None], among: Iterable[int] | None = None) -> int | None:
    """The trained step (>= 1) with the highest value, the earliest on ties; None if no trained step
    has a value. ``among`` limits the candidates (the steps that have a checkpoint)."""
    allowed = None if among is None else set(among)
    candidates = {
        s: v for s, v in values.items() if s > 0 and v is not None and (allowed is None or s in allowed)
    }
    if not candidates:
        return None
    return max(candidates, key=lambda s: (candidates[s], -s))


def resolve(step: str | int, summary: dict) -> int:
    """The checkpoint ``step`` (a number or ``best``) names in a training summary; one sentence if
    training did not save it."""
    if step == BEST:
        if summary.get("best_step") is None:
            raise UserError(
                "step 'best': training logged no validation reward after step 0; lower 'train.test_freq' "
                "or raise 'train.total_steps'."
            )
        return int(summary["best_step"])
    n = int(step)
    if n != 0 and n not in summary["saved_steps"]:
        raise UserError(
            f"config key 'eval.steps': step {n} was not saved by training (saved: {summary['saved_steps']}); "
            "use multiples of 'train.save_freq' or the last step."
        )
    return n


def check_eval_steps(train: dict, eval_steps: list[int]) -> None:
    """Every evaluated step must be a step the training run saves (a multiple of save_freq, or the last)."""
    steps, every = train["total_steps"], train["save_freq"]
    bad = [s for s in eval_steps if s > steps or (s % every and s != steps)]
    if bad:
        raise UserError(
            f"config key 'eval.steps': {bad} are not saved by training; use multiples of 'train.save_freq' "
            f"({every}) up to 'train.total_steps' ({steps})."
        )
