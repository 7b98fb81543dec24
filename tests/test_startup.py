"""The workflow's start-up checks say what a stage would say, before any job deletes old outputs.

The corpus check and the slicing stage must agree on every bad corpus (same sentence, same count);
the job check names what the jobs about to run lack, and nothing for jobs that will not run.
"""

from __future__ import annotations

import copy

import pytest

from audiobook_rl import preflight
from audiobook_rl.config import load_config
from audiobook_rl.corpus import read_text, slice_text
from audiobook_rl.errors import UserError
from audiobook_rl.startup import check_config, check_corpus, check_jobs, usable_gpus
from helpers import REPO, STORY
from helpers.workflow import BAD_CORPORA

CONFIG = load_config(REPO / "config/config.yaml", REPO / "config/config.schema.yaml")


def stage_error(path, settings) -> str:
    """The sentence slice_corpus stops with (its own reading and cutting code)."""
    with pytest.raises(UserError) as err:
        text, _ = read_text(path)
        slice_text(text, n=settings["n_slices"], min_chars=settings["min_chars"], max_chars=settings["max_chars"],
                   seed=settings["seed"], source=str(path))
    return str(err.value)


@pytest.mark.parametrize("name", BAD_CORPORA)
def test_the_start_up_check_says_what_the_stage_would(tmp_path, name):
    path = tmp_path / "novel.txt"
    if BAD_CORPORA[name] is not None:
        path.write_bytes(BAD_CORPORA[name])
    assert check_corpus(path, CONFIG) == [stage_error(path, CONFIG["slice"])]


def test_a_good_corpus_passes_and_a_request_too_large_for_it_does_not(tmp_path):
    assert check_corpus(STORY, CONFIG) == []
    greedy = copy.deepcopy(CONFIG)
    greedy["slice"]["n_slices"] = 500
    [problem] = check_corpus(STORY, greedy)
    assert problem == stage_error(STORY, greedy["slice"])
    assert "but 500 were requested; use a longer text or lower slice.n_slices." in problem


def test_the_warm_start_of_a_built_policy_needs_its_own_excerpts(tmp_path):
    corpus = tmp_path / "novel.txt"
    corpus.write_text(STORY.read_text(encoding="utf-8")[:4000], encoding="utf-8")
    [problem] = check_jobs(CONFIG, {"build_policy"}, corpus, count=lambda: 0)
    assert problem.startswith(f"{corpus}: can make only ")
    assert problem.endswith("but 40 were requested; use a longer text or lower policy.warm_start.windows_per_draw.")
    pretrained = {**CONFIG, "policy": {**CONFIG["policy"], "pretrained": "some/model"}}
    assert check_jobs(pretrained, {"build_policy"}, corpus, count=lambda: 0) == []
    assert check_jobs(CONFIG, {"report"}, corpus, count=lambda: 0) == []


def test_the_sft_windows_of_the_corpus_are_checked_only_when_asked_for(tmp_path):
    corpus = tmp_path / "novel.txt"
    corpus.write_text(STORY.read_text(encoding="utf-8")[:4000], encoding="utf-8")
    assert check_jobs(CONFIG, {"sft_policy"}, corpus, count=lambda: 0) == []  # window_draws 0: none cut
    windows = {**CONFIG, "sft": {**CONFIG["sft"], "epochs": 3, "window_draws": 2}}
    [problem] = check_jobs(windows, {"sft_policy"}, corpus, count=lambda: 0)
    assert problem.startswith(f"{corpus}: can make only ")
    assert problem.endswith("but 40 were requested; use a longer text or lower sft.windows_per_draw.")
    assert check_jobs(windows, {"sft_policy"}, STORY, count=lambda: 0) == []


def test_a_warm_start_without_references_needs_windows_of_the_corpus():
    sft = {"epochs": 3, "references": False, "window_draws": 0}
    [problem] = check_config({**CONFIG, "sft": {**CONFIG["sft"], **sft}})
    assert problem == ("config key 'sft.references' is false and 'sft.window_draws' is 0: the warm start would have "
                       "nothing to learn; set sft.window_draws (e.g. 3) or sft.references: true.")
    assert check_config({**CONFIG, "sft": {**CONFIG["sft"], **sft, "window_draws": 2}}) == []
    assert check_config({**CONFIG, "sft": {**CONFIG["sft"], **sft, "epochs": 0}}) == []  # no warm start at all


