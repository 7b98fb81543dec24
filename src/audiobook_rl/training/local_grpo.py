"""The local GRPO backend of train_grpo: the seed's objective on one CPU or GPU, in one loop.

Per step (read top to bottom, as in CleanRL):

1. sample ``train_batch_size`` tasks; run ``rollout.n`` create → rewrite episodes of each with the
   current policy (sampling at ``rollout.temperature``); the judge scores each final script;
2. every call of an episode becomes a training row with the episode's reward (permuted across the
   step's episodes when ``train.reward.shuffle`` is on, :mod:`audiobook_rl.compare.control`); rows are grouped by
   task (both calls of all ``n`` episodes, as Agent Lightning's transition rows are grouped by
   ``data_id`` in verl) and get the GRPO advantage (r − mean) / (std + 1e-6);
3. per mini-batch, one optimizer step on the token-mean PPO-clip loss (clip 0.2 / 0.3, dual clip 3;
   no KL in the seed, or ``train.kl_coef`` × the KL to the policy training started from), the ratio
   taken to the rollout policy's log-probs (the first mini-batch's own, the others' computed before
   the first step);
4. every ``test_freq`` steps: greedy validation on the validation set; checkpoints every
   ``save_freq`` steps, at the last step and at each new best validation reward (the best step is
   :func:`audiobook_rl.steps.best_step`: a trained step, never the base policy).

Randomness is seeded per step, so a run resumed from a checkpoint repeats the uninterrupted run.
"""

from __future__ import annotations

import contextlib
import logging
import math
import random
import shutil
import statistics
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.profiler import record_function

from .. import gpus
from ..agent.episode import AgentPrompts, run_episodes
from ..agent.hf_chat import HFChat
from ..compare.control import shuffle_rewards
from ..dataset import Task
from ..errors import UserError
from ..files import write_json
from ..judging.diversity import diversity
from ..judging.voice import task_voices
from ..policy.logprobs import pack, precision, token_logprobs
from ..policy.model import load_policy
from ..preflight import installed
from ..script import parse_script
from ..steps import best_step
from . import TrainingJob
from . import checkpoints as ckpt
from .collapse import ADVICE, collapse, saturation
from .grpo import group_advantages, kl_low_var, ppo_clip_loss

log = logging.getLogger(__name__)

TESTED_VLLM = "0.26."  # the vLLM that rollouts beside the policy have run with (engine: auto picks no other)


@dataclass
class Row:
    """One training sample: a call of an episode (prompt and response token ids) and its group."""

    group: str
    prompt_ids: list[int]
    response_ids: list[int]
    reward: float
    advantage: float = 0.0


def episode_rows(episodes, groups: list[str], rewards: list[float | None], by_std: bool = True) -> list[Row]:
    """Both calls of every episode as rows carrying ``rewards[i]``, the reward of episode ``i`` (its
    judge's, or another episode's under the shuffled-reward control); advantages normalised by the
    group's std unless ``by_std`` is off (``train.norm_adv_by_std``).

    A group with an episode without a reward is left out of the update: a made-up reward would move
    the group's advantages (a failure is counted in the metrics instead).
    """
    failed = {group for reward, group in zip(rewards, groups) if reward is None}
    rows = []
    for episode, group, reward in zip(episodes, groups, rewards):
        if group in failed:
            continue
        for call in episode.calls:
            rows.append(Row(group, call.reply.prompt_ids, call.reply.response_ids, reward))
    advantages = group_advantages([r.reward for r in rows], [r.group for r in rows], by_std=by_std)
    for row, a in zip(rows, advantages):
        row.advantage = a
    return rows


