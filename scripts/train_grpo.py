"""train_grpo: train/val parquet + base policy -> GRPO checkpoints, results/train/{metrics.jsonl,summary.json}.

Checkpoints go to results/train/checkpoints/ (not a declared output: Snakemake deletes the outputs
of a failed job, and a rerun resumes from them).
"""

import logging

from audiobook_rl import backends
from audiobook_rl.agent.episode import AgentPrompts
from audiobook_rl.files import read_parquet_rows
from audiobook_rl.stage import run
from audiobook_rl.training import TrainingJob
from audiobook_rl.training.checkpoints import fingerprint

log = logging.getLogger("audiobook_rl.train_grpo")


def main(smk):
    settings = smk.params.train
    train = backends.get("train", settings["backend"]).load()
    # The reward judge is built first: a missing key fails here, before any model loads. Its section
    # is a judge's, plus the shuffled-reward switch, which is training's (the loop reads it).
    reward = {key: value for key, value in settings["reward"].items() if key != "shuffle"}
    judge = backends.get("train.reward", reward["backend"]).load()(reward, smk.params.llm)
    train(TrainingJob(
        settings=settings,
        judge=judge,
        prompts=AgentPrompts.load(smk.input.create_prompt, smk.input.rewrite_prompt),
        train_rows=read_parquet_rows(smk.input.train),
        val_rows=read_parquet_rows(smk.input.val),
        policy_dir=smk.input.policy,
        metrics_path=smk.output.metrics,
        summary_path=smk.output.summary,
        # checkpoints of other settings or inputs are discarded, never resumed
        fingerprint=fingerprint(settings, settings["reward"], [str(f) for f in smk.input]),
        gpus=smk.resources.gpu,
        threads=smk.threads,
        n_runners=smk.params.n_runners,
    ))


run(main, snakemake)  # noqa: F821
