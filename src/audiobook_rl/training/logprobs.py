"""Teacher-forced token log-probabilities of responses given prompts (for SFT and GRPO)."""

from __future__ import annotations

import torch


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


def token_logprobs(model, batch: dict, temperature: float = 1.0) -> torch.Tensor:
    """log π(token | prefix) for every position (B × T-1); only ``batch['mask']`` positions matter.

    Logits are divided by the sampling temperature, as verl does, so the ratio compares the same
    distributions that produced the samples.
    """
    logits = model(input_ids=batch["ids"], attention_mask=batch["attention"]).logits[:, :-1, :]
    if temperature not in (0, 1):
        logits = logits / temperature
    targets = batch["ids"][:, 1:]
    # log_softmax then gather: exact, and the B × T × V tensor is freed right after.
    return torch.log_softmax(logits.float(), dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
