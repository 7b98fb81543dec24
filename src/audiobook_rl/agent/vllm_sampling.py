"""What the two vLLM clients share: sampling arguments in vLLM's terms, and a reply from its output.

Kept apart from :mod:`.vllm_chat` (the generate stage) and :mod:`.vllm_rollout` (training), so that
a change to one client reruns only its own stage.
"""

from __future__ import annotations

import logging

from .episode import Reply

log = logging.getLogger(__name__)


def sampling_args(temperature: float, max_tokens: int, seed: int | None, top_p: float = 1.0, top_k: int = 0) -> dict:
    """Keyword arguments of ``vllm.SamplingParams``: greedy at temperature 0, else sampling with the
    nucleus and top-k filters (vLLM writes "no top-k" as -1, this project as 0)."""
    args = {"temperature": float(temperature), "max_tokens": int(max_tokens), "n": 1, "top_p": float(top_p),
            "top_k": int(top_k) if top_k > 0 else -1}
    if temperature > 0 and seed is not None:
        args["seed"] = int(seed)  # per-request seed: same outputs whatever the batch composition
    return args


def reply(prompt: list[int], output) -> Reply:
    """A :class:`Reply` from one ``vllm.RequestOutput`` (its first completion)."""
    completion = output.outputs[0]
    if completion.finish_reason == "length":
        log.debug("a reply hit max_tokens (%d tokens)", len(completion.token_ids))
    return Reply(completion.text, list(prompt), list(completion.token_ids))
