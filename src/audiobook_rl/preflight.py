"""Checks before anything expensive starts: API keys, GPUs and the pinned GPU stack.

Each check returns a list of problems, one sentence each, so a user fixes all of them in one go;
:func:`require` turns a non-empty list into a :class:`UserError`. The workflow checks keys when it
starts (cheap, no imports); the seed-backend stages (verl training, vLLM generation) check GPUs and
package versions in their first second, before loading a model.
"""

from __future__ import annotations

import os
from importlib import metadata
from typing import Callable, Mapping

from packaging.version import Version

from .errors import UserError

# (config section, backend) -> the provider whose key it needs; the variable holding each provider's
# key is config key 'llm.key_env' (these are its defaults).
PROVIDERS = {
    ("label", "claude"): "anthropic",
    ("judge", "glm"): "zhipuai",
    ("judge", "openai"): "openai",
    ("train.reward", "glm"): "zhipuai",
    ("train.reward", "openai"): "openai",
}
KEY_ENV = {"anthropic": "ANTHROPIC_API_KEY", "zhipuai": "ZHIPUAI_API_KEY", "openai": "OPENAI_API_KEY"}
INSTALL = "install the GPU environment (envs/gpu.yaml, or pip install -r requirements/gpu.lock)"
FLASH_ATTN_INSTALL = "install it after torch with: pip install flash-attn==2.8.3 --no-build-isolation"
VLLM_MIN, VLLM_BELOW = Version("0.10.2"), Version("0.11")
# OpenTelemetry >= 1.45 binds the exporter endpoint at construction, which Agent Lightning 0.3.0
# rewrites afterwards: every runner span is lost and training stops with "No spans provided".
OTEL = ("opentelemetry-api", "opentelemetry-sdk", "opentelemetry-proto", "opentelemetry-exporter-otlp",
        "opentelemetry-exporter-otlp-proto-http", "opentelemetry-exporter-otlp-proto-grpc",
        "opentelemetry-exporter-otlp-proto-common")


def installed(name: str) -> str | None:
    """The installed version of distribution ``name``, or None."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def gpu_count() -> int:
    """CUDA devices visible to this process (0 without torch or CUDA), counted without starting CUDA."""
    try:
        from .gpus import cuda_device_count

        return cuda_device_count()
    except ImportError:
        return 0


def check_keys(config: dict, env: Mapping[str, str] | None = None) -> list[str]:
    """The API keys the configured backends need but the environment lacks (values never shown)."""
    env = os.environ if env is None else env
    key_env = {**KEY_ENV, **config.get("llm", {}).get("key_env", {})}
    problems = []
    sections = {name: config.get(name, {}) for name in ("label", "judge")}
    sections["train.reward"] = config.get("train", {}).get("reward", {})
    for (section, backend), provider in PROVIDERS.items():
        var = key_env.get(provider)
        if var and sections.get(section, {}).get("backend") == backend and not env.get(var, "").strip():
            problems.append(
                f"config key '{section}.backend' is '{backend}' but {var} is not set; export it "
                f"(the key is read from the environment only) or choose another backend."
            )
    return problems


def check_vllm(version: Callable[[str], str | None] = installed) -> list[str]:
    v = version("vllm")
    if v is None:
        return [f"vllm is not installed; {INSTALL}."]
    # verl 0.6.1 serves rollouts with vLLM's own OpenAI server (it never loads Agent Lightning's
    # patched one), so token ids reach the training data only through vLLM's `return_token_ids`,
    # new in 0.10.2: older vLLM gives rollouts without a single sample. 0.11 needs torch 2.9.
    if not VLLM_MIN <= Version(v) < VLLM_BELOW:
        return [f"vllm {v} is installed but the seed stack needs vllm >= {VLLM_MIN}, < {VLLM_BELOW} (0.10.2 is tested); {INSTALL}."]
    return []


def check_flash_attn(version: Callable[[str], str | None] = installed) -> list[str]:
    """flash-attn, which verl 0.6.1 imports in its FSDP workers (``flash_attn.bert_padding``); without
    it training dies inside Ray workers minutes after the start."""
    if version("flash-attn") is None:
        return [f"flash-attn is not installed but verl's FSDP workers import it; {FLASH_ATTN_INSTALL}."]
    return []


def check_training_stack(version: Callable[[str], str | None] = installed) -> list[str]:
    """verl 0.6.x, agentlightning 0.3.0, vLLM, OpenTelemetry below 1.45, litellm and flash-attn."""
    problems = []
    v = version("verl")
    if v is None or not v.startswith("0.6."):
        # verl >= 0.9 removed what agentlightning 0.3.0 imports (create_rl_sampler, fsdp_workers).
        problems.append(f"{_have('verl', v)} but the seed backend needs verl 0.6.1; {INSTALL}.")
    v = version("agentlightning")
    if v != "0.3.0":
        problems.append(
            f"{_have('agentlightning', v)} but the seed backend needs "
            f"agentlightning==0.3.0 exactly (1.x is a different API); {INSTALL}."
        )
    problems += check_vllm(version)
    too_new = [f"{n} {version(n)}" for n in OTEL if version(n) and Version(version(n)) >= Version("1.45")]
    if too_new:
        problems.append(
            f"{', '.join(too_new)} installed but Agent Lightning 0.3.0 loses its traces with OpenTelemetry "
            f">= 1.45; pin opentelemetry-* to 1.44.0 as requirements/gpu.lock does."
        )
    if version("litellm") is None:
        problems.append(f"litellm is not installed (Agent Lightning's LLM proxy needs litellm[proxy]); {INSTALL}.")
    return problems + check_flash_attn(version)


def _have(name: str, v: str | None) -> str:
    return f"{name} {v} is installed" if v else f"{name} is not installed"


# What fixes too few GPUs for the verl backend: train.gpus_per_node cannot be 0.
VERL_GPUS_FIX = "run where that many GPUs are visible, or train on the CPU with train.backend: local"


def check_gpus(needed: int, what: str, count: Callable[[], int] = gpu_count, fix: str | None = None) -> list[str]:
    have = count()
    if have < needed:
        return [f"{what} needs {needed} GPU(s) on this node but {have} are visible; {fix or f'run on a GPU machine or lower {what}'}."]
    return []


def check_training(train: dict, judge: dict | None = None, *, key_env: dict | None = None,
                   env: Mapping[str, str] | None = None, version: Callable[[str], str | None] = installed,
                   count: Callable[[], int] = gpu_count) -> list[str]:
    """Everything the verl backend of train_grpo needs (the judge gives the reward inside each rollout)."""
    problems = check_training_stack(version)
    problems += check_gpus(train["gpus_per_node"], "config key 'train.gpus_per_node'", count, VERL_GPUS_FIX)
    if judge is not None:
        problems += check_keys({"judge": judge, "llm": {"key_env": key_env or {}}}, env)
    return problems


def check_generation(generate: dict, *, version: Callable[[str], str | None] = installed,
                     count: Callable[[], int] = gpu_count) -> list[str]:
    """What the vLLM backend of generate needs."""
    if generate.get("backend") != "vllm":
        return []
    return check_vllm(version) + check_gpus(1, "config key 'generate.backend' = 'vllm'", count)


def require(problems: list[str]) -> None:
    """Raise one :class:`UserError` listing every problem (one sentence per line)."""
    if problems:
        raise UserError("\n".join(problems))