def ppo_update(model, optimizer, rows: list[Row], settings: dict, rng: random.Random, pad_id: int, reference=None) -> dict:
    """One pass over ``rows``: old log-probs, then one optimizer step per mini-batch. Returns means.
    ``reference`` (the frozen start policy) adds ``settings['kl_coef']`` × its token-mean KL."""
    device = model.device
    temperature = settings["rollout"]["temperature"]
    micro = settings["micro_batch_size"]
    rows = [r for r in rows if r.response_ids]
    stats = {"loss": [], "kl": [], "clip_frac": [], "dual_clip_frac": [], "ratio_mean": [], "grad_norm": [], "skipped_updates": []}
    if not rows:  # every group was dropped: nothing to update on
        return {**dict.fromkeys(stats, 0.0), "trained_tokens": 0}
    order = list(range(len(rows)))
    rng.shuffle(order)
    rows = [rows[i] for i in order]

    n_mini = max(1, min(settings["mini_batches"], len(rows)))
    size = -(-len(rows) // n_mini)
    # Mini-batches (one optimizer step each), cut into micro-batches that fit in memory; within a
    # mini-batch the rows go by length, so that a micro-batch pads to rows of about its own width
    # (its loss is the token mean over the whole mini-batch: the order does not change it).
    minis = []
    for a in range(0, len(rows), size):
        mini = sorted(rows[a : a + size], key=lambda r: len(r.prompt_ids) + len(r.response_ids))
        minis.append([mini[m : m + micro] for m in range(0, len(mini), micro)])
    batches = [[pack([r.prompt_ids for r in part], [r.response_ids for r in part], pad_id, device) for part in mini]
               for mini in minis]

    # log π_old: the policy that sampled the rollouts. The first mini-batch trains on that policy
    # itself, so its own forward pass gives them; the others are computed now, before any update.
    with torch.no_grad(), precision(device), record_function("old log-probs"):
        old = [None] + [[token_logprobs(model, b, temperature) for b in mini] for mini in batches[1:]]
        ref = [[token_logprobs(reference, b, temperature) for b in mini] for mini in batches] if reference is not None else None

    model.train()
    for m, (mini, mini_batches, mini_old) in enumerate(zip(minis, batches, old)):
        optimizer.zero_grad(set_to_none=True)
        tokens = sum(float(b["mask"].sum()) for b in mini_batches)
        total, parts = 0.0, {"kl": 0.0, "clip_frac": 0.0, "dual_clip_frac": 0.0, "ratio_mean": 0.0}
        for j, (part, batch) in enumerate(zip(mini, mini_batches)):
            with precision(device), record_function("forward"):
                logp = token_logprobs(model, batch, temperature)
            old_logp = logp.detach() if mini_old is None else mini_old[j]
            adv = torch.tensor([r.advantage for r in part], dtype=torch.float32, device=device)
            loss, part_stats = ppo_clip_loss(
                logp, old_logp, adv, batch["mask"],
                clip_low=settings["clip_ratio_low"], clip_high=settings["clip_ratio_high"], clip_c=settings["clip_ratio_c"],
            )
            part_stats["kl"] = 0.0
            if ref is not None:
                # verl's use_kl_loss: the token-mean KL to the start policy, weighted by kl_coef
                kl = (kl_low_var(logp, ref[m][j]) * batch["mask"]).sum() / batch["mask"].sum().clamp(min=1.0)
                loss = loss + settings["kl_coef"] * kl
                part_stats["kl"] = kl.item()
            # Token-mean over the whole mini-batch: weight each micro-batch by its share of tokens.
            share = float(batch["mask"].sum()) / tokens
            with record_function("backward"):
                (loss * share).backward()
            total += loss.item() * share
            for k in parts:
                parts[k] += part_stats[k] * share
        grad_norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), settings["grad_clip"]))
        if not math.isfinite(grad_norm):
            # As verl does: a non-finite gradient would turn every weight into NaN; skip this step.
            bad = [name for name, p in model.named_parameters() if p.grad is not None and not torch.isfinite(p.grad).all()]
            log.warning("non-finite gradient norm (%s; loss %s; in %d tensors, first %s): optimizer step skipped",
                        grad_norm, total, len(bad), bad[:3])
            stats["skipped_updates"].append(1.0)
            continue
        with record_function("optimizer step"):
            optimizer.step()
        stats["skipped_updates"].append(0.0)
        stats["loss"].append(total)
        stats["grad_norm"].append(grad_norm)
        for k, v in parts.items():
            stats[k].append(v)
    model.eval()
    out = {k: statistics.fmean(v) if v else 0.0 for k, v in stats.items()}
    out["skipped_updates"] = int(sum(stats["skipped_updates"]))
    out["trained_tokens"] = sum(len(r.prompt_ids) + len(r.response_ids) for r in rows)
    return out


