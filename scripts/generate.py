"""generate: results/models/step_N + a split's parquet -> results/eval/[test/]step_N/outputs.jsonl (draft and final per slice)."""

import logging

import torch

from audiobook_rl import backends, steps
from audiobook_rl.agent.episode import AgentPrompts
from audiobook_rl.dataset import read_tasks
from audiobook_rl.files import write_jsonl
from audiobook_rl.generation import generate_stage
from audiobook_rl.stage import run

log = logging.getLogger("audiobook_rl.generate")


def main(smk):
    torch.set_num_threads(smk.threads)
    settings, step = smk.params.generate, smk.wildcards.step
    prompts = AgentPrompts.load(smk.input.create_prompt, smk.input.rewrite_prompt)
    # on GPUs of this job alone (parallel generate jobs would otherwise all start on GPU 0)
    records = generate_stage(backends.get("generate", settings["backend"]).load(), smk.input.model,
                             read_tasks(smk.input.tasks), prompts, settings, steps.parse(step),
                             n_gpus=smk.resources.gpu, holder=f"generate step {step}")
    write_jsonl(smk.output[0], records)
    ok = sum(r["final_notes"]["status"] != "invalid" for r in records)
    log.info("wrote %d outputs (%d final scripts readable) to %s", len(records), ok, smk.output[0])


run(main, snakemake)  # noqa: F821
