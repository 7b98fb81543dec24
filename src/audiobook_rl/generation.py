"""Serving the agent's chat calls from a local Hugging Face policy (batched ``generate``).

:class:`HFChat` is the agent's :class:`~audiobook_rl.agent.ChatClient` for the local GRPO backend
and for the ``hf`` backend of the ``generate`` stage. It records the prompt and response token ids
of each call, which is what training needs. Backends of the ``generate`` stage are looked up by
name in :data:`BACKENDS` (``vllm`` is added beside ``hf``).
"""

from __future__ import annotations

import logging
from typing import Callable

import torch

from .agent import AgentPrompts, Reply, Task, run_episodes
from .errors import UserError
from .policy.tokenizer import prompt_ids

log = logging.getLogger(__name__)


class HFChat:
    """Chat completions from ``model`` (left-padded batches of at most ``batch_size`` conversations)."""

    def __init__(self, model, tokenizer, *, batch_size: int = 64):
        self.model, self.tokenizer, self.batch_size = model, tokenizer, batch_size
        self.generated_tokens = 0

    def chat(self, messages: list[dict], *, temperature: float, max_tokens: int) -> Reply:
        return self.chat_batch([messages], temperature=temperature, max_tokens=max_tokens)[0]

    @torch.no_grad()
    def chat_batch(self, batch: list[list[dict]], *, temperature: float, max_tokens: int) -> list[Reply]:
        prompts = [prompt_ids(self.tokenizer, m) for m in batch]
        replies: list[Reply] = []
        for i in range(0, len(prompts), self.batch_size):
            replies += self._generate(prompts[i : i + self.batch_size], temperature, max_tokens)
        return replies

    def _generate(self, prompts: list[list[int]], temperature: float, max_tokens: int) -> list[Reply]:
        tok, device = self.tokenizer, self.model.device
        width = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), width), tok.pad_token_id, dtype=torch.long)
        attention = torch.zeros_like(ids)
        for i, p in enumerate(prompts):  # left padding: every row's last token is its prompt's last
            ids[i, width - len(p) :] = torch.tensor(p)
            attention[i, width - len(p) :] = 1
        sampling = {"do_sample": True, "temperature": temperature, "top_k": 0, "top_p": 1.0} if temperature > 0 else {"do_sample": False}
        was_training = self.model.training
        self.model.eval()
        out = self.model.generate(
            input_ids=ids.to(device), attention_mask=attention.to(device), max_new_tokens=max_tokens,
            eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, **sampling,
        )
        self.model.train(was_training)
        replies = []
        for p, row in zip(prompts, out[:, width:].tolist()):
            # Keep the response up to and including the first end-of-turn token (it is trained too).
            if tok.eos_token_id in row:
                row = row[: row.index(tok.eos_token_id) + 1]
            self.generated_tokens += len(row)
            text = tok.decode(row, skip_special_tokens=True)
            replies.append(Reply(text, list(p), row))
        return replies


def _hf(model_dir: str, settings: dict, device: str):
    from .policy import load_policy

    model, tokenizer = load_policy(model_dir, device)
    return HFChat(model, tokenizer, batch_size=settings.get("batch_size", 64))


# name -> factory(model_dir, generate settings, device) -> ChatClient
def _vllm(model_dir: str, settings: dict, device: str):
    from .generation_vllm import make_client

    return make_client(model_dir, settings, device)


BACKENDS: dict[str, Callable] = {"hf": _hf, "vllm": _vllm}


def generate_outputs(model_dir: str, rows: list[dict], prompts: AgentPrompts, settings: dict, step, device: str = "cpu") -> list[dict]:
    """Run the agent (create → rewrite) on every row with the policy in ``model_dir``.

    Returns one results/eval/step_N/outputs.jsonl record per row, in row order.
    """
    name = settings.get("backend", "hf")
    if name not in BACKENDS:
        raise UserError(f"config key 'generate.backend' is {name!r}; choose one of {sorted(BACKENDS)}.")
    client = BACKENDS[name](model_dir, settings, device)
    tasks = [Task.from_row(r) for r in rows]
    if settings.get("seed") is not None:
        torch.manual_seed(settings["seed"])
    episodes = run_episodes(tasks, client, prompts, temperature=settings["temperature"], max_tokens=settings["max_tokens"])
    return [e.output_record(step) for e in episodes]
