"""Serving the agent's chat calls from a local Hugging Face policy, in batches.

:class:`HFChat` is the agent's :class:`~.episode.ChatClient` for the local GRPO backend and for the
``hf`` backend of the ``generate`` stage (:func:`client`). It decodes with
:class:`~.decoding.StaticDecoder` (static cache, CUDA graphs on a GPU) where the model's
architecture allows, else with ``transformers``' ``generate``. It records the prompt and response
token ids of each call, which is what training needs.
"""

from __future__ import annotations

import logging

import torch

from ..policy.model import load_policy
from ..policy.tokenizer import prompt_ids
from .decoding import Sampling, StaticDecoder, supports
from .episode import Follow, Reply, chat_in_rounds

log = logging.getLogger(__name__)


class HFChat:
    """Chat completions from ``model``: at most ``batch_size`` conversations decode at once (fewer
    where GPU memory is short), each taking a free row as soon as one opens."""

    def __init__(self, model, tokenizer, *, batch_size: int = 64):
        self.model, self.tokenizer, self.batch_size = model, tokenizer, batch_size
        self.decoder = StaticDecoder(model) if supports(model) else None
        self.stop_ids = stop_ids(model, tokenizer)
        self.generated_tokens = 0

    def chat(self, messages: list[dict], **sampling) -> Reply:
        return self.chat_batch([messages], **sampling)[0]

    def close(self) -> None:
        """Nothing to end: the model lives in this process, and its memory goes with it."""

    def chat_batch(self, batch: list[list[dict]], **sampling) -> list[Reply]:
        return [chain[0][1] for chain in self.chat_chains(batch, lambda i, chain: None, **sampling)]

    @torch.no_grad()
    def chat_chains(self, starts: list[list[dict]], follow: Follow, *, temperature: float, max_tokens: int,
                    top_p: float = 1.0, top_k: int = 0) -> list[list[tuple[list[dict], Reply]]]:
        """Conversations that go on: ``follow(i, chain)`` gives chain ``i``'s next messages (or None) as
        soon as its last reply is in, and with the static decoder that call joins the batch at once."""
        sampling = Sampling(temperature, top_p, top_k)
        chains: list[list[tuple[list[dict], Reply]]] = [[] for _ in starts]
        was_training = self.model.training
        self.model.eval()
        if self.decoder is None:
            chains = chat_in_rounds(self._generate_batch(sampling, max_tokens), starts, follow)
        else:
            calls = [(i, m, prompt_ids(self.tokenizer, m)) for i, m in enumerate(starts)]  # by sequence id

            def then(seq: int, tokens: list[int]) -> list[int] | None:
                chain, messages, ids = calls[seq]
                chains[chain].append((messages, self._reply(ids, tokens)))
                following = follow(chain, chains[chain])
                if following is None:
                    return None
                calls.append((chain, following, prompt_ids(self.tokenizer, following)))
                return calls[-1][2]

            rows = self.decoder.max_rows(max(len(ids) for _, _, ids in calls) + 2 * max_tokens, self.batch_size)
            self.decoder.generate([ids for _, _, ids in calls], max_new_tokens=max_tokens, sampling=sampling,
                                  stop_ids=self.stop_ids, pad_id=self.tokenizer.pad_token_id, then=then, max_rows=rows)
        self.model.train(was_training)
        return chains

    def _reply(self, prompt: list[int], response: list[int]) -> Reply:
        self.generated_tokens += len(response)
        return Reply(self.tokenizer.decode(response, skip_special_tokens=True), list(prompt), response)

    def _generate_batch(self, sampling: Sampling, max_tokens: int):
        """A chat_batch over transformers' ``generate``, in batches of at most ``batch_size``."""

        def chat_batch(batch: list[list[dict]], **_) -> list[Reply]:
            prompts = [prompt_ids(self.tokenizer, m) for m in batch]
            replies = []
            for i in range(0, len(prompts), self.batch_size):
                part = prompts[i : i + self.batch_size]
                replies += [self._reply(p, row) for p, row in zip(part, self._hf_generate(part, sampling, max_tokens))]
            return replies

        return chat_batch

    def _hf_generate(self, prompts: list[list[int]], sampling: Sampling, max_tokens: int) -> list[list[int]]:
        """``transformers``' ``generate`` for architectures the static decoder does not cover."""
        tok, device = self.tokenizer, self.model.device
        width = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), width), tok.pad_token_id, dtype=torch.long)
        attention = torch.zeros_like(ids)
        for i, p in enumerate(prompts):  # left padding: every row's last token is its prompt's last
            ids[i, width - len(p) :] = torch.tensor(p)
            attention[i, width - len(p) :] = 1
        if sampling.temperature > 0:
            options = {"do_sample": True, "temperature": sampling.temperature, "top_k": sampling.top_k, "top_p": sampling.top_p}
        else:
            options = {"do_sample": False}
        out = self.model.generate(
            input_ids=ids.to(device), attention_mask=attention.to(device), max_new_tokens=max_tokens,
            eos_token_id=sorted(self.stop_ids), pad_token_id=tok.pad_token_id, **options,
        )
        rows = []
        for row in out[:, width:].tolist():
            # Keep the response up to and including the first end-of-turn token (it is trained too).
            end = next((j for j, t in enumerate(row) if t in self.stop_ids), None)
            rows.append(row[: end + 1] if end is not None else row)
        return rows


def stop_ids(model, tokenizer) -> set[int]:
    """Tokens that end a reply: the tokenizer's end of turn and the model's end-of-sequence ids."""
    ids = {tokenizer.eos_token_id}
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids.update(configured if isinstance(configured, (list, tuple)) else [configured])
    return {i for i in ids if i is not None}


def client(model_dir: str, settings: dict, device: str) -> HFChat:
    """The ``hf`` backend of the generate stage: the policy in ``model_dir`` on ``device``."""
    model, tokenizer = load_policy(model_dir, device)
    return HFChat(model, tokenizer, batch_size=settings["batch_size"])
