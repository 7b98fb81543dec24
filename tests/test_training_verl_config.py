"""The seed's verl config, composed with verl 0.6.1's own Hydra config in struct mode and validated
offline: a misspelled key or an impossible batch layout fails here, not an hour into a GPU job."""

from __future__ import annotations

import copy
import math

import pytest
from omegaconf.errors import ConfigKeyError

from audiobook_rl.errors import UserError
from audiobook_rl.steps import check_eval_steps
from audiobook_rl.training.verl.config import build_verl_config, check_train_section, check_verl_config

from helpers import seed_config

SEED = seed_config()
SEED_TRAIN = SEED["train"]
N_TRAIN = SEED["split"]["n_train"]
MODEL = "/models/step_0"


def train(**changes) -> dict:
    t = copy.deepcopy(SEED_TRAIN)
    for key, value in changes.items():
        for section in (t, t["verl"], t["rollout"]):
            if key in section:
                section[key] = value
                break
        else:
            raise KeyError(key)
    return t


def build(t=SEED_TRAIN, ckpt="ckpt"):
    return build_verl_config(t, N_TRAIN, MODEL, ckpt)


@pytest.fixture(scope="module")
def seed_cfg(tmp_path_factory):
    return check_verl_config(build_verl_config(SEED_TRAIN, N_TRAIN, MODEL, tmp_path_factory.mktemp("ckpt")))


def test_seed_config_passes_verl_validation_with_the_seed_settings(seed_cfg):
    cfg = seed_cfg
    assert cfg.algorithm.adv_estimator == "grpo"
    assert cfg.algorithm.norm_adv_by_std_in_grpo is True
    assert cfg.algorithm.use_kl_in_reward is False
    actor, rollout = cfg.actor_rollout_ref.actor, cfg.actor_rollout_ref.rollout
    assert actor.use_kl_loss is False
    assert (actor.clip_ratio_low, actor.clip_ratio_high, actor.loss_agg_mode) == (0.2, 0.3, "token-mean")
    assert (rollout.name, rollout.mode, rollout.n, rollout.tensor_model_parallel_size) == ("vllm", "async", 4, 1)
    assert actor.fsdp_config.param_offload and actor.fsdp_config.optimizer_offload
    assert (cfg.trainer.n_gpus_per_node, cfg.trainer.nnodes) == (2, 1)
    assert list(cfg.trainer.logger) == ["console"]  # the trainer keeps its own per-step record
    # Agent Lightning's loop ends after total_epochs even if total_training_steps is not reached.
    steps_per_epoch = N_TRAIN // cfg.data.train_batch_size
    assert cfg.trainer.total_epochs * steps_per_epoch >= cfg.trainer.total_training_steps == 1600
    assert cfg.trainer.default_local_dir.startswith("/")
    assert cfg.actor_rollout_ref.model.path == MODEL
    # Every evaluated step of config/seed.yaml is saved, and every saved step validated.
    assert SEED["eval"]["steps"] == [1000, 1400, 1600]
    check_eval_steps(SEED_TRAIN, SEED["eval"]["steps"])
    for step in SEED["eval"]["steps"]:
        assert step % cfg.trainer.save_freq == 0 and step % cfg.trainer.test_freq == 0
    # create + rewrite = 2 samples per episode: 8 tasks x 4 x 2 = 64 samples, 2 optimizer steps of 32.
    assert actor.ppo_mini_batch_size * rollout.n * SEED_TRAIN["mini_batches"] == 2 * cfg.data.train_batch_size * rollout.n
    assert cfg.trainer.val_before_train is True
    # Agent Lightning's own section survives the strict merge.
    assert cfg.agentlightning.trace_aggregator.level == "transition"


def test_a_kl_loss_to_the_start_policy_builds_verls_reference_policy(tmp_path):
    cfg = check_verl_config(build(train(kl_coef=0.02), tmp_path))
    actor = cfg.actor_rollout_ref.actor
    assert (actor.use_kl_loss, actor.kl_loss_coef, actor.kl_loss_type) == (True, 0.02, "low_var_kl")
    assert cfg.actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu == SEED_TRAIN["verl"]["log_prob_micro_batch_size_per_gpu"]
    assert cfg.algorithm.use_kl_in_reward is False  # a loss term, never a reward penalty


def test_advantages_without_the_std_reach_verl(tmp_path):
    assert check_verl_config(build(train(norm_adv_by_std=False), tmp_path)).algorithm.norm_adv_by_std_in_grpo is False


def test_two_nodes_of_eight_gpus_compose_and_validate(tmp_path):
    t = train(nnodes=2, gpus_per_node=8, train_batch_size=16)
    cfg = check_verl_config(build(t, tmp_path))
    assert (cfg.trainer.nnodes, cfg.trainer.n_gpus_per_node) == (2, 8)


