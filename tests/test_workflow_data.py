"""The data half of the DAG through Snakemake: outputs, bad input, and what reruns after an edit."""

import json
import shutil
import subprocess
import sys

import pytest

from audiobook_rl.files import read_parquet_rows
from helpers import REPO, STORY
from helpers.workflow import command, planned_rules, snakemake, write_config

pytestmark = pytest.mark.slow

TARGET = "results/data/val.parquet"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A finished run of the data half on a copy of the bundled story."""
    workdir = tmp_path_factory.mktemp("data-half")
    shutil.copy(STORY, workdir / "novel.txt")
    (workdir / "base.yaml").write_text("corpus: novel.txt\n", encoding="utf-8")
    snakemake(workdir, TARGET, "--cores", "2", "--configfile", str(workdir / "base.yaml"))
    return workdir


def test_builds_slices_labels_and_parquet(built):
    slices = [json.loads(line) for line in (built / "results/slices.jsonl").read_text().splitlines()]
    labels = [json.loads(line) for line in (built / "results/labels.jsonl").read_text().splitlines()]
    assert len(slices) == len(labels) == 36
    assert len(read_parquet_rows(built / "results/data/train.parquet")) == 16
    assert len(read_parquet_rows(built / "results/data/val.parquet")) == 4
    assert len(read_parquet_rows(built / "results/data/test.parquet")) == 16
    assert (built / "logs/label_slices.log").read_text().count("labeled:") >= 1


def plan(workdir, **changes):
    overlay = write_config(workdir, corpus="novel.txt", **changes)
    return planned_rules(workdir, TARGET, configfile=overlay)


def test_nothing_to_do_after_a_finished_run(built):
    assert plan(built) == set()


@pytest.mark.parametrize(
    "changes,expected",
    [
        ({"slice": {"seed": 99}}, {"slice_corpus", "label_slices", "split_dataset"}),
        ({"label": {"backend": "rules"}, "slice": {"n_slices": 36}}, set()),  # same values: no rerun
        ({"split": {"seed": 8}}, {"split_dataset"}),
        ({"split": {"data_source": "novel"}}, {"split_dataset"}),
    ],
)
def test_a_config_edit_reruns_its_stage_and_what_follows(built, changes, expected):
    assert plan(built, **changes) == expected


def test_touching_inputs_without_changing_them_reruns_nothing(built):
    (built / "novel.txt").touch()
    (REPO / "config/prompts/create.md").touch()
    assert plan(built) == set()


def test_editing_the_create_prompt_reruns_the_split(built, tmp_path):
    prompt = tmp_path / "create.md"
    prompt.write_text((REPO / "config/prompts/create.md").read_text() + "\n注意标点。\n", encoding="utf-8")
    assert plan(built, agent={"create_prompt": str(prompt)}) == {"split_dataset"}


def run_bad(workdir, corpus_bytes=None, **config):
    if corpus_bytes is not None:
        (workdir / "novel.txt").write_bytes(corpus_bytes)
    overlay = write_config(workdir, corpus="novel.txt", **config)
    return snakemake(workdir, TARGET, "--cores", "1", "--configfile", str(overlay), check=False)


@pytest.mark.parametrize(
    "corpus,expected",
    [
        (b"", "novel.txt: the file is empty."),
        (bytes(range(256)) * 40, "novel.txt: looks like a binary file"),
        ("　　林青道：“走吧。”\n".encode() * 10, "novel.txt: can make only"),
    ],
)
def test_bad_corpus_stops_before_any_job_with_one_sentence(workdir, corpus, expected):
    proc = run_bad(workdir, corpus)
    assert proc.returncode != 0
    assert expected in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert not (workdir / "results").exists() and not (workdir / "logs").exists()


def test_missing_corpus_is_named_before_anything_runs(workdir):
    proc = run_bad(workdir)
    assert proc.returncode != 0
    assert "config key 'corpus': novel.txt: no such file." in proc.stdout + proc.stderr


@pytest.mark.parametrize(
    "config,expected",
    [
        ({"slice": {"n_slices": "many"}}, "config key 'slice.n_slices': 'many' is not of type 'integer'"),
        ({"slice": {"n_slices": -3}}, "config key 'slice.n_slices': -3 is less than the minimum of 1"),
        ({"slice": {"min_chars": 300}}, "'slice.min_chars' and 'slice.max_chars'"),
        ({"split": {"sed": 1}}, "unknown key 'split.sed' (did you mean 'split.seed'?)"),
        ({"train": {"steps": 50}}, "unknown key 'train.steps' (did you mean 'train.total_steps'?)"),
        ({"train": {"rollout": {"temp": 0.7}}}, "unknown key 'train.rollout.temp' (did you mean 'train.rollout.temperature'?)"),
        ({"resources": {"train": {"gpu": 1}}}, "unknown key 'resources.train' (did you mean 'resources.train_grpo'?)"),
        ({"label": {"backend": "gpt"}}, "config key 'label.backend'"),
        ({"agent": {"rewrite_prompt": "nope.md"}}, "config key 'agent.rewrite_prompt': prompt file nope.md not found."),
        ({"slice": {"n_slices": 10}}, "'split.n_train' + 'split.n_val' + 'split.n_test' (36) exceed 'slice.n_slices' (10); raise 'slice.n_slices' to 36"),
    ],
)
def test_invalid_config_names_the_key(workdir, config, expected):
    (workdir / "novel.txt").write_bytes(STORY.read_bytes())
    proc = run_bad(workdir, **config)
    assert proc.returncode != 0
    assert expected in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr


def test_text_without_dialogue_is_sliced_with_a_warning(workdir):
    narration = "　　山路弯弯，雪落无声。远处的松林里偶尔传来一两声鸦鸣，随即又归于寂静。行人裹紧了斗篷，一步一步往山上去。\n\n"
    proc = run_bad(workdir, narration.encode() * 40, slice={"n_slices": 5}, split={"n_train": 4, "n_val": 1, "n_test": 0})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "has no dialogue" in (workdir / "logs/slice_corpus.log").read_text()


def test_lint_and_format_are_clean():
    lint = subprocess.run(command(REPO, "--lint"), capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    fmt = subprocess.run([sys.executable, "-m", "snakefmt", "--check", "Snakefile", "rules/"], cwd=REPO, capture_output=True, text=True)
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr
