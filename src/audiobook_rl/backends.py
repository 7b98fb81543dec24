"""Every stage's backends, in one registry: what each needs, and the code that does its work.

A :class:`Backend` is a small declaration: its name, the function that does its work (as
``"module:function"``), the LLM provider whose key and rate limit it uses, whether it reads its
section's ``prompt`` file, the GPU stack it needs beyond the pipeline's packages, and the config
keys that set its GPUs. The workflow reads these facts to declare each rule's inputs (the prompt
files, and the modules the configured backend runs: editing a backend that is not configured
reruns nothing), resources (GPUs, ``llm_api``) and conda environment; the start-up checks read
them to find what a job lacks before it starts. No backend name is compared anywhere else.

The registry imports none of the modules it names: :meth:`Backend.load` imports one when a stage
script (or the command line) asks for it, so reading the registry costs nothing and sits below
every stage in the import graph.

What each stage's function takes and returns (one interface per stage):

- ``label`` (rule label_slices): ``labeler(settings, lexicon) -> Labeler`` with ``backend``, ``model``
  and ``label(slices, progress) -> list[list[Segment]]``;
- ``judge`` (rule judge) and ``train.reward`` (rule train_grpo): ``judge(settings, llm) -> Judge``
  with ``backend``, ``model``, ``score(...) -> Verdict`` and ``score_many(cases)``
  (:mod:`audiobook_rl.judging`);
- ``generate`` (rule generate): ``client(model_dir, settings, device) -> ChatClient`` with ``close()``,
  which ends what the client started (vLLM's engine process) (:mod:`audiobook_rl.agent.episode`);
- ``train`` (rules train_grpo and export_checkpoint): ``train_stage(job: TrainingJob) -> summary`` and
  ``export_stage(job: ExportJob) -> step`` (:mod:`audiobook_rl.training`).
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass
from typing import Callable

from .errors import UserError


@dataclass(frozen=True)
class Backend:
    name: str
    run: str  # "module:function" that does the stage's work
    provider: str | None = None  # LLM provider: its key must be set, its jobs take one `llm_api`
    prompt: bool = False  # reads the prompt file of its section's `prompt` key
    # The GPU environment (envs/gpu.yaml) its functions run in, whose packages ("vllm" or "verl") and
    # GPUs its `run` job needs; exports run on the CPU.
    stack: str | None = None
    gpu_keys: tuple[str, ...] = ()  # config keys whose product is the job's GPUs; the last is per node
    export: str | None = None  # training: "module:function" of export_checkpoint
    # The keys of its config section it reads besides `backend` (None: all of them). Only these are
    # its rule's params, so editing a key the configured backend never reads reruns nothing.
    reads: tuple[str, ...] | None = None

    def load(self, entry: str = "run") -> Callable:
        """The function named by ``entry`` ("run" or "export"), imported now."""
        module, _, name = getattr(self, entry).partition(":")
        return getattr(importlib.import_module(module), name)

    def modules(self, entry: str = "run") -> list[str]:
        """The module that does the work of ``entry`` (with its imports: the rule's code inputs)."""
        target = getattr(self, entry)
        return [target.partition(":")[0]] if target else []

    def gpus(self, config: dict) -> int:
        """GPUs its job takes, in all (0 = CPU)."""
        return math.prod(int(lookup(config, key)) for key in self.gpu_keys) if self.gpu_keys else 0

    def gpus_per_node(self, config: dict) -> int:
        return int(lookup(config, self.gpu_keys[-1])) if self.gpu_keys else 0


REGISTRY: dict[str, dict[str, Backend]] = {
    "label": {
        "rules": Backend("rules", "audiobook_rl.labeling.rules:labeler", reads=()),
        "claude": Backend("claude", "audiobook_rl.labeling.claude:labeler", provider="anthropic", prompt=True,
                          reads=("model", "prompt", "max_tokens", "temperature", "max_attempts", "min_coverage",
                                 "context_chars")),
    },
    "judge": {
        "rubric": Backend("rubric", "audiobook_rl.judging.rubric:judge"),
        "glm": Backend("glm", "audiobook_rl.judging.llm_judge:judge", provider="zhipuai", prompt=True),
        "openai": Backend("openai", "audiobook_rl.judging.llm_judge:judge", provider="openai", prompt=True),
    },
    "generate": {
        "hf": Backend("hf", "audiobook_rl.agent.hf_chat:client", gpu_keys=("resources.generate.gpu",)),
        "vllm": Backend("vllm", "audiobook_rl.agent.vllm_chat:client", stack="vllm", gpu_keys=("resources.generate.gpu",)),
    },
    "train": {
        "local": Backend("local", "audiobook_rl.training.local_grpo:train_stage", gpu_keys=("resources.train_grpo.gpu",),
                         export="audiobook_rl.training.export_local:export_stage"),
        "verl": Backend("verl", "audiobook_rl.training.verl.backend:train_stage", stack="verl",
                        gpu_keys=("train.nnodes", "train.gpus_per_node"),
                        export="audiobook_rl.training.verl.export:export_stage"),
    },
}
REGISTRY["train.reward"] = REGISTRY["judge"]  # the training reward is a judge

# The backends each rule runs: (config section, which of its functions).
RULES: dict[str, tuple[tuple[str, str], ...]] = {
    "label_slices": (("label", "run"),),
    "train_grpo": (("train", "run"), ("train.reward", "run")),
    "export_checkpoint": (("train", "export"),),
    "generate": (("generate", "run"),),
    "judge": (("judge", "run"),),
}


def lookup(config: dict, key: str):
    """The value of a dotted config key (``train.reward``, ``resources.generate.gpu``)."""
    value = config
    for part in key.split("."):
        value = value[part]
    return value


def get(section: str, name: str) -> Backend:
    """The backend ``name`` of config section ``section``; one sentence for a name it does not have."""
    choices = REGISTRY[section]
    if name not in choices:
        raise UserError(f"config key '{section}.backend' is {name!r}; choose one of {sorted(choices)}.")
    return choices[name]


def configured(config: dict, section: str) -> Backend:
    """The backend the config chooses for ``section``."""
    return get(section, lookup(config, section)["backend"])


def settings(config: dict, section: str) -> dict:
    """The part of ``section`` that its configured backend reads (its rule's params): ``backend`` and
    the backend's keys, so that the rule labeler's run is not redone when a Claude setting changes."""
    values = lookup(config, section)
    reads = configured(config, section).reads
    return dict(values) if reads is None else {k: v for k, v in values.items() if k == "backend" or k in reads}


def of_rule(config: dict, rule: str) -> list[tuple[str, Backend, str]]:
    """(section, backend, entry) of every backend the config has ``rule`` run."""
    return [(section, configured(config, section), entry) for section, entry in RULES.get(rule, ())]


def prompt_files(config: dict, rule: str | None = None) -> dict[str, str]:
    """The prompt files the configured backends read, by config key (of ``rule`` only, if given)."""
    files = {}
    for name, rules in RULES.items():
        if rule is not None and name != rule:
            continue
        for section, backend, _ in of_rule(config, name):
            if backend.prompt:
                files[f"{section}.prompt"] = lookup(config, section)["prompt"]
    return files
