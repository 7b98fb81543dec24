"""train_grpo: train/val parquet + base policy -> GRPO checkpoints, results/train/{metrics.jsonl,summary.json}.

Checkpoints go to results/train/checkpoints/step_N/ (not a declared output: Snakemake deletes the
outputs of a failed job, and a rerun resumes from them).
"""

import logging
import shutil
from pathlib import Path

import torch

from audiobook_rl import gpus
from audiobook_rl.agent import AgentPrompts
from audiobook_rl.files import read_parquet_rows, write_json
from audiobook_rl.judging import make_judge
from audiobook_rl.preflight import VERL_GPUS_FIX
from audiobook_rl.stage import run
from audiobook_rl.training import check_backend
from audiobook_rl.training.checkpoints import fingerprint
from audiobook_rl.training.local_grpo import train_local

log = logging.getLogger("audiobook_rl.train_grpo")


def device_for(n_gpus: int) -> str:
    """CUDA when the rule was given a GPU, else the CPU."""
    if n_gpus <= 0:
        return "cpu"
    gpus.claim(n_gpus, "resources.train_grpo.gpu", holder="train_grpo")
    gpus.require_cuda(n_gpus, "resources.train_grpo.gpu")
    return "cuda"


def main(smk):
    settings = smk.params.train
    backend = check_backend(settings)
    train_rows = read_parquet_rows(smk.input.train)
    val_rows = read_parquet_rows(smk.input.val)
    prompts = AgentPrompts.load(smk.input.create_prompt, smk.input.rewrite_prompt)
    # checkpoints of other settings or inputs are discarded, never resumed
    fp = fingerprint(settings, settings["reward"], [str(f) for f in smk.input])
    if backend == "verl":
        from audiobook_rl.training.verl_backend import train_stage, uses_local_ray

        if uses_local_ray(settings):
            # Ray starts here and takes the GPUs it sees: make those this job's own. (On a Ray
            # cluster the GPUs are the cluster's to assign.)
            gpus.claim(smk.resources.gpu, "train.gpus_per_node", holder="train_grpo (verl)", fix=VERL_GPUS_FIX)

        train_stage(settings, settings["reward"], smk.params.llm, prompts, train_rows, val_rows,
                    smk.input.policy, smk.output.metrics, smk.output.summary, fp, n_runners=smk.params.n_runners)
        return
    torch.set_num_threads(smk.threads)
    root = Path(smk.output.metrics).parent / "checkpoints"
    judge = make_judge(settings["reward"], smk.params.llm)
    summary = train_local(
        train_rows, val_rows, prompts, settings, judge, smk.input.policy, str(root), fp, device_for(smk.resources.gpu)
    )
    shutil.copyfile(root / "metrics.jsonl", smk.output.metrics)
    write_json(smk.output.summary, summary)
    log.info("best validation reward %.3f at step %s", summary["best_val_reward"], summary["best_step"])


run(main, snakemake)  # noqa: F821
