"""Many experiments in one checkout: `run_name` namespaces every output, and results/runs/index.html
compares the finished runs (one row per run, headline numbers from each run's scores)."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from audiobook_rl.files import read_parquet_rows
from audiobook_rl.sweep import read_run, render_index
from helpers import STORY
from helpers.workflow import snakemake

DATA = "data/val.parquet"


def _outputs(proc) -> set[str]:
    return {p.strip() for line in re.findall(r"^\s+output: (.+)$", proc.stdout, re.M) for p in line.split(",")}


def _logs(proc) -> set[str]:
    return {p.strip() for line in re.findall(r"^\s+log: (.+)$", proc.stdout, re.M) for p in line.split(",")}


@pytest.mark.slow
def test_without_a_run_name_outputs_keep_their_paths(tmp_path):
    proc = snakemake(tmp_path, f"results/{DATA}", "-n", "--cores", "1")
    assert _outputs(proc) == {
        "results/slices.jsonl",
        "results/labels.jsonl",
        "results/data/train.parquet",
        "results/data/val.parquet",
        "results/data/test.parquet",
    }
    assert _logs(proc) == {"logs/slice_corpus.log", "logs/label_slices.log", "logs/split_dataset.log"}


@pytest.mark.slow
def test_a_run_name_moves_every_output_and_log_under_runs(tmp_path):
    proc = snakemake(tmp_path, f"results/runs/seed1/{DATA}", "-n", "--cores", "1", "--config", "run_name=seed1")
    outputs, logs = _outputs(proc), _logs(proc)
    assert len(outputs) == 5 and all(p.startswith("results/runs/seed1/") for p in outputs), outputs
    assert len(logs) == 3 and all(p.startswith("logs/runs/seed1/") for p in logs), logs


@pytest.mark.slow
def test_a_numeric_run_name_is_a_name(tmp_path):
    proc = snakemake(tmp_path, f"results/runs/7/{DATA}", "-n", "--cores", "1", "--config", "run_name=7")
    assert "results/runs/7/slices.jsonl" in _outputs(proc)


@pytest.mark.slow
def test_a_run_name_with_a_slash_is_refused_with_one_sentence(tmp_path):
    proc = snakemake(tmp_path, "-n", "--cores", "1", "--config", "run_name=a/b", check=False)
    assert proc.returncode != 0
    assert "run_name" in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr


@pytest.mark.slow
def test_two_runs_build_separate_trees_in_one_checkout(tmp_path):
    shutil.copy(STORY, tmp_path / "novel.txt")
    for name, seed in (("a", 7), ("b", 8)):
        # One overlay per run, as the README's sweep loop writes them (YAML keeps the seed an int).
        (tmp_path / f"{name}.yaml").write_text(f"{{corpus: novel.txt, run_name: {name}, split: {{seed: {seed}}}}}")
        snakemake(tmp_path, f"results/runs/{name}/{DATA}", "--cores", "2", "--configfile", str(tmp_path / f"{name}.yaml"))
    assert not (tmp_path / "results/slices.jsonl").exists()  # nothing in the un-named tree
    val = {name: read_parquet_rows(tmp_path / f"results/runs/{name}/{DATA}") for name in "ab"}
    assert all(len(v) == 4 for v in val.values())
    ids = {name: {row["extra_info"]["slice_id"] for row in v} for name, v in val.items()}
    assert ids["a"] != ids["b"]  # different split seeds: each run kept its own split
    for name in "ab":
        assert (tmp_path / f"logs/runs/{name}/split_dataset.log").is_file()
    # Run a is untouched by run b: a dry run of a has nothing to do.
    proc = snakemake(tmp_path, f"results/runs/a/{DATA}", "-n", "--cores", "1", "--configfile", str(tmp_path / "a.yaml"))
    assert "Nothing to be done" in proc.stdout


# --- the index ---------------------------------------------------------------------------------


def _score(slice_id, step, overall, backend="rubric", model="rubric-v1"):
    dims = dict.fromkeys(("format", "completeness", "speaker", "emotion", "segmentation"), overall or 0.0)
    return {"id": slice_id, "step": step, "overall": overall, "scores": dims,
            "reasons": dict.fromkeys(dims, ""), "backend": backend, "model": model,
            "error": None if overall is not None else "judge failed"}


def write_run(root, name, per_step: dict[int, list[float | None]], train_rewards=(0.1, 0.3), model="rubric-v1"):
    """A finished run's files as the workflow writes them (report, scores per step, metrics)."""
    run = root / "results" / "runs" / name
    for step, overalls in per_step.items():
        d = run / "eval" / f"step_{step}"
        d.mkdir(parents=True)
        rows = [_score(f"s{i}", step, o, model=model) for i, o in enumerate(overalls)]
        (d / "scores.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run / "train").mkdir(parents=True)
    metrics = [{"step": i + 1, "train_reward": r} for i, r in enumerate(train_rewards)]
    (run / "train" / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))
    (run / "report.html").write_text("<html>report</html>")
    return run


def test_read_run_takes_the_headline_numbers_from_the_scores(tmp_path):
    run = write_run(tmp_path, "seed1", {0: [0.1, 0.2], 10: [0.5, 0.7], 20: [0.4, None]}, train_rewards=(0.2, 0.45))
    row = read_run(run)
    assert row.name == "seed1" and row.steps == [0, 10, 20] and row.n_val == 2
    assert row.baseline == pytest.approx(0.15)
    assert (row.best_step, row.best) == (10, pytest.approx(0.6))
    assert row.last == pytest.approx(0.4)  # the failure is excluded, not counted as 0
    assert row.failures == 1
    assert row.change_pct == pytest.approx(300.0)
    assert row.last_train_reward == 0.45
    assert row.judge == "rubric (rubric-v1)"


def test_index_page_has_one_row_per_run_and_a_mean_row(tmp_path):
    rows = [read_run(write_run(tmp_path, n, {0: [0.2], 10: [b]})) for n, b in (("s1", 0.4), ("s2", 0.6))]
    page = render_index(rows)
    assert page.count('<a href="s1/report.html">') == 1 and page.count('<a href="s2/report.html">') == 1
    assert "0.500 ± 0.141" in page  # best over the two runs: mean ± sample sd
    assert "<script" not in page


def test_index_escapes_what_the_runs_recorded(tmp_path):
    row = read_run(write_run(tmp_path, "x", {0: [0.3]}, model="<img src=x onerror=alert(1)>"))
    page = render_index([row])
    assert "<img" not in page and "&lt;img" in page


@pytest.mark.slow
def test_index_rule_compares_every_finished_run(tmp_path):
    write_run(tmp_path, "seed1", {0: [0.1, 0.2], 10: [0.5, 0.6]})
    write_run(tmp_path, "seed2", {0: [0.2, 0.2], 10: [0.3, 0.4]})
    (tmp_path / "results/runs/unfinished/eval/step_0").mkdir(parents=True)  # no report yet: not a row
    snakemake(tmp_path, "results/runs/index.html", "--cores", "1")
    page = (tmp_path / "results/runs/index.html").read_text()
    assert re.findall(r'<a href="([^"]+)/report.html">', page) == ["seed1", "seed2"]
    # A run finishing later (or rerun) makes the index stale.
    write_run(tmp_path, "seed3", {0: [0.2], 10: [0.9]})
    proc = snakemake(tmp_path, "results/runs/index.html", "-n", "--cores", "1")
    assert "rule index_runs:" in proc.stdout
