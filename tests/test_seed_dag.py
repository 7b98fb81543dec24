"""The seed experiment's DAG (config/seed.yaml) plans on a machine without GPUs, with dummy keys:
the stages of SPEC §1, the evaluated steps of the seed, and the GPUs each rule declares."""

from __future__ import annotations

import re

from conftest import REPO, snakemake

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
    assert sorted(int(w["step"]) for w, _ in by_rule["export_checkpoint"]) == [1000, 1400, 1600]
    generate = by_rule["generate"]
    assert sorted(int(w["step"]) for w, _ in generate) == [0, 1000, 1400, 1600]
    assert {r["gpu"] for _, r in generate} == {"1"}
    assert sorted(int(w["step"]) for w, _ in by_rule["judge"]) == [0, 1000, 1400, 1600]
