"""The cluster profiles: what SLURM and Kubernetes would be asked for each rule.

SLURM: the real executor plugin submits through stand-in `sbatch`/`sacctmgr` commands that record
the call (the training and generation jobs are the first ready jobs), and a dry run of the whole
DAG with the seed's GPU counts shows each job's resources. Kubernetes: a dry run against an S3
endpoint on 127.0.0.1 (the plugin's storage provider) shows the GPU requests of each job.
"""

from __future__ import annotations

import os
import re

import pytest
import yaml

from helpers import REPO
from helpers.workflow import snakemake
from helpers.cluster import S3Stub, fake_slurm, touch_in_order

pytestmark = pytest.mark.slow

SLURM = REPO / "profiles" / "slurm"
K8S = REPO / "profiles" / "kubernetes"
# The seed's job sizes (config/seed.yaml): 2 GPUs to train, 1 per generation.
GPUS = {"resources": {"train_grpo": {"gpu": 2, "threads": 8, "mem_mb": 96000, "runtime": 4320},
                      "generate": {"gpu": 1, "threads": 4, "mem_mb": 32000, "runtime": 60}}}


def profile(path):
    return yaml.safe_load((path / "profile.yaml").read_text())


def overlay(tmp_path, data: dict):
    path = tmp_path / "gpus.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def planned_jobs(stdout: str) -> list[dict]:
    """The jobs of a dry run: rule, group, wildcards, threads and resources (ints where numeric).
    Members of a group job are printed indented under "Group job NAME"."""
    jobs, job, group = [], None, None
    for line in stdout.splitlines():
        m = re.match(r"^\[.*\] Group job (\w+)", line)
        if m:
            group = m.group(1)
            continue
        m = re.match(r"^( *)(?:local)?rule (\w+):$", line)
        if m:
            job = {"rule": m.group(2), "group": group if m.group(1) else None, "resources": {}, "threads": 1,
                   "wildcards": ""}
            group = group if m.group(1) else None
            jobs.append(job)
            continue
        if job is None:
            continue
        m = re.match(r"^ +(resources|threads|wildcards): (.*)$", line)
        if m and m.group(1) == "resources":
            for item in m.group(2).split(", "):
                key, _, value = item.partition("=")
                job["resources"][key] = int(value) if value.isdigit() else value
        elif m:
            job[m.group(1)] = int(m.group(2)) if m.group(2).isdigit() else m.group(2)
    return jobs


@pytest.fixture
def upstream_done(tmp_path):
    """A working directory where the data half and the base policy are built: the next jobs to
    start are training and the generation of step 0, both GPU jobs."""
    touch_in_order(tmp_path, ["results/slices.jsonl", "results/labels.jsonl", "results/data/train.parquet",
                              "results/data/val.parquet", "results/models/step_0/"])
    return tmp_path


def submitted(log_path) -> dict[str, str]:
    calls = log_path.read_text().splitlines() if log_path.exists() else []
    return {re.search(r"--comment rule_(\w+?)(?:_wildcards_\S+)? ", c).group(1): c for c in calls}


def test_slurm_submits_gpu_jobs_with_their_gpus_partition_and_account(upstream_done, tmp_path):
    work, log = upstream_done, tmp_path / "sbatch.log"
    settings = profile(SLURM)
    account = settings["default-resources"]["slurm_account"]
    bin_dir = fake_slurm(tmp_path / "bin", account)
    proc = snakemake(
        work, "results/train/metrics.jsonl", "results/eval/step_0/outputs.jsonl",
        "--workflow-profile", str(SLURM), "--configfile", overlay(tmp_path, GPUS),
        "--keep-going", "--retries", "0", "--slurm-init-seconds-before-status-checks", "1",
        check=False, env={"PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_SLURM_LOG": str(log)},
    )
    calls = submitted(log)
    assert set(calls) == {"train_grpo", "generate"}, proc.stdout[-3000:] + proc.stderr[-3000:]
    for rule in ("train_grpo", "generate"):
        call, size = calls[rule], GPUS["resources"][rule]
        assert f" --gpus={size['gpu']} " in call
        assert f" -p {settings['set-resources'][rule]['slurm_partition']} " in call and f" -A {account} " in call
        assert f" -t {size['runtime']} " in call and f" --mem {size['mem_mb']} " in call
        # One task for the whole job (the Ray driver / the generator) with all its CPUs, not one per GPU.
        assert f" --cpus-per-task={size['threads']} " in call and "--ntasks" not in call


def test_slurm_dry_run_of_the_seed_shows_gpu_counts_for_training_and_every_generation(tmp_path):
    proc = snakemake(tmp_path, "-n", "--executor", "slurm", "--workflow-profile", str(SLURM),
                     "--configfile", str(REPO / "config/seed.yaml"),
                     env={"ANTHROPIC_API_KEY": "dummy", "ZHIPUAI_API_KEY": "dummy"})
    jobs = planned_jobs(proc.stdout)
    train = [j for j in jobs if j["rule"] == "train_grpo"]
    generate = [j for j in jobs if j["rule"] == "generate"]
    assert len(train) == 1 and train[0]["resources"]["gpu"] == 2
    assert train[0]["resources"]["slurm_partition"] == profile(SLURM)["set-resources"]["train_grpo"]["slurm_partition"]
    assert len(generate) >= 2 and all(j["resources"]["gpu"] == 1 for j in generate)
    # CPU-only jobs stay on the CPU partition with the default budget.
    cpu = [j for j in jobs if j["rule"] in ("slice_corpus", "split_dataset")]
    assert cpu and all(j["resources"]["slurm_partition"] == profile(SLURM)["default-resources"]["slurm_partition"]
                       and not j["resources"].get("gpu") for j in cpu)


def test_kubernetes_dry_run_requests_nvidia_gpus_through_s3_storage(tmp_path):
    settings = profile(K8S)
    bucket = settings["default-storage-prefix"].removeprefix("s3://").split("/")[0]
    with S3Stub(bucket) as s3:
        proc = snakemake(tmp_path, "-n", "--workflow-profile", str(K8S), "--storage-s3-endpoint-url", s3.url,
                         "--configfile", overlay(tmp_path, GPUS),
                         env={"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"})
    assert any(path.startswith(f"/{bucket}") for _, path in s3.requests)  # the plan was checked against storage
    jobs = planned_jobs(proc.stdout)
    by_rule = {j["rule"]: j for j in jobs}
    assert by_rule["train_grpo"]["resources"]["gpu"] == 2 and by_rule["generate"]["resources"]["gpu"] == 1
    # The plugin refuses a job with a gpu resource (even 0) but no manufacturer.
    assert all(j["resources"].get("gpu_manufacturer") == "nvidia" for j in jobs if "gpu" in j["resources"])
    assert f"{settings['default-storage-prefix']}/results/report.html" in proc.stdout
    # Checkpoints stay on the training pod's disk: their exports run in the same pod (one group job).
    assert {j["group"] for j in jobs if j["rule"] in ("train_grpo", "export_checkpoint")} == {"training"}
    assert {j["group"] for j in jobs if j["rule"] == "generate"} == {None}


def test_the_local_profile_keeps_the_gpu_and_api_budgets():
    local = profile(REPO / "profiles" / "default")
    budgets = dict(r.split("=") for r in local["resources"])
    assert set(budgets) >= {"gpu", "llm_api"}
    # On a cluster the scheduler owns the GPUs: a Snakemake gpu limit there would shrink big jobs.
    for cluster in (SLURM, K8S):
        assert not any(r.startswith("gpu=") for r in profile(cluster)["resources"])
