"""pytest's shared fixtures and checks; shared helpers are in tests/helpers/.

Two tiers: ``pytest -m "not slow"`` runs the unit tests of every module in a few minutes; the tests
marked ``slow`` run the workflow (Snakemake) or a stage end to end.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Importing agentlightning (litellm) otherwise tries to download a price list: no network in tests.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from helpers import REPO, workflow  # noqa: E402


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    # Before the test's fixtures (a module's finished run too): only a slow test may run Snakemake.
    workflow.IN_SLOW_TEST = item.get_closest_marker("slow") is not None


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
# The longest file of the workflow tier starts first: with two test processes (`-n 2`, one file each
# at a time, in this order: pyproject.toml) the other process runs the rest meanwhile.
LONGEST = ("test_workflow_sweep_arms.py",)


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: (item.path.name in PROCESS_WIDE_INSTRUMENTATION, item.path.name not in LONGEST))
