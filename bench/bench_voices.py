"""What a listener hears from a real pretrained policy on one GPU: its voices under each way of
teaching the script's convention, then GRPO from the SFT warm start, measured against that warm start.

    python bench/bench_voices.py --model models/qwen2.5-coder-0.5b-instruct [--novel NOVEL.txt] \\
        [--steps 40] [--seeds 1 2 3] [--arms grpo kl] [--parallel 2] [--n-sft 0] [--base-options all] \\
        [--eval-every 0] [--out bench-voices]

Data: excerpts of the novel cut by the project's slicer and labelled by the rule labeler with the
novel's lexicon, as label_slices does: ``--n-train`` (16) training and ``--n-test`` (24) held-out
excerpts, disjoint; with ``--n-sft N`` the warm start learns from N more excerpts that GRPO never
trains on (by default it learns the training excerpts themselves, and GRPO then starts from a policy
that already knows their answers). Settings: config/one_gpu.yaml over config/config.yaml (its ``sft`` and
``train`` sections); only the step count, the seed and an arm's changes (``ARMS``) differ.

1. **The base policy** on the held-out excerpts (greedy), under each option: the prompts without a
   worked example (bench/prompts/), the prompts of config/prompts/ (rules and a worked example),
   the same with speakers constrained at decoding to 旁白 and the names the lexicon finds in the
   excerpt, and the SFT warm start on the training references (config/prompts/).
2. **GRPO from the warm start**, per arm and seed, ``--parallel`` runs at a time on the GPU: seconds
   per step, rollout tokens/s, and the final checkpoint on the held-out excerpts (with
   ``--eval-every K``, every K steps' checkpoint too: a run can rise and then fall).

Per option and run it prints voice accuracy (overall, narration, quotes: :mod:`audiobook_rl.judging.voice`),
the rubric judge's score, the share of readable scripts and the five most used speaker names; for
GRPO, the paired change (mean, 95 % bootstrap interval over excerpts) against the base policy and
against the warm start. ``--out`` keeps every number and every script as ``summary.json`` (read the
scripts, not only the scores).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

from audiobook_rl import backends
from audiobook_rl.agent.episode import AgentPrompts, run_episodes
from audiobook_rl.agent.hf_chat import HFChat, stop_ids
from audiobook_rl.compare.paired import paired as paired_change
from audiobook_rl.config import load_config
from audiobook_rl.corpus import read_text, slice_text
from audiobook_rl.dataset import Task, split_rows
from audiobook_rl.judging.voice import SpeakerUse, Voices, voice_accuracy
from audiobook_rl.labeling.lexicon import build_lexicon
from audiobook_rl.labeling.rules import RuleLabeler
from audiobook_rl.policy.model import load_policy
from audiobook_rl.policy.tokenizer import prompt_ids
from audiobook_rl.policy.warmstart import warm_start_policy
from audiobook_rl.script import NARRATOR, parse_script
from audiobook_rl.stage import setup_logging
from audiobook_rl.training import checkpoints as ckpt
from audiobook_rl.training.local_grpo import train_local

REPO = Path(__file__).resolve().parents[1]
PROMPTS = {
    "without example": (REPO / "bench/prompts/create_without_example.md", REPO / "bench/prompts/rewrite_without_example.md"),
    "with example": (REPO / "config/prompts/create.md", REPO / "config/prompts/rewrite.md"),
}
# The GRPO arms: changes to the overlay's train section (--arms picks among them). The first three
# train at lr 5e-6, the rate that trains the base policy; `low_lr` at 1e-6, the overlay's own rate.
ARMS = {
    "grpo": {"lr": 5.0e-6},
    "kl": {"lr": 5.0e-6, "kl_coef": 0.1},
    "no_std": {"lr": 5.0e-6, "norm_adv_by_std": False},
    "low_lr": {"lr": 1.0e-6},
}


# ---------------------------------------------------------------------------------------------- data


def build_data(novel: Path, n_train: int, n_test: int, seed: int, n_sft: int = 0) -> dict:
    """Rule-labelled excerpts as split_dataset's train and test rows, ``n_sft`` more for the warm start
    alone (all three disjoint), and the names of each excerpt."""
    text, _ = read_text(novel)
    slices = slice_text(text, n=n_train + n_sft + n_test, min_chars=100, max_chars=200, seed=seed, source=novel.name)
    lexicon = build_lexicon(text)
    labeler = RuleLabeler(lexicon)
    labels = [
        {"id": s.id, "text": s.text, "start": s.start, "end": s.end, "script": [seg.to_dict() for seg in script],
         "aliases": lexicon.aliases}
        for s, script in zip(slices, labeler.label(slices))
    ]
    # The warm start's own excerpts are cut as the validation part: disjoint from train and test.
    split = {"n_train": n_train, "n_val": n_sft, "n_test": n_test, "seed": seed, "data_source": "audiobook"}
    rows = split_rows(labels, split, AgentPrompts.load(*map(str, PROMPTS["with example"])).create)
    names = {t["id"]: list(dict.fromkeys(m.group() for m in lexicon.names_in(t["text"]))) for t in labels}
    return {"train": rows["train"], "sft": rows["val"] or rows["train"], "test": rows["test"], "names": names}


def overlay() -> dict:
    return load_config(REPO / "config/config.yaml", REPO / "config/config.schema.yaml", [REPO / "config/one_gpu.yaml"])


def reward_judge(train: dict):
    return backends.get("train.reward", train["reward"]["backend"]).load()(train["reward"], None)


# ----------------------------------------------------------------------------------------- measuring


def measure(tasks: list[Task], finals: list[str], drafts: list[str], judge, names: dict) -> dict:
    """Per-excerpt judge score and voices of the final scripts, and their totals."""
    per = []
    total, use = None, SpeakerUse()
    for task, final, draft in zip(tasks, finals, drafts):
        v = voice_accuracy(task.reference, final, task.aliases, task.text)
        total = v if total is None else total + v
        script = parse_script(final)
        if script.status != "invalid":
            use.add(script.segments, Voices.of(task.text, task.reference, task.aliases, names.get(task.id)))
        per.append({"id": task.id, "score": judge.score(task.text, task.reference, final, aliases=task.aliases).overall,
                    "voice": v.overall, "final": final, "draft": draft})
    return {
        "score": statistics.fmean(p["score"] for p in per),
        "voice": total.overall, "narration": total.narration, "quotes": total.quotes,
        "json_valid": statistics.fmean(parse_script(p["final"]).ok for p in per),
        "narrator_segments": use.narrator, "person_segments": use.persons, "other_segments": use.others,
        "top_speakers": use.top(5), "flags": [f for f, on in (("never narrator", use.never_narrator),
                                                              ("mostly not persons", use.mostly_not_persons)) if on],
        "per_excerpt": per,
    }


def generate(model_dir, tasks, prompt_pair, max_tokens: int, device: str, names: dict | None = None) -> tuple[list[str], list[str]]:
    """Greedy create -> rewrite on every task; with ``names``, speakers constrained at decoding."""
    model, tokenizer = load_policy(model_dir, device)
    prompts = AgentPrompts.load(*map(str, prompt_pair))
    if names is None:
        episodes = run_episodes(tasks, HFChat(model, tokenizer, batch_size=64), prompts, temperature=0.0, max_tokens=max_tokens)
        out = [e.final for e in episodes], [e.draft for e in episodes]
    else:
        constrained = ConstrainedChat(model, tokenizer)
        allowed = [[NARRATOR, *names.get(t.id, [])] for t in tasks]
        drafts = constrained.chat([prompts.create_messages(t.text) for t in tasks], allowed, max_tokens)
        finals = constrained.chat([prompts.rewrite_messages(t.text, d.strip()) for t, d in zip(tasks, drafts)], allowed, max_tokens)
        out = finals, drafts
    del model
    if device == "cuda":
        torch.cuda.empty_cache()
    return out


class ConstrainedChat:
    """Greedy decoding with ``transformers``' ``generate``, where the value of every ``"speaker"``
    field may only spell one of the row's allowed names."""

    def __init__(self, model, tokenizer):
        self.model, self.tokenizer = model, tokenizer
        self.stops = sorted(stop_ids(model, tokenizer))
        pieces = [tokenizer.decode([i]) for i in range(len(tokenizer))]
        self.by_first: dict[str, list[tuple[int, str]]] = {}
        for i, piece in enumerate(pieces):
            if piece and "\ufffd" not in piece:
                self.by_first.setdefault(piece[0], []).append((i, piece))

    def allowed_tokens(self, tail: str, names: list[str]) -> list[int] | None:
        """Token ids that keep a speaker value being written at the end of ``tail`` on an allowed name
        (None: not inside a speaker value, or no token fits)."""
        match = re.search(r'"speaker"\s*:\s*"([^"]*)$', tail)
        if match is None:
            return None
        partial = match.group(1)
        rests = [name + '"' for name in names if (name + '"').startswith(partial)]
        rests = [r[len(partial):] for r in rests]
        ids = {i for r in rests for i, piece in self.by_first.get(r[0], ()) if r.startswith(piece) or piece.startswith(r)}
        return sorted(ids) or None

    @torch.no_grad()
    def chat(self, batch: list[list[dict]], allowed: list[list[str]], max_tokens: int) -> list[str]:
        from transformers import LogitsProcessor, LogitsProcessorList

        tok, out = self.tokenizer, []
        for start in range(0, len(batch), 32):
            part = [prompt_ids(tok, m) for m in batch[start:start + 32]]
            names = allowed[start:start + 32]
            width = max(map(len, part))
            ids = torch.full((len(part), width), tok.pad_token_id, dtype=torch.long)
            mask = torch.zeros_like(ids)
            for i, p in enumerate(part):
                ids[i, width - len(p):] = torch.tensor(p)
                mask[i, width - len(p):] = 1
            chat = self

            class Speakers(LogitsProcessor):
                def __call__(self, input_ids, scores):
                    for row in range(input_ids.shape[0]):
                        tail = tok.decode(input_ids[row, width:][-48:].tolist(), skip_special_tokens=True)
                        keep = chat.allowed_tokens(tail, names[row])
                        if keep is not None:
                            kept = scores[row, keep].clone()
                            scores[row] = float("-inf")
                            scores[row, keep] = kept
                    return scores

            gen = self.model.generate(input_ids=ids.to(self.model.device), attention_mask=mask.to(self.model.device),
                                      max_new_tokens=max_tokens, do_sample=False, eos_token_id=self.stops,
                                      pad_token_id=tok.pad_token_id, logits_processor=LogitsProcessorList([Speakers()]))
            out += [tok.decode(row[width:].tolist(), skip_special_tokens=True) for row in gen]
        return out


