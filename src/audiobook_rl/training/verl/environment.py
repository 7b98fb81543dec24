"""The environment of a verl training process: what verl, LiteLLM and the project's own code in
verl's trainer actor read from it, and how it reaches Ray's workers.

The backend (:mod:`.backend`) sets these variables before Agent Lightning starts Ray; the daemon
(:mod:`.daemon`) reads them in verl's trainer actor. Both import them from here.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

# The environment variable holding train.seed when the rewards are shuffled (unset: real rewards),
# read by the daemon (.daemon) in verl's trainer actor.
SHUFFLE_SEED = "AUDIOBOOK_RL_REWARD_SHUFFLE_SEED"


def training_env(metrics_log: str | Path, shuffle_seed: int | None = None) -> dict[str, str]:
    """Environment variables of the training process (Ray actors and runners inherit them);
    ``shuffle_seed`` (train.seed, when train.reward.shuffle is on) switches the daemon's control on."""
    shuffle = {} if shuffle_seed is None else {SHUFFLE_SEED: str(shuffle_seed)}
    return {
        **shuffle,
        # litellm (Agent Lightning's LLM proxy) otherwise downloads a price list at import time.
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        # verl's file logger: one JSON line per step, read back by convert_logs.
        "VERL_FILE_LOGGER_PATH": str(Path(metrics_log).resolve()),
        "HYDRA_FULL_ERROR": "1",
        "VLLM_USE_V1": "1",
    }


# The job config that Ray's job submission hands to a driver; ray.init merges its runtime env into the job's.
RAY_JOB_CONFIG = "RAY_JOB_CONFIG_JSON_ENV_VAR"


def hand_env_to_ray(env: dict[str, str]) -> None:
    """Make ``env`` reach every Ray worker, also on a Ray cluster started elsewhere (``RAY_ADDRESS``),
    whose workers start from the cluster's environment, not this process's: without this verl's
    trainer would not see VERL_FILE_LOGGER_PATH and would log nowhere. The variables go into the job
    config that ``ray.init`` (called by Agent Lightning) merges into the job's runtime env."""
    job = json.loads(os.environ.get(RAY_JOB_CONFIG) or "{}")
    runtime_env = job.get("runtime_env") or {}
    runtime_env["env_vars"] = {**(runtime_env.get("env_vars") or {}), **env}
    job["runtime_env"] = runtime_env
    os.environ[RAY_JOB_CONFIG] = json.dumps(job)

