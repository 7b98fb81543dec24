"""build_policy: corpus + validation slices -> results/models/step_0/ (the embedded base policy)."""

import logging

import torch

from audiobook_rl.agent import AgentPrompts
from audiobook_rl.corpus import read_text
from audiobook_rl.files import read_jsonl, read_parquet_rows
from audiobook_rl.policy import build_policy, copy_pretrained
from audiobook_rl.stage import run

log = logging.getLogger("audiobook_rl.build_policy")


def main(smk):
    if smk.params.policy.get("pretrained"):
        # The seed starts from a released chat model: step_0 is that model, saved as-is.
        copy_pretrained(smk.params.policy["pretrained"], smk.output[0])
        log.info("wrote %s from %s", smk.output[0], smk.params.policy["pretrained"])
        return
    torch.set_num_threads(smk.threads)
    corpus_text, _ = read_text(smk.input.corpus)
    offsets = {s["id"]: (s["start"], s["end"]) for s in read_jsonl(smk.input.slices)}
    val_ids = [row["extra_info"]["slice_id"] for row in read_parquet_rows(smk.input.val, columns=["extra_info"])]
    prompts = AgentPrompts.load(smk.input.create_prompt, smk.input.rewrite_prompt)
    summary = build_policy(corpus_text, [offsets[i] for i in val_ids], prompts, smk.params.policy, smk.output[0])
    log.info("wrote %s: %s", smk.output[0], summary)


run(main, snakemake)  # noqa: F821
