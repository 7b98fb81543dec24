"""The README's two commands are what a new user types and what CI runs."""

from __future__ import annotations

import re

from helpers import REPO


def readme_commands() -> list[str]:
    block = re.search(r"## Quickstart.*?```bash\n(.*?)```", (REPO / "README.md").read_text(encoding="utf-8"), re.S).group(1)
    return [line for line in block.splitlines() if line and not line.startswith("#")]


def test_ci_runs_the_readmes_test_command_exactly():
    pipeline, tests = readme_commands()
    ci = [line for line in (REPO / ".ci/run").read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]
    assert ci[-1] == tests
    assert pipeline.endswith("snakemake --cores 2") and "-c requirements/cpu.lock" in pipeline


def test_the_test_command_sets_up_what_the_tests_need_before_running_them():
    _, tests = readme_commands()
    steps = tests.split(" && ")
    assert steps[1].startswith(".venv/bin/pip install") and '".[test]"' in steps[1]
    assert steps[2] == ".venv/bin/python tests/helpers/browser.py --install"
    assert steps[3:] == ['.venv/bin/python -m pytest -n 2 -m "not slow"', ".venv/bin/python -m pytest -n 2 -m slow"]
