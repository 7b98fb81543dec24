"""Shared fixtures of the verl-backend tests."""

import os
from pathlib import Path

# Importing agentlightning (litellm) otherwise tries to download a price list: no network in tests.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

REPO = Path(__file__).resolve().parents[2]


def seed_config() -> dict:
    """config/config.yaml with the config/seed.yaml overlay, validated and with defaults filled in."""
    from audiobook_rl.config import load_config

    return load_config(REPO / "config" / "config.yaml", REPO / "config" / "config.schema.yaml", [REPO / "config" / "seed.yaml"])
