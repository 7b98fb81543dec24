"""The seed backend of train_grpo: the agent trained by verl GRPO through Agent Lightning 0.3.0.

Three lines do the work, as in Agent Lightning's own examples::

    algorithm = agl.VERL(build_verl_config(train, ...), trainer_cls=SeedTrainer,
                         daemon_cls=RewardedGroupsDaemon)
    trainer = agl.Trainer(algorithm=algorithm, n_runners=n_runners, port=free_port(), tracer=agl.OtelTracer(),
                          adapter=agl.LlmProxyTraceToTriplet())
    trainer.fit(agent, train_rows, val_dataset=val_rows)

The rest is what makes a run safe to start and to resume: a preflight (versions, GPUs); the fingerprint of settings and inputs (checkpoints of another run are discarded, a finished
run is not trained again: verl would resume it and train one step more); a Ray of this job's own
GPUs and a store port of its own; the environment verl and LiteLLM read; the training's own per-step record (one line per step
across resumes, :mod:`.metrics`) and its conversion to results/train/metrics.jsonl.

Only calls that pass through Agent Lightning's LLM proxy become training samples
(``LlmProxyTraceToTriplet``): the policy's create and rewrite calls, never the judge's own calls.
"""

from __future__ import annotations

import logging
import os
import socket
from pathlib import Path

from ... import gpus
from ...errors import UserError
from ...files import write_json, write_jsonl
from ...preflight import VERL_GPUS_FIX, check_training, require
from ...steps import best_step
from .. import TrainingJob
from ..checkpoints import same_run, start_run
from ..collapse import ADVICE, collapse
from .config import build_verl_config, check_verl_config, max_model_len
from .environment import hand_env_to_ray, training_env
from .metrics import keep_steps, read_record

log = logging.getLogger(__name__)


# What Agent Lightning's run_ppo gives Ray's workers when it starts Ray itself.
AGL_RAY_ENV = {"TOKENIZERS_PARALLELISM": "true", "NCCL_DEBUG": "WARN", "VLLM_LOGGING_LEVEL": "WARN"}


def uses_local_ray(train: dict) -> bool:
    """Training starts a Ray of its own on this machine (one node, no ``RAY_ADDRESS`` of a cluster)."""
    return train["nnodes"] == 1 and not os.environ.get("RAY_ADDRESS")


def start_local_ray() -> None:
    """Start a Ray of this process alone, on the GPUs of ``CUDA_VISIBLE_DEVICES`` (the job's claim).

    Agent Lightning calls a plain ``ray.init()``, which joins the newest cluster that ``ray start``
    left on this machine (multi-node steps, or a stale one), whose GPUs are not this job's; it skips
    its own call when Ray is already up.
    """
    import ray

    if not ray.is_initialized():
        ray.init(address="local", runtime_env={"env_vars": AGL_RAY_ENV})


def default_runners(train: dict) -> int:
    """Rollouts at once when ``resources.train_grpo.n_runners`` is unset: all of a step's, up to 32."""
    return min(32, train["train_batch_size"] * train["rollout"]["n"])


# The per-step record, beside results/train/metrics.jsonl (not a declared output: it must survive a failed job).
STEP_RECORD_FILE = "steps.jsonl"


def latest_checkpoint(checkpoint_dir: str | Path) -> int:
    """The step verl resumes from (its ``latest_checkpointed_iteration.txt``), 0 if none."""
    tracker = Path(checkpoint_dir) / "latest_checkpointed_iteration.txt"
    text = tracker.read_text().strip() if tracker.is_file() else ""
    return int(text) if text.isdigit() and (Path(checkpoint_dir) / f"global_step_{text}").is_dir() else 0


def prepare_run(out_dir: str | Path, fp: str) -> int:
    """Resume only a run of the same settings and inputs: returns the step verl will resume from.

    Checkpoints and the step record of another fingerprint are removed (verl's ``resume_mode: auto``
    would resume any of them, and the metrics of both runs would be merged); the record of this one
    keeps the steps up to the checkpoint (the later ones are redone).
    """
    out_dir = Path(out_dir)
    checkpoints = out_dir / "checkpoints"
    if same_run(checkpoints, fp):
        return latest_checkpoint(checkpoints)
    (out_dir / STEP_RECORD_FILE).unlink(missing_ok=True)
    start_run(checkpoints, fp)
    return 0


