"""One GPU, vLLM 0.26: the generate stage's vllm backend, and rollouts on vLLM beside a trained policy.

    PYTHONPATH=/tmp/site:src VLLM_USE_FLASHINFER_SAMPLER=0 python bench/bench_vllm.py \\
        --model models/qwen2.5-coder-0.5b-instruct [--steps 6] [--memory-share 0.3] [--sleep] [--out vllm.json]
    PYTHONPATH=src python bench/bench_vllm.py --dry-run [--model DIR]     (CPU: data and prompts only)

Data and settings are bench/bench_real_policy.py's: rule-labelled excerpts of the novel, the
config/one_gpu.yaml overlay (rollout sampling, batch = train_batch_size tasks x rollout.n episodes,
generate.max_tokens).

(a) generate: the agent (create -> rewrite) on the ``--n-val`` held-out excerpts, greedy, through
    agent/vllm_chat.py as the generate stage builds it (``client``; if its version check refuses this
    vLLM, the same engine built directly from ``engine_args``). Prints tokens/s and one output.
(c) check: greedy replies before and after perturbing the policy's weights and ``sync_weights()``,
    and after restoring them: the engine must follow the policy, and restoring must give back the
    original replies exactly.
(b) rollout: ``--steps`` steps of {a batch of create -> rewrite episodes through
    ``VLLMRollout.chat_batch``, an in-place perturbation of every parameter standing in for the
    update, ``sync_weights()``}. Prints per step: rollout seconds, decode tokens/s, sync seconds;
    then the first step and the median of the others, and peak memory.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import torch
from bench_real_policy import DEFAULT_NOVEL, build_rows, prompt_paths, settings_of_overlay

from audiobook_rl.agent import vllm_chat
from audiobook_rl.agent.episode import AgentPrompts, run_episodes
from audiobook_rl.agent.vllm_rollout import VLLMRollout, hf_weights
from audiobook_rl.dataset import Task
from audiobook_rl.errors import UserError
from audiobook_rl.generation import generate_outputs
from audiobook_rl.policy.tokenizer import prompt_ids


def rollout_batches(tasks: list[Task], groups: int, n: int, steps: int) -> list[list[Task]]:
    """``steps`` batches of ``groups`` tasks x ``n`` episodes each, cycling through ``tasks``."""
    return [[tasks[(s * groups + g) % len(tasks)] for g in range(groups) for _ in range(n)] for s in range(steps)]


def bench_generate(model_dir: str, tasks: list[Task], prompts: AgentPrompts, settings: dict) -> dict:
    """(a): the generate stage's vllm client on ``tasks``, greedy."""
    try:
        chat = vllm_chat.client(model_dir, settings, "cuda")
    except UserError as err:
        print(f"generate: vllm_chat.client refused: {err} Building the same engine from engine_args.", flush=True)
        import vllm
        from transformers import AutoTokenizer

        chat = vllm_chat.VLLMChat(vllm.LLM(**vllm_chat.engine_args(model_dir, settings)),
                                  AutoTokenizer.from_pretrained(model_dir), vllm.SamplingParams, seed=settings["seed"])
    try:
        started = time.monotonic()
        records = generate_outputs(chat, tasks, prompts, settings, step="bench")
        seconds = time.monotonic() - started
        tokens = chat.generated_tokens
    finally:
        chat.close()
    print(f"generate: {len(tasks)} episodes greedy in {seconds:.1f} s, {tokens} tokens, {tokens / seconds:.0f} tok/s; "
          f"{sum(r['final_notes']['status'] != 'invalid' for r in records)} final scripts parse", flush=True)
    print(f"generate: sample final of {records[0]['id']}:\n{records[0]['final'][:600]}", flush=True)
    return {"episodes": len(tasks), "seconds": seconds, "tokens": tokens, "tok_s": tokens / seconds,
            "sample": records[0]}


def greedy_texts(rollout: VLLMRollout, messages: list[list[dict]]) -> list[str]:
    return [r.text for r in rollout.chat_batch(messages, temperature=0.0, max_tokens=64)]


