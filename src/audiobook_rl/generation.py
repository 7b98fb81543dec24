"""The ``generate`` stage: the agent (create → rewrite) on every validation task, with a checkpoint's
policy served by the configured chat client (:mod:`.agent.hf_chat` or :mod:`.agent.vllm_chat`)."""

from __future__ import annotations

from contextlib import closing
from typing import Callable

import torch

from . import gpus
from .agent.episode import AgentPrompts, ChatClient, run_episodes
from .dataset import Task


def generate_stage(client: Callable, model_dir: str, tasks: list[Task], prompts: AgentPrompts, settings: dict,
                   step, n_gpus: int, holder: str) -> list[dict]:
    """The generate stage on ``n_gpus`` GPUs of the job's own (0: the CPU) with the chat client that
    ``client(model_dir, settings, device)`` builds (a generate backend's).

    The client (vLLM's engine and the process that holds the GPU) is closed before the GPUs' claim
    ends, also when generation fails or the job is terminated: otherwise the claim could end while an
    orphaned engine still holds the GPU, and the next job would start on a GPU that is not free.
    """
    with gpus.claimed(n_gpus, "resources.generate.gpu", holder=holder) as devices:
        device = "cpu"
        if devices:
            # counted without starting CUDA: vLLM's engine runs in a forked child that must be able to use it
            gpus.require_cuda(n_gpus, "resources.generate.gpu")
            device = "cuda"
        with closing(client(model_dir, settings, device)) as chat:
            return generate_outputs(chat, tasks, prompts, settings, step)


def generate_outputs(client: ChatClient, tasks: list[Task], prompts: AgentPrompts, settings: dict, step) -> list[dict]:
    """One results/eval/step_N/outputs.jsonl record per task, in task order (``settings``: the
    ``generate`` section; ``step``: a number or ``best``)."""
    torch.manual_seed(settings["seed"])  # sampling, when temperature > 0
    episodes = run_episodes(tasks, client, prompts, temperature=settings["temperature"], max_tokens=settings["max_tokens"],
                            top_p=settings["top_p"], top_k=settings["top_k"])
    return [e.output_record(step) for e in episodes]