def saved_steps(checkpoint_dir: str | Path) -> list[int]:
    """Steps with a complete verl checkpoint (the merger needs ``fsdp_config.json``, written last by rank 0)."""
    root = Path(checkpoint_dir)
    steps = []
    for d in root.glob("global_step_*"):
        if d.name.split("_")[-1].isdigit() and (d / "actor" / "fsdp_config.json").is_file():
            steps.append(int(d.name.split("_")[-1]))
    return sorted(steps)


def summarize(rows: list[dict], checkpoint_dir: str | Path, total_steps: int) -> dict:
    """results/train/summary.json, as the local backend writes it.

    ``best_step`` is the best validation reward among the *saved* steps (verl keeps every
    ``save_freq``-th step and the last; a better step in between has no checkpoint to export).
    """
    saved = saved_steps(checkpoint_dir)
    val = {r["step"]: r["val_reward"] for r in rows if "val_reward" in r}
    train = [r["train_reward"] for r in rows if "train_reward" in r]
    best = best_step(val, among=saved)
    k = min(10, len(train) // 2) or 1
    seconds = [r["seconds"] for r in rows if r["step"] > 0 and "seconds" in r]
    return {
        "backend": "verl",
        "total_steps": total_steps,
        "saved_steps": saved,
        "best_step": best,
        "best_of": "saved steps",
        "best_val_reward": val.get(best),
        "val_reward_step_0": val.get(0),
        "train_reward_first": sum(train[:k]) / len(train[:k]) if train else None,
        "train_reward_last": sum(train[-k:]) / len(train[-k:]) if train else None,
        "mean_seconds_per_step": sum(seconds) / len(seconds) if seconds else None,
        "groups_dropped": int(sum(r.get("groups_dropped", 0) for r in rows)),
        "checkpoints": str(Path(checkpoint_dir).resolve()),
    }


def run_verl(train: dict, agent, train_rows: list[dict], val_rows: list[dict], *, model_path: str | Path,
             out_dir: str | Path, fingerprint: str, n_runners: int | None = None) -> tuple[list[dict], dict]:
    """Train ``agent`` (an ``@agl.rollout`` agent) with verl GRPO from the policy in ``model_path``.

    Checkpoints go to ``out_dir/checkpoints/global_step_N/actor`` (a rerun with the same
    ``fingerprint`` resumes from the newest; a finished run is not trained again), the per-step record
    to ``out_dir/steps.jsonl``. Returns our metrics rows (the lines of
    results/train/metrics.jsonl) and the run summary (results/train/summary.json).
    """
    require(check_training(train))
    out_dir = Path(out_dir).resolve()
    checkpoints = out_dir / "checkpoints"
    record = out_dir / STEP_RECORD_FILE
    overrides = build_verl_config(train, len(train_rows), Path(model_path).resolve(), checkpoints)
    check_verl_config(overrides)  # a typo or impossible batch stops here, before Ray and vLLM start
    resume_from = prepare_run(out_dir, fingerprint)
    if resume_from >= train["total_steps"]:
        log.info("%s holds the finished run of these settings and inputs (step %d): nothing to train",
                 checkpoints, resume_from)
    else:
        keep_steps(record, up_to=resume_from)
        env = training_env(record, train["seed"] if train["reward"]["shuffle"] else None, train["collapse_patience"])
        os.environ.update(env)  # before anything imports litellm
        hand_env_to_ray(env)
        if uses_local_ray(train):
            start_local_ray()
        agl = _agentlightning()  # after the environment above: litellm reads it at import
        from .daemon import RewardedGroupsDaemon
        from .trainer import SeedTrainer

        n_runners = n_runners or default_runners(train)
        log.info("verl GRPO: %d train / %d val rows, steps %d to %d, %d runners; each step is recorded in %s",
                 len(train_rows), len(val_rows), resume_from + 1, train["total_steps"], n_runners, record)
        algorithm = agl.VERL(overrides, trainer_cls=SeedTrainer, daemon_cls=RewardedGroupsDaemon)
        trainer = make_trainer(agl, algorithm, n_runners)
        try:
            trainer.fit(agent, train_rows, val_dataset=val_rows)
        except Exception as error:  # from the trainer actor, wrapped by Ray: the record says what happened
            stop_if_collapsed(read_record(record), train, out_dir, error)
            raise

    rows = read_record(record)
    stop_if_collapsed(rows, train, out_dir)  # (also a loop that ended early without passing the error on)
    return rows, {**summarize(rows, checkpoints, train["total_steps"]), "reward_shuffled": train["reward"]["shuffle"]}


def stop_if_collapsed(rows: list[dict], train: dict, out_dir: Path, error: Exception | None = None) -> None:
    """One sentence (:class:`UserError`) when the trainer's collapse guard ended the run: its record
    (``rows``) ends, before the last step, with ``train.collapse_patience`` steps in a row without a signal."""
    collapsed = collapse(rows, train["collapse_patience"])
    if collapsed is None or collapsed[0] >= train["total_steps"] or rows[-1]["step"] != collapsed[0]:
        return
    raise UserError(
        f"training collapsed at step {collapsed[0]} of {train['total_steps']}: for {train['collapse_patience']} steps "
        f"in a row {collapsed[1]}, so GRPO had nothing to learn from; {ADVICE} (the checkpoints and the per-step "
        f"record so far are kept in {out_dir})."
    ) from error


def make_trainer(agl, algorithm, n_runners: int):
    """Agent Lightning's trainer around ``algorithm`` with ``n_runners`` runner processes, its store
    on a free port of this machine.

    Without a port the store listens on 4747 (``AGL_SERVER_PORT``), and the runners, which start
    before the store, ask whichever store answers there: a second training on the machine would
    fail to start its store while its runners took and abandoned the first one's rollouts.
    """
    return agl.Trainer(
        algorithm=algorithm,
        n_runners=n_runners,
        port=free_port(),  # the store's, and the one its runners ask
        # Only calls through the LLM proxy (the policy's) become samples, never the judge's.
        tracer=agl.OtelTracer(),
        adapter=agl.LlmProxyTraceToTriplet(),
    )


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _agentlightning():
    import agentlightning

    return agentlightning


def train_stage(job: TrainingJob) -> dict:
    """train_grpo with the verl backend: build the agent around the reward judge, train, write outputs."""
    train = job.settings
    # GPUs and versions first: importing Agent Lightning alone takes seconds.
    require(check_training(train))
    if uses_local_ray(train):
        # Ray starts here and takes the GPUs it sees: make those this job's own. (On a Ray cluster
        # the GPUs are the cluster's to assign.)
        gpus.claim(job.gpus, "train.gpus_per_node", holder="train_grpo (verl)", fix=VERL_GPUS_FIX)
    from transformers import AutoTokenizer

    from ...agent.lightning import ContextLimit, make_agent

    # The runner processes share the judge's rate limit through the LLM cache folder (llm.client).
    limit = ContextLimit(AutoTokenizer.from_pretrained(job.policy_dir), max_model_len(train))
    rollout = train["rollout"]
    agent = make_agent(job.prompts, job.judge, max_tokens=rollout["max_tokens"], val_temperature=train["val_temperature"],
                       top_p=rollout["top_p"], top_k=rollout["top_k"], limit=limit)
    rows, summary = run_verl(train, agent, job.train_rows, job.val_rows, model_path=job.policy_dir,
                             out_dir=Path(job.metrics_path).parent, fingerprint=job.fingerprint, n_runners=job.n_runners)
    write_jsonl(job.metrics_path, rows)
    write_json(job.summary_path, summary)
    log.info("best validation reward %s at step %s (of the saved steps)", summary["best_val_reward"], summary["best_step"])
    return summary
