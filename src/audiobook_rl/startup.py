"""Checks when the workflow starts, before any job runs, so that a bad input costs nothing.

Snakemake deletes a job's old outputs when it starts the job: a stage that then fails on its input
has already thrown away the good results of the last run (and everything after it reruns). What a
stage would reject is therefore checked up front, with the stage's own code: the config's keys,
prompt files and evaluated steps when the workflow is parsed (:func:`check_config`), the corpus
with the slicer's reader and counter, the GPUs and packages of the jobs about to run with the
preflight the stages call (:func:`check_jobs`, for the backends the config has each job run).
Each check returns one sentence per problem.
"""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path
from typing import Callable, Iterable

from . import backends
from .corpus import count_slices, read_text, too_few_slices
from .errors import UserError
from .gpus import CPU_FIX, visible_gpus
from .paths import repo_file
from .preflight import check_backend, check_gpus, check_keys
from .prompts import load_prompt
from .steps import check_eval_steps


def prompt_files(config: dict) -> dict[str, str]:
    """Every prompt file the workflow reads, by config key: the agent's two roles and the prompt of
    each configured backend that reads one."""
    agent = {f"agent.{key}": config["agent"][key] for key in ("create_prompt", "rewrite_prompt")}
    extra = {f"judge.agreement[{i}].prompt": judge["prompt"] for i, judge in enumerate(config["judge"]["agreement"])
             if backends.get("judge", judge["backend"]).prompt}
    return {**agent, **backends.prompt_files(config), **extra}


def check_config(config: dict) -> list[str]:
    """What the validated config asks for and cannot have: API keys of its paid backends, prompt files,
    evaluated steps that training does not save, a warm start with nothing to learn."""
    problems = check_keys(config)
    for key, path in prompt_files(config).items():
        if not repo_file(path).is_file():
            problems.append(f"config key '{key}': prompt file {path} not found.")
    try:
        check_eval_steps(config["train"], config["eval"]["steps"])
    except UserError as err:
        problems.append(str(err))
    problems += _context_problems(config["agent"])
    sft = config["sft"]
    if sft["epochs"] > 0 and not sft["references"] and sft["window_draws"] == 0:
        problems.append("config key 'sft.references' is false and 'sft.window_draws' is 0: the warm start would "
                        "have nothing to learn; set sft.window_draws (e.g. 3) or sft.references: true.")
    return problems


def _context_problems(agent: dict) -> list[str]:
    """An agent that would be given the text before each excerpt and never show it, or the reverse."""
    paths = {key: agent[key] for key in ("create_prompt", "rewrite_prompt")}
    if not all(repo_file(path).is_file() for path in paths.values()):
        return []  # (reported above)
    showing = [key for key, path in paths.items() if load_prompt(repo_file(path)).uses("before")]
    if agent["context_chars"] and not showing:
        return [f"config key 'agent.context_chars' is {agent['context_chars']} but neither {paths['create_prompt']} nor "
                f"{paths['rewrite_prompt']} has a {{{{before}}}} placeholder, so the agent would never see that text; "
                "use config/prompts/create_context.md and rewrite_context.md, or set agent.context_chars to 0."]
    if not agent["context_chars"] and showing:
        shown = " and ".join(paths[key] for key in showing)
        verb = "show" if len(showing) > 1 else "shows"
        return [f"{shown} {verb} the text before each excerpt ({{{{before}}}}) but config key 'agent.context_chars' "
                "is 0, so it would always be empty; set agent.context_chars (e.g. 600) or use prompts without {{before}}."]
    return []


def check_corpus(path: str | Path, config: dict, keys: Iterable[str] = ("slice.n_slices",)) -> list[str]:
    """What slice_corpus would reject: a corpus that is missing, empty or not text, or too short for
    the excerpts each config key of ``keys`` asks for (``slice.n_slices``, or the warm start's
    ``policy.warm_start.windows_per_draw``, cut with the min_chars/max_chars beside it)."""
    try:
        text, _ = read_text(path)
    except UserError as err:
        return [str(err)]
    problems = []
    for key in keys:
        section, _, name = key.rpartition(".")
        settings = functools.reduce(dict.__getitem__, section.split("."), config)
        n, lo, hi = settings[name], settings["min_chars"], settings["max_chars"]
        found = count_slices(text, min_chars=lo, max_chars=hi, enough=n)
        if found < n:
            problems.append(str(too_few_slices(str(path), found, n, lo, hi, key)))
    return problems


def usable_gpus() -> int:
    """The GPUs a job started now could use: what torch sees, asked in a child process so that
    neither torch nor CUDA is loaded into the workflow's own process."""
    probe = "from audiobook_rl.preflight import gpu_count; print(gpu_count())"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    return int(done.stdout.strip() or 0) if done.returncode == 0 else 0


def driver_gpus() -> int:
    """The GPUs the driver shows (``CUDA_VISIBLE_DEVICES``, else ``nvidia-smi``), for jobs whose torch
    is another environment's."""
    return len(visible_gpus())


def uses_conda(deployment_settings) -> bool:
    """Whether jobs run in their rules' conda environments (``--sdm conda``), given Snakemake's
    ``workflow.deployment_settings``."""
    from snakemake_interface_executor_plugins.settings import DeploymentMethod

    return DeploymentMethod.CONDA in deployment_settings.deployment_method


def check_jobs(config: dict, rules: Iterable[str], corpus: str | Path, count: Callable[[], int] | None = None,
               conda: bool = False) -> list[str]:
    """What the jobs of ``rules`` (those about to run on this machine) need and lack: excerpts for
    the warm starts (the built policy's, and sft_policy's windows of the corpus), and the GPUs and
    GPU stack of the backends they run, as the stages check them when they start.

    With ``conda`` (``--sdm conda``) the jobs run in environments Snakemake builds (envs/*.yaml), not
    in this Python: their packages are not checked here (each stage checks its own in its first
    second) and GPUs are counted from the driver, not by this Python's torch."""
    rules = set(rules)
    count = functools.cache(count or (driver_gpus if conda else usable_gpus))  # asking torch takes seconds
    problems = []
    if "build_policy" in rules and not config["policy"]["pretrained"]:
        problems += check_corpus(corpus, config, ["policy.warm_start.windows_per_draw"])
    if "sft_policy" in rules and config["sft"]["window_draws"] > 0:  # its windows are cut as the slices are
        lengths = {name: config["slice"][name] for name in ("min_chars", "max_chars")}
        problems += check_corpus(corpus, {"sft": {**config["sft"], **lengths}}, ["sft.windows_per_draw"])
    if "sft_policy" in rules and config["resources"]["sft_policy"]["gpu"] > 0:
        key = "resources.sft_policy.gpu"
        problems += check_gpus(config["resources"]["sft_policy"]["gpu"], f"config key '{key}'", count, CPU_FIX)
    for rule in sorted(rules):
        for _, backend, entry in backends.of_rule(config, rule):
            if entry == "run":  # a backend's GPUs and stack are those of its work; exports run on the CPU
                problems += check_backend(backend, config, count=count, packages=not conda)
    return list(dict.fromkeys(problems))
