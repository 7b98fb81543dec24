"""The ``generate`` stage: the agent (create → rewrite) on every validation task, with a checkpoint's
policy served by the configured chat client (:mod:`.agent.hf_chat` or :mod:`.agent.vllm_chat`)."""

from __future__ import annotations

import torch

from .agent.episode import AgentPrompts, ChatClient, run_episodes
from .dataset import Task


def generate_outputs(client: ChatClient, tasks: list[Task], prompts: AgentPrompts, settings: dict, step) -> list[dict]:
    """One results/eval/step_N/outputs.jsonl record per task, in task order (``settings``: the
    ``generate`` section; ``step``: a number or ``best``)."""
    torch.manual_seed(settings["seed"])  # sampling, when temperature > 0
    episodes = run_episodes(tasks, client, prompts, temperature=settings["temperature"], max_tokens=settings["max_tokens"],
                            top_p=settings["top_p"], top_k=settings["top_k"])
    return [e.output_record(step) for e in episodes]