def paired(after: list[float], before: list[float]) -> list[float]:
    """[mean, low, high] of the per-excerpt difference, with its 95 % paired bootstrap interval
    (the report's: :func:`audiobook_rl.compare.paired.paired`)."""
    change = paired_change(dict(enumerate(after)), dict(enumerate(before)))
    return [change.mean_diff, *change.diff_ci]


def versus(m: dict, before: dict) -> dict:
    """The paired change of the judge's score and of voice accuracy from ``before`` to ``m``."""
    return {what: paired([p[what] for p in m["per_excerpt"]], [p[what] for p in before["per_excerpt"]])
            for what in ("score", "voice")}


def interval(change: list[float]) -> str:
    return f"{change[0]:+.3f} [{change[1]:+.3f}, {change[2]:+.3f}]"


def line(name: str, m: dict) -> str:
    top = ", ".join(f"{n} {c}" for n, c in m["top_speakers"])
    return (f"{name}: voice {m['voice']:.3f} (narration {m['narration']:.3f}, quotes {m['quotes']:.3f}); "
            f"score {m['score']:.3f}; json valid {m['json_valid']:.2f}; speakers: {top}"
            + (f"; FLAGS {m['flags']}" if m["flags"] else ""))


# ------------------------------------------------------------------------------------------- GRPO run


