"""The seed trainer's update against verl 0.6.1's own actor (``DataParallelPPOActor.update_policy``,
``core_algos``' PPO-clip loss and ``agg_loss``) on CPU: with the seed's config (one sample per
micro-batch, 2 GPUs) it is the token-mean over each mini-batch, as the local backend's, for
samples of unequal length.

Two data-parallel GPUs are two actors, each with its own copy of a tiny causal LM, fed the chunks
verl's dispatch deals them (its own ``_split_args_kwargs_data_proto``); their gradients are averaged,
as FSDP averages them. The reference is verl's actor again, on one GPU with one micro-batch holding
the whole mini-batch, whose ``token-mean`` is then the mean over every token of the mini-batch.
Set for the CPU: fp32 instead of bf16 autocast, no padding removal (flash-attn's), no torch.compile,
and no gradient clipping, which FSDP applies after the GPUs' gradients are averaged.
"""

from __future__ import annotations

import copy
import math
import warnings

import pytest
import torch
from omegaconf import OmegaConf, open_dict

from audiobook_rl.training.verl.config import build_verl_config, check_verl_config
from audiobook_rl.training.verl.trainer import SeedTrainer, token_mean_weights
from helpers import seed_config

SEED_TRAIN = seed_config()["train"]
PROMPT, RESPONSE, VOCAB = 6, 12, 64


@pytest.fixture(scope="module", autouse=True)
def process_group():
    """verl's actor asks torch.distributed for its rank: a group of one process (gloo, CPU)."""
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
    yield


@pytest.fixture(scope="module")
def seed_cfg(tmp_path_factory):
    return check_verl_config(build_verl_config(SEED_TRAIN, 16, "/models/step_0", tmp_path_factory.mktemp("ckpt")))


def tiny_lm():
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(vocab_size=VOCAB, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64)
    return Qwen2ForCausalLM(config).float()


class Recorded(torch.optim.Optimizer):
    """An optimizer that takes no step but keeps the gradient of each one (one per mini-batch)."""

    def __init__(self, params):
        super().__init__(params, {})
        self.grads: list[torch.Tensor] = []

    def step(self, closure=None):
        self.grads.append(torch.cat([p.grad.flatten().clone() for g in self.param_groups for p in g["params"]]))


def actor(cfg, model, ranks: int, mini_rows: int | None = None, micro_rows: int | None = None):
    """verl's actor as its FSDP worker builds it on one of ``ranks`` GPUs (its config normalised as
    ``fsdp_workers.ActorRolloutRefWorker`` does), set for the CPU."""
    from verl.utils.config import omega_conf_to_dataclass
    from verl.workers.actor.dp_actor import DataParallelPPOActor

    conf = copy.deepcopy(cfg.actor_rollout_ref.actor)
    with open_dict(conf):
        conf.ppo_mini_batch_size = mini_rows or conf.ppo_mini_batch_size * cfg.actor_rollout_ref.rollout.n // ranks
        conf.ppo_micro_batch_size_per_gpu = micro_rows or conf.ppo_micro_batch_size_per_gpu
        conf.use_remove_padding, conf.use_torch_compile, conf.grad_clip = False, False, 1e9
        conf.fsdp_config.dtype = "float32"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DataParallelPPOActor(omega_conf_to_dataclass(conf), model, Recorded(model.parameters()))


def batch_of(n: int, seed: int = 1):
    """``n`` samples as Agent Lightning's trainer hands them to the update: prompts left-padded,
    responses of 1 to 12 tokens right-padded, GRPO advantages, old log-probs a little off (so that
    some ratios are clipped)."""
    from verl import DataProto

    g = torch.Generator().manual_seed(seed)
    prompt_len = torch.randint(2, PROMPT + 1, (n,), generator=g)
    response_len = torch.randint(1, RESPONSE + 1, (n,), generator=g)
    prompt_mask = (torch.arange(PROMPT) >= PROMPT - prompt_len.unsqueeze(1)).long()
    response_mask = (torch.arange(RESPONSE) < response_len.unsqueeze(1)).long()
    attention = torch.cat([prompt_mask, response_mask], dim=1)
    ids = torch.randint(1, VOCAB, (n, PROMPT + RESPONSE), generator=g) * attention
    advantages = torch.randn(n, 1, generator=g).expand(n, RESPONSE) * response_mask
    return DataProto.from_dict(
        tensors={
            "input_ids": ids, "attention_mask": attention, "responses": ids[:, PROMPT:],
            "response_mask": response_mask, "position_ids": (torch.cumsum(attention, 1) - 1).clamp(min=0),
            "advantages": advantages.contiguous(),
            # the tiny model's log-probs are about -log(VOCAB): ratios from 0.7 to 1.4, some clipped
            "old_log_probs": -math.log(VOCAB) + 0.2 * torch.randn(n, RESPONSE, generator=g),
        },
        meta_info={"temperature": 1.0},
    )


