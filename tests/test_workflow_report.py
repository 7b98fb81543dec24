"""The `report` rule in Snakemake: it builds from the stage files, and report settings rerun only it.

Runs the real workflow in a scratch directory holding fixture results; `--allowed-rules report`
keeps Snakemake from rebuilding the (absent) upstream stages.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from audiobook_rl.config import load_config
from helpers import REPO
from helpers import report_run as fx
from helpers.workflow import command

pytestmark = pytest.mark.slow


def snakemake(workdir: Path, *args: str) -> str:
    cmd = command(
        workdir, "results/report.html", "--configfile", str(REPO / "config" / "config.yaml"),
        str(workdir / "overlay.yaml"), "--cores", "1", "--allowed-rules", "report", *args,
    )
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=workdir)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout + done.stderr


@pytest.fixture
def workdir(tmp_path):
    config = load_config(REPO / "config" / "config.yaml", REPO / "config" / "config.schema.yaml")
    steps = [0] + sorted(config["eval"]["steps"])
    paths = fx.write_run(tmp_path / "fixture", steps=steps)
    results = tmp_path / "results"
    for name, target in (("metrics", "train/metrics.jsonl"), ("labels", "labels.jsonl"), ("val", "data/val.parquet")):
        (results / target).parent.mkdir(parents=True, exist_ok=True)
        (results / target).write_bytes(Path(paths[name]).read_bytes())
    # The default run has a test set: the fixture's validation files stand in for it too.
    (results / "data" / "test.parquet").write_bytes(Path(paths["val"]).read_bytes())
    for step, (outputs, scores) in paths["evals"].items():
        for d in (results / "eval" / f"step_{step}", results / "eval" / "test" / f"step_{step}"):
            d.mkdir(parents=True)
            (d / "outputs.jsonl").write_bytes(Path(outputs).read_bytes())
            (d / "scores.jsonl").write_bytes(Path(scores).read_bytes())
    (results / "models" / "step_0").mkdir(parents=True)
    (results / "models" / "step_0" / "config.json").write_bytes((Path(paths["policy"]) / "config.json").read_bytes())
    (tmp_path / "overlay.yaml").write_text("{}\n", encoding="utf-8")
    return tmp_path


def test_rule_builds_the_report_and_only_report_settings_rerun_it(workdir):
    snakemake(workdir)
    report = workdir / "results" / "report.html"
    first = report.read_bytes()
    assert re.search(rb'<p class="headline \w+">(Step \d+ improves|No clear change|Not an improvement|No checkpoint beat|Only the baseline)', first)
    assert "Nothing to be done" in snakemake(workdir, "-n")

    # A changed report setting: the report (and nothing else) is out of date, for its params.
    (workdir / "overlay.yaml").write_text(yaml.safe_dump({"report": {"title": "Another title"}}), encoding="utf-8")
    plan = snakemake(workdir, "-n")
    assert "Nothing to be done" not in plan
    assert "params" in plan.split("rule report:")[1].split("reason:")[1].splitlines()[0]
    # The template is an input, so editing it reruns the report too.
    assert "src/audiobook_rl/report/template.html" in plan.split("rule report:")[1].split("output:")[0]
    # So is the bundled story's speaker key (the default corpus): the report checks the references against it.
    assert "corpus/story.speakers.json" in plan.split("rule report:")[1].split("output:")[0]
    assert b'<section id="references">' in first

    # Rebuilt with the same settings, the bytes are the same (no timestamps).
    (workdir / "overlay.yaml").write_text("{}\n", encoding="utf-8")
    report.unlink()
    snakemake(workdir)
    assert report.read_bytes() == first
