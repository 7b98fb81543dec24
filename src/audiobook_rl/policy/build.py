"""The embedded policy, built offline (rule build_policy → results/models/step_0/).

A byte-level BPE tokenizer trained on the corpus, the prompts and the script vocabulary; a small
Qwen2ForCausalLM; a short supervised warm start on rule-labelled excerpts disjoint from the
validation slices. Seeded: the same inputs and settings give the same weights on the CPU.
"""

from __future__ import annotations

import logging
from pathlib import Path

import torch

from ..errors import UserError
from ..files import write_json
from ..labeling.lexicon import build_lexicon
from ..labeling.rules import RuleLabeler
from ..script import FIELDS, NARRATOR, TONES, Segment
from .model import n_params, new_model, save_policy
from .tokenizer import train_tokenizer
from .warmstart import compact, warm_start, warmstart_examples, warmstart_windows

log = logging.getLogger(__name__)


def _schema_texts() -> list[str]:
    """Strings that teach the tokenizer the JSON layout of a script."""
    sample = [Segment(NARRATOR, "。", t, i, d) for t in TONES for i in range(1, 6) for d in (0, 300, 500, 800, 1000, 1500)]
    return [compact(sample), " ".join(FIELDS), " ".join(TONES)]


def build_policy(corpus_text: str, val_spans: list[tuple[int, int]], prompts, settings: dict, out_dir: str | Path,
                 device: str = "cpu", context_chars: int = 0) -> dict:
    """Build tokenizer + model, warm-start it (each window with ``context_chars`` of the corpus before
    it, as the agent reads its tasks), save it to ``out_dir``; return a summary dict."""
    torch.manual_seed(settings["seed"])
    ws = settings["warm_start"]
    windows = warmstart_windows(corpus_text, val_spans, {**ws, "seed": settings["seed"]})
    if not windows:
        raise ValueError("no warm-start windows outside the validation slices")
    labeler = RuleLabeler(build_lexicon(corpus_text))
    texts = [p for p in corpus_text.split("\n") if p.strip()]
    texts += [compact(labeler.label_text(t, start=a)) for a, _, t in windows]  # labeled in the corpus, as the references are
    # Repeated so that BPE merges the fixed prompt text into few tokens: shorter sequences, faster steps.
    for prompt in (prompts.create, prompts.rewrite):
        texts += [prompt.system, prompt.user] * settings["prompt_repeats"]
    texts += _schema_texts()
    tokenizer = train_tokenizer(texts, settings["vocab_size"])
    model = new_model(tokenizer, settings["model"], settings["seed"]).to(device)
    examples = warmstart_examples(windows, corpus_text, prompts, tokenizer, settings["seed"], context_chars)
    log.info(
        "policy: vocab %d, %.2fM parameters; warm start on %d windows (%d examples) outside %d validation slices",
        len(tokenizer), n_params(model) / 1e6, len(windows), len(examples), len(val_spans),
    )

    def progress(step, loss, seconds):
        log.info("warm start step %d/%d: loss %.3f (%.1f s)", step, ws["steps"], loss, seconds)

    losses = warm_start(model, tokenizer, examples, {**ws, "seed": settings["seed"]}, device, progress)
    save_policy(model.to("cpu"), tokenizer, out_dir)
    summary = {
        "vocab_size": len(tokenizer),
        "parameters": n_params(model),
        "warm_start_windows": len(windows),
        "warm_start_examples": len(examples),
        "warm_start_loss_first": losses[0] if losses else None,
        "warm_start_loss_last": losses[-1] if losses else None,
        "excluded_spans": [list(s) for s in val_spans],
    }
    write_json(Path(out_dir) / "policy_build.json", summary)
    return summary


def copy_pretrained(name_or_path: str, out_dir: str) -> None:
    """Save a pretrained causal LM and its tokenizer as an ordinary HF directory (the seed's step_0)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(name_or_path)
        model = AutoModelForCausalLM.from_pretrained(name_or_path, dtype="auto")
    except (OSError, ValueError) as err:
        raise UserError(
            f"config key 'policy.pretrained': cannot load {name_or_path!r} ({str(err).splitlines()[0]}); "
            "give a local Hugging Face model directory or a hub id this machine can download."
        ) from None
    # A failed job's directory output is removed by Snakemake, so nothing half-written survives.
    model.save_pretrained(Path(out_dir))
    tokenizer.save_pretrained(Path(out_dir))
