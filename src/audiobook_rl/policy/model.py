"""The embedded policy: a small Qwen2-architecture causal LM, saved as an ordinary HF directory."""

from __future__ import annotations

from pathlib import Path

import torch


def new_model(tokenizer, settings: dict, seed: int):
    """A randomly initialised Qwen2ForCausalLM sized by the ``policy.model`` settings."""
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    hidden = settings["hidden_size"]
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=3 * hidden,
        num_hidden_layers=settings["layers"],
        num_attention_heads=settings["heads"],
        num_key_value_heads=settings["kv_heads"],
        max_position_embeddings=settings["max_positions"],
        tie_word_embeddings=True,
        bos_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    model.generation_config = GenerationConfig(
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.pad_token_id
    )
    return model


def load_policy(path: str | Path, device: str = "cpu"):
    """(model, tokenizer) from an HF directory, in float32 on ``device``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(path))
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(str(path)).float()
    return model.to(device), tokenizer


def save_policy(model, tokenizer, path: str | Path) -> None:
    """Write model and tokenizer as a from_pretrained-loadable directory (safetensors)."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(path), safe_serialization=True)
    tokenizer.save_pretrained(str(path))


def n_params(model) -> int:
    """Distinct parameters (the tied embedding counted once)."""
    return sum(p.numel() for p in model.parameters())
