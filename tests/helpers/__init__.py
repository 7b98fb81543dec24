"""What many tests share: the repository's files, the agent's prompts, and config sections as a stage
gets them (the schema's defaults under the values a test sets)."""

from __future__ import annotations

from audiobook_rl import backends
from audiobook_rl.agent.episode import AgentPrompts
from audiobook_rl.config import load_config, section
from audiobook_rl.paths import CONFIG, REPO

STORY = REPO / "corpus" / "story.txt"
SHUIHU = REPO.parent / "shared" / "data" / "shuihuzhuan.txt"  # a public-domain novel kept beside the repo, if there
SEED = REPO / "config" / "seed.yaml"

__all__ = ["REPO", "STORY", "SHUIHU", "SEED", "prompts", "settings", "make_judge", "seed_config"]


def prompts() -> AgentPrompts:
    """The agent's two role prompts of config/prompts/."""
    return AgentPrompts.load(REPO / "config/prompts/create.md", REPO / "config/prompts/rewrite.md")


def settings(key: str, **values) -> dict:
    """Config section ``key`` (``judge``, ``train.reward``, ...) as a stage gets it: ``values`` over the
    schema's defaults, validated."""
    return section(key, values)


def make_judge(llm: dict | None = None, key: str = "judge", **values):
    """The judge a stage builds from config section ``key`` with ``values`` (the rubric judge by
    default), its client layer set by ``llm`` (the ``llm`` section)."""
    judge = settings(key, **values)
    return backends.get(key, judge["backend"]).load()(judge, llm)


def seed_config() -> dict:
    """config/config.yaml with the config/seed.yaml overlay, validated and with defaults filled in."""
    return load_config(CONFIG, overlays=[SEED])
