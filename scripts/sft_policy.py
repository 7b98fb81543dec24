"""sft_policy: the base policy + the training references (+ rule-labelled windows of the corpus outside
the validation and test slices, if sft.window_draws > 0) -> results/models/step_sft/ (a supervised warm start)."""

import logging

import torch

from audiobook_rl import gpus
from audiobook_rl.agent.episode import AgentPrompts
from audiobook_rl.corpus import read_text
from audiobook_rl.dataset import read_tasks
from audiobook_rl.files import write_json
from audiobook_rl.policy.warmstart import labelled_windows, warm_start_policy, warmstart_windows
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

    settings = smk.params.sft
    windows = []
    if settings["window_draws"] > 0:
        corpus_text, _ = read_text(smk.input.corpus)
        # Never the held-out text (validation and test): the tasks carry their offsets.
        held_out = [(task.start, task.end) for part in (smk.input.val, smk.input.test) for task in read_tasks(part)]
        lengths = {name: smk.params.slice[name] for name in ("min_chars", "max_chars")}  # cut as the slices are
        spans = warmstart_windows(corpus_text, held_out, {**settings, **lengths}, key="sft.windows_per_draw")
        windows = labelled_windows(spans, corpus_text)
        log.info("%d windows of the corpus outside %d held-out slices, labelled by the rule labeler",
                 len(windows), len(held_out))
        if not windows:
            log.warning("every window of the corpus overlaps a held-out slice: the warm start has the training "
                        "references only")
    summary = warm_start_policy(smk.input.policy, read_tasks(smk.input.train), prompts, settings,
                                smk.output[0], device, progress, windows)
    write_json(f"{smk.output[0]}/sft.json", summary)
    log.info("wrote %s: %s", smk.output[0], summary)


run(main, snakemake)  # noqa: F821