def data_parallel_gradients(cfg, batch, ranks: int = 2) -> list[torch.Tensor]:
    """The gradient of each optimizer step (mini-batch) of verl's update on ``ranks`` GPUs, averaged
    over the GPUs as FSDP does."""
    from verl.single_controller.base.decorator import _split_args_kwargs_data_proto

    (chunks,), _ = _split_args_kwargs_data_proto(ranks, batch)
    model = tiny_lm()
    per_rank = []
    for chunk in chunks:
        a = actor(cfg, copy.deepcopy(model), ranks)
        a.update_policy(chunk)
        per_rank.append(a.actor_optimizer.grads)
    return [sum(grads) / ranks for grads in zip(*per_rank)]


def token_mean_gradients(cfg, batch, ranks: int = 2) -> list[torch.Tensor]:
    """The gradient of verl's token-mean over every token of each mini-batch: one GPU, one
    micro-batch holding the mini-batch (the samples the ``ranks`` GPUs would share)."""
    from verl import DataProto

    mini = cfg.actor_rollout_ref.actor.ppo_mini_batch_size * cfg.actor_rollout_ref.rollout.n // ranks
    chunks = batch.chunk(ranks)
    minis = [DataProto.concat([c[k * mini:(k + 1) * mini] for c in chunks]) for k in range(-(-len(chunks[0]) // mini))]
    a = actor(cfg, tiny_lm(), 1, mini_rows=ranks * mini, micro_rows=ranks * mini)
    a.update_policy(DataProto.concat(minis))
    return a.actor_optimizer.grads


def seed_trainer(cfg, ranks: int = 2) -> SeedTrainer:
    trainer = SeedTrainer.__new__(SeedTrainer)  # no workers, Ray or GPUs: only the batch it hands the update
    trainer.config = cfg
    trainer.actor_rollout_wg = type("Workers", (), {"world_size": ranks})()
    return trainer


def close(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return len(a) == len(b) and all(torch.allclose(x, y, rtol=1e-4, atol=1e-7) for x, y in zip(a, b))


def test_the_seed_update_is_the_token_mean_over_each_mini_batch(seed_cfg):
    actor_cfg = seed_cfg.actor_rollout_ref.actor
    assert (actor_cfg.ppo_micro_batch_size_per_gpu, actor_cfg.use_dynamic_bsz, actor_cfg.loss_agg_mode) == (1, False, "token-mean")
    batch = batch_of(64)  # a seed step: 8 tasks x 4 episodes x 2 calls, 2 mini-batches of 32 over 2 GPUs
    reference = token_mean_gradients(seed_cfg, batch)
    assert len(reference) == 2
    assert close(data_parallel_gradients(seed_cfg, seed_trainer(seed_cfg).token_mean_batch(batch)), reference)
    # verl alone, with one sample per micro-batch: a mean of per-sample means, not the token-mean
    assert not close(data_parallel_gradients(seed_cfg, batch), reference)


def test_a_shorter_last_mini_batch_is_a_token_mean_too(seed_cfg):
    """A step whose dropped groups leave 56 samples: each GPU's 28 are a mini-batch of 16 and one of 12."""
    batch = batch_of(56, seed=2)
    reference = token_mean_gradients(seed_cfg, batch)
    assert len(reference) == 2
    assert close(data_parallel_gradients(seed_cfg, seed_trainer(seed_cfg).token_mean_batch(batch)), reference)


def test_larger_micro_batches_are_weighed_by_their_tokens(seed_cfg):
    cfg = copy.deepcopy(seed_cfg)
    with open_dict(cfg):
        cfg.actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu = 4
    batch = batch_of(64, seed=3)
    assert close(data_parallel_gradients(cfg, seed_trainer(cfg).token_mean_batch(batch)), token_mean_gradients(cfg, batch))


def test_the_metrics_keep_the_grpo_advantages():
    batch = batch_of(8)
    cfg = OmegaConf.create({"actor_rollout_ref": {"actor": {"ppo_mini_batch_size": 2, "ppo_micro_batch_size_per_gpu": 1,
                                                            "ulysses_sequence_parallel_size": 1}, "rollout": {"n": 2}}})
    before = batch.batch["advantages"].clone()
    scaled = seed_trainer(cfg).token_mean_batch(batch)
    assert torch.equal(batch.batch["advantages"], before) and not torch.equal(scaled.batch["advantages"], before)


def test_a_mini_batch_without_response_tokens_weighs_nothing():
    mask = torch.tensor([[0, 0], [0, 0], [1, 1], [1, 0]])
    assert token_mean_weights(mask, ranks=1, mini_rows=2, micro_rows=1).tolist() == pytest.approx([0, 0, 2 * 2 / 3, 2 * 1 / 3])
