"""One GPU, a real pretrained policy: the local GRPO backend against TRL's GRPOTrainer.

    python bench/bench_real_policy.py --model models/qwen2.5-coder-0.5b-instruct \\
        [--novel NOVEL.txt] [--steps 20] [--seeds 1 2 3] [--trl-steps 4] [--engine decoder vllm] [--out bench.json]

Data: ``--n-train`` (16) training and ``--n-val`` (24) held-out excerpts of the novel, cut by the
project's slicer and labelled by the rule labeler; disjoint by construction. Settings: those of
config/one_gpu.yaml over config/config.yaml (what a user of that overlay trains with), except the
step count, the seed and the learning rate: GRPO here starts from the base policy, which trains at
``--lr`` 5e-6 (the overlay's 1e-6 is for GRPO after its warm start).

Prints, per seed of the local backend: the median seconds of its steady steps (the first step,
which captures the decoder's graphs, apart and shown on its own) with its rollout and update
parts, the decoding rate inside training (generated tokens over rollout time, judging included),
update tokens/s (prompt + response tokens over its time), peak GPU memory, and the held-out score
of the base policy and of the final policy (greedy, rubric judge) with a paired bootstrap 95 %
interval of the difference; the median over seeds; the decoder's rate at full length with 32, 64
and 128 rows in flight. Then TRL's GRPOTrainer on the same model, data, reward (the rubric judge on
the final script of the create → rewrite agent, both calls trained, through TRL's ``rollout_func``
with TRL's own ``generate``), batch (8 tasks x 4 episodes x 2 calls, 2 optimizer steps per batch),
loss settings (beta 0, epsilon 0.2 / 0.3, dual clip 3) and GPU, without vLLM: the median of its
steady steps, and the ratio of the two steady medians.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch

from audiobook_rl import backends
from audiobook_rl.agent.episode import AgentPrompts, run_episodes
from audiobook_rl.agent.hf_chat import HFChat
from audiobook_rl.compare.paired import paired
from audiobook_rl.config import load_config
from audiobook_rl.corpus import read_text, slice_text
from audiobook_rl.dataset import Task, split_rows
from audiobook_rl.errors import UserError
from audiobook_rl.labeling.lexicon import build_lexicon
from audiobook_rl.labeling.rules import RuleLabeler
from audiobook_rl.policy.model import load_policy
from audiobook_rl.training import checkpoints as ckpt
from audiobook_rl.training.local_grpo import train_local
from bench_decoding import decoder_rate

REPO = Path(__file__).resolve().parents[1]
DEFAULT_NOVEL = REPO / "corpus" / "story.txt"  # the README's figures: --novel 水浒传 (see its "Data" note)


def build_rows(novel: Path, n_train: int, n_val: int, seed: int) -> dict[str, list[dict]]:
    """Rule-labelled excerpts of ``novel`` as split_dataset's train and val rows."""
    text, _ = read_text(novel)
    slices = slice_text(text, n=n_train + n_val, min_chars=100, max_chars=200, seed=seed, source=novel.name)
    labeler = RuleLabeler(build_lexicon(text))
    labels = [
        {"id": s.id, "text": s.text, "start": s.start, "end": s.end, "script": [seg.to_dict() for seg in script],
         "aliases": labeler.lexicon.aliases}
        for s, script in zip(slices, labeler.label(slices))
    ]
    split = {"n_train": n_train, "n_val": n_val, "n_test": 0, "seed": seed, "data_source": "audiobook"}
    return split_rows(labels, split, AgentPrompts.load(*prompt_paths()).create)


def prompt_paths() -> tuple[str, str]:
    return str(REPO / "config/prompts/create.md"), str(REPO / "config/prompts/rewrite.md")


def settings_of_overlay() -> dict:
    config = load_config(REPO / "config/config.yaml", REPO / "config/config.schema.yaml", [REPO / "config/one_gpu.yaml"])
    return config


def heldout_scores(model_dir: Path, rows: list[dict], settings: dict, judge, device: str) -> list[float]:
    """The rubric score of the greedy final script on each held-out row."""
    model, tokenizer = load_policy(model_dir, device)
    client = HFChat(model, tokenizer, batch_size=64)
    tasks = [Task.from_row(r) for r in rows]
    episodes = run_episodes(tasks, client, AgentPrompts.load(*prompt_paths()), judge, temperature=0.0,
                            max_tokens=settings["rollout"]["max_tokens"])
    del model, client
    if device == "cuda":
        torch.cuda.empty_cache()
    return [e.reward if e.reward is not None else 0.0 for e in episodes]


