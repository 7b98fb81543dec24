"""The default run's held-out test set: results/data/test.parquet, disjoint from train and val by
source offsets, every evaluated checkpoint generated and judged on it, and the report's headline
measured there; with split.n_test 0 nothing under eval/test/ is made."""

import json
import re

import pytest

from audiobook_rl.files import read_parquet_rows
from helpers.policy import TINY_POLICY, TINY_TRAIN
from helpers.workflow import snakemake, write_config

pytestmark = pytest.mark.slow

TRAIN = {**TINY_TRAIN, "total_steps": 2, "save_freq": 1, "test_freq": 1}
GENERATE = {"backend": "hf", "temperature": 0.0, "max_tokens": 12, "batch_size": 16, "seed": 0}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("heldout")
    # the default split (16 train, 4 val, 16 test): only the policy, training and decoding are tiny
    overlay = write_config(workdir, policy=TINY_POLICY, train=TRAIN, eval={"steps": [2]}, generate=GENERATE)
    snakemake(workdir, "--cores", "2", "--configfile", str(overlay))
    return workdir


def test_the_test_set_is_disjoint_from_train_and_val_by_offsets(run):
    parts = {
        name: [row["extra_info"] for row in read_parquet_rows(run / f"results/data/{name}.parquet")]
        for name in ("train", "val", "test")
    }
    assert [len(parts[n]) for n in ("train", "val", "test")] == [16, 4, 16]
    spans = {name: [set(range(i["start"], i["end"])) for i in infos] for name, infos in parts.items()}
    for a, b in (("train", "val"), ("train", "test"), ("val", "test")):
        assert not any(x & y for x in spans[a] for y in spans[b]), (a, b)


def test_every_evaluated_checkpoint_is_judged_on_test_and_the_headline_is_measured_there(run):
    test_ids = {row["extra_info"]["slice_id"] for row in read_parquet_rows(run / "results/data/test.parquet")}
    for step in (0, 2):
        scores = [json.loads(line) for line in (run / f"results/eval/test/step_{step}/scores.jsonl").read_text().splitlines()]
        assert {s["id"] for s in scores} == test_ids
    html = (run / "results/report.html").read_text(encoding="utf-8")
    headline = re.search(r'<p class="headline \w+">(.*?)</p>', html).group(1)
    # the tiny policy scores alike everywhere, so the headline is "no checkpoint beat ...", on test
    assert re.search(r"(test score [\d.]+|on the test set) \(n = 16\)", headline), headline
    assert "measured on the 16 held-out test slices" in headline and "optimistic" not in headline


def test_without_a_test_set_nothing_is_made_under_eval_test(run, tmp_path):
    overlay = write_config(tmp_path, policy=TINY_POLICY, train=TRAIN, eval={"steps": [2]}, generate=GENERATE,
                           split={"n_test": 0})
    proc = snakemake(run, "results/report.html", "-n", "--cores", "1", "--configfile", str(overlay))
    assert "rule split_dataset:" in proc.stdout  # the split changed: everything downstream is planned again
    assert "rule generate:" in proc.stdout and "eval/test/" not in proc.stdout