def validate(client, tasks, prompts, judge, settings) -> dict:
    """Mean judge reward of the final scripts on the validation tasks, decoded at ``val_temperature``."""
    rollout = settings["rollout"]
    episodes = run_episodes(tasks, client, prompts, judge, temperature=settings["val_temperature"],
                            max_tokens=rollout["max_tokens"], top_p=rollout["top_p"], top_k=rollout["top_k"])
    # A judge failure is counted, not scored 0 (0 only when the judge scored nothing at all).
    rewards = [e.reward for e in episodes if e.reward is not None]
    return {
        "val_reward": statistics.fmean(rewards) if rewards else 0.0,
        "val_json_valid": statistics.fmean(parse_script(e.final).ok for e in episodes),
        "val_judge_failures": sum(e.reward is None for e in episodes),
        **task_voices([e.final for e in episodes], tasks).metrics("val"),
        **diversity([e.final for e in episodes], [t.text for t in tasks]).metrics("val"),
    }


def train_local(train_rows, val_rows, prompts: AgentPrompts, settings: dict, judge, base_dir: str, root: str,
                fp: str, device: str = "cpu") -> dict:
    """Train from ``base_dir`` (or resume under ``root``); return the run summary."""
    start = ckpt.prepare_run(root, fp)
    model, tokenizer = load_policy(Path(root) / f"step_{start}" if start else base_dir, device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings["lr"], betas=(0.9, 0.999),
                                  weight_decay=settings["weight_decay"], fused=device != "cpu")
    if start:
        optimizer.load_state_dict(ckpt.load_state(root, start, device)["optimizer"])
        log.info("resuming from %s/step_%d", root, start)
    reference = None
    if settings["kl_coef"] > 0:  # the policy training started from, frozen (also after a resume)
        reference, _ = load_policy(base_dir, device)
        reference.eval().requires_grad_(False)
    # the engine ends with the run (vLLM holds GPU memory and a process group until closed)
    with contextlib.closing(rollout_client(model, tokenizer, base_dir, settings, device)) as client:
        total = settings["total_steps"]
        train_tasks = [Task.from_row(r) for r in train_rows]
        val_tasks = [Task.from_row(r) for r in val_rows]
        rollout = settings["rollout"]
        batch = min(settings["train_batch_size"], len(train_tasks))
        shuffled = settings["reward"]["shuffle"]

        if start == 0:  # the baseline: validation before any update
            t0 = time.monotonic()
            val = validate(client, val_tasks, prompts, judge, settings)
            ckpt.append_metrics(root, {"step": 0, **val, "seconds": time.monotonic() - t0})
            log.info("step 0/%d: val reward %.3f (json valid %.2f)", total, val["val_reward"], val["val_json_valid"])

        for step in range(start + 1, total + 1):
            t0 = time.monotonic()
            seed = settings["seed"] * 100_003 + step
            torch.manual_seed(seed)  # sampling in generate uses the global generator
            rng = random.Random(seed)

            # 1. rollouts: n episodes of each sampled task
            tasks = rng.sample(train_tasks, batch)
            group = [t for t in tasks for _ in range(rollout["n"])]
            tokens_before = client.generated_tokens
            if device != "cpu":
                torch.cuda.reset_peak_memory_stats()
            episodes = run_episodes(group, client, prompts, judge, temperature=rollout["temperature"],
                                    max_tokens=rollout["max_tokens"], top_p=rollout["top_p"], top_k=rollout["top_k"])
            rollout_seconds = time.monotonic() - t0

            # 2. both calls of each episode, with the episode reward, grouped by task → advantages.
            # The shuffled-reward control permutes the step's rewards across its episodes first (from a
            # generator of its own: the rollouts above are the same with it on or off).
            rewards = [e.reward for e in episodes]
            if shuffled:
                rewards = shuffle_rewards(rewards, seed=settings["seed"], step=step)
            rows = episode_rows(episodes, [t.id for t in group], rewards, settings["norm_adv_by_std"])

            # 3. PPO-clip update
            t1 = time.monotonic()
            stats = ppo_update(model, optimizer, rows, settings, rng, tokenizer.pad_token_id, reference)
            if hasattr(client, "sync_weights"):  # vLLM holds its own copy (the decoder copies at every call)
                client.sync_weights()
            update_seconds = time.monotonic() - t1

            # The metrics are the judge's rewards (a permutation moves neither their mean nor their spread).
            rewards = [e.reward for e in episodes if e.reward is not None]
            generated = client.generated_tokens - tokens_before
            record = {
                "step": step,
                **({"reward_shuffled": True} if shuffled else {}),
                "train_reward": statistics.fmean(rewards) if rewards else 0.0,
                "train_reward_std": statistics.pstdev(rewards) if rewards else 0.0,
                "train_reward_group_std": group_spread(episodes, [t.id for t in group]),
                "train_json_valid": statistics.fmean(parse_script(e.final).ok for e in episodes),
                "draft_json_valid": statistics.fmean(parse_script(e.draft).ok for e in episodes),
                **diversity([e.final for e in episodes], [t.text for t in group], [t.id for t in group]).metrics("train"),
                **task_voices([e.final for e in episodes], group).metrics("train"),
                "loss": stats["loss"],
                "kl": stats["kl"],
                "clip_frac": stats["clip_frac"],
                "dual_clip_frac": stats["dual_clip_frac"],
                "ratio_mean": stats["ratio_mean"],
                "grad_norm": stats["grad_norm"],
                "skipped_updates": stats["skipped_updates"],
                "response_length": statistics.fmean(len(r.response_ids) for r in rows) if rows else 0.0,
                "judge_failures": sum(e.reward is None for e in episodes),
                "dropped_groups": len({t.id for t, e in zip(group, episodes) if e.reward is None}),
                "generated_tokens": generated,
                "rollout_seconds": rollout_seconds,
                "rollout_tokens_per_s": generated / max(rollout_seconds, 1e-9),
                "update_seconds": update_seconds,
                "train_tokens_per_s": stats["trained_tokens"] / max(update_seconds, 1e-9),
            }
            if device != "cpu":
                record["peak_gpu_mem_gb"] = torch.cuda.max_memory_allocated() / 2**30

            # 4. validation and checkpoints
            saved = step % settings["save_freq"] == 0 or step == total
            beaten = None  # a checkpoint kept only for being the best, dropped once this step's is saved
            if step % settings["test_freq"] == 0 or step == total:
                record.update(validate(client, val_tasks, prompts, judge, settings))
                earlier = val_rewards(ckpt.read_metrics(root))
                if best_step({**earlier, step: record["val_reward"]}) == step:
                    saved = True
                    previous = best_step(earlier)
                    if previous and previous % settings["save_freq"] and previous in ckpt.saved_steps(root):
                        beaten = previous
            record["seconds"] = time.monotonic() - t0
            history = ckpt.read_metrics(root) + [record]  # the log as it reads once this step's line is on disk
            collapsed = collapse(history, settings["collapse_patience"])
            if collapsed and step < total:
                record["collapse"] = collapsed[1]
            # The step's line goes to disk before its checkpoint: a run killed between the two resumes
            # from the checkpoint before, drops the line and writes it again, where the other order
            # would resume after the step and never write its line.
            ckpt.append_metrics(root, record)
            if saved:
                ckpt.save_checkpoint(root, step, model, tokenizer, optimizer)
            if beaten:
                ckpt.remove_checkpoint(root, beaten)
            log.info(
                "step %d/%d: reward %.3f  loss %+.4f  clip %.3f  len %.0f  %.0f tok/s  %.1f s%s%s",
                step, total, record["train_reward"], record["loss"], record["clip_frac"], record["response_length"],
                record["rollout_tokens_per_s"], record["seconds"],
                f"  val {record['val_reward']:.3f}" if "val_reward" in record else "", "  [saved]" if saved else "",
            )
            patience = settings["collapse_patience"] or 3
            if saturation(history, patience) == step:
                log.warning("every task's episodes have tied at or near the judge's maximum for %d steps in a row: the "
                            "training tasks are learned, and GRPO has nothing left to learn from them (training goes on)",
                            patience)
            if "collapse" in record:
                raise UserError(
                    f"training collapsed at step {step} of {total}: for {settings['collapse_patience']} steps in a row "
                    f"{record['collapse']}, so GRPO had nothing to learn from; {ADVICE} (checkpoints and metrics so far "
                    f"are kept in {root})."
                )
        return summarize(root, total, shuffled)