def test_the_text_before_each_excerpt_needs_prompts_that_show_it_and_the_reverse():
    context = {"create_prompt": "config/prompts/create_context.md", "rewrite_prompt": "config/prompts/rewrite_context.md"}
    with_context = {**CONFIG, "agent": {**CONFIG["agent"], **context, "context_chars": 600}}
    assert check_config(with_context) == []
    [problem] = check_config({**CONFIG, "agent": {**CONFIG["agent"], "context_chars": 600}})
    assert problem.startswith("config key 'agent.context_chars' is 600 but neither config/prompts/create.md nor "
                              "config/prompts/rewrite.md has a {{before}} placeholder")
    [problem] = check_config({**CONFIG, "agent": {**CONFIG["agent"], **context}})
    assert problem.startswith("config/prompts/create_context.md and config/prompts/rewrite_context.md show the text "
                              "before each excerpt ({{before}}) but config key 'agent.context_chars' is 0")
    one = {**CONFIG["agent"], "create_prompt": context["create_prompt"], "context_chars": 600}
    assert check_config({**CONFIG, "agent": one}) == []  # (the rewrite role may go without it)


def test_verl_on_a_machine_without_gpus_names_the_cpu_backend_not_a_zero(monkeypatch):
    monkeypatch.setattr(preflight, "installed", lambda name: None)  # the GPU stack missing, whatever is installed
    verl = {**CONFIG, "train": {**CONFIG["train"], "backend": "verl"}}
    problems = check_jobs(verl, {"train_grpo"}, STORY, count=lambda: 0)
    [gpu] = [p for p in problems if "train.gpus_per_node" in p]
    assert gpu == ("config key 'train.gpus_per_node' needs 2 GPU(s) on this node but 0 are visible; run where that "
                   "many GPUs are visible, or train on the CPU with train.backend: local.")
    assert any("vllm" in p for p in problems)  # the GPU stack is named, too
    # exporting (verl's merger) runs on the CPU
    assert check_jobs(verl, {"export_checkpoint", "judge", "report"}, STORY, count=lambda: 0) == []


@pytest.mark.parametrize("rule,section", [("train_grpo", "train_grpo"), ("generate", "generate")])
def test_a_gpu_job_on_a_machine_without_gpus_is_named(rule, section):
    config = copy.deepcopy(CONFIG)
    config["resources"][section]["gpu"] = 1
    assert check_jobs(config, {rule}, STORY, count=lambda: 0) == [
        f"config key 'resources.{section}.gpu' needs 1 GPU(s) on this node but 0 are visible; lower it, or set it to 0 for the CPU."
    ]
    assert check_jobs(config, {rule}, STORY, count=lambda: 1) == []


def test_vllm_generation_needs_its_package_and_a_gpu(monkeypatch):
    monkeypatch.setattr(preflight, "installed", lambda name: None)  # vLLM missing, whatever is installed here
    config = copy.deepcopy(CONFIG)
    config["generate"]["backend"] = "vllm"
    problems = check_jobs(config, {"generate"}, STORY, count=lambda: 0)
    assert any("vllm is not installed" in p for p in problems) and any("GPU(s)" in p for p in problems)


def test_this_machine_has_no_usable_gpu(monkeypatch):
    # The count a real run uses, asked of torch in a child process.
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert usable_gpus() == 0


def test_jobs_in_conda_environments_are_not_judged_by_the_workflows_packages(monkeypatch):
    """Under `--sdm conda` a GPU job runs in envs/gpu.yaml, which Snakemake builds, not in the
    workflow's Python: the packages the workflow's Python lacks are no problem of the job (its stage
    checks its own environment in its first second), while too few GPUs still are."""
    monkeypatch.setattr(preflight, "installed", lambda name: None)  # no verl, vLLM or flash-attn here
    config = copy.deepcopy(CONFIG)
    config["train"]["backend"], config["generate"]["backend"] = "verl", "vllm"
    rules = {"train_grpo", "generate"}
    assert any("vllm is not installed" in p for p in check_jobs(config, rules, STORY, count=lambda: 2))
    assert check_jobs(config, rules, STORY, count=lambda: 2, conda=True) == []
    assert check_jobs(config, rules, STORY, count=lambda: 0, conda=True) == [
        "config key 'generate.backend' = 'vllm' needs 1 GPU(s) on this node but 0 are visible; run on a GPU machine "
        "or lower config key 'generate.backend' = 'vllm'.",
        "config key 'train.gpus_per_node' needs 2 GPU(s) on this node but 0 are visible; run where that many GPUs are "
        "visible, or train on the CPU with train.backend: local.",
    ]


def test_conda_deployment_is_read_from_snakemakes_settings():
    from snakemake.settings.types import DeploymentMethod, DeploymentSettings

    from audiobook_rl.startup import uses_conda

    assert uses_conda(DeploymentSettings(deployment_method={DeploymentMethod.CONDA}))
    assert not uses_conda(DeploymentSettings())
    assert not uses_conda(DeploymentSettings(deployment_method={DeploymentMethod.APPTAINER}))


def test_the_workflow_skips_the_package_check_of_jobs_in_conda_environments():
    onstart = (REPO / "rules" / "common.smk").read_text().split("onstart:")[1].split("\n\n\n")[0]
    assert "uses_conda(workflow.deployment_settings)" in onstart and "conda=" in onstart