def paired_interval(before: list[float], after: list[float], seed: int = 0) -> tuple[float, float, float]:
    """Mean of the per-slice difference and its 95 % paired bootstrap interval (the report's:
    :func:`audiobook_rl.compare.paired.paired`)."""
    change = paired(dict(enumerate(after)), dict(enumerate(before)), seed=seed)
    return change.mean_diff, *change.diff_ci


def reward_judge(train: dict):
    """The training reward of the ``train`` section, as train_grpo builds it."""
    return backends.get("train.reward", train["reward"]["backend"]).load()(train["reward"], None)


def peak_gb(device: str) -> float:
    return torch.cuda.max_memory_allocated() / 2**30 if device == "cuda" else 0.0


def run_ours(model_dir: Path, rows: dict, train: dict, steps: int, seed: int, workdir: Path, device: str) -> dict:
    """Local GRPO for ``steps`` steps; per-step figures from its metrics (the first step counts)."""
    settings = copy.deepcopy(train)
    settings.update(total_steps=steps, seed=seed, test_freq=steps, save_freq=steps)
    judge = reward_judge(settings)
    root = workdir / f"ours_seed{seed}"
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    started = time.monotonic()
    # Its own validation runs on 4 rows only (at step 0 and the last): the held-out score below is
    # what the comparison rests on.
    train_local(rows["train"], rows["val"][:4], AgentPrompts.load(*prompt_paths()), settings, judge,
                str(model_dir), str(root), f"bench-{seed}", device)
    wall = time.monotonic() - started
    metrics = [m for m in ckpt.read_metrics(root) if m["step"] > 0]
    steady = metrics[1:] or metrics  # the first step (graph capture, allocator warm-up) apart
    return {
        "seed": seed,
        "wall_s": wall,
        # a step = its rollouts (judged) + its update; wall_per_step_s adds validation and checkpoints
        "first_step_s": metrics[0]["rollout_seconds"] + metrics[0]["update_seconds"],
        "step_s": statistics.median(m["rollout_seconds"] + m["update_seconds"] for m in steady),
        "wall_per_step_s": wall / steps,
        "rollout_s": statistics.median(m["rollout_seconds"] for m in steady),
        "update_s": statistics.median(m["update_seconds"] for m in steady),
        # decoding inside training: the step's generated tokens over its rollout time (judging included)
        "rollout_tok_s": statistics.median(m["generated_tokens"] / m["rollout_seconds"] for m in steady),
        "train_tok_s": statistics.median(m["train_tokens_per_s"] for m in steady),
        "peak_gb": peak_gb(device),
        "train_reward": [round(m["train_reward"], 4) for m in metrics],
        "train_json_valid": [round(m["train_json_valid"], 3) for m in metrics],
        "final_dir": str(root / f"step_{steps}"),
    }


