"""The training's own per-step record (results/train/steps.jsonl) → our results/train/metrics.jsonl rows.

verl's file logger is no use here: it buffers its file by blocks (a killed run leaves the last
steps, or all of them, unwritten), truncates it at every start, and its only time per step
(``timing_s/step``) leaves out the step's validation and checkpoint. So the trainer
(:mod:`.trainer`) hands every metrics dict that verl's ``Tracking`` logs to :class:`StepRecord`,
which writes ``{"step": N, "seconds": s, "data": {...}}`` lines:

- each line reaches the disk when its step is logged (written, flushed and synced);
- one line per step: a step logged again (the validation of the step a resumed run starts from)
  updates its line, and a resumed run first drops the lines of the steps it will redo (:func:`keep_steps`);
- ``seconds`` is the wall time from the end of the previous logged step (or of the validation a
  run starts with) to the end of this one: rollouts, update and validation together; the checkpoint
  written after a step is logged (:mod:`.trainer`) is no part of it, nor of the next step's.

Key names are those of Agent Lightning 0.3.0's trainer and daemon on verl 0.6.1
(``agentlightning/verl/trainer.py``, ``daemon.py``, ``verl/workers/actor/dp_actor.py``).
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

from ...files import read_jsonl, write_text

# our key -> verl keys, first present wins (Agent Lightning logs lengths with a suffix).
_MAIN = {
    "train_reward": ("training/reward",),
    "val_reward": ("val/reward",),
    "loss": ("actor/pg_loss",),
    "clip_frac": ("actor/pg_clipfrac",),
    "response_length": ("response_length/mean_after_processing", "response_length/mean"),
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
    # the range of the step's GRPO advantages: both 0 when every task's rollouts got the same reward
    "advantage_max": "critic/advantages/max_after_processing",
    "advantage_min": "critic/advantages/min_after_processing",
}
# In every metrics dict of Agent Lightning's training loop, and in none of its validation before the loop.
TRAINING_STEP = "training/global_step"


class StepRecord:
    """Writes the record at ``path``, one line per logged step (see the module's docstring)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.since = time.monotonic()

    def restart_clock(self) -> None:
        """Start the next step's ``seconds`` now (after work that belongs to no step)."""
        self.since = time.monotonic()

    def log(self, step: int, data: dict) -> None:
        now = time.monotonic()
        line = {"step": int(step), "data": data}
        if TRAINING_STEP in data:
            line["seconds"] = now - self.since
        self.since = now
        lines = read_jsonl(self.path, problems=[]) if self.path.is_file() else []
        if lines and lines[-1]["step"] == line["step"]:
            # The same step again: merge into its line (the first one's seconds stay) and rewrite the file.
            lines[-1] = {**line, **lines[-1], "data": {**lines[-1]["data"], **data}}
            write_text(self.path, "".join(_json(entry) + "\n" for entry in lines))
            return
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(_json(line) + "\n")
            f.flush()
            os.fsync(f.fileno())


def keep_steps(path: str | Path, up_to: int) -> None:
    """Drop the lines of steps after ``up_to`` (the step a resumed run continues from), and any line
    a kill cut short; nothing to do without a record."""
    path = Path(path)
    if path.is_file():
        kept = [entry for entry in read_jsonl(path, problems=[]) if int(entry["step"]) <= up_to]
        write_text(path, "".join(_json(entry) + "\n" for entry in kept))


def read_record(path: str | Path) -> list[dict]:
    """Our metrics rows, one per step in step order, from the record at ``path`` (none if it is missing)."""
    path = Path(path)
    if not path.is_file():
        return []
    by_step: dict[int, dict] = {}
    # A line cut short by a kill is skipped: the step is redone after the resume.
    for entry in read_jsonl(path, problems=[]):
        row = convert_step(entry["step"], entry.get("data", {}))
        if _number(entry.get("seconds")):
            row["seconds"] = float(entry["seconds"])
        by_step[row["step"]] = {**by_step.get(row["step"], {}), **row}
    return [by_step[s] for s in sorted(by_step)]


def convert_step(step: int, data: dict) -> dict:
    """One of our metrics rows from one step's verl metrics; keys verl did not log are left out."""
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


def _json(entry: dict) -> str:
    # verl's metrics are floats and ints, some of them numpy or torch scalars.
    return json.dumps(entry, default=lambda value: value.item() if hasattr(value, "item") else str(value))


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
