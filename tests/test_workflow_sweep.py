"""Runs of a sweep share what can be shared: one label cache for every run_name. (The sweep itself,
run trees, reports and the index of both arms: tests/test_workflow_sweep_arms.py.)"""

from __future__ import annotations

import json

import pytest
import yaml

from helpers.workflow import snakemake


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