def run_trl(model_dir: Path, rows: dict, train: dict, steps: int, seed: int, workdir: Path, device: str) -> dict:
    """TRL's GRPOTrainer on the same task: both agent calls trained, TRL generating them."""
    import datasets
    from trl import GRPOConfig, GRPOTrainer

    from audiobook_rl.policy.tokenizer import prompt_ids

    prompts = AgentPrompts.load(*prompt_paths())
    judge = reward_judge(train)
    tasks = {Task.from_row(r).text: Task.from_row(r) for r in rows["train"]}
    rollout = train["rollout"]
    n, batch = rollout["n"], train["train_batch_size"]
    per_optimizer_step = batch * n * 2 // train["mini_batches"]  # rows per optimizer step
    micro = train["micro_batch_size"]

    def task_of(messages) -> Task:
        return tasks[messages[-1]["content"]]

    def agent_rollout(batch_prompts, trainer):
        """TRL repeats each task's prompt 2n times: n create → rewrite episodes fill them, create rows first."""
        tok = trainer.processing_class
        groups = [batch_prompts[i : i + 2 * n] for i in range(0, len(batch_prompts), 2 * n)]
        episode_tasks = [task_of(g[0]) for g in groups for _ in range(n)]
        create_ids = [prompt_ids(tok, prompts.create_messages(t.text)) for t in episode_tasks]
        drafts, _ = trainer._generate_single_turn(create_ids, None, {}, 1)
        rewrite_ids = [
            prompt_ids(tok, prompts.rewrite_messages(t.text, tok.decode(d, skip_special_tokens=True).strip()))
            for t, d in zip(episode_tasks, drafts)
        ]
        finals, _ = trainer._generate_single_turn(rewrite_ids, None, {}, 1)
        rewards = [
            judge.score(t.text, t.reference, tok.decode(f, skip_special_tokens=True), aliases=t.aliases).overall or 0.0
            for t, f in zip(episode_tasks, finals)
        ]
        out = {"prompt_ids": [], "completion_ids": [], "logprobs": None, "episode_reward": []}
        for g in range(len(groups)):
            span = range(g * n, (g + 1) * n)
            for ids, completions in ((create_ids, drafts), (rewrite_ids, finals)):
                for k in span:
                    out["prompt_ids"].append(ids[k])
                    out["completion_ids"].append(completions[k])
                    out["episode_reward"].append(rewards[k])
        return out

    def episode_reward(prompts, completions, episode_reward, **_):
        return list(episode_reward)

    dataset = datasets.Dataset.from_list([{"prompt": prompts.create_messages(t.text)} for t in tasks.values()])
    args = GRPOConfig(
        output_dir=str(workdir / "trl"), seed=seed, max_steps=steps * train["mini_batches"],
        learning_rate=train["lr"], weight_decay=train["weight_decay"], lr_scheduler_type="constant",
        warmup_steps=0, max_grad_norm=train["grad_clip"],
        num_generations=2 * n, per_device_train_batch_size=micro,
        gradient_accumulation_steps=per_optimizer_step // micro, steps_per_generation=batch * n * 2 // micro,
        max_completion_length=rollout["max_tokens"], temperature=rollout["temperature"], top_p=rollout["top_p"],
        top_k=rollout["top_k"], beta=0.0, epsilon=train["clip_ratio_low"], epsilon_high=train["clip_ratio_high"],
        delta=train["clip_ratio_c"], scale_rewards="group", loss_type="bnpo", bf16=device == "cuda", use_cpu=device == "cpu",
        gradient_checkpointing=False, use_vllm=False, logging_steps=1, save_strategy="no", report_to=[],
        disable_tqdm=True,
    )
    trainer = GRPOTrainer(model=str(model_dir), reward_funcs=episode_reward, args=args, train_dataset=dataset,
                          rollout_func=agent_rollout)
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    marks: list[float] = []

    from transformers import TrainerCallback

    class Clock(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            marks.append(time.monotonic())

    trainer.add_callback(Clock())
    started = time.monotonic()
    trainer.train()
    # One of our steps = one generation batch = mini_batches optimizer steps of TRL.
    ends = [started] + marks[train["mini_batches"] - 1 :: train["mini_batches"]]
    times = [b - a for a, b in zip(ends, ends[1:])]
    rewards = [h["reward"] for h in trainer.state.log_history if "reward" in h]
    return {
        "seed": seed, "steps": len(times), "first_step_s": times[0],
        "step_s": statistics.median(times[1:] or times),  # steady steps: the first (model load, warm-up) apart
        "step_s_all": [round(t, 2) for t in times], "peak_gb": peak_gb(device), "train_reward": [round(r, 4) for r in rewards],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True, help="the assembled HF directory")
    parser.add_argument("--novel", type=Path, default=DEFAULT_NOVEL)
    parser.add_argument("--n-train", type=int, default=16)
    parser.add_argument("--n-val", type=int, default=24)
    parser.add_argument("--data-seed", type=int, default=11)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--lr", type=float, default=5.0e-6, help="GRPO's learning rate from the base policy")
    parser.add_argument("--max-tokens", type=int, default=None, help="override rollout.max_tokens (dry runs only)")
    parser.add_argument("--seeds", type=int, nargs="*", default=[1, 2, 3])
    parser.add_argument("--trl-steps", type=int, default=4, help="0 = skip TRL (its first step is apart: give 3 or more)")
    parser.add_argument("--full-length", type=int, nargs="*", default=[32, 64, 128],
                        help="rows in flight for the decoding rate at full length (none: skip)")
    parser.add_argument("--out", type=Path, default=None, help="write every figure as JSON here")
    parser.add_argument("--device", default="cuda", help="cpu: a dry run of the bench itself on a small model")
    parser.add_argument("--engine", nargs="+", default=None, choices=["auto", "decoder", "vllm"],
                        help="train.rollout.engine of the local backend (default: the overlay's); several: each "
                             "over the same seeds, data and base scores")
    args = parser.parse_args()

    config = settings_of_overlay()
    train = config["train"]
    if args.max_tokens:
        train["rollout"]["max_tokens"] = args.max_tokens
    train["lr"] = args.lr
    engines = args.engine or [train["rollout"]["engine"]]
    steps = args.steps
    rows = build_rows(args.novel, args.n_train, args.n_val, args.data_seed)
    judge = reward_judge(train)
    print(f"model {args.model}; {len(rows['train'])} train / {len(rows['val'])} held-out excerpts of {args.novel.name}; "
          f"{steps} steps; batch {train['train_batch_size']} x {train['rollout']['n']}; "
          f"rollout T {train['rollout']['temperature']} top_p {train['rollout']['top_p']} max_tokens {train['rollout']['max_tokens']}; "
          f"lr {train['lr']}; rollout engine {', '.join(engines)}; "
          f"{torch.cuda.get_device_name() if args.device == 'cuda' else 'CPU'}; {time.strftime('%Y-%m-%d')}", flush=True)
    results: dict = {"settings": {"steps": steps, "train": train, "n_train": len(rows["train"]), "n_val": len(rows["val"])}}
    base = heldout_scores(args.model, rows["val"], train, judge, args.device)
    results["base_heldout"] = base
    print(f"base policy: held-out {statistics.fmean(base):.3f} (greedy, n={len(base)})", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        results["ours"], medians = {}, {}
        for engine in engines:
            train["rollout"]["engine"] = engine
            ours = results["ours"][engine] = []
            for seed in args.seeds:
                try:
                    r = run_ours(args.model, rows, train, steps, seed, Path(tmp) / engine, args.device)
                except UserError as err:  # the collapse guard stopped the run
                    print(f"ours [{engine}] seed {seed}: stopped: {err}", flush=True)
                    ours.append({"seed": seed, "stopped": str(err)})
                    continue
                r["final_heldout"] = heldout_scores(Path(r.pop("final_dir")), rows["val"], train, judge, args.device)
                mean, lo, hi = paired_interval(base, r["final_heldout"], seed=seed)
                r["gain"], r["gain_ci"] = mean, [lo, hi]
                ours.append(r)
                print(f"ours [{engine}] seed {seed}: steady step {r['step_s']:.2f} s median (rollout {r['rollout_s']:.2f} s, "
                      f"update {r['update_s']:.2f} s; first step {r['first_step_s']:.2f} s; {r['wall_per_step_s']:.2f} s with "
                      f"validation and checkpoints); decoding in training {r['rollout_tok_s']:.0f} tok/s; update "
                      f"{r['train_tok_s']:.0f} tok/s; peak {r['peak_gb']:.1f} GiB; "
                      f"train reward {r['train_reward'][0]:.3f} -> {r['train_reward'][-1]:.3f}; held-out "
                      f"{statistics.fmean(base):.3f} -> {statistics.fmean(r['final_heldout']):.3f}, "
                      f"gain {mean:+.3f} [{lo:+.3f}, {hi:+.3f}]", flush=True)
            ran = [r for r in ours if "step_s" in r]
            if ran:
                medians[engine] = statistics.median(r["step_s"] for r in ran)
                print(f"ours [{engine}], {len(ran)} seeds: steady step {medians[engine]:.2f} s (median of the seeds' "
                      f"medians; {', '.join(format(r['step_s'], '.2f') for r in ran)}); decoding in training "
                      f"{statistics.median(r['rollout_tok_s'] for r in ran):.0f} tok/s", flush=True)
        if args.device == "cuda" and args.full_length:
            model, _ = load_policy(args.model, args.device)
            results["full_length_tok_s"] = {}
            for batch in args.full_length:
                rate, _ = decoder_rate(model, batch, 800, train["rollout"]["max_tokens"], model.config.vocab_size)
                results["full_length_tok_s"][batch] = rate
                print(f"decoding at full length ({train['rollout']['max_tokens']} tokens), {batch} rows in flight: "
                      f"{rate:.0f} tok/s", flush=True)
            del model
            torch.cuda.empty_cache()
        if args.trl_steps:
            trl = run_trl(args.model, rows, train, args.trl_steps, args.seeds[0], Path(tmp), args.device)
            results["trl"] = trl
            ratio = "".join(f"; ours [{e}] / TRL steady step = {m / trl['step_s']:.3f}" for e, m in medians.items())
            print(f"TRL seed {trl['seed']}: steady step {trl['step_s']:.2f} s median (first {trl['first_step_s']:.2f} s; "
                  f"all {trl['step_s_all']}); peak {trl['peak_gb']:.1f} GiB{ratio}", flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