@torch.no_grad()
def perturb(model, scale: float, seed: int) -> None:
    """Add Gaussian noise of ``scale`` x each parameter's spread, in place (a stand-in for an update)."""
    torch.manual_seed(seed)
    for p in model.parameters():
        p.add_(torch.randn_like(p) * scale * p.float().std().clamp_min(1e-3))


@torch.no_grad()
def bench_sync_check(rollout: VLLMRollout, model, messages: list[list[dict]]) -> dict:
    """(c): does the engine follow the policy's weights, and come back when they come back?"""
    saved = {n: p.detach().clone() for n, p in model.named_parameters()}
    before = greedy_texts(rollout, messages)
    perturb(model, 0.05, seed=1)
    rollout.sync_weights()
    perturbed = greedy_texts(rollout, messages)
    for n, p in model.named_parameters():
        p.copy_(saved[n])
    rollout.sync_weights()
    restored = greedy_texts(rollout, messages)
    changed = sum(a != b for a, b in zip(before, perturbed))
    same = sum(a == b for a, b in zip(before, restored))
    print(f"check: after perturbing the weights {changed}/{len(before)} greedy replies changed; after restoring them "
          f"{same}/{len(before)} equal the original ({'PASS' if changed and same == len(before) else 'FAIL'})", flush=True)
    return {"replies": len(before), "changed_after_perturbing": changed, "equal_after_restoring": same,
            "before": before[0], "perturbed": perturbed[0]}


def bench_rollout(rollout: VLLMRollout, model, batches: list[list[Task]], prompts: AgentPrompts, sampling: dict,
                  sleep: bool) -> dict:
    """(b): rollout, stand-in update, weight sync; per step."""
    steps = []
    for i, batch in enumerate(batches):
        tokens = rollout.generated_tokens
        torch.cuda.synchronize()
        started = time.monotonic()
        run_episodes(batch, rollout, prompts, **sampling)
        rollout_s = time.monotonic() - started
        tokens = rollout.generated_tokens - tokens
        if sleep:
            rollout.sleep()
        perturb(model, 1e-3, seed=100 + i)
        torch.cuda.synchronize()
        started = time.monotonic()
        rollout.sync_weights()
        torch.cuda.synchronize()
        sync_s = time.monotonic() - started
        steps.append({"rollout_s": rollout_s, "tokens": tokens, "tok_s": tokens / rollout_s, "sync_s": sync_s})
        print(f"rollout step {i}: {len(batch)} episodes in {rollout_s:.2f} s, {tokens} tokens, "
              f"{tokens / rollout_s:.0f} tok/s; sync {sync_s * 1000:.0f} ms", flush=True)
    summary = {"first": steps[0]}
    if len(steps) > 1:
        summary["median_of_rest"] = {k: statistics.median(s[k] for s in steps[1:]) for k in steps[0]}
        m = summary["median_of_rest"]
        print(f"rollout: first step {steps[0]['rollout_s']:.2f} s ({steps[0]['tok_s']:.0f} tok/s, sync "
              f"{steps[0]['sync_s'] * 1000:.0f} ms); median of the other {len(steps) - 1}: {m['rollout_s']:.2f} s "
              f"({m['tok_s']:.0f} tok/s, sync {m['sync_s'] * 1000:.0f} ms)", flush=True)
    return {"steps": steps, **summary}


