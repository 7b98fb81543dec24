"""Teacher-forced token log-probabilities of responses given prompts (for SFT and GRPO)."""

from __future__ import annotations

import contextlib

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.checkpoint import checkpoint


def pack(prompts: list[list[int]], responses: list[list[int]], pad_id: int, device) -> dict:
    """Right-padded ``prompt + response`` rows and a mask of the response tokens.

    ``mask[i, t]`` is 1 where token ``t + 1`` of row ``i`` is a response token, i.e. it lines up
    with the logits at position ``t`` that predict it.
    """
    lengths = [len(p) + len(r) for p, r in zip(prompts, responses)]
    width = max(lengths)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(prompts), width), dtype=torch.long)
    mask = torch.zeros((len(prompts), width - 1), dtype=torch.float32)
    for i, (p, r) in enumerate(zip(prompts, responses)):
        ids[i, : len(p) + len(r)] = torch.tensor(p + r, dtype=torch.long)
        attention[i, : len(p) + len(r)] = 1
        mask[i, len(p) - 1 : len(p) + len(r) - 1] = 1.0
    return {"ids": ids.to(device), "attention": attention.to(device), "mask": mask.to(device)}


def token_logprobs(model, batch: dict, temperature: float = 1.0, chunk: int = 2048) -> torch.Tensor:
    """log π(token | prefix) at the response positions (B × T-1; 0 where ``batch['mask']`` is 0).

    Logits are divided by the sampling temperature, as verl does, so the ratio compares the same
    distributions that produced the samples. Only response positions go through the output layer,
    ``chunk`` tokens at a time, and each chunk's full-vocabulary logits are recomputed in the
    backward pass instead of kept (a 150k-token vocabulary would otherwise hold gigabytes of them).
    """
    hidden = model.get_decoder()(input_ids=batch["ids"], attention_mask=batch["attention"]).last_hidden_state
    picked = batch["mask"].bool()
    states = hidden[:, :-1][picked]
    targets = batch["ids"][:, 1:][picked]
    head = model.get_output_embeddings()
    parts = [
        checkpoint(_chosen_logprobs, head, states[i : i + chunk], targets[i : i + chunk], temperature, use_reentrant=False)
        for i in range(0, len(targets), chunk)
    ]
    out = torch.zeros(picked.shape, dtype=torch.float32, device=hidden.device)
    if parts:
        out = out.masked_scatter(picked, torch.cat(parts))
    return out


def _chosen_logprobs(head, states: torch.Tensor, targets: torch.Tensor, temperature: float) -> torch.Tensor:
    logits = head(states).float()
    if temperature not in (0, 1):
        logits = logits / temperature
    return logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - torch.logsumexp(logits, dim=-1)


@contextlib.contextmanager
def precision(device: torch.device):
    """bf16 autocast on a GPU (fp32 master weights and optimizer state), full fp32 elsewhere.

    On a GPU, attention runs on any SDPA backend but cuDNN's: in bf16 with a padding mask, its
    backward pass returns NaN gradients at some sequence widths while the loss stays finite (measured
    on an H200 with torch 2.11: widths 704 and 1088 of 640-1088; the memory-efficient backend gives
    finite gradients on the same batches), which cost one to three skipped updates per 32.
    """
    if device.type != "cuda":
        yield
        return
    backends = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]
    with torch.autocast("cuda", dtype=torch.bfloat16), sdpa_kernel(backends):
        yield
