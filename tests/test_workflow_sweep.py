"""A sweep over seeds on the embedded backends, end to end: one overlay per run (as the README's loop
writes them), each run in its own results/runs/<name>/ tree with its own report, then an index
page with one row per run. Tiny settings: about a minute per run on a 2-core machine."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from helpers.workflow import snakemake

TINY = {
    "slice": {"n_slices": 4},
    "split": {"n_train": 2, "n_val": 2, "n_test": 0},
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


@pytest.mark.slow
def test_a_seed_sweep_gives_one_tree_and_report_per_run_and_one_index(tmp_path):
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(TINY))
    runs = {"seed1": 1, "seed2": 2}
    for name, seed in runs.items():
        overlay = tmp_path / f"{name}.yaml"
        overlay.write_text(yaml.safe_dump({"run_name": name, "train": {"seed": seed}}))
        snakemake(tmp_path, "--cores", "2", "--configfile", str(tmp_path / "tiny.yaml"), str(overlay))

    for name in runs:
        run = tmp_path / "results" / "runs" / name
        assert (run / "report.html").is_file()
        assert (run / "train" / "metrics.jsonl").is_file()
        assert {p.parent.name for p in run.glob("eval/step_*/scores.jsonl")} == {"step_0", "step_1"}
        assert (tmp_path / "logs" / "runs" / name / "train_grpo.log").is_file()
    assert not (tmp_path / "results" / "report.html").exists()  # nothing written outside the run trees

    snakemake(tmp_path, "results/runs/index.html", "--cores", "1")
    page = (tmp_path / "results" / "runs" / "index.html").read_text()
    assert re.findall(r'<a href="([^"]+)/report.html">', page) == ["seed1", "seed2"]
    assert "mean ± sd over 2 runs" in page
    # The headline numbers are each run's own: step 0 of each run as judged there.
    for name in runs:
        scores = [json.loads(line) for line in
                  (tmp_path / f"results/runs/{name}/eval/step_0/scores.jsonl").read_text().splitlines()]
        mean = sum(s["overall"] for s in scores if s["overall"] is not None) / len(scores)
        assert f"{mean:.3f}" in page


@pytest.mark.slow
def test_runs_share_one_label_cache(tmp_path):
    """Two runs label the same slices with Claude (a loopback Messages API): the second pays nothing."""
    from loopback import Loopback, Reply, anthropic_message
    from loopback.scripts import valid_label_reply

    def valid(kind, body, n):
        return Reply(body=anthropic_message(valid_label_reply(body)))

    with Loopback(valid) as server:
        claude = {
            "slice": {"n_slices": 4},
            "split": {"n_train": 2, "n_val": 2, "n_test": 0},
            "label": {"backend": "claude", "model": "claude-opus-test"},
            "llm": {"base_url": {"anthropic": server.url}, "rate_limit_per_minute": {"anthropic": 0}},
        }
        sent = []
        for name in ("a", "b"):
            overlay = tmp_path / f"{name}.yaml"
            overlay.write_text(yaml.safe_dump({**claude, "run_name": name}))
            snakemake(tmp_path, f"results/runs/{name}/labels.jsonl", "--cores", "2", "--configfile", str(overlay),
                      env={"ANTHROPIC_API_KEY": "sk-ant-loopback-0123456789"})
            sent.append(server.count)
    assert sent == [4, 4]  # run b found every reply in the shared cache
    labels = {n: (tmp_path / f"results/runs/{n}/labels.jsonl").read_text() for n in "ab"}
    assert labels["a"] == labels["b"]
    assert (tmp_path / "results/cache/llm/anthropic").is_dir()  # outside both run trees
    usage = json.loads((tmp_path / "results/runs/b/labels.usage.json").read_text())
    assert (usage["requests_sent"], usage["cache_hits"]) == (0, 4)
