"""The seed experiment's DAG (config/seed.yaml) plans on a machine without GPUs, with dummy keys:
the stages of SPEC §1, the evaluated steps of the seed, and the GPUs each rule declares."""

from __future__ import annotations

import re

import pytest

from helpers import REPO
from helpers.workflow import snakemake

pytestmark = pytest.mark.slow

BLOCK = re.compile(r"^(?:local)?rule (\w+):\n(.*?)(?=\n\n|\Z)", re.M | re.S)


def planned_jobs(workdir, *args, env=None) -> list[tuple[str, dict, dict, list[str]]]:
    """(rule, wildcards, resources, outputs and logs) of every job of a dry run."""
    proc = snakemake(workdir, "-n", *args, env=env)
    jobs = []
    for rule, body in BLOCK.findall(proc.stdout):
        fields = dict(re.findall(r"^\s+(\w+): (.*)$", body, re.M))
        parse = lambda text: dict(kv.split("=", 1) for kv in text.split(", ")) if text else {}  # noqa: E731
        written = [p for key in ("output", "log") for p in fields.get(key, "").split(", ") if p]
        jobs.append((rule, parse(fields.get("wildcards", "")), parse(fields.get("resources", "")), written))
    return jobs


def seed_plan(workdir):
    env = {"ANTHROPIC_API_KEY": "dummy-anthropic", "ZHIPUAI_API_KEY": "dummy-zhipuai"}
    return planned_jobs(workdir, "--cores", "8", "--resources", "gpu=2", "--configfile", str(REPO / "config/seed.yaml"), env=env)


def test_seed_run_writes_only_under_its_own_run_name(workdir):
    # The embedded default's results/ and logs/ are never overwritten by the seed run.
    written = [path for *_, paths in seed_plan(workdir) for path in paths]
    assert any(p.endswith("report.html") for p in written)
    assert all(p.startswith(("results/runs/seed/", "logs/runs/seed/")) for p in written), written


def test_seed_dag_declares_two_gpus_for_training_and_one_per_generation(workdir):
    jobs = seed_plan(workdir)
    by_rule: dict[str, list] = {}
    for rule, wildcards, resources, _ in jobs:
        by_rule.setdefault(rule, []).append((wildcards, resources))
    for rule in ("slice_corpus", "label_slices", "split_dataset", "build_policy", "train_grpo", "report"):
        assert len(by_rule[rule]) == 1, rule
    [(_, train)] = by_rule["train_grpo"]
    assert train["gpu"] == "2"
    # every rollout is judged by GLM: training shares the paid-API budget with the judge jobs
    assert train["llm_api"] == "1"
    assert sorted(int(w["step"]) for w, _ in by_rule["export_checkpoint"]) == [1000, 1400, 1600]
    generate = by_rule["generate"]
    assert sorted(int(w["step"]) for w, _ in generate) == [0, 1000, 1400, 1600]
    assert {r["gpu"] for _, r in generate} == {"1"}
    assert sorted(int(w["step"]) for w, _ in by_rule["judge"]) == [0, 1000, 1400, 1600]


def conda_envs(workdir, *configfiles) -> dict[str, str | None]:
    """The conda environment of every rule (what `--sdm conda` would build), read from the parsed workflow."""
    import os

    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, ResourceSettings

    from conftest import REPO

    keys = {"ANTHROPIC_API_KEY": "dummy-anthropic", "ZHIPUAI_API_KEY": "dummy-zhipuai"}
    saved = {k: os.environ.get(k) for k in keys}
    os.environ.update(keys)
    try:
        with SnakemakeApi() as api:
            workflow = api.workflow(resource_settings=ResourceSettings(),
                                    config_settings=ConfigSettings(configfiles=list(configfiles)),
                                    snakefile=REPO / "Snakefile", workdir=workdir)
            return {rule.name: rule.conda_env for rule in workflow._workflow.rules}
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k)
            else:
                os.environ[k] = v


def test_under_sdm_conda_the_seed_backends_stages_use_the_locked_gpu_environment(workdir):
    from conftest import REPO

    seed = conda_envs(workdir, REPO / "config/seed.yaml")
    gpu = {rule for rule, env in seed.items() if env == "../envs/gpu.yaml"}
    assert gpu == {"train_grpo", "export_checkpoint", "generate"}
    assert {env for rule, env in seed.items() if rule not in gpu} <= {"../envs/pipeline.yaml", None}
    assert "../envs/gpu.yaml" not in conda_envs(workdir).values()  # the embedded default needs no GPU stack