def run_grpo(args) -> None:
    """One GRPO run (a worker process): train from the warm start, measure the final checkpoint."""
    setup_logging()  # training's per-step lines go to the run's log
    data = json.loads(Path(args.data).read_text(encoding="utf-8"))
    config = overlay()
    train = copy.deepcopy(config["train"])
    every = args.eval_every or args.steps
    train.update(ARMS[args.arm], seed=args.seed, total_steps=args.steps, test_freq=args.steps, save_freq=every)
    if args.max_tokens:
        train["rollout"]["max_tokens"] = args.max_tokens
    judge = reward_judge(train)
    root = Path(args.work) / f"{args.arm}_seed{args.seed}"
    prompts = AgentPrompts.load(*map(str, PROMPTS["with example"]))
    started = time.monotonic()
    # Its own validation (step 0 and the last) on 4 training excerpts only: the held-out measure is below.
    train_local(data["train"], data["train"][:4], prompts, train, judge, args.sft, str(root), f"bench-{args.arm}-{args.seed}",
                args.device)
    wall = time.monotonic() - started
    metrics = [m for m in ckpt.read_metrics(root) if m["step"] > 0]
    tasks = [Task.from_row(r) for r in data["test"]]
    # Every kept checkpoint on the held-out excerpts (with --eval-every; else the last one alone).
    checkpoints = {}
    for step in sorted({*range(every, args.steps, every), args.steps}):
        finals, drafts = generate(root / f"step_{step}", tasks, PROMPTS["with example"], train["rollout"]["max_tokens"], args.device)
        checkpoints[step] = measure(tasks, finals, drafts, judge, data["names"])
    # The bench never resumes: the newest checkpoint's optimizer state (twice the weights) goes too.
    (root / f"step_{args.steps}" / ckpt.STATE).unlink(missing_ok=True)
    steady = [m["rollout_seconds"] + m["update_seconds"] for m in metrics[1:]] or [0.0]
    result = {
        "arm": args.arm, "seed": args.seed, "settings": {k: train[k] for k in ("lr", "kl_coef", "norm_adv_by_std", "total_steps")},
        "wall_s": wall, "first_step_s": metrics[0]["rollout_seconds"] + metrics[0]["update_seconds"],
        "steady_step_s": statistics.median(steady),
        "rollout_tok_s": sum(m["generated_tokens"] for m in metrics) / sum(m["rollout_seconds"] for m in metrics),
        "peak_gb": max((m.get("peak_gpu_mem_gb", 0.0) for m in metrics), default=0.0),
        "train_reward": [round(m["train_reward"], 4) for m in metrics],
        "train_voice": [round(m["train_voice"] or 0.0, 4) for m in metrics],
        "kl": [round(m["kl"], 5) for m in metrics],
        "final": checkpoints[args.steps],
        "checkpoints": {str(step): m for step, m in checkpoints.items() if step != args.steps},
    }
    Path(args.result).write_text(json.dumps(result, ensure_ascii=False), encoding="utf-8")


