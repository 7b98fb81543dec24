"""generate: results/models/step_N + a split's parquet -> results/eval/[test/]step_N/outputs.jsonl (draft and final per slice)."""

import logging

import torch

from audiobook_rl import backends, gpus, steps
from audiobook_rl.agent.episode import AgentPrompts
from audiobook_rl.dataset import read_tasks
from audiobook_rl.files import write_jsonl
from audiobook_rl.generation import generate_outputs
from audiobook_rl.stage import run

log = logging.getLogger("audiobook_rl.generate")


def main(smk):
    torch.set_num_threads(smk.threads)
    settings, step = smk.params.generate, smk.wildcards.step
    device = "cpu"
    if smk.resources.gpu > 0:
        # GPUs of this job alone (parallel generate jobs would otherwise all start on GPU 0)
        gpus.claim(smk.resources.gpu, "resources.generate.gpu", holder=f"generate step {step}")
        # counted without starting CUDA: vLLM's engine runs in a forked child that must be able to use it
        gpus.require_cuda(smk.resources.gpu, "resources.generate.gpu")
        device = "cuda"
    client = backends.get("generate", settings["backend"]).load()(smk.input.model, settings, device)
    prompts = AgentPrompts.load(smk.input.create_prompt, smk.input.rewrite_prompt)
    records = generate_outputs(client, read_tasks(smk.input.tasks), prompts, settings, steps.parse(step))
    write_jsonl(smk.output[0], records)
    ok = sum(r["final_notes"]["status"] != "invalid" for r in records)
    log.info("wrote %d outputs (%d final scripts readable) to %s", len(records), ok, smk.output[0])


run(main, snakemake)  # noqa: F821
