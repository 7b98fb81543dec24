"""The whole DAG with a tiny policy: story -> slices -> labels -> split -> policy -> GRPO ->
export -> generate -> judge scores, in the suite's time budget; adding an evaluated step never
retrains."""

import json

import pytest
import yaml

from helpers.workflow import planned_rules, snakemake, write_config
from helpers.policy import TINY_POLICY, TINY_TRAIN

pytestmark = pytest.mark.slow

TRAIN = {**TINY_TRAIN, "total_steps": 2, "save_freq": 1, "test_freq": 1}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("e2e")
    overlay = write_config(
        workdir,
        policy=TINY_POLICY,
        train=TRAIN,
        eval={"steps": [2]},
        generate={"backend": "hf", "temperature": 0.0, "max_tokens": 12, "batch_size": 8, "seed": 0},
    )
    targets = [f"results/eval/step_{s}/scores.jsonl" for s in (0, 2)]
    snakemake(workdir, *targets, "--cores", "2", "--configfile", str(overlay))
    return workdir, overlay


def test_dag_trains_exports_generates_and_judges(run):
    workdir, _ = run
    results = workdir / "results"
    metrics = [json.loads(line) for line in (results / "train/metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics] == [0, 1, 2]
    summary = json.loads((results / "train/summary.json").read_text())
    assert summary["saved_steps"] == [1, 2]
    for step in (0, 2):
        assert (results / f"models/step_{step}/config.json").is_file()
        outputs = [json.loads(line) for line in (results / f"eval/step_{step}/outputs.jsonl").read_text().splitlines()]
        scores = [json.loads(line) for line in (results / f"eval/step_{step}/scores.jsonl").read_text().splitlines()]
        assert len(outputs) == len(scores) == 4  # the validation slices
        assert all(o["step"] == step for o in outputs)
    assert (results / "train/checkpoints/step_2/trainer_state.pt").is_file()


def test_adding_an_evaluated_step_does_not_retrain(run, tmp_path):
    workdir, overlay = run
    config = yaml.safe_load(overlay.read_text())
    config["eval"]["steps"] = [1, 2]
    more = tmp_path / "more.yaml"
    more.write_text(yaml.safe_dump(config, allow_unicode=True))
    planned = planned_rules(workdir, "results/eval/step_1/scores.jsonl", configfile=more)
    assert planned == {"export_checkpoint", "generate", "judge"}
