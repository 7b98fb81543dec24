"""Checks before anything expensive starts: API keys, GPUs and the pinned GPU stack.

What to check comes from the backends' declarations (:mod:`audiobook_rl.backends`): the provider
whose key a backend needs, the GPU stack it needs, the config keys that set its GPUs. Each check
returns a list of problems, one sentence each, so a user fixes all of them in one go;
:func:`require` turns a non-empty list into a :class:`UserError`. The workflow checks keys when it
starts (cheap, no imports) and the jobs about to run before the first one starts
(:mod:`audiobook_rl.startup`); the seed-backend stages (verl training, vLLM generation) check GPUs
and package versions again in their first second, before loading a model. Package versions and
GPUs are looked up when a check runs (:func:`installed`, :func:`gpu_count`), so a test can stand in
for either.
"""

from __future__ import annotations

import os
from importlib import metadata
from typing import Callable, Mapping

from packaging.version import Version

from . import backends
from .errors import UserError
from .gpus import CPU_FIX, cuda_device_count

INSTALL = "install the GPU environment (envs/gpu.yaml, or pip install -r requirements/gpu.lock)"
FLASH_ATTN_INSTALL = "install it after torch with: pip install flash-attn==2.8.3 --no-build-isolation"
VLLM_MIN, VLLM_BELOW = Version("0.10.2"), Version("0.11")
# The generate stage's engine (agent/vllm_chat.py) uses what every vLLM since 0.10.2 has (offline
# ``LLM``, token-id prompts, seeded ``SamplingParams``): the seed stack pins 0.10.2 (envs/gpu.yaml), and
# 0.26.0 has run it on an H200 (torch 2.11 / CUDA 13).
GENERATE_VLLM_TESTED = ("0.10.2", "0.26.0")
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
        return cuda_device_count()
    except ImportError:
        return 0


def check_keys(config: dict, env: Mapping[str, str] | None = None) -> list[str]:
    """The API keys the configured backends need but the environment lacks (values never shown)."""
    env = os.environ if env is None else env
    problems = []
    chosen = [(section, backends.configured(config, section)) for section in backends.REGISTRY]
    chosen += [(f"judge.agreement[{i}]", backends.get("judge", judge["backend"]))
               for i, judge in enumerate(config["judge"]["agreement"])]
    for section, backend in chosen:
        var = config["llm"]["key_env"][backend.provider] if backend.provider else None
        if var and not env.get(var, "").strip():
            problems.append(
                f"config key '{section}.backend' is '{backend.name}' but {var} is not set; export it "
                f"(the key is read from the environment only) or choose another backend."
            )
    return problems


def _lookup(version: Callable[[str], str | None] | None) -> Callable[[str], str | None]:
    return version or installed  # looked up now: a test may stand in for it


def check_vllm(version: Callable[[str], str | None] | None = None) -> list[str]:
    """vLLM for the seed training stack (verl 0.6.1 + Agent Lightning 0.3.0): 0.10.2 to 0.10.x."""
    version = _lookup(version)
    v = version("vllm")
    if v is None:
        return [f"vllm is not installed; {INSTALL}."]
    # verl 0.6.1 serves rollouts with vLLM's own OpenAI server (it never loads Agent Lightning's
    # patched one), so token ids reach the training data only through vLLM's `return_token_ids`,
    # new in 0.10.2: older vLLM gives rollouts without a single sample. 0.11 needs torch 2.9.
    if not VLLM_MIN <= Version(v) < VLLM_BELOW:
        return [f"vllm {v} is installed but the seed stack needs vllm >= {VLLM_MIN}, < {VLLM_BELOW} (0.10.2 is tested); {INSTALL}."]
    return []


def check_generate_vllm(version: Callable[[str], str | None] | None = None) -> list[str]:
    """vLLM for the generate stage alone: 0.10.2 or newer (any vLLM built for the machine's torch).

    Generation needs none of verl's pins, so a GPU whose torch only a newer vLLM is built for (vLLM
    0.26 for torch 2.11 / CUDA 13) can evaluate checkpoints with it; a newer release than those in
    :data:`GENERATE_VLLM_TESTED` is allowed and logged by the stage.
    """
    v = _lookup(version)("vllm")
    if v is None:
        return [f"vllm is not installed; {INSTALL}."]
    if Version(v) < VLLM_MIN:
        return [f"vllm {v} is older than generation needs (>= {VLLM_MIN}; known to work: {' and '.join(GENERATE_VLLM_TESTED)}); {INSTALL}."]
    return []


def check_flash_attn(version: Callable[[str], str | None] | None = None) -> list[str]:
    """flash-attn, which verl 0.6.1 imports in its FSDP workers (``flash_attn.bert_padding``); without
    it training dies inside Ray workers minutes after the start."""
    if _lookup(version)("flash-attn") is None:
        return [f"flash-attn is not installed but verl's FSDP workers import it; {FLASH_ATTN_INSTALL}."]
    return []


def check_training_stack(version: Callable[[str], str | None] | None = None) -> list[str]:
    """verl 0.6.x, agentlightning 0.3.0, vLLM, OpenTelemetry below 1.45, litellm and flash-attn."""
    version = _lookup(version)
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


def check_gpus(needed: int, what: str, count: Callable[[], int] | None = None, fix: str | None = None) -> list[str]:
    have = (count or gpu_count)()
    if have < needed:
        return [f"{what} needs {needed} GPU(s) on this node but {have} are visible; {fix or f'run on a GPU machine or lower {what}'}."]
    return []


# What fixes too few GPUs, by the key that sets them (a resources.*.gpu key: gpus.CPU_FIX).
GPU_FIX = {"train.gpus_per_node": VERL_GPUS_FIX}


def check_stack(stack: str, version: Callable[[str], str | None] | None = None,
                count: Callable[[], int] | None = None, packages: bool = True) -> list[str]:
    """What the GPU stack ``stack`` of a backend (:attr:`audiobook_rl.backends.Backend.stack`) needs:
    its packages (unless ``packages`` is off: they are another environment's) and a GPU."""
    if stack == "vllm":
        return (check_generate_vllm(version) if packages else []) + check_gpus(1, "config key 'generate.backend' = 'vllm'", count)
    return check_training_stack(version) if packages else []


def check_backend(backend: backends.Backend, config: dict, *, version: Callable[[str], str | None] | None = None,
                  count: Callable[[], int] | None = None, packages: bool = True) -> list[str]:
    """What ``backend`` needs on this machine and lacks: its GPU stack (its packages unless
    ``packages`` is off) and its GPUs."""
    problems = check_stack(backend.stack, version, count, packages) if backend.stack else []
    n = backend.gpus_per_node(config)
    if n > 0:
        key = backend.gpu_keys[-1]
        problems += check_gpus(n, f"config key '{key}'", count, GPU_FIX.get(key, CPU_FIX))
    return problems


def check_training(train: dict, *, version: Callable[[str], str | None] | None = None,
                   count: Callable[[], int] | None = None) -> list[str]:
    """Everything the verl backend of train_grpo needs on this machine (its stage checks it again)."""
    return check_backend(backends.get("train", "verl"), {"train": train}, version=version, count=count)


def require(problems: list[str]) -> None:
    """Raise one :class:`UserError` listing every problem (one sentence per line)."""
    if problems:
        raise UserError("\n".join(problems))
