"""The report's "Training settings that matter" read each setting by its full config path: the
training reward's model and temperature never pass for the policy's or the rollout's."""

from __future__ import annotations

import json

from helpers import report_run as fx
from audiobook_rl.config import load_config
from audiobook_rl.report import make_report
from helpers import REPO


def settings_table(html: str) -> str:
    start = html.index("Training settings that matter")
    return html[start : html.index("</table>", start)]


def row(label: str, value: str) -> str:
    return f"<tr><td>{label}</td><td><code>{value}</code></td></tr>"


def report_for(tmp_path, overlay: dict) -> str:
    (tmp_path / "overlay.yaml").write_text(json.dumps(overlay), encoding="utf-8")
    config = load_config(REPO / "config/config.yaml", REPO / "config/config.schema.yaml", [tmp_path / "overlay.yaml"])
    paths = fx.write_run(tmp_path / "run")
    return make_report(
        paths["metrics"], paths["labels"], paths["evals"], fx.DEFAULT_SETTINGS, val=paths["val"],
        policy_dir=paths["policy"], train=config["train"], policy=config["policy"], eval_cfg=config["eval"],
    )


def test_settings_come_from_their_own_keys_not_the_reward_judges(tmp_path):
    html = report_for(tmp_path, {
        "policy": {"pretrained": "Qwen/Qwen2.5-1.5B-Instruct"},
        "train": {"rollout": {"n": 4, "temperature": 0.9, "max_tokens": 64}, "val_temperature": 0.1,
                  "reward": {"backend": "glm", "model": "glm-4.7", "temperature": 0.0}},
    })  # fmt: skip
    table = settings_table(html)
    assert row("policy model", "Qwen/Qwen2.5-1.5B-Instruct") in table
    assert row("rollout temperature", "0.9") in table
    assert row("validation temperature", "0.1") in table
    assert row("training reward (judge)", "glm / glm-4.7") in table
    assert row("rollouts per task (group size)", "4") in table
    assert "glm-4.7" not in table.replace(row("training reward (judge)", "glm / glm-4.7"), "")


def test_the_built_policy_is_named_by_its_model_directory(tmp_path):
    table = settings_table(report_for(tmp_path, {"train": {"reward": {"backend": "openai", "model": "judge-x"}}}))
    assert row("policy model", f"Qwen2ForCausalLM (hidden 128, layers 2, vocab 3000) from {tmp_path / 'run/models/step_0'}") in table
    assert row("training reward (judge)", "openai / judge-x") in table
    assert row("rollout temperature", "1.0") in table
