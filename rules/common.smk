import atexit
import glob
import os
import sys

from audiobook_rl.config import validate_config
from audiobook_rl.deps import imported_files
from audiobook_rl.errors import UserError
from audiobook_rl.failures import summary
from audiobook_rl.preflight import check_keys
from audiobook_rl.startup import check_corpus, check_jobs
from audiobook_rl.training.verl_config import check_eval_steps

try:
    validate_config(
        config, os.path.join(workflow.basedir, "config", "config.schema.yaml")
    )
except UserError as err:
    # One sentence, no traceback: the user fixes a key, not our code.
    sys.exit(f"Error: {err}")

# `run_name` namespaces one experiment's outputs (results/runs/<name>/..., logs/runs/<name>/...) so
# several runs share one checkout; the LLM reply cache (llm.cache_dir) stays shared between them.
RUNS = "results/runs"
RUN_NAME = str(config.get("run_name") or "")  # `--config run_name=1` arrives as an int
RESULTS = f"{RUNS}/{RUN_NAME}" if RUN_NAME else "results"
LOGS = f"logs/runs/{RUN_NAME}" if RUN_NAME else "logs"


def run_names():
    """The runs the index compares: those with a report, plus this invocation's run (if named)."""
    done = glob_wildcards(f"{RUNS}/{{run,[^/]+}}/report.html").run
    return sorted(set(done) | ({RUN_NAME} if RUN_NAME else set()))


def run_scores(run):
    """The judge scores of one run: this invocation's from its config, another's as found on disk."""
    if run == RUN_NAME:
        return [f"{RESULTS}/eval/step_{step}/scores.jsonl" for step in eval_steps()]
    return sorted(glob.glob(f"{RUNS}/{run}/eval/step_*/scores.jsonl"))


def repo_file(path):
    """A path from the config: as given if it exists (or is absolute), else inside the repository."""
    if os.path.isabs(path) or os.path.exists(path):
        return path
    return os.path.join(workflow.basedir, path)


if not os.path.exists(repo_file(config["corpus"])):
    sys.exit(f"Error: config key 'corpus': {config['corpus']}: no such file.")


# Checks before any job starts (and before any request is paid for): API keys of the configured
# backends, prompt files, evaluated steps that training actually saves, and a corpus the slicer can
# cut. Snakemake deletes a job's old outputs when it starts it, so a bad input found by the stage
# itself would already have cost the last run's results.
def used_prompts():
    """The prompt files the configured backends read, by config key (rule inputs, checked at start)."""
    prompts = {
        "agent.create_prompt": config["agent"]["create_prompt"],
        "agent.rewrite_prompt": config["agent"]["rewrite_prompt"],
    }
    if config["label"]["backend"] != "rules":
        prompts["label.prompt"] = config["label"]["prompt"]
    if config["judge"]["backend"] != "rubric":
        prompts["judge.prompt"] = config["judge"]["prompt"]
    if config["train"]["reward"]["backend"] != "rubric":
        prompts["train.reward.prompt"] = config["train"]["reward"]["prompt"]
    return prompts


def prompt(key):
    """The prompt file of config key ``key``, as a list for a rule's input (empty when its backend reads none)."""
    path = used_prompts().get(key)
    return [repo_file(path)] if path else []


_problems = check_keys(config)
for _key, _path in used_prompts().items():
    if not os.path.isfile(repo_file(_path)):
        _problems.append(f"config key '{_key}': prompt file {_path} not found.")
try:
    check_eval_steps(config["train"], config["eval"]["steps"])
except UserError as err:
    _problems.append(str(err))
if workflow.is_main_process:  # not again in each job of a cluster run
    _problems += check_corpus(repo_file(config["corpus"]), config)
if _problems:
    sys.exit("Error: " + "\nError: ".join(_problems))


onstart:
    # What the jobs about to run need (the warm start's excerpts, GPUs, the verl/vLLM packages),
    # where they run here: not for --touch, nor on a cluster, nor in a dry run (onstart is skipped),
    # whose plan a machine without GPUs may show.
    if workflow.local_exec and not workflow.touch:
        _rules = {job.rule.name for job in workflow.dag.needrun_jobs()}
        _problems = check_jobs(config, _rules, repo_file(config["corpus"]))
        if _problems:
            sys.exit("Error: " + "\nError: ".join(_problems))


def failed_jobs():
    """(job, its log file) of each job of this run that failed."""
    failed = []
    for job in getattr(workflow.scheduler, "failed", ()):
        name = " ".join(
            [job.rule.name, *(f"{k}={v}" for k, v in job.wildcards_dict.items())]
        )
        failed.append((name, job.log[0] if job.log else None))
    return failed


onerror:
    # Each failed stage's sentence, printed as this process exits: after Snakemake's own report of
    # the failure, so the sentence is the last thing on the screen (the full log stays in logs/).
    _summary = summary(failed_jobs())
    if _summary:
        atexit.register(print, _summary, file=sys.stderr)


def code(script):
    """The package modules a stage script imports: rule inputs, so an edit reruns the stage."""
    return imported_files(os.path.join(workflow.basedir, "scripts", script))


def train_gpus():
    """GPUs of train_grpo: the verl backend uses every GPU of every node it is given."""
    train = config["train"]
    if train["backend"] == "verl":
        return train["nnodes"] * train["gpus_per_node"]
    return config["resources"]["train_grpo"]["gpu"]


def conda_env(gpu_stack):
    """A rule's conda environment (`--sdm conda`): the locked GPU stack (envs/gpu.yaml) for a stage
    that runs the seed backend (verl, vLLM), else the pipeline's."""
    return "../envs/gpu.yaml" if gpu_stack else "../envs/pipeline.yaml"


def eval_steps():
    """The checkpoints that are exported, generated from and judged (step 0 = the base policy)."""
    return [0] + sorted(config.get("eval", {}).get("steps", []))


def final_outputs():
    """What `snakemake` builds by default: the report, and through it the whole DAG."""
    return [f"{RESULTS}/report.html"]
