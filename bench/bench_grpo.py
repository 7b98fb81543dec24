"""Benchmark of the local GRPO backend and of batched generation.

Prints: the policy's size; seconds per GRPO step and generated tokens per second (rollouts of
``train_batch_size`` tasks x ``rollout.n`` episodes x 2 calls, then the update); and the
throughput of ``generate`` for the validation slices batched vs one conversation at a time.

    python bench/bench_grpo.py                        # results/models/step_0 + results/data, CPU
    python bench/bench_grpo.py --device cuda --steps 10
    python bench/bench_grpo.py --policy DIR --data DIR --threads 2

It needs a built base policy and the dataset (``snakemake results/models/step_0``).
"""

from __future__ import annotations

import argparse
import copy
import statistics
import tempfile
import time
from pathlib import Path

import torch

from audiobook_rl.files import read_jsonl, read_parquet_rows
from audiobook_rl.paths import REPO


def load_rows(data: Path) -> dict[str, list[dict]]:
    return {split: read_parquet_rows(data / f"{split}.parquet") for split in ("train", "val")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", default="results/models/step_0")
    parser.add_argument("--data", default="results/data")
    parser.add_argument("--config", default=str(REPO / "config/config.yaml"))
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()

    from audiobook_rl import backends
    from audiobook_rl.agent.episode import AgentPrompts, run_episodes
    from audiobook_rl.agent.hf_chat import HFChat
    from audiobook_rl.config import load_config
    from audiobook_rl.dataset import Task
    from audiobook_rl.policy.model import load_policy, n_params
    from audiobook_rl.training.local_grpo import train_local

    torch.set_num_threads(args.threads)
    config = load_config(args.config)
    settings = copy.deepcopy(config["train"])
    prompts = AgentPrompts.load(REPO / config["agent"]["create_prompt"], REPO / config["agent"]["rewrite_prompt"])
    rows = load_rows(Path(args.data))
    reward = settings["reward"]
    judge = backends.get("train.reward", reward["backend"]).load()(reward, config["llm"])

    model, tokenizer = load_policy(args.policy, args.device)
    print(f"device {args.device}, torch threads {torch.get_num_threads()}, torch {torch.__version__}")
    print(f"policy: {n_params(model) / 1e6:.2f}M parameters, vocabulary {len(tokenizer)}, "
          f"{model.config.num_hidden_layers} layers x {model.config.hidden_size} hidden")

    # GRPO steps (validation only at the end, so the per-step time is rollouts + update).
    settings.update(total_steps=args.steps, test_freq=10**6, save_freq=10**6)
    with tempfile.TemporaryDirectory() as root:
        train_local(rows["train"], rows["val"], prompts, settings, judge, args.policy, root, "bench", args.device)
        metrics = read_jsonl(Path(root) / "metrics.jsonl")
    steps = [m for m in metrics if m["step"] > 0]
    gen_seconds = sum(m["rollout_seconds"] for m in steps)
    tokens = sum(m["generated_tokens"] for m in steps)
    episodes = settings["train_batch_size"] * settings["rollout"]["n"]
    print(f"GRPO: {len(steps)} steps of {episodes} episodes ({2 * episodes} calls): "
          f"{statistics.fmean(m['seconds'] for m in steps):.2f} s/step "
          f"(rollouts+judge {gen_seconds / len(steps):.2f} s, update {statistics.fmean(m['seconds'] - m['rollout_seconds'] for m in steps):.2f} s); "
          f"{tokens / gen_seconds:.0f} generated tokens/s during rollouts")

    # generate: the validation slices' create calls, batched vs one at a time (greedy).
    tasks = [Task.from_row(r) for r in rows["val"]]
    gen = config["generate"]
    for label, batch_size in (("batched", len(tasks)), ("one at a time", 1)):
        client = HFChat(model, tokenizer, batch_size=batch_size)
        start = time.perf_counter()
        run_episodes(tasks, client, prompts, temperature=0.0, max_tokens=gen["max_tokens"])
        seconds = time.perf_counter() - start
        print(f"generate {label}: {len(tasks)} episodes in {seconds:.2f} s, {client.generated_tokens / seconds:.0f} tokens/s")


if __name__ == "__main__":
    main()
