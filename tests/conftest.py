"""Shared test helpers: the repository path and a way to run the workflow in a scratch directory."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SHUIHU = REPO.parent / "shared" / "data" / "shuihuzhuan.txt"  # a public-domain novel kept beside the repo, if there
STORY = REPO / "corpus" / "story.txt"


def snakemake(workdir: Path, *args: str, check: bool = True, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run the workflow of this repository with ``workdir`` as its working directory."""
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(workdir), *args]
    run_env = {**os.environ, **(env or {})}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=run_env)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return proc


_JOB = re.compile(r"^(?:local)?(?:rule|checkpoint) (\w+):$", re.M)


def planned_rules(workdir: Path, *targets: str, configfile: Path | None = None) -> set[str]:
    """The rules a dry run would execute (``all`` excluded)."""
    # Targets first: --configfile takes several values and would swallow them.
    args = [*targets, "-n", "--cores", "1"]
    if configfile:
        args += ["--configfile", str(configfile)]
    proc = snakemake(workdir, *args)
    return set(_JOB.findall(proc.stdout)) - {"all"}


def ran_rules(proc: subprocess.CompletedProcess) -> set[str]:
    """The rules a finished (not dry) run executed, from Snakemake's job lines (``all`` excluded)."""
    return set(_JOB.findall(proc.stdout + proc.stderr)) - {"all"}


def write_config(workdir: Path, **sections) -> Path:
    """A config overlay in ``workdir`` (merged over config/config.yaml by Snakemake)."""
    path = workdir / "overlay.yaml"
    path.write_text(yaml.safe_dump(sections, allow_unicode=True), encoding="utf-8")
    return path


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return tmp_path


# Tests write only to temporary folders: the clone's own results/ and logs/ hold a user's runs.
# (A pipeline run in this clone while the tests run would trip this check too.)
WATCHED = ("results", "logs")


def repo_outputs() -> dict[str, tuple[int, int]]:
    """(size, modification time) of every file and folder under the repository's results/ and logs/."""
    found = {}
    for top in WATCHED:
        for folder, dirs, files in os.walk(REPO / top):
            for name in dirs + files:
                path = Path(folder, name)
                stat = path.lstat()
                found[str(path.relative_to(REPO))] = (0 if name in dirs else stat.st_size, stat.st_mtime_ns)
    return found


_BEFORE = repo_outputs()


@pytest.fixture(autouse=True)
def _repo_outputs_untouched():
    yield
    now = repo_outputs()
    if now != _BEFORE:
        changed = sorted(k for k in now.keys() | _BEFORE.keys() if now.get(k) != _BEFORE.get(k))
        _BEFORE.clear()
        _BEFORE.update(now)  # name each write once, at the test that made it
        pytest.fail(f"wrote into the repository: {', '.join(changed[:10])}; tests write only to temporary folders")


# AgentOps' tracer patches the openai client for the rest of the process, which hides the spans
# of later Agent Lightning tests that use the OpenTelemetry tracer: run its tests last.
PROCESS_WIDE_INSTRUMENTATION = ("test_agent_lightning.py",)


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: item.path.name in PROCESS_WIDE_INSTRUMENTATION)
