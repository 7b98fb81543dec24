"""Rollouts on vLLM beside the policy being trained, on the same GPU and in the same process.

:class:`VLLMRollout` is a :class:`~.episode.ChatClient` (``chat`` and ``chat_batch``, like
:class:`~.hf_chat.HFChat`) whose answers come from an offline ``vllm.LLM`` that holds its own bf16
copy of the policy. After each optimizer step, :meth:`VLLMRollout.sync_weights` copies the trained
model's parameters into that copy, GPU to GPU, so the next rollout samples from the new policy.

How, in vLLM 0.26 (the version that matches the GPU image's torch 2.11):

- The engine runs in this process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``): ``LLM.apply_model``
  then calls a function on the engine's model directly, so the update passes CUDA tensors, not a
  pickled copy of the weights to another process.
- ``load_weights`` of vLLM's model takes the Hugging Face parameter names and fuses q/k/v and
  gate/up itself; it copies in place, so the CUDA graphs captured at start stay valid.
- The prefix cache is reset after each update: its blocks hold keys and values computed with the
  old weights, and a GRPO group repeats its prompt.
- With ``sleep_mode``, :meth:`sleep` hands the KV cache back to the trainer during the update
  (level 1: weights offloaded to CPU, cache discarded) and :meth:`sync_weights` wakes the weights,
  overwrites them and then reallocates the cache. Level 2 would skip the CPU copy, but vLLM has
  been seen to give garbled outputs after a level-2 wake-up even with all weights reloaded.

vLLM takes ``memory_share`` of the GPU's whole memory (weights, activations, KV cache), which must
be free when the engine starts: build it after the policy, before the optimizer's state grows.
Running in this process, the engine also seeds this process's random generators with ``seed`` and
starts a one-process ``torch.distributed`` group, which :meth:`VLLMRollout.close` ends.
"""

from __future__ import annotations

import os

import torch

from ..errors import UserError
from ..policy.tokenizer import prompt_ids
from ..preflight import installed
from .episode import Reply
from .vllm_sampling import reply, sampling_args

NO_VLLM = (
    "rollouts on vLLM need the vllm package (0.26.0 is tested), which is not installed; install it in the "
    "GPU environment or roll out with the local decoder."
)


def hf_weights(model):
    """(name, tensor) for each parameter of a Hugging Face model, named as in its state dict.

    A tied output embedding appears once (as ``model.embed_tokens.weight``); vLLM ties it again.
    """
    for name, param in model.named_parameters():
        # torch.compile wraps the model: its names carry this prefix
        yield name.removeprefix("_orig_mod."), param.detach()


class VLLMRollout:
    """Chat completions from a vLLM engine that follows ``model`` (the policy being trained).

    ``model_dir`` is the directory ``model`` was loaded from (vLLM reads its config and starting
    weights there); ``tokenizer`` renders prompts exactly as :class:`~.hf_chat.HFChat` does.
    Sampling is seeded per request from the global generator, so the samples of a group differ and
    a run seeded alike repeats.
    """

    def __init__(self, model, model_dir: str, tokenizer, *, memory_share: float = 0.3, max_model_len: int = 8192,
                 seed: int = 0, enforce_eager: bool = False, sleep_mode: bool = False):
        if installed("vllm") is None:
            raise UserError(NO_VLLM)
        # the engine must live in this process: see the module's docstring
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
        if installed("flashinfer-python") is None:  # else vLLM 0.26 imports it for its sampler
            os.environ.setdefault("VLLM_USE_FLASHINFER_SAMPLER", "0")
        import vllm

        self.model, self.tokenizer, self.seed = model, tokenizer, seed
        self.sampling_params_cls = vllm.SamplingParams
        self.llm = vllm.LLM(model=str(model_dir), tokenizer=str(model_dir), dtype="bfloat16", seed=seed,
                            gpu_memory_utilization=memory_share, max_model_len=max_model_len,
                            enforce_eager=enforce_eager, enable_sleep_mode=sleep_mode)
        self.sleep_mode, self.asleep = sleep_mode, False
        self.generated_tokens = 0
        self.sync_weights()  # the policy in memory may differ from its directory (a resumed run)

    def chat(self, messages: list[dict], **sampling) -> Reply:
        return self.chat_batch([messages], **sampling)[0]

    def chat_batch(self, batch: list[list[dict]], *, temperature: float, max_tokens: int, top_p: float = 1.0,
                   top_k: int = 0) -> list[Reply]:
        if self.asleep:
            raise RuntimeError("the vLLM engine is asleep: call sync_weights() after sleep()")
        prompts = [prompt_ids(self.tokenizer, m) for m in batch]
        # One seed per request from the global generator (seeded per training step): a group's
        # samples differ, and a resumed run draws what the uninterrupted one drew.
        seeds = torch.randint(0, 2**31, (len(prompts),)).tolist()
        params = [self.sampling_params_cls(**sampling_args(temperature, max_tokens, seed, top_p, top_k)) for seed in seeds]
        outputs = self.llm.generate([{"prompt_token_ids": p} for p in prompts], params, use_tqdm=False)
        replies = [reply(p, o) for p, o in zip(prompts, outputs)]
        self.generated_tokens += sum(len(r.response_ids) for r in replies)
        return replies

    def sleep(self) -> None:
        """Free the engine's GPU memory while the trainer updates (needs ``sleep_mode``);
        :meth:`sync_weights` wakes it."""
        if not self.sleep_mode:
            raise RuntimeError("VLLMRollout(sleep_mode=True) is needed to sleep")
        self.llm.sleep(level=1)
        self.asleep = True

    @torch.no_grad()
    def sync_weights(self) -> None:
        """Copy the trained model's current parameters into the engine."""
        if self.asleep:
            self.llm.wake_up(tags=["weights"])
        weights = hf_weights(self.model)
        self.llm.apply_model(lambda engine_model: engine_model.load_weights(weights))
        if self.asleep:
            self.llm.wake_up(tags=["kv_cache"])
            self.asleep = False
        self.llm.reset_prefix_cache()

    def close(self) -> None:
        """End the engine, its process group and its GPU memory (it runs in this process)."""
        from vllm.distributed.parallel_state import cleanup_dist_env_and_memory

        self.llm.llm_engine.engine_core.shutdown()
        del self.llm
        cleanup_dist_env_and_memory()
