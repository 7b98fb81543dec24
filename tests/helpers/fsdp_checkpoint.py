"""Write a tiny Qwen2 model as a 2-rank FSDP checkpoint in verl 0.6.1's layout (CPU, gloo).

Run as ``python fsdp_checkpoint.py OUT_DIR [cpu|cuda]``: ``OUT_DIR/reference`` gets the model as a
Hugging Face dir and ``OUT_DIR/global_step_1/actor`` the shards, ``fsdp_config.json`` and the
``huggingface/`` config + tokenizer, as ``verl/utils/checkpoint/fsdp_checkpoint_manager.py`` saves them:
on a 1-D device mesh named "fsdp", DTensor shards, one file per rank. FSDP1 (verl's default
``strategy: fsdp``) needs an accelerator, so on CPU the model is sharded with FSDP2 (``fully_shard``,
verl's ``strategy: fsdp2``); both write DTensors sharded on dim 0, which is what the merger reads.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

WORLD = 2


def tiny_model():
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(vocab_size=300, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                         tie_word_embeddings=True)
    config.architectures = ["Qwen2ForCausalLM"]
    return Qwen2ForCausalLM(config)


def tiny_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {chr(i): i - 32 for i in range(32, 127)}
    vocab.update({"<|endoftext|>": 95, "<|im_start|>": 96, "<|im_end|>": 97})
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<|endoftext|>"))
    tk.pre_tokenizer = pre_tokenizers.Split("", behavior="isolated")
    return PreTrainedTokenizerFast(tokenizer_object=tk, eos_token="<|im_end|>", pad_token="<|endoftext|>")


def _rank(rank: int, out: str, port: int, device: str) -> None:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp import ShardedStateDictConfig, StateDictType
    from torch.distributed.fsdp import fully_shard

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    backend = "nccl" if device == "cuda" else "gloo"
    dist.init_process_group(backend, rank=rank, world_size=WORLD)
    if device == "cuda":
        torch.cuda.set_device(rank)
    mesh = init_device_mesh(device, (WORLD,), mesh_dim_names=("fsdp",))
    model = tiny_model()
    if device == "cuda":  # verl's FSDP1 path (fsdp_workers.py): FSDP on the device mesh
        model = model.cuda()
        fsdp = FSDP(model, device_mesh=mesh, use_orig_params=False, device_id=torch.cuda.current_device())
        version = 1
    else:
        for layer in model.model.layers:
            fully_shard(layer, mesh=mesh)
        fsdp = fully_shard(model, mesh=mesh)
        version = 2
    # One optimizer step, so the shards are not just the initial weights.
    opt = torch.optim.AdamW(fsdp.parameters(), lr=1e-2)
    ids = torch.arange(1, 17, device=device).view(1, -1)
    fsdp(input_ids=ids, labels=ids).loss.backward()
    opt.step()
    actor = Path(out) / "global_step_1" / "actor"
    shard_path = actor / f"model_world_size_{WORLD}_rank_{rank}.pt"
    if version == 1:
        with FSDP.state_dict_type(fsdp, StateDictType.SHARDED_STATE_DICT, ShardedStateDictConfig(offload_to_cpu=True)):
            torch.save(fsdp.state_dict(), shard_path)
        with FSDP.state_dict_type(fsdp, StateDictType.FULL_STATE_DICT):
            full = fsdp.state_dict()
    else:
        sharded = fsdp.state_dict()
        torch.save(sharded, shard_path)
        full = {k: v.full_tensor() for k, v in sharded.items()}
    if rank == 0:
        model.config.save_pretrained(actor / "huggingface")
        tiny_tokenizer().save_pretrained(actor / "huggingface")
        (actor / "fsdp_config.json").write_text(json.dumps({"FSDP_version": version, "world_size": WORLD}))
        torch.save({k: v.detach().cpu() for k, v in full.items()}, Path(out) / "reference.pt")
    dist.barrier()
    dist.destroy_process_group()


def main(out: str, device: str = "cpu") -> None:
    (Path(out) / "global_step_1" / "actor").mkdir(parents=True, exist_ok=True)
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(_rank, args=(out, port, device), nprocs=WORLD, join=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
