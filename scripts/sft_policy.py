"""sft_policy: the base policy + the training references -> results/models/step_sft/ (a supervised warm start)."""

import logging

import torch

from audiobook_rl import gpus
from audiobook_rl.agent.episode import AgentPrompts
from audiobook_rl.dataset import read_tasks
from audiobook_rl.files import write_json
from audiobook_rl.policy.warmstart import warm_start_policy
from audiobook_rl.stage import run

log = logging.getLogger("audiobook_rl.sft_policy")


def main(smk):
    device = "cpu"
    if smk.resources.gpu > 0:
        gpus.claim(smk.resources.gpu, "resources.sft_policy.gpu", holder="sft_policy")
        gpus.require_cuda(smk.resources.gpu, "resources.sft_policy.gpu")
        device = "cuda"
    torch.set_num_threads(smk.threads)
    prompts = AgentPrompts.load(smk.input.create_prompt, smk.input.rewrite_prompt)

    def progress(step, loss, seconds):
        log.info("step %d: loss %.3f (%.1f s)", step, loss, seconds)

    summary = warm_start_policy(smk.input.policy, read_tasks(smk.input.train), prompts, smk.params.sft,
                                smk.output[0], device, progress)
    write_json(f"{smk.output[0]}/sft.json", summary)
    log.info("wrote %s: %s", smk.output[0], summary)


run(main, snakemake)  # noqa: F821
