"""Supervised warm starts: teacher-forced steps on (excerpt, reference script) pairs.

Two users, one loop (:func:`warm_start`):

- the embedded policy (``build_policy``): a random model never writes JSON, so GRPO would see only
  zero rewards. A short supervised pass on excerpts labelled by the rule labeler teaches the format
  (and some copying). The excerpts are cut from the corpus with other seeds than the pipeline's
  slices, and any window that overlaps a validation or test slice is dropped
  (:func:`warmstart_windows`), so evaluation measures text the policy never saw;
- any policy, pretrained ones included (the ``sft_policy`` stage): a few epochs on the training
  references, and on more rule-labelled windows of the corpus if asked (:func:`warm_start_policy`).
  A pretrained chat model writes JSON but not the script's conventions: Qwen2.5-0.5B never gives
  narration to 旁白, so GRPO has no such script to reinforce.

Each excerpt gives two examples, one per role of the agent: create(excerpt) → reference, and
rewrite(excerpt, a damaged copy of the reference) → reference.
"""

from __future__ import annotations

import json
import logging
import math
import random
import time
from pathlib import Path

import torch

from ..corpus import slice_text, text_before
from ..labeling.lexicon import build_lexicon
from ..labeling.rules import RuleLabeler
from ..script import TONES, Segment
from .logprobs import pack, precision, token_logprobs
from .model import load_policy, save_policy
from .tokenizer import prompt_ids, response_ids

log = logging.getLogger(__name__)


def warmstart_windows(corpus_text: str, exclude: list[tuple[int, int]], settings: dict,
                      key: str = "policy.warm_start.windows_per_draw") -> list[tuple[int, int, str]]:
    """Distinct excerpt windows (start, end, text) that overlap no span of ``exclude``; ``key`` is the
    config key a corpus too short for them is reported under."""
    windows: dict[tuple[int, int], str] = {}
    for k in range(settings["window_draws"]):
        for s in slice_text(
            corpus_text, n=settings["windows_per_draw"], min_chars=settings["min_chars"],
            max_chars=settings["max_chars"], seed=settings["seed"] * 1000 + k, source="corpus",
            key=key,
        ):
            if not any(s.start < b and a < s.end for a, b in exclude):
                windows[(s.start, s.end)] = s.text
    return [(a, b, t) for (a, b), t in sorted(windows.items())]


def compact(script: list[Segment]) -> str:
    """A script as JSON without optional spaces: the form the policy learns (about 30% fewer tokens)."""
    return json.dumps([s.to_dict() for s in script], ensure_ascii=False, separators=(",", ":"))


def corrupt(script: list[Segment], rng: random.Random) -> str:
    """A plausible bad draft of ``script`` for the rewrite role to correct."""
    segs = list(script)
    kind = rng.randrange(5)
    if kind == 0 and len(segs) > 1:  # a segment left out
        del segs[rng.randrange(len(segs))]
    elif kind == 1:  # wrong tones and intensities
        segs = [Segment(s.speaker, s.content, rng.choice(TONES), rng.randint(1, 5), s.delay) for s in segs]
    elif kind == 2 and len(segs) > 1:  # two segments merged into one narration
        i = rng.randrange(len(segs) - 1)
        a, b = segs[i], segs[i + 1]
        segs[i : i + 2] = [Segment("旁白", a.content + b.content, a.tone, a.intensity, b.delay)]
    elif kind == 3:  # broken JSON: cut off
        text = compact(segs)
        return text[: max(1, int(len(text) * rng.uniform(0.3, 0.9)))]
    return compact(segs)


def labelled_windows(windows, corpus_text: str, context_chars: int = 0) -> list[tuple[str, list[Segment], str]]:
    """(text, script, the corpus text before it) of each window, labelled by the rule labeler in the
    corpus, as the references are; the text before is ``context_chars`` long and in the window's
    scene, as the tasks' is (:func:`~audiobook_rl.corpus.text_before`)."""
    labeler = RuleLabeler(build_lexicon(corpus_text))
    return [(text, labeler.label_text(text, start=a), text_before(corpus_text, a, text, context_chars, scene=True))
            for a, _, text in windows]