# ------------------------------------------------------------------------------------------------ main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True, help="the pretrained policy (an HF directory)")
    parser.add_argument("--novel", type=Path, default=REPO / "corpus" / "story.txt",
                        help="a novel .txt (default: the bundled story; the README's figures: 水浒传)")
    parser.add_argument("--n-train", type=int, default=16)
    parser.add_argument("--n-test", type=int, default=24)
    parser.add_argument("--n-sft", type=int, default=0,
                        help="warm start on this many more excerpts, none of them trained on by GRPO "
                             "(default 0: on the training excerpts)")
    parser.add_argument("--data-seed", type=int, default=11)
    parser.add_argument("--base-options", choices=["all", "config"], default="all",
                        help="config: measure the base policy with config/prompts/ only (the one GRPO is compared with)")
    parser.add_argument("--steps", type=int, default=40, help="GRPO steps")
    parser.add_argument("--seeds", type=int, nargs="*", default=[1, 2, 3])
    parser.add_argument("--arms", nargs="*", default=["grpo", "kl"], choices=list(ARMS))
    # Each run reserves up to 50 GiB on an H200 (0.5B policy, fp32 weights and Adam, 768 tokens per
    # call): three at once ran out of its 140 GiB.
    parser.add_argument("--parallel", type=int, default=2, help="GRPO runs at a time on the GPU")
    parser.add_argument("--eval-every", type=int, default=0,
                        help="also measure every this many steps' checkpoint on the held-out excerpts (default: the last only)")
    parser.add_argument("--max-tokens", type=int, default=None, help="override the tokens per call (dry runs)")
    parser.add_argument("--out", type=Path, default=Path("bench-voices"))
    parser.add_argument("--device", default="cuda", help="cpu: a dry run of the bench itself on a small model")
    # a worker process: one GRPO run
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    for hidden in ("--data", "--sft", "--work", "--result", "--arm"):
        parser.add_argument(hidden, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        run_grpo(args)
        return

    config = overlay()
    steps = args.steps
    max_tokens = args.max_tokens or config["train"]["rollout"]["max_tokens"]
    args.out.mkdir(parents=True, exist_ok=True)
    data = build_data(args.novel, args.n_train, args.n_test, args.data_seed, args.n_sft)
    (args.out / "data.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    tasks = [Task.from_row(r) for r in data["test"]]
    judge = reward_judge(config["train"])
    device_name = torch.cuda.get_device_name() if args.device == "cuda" else "CPU"
    sft_on = f"{args.n_sft} more excerpts" if args.n_sft else "the train excerpts"
    print(f"model {args.model}; {len(data['train'])} train / {len(tasks)} held-out excerpts of {args.novel.name}, warm start on {sft_on}; "
          f"{max_tokens} tokens per call; {device_name}", flush=True)
    summary: dict = {"settings": {"steps": steps, "sft": config["sft"], "sft_excerpts": len(data["sft"]), "train": config["train"],
                                  "arms": {a: ARMS[a] for a in args.arms}},
                     "options": {}, "runs": []}

    # 1. the base policy under each option
    options = {
        "base, prompts without example": (args.model, PROMPTS["without example"], None),
        "base, prompts with example": (args.model, PROMPTS["with example"], None),
        "base, with example, speakers constrained": (args.model, PROMPTS["with example"], data["names"]),
    }
    if args.base_options == "config":
        options = {name: option for name, option in options.items() if name == "base, prompts with example"}
    for name, (model_dir, pair, names) in options.items():
        t0 = time.monotonic()
        finals, drafts = generate(model_dir, tasks, pair, max_tokens, args.device, names)
        summary["options"][name] = measure(tasks, finals, drafts, judge, data["names"])
        print(line(name, summary["options"][name]) + f" [{time.monotonic() - t0:.0f} s]", flush=True)

    sft_dir = args.out / "sft"
    t0 = time.monotonic()
    prompts = AgentPrompts.load(*map(str, PROMPTS["with example"]))
    sft_summary = warm_start_policy(args.model, [Task.from_row(r) for r in data["sft"]], prompts, config["sft"], sft_dir, args.device)
    sft_s = time.monotonic() - t0
    finals, drafts = generate(sft_dir, tasks, PROMPTS["with example"], max_tokens, args.device)
    summary["options"]["SFT warm start"] = sft = measure(tasks, finals, drafts, judge, data["names"])
    summary["sft"] = {**sft_summary, "seconds": sft_s}
    print(line("SFT warm start", sft) + f" [{sft_summary['steps']} steps, loss {sft_summary['loss_first']:.3f} -> "
          f"{sft_summary['loss_last']:.3f}, {sft_s:.0f} s]", flush=True)
    write_summary(args.out, summary)
    base = summary["options"]["base, prompts with example"]

    # 2. GRPO from the warm start: every arm and seed, --parallel at a time
    jobs = [(arm, seed) for arm in args.arms for seed in args.seeds]
    running: list[tuple[subprocess.Popen, Path]] = []
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
    while jobs or running:
        while jobs and len(running) < args.parallel:
            arm, seed = jobs.pop(0)
            result = args.out / f"run_{arm}_seed{seed}.json"
            cmd = [sys.executable, __file__, "--worker", "--model", str(args.model), "--novel", str(args.novel),
                   "--data", str(args.out / "data.json"), "--sft", str(sft_dir), "--work", str(args.out / "work"),
                   "--result", str(result), "--arm", arm, "--seed", str(seed), "--steps", str(steps), "--device", args.device,
                   "--eval-every", str(args.eval_every)]
            if args.max_tokens:
                cmd += ["--max-tokens", str(args.max_tokens)]
            log = open(args.out / f"run_{arm}_seed{seed}.log", "w")
            running.append((subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env), result))
        time.sleep(2)
        for proc, result in list(running):
            if proc.poll() is None:
                continue
            running.remove((proc, result))
            if proc.returncode != 0 or not result.is_file():
                tail = result.with_suffix(".log").read_text(encoding="utf-8").strip().splitlines()[-3:]
                print(f"{result.stem}: failed (exit {proc.returncode}): {' | '.join(tail)}", flush=True)
                continue
            r = json.loads(result.read_text(encoding="utf-8"))
            final = r["final"]
            r["vs_base"], r["vs_sft"] = versus(final, base), versus(final, sft)
            summary["runs"].append(r)
            print(line(f"GRPO {r['arm']} seed {r['seed']}, step {steps}", final), flush=True)
            print(f"  steps: first {r['first_step_s']:.2f} s, steady median {r['steady_step_s']:.2f} s; rollouts "
                  f"{r['rollout_tok_s']:.0f} tok/s; peak {r['peak_gb']:.1f} GiB; train reward {r['train_reward'][0]:.3f} -> "
                  f"{r['train_reward'][-1]:.3f}; train voice {r['train_voice'][0]:.3f} -> {r['train_voice'][-1]:.3f}; "
                  f"kl {r['kl'][-1]:.4f}", flush=True)
            for what in ("voice", "score"):
                print(f"  {what}: vs base {interval(r['vs_base'][what])}; vs SFT {interval(r['vs_sft'][what])}", flush=True)
            for step, m in r.get("checkpoints", {}).items():  # the earlier checkpoints (--eval-every)
                m["vs_sft"] = versus(m, sft)
                print(f"  step {step}: voice {m['voice']:.3f} (quotes {m['quotes']:.3f}), score {m['score']:.3f}, json valid "
                      f"{m['json_valid']:.2f}; vs SFT voice {interval(m['vs_sft']['voice'])}, score "
                      f"{interval(m['vs_sft']['score'])}", flush=True)
            write_summary(args.out, summary)  # after each run: what finished is kept if the bench is stopped
    write_summary(args.out, summary)


def write_summary(out: Path, summary: dict) -> None:
    (out / "summary.json").write_text(json.dumps(summary, ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