def rollout_client(model, tokenizer, model_dir: str, settings: dict, device: str):
    """What rollouts and validation decode with (``train.rollout.engine``): the static decoder, or
    vLLM beside the policy on its GPU."""
    engine = settings["rollout"]["engine"]
    if engine == "auto":
        engine = "vllm" if device != "cpu" and (installed("vllm") or "").startswith(TESTED_VLLM) else "decoder"
    if engine == "vllm":
        if device == "cpu":
            raise UserError("train.rollout.engine is vllm, which needs a GPU: give train_grpo one "
                            "(resources.train_grpo.gpu: 1) or set train.rollout.engine: decoder.")
        from ..agent.vllm_rollout import VLLMRollout

        log.info("rollouts on vLLM %s beside the policy", installed("vllm"))
        return VLLMRollout(model, model_dir, tokenizer, seed=settings["seed"])
    log.info("rollouts on the static decoder (up to %d conversations at once)", settings["generate_batch_size"])
    return HFChat(model, tokenizer, batch_size=settings["generate_batch_size"])


def group_spread(episodes, groups: list[str]) -> float:
    """Mean over tasks of the spread (population std) of their episodes' rewards: 0 = no advantage anywhere."""
    by_group: dict[str, list[float]] = defaultdict(list)
    for episode, group in zip(episodes, groups):
        if episode.reward is not None:
            by_group[group].append(episode.reward)
    spreads = [statistics.pstdev(r) for r in by_group.values() if len(r) > 1]
    return statistics.fmean(spreads) if spreads else 0.0


