"""A tiny policy and tiny datasets for the policy, GRPO and generation tests (seconds, not minutes)."""

from __future__ import annotations

import copy
from pathlib import Path

import torch

from audiobook_rl.corpus import read_text
from audiobook_rl.dataset import split_rows
from audiobook_rl.policy.build import build_policy
from helpers import STORY, prompts
from loopback.damage import story_cases

TINY_POLICY = {
    "seed": 1,
    "vocab_size": 1200,
    "prompt_repeats": 20,
    "model": {"hidden_size": 16, "layers": 1, "heads": 2, "kv_heads": 1, "max_positions": 2048},
    "warm_start": {"window_draws": 1, "windows_per_draw": 8, "min_chars": 100, "max_chars": 200,
                   "steps": 2, "batch_size": 4, "lr": 0.003},
}

TINY_TRAIN = {
    "backend": "local", "seed": 3, "total_steps": 3, "train_batch_size": 2,
    "rollout": {"n": 2, "temperature": 1.0, "top_p": 1.0, "top_k": 0, "max_tokens": 12, "engine": "auto"}, "val_temperature": 0.0,
    "lr": 0.001, "weight_decay": 0.0, "clip_ratio_low": 0.2, "clip_ratio_high": 0.3, "clip_ratio_c": 3.0, "kl_coef": 0.0, "norm_adv_by_std": True,
    "mini_batches": 2, "micro_batch_size": 3, "grad_clip": 1.0, "generate_batch_size": 8,
    "test_freq": 2, "save_freq": 2, "reward": {"backend": "rubric", "shuffle": False},
    # a policy this small writes no valid script: the guard would stop these runs at once
    "collapse_patience": 0,
}


def tiny_rows(n_train: int = 3, n_val: int = 2) -> dict[str, list[dict]]:
    """Dataset rows (as split_dataset writes them) of rule-labelled excerpts of the bundled story."""
    labels = [{**c, "script": [s.to_dict() for s in c["script"]]} for c in story_cases(n_train + n_val)]
    return split_rows(labels, {"n_train": n_train, "n_val": n_val, "n_test": 0, "seed": 0, "data_source": "audiobook"}, prompts().create)


def build_tiny_policy(out_dir: Path, settings: dict | None = None) -> dict:
    # As the build_policy rule does. The weights depend on it: torch splits its CPU sums by the thread
    # count, and a process that never set it sums differently again from one that set the same number
    # (a stage run earlier in the test process sets it).
    torch.set_num_threads(2)
    text, _ = read_text(STORY)
    return build_policy(text, [(0, 400)], prompts(), copy.deepcopy(settings or TINY_POLICY), out_dir)


_BUILT: dict[str, Path] = {}


def shared_tiny_policy(tmp_path_factory) -> Path:
    """One tiny base policy per test session (building it is the slow part of these tests)."""
    if "policy" not in _BUILT:
        out = tmp_path_factory.mktemp("tiny_policy") / "step_0"
        build_tiny_policy(out)
        _BUILT["policy"] = out
    return _BUILT["policy"]
