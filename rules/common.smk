import atexit
import glob
import re
import sys

from audiobook_rl import backends
from audiobook_rl.config import config_digest, validate_config
from audiobook_rl.deps import code_files, module_files
from audiobook_rl.errors import UserError
from audiobook_rl.failures import summary
from audiobook_rl.judging import agreement_judges, judge_name
from audiobook_rl.judging.speaker_key import key_path
from audiobook_rl.paths import SCHEMA, repo_file
from audiobook_rl.startup import check_config, check_corpus, check_jobs, uses_conda
from audiobook_rl.steps import WILDCARD

try:
    validate_config(config, SCHEMA)
except UserError as err:
    # One sentence, no traceback: the user fixes a key, not our code.
    sys.exit(f"Error: {err}")

# `run_name` namespaces one experiment's outputs (results/runs/<name>/..., logs/runs/<name>/...) so
# several runs share one checkout; the LLM reply cache (llm.cache_dir) stays shared between them.
RUNS = "results/runs"
RUN_NAME = str(config["run_name"])  # `--config run_name=1` arrives as an int
RESULTS = f"{RUNS}/{RUN_NAME}" if RUN_NAME else "results"
LOGS = f"logs/runs/{RUN_NAME}" if RUN_NAME else "logs"
CORPUS = str(repo_file(config["corpus"]))


# The configured judge, whose scores.jsonl is the headline's (its extra judges are not its params:
# adding one reruns no judge job).
JUDGE = {key: value for key, value in config["judge"].items() if key != "agreement"}
# The extra judges of `judge.agreement` by name; they score the headline split's outputs.
AGREEMENT = agreement_judges(config["judge"])


# One constraint for every per-step rule: a step number, or `best` (the best validation step).
wildcard_constraints:
    step=WILDCARD,
    # where a split's evaluation lives under eval/: "" (validation) or "test/" (EVAL_DIRS)
    split="(test/)?",
    # the names of judge.agreement's judges only (no judge, no match: "No rule to produce")
    judge="|".join(re.escape(name) for name in AGREEMENT) or "(?!)",


# Light rules run where Snakemake runs, never as cluster jobs.
localrules:
    slice_corpus,
    split_dataset,
    report,
    index_runs,


def run_names():
    """The runs the index compares: those with a report, plus this invocation's run (if named)."""
    done = glob_wildcards(f"{RUNS}/{{run,[^/]+}}/report.html").run
    return sorted(set(done) | ({RUN_NAME} if RUN_NAME else set()))


def run_scores(run):
    """The judge scores (validation and test) and the training summary (its arm) of one run: this
    invocation's from its config, another's as found on disk."""
    if run == RUN_NAME:
        scores = eval_files("val", "scores.jsonl") + eval_files("test", "scores.jsonl")
        return scores + [f"{RESULTS}/train/summary.json"]
    found = glob.glob(f"{RUNS}/{run}/eval/step_*/scores.jsonl")
    found += glob.glob(f"{RUNS}/{run}/eval/test/step_*/scores.jsonl")
    found += glob.glob(f"{RUNS}/{run}/train/summary.json")
    return sorted(found)


if not repo_file(config["corpus"]).exists():
    sys.exit(f"Error: config key 'corpus': {config['corpus']}: no such file.")

# Checks before any job starts (and before any request is paid for): API keys of the configured
# backends, prompt files, evaluated steps that training actually saves, and a corpus the slicer can
# cut. Snakemake deletes a job's old outputs when it starts it, so a bad input found by the stage
# itself would already have cost the last run's results.
_problems = check_config(config)
if workflow.is_main_process:  # not again in each job of a cluster run
    _problems += check_corpus(CORPUS, config)
if _problems:
    sys.exit("Error: " + "\nError: ".join(_problems))


onstart:
    # What the jobs about to run need (the warm start's excerpts, GPUs, the verl/vLLM packages),
    # where they run here: not for --touch, nor on a cluster, nor in a dry run (onstart is skipped),
    # whose plan a machine without GPUs may show. Under --sdm conda the packages are those of the
    # jobs' own environments, which this Python cannot see: their stages check them.
    if workflow.local_exec and not workflow.touch:
        _rules = {job.rule.name for job in workflow.dag.needrun_jobs()}
        _problems = check_jobs(
            config, _rules, CORPUS, conda=uses_conda(workflow.deployment_settings)
        )
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


def code(rule):
    """The package modules ``rule`` runs: its script's imports and those of its configured backends.
    Rule inputs, so an edit reruns the stage; a backend that is not configured is not one.
    """
    return code_files(config, rule)


def speaker_key():
    """The hand-labelled speaker key beside the corpus (``<stem>.speakers.json``), if there is one:
    the report checks the references' speakers against it (a rule input, so an edit reruns the report).
    """
    path = key_path(CORPUS)
    return [str(path)] if path.is_file() else []


