"""sft_policy: the base policy + the training references (unless sft.references is false) + rule-labelled
windows of the corpus outside the validation and test slices (and the training slices, without their
references), if sft.window_draws > 0 -> results/models/step_sft/ (a supervised warm start); with
sft.deterministic, the same weights bit for bit when run again on the same GPU."""

import logging

import torch

from audiobook_rl import gpus
from audiobook_rl.agent.episode import AgentPrompts
from audiobook_rl.corpus import read_text
from audiobook_rl.dataset import read_tasks
from audiobook_rl.errors import UserError
from audiobook_rl.files import write_json
from audiobook_rl.policy.determinism import deterministic
from audiobook_rl.policy.warmstart import labelled_windows, warm_start_policy, warmstart_windows
from audiobook_rl.stage import run

log = logging.getLogger("audiobook_rl.sft_policy")


def main(smk):
    on = smk.params.sft["deterministic"]
    if on:
        log.info("deterministic kernels only (sft.deterministic): the same weights when run again on this device")
    # Before the GPU is touched: cuBLAS reads its workspace setting when it starts.
    with deterministic(on, "sft.deterministic"):
        warm_start(smk)


def warm_start(smk):
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
        # Never the held-out text (validation and test), nor GRPO's tasks when their references are
        # left out of the warm start: the tasks carry their offsets.
        parts = [smk.input.val, smk.input.test] + ([] if settings["references"] else [smk.input.train])
        held_out = [(task.start, task.end) for part in parts for task in read_tasks(part)]
        lengths = {name: smk.params.slice[name] for name in ("min_chars", "max_chars")}  # cut as the slices are
        spans = warmstart_windows(corpus_text, held_out, {**settings, **lengths}, key="sft.windows_per_draw")
        windows = labelled_windows(spans, corpus_text, smk.params.context_chars)
        log.info("%d windows of the corpus outside %d %s slices, labelled by the rule labeler", len(windows),
                 len(held_out), "held-out" if settings["references"] else "held-out and training")
    tasks = read_tasks(smk.input.train) if settings["references"] else []
    if not tasks and not windows:
        raise UserError("the warm start has nothing to learn: sft.references is false and every window of the "
                        "corpus overlaps a slice it must keep off; lower split.n_train or use a longer corpus.")
    if not windows and settings["window_draws"] > 0:
        log.warning("every window of the corpus overlaps a held-out slice: the warm start has the training "
                    "references only")
    summary = warm_start_policy(smk.input.policy, tasks, prompts, settings, smk.output[0], device, progress, windows)
    summary["deterministic"] = settings["deterministic"]
    write_json(f"{smk.output[0]}/sft.json", summary)
    log.info("wrote %s: %s", smk.output[0], summary)


run(main, snakemake)  # noqa: F821
