"""Peak GPU memory of the seed's actor update: Qwen2.5-1.5B-shaped model (random weights, no
download), FSDP1 over N GPUs as verl 0.6.1's fsdp_workers set it up (fp32 master weights, bf16
compute, fp32 gradient reduction, gradient checkpointing, AdamW), one micro batch of
``--batch`` sequences x ``--tokens`` tokens, two optimizer steps.

    python bench/fsdp_memory.py --gpus 2 --batch 2 --tokens 3072

Prints GiB per rank after sharding, after the first step (gradients and Adam moments exist) and
the peak. It measures the training half only; vLLM's share is rollout.gpu_memory_utilization of
each card on top (verl offloads the actor's weights and optimizer to CPU while vLLM generates when
param_offload / optimizer_offload are on).
"""

from __future__ import annotations

import argparse
import functools
import os
import socket
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

GiB = 2**30


def qwen25_15b_config():
    from transformers import Qwen2Config

    # Qwen2.5-1.5B-Instruct's config.json (architecture only).
    return Qwen2Config(
        vocab_size=151936,
        hidden_size=1536,
        intermediate_size=8960,
        num_hidden_layers=28,
        num_attention_heads=12,
        num_key_value_heads=2,
        max_position_embeddings=32768,
        rope_theta=1000000.0,
        rms_norm_eps=1e-6,
        tie_word_embeddings=True,
    )


def _rank(rank: int, world: int, port: int, batch: int, tokens: int) -> None:
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp import MixedPrecision, ShardingStrategy
    from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy
    from transformers import Qwen2ForCausalLM
    from transformers.models.qwen2.modeling_qwen2 import Qwen2DecoderLayer

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("nccl", rank=rank, world_size=world)
    torch.cuda.set_device(rank)
    torch.manual_seed(0)
    config = qwen25_15b_config()
    config._attn_implementation = "sdpa"
    model = Qwen2ForCausalLM(config)  # fp32 on CPU, as verl's actor (model_dtype fp32)
    model.gradient_checkpointing_enable()
    n_params = sum(p.numel() for p in model.parameters())
    fsdp = FSDP(
        model,
        auto_wrap_policy=functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={Qwen2DecoderLayer}),
        mixed_precision=MixedPrecision(
            param_dtype=torch.bfloat16, reduce_dtype=torch.float32, buffer_dtype=torch.float32
        ),
        sharding_strategy=ShardingStrategy.FULL_SHARD,
        device_id=torch.cuda.current_device(),
        use_orig_params=False,
    )
    opt = torch.optim.AdamW(fsdp.parameters(), lr=1e-6, weight_decay=0.01)
    torch.cuda.synchronize()
    sharded = torch.cuda.memory_allocated() / GiB
    torch.cuda.reset_peak_memory_stats()
    ids = torch.randint(0, config.vocab_size, (batch, tokens), device="cuda")
    after_first, started = None, time.perf_counter()
    for step in range(2):
        loss = fsdp(input_ids=ids, labels=ids).loss
        loss.backward()
        fsdp.clip_grad_norm_(1.0)
        opt.step()
        opt.zero_grad(set_to_none=False)  # keep gradients allocated, as a worst case
        torch.cuda.synchronize()
        if step == 0:
            after_first = torch.cuda.memory_allocated() / GiB
    seconds = (time.perf_counter() - started) / 2
    peak = torch.cuda.max_memory_allocated() / GiB
    reserved = torch.cuda.max_memory_reserved() / GiB
    line = torch.tensor([sharded, after_first, peak, reserved, seconds], device="cuda")
    lines = [torch.zeros_like(line) for _ in range(world)]
    dist.all_gather(lines, line)
    if rank == 0:
        print(
            f"params {n_params / 1e9:.3f} B, {world} GPU(s), micro batch {batch} x {tokens} tokens, {torch.cuda.get_device_name()}"
        )
        for r, v in enumerate(lines):
            s, a, p, res, sec = v.tolist()
            print(
                f"rank {r}: sharded weights {s:.2f} GiB | after step 1 {a:.2f} GiB | peak allocated {p:.2f} GiB | peak reserved {res:.2f} GiB | {sec:.2f} s/step"
            )
    dist.destroy_process_group()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpus", type=int, default=2)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=3072)
    args = ap.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(_rank, args=(args.gpus, port, args.batch, args.tokens), nprocs=args.gpus, join=True)


if __name__ == "__main__":
    main()