def prompts(rule):
    """The prompt files the configured backends of ``rule`` read (rule inputs; empty for backends that read none)."""
    return [
        str(repo_file(path)) for path in backends.prompt_files(config, rule).values()
    ]


def agent_prompt(role):
    """The prompt file of the agent's ``role`` (create or rewrite)."""
    return str(repo_file(config["agent"][f"{role}_prompt"]))


def gpus(rule):
    """GPUs of ``rule``'s job: what its configured backends take (verl: every GPU of every node)."""
    jobs = backends.of_rule(config, rule)
    return sum(backend.gpus(config) for _, backend, entry in jobs if entry == "run")


def llm_api(rule):
    """1 when a configured backend of ``rule`` calls a paid API: such jobs share `--resources llm_api=N`."""
    return int(
        any(backend.provider for _, backend, _ in backends.of_rule(config, rule))
    )


def conda_env(rule):
    """A rule's conda environment (`--sdm conda`): the locked GPU stack (envs/gpu.yaml) when a configured
    backend of the rule needs it (verl, vLLM), else the pipeline's."""
    stack = any(backend.stack for _, backend, _ in backends.of_rule(config, rule))
    return "../envs/gpu.yaml" if stack else "../envs/pipeline.yaml"


def llm_settings(wildcards, resources):
    """The `llm` section as a param of a rule; a function of `resources` (Snakemake does not record it), so
    editing the client layer (concurrency, timeouts, rate limits, cache) reruns nothing.
    """
    return config["llm"]


def n_runners(wildcards, resources):
    """Rollouts at once (verl); concurrency only, not recorded, like `llm_settings`."""
    return config["resources"]["train_grpo"]["n_runners"]


def config_hash():
    """Hash of the result-defining config, shown in the report's provenance."""
    return config_digest(config)


# Where each split's evaluation lives: validation keeps results/eval/step_{N}/, test goes below it.
# Per-step rules take it as the `split` wildcard.
EVAL_DIRS = {"val": "", "test": "test/"}
SPLIT_OF = {folder: split for split, folder in EVAL_DIRS.items()}


def eval_splits():
    """The splits every evaluated checkpoint is generated on and judged on: validation, and test when
    `split.n_test` asks for one."""
    return ["val"] + (["test"] if config["split"]["n_test"] else [])


def head_split():
    """The split the report's headline is measured on: test when there is one, else validation."""
    return eval_splits()[-1]


def eval_dir(split=None, step="{step}"):
    """results/eval/[test/]step_{step}: one evaluated checkpoint on ``split`` (None: the `split` wildcard)."""
    folder = "{split}" if split is None else EVAL_DIRS[split]
    return f"{RESULTS}/eval/{folder}step_{step}"


def split_tasks(wildcards):
    """The parquet of the split a per-step job evaluates on (its `split` wildcard)."""
    return f"{RESULTS}/data/{SPLIT_OF[wildcards.split]}.parquet"


def eval_files(split, name):
    """``name`` (outputs.jsonl, scores.jsonl) of every evaluated step on ``split``; none when the
    split is not evaluated (no test set)."""
    if split not in eval_splits():
        return []
    return [f"{eval_dir(split, step)}/{name}" for step in eval_steps()]


def agreement_files():
    """Every extra judge's scores of every evaluated training step, the warm start aside (none
    without `judge.agreement`)."""
    return [
        f"{eval_dir(head_split(), step)}/judges/{name}/scores.jsonl"
        for name in AGREEMENT
        for step in eval_steps()
        if step != "sft"
    ]


def agreement_prompt(wildcards):
    """The prompt file of an extra LLM judge (a rule input; none for the rubric)."""
    settings = AGREEMENT[wildcards.judge]
    if not backends.get("judge", settings["backend"]).prompt:
        return []
    return [str(repo_file(settings["prompt"]))]


def agreement_code(wildcards):
    """The judge stage's code and the modules of this extra judge's backend."""
    backend = backends.get("judge", AGREEMENT[wildcards.judge]["backend"])
    return sorted(
        set(code("judge")) | {f for m in backend.modules() for f in module_files(m)}
    )


def agreement_llm_api(wildcards):
    """1 when this extra judge calls a paid API (it shares `--resources llm_api=N`)."""
    return int(
        bool(backends.get("judge", AGREEMENT[wildcards.judge]["backend"]).provider)
    )


def sft_on():
    """Whether GRPO starts from a supervised warm start on the training references (rule sft_policy)."""
    return config["sft"]["epochs"] > 0


def start_policy():
    """The policy GRPO starts from: step_sft after the warm start, else the base policy step_0."""
    return f"{RESULTS}/models/step_{'sft' if sft_on() else 0}"


def eval_steps():
    """The checkpoints that are generated from and judged: step 0 (the base policy), `sft` (the
    warm start, when on) and the exported training steps."""
    return [0] + (["sft"] if sft_on() else []) + sorted(config["eval"]["steps"])


def final_outputs():
    """What `snakemake` builds by default: the report, and through it the whole DAG."""
    return [f"{RESULTS}/report.html"]
