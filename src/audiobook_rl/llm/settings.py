"""Defaults of the ``llm`` config section (kept equal to config/config.schema.yaml's defaults)."""

from __future__ import annotations

import copy
from pathlib import Path

PROVIDERS = ("anthropic", "zhipuai", "openai")

DEFAULTS: dict = {
    "concurrency": 8,
    "timeout_s": 120.0,
    "max_tries": 6,
    "backoff_s": 2.0,
    "backoff_max_s": 60.0,
    "rate_limit_per_minute": {"anthropic": 50, "zhipuai": 60, "openai": 0},
    "cache_dir": "results/cache/llm",
    "key_env": {"anthropic": "ANTHROPIC_API_KEY", "zhipuai": "ZHIPUAI_API_KEY", "openai": "OPENAI_API_KEY"},
    "base_url": {"anthropic": None, "zhipuai": None, "openai": None},
    "prices_per_mtok": {"claude-opus-4-1-20250805": {"input": 15.0, "output": 75.0}},
}


def merged(section: dict | None) -> dict:
    """The defaults, updated (one level into the per-provider maps) with ``section``."""
    out = copy.deepcopy(DEFAULTS)
    for key, value in (section or {}).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


REPO = Path(__file__).resolve().parents[3]


def repo_path(path: str | Path) -> Path:
    """A configured file (a prompt): as given if it exists or is absolute, else inside the repository."""
    p = Path(path)
    return p if p.is_absolute() or p.exists() else REPO / p
