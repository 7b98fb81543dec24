"""Running the workflow of this repository (or of a copy, for tests that edit its files) in a scratch
directory: a run, a dry run's plan, a run in the background (for a test that kills it), config overlays,
and the bad corpora of the README's bad-input table."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from helpers import REPO
from helpers.policy import TINY_POLICY

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


# Whether the test now running is marked `slow` (set by tests/conftest.py before each test's fixtures):
# every Snakemake run belongs to the slow tier, so that `pytest -m "not slow"` stays fast.
IN_SLOW_TEST = True


# What a copy of the workflow needs (workflow_copy): the Snakefile finds its rules, scripts, config and
# default profile beside it, and the package's paths (audiobook_rl.paths) point there too.
WORKFLOW_FILES = ("Snakefile", "rules", "scripts", "src", "config", "corpus", "profiles", "envs", "requirements")


def workflow_copy(dest: Path) -> Path:
    """A copy of this repository's workflow and package in ``dest``, for tests that edit or touch their
    files: runs of the copy (``repo=dest``) import the package from it, so those edits reach no other
    test's run going on at the same time."""
    for name in WORKFLOW_FILES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(REPO / name, dest / name)
    return dest


def command(workdir: Path, *args: str, repo: Path = REPO) -> list[str]:
    """The command line of a Snakemake run of the workflow of ``repo`` (this repository) in ``workdir``."""
    if not IN_SLOW_TEST:
        raise AssertionError("this test runs Snakemake: mark it `@pytest.mark.slow`")
    return [sys.executable, "-m", "snakemake", "-s", str(repo / "Snakefile"), "-d", str(workdir), *args]


def environment(env: dict | None, repo: Path = REPO) -> dict:
    """The run's environment: ours plus ``env``; a copy's package first on the import path."""
    merged = {**os.environ, **(env or {})}
    if repo != REPO:
        merged["PYTHONPATH"] = os.pathsep.join(p for p in (str(repo / "src"), merged.get("PYTHONPATH")) if p)
    return merged


def snakemake(workdir: Path, *args: str, check: bool = True, env: dict | None = None,
              repo: Path = REPO) -> subprocess.CompletedProcess:
    """Run the workflow of ``repo`` (this repository) with ``workdir`` as its working directory."""
    proc = subprocess.run(command(workdir, *args, repo=repo), capture_output=True, text=True, env=environment(env, repo))
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return proc


def start(workdir: Path, *args: str, env: dict | None = None, capture: bool = False) -> subprocess.Popen:
    """The workflow started in the background, in a session of its own (so that a test can kill it whole);
    with ``capture`` its output is readable from ``stdout``."""
    out = subprocess.PIPE if capture else subprocess.DEVNULL
    return subprocess.Popen(command(workdir, *args), stdout=out, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, env=environment(env))


_JOB = re.compile(r"^(?:local)?(?:rule|checkpoint) (\w+):$", re.M)


def planned_rules(workdir: Path, *targets: str, configfile: Path | None = None, repo: Path = REPO) -> set[str]:
    """The rules a dry run would execute (``all`` excluded)."""
    # Targets first: --configfile takes several values and would swallow them.
    args = [*targets, "-n", "--cores", "1"]
    if configfile:
        args += ["--configfile", str(configfile)]
    proc = snakemake(workdir, *args, repo=repo)
    return set(_JOB.findall(proc.stdout)) - {"all"}


def ran_rules(proc: subprocess.CompletedProcess) -> set[str]:
    """The rules a finished (not dry) run executed, from Snakemake's job lines (``all`` excluded)."""
    return set(_JOB.findall(proc.stdout + proc.stderr)) - {"all"}


def write_config(workdir: Path, name: str = "overlay.yaml", **sections) -> Path:
    """A config overlay in ``workdir`` (merged over config/config.yaml by Snakemake)."""
    path = workdir / name
    path.write_text(yaml.safe_dump(sections, allow_unicode=True), encoding="utf-8")
    return path


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
