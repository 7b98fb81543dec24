"""The shuffled-reward control in the local GRPO loop: the same rollouts as the real-reward run,
with the step's rewards permuted across its episodes before the update."""

import copy
import json
from pathlib import Path

import pytest

from audiobook_rl.compare.control import shuffle_rewards
from audiobook_rl.judging import Verdict
from audiobook_rl.training import local_grpo
from helpers import prompts
from helpers.policy import TINY_TRAIN, shared_tiny_policy, tiny_rows


# A seed whose step-1 permutation of 4 episodes moves every reward (seed 3's is the identity).
SEED = 5


class LengthJudge:
    """A judge whose reward differs between episodes (their final script's length), so that a
    permutation of the rewards is visible; the tiny policy writes no script the rubric would score."""

    backend, model = "length", "test"

    def score(self, source, reference, candidate, aliases=None) -> Verdict:
        return Verdict(overall=(len(candidate) % 11) / 10, backend=self.backend, model=self.model)

    def score_many(self, cases):
        return [self.score(c["source"], c["reference"], c["candidate"], c.get("aliases")) for c in cases]


def train_one_step(base: Path, rows, root: Path, shuffle: bool, monkeypatch) -> tuple[list, list, dict, dict]:
    """Step 1 of a run: (its episodes as (task, final, judge reward), the rewards handed to
    episode_rows, its metrics line, the summary)."""
    seen = []
    real = local_grpo.episode_rows

    def recorded(episodes, groups, rewards, *options):
        seen.append(([(e.task_id, e.final, e.reward) for e in episodes], list(rewards)))
        return real(episodes, groups, rewards, *options)

    monkeypatch.setattr(local_grpo, "episode_rows", recorded)
    settings = copy.deepcopy({**TINY_TRAIN, "seed": SEED, "total_steps": 1, "reward": {"backend": "rubric", "shuffle": shuffle}})
    summary = local_grpo.train_local(rows["train"], rows["val"], prompts(), settings, LengthJudge(),
                                     str(base / "step_0"), str(root), "fp")
    metrics = [json.loads(line) for line in (root / "metrics.jsonl").read_text().splitlines()]
    (episodes, rewards), = seen
    return episodes, rewards, metrics[-1], summary


def test_shuffled_rewards_permute_the_same_episodes_rewards(tmp_path_factory, tmp_path, monkeypatch):
    base, rows = shared_tiny_policy(tmp_path_factory).parent, tiny_rows()
    real_eps, real_rewards, real_line, real_summary = train_one_step(base, rows, tmp_path / "real", False, monkeypatch)
    shuf_eps, shuf_rewards, shuf_line, shuf_summary = train_one_step(base, rows, tmp_path / "shuffled", True, monkeypatch)

    # the control draws nothing from the training randomness: identical rollouts and judge rewards
    assert shuf_eps == real_eps
    judged = [reward for _, _, reward in real_eps]
    assert real_rewards == judged
    assert len(set(judged)) > 1  # a permutation can show
    # what reaches the update is the judge's rewards permuted, exactly as compare.control defines it
    assert shuf_rewards == shuffle_rewards(judged, seed=SEED, step=1)
    assert shuf_rewards != judged and sorted(shuf_rewards) == sorted(judged)
    # the logged training reward is the judge's; the run records that it was shuffled
    assert shuf_line["train_reward"] == pytest.approx(real_line["train_reward"])
    assert shuf_line["reward_shuffled"] is True and "reward_shuffled" not in real_line
    assert (shuf_summary["reward_shuffled"], real_summary["reward_shuffled"]) == (True, False)
