"""The verl configuration of the seed backend: one function from our ``train`` section to the override
dict that ``agl.VERL(config)`` merges onto verl's defaults, plus the checks verl itself skips.

Agent Lightning merges the dict with struct mode off, so a misspelled key would be added silently and
ignored; :func:`check_verl_config` composes the same base config with struct mode on and runs verl's
own validation (used by the tests and by the backend before anything starts). Key paths and defaults
were read from the installed verl 0.6.1 (``verl/trainer/config/_generated_ppo_trainer.yaml``).
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

from ...errors import UserError

# The advantage estimator, engine and loggers this backend supports; verl accepts other values
# (and typos) without complaint until a GPU job is hours in.
ESTIMATOR = "grpo"
ENGINE = "vllm"  # Agent Lightning 0.3.0 patches only verl's vLLM async server
# No network on the training box: no wandb; and no verl "file" logger, which buffers its file by
# blocks and truncates it at every start: the trainer keeps a per-step record of its own (.metrics).
LOGGERS = ["console"]


def build_verl_config(train: dict, n_train: int, model_path: str | Path, checkpoint_dir: str | Path, *,
                      project: str = "audiobook-rl") -> dict:
    """The verl override dict for ``agl.VERL`` from the ``train`` config section.

    ``n_train`` is the number of training rows (an epoch is ``n_train // train_batch_size`` steps);
    ``model_path`` the base policy (results/models/step_0, a Hugging Face directory);
    ``checkpoint_dir`` becomes ``trainer.default_local_dir``, made absolute because verl resolves
    relative paths against the Ray driver's working directory. The per-step record is not set here:
    the trainer reads its path from the environment (see :func:`.environment.training_env`).
    """
    check_train_section(train, n_train)
    v = train["verl"]
    steps, batch, rollout = train["total_steps"], train["train_batch_size"], train["rollout"]
    return {
        "algorithm": {
            "adv_estimator": ESTIMATOR,
            # GRPO as in the seed: group-normalised advantages, no KL in the reward; a KL loss to
            # the start policy (a reference model) only when train.kl_coef > 0.
            "norm_adv_by_std_in_grpo": train["norm_adv_by_std"],
            "use_kl_in_reward": False,
        },
        "data": {
            "train_batch_size": batch,  # tasks per step; each gives rollout.n episodes x 2 calls
            # With max_response_length, the context verl gives vLLM (max_model_len); the agent skips
            # a call that would not fit (the rewrite prompt holds the draft), see max_model_len().
            "max_prompt_length": v["max_prompt_tokens"],
            "max_response_length": rollout["max_tokens"],
            "seed": train["seed"],
        },
        "actor_rollout_ref": {
            "model": {
                "path": str(model_path),
                "use_remove_padding": True,
                "enable_gradient_checkpointing": True,
            },
            "actor": {
                "optim": {"lr": train["lr"], "weight_decay": train["weight_decay"]},
                "ppo_mini_batch_size": ppo_mini_batch_size(train),
                "ppo_micro_batch_size_per_gpu": train["micro_batch_size"],
                # Fixed micro-batches, whose token-mean losses the trainer (.trainer) weighs into the
                # token-mean of the mini-batch; with dynamic ones it could not tell them apart.
                "use_dynamic_bsz": False,
                "grad_clip": train["grad_clip"],
                "use_kl_loss": train["kl_coef"] > 0,
                "kl_loss_coef": train["kl_coef"],
                "kl_loss_type": "low_var_kl",
                "entropy_coeff": 0.0,
                "clip_ratio_low": train["clip_ratio_low"],
                "clip_ratio_high": train["clip_ratio_high"],
                "clip_ratio_c": train["clip_ratio_c"],
                "loss_agg_mode": "token-mean",
                "fsdp_config": {
                    "param_offload": v["param_offload"],
                    "optimizer_offload": v["optimizer_offload"],
                },
            },
            # The reference policy of the KL loss (built only when use_kl_loss is on).
            "ref": {
                "log_prob_micro_batch_size_per_gpu": v["log_prob_micro_batch_size_per_gpu"],
                "fsdp_config": {"param_offload": v["param_offload"]},
            },
            "rollout": {
                "name": ENGINE,
                "mode": "async",
                "n": rollout["n"],
                "temperature": rollout["temperature"],
                # The agent sends the same filters with each request; verl's own calls use these.
                "top_p": rollout["top_p"],
                "top_k": rollout["top_k"] if rollout["top_k"] > 0 else -1,  # vLLM: -1 = no top-k
                "tensor_model_parallel_size": 1,  # 1.5B fits one GPU: one vLLM replica per GPU
                "gpu_memory_utilization": v["gpu_memory_utilization"],
                "log_prob_micro_batch_size_per_gpu": v["log_prob_micro_batch_size_per_gpu"],
            },
        },
        "trainer": {
            "project_name": project,
            "experiment_name": v["experiment_name"],
            "logger": list(LOGGERS),
            "nnodes": train["nnodes"],
            "n_gpus_per_node": train["gpus_per_node"],
            "total_training_steps": steps,
            # Agent Lightning loops over epochs; if they run out first, the last step (and its
            # checkpoint and validation) never comes.
            "total_epochs": math.ceil(steps / (n_train // batch)),
            "save_freq": train["save_freq"],
            "test_freq": train["test_freq"],
            "val_before_train": True,  # the step-0 baseline of the validation curve
            "critic_warmup": 0,
            "default_local_dir": str(Path(checkpoint_dir).resolve()),
            "max_actor_ckpt_to_keep": None,  # keep every saved step: eval steps are exported later
            # a rerun continues from latest_checkpointed_iteration.txt; backend.prepare_run
            # first removes checkpoints of other settings or inputs
            "resume_mode": "auto",
        },
    }


def max_model_len(train: dict) -> int:
    """The context of verl's vLLM servers: verl 0.6.1 sets max_model_len = data.max_prompt_length +
    data.max_response_length, and vLLM answers HTTP 400 to a request whose prompt + max_tokens exceeds it."""
    return train["verl"]["max_prompt_tokens"] + train["rollout"]["max_tokens"]


def ppo_mini_batch_size(train: dict) -> int:
    """verl's mini batch (in tasks) that gives ``train.mini_batches`` optimizer steps per step.

    Under Agent Lightning every episode yields two samples (create and rewrite), so a step holds
    ``2 x train_batch_size x n`` samples and verl takes ``ppo_mini_batch_size x n`` per optimizer
    step: ``mini_batches`` steps need ``ppo_mini_batch_size = 2 x train_batch_size / mini_batches``.
    """
    return 2 * train["train_batch_size"] // train["mini_batches"]


def check_train_section(train: dict, n_train: int) -> None:
    """Raise one sentence for an impossible combination in ``train`` that verl would find only at runtime."""
    n_gpus = train["nnodes"] * train["gpus_per_node"]
    batch, n, micro = train["train_batch_size"], train["rollout"]["n"], train["micro_batch_size"]
    if n_train < batch:
        raise UserError(
            f"config key 'train.train_batch_size' ({batch}) is larger than the {n_train} training rows; "
            "lower it or raise 'split.n_train'."
        )
    if n < 2:
        raise UserError("config key 'train.rollout.n' must be at least 2: GRPO compares the episodes of one task.")
    if (batch * n) % n_gpus:
        raise UserError(
            f"config keys 'train.train_batch_size' x 'train.rollout.n' ({batch * n}) must be divisible by the "
            f"{n_gpus} GPUs ('train.nnodes' x 'train.gpus_per_node')."
        )
    if train["mini_batches"] < 2 or (2 * batch) % train["mini_batches"]:
        raise UserError(
            f"config key 'train.mini_batches' ({train['mini_batches']}) must be at least 2 and divide "
            f"2 x 'train.train_batch_size' for the verl backend (create and rewrite are two samples per episode)."
        )
    mini = ppo_mini_batch_size(train)
    if mini % n_gpus:
        # Agent Lightning cuts each step's samples to a multiple of ppo_mini_batch_size, and verl
        # splits them evenly over the GPUs.
        raise UserError(
            f"config keys 'train.train_batch_size' and 'train.mini_batches' give {mini} tasks per optimizer "
            f"step (2 x train_batch_size / mini_batches), which must be a multiple of the {n_gpus} GPUs."
        )
    if (mini * n // n_gpus) % micro:
        raise UserError(
            f"config key 'train.micro_batch_size' ({micro}) must divide the {mini * n // max(1, n_gpus)} samples "
            f"per GPU of each optimizer step ('train.mini_batches', 'train.rollout.n', 'train.gpus_per_node')."
        )
    if train["save_freq"] % train["test_freq"]:
        raise UserError(
            f"config key 'train.save_freq' ({train['save_freq']}) must be a multiple of 'train.test_freq' "
            f"({train['test_freq']}) so that every saved step has a validation reward."
        )


def check_verl_config(overrides: dict):
    """Compose verl's config exactly as ``agl.VERL`` does, but in struct mode, and validate it.

    Returns the merged ``DictConfig``. Raises on an unknown key, an impossible batch layout, or an
    estimator / engine / logger name that verl would accept now and fail on later.
    """
    from hydra import compose, initialize
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf
    from verl.trainer.ppo.core_algos import AdvantageEstimator
    from verl.trainer.ppo.utils import need_critic
    from verl.utils.config import omega_conf_to_dataclass, validate_config
    from verl.utils.tracking import Tracking

    GlobalHydra.instance().clear()
    with initialize(version_base=None, config_path="pkg://agentlightning/verl"):
        base = compose(config_name="config")
    OmegaConf.set_struct(base, True)  # an unknown key raises instead of being added
    cfg = OmegaConf.merge(base, OmegaConf.create(overrides))

    AdvantageEstimator(cfg.algorithm.adv_estimator)  # ValueError on a typo
    if cfg.algorithm.adv_estimator != ESTIMATOR:
        raise ValueError(f"algorithm.adv_estimator is {cfg.algorithm.adv_estimator!r}; this backend trains {ESTIMATOR!r}.")
    if cfg.actor_rollout_ref.rollout.name != ENGINE:
        raise ValueError(f"actor_rollout_ref.rollout.name is {cfg.actor_rollout_ref.rollout.name!r}; only {ENGINE!r} works with Agent Lightning 0.3.0.")
    if cfg.actor_rollout_ref.rollout.mode != "async":
        raise ValueError("actor_rollout_ref.rollout.mode must be 'async' for Agent Lightning.")
    unknown = set(cfg.trainer.logger) - set(Tracking.supported_backend)
    if unknown:
        raise ValueError(f"trainer.logger names unknown backends {sorted(unknown)}.")
    use_ref = bool(cfg.algorithm.use_kl_in_reward or cfg.actor_rollout_ref.actor.use_kl_loss)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "Disabled critic as adv_estimator != gae": intended
        use_critic = need_critic(cfg)
    validate_config(cfg, use_reference_policy=use_ref, use_critic=use_critic)
    omega_conf_to_dataclass(cfg.actor_rollout_ref.rollout)  # RolloutConfig.__post_init__ checks
    omega_conf_to_dataclass(cfg.algorithm)
    _check_worker_batches(cfg)
    return cfg


def _check_worker_batches(cfg) -> None:
    """The divisions the FSDP workers and Agent Lightning's trainer do at runtime, done before launch."""
    actor, rollout, trainer = cfg.actor_rollout_ref.actor, cfg.actor_rollout_ref.rollout, cfg.trainer
    n_gpus = trainer.n_gpus_per_node * trainer.nnodes
    if actor.ppo_mini_batch_size % n_gpus:
        raise ValueError(f"ppo_mini_batch_size ({actor.ppo_mini_batch_size}) must be a multiple of the {n_gpus} GPUs.")
    per_gpu, rest = divmod(actor.ppo_mini_batch_size * rollout.n, n_gpus // actor.ulysses_sequence_parallel_size)
    if rest or per_gpu == 0 or per_gpu % actor.ppo_micro_batch_size_per_gpu:
        raise ValueError(
            f"ppo_mini_batch_size x rollout.n ({actor.ppo_mini_batch_size * rollout.n}) does not split over "
            f"{n_gpus} GPUs into micro batches of {actor.ppo_micro_batch_size_per_gpu}."
        )
    if trainer.total_training_steps is not None and trainer.total_epochs < 1:
        raise ValueError("trainer.total_epochs must be at least 1.")