def warmstart_examples(windows, corpus_text: str, prompts, tokenizer, seed: int,
                       context_chars: int = 0) -> list[tuple[list[int], list[int]]]:
    """The examples of the embedded policy's warm start: the windows, labelled by the rule labeler."""
    return script_examples(labelled_windows(windows, corpus_text, context_chars), prompts, tokenizer, seed)


def script_examples(pairs, prompts, tokenizer, seed: int) -> list[tuple[list[int], list[int]]]:
    """(prompt ids, response ids) of each (excerpt, script, text before) triple: create(excerpt) →
    script, and rewrite(excerpt, a damaged copy of the script) → script, each with the text before
    the excerpt where the prompts show it. ``prompts`` has the agent's ``create_messages`` and
    ``rewrite_messages``."""
    rng = random.Random(seed)
    examples = []
    for text, script, before in pairs:
        target = response_ids(tokenizer, compact(script))
        examples.append((prompt_ids(tokenizer, prompts.create_messages(text, before)), target))
        draft = corrupt(script, rng)
        examples.append((prompt_ids(tokenizer, prompts.rewrite_messages(text, draft, before)), target))
    return examples


def warm_start(model, tokenizer, examples, settings: dict, device="cpu", progress=None) -> list[float]:
    """Train on the examples (loss on the response tokens only); return the loss per step."""
    torch.manual_seed(settings["seed"])
    rng = random.Random(settings["seed"])
    opt = torch.optim.AdamW(model.parameters(), lr=settings["lr"], weight_decay=0.0)
    model.train()
    losses = []
    order: list[int] = []
    started = time.monotonic()
    for step in range(settings["steps"]):
        if len(order) < settings["batch_size"]:
            fresh = list(range(len(examples)))
            rng.shuffle(fresh)
            order += fresh
        idx, order = order[: settings["batch_size"]], order[settings["batch_size"] :]
        batch = pack([examples[i][0] for i in idx], [examples[i][1] for i in idx], tokenizer.pad_token_id, device)
        with precision(torch.device(device)):
            logp = token_logprobs(model, batch)
        loss = -(logp * batch["mask"]).sum() / batch["mask"].sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        if progress and ((step + 1) % max(1, settings["steps"] // 10) == 0 or step + 1 == settings["steps"]):
            progress(step + 1, loss.item(), time.monotonic() - started)
    model.eval()
    return losses


def warm_start_policy(policy_dir: str | Path, tasks, prompts, settings: dict, out_dir: str | Path, device: str = "cpu",
                      progress=None, windows: list[tuple[str, list[Segment], str]] = ()) -> dict:
    """The ``sft_policy`` stage: ``settings['epochs']`` passes over the training ``tasks`` (excerpt and
    reference script, with the text before it) and the extra ``windows`` ((excerpt, rule-labelled
    script, text before) triples, :func:`labelled_windows`) from the policy in ``policy_dir``, saved to
    ``out_dir`` in the policy's own precision; returns a summary. Seeded: the same inputs give the
    same weights on the CPU."""
    model, tokenizer = load_policy(policy_dir, device)
    saved_dtype = _saved_dtype(model)
    pairs = [(t.text, t.reference, t.before) for t in tasks] + list(windows)
    examples = script_examples(pairs, prompts, tokenizer, settings["seed"])
    steps = math.ceil(settings["epochs"] * len(examples) / settings["batch_size"])
    log.info("warm start: %d examples (%d training excerpts and %d more from the corpus, both roles), %d epochs = %d "
             "steps of %d, lr %g, on %s", len(examples), len(tasks), len(windows), settings["epochs"], steps,
             settings["batch_size"], settings["lr"], device)
    losses = warm_start(model, tokenizer, examples, {**settings, "steps": steps}, device, progress)
    save_policy(model.to("cpu", dtype=saved_dtype), tokenizer, out_dir)
    return {
        "examples": len(examples),
        "corpus_windows": len(windows),
        "steps": steps,
        "loss_first": losses[0] if losses else None,
        "loss_last": losses[-1] if losses else None,
    }


def _saved_dtype(model) -> torch.dtype:
    """The precision the policy's files hold (a bf16 checkpoint stays bf16; load_policy computes in fp32)."""
    dtype = getattr(model.config, "dtype", None)  # transformers 4.56 still answers torch_dtype, with a warning
    if isinstance(dtype, str):
        dtype = getattr(torch, dtype, None)
    return dtype if isinstance(dtype, torch.dtype) else torch.float32
