"""The environment of a verl training process: what verl, LiteLLM and the project's own code in
verl's trainer actor read from it, and how it reaches Ray's workers.

The backend (:mod:`.backend`) sets these variables before Agent Lightning starts Ray; the trainer
(:mod:`.trainer`) and the daemon (:mod:`.daemon`) read them in verl's trainer actor. All of them
import the names from here.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

# The environment variable holding train.seed when the rewards are shuffled (unset: real rewards),
# read by the daemon (.daemon) in verl's trainer actor.
SHUFFLE_SEED = "AUDIOBOOK_RL_REWARD_SHUFFLE_SEED"
# The path of the training's own per-step record, written by the trainer (.trainer) in verl's trainer actor.
STEP_RECORD = "AUDIOBOOK_RL_STEP_RECORD"
# train.collapse_patience, read by the trainer (.trainer): it stops a run whose steps carry no signal.
COLLAPSE_PATIENCE = "AUDIOBOOK_RL_COLLAPSE_PATIENCE"


def training_env(step_record: str | Path, shuffle_seed: int | None = None, collapse_patience: int = 0) -> dict[str, str]:
    """Environment variables of the training process (Ray actors and runners inherit them):
    ``step_record`` is where the trainer writes its per-step record (:mod:`.metrics`);
    ``shuffle_seed`` (train.seed, when train.reward.shuffle is on) switches the daemon's control on;
    ``collapse_patience`` (train.collapse_patience; 0 = never) is the trainer's collapse guard."""
    shuffle = {} if shuffle_seed is None else {SHUFFLE_SEED: str(shuffle_seed)}
    return {
        **shuffle,
        STEP_RECORD: str(Path(step_record).resolve()),
        COLLAPSE_PATIENCE: str(int(collapse_patience)),
        # litellm (Agent Lightning's LLM proxy) otherwise downloads a price list at import time.
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "HYDRA_FULL_ERROR": "1",
        "VLLM_USE_V1": "1",
    }


# The job config that Ray's job submission hands to a driver; ray.init merges its runtime env into the job's.
RAY_JOB_CONFIG = "RAY_JOB_CONFIG_JSON_ENV_VAR"


def hand_env_to_ray(env: dict[str, str]) -> None:
    """Make ``env`` reach every Ray worker, also on a Ray cluster started elsewhere (``RAY_ADDRESS``),
    whose workers start from the cluster's environment, not this process's: without this verl's
    trainer actor would not see STEP_RECORD and would record no step. The variables go into the job
    config that ``ray.init`` (called by Agent Lightning) merges into the job's runtime env."""
    job = json.loads(os.environ.get(RAY_JOB_CONFIG) or "{}")
    runtime_env = job.get("runtime_env") or {}
    runtime_env["env_vars"] = {**(runtime_env.get("env_vars") or {}), **env}
    job["runtime_env"] = runtime_env
    os.environ[RAY_JOB_CONFIG] = json.dumps(job)

