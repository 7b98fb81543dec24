"""A sweep over seeds with the shuffled-reward control as a second arm, on the embedded backends end
to end (tiny settings): one overlay per run, as the README's loop writes them, each run in its own
results/runs/<name>/ tree with its own report, then the index with one row per run, both arms and the
gain the reward explains. Two seeds per arm: the arms' statistics, and their intervals from four seeds
on, are checked by hand on fixed run folders in tests/test_sweep_arms.py."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from helpers.workflow import snakemake

pytestmark = pytest.mark.slow

TINY = {
    "slice": {"n_slices": 8},
    "split": {"n_train": 2, "n_val": 2, "n_test": 4},
    "policy": {
        "vocab_size": 300,
        "prompt_repeats": 1,
        "model": {"hidden_size": 16, "layers": 1, "heads": 2, "kv_heads": 1, "max_positions": 4096},
        "warm_start": {"steps": 0, "window_draws": 1, "windows_per_draw": 1},
    },
    "train": {"total_steps": 1, "train_batch_size": 1, "rollout": {"n": 2, "max_tokens": 4},
              "test_freq": 1, "save_freq": 1, "micro_batch_size": 4},
    "eval": {"steps": [1]},
    "generate": {"max_tokens": 4},
    "report": {"bootstrap_samples": 100},
}
SEEDS = (1, 2)


def test_a_sweep_of_seeds_and_the_shuffled_arm_gives_an_index_with_both_arms(tmp_path):
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(TINY))
    for arm in ("real", "shuffled"):
        for seed in SEEDS:
            overlay = tmp_path / f"{arm}-seed{seed}.yaml"
            overlay.write_text(yaml.safe_dump({"run_name": f"{arm}-seed{seed}",
                                               "train": {"seed": seed, "reward": {"shuffle": arm == "shuffled"}}}))
            snakemake(tmp_path, "--cores", "2", "--configfile", str(tmp_path / "tiny.yaml"), str(overlay))
    names = [f"{arm}-seed{seed}" for arm in ("real", "shuffled") for seed in SEEDS]
    for name in names:  # each run in its own tree, with its own report and logs
        run = tmp_path / "results" / "runs" / name
        assert (run / "report.html").is_file()
        assert {p.parent.name for p in run.glob("eval/step_*/scores.jsonl")} == {"step_0", "step_1"}
        assert (tmp_path / "logs" / "runs" / name / "train_grpo.log").is_file()
    assert not (tmp_path / "results" / "report.html").exists()  # nothing written outside the run trees
    for seed in SEEDS:
        summary = json.loads((tmp_path / f"results/runs/shuffled-seed{seed}/train/summary.json").read_text())
        assert summary["reward_shuffled"] is True
        metrics = (tmp_path / f"results/runs/shuffled-seed{seed}/train/metrics.jsonl").read_text()
        assert '"reward_shuffled": true' in metrics
        assert (tmp_path / f"results/runs/real-seed{seed}/eval/test/step_1/scores.jsonl").is_file()

    snakemake(tmp_path, "results/runs/index.html", "--cores", "1")
    page = (tmp_path / "results/runs/index.html").read_text()
    assert sorted(re.findall(r'<a href="([^"]+)/report.html">', page)) == sorted(names)
    assert "mean ± sd over 4 runs" in page
    # The runs' numbers are each run's own: step 0 of each run as judged there.
    for name in names:
        scores = [json.loads(line) for line in
                  (tmp_path / f"results/runs/{name}/eval/step_0/scores.jsonl").read_text().splitlines()]
        mean = sum(s["overall"] for s in scores if s["overall"] is not None) / len(scores)
        assert f"{mean:.3f}" in page
    for arm in ("real", "shuffled"):
        row = re.search(rf"<tr><td>{arm}</td>(.*?)</tr>", page, re.S).group(1)
        cells = re.findall(r"<td>(.*?)</td>", row, re.S)
        assert cells[0] == "2"
        # each seed's gain on test, then mean and IQM without an interval: two seeds are too few for one
        assert re.fullmatch(rf"{arm}-seed1: [-+]\d\.\d{{3}}, {arm}-seed2: [-+]\d\.\d{{3}}", re.sub(r"<[^>]+>", "", cells[1])), cells
        assert re.fullmatch(r"[-+]\d\.\d{3}", cells[2]) and re.fullmatch(r"[-+]\d\.\d{3}", cells[3]), cells
        assert "too few seeds for an interval" in cells[5], cells
    assert "<p class=control><b>Gain the reward explains</b>" in page
    assert "(test)" in page