def val_rewards(metrics: list[dict]) -> dict[int, float]:
    """Validation reward by step, of the metrics lines that have one."""
    return {m["step"]: m["val_reward"] for m in metrics if "val_reward" in m}


def summarize(root: str, total: int, shuffled: bool) -> dict:
    """What results/train/summary.json records: saved steps, the best validation step, rewards, and
    whether the rewards were shuffled (the arm of a sweep)."""
    metrics = ckpt.read_metrics(root)
    train = [m["train_reward"] for m in metrics if "train_reward" in m]
    val = val_rewards(metrics)
    best = best_step(val)
    k = min(10, len(train) // 2) or 1
    return {
        "backend": "local",
        "total_steps": total,
        "reward_shuffled": shuffled,
        "saved_steps": ckpt.saved_steps(root),
        "best_step": best,
        "best_val_reward": val.get(best),
        "val_reward_step_0": val.get(0),
        "train_reward_first": statistics.fmean(train[:k]) if train else None,
        "train_reward_last": statistics.fmean(train[-k:]) if train else None,
        "mean_seconds_per_step": statistics.fmean(m["seconds"] for m in metrics if m["step"] > 0) if train else None,
        "checkpoints": str(root),
    }


def train_stage(job: TrainingJob) -> dict:
    """train_grpo with the local backend: on the CPU, or on the job's one GPU."""
    device = "cpu"
    if job.gpus > 0:
        gpus.claim(job.gpus, "resources.train_grpo.gpu", holder="train_grpo")
        gpus.require_cuda(job.gpus, "resources.train_grpo.gpu")
        device = "cuda"
    torch.set_num_threads(job.threads)
    root = Path(job.metrics_path).parent / "checkpoints"
    summary = train_local(job.train_rows, job.val_rows, job.prompts, job.settings, job.judge, job.policy_dir,
                          str(root), job.fingerprint, device)
    shutil.copyfile(root / "metrics.jsonl", job.metrics_path)
    write_json(job.summary_path, summary)
    log.info("best validation reward %s at step %s", summary["best_val_reward"], summary["best_step"])
    return summary
