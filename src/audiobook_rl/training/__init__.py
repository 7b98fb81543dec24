"""Policy training (rule train_grpo) and checkpoint export (rule export_checkpoint).

Each training backend (:mod:`audiobook_rl.backends`: ``local``, ``verl``) has two functions:
``train_stage(job: TrainingJob) -> summary`` writes results/train/metrics.jsonl and summary.json;
``export_stage(job: ExportJob) -> step`` writes the Hugging Face directory of one saved step.
The local backend reads top to bottom in :mod:`.local_grpo` (objective in :mod:`.grpo`); the seed's
runs verl through Agent Lightning, in the package :mod:`.verl`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..agent.episode import AgentPrompts


@dataclass
class TrainingJob:
    """What rule train_grpo hands its backend."""

    settings: dict  # the `train` section
    judge: object  # the training reward, a judge built from `train.reward`
    prompts: "AgentPrompts"
    train_rows: list[dict]  # results/data/train.parquet
    val_rows: list[dict]
    policy_dir: str  # the policy training starts from: results/models/step_0, or step_sft after the warm start
    metrics_path: str  # results/train/metrics.jsonl
    summary_path: str  # results/train/summary.json
    fingerprint: str  # of settings and inputs: checkpoints of another fingerprint are discarded
    gpus: int  # the job's GPUs (0 = CPU)
    threads: int
    n_runners: int | None = None  # verl: rollouts at once


@dataclass
class ExportJob:
    """What rule export_checkpoint hands its backend."""

    step: str  # the {step} wildcard: a number or "best"
    summary_path: str  # results/train/summary.json
    base_dir: str  # results/models/step_0
    out_dir: str  # results/models/step_{step}
    log_file: str | None = None
