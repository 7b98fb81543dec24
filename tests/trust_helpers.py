"""Helpers of the trust tests: a background workflow run, and a tiny run judged by an OpenAI-compatible server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO, write_config
from grpo_helpers import TINY_POLICY

OPENAI_KEY = {"OPENAI_API_KEY": "sk-openai-test-key"}

# The bad corpora of the README's bad-input table, as bytes (None: the file does not exist).
BAD_CORPORA = {
    "missing": None,
    "empty": b"",
    "whitespace": "　　\n \n\t\n".encode(),
    "binary": bytes(range(256)) * 40,
    "neither-utf8-nor-gb18030": b"\x81\x30" * 10 + b"\xff\xfe\xfd" * 50,
    "too-short": "　　林青道：“走吧。”\n".encode() * 10,
    "unbalanced-quotes": "　　林青道：“今晚的酒，我请了，明日一早再上路。\n".encode() * 200,
}


def start(workdir: Path, *args: str, env: dict | None = None, capture: bool = False) -> subprocess.Popen:
    """The workflow started in the background, in a session of its own (so that a test can kill it whole);
    with ``capture`` its output is readable from ``stdout``."""
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(workdir), *args]
    out = subprocess.PIPE if capture else subprocess.DEVNULL
    return subprocess.Popen(
        cmd, stdout=out, stderr=subprocess.STDOUT, text=True, start_new_session=True, env={**os.environ, **(env or {})}
    )


def judging_overlay(workdir: Path, url: str, llm: dict | None = None, **sections) -> Path:
    """The tiny policy's outputs on 12 validation slices, judged by the server at ``url``; only
    step 0 (the base policy) unless ``sections`` say otherwise."""
    config = {
        "policy": TINY_POLICY,
        "split": {"n_train": 8, "n_val": 12},
        "generate": {"backend": "hf", "temperature": 0.0, "max_tokens": 12, "batch_size": 16, "seed": 0},
        "eval": {"steps": []},
        "judge": {"backend": "openai", "model": "judge-test"},
        "llm": {"base_url": {"openai": url}, **(llm or {})},
    }
    return write_config(workdir, **{**config, **sections})