@pytest.mark.parametrize(
    "path",
    [
        ("actor_rollout_ref", "actor", "clip_ratio_hgih"),
        ("trainer", "save_frequency"),  # 'trainer' has no dataclass: only struct mode catches this
        ("data", "train_batchsize"),
    ],
)
def test_a_misspelled_key_fails(tmp_path, path):
    overrides = build(ckpt=tmp_path)
    node = overrides
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = 1
    with pytest.raises(ConfigKeyError):
        check_verl_config(overrides)


@pytest.mark.parametrize(
    "where, value, error",
    [
        (("algorithm", "adv_estimator"), "grpoo", ValueError),
        (("actor_rollout_ref", "rollout", "name"), "vlm", ValueError),
        (("trainer", "logger"), ["console", "fil"], ValueError),
        (("trainer", "n_gpus_per_node"), 3, AssertionError),  # verl: 8 x 4 rollouts over 3 GPUs
        (("actor_rollout_ref", "actor", "ppo_mini_batch_size"), 16, ValueError),  # above train_batch_size
        (("actor_rollout_ref", "actor", "ppo_micro_batch_size_per_gpu"), 3, ValueError),  # 16 per GPU / 3
        (("actor_rollout_ref", "actor", "ppo_mini_batch_size"), 3, ValueError),  # 3 tasks over 2 GPUs
        (("actor_rollout_ref", "rollout", "mode"), "sync", ValueError),
    ],
)
def test_impossible_values_fail_before_launch(tmp_path, where, value, error):
    overrides = build(ckpt=tmp_path)
    node = overrides
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    with pytest.raises(error):
        check_verl_config(overrides)


@pytest.mark.parametrize(
    "changes, key",
    [
        ({"gpus_per_node": 3}, "train.gpus_per_node"),
        ({"train_batch_size": 32}, "train.train_batch_size"),
        ({"n": 1}, "train.rollout.n"),
        ({"mini_batches": 1}, "train.mini_batches"),
        ({"mini_batches": 4, "gpus_per_node": 8}, "multiple of the 8 GPUs"),
        ({"micro_batch_size": 3}, "train.micro_batch_size"),
        ({"test_freq": 60}, "train.test_freq"),
    ],
)
def test_our_checks_name_the_config_key(changes, key):
    with pytest.raises(UserError, match=key.replace(".", r"\.")):
        check_train_section(train(**changes), N_TRAIN)


def test_total_epochs_reach_the_last_step_when_the_epoch_does_not_divide(tmp_path):
    overrides = build(train(train_batch_size=6, total_steps=1001), tmp_path)
    assert overrides["trainer"]["total_epochs"] == math.ceil(1001 / (N_TRAIN // 6)) == 501


def test_agent_lightning_accepts_the_dict(tmp_path):
    import agentlightning as agl

    algorithm = agl.VERL(build(ckpt=tmp_path))
    assert algorithm.config.trainer.save_freq == 200


def test_rollout_sampling_filters_reach_verls_vllm_settings(tmp_path):
    cfg = check_verl_config(build_verl_config(train(top_p=0.9, top_k=40), N_TRAIN, MODEL, tmp_path))
    assert (cfg.actor_rollout_ref.rollout.top_p, cfg.actor_rollout_ref.rollout.top_k) == (0.9, 40)
    off = build(train(top_p=1.0, top_k=0))["actor_rollout_ref"]["rollout"]
    assert (off["top_p"], off["top_k"]) == (1.0, -1)  # vLLM writes "no top-k" as -1


def test_verl_serves_rollouts_with_its_own_vllm_server_so_token_ids_need_vllm_0_10_2():
    """Agent Lightning's config names a patched vLLM server (``custom_async_server``) that returns
    token ids, but verl 0.6.1 only declares the key and never reads it: the rollouts are served by
    verl's own server, and the ids come from vLLM's ``return_token_ids`` (requested by Agent
    Lightning's proxy, see tests/test_agent_lightning_proxy.py), which vLLM has from 0.10.2 on."""
    from pathlib import Path

    import verl

    from audiobook_rl.preflight import check_vllm

    root = Path(verl.__file__).parent
    readers = sorted(str(p.relative_to(root)) for p in root.rglob("*.py") if "custom_async_server" in p.read_text())
    assert readers == ["workers/config/rollout.py"]  # the dataclass field, nothing else
    assert check_vllm(lambda name: "0.10.2") == []
    assert "vllm >= 0.10.2" in check_vllm(lambda name: "0.10.1")[0]
