"""The ``vllm`` backend of the generate stage: offline batch generation with vLLM on one GPU.

:class:`VLLMChat` is the agent's :class:`~.episode.ChatClient` (``chat`` and ``chat_batch``), so
the same create → rewrite code as training and the ``hf`` backend runs on it. Prompts are rendered
with the model's own chat template and tokenized exactly as the ``hf`` backend does
(:func:`audiobook_rl.policy.tokenizer.prompt_ids`) and handed to vLLM as token ids, so both
backends see identical prompts; ``temperature == 0`` is greedy decoding.

vLLM needs the GPU environment (envs/gpu.yaml, vLLM 0.10.2) or any vLLM from 0.10.2 on that is built
for the machine's torch (0.26.0 has run it on an H200 with torch 2.11 / CUDA 13); without one :func:`client` stops
with one sentence naming the config key and the fix.

The engine runs in a process vLLM forks (its engine core), which holds the GPU's memory. That process
keeps the job's GPU claim (:func:`audiobook_rl.gpus.shared_with_children`), and :meth:`VLLMChat.close`
ends it; the generate stage closes the client before it ends its claim, also when generation fails.
"""

from __future__ import annotations

import logging

from .. import gpus, preflight
from ..errors import UserError
from ..policy.tokenizer import prompt_ids
from ..preflight import GENERATE_VLLM_TESTED, check_generate_vllm
from .episode import Reply
from .vllm_sampling import reply as _reply, sampling_args

log = logging.getLogger(__name__)

# vLLM's share of the GPU's memory: generation is the only job on the GPU (resources.generate.gpu).
GPU_MEMORY_UTILIZATION = 0.85


def engine_args(model_dir: str, settings: dict) -> dict:
    """Keyword arguments of ``vllm.LLM`` for the policy in ``model_dir``."""
    return {
        "model": str(model_dir),
        "tokenizer": str(model_dir),
        "dtype": "bfloat16",
        "tensor_parallel_size": 1,
        "gpu_memory_utilization": GPU_MEMORY_UTILIZATION,
        "seed": settings["seed"],
        "trust_remote_code": False,
    }


class VLLMChat:
    """Chat completions from a ``vllm.LLM`` (``llm``), one ``generate`` call per batch."""

    def __init__(self, llm, tokenizer, sampling_params_cls, *, seed: int | None = 0):
        self.llm, self.tokenizer, self.sampling_params_cls, self.seed = llm, tokenizer, sampling_params_cls, seed
        self.generated_tokens = 0

    def chat(self, messages: list[dict], **sampling) -> Reply:
        return self.chat_batch([messages], **sampling)[0]

    def chat_batch(self, batch: list[list[dict]], *, temperature: float, max_tokens: int, top_p: float = 1.0,
                   top_k: int = 0) -> list[Reply]:
        prompts = [prompt_ids(self.tokenizer, m) for m in batch]
        params = self.sampling_params_cls(**sampling_args(temperature, max_tokens, self.seed, top_p, top_k))
        outputs = self.llm.generate([{"prompt_token_ids": p} for p in prompts], params, use_tqdm=False)
        replies = [_reply(p, o) for p, o in zip(prompts, outputs)]
        self.generated_tokens += sum(len(r.response_ids) for r in replies)
        return replies

    def close(self) -> None:
        """End the engine and its process, which frees the GPU.

        vLLM's offline ``LLM`` (0.10 and 0.26 alike) runs its engine core in a child process;
        ``shutdown()`` of its client (``llm_engine.engine_core``) terminates that process, waits a few
        seconds and then kills it. Left to vLLM, that happens only in an exit handler, which a terminated job never runs.
        """
        engine = getattr(getattr(self.llm, "llm_engine", None), "engine_core", None)
        if engine is not None:
            engine.shutdown()


def client(model_dir: str, settings: dict, device: str) -> VLLMChat:
    """The ``vllm`` backend of the generate stage: an engine for the policy in ``model_dir``."""
    if device != "cuda":
        raise UserError(
            "config key 'generate.backend' is 'vllm', which needs a GPU; set 'resources.generate.gpu' to 1 "
            "on a GPU machine or use 'generate.backend: hf'."
        )
    problems = check_generate_vllm()
    if problems:
        raise UserError(
            f"config key 'generate.backend' is 'vllm' but {problems[0][0].lower()}{problems[0][1:-1]}, "
            "or set 'generate.backend: hf'."
        )
    version = preflight.installed("vllm")
    if version not in GENERATE_VLLM_TESTED:
        log.warning("vllm %s: the generate stage is known to work with vllm %s only; compare a few outputs with "
                    "'generate.backend: hf'.", version, " and ".join(GENERATE_VLLM_TESTED))
    import vllm
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    # the engine core process vLLM forks holds the GPU: it keeps the job's claim until it ends
    with gpus.shared_with_children():
        llm = vllm.LLM(**engine_args(model_dir, settings))
    return VLLMChat(llm, tokenizer, vllm.SamplingParams, seed=settings["seed"])