def dry_run(args, rows: dict, prompts: AgentPrompts, batches: list[list[Task]]) -> None:
    """No GPU, no vLLM: data, prompts, and (with ``--model``) prompt lengths and the weights' names."""
    messages = [prompts.create_messages(t.text) for t in batches[0]]
    print(f"dry run: {len(rows['train'])} train / {len(rows['val'])} held-out rows; {len(batches)} rollout batches "
          f"of {len(batches[0])} episodes", flush=True)
    if args.model:
        from audiobook_rl.policy.model import load_policy

        model, tokenizer = load_policy(args.model, "cpu")
        lengths = [len(prompt_ids(tokenizer, m)) for m in messages]
        names = [n for n, _ in hf_weights(model)]
        print(f"dry run: create prompts {min(lengths)}-{max(lengths)} tokens; {len(names)} weights to sync, "
              f"first {names[0]}, last {names[-1]}", flush=True)
        try:
            VLLMRollout(model, args.model, tokenizer)
        except UserError as err:
            print(f"dry run: the rollout engine stops with: {err}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="an HF policy directory (Qwen2 architecture)")
    parser.add_argument("--novel", type=Path, default=DEFAULT_NOVEL)
    parser.add_argument("--n-train", type=int, default=16)
    parser.add_argument("--n-val", type=int, default=24)
    parser.add_argument("--data-seed", type=int, default=11)
    parser.add_argument("--steps", type=int, default=6, help="rollout steps of (b)")
    parser.add_argument("--memory-share", type=float, default=0.3, help="vLLM's share of the GPU's memory in (b), (c)")
    parser.add_argument("--max-model-len", type=int, default=8192)
    parser.add_argument("--sleep", action="store_true", help="free the engine's memory during the stand-in update")
    parser.add_argument("--eager", action="store_true", help="no CUDA graphs in the rollout engine")
    parser.add_argument("--parts", default="generate,check,rollout", help="which of generate, check, rollout to run")
    parser.add_argument("--out", type=Path, default=None, help="write every figure as JSON here")
    parser.add_argument("--dry-run", action="store_true", help="CPU: build the data and prompts, start nothing")
    args = parser.parse_args()
    # vLLM 0.26 otherwise samples with FlashInfer, which the GPU image lacks (an ImportError at the first batch)
    os.environ.setdefault("VLLM_USE_FLASHINFER_SAMPLER", "0")

    config = settings_of_overlay()
    train, generate = config["train"], dict(config["generate"], temperature=0.0)
    rollout_cfg = train["rollout"]
    sampling = {k: rollout_cfg[k] for k in ("temperature", "top_p", "top_k", "max_tokens")}
    rows = build_rows(args.novel, args.n_train, args.n_val, args.data_seed)
    prompts = AgentPrompts.load(*prompt_paths())
    train_tasks = [Task.from_row(r) for r in rows["train"]]
    val_tasks = [Task.from_row(r) for r in rows["val"]]
    batches = rollout_batches(train_tasks, train["train_batch_size"], rollout_cfg["n"], args.steps)
    print(f"model {args.model}; rollout batch {train['train_batch_size']} x {rollout_cfg['n']} episodes, {sampling}; "
          f"generate max_tokens {generate['max_tokens']} greedy", flush=True)
    if args.dry_run:
        dry_run(args, rows, prompts, batches)
        return
    if not args.model:
        parser.error("--model is needed without --dry-run")

    parts = args.parts.split(",")
    results: dict = {"settings": {"sampling": sampling, "episodes": len(batches[0]), "memory_share": args.memory_share,
                                  "sleep": args.sleep, "eager": args.eager, "device": None}}
    if "generate" in parts:  # first: its engine process must start before CUDA starts here
        results["generate"] = bench_generate(args.model, val_tasks, prompts, generate)
    if "check" in parts or "rollout" in parts:
        from audiobook_rl.policy.model import load_policy

        results["settings"]["device"] = torch.cuda.get_device_name()
        model, tokenizer = load_policy(args.model, "cuda")
        torch.cuda.reset_peak_memory_stats()
        started = time.monotonic()
        rollout = VLLMRollout(model, args.model, tokenizer, memory_share=args.memory_share,
                              max_model_len=args.max_model_len, enforce_eager=args.eager, sleep_mode=args.sleep)
        results["engine_start_s"] = time.monotonic() - started
        print(f"rollout engine: started in {results['engine_start_s']:.1f} s beside the policy", flush=True)
        if "check" in parts:
            messages = [prompts.create_messages(t.text) for t in val_tasks[:8]]
            results["check"] = bench_sync_check(rollout, model, messages)
        if "rollout" in parts:
            results["rollout"] = bench_rollout(rollout, model, batches, prompts, sampling, args.sleep)
        free, total = torch.cuda.mem_get_info()
        results["peak_torch_gib"] = torch.cuda.max_memory_allocated() / 2**30
        results["device_used_gib"] = (total - free) / 2**30
        print(f"memory: peak allocated by torch (policy + engine) {results['peak_torch_gib']:.1f} GiB; "
              f"in use on the device at the end {results['device_used_gib']:.1f} of {total / 2**30:.0f} GiB", flush=True)
        rollout.close()
    if args.out:
        args.out.write_text(json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()
