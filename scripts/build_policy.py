"""build_policy: corpus + validation and test splits -> results/models/step_0/ (the embedded base policy)."""

import logging

import torch

from audiobook_rl.agent.episode import AgentPrompts
from audiobook_rl.corpus import read_text
from audiobook_rl.dataset import read_tasks
from audiobook_rl.policy.build import build_policy, copy_pretrained
from audiobook_rl.stage import run

log = logging.getLogger("audiobook_rl.build_policy")


def main(smk):
    if smk.params.policy["pretrained"]:
        # The seed starts from a released chat model: step_0 is that model, saved as-is.
        copy_pretrained(smk.params.policy["pretrained"], smk.output[0])
        log.info("wrote %s from %s", smk.output[0], smk.params.policy["pretrained"])
        return
    torch.set_num_threads(smk.threads)
    corpus_text, _ = read_text(smk.input.corpus)
    # The warm start stays off the held-out text (validation and test): the tasks carry their offsets.
    held_out = [(task.start, task.end) for part in (smk.input.val, smk.input.test) for task in read_tasks(part)]
    prompts = AgentPrompts.load(smk.input.create_prompt, smk.input.rewrite_prompt)
    summary = build_policy(corpus_text, held_out, prompts, smk.params.policy, smk.output[0],
                           context_chars=smk.params.context_chars)
    log.info("wrote %s: %s", smk.output[0], summary)


run(main, snakemake)  # noqa: F821
