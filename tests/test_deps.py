"""The code inputs of each rule: the modules its script imports plus those of its configured backends."""

from __future__ import annotations

import copy

from audiobook_rl.config import load_config
from audiobook_rl.deps import code_files, imported_names
from audiobook_rl.paths import CONFIG, SCRIPTS

CONFIG_DEFAULT = load_config(CONFIG)


def inputs(rule: str, **sections) -> set[str]:
    """The package files (relative to the package) of ``rule`` under the default config with ``sections``."""
    config = copy.deepcopy(CONFIG_DEFAULT)
    for key, value in sections.items():
        config[key].update(value)
    return {path.split("src/audiobook_rl/")[1] for path in code_files(config, rule)}


def test_training_runs_the_configured_backend_and_reward_only():
    local = inputs("train_grpo")
    # rollouts on the decoder or on vLLM beside the policy (train.rollout.engine)
    assert {"training/local_grpo.py", "judging/rubric.py", "agent/hf_chat.py", "agent/vllm_rollout.py"} <= local
    assert not local & {"training/verl/backend.py", "training/verl/config.py", "agent/lightning.py",
                        "agent/vllm_chat.py", "judging/llm_judge.py", "labeling/rules.py"}
    verl = inputs("train_grpo", train={"backend": "verl"})
    assert {"training/verl/backend.py", "training/verl/config.py", "agent/lightning.py"} <= verl
    assert "training/local_grpo.py" not in verl
    glm = inputs("train_grpo", train={"reward": {"backend": "glm"}})
    assert "judging/llm_judge.py" in glm and "judging/rubric.py" not in glm


def test_generation_and_export_follow_their_backends():
    assert "agent/vllm_chat.py" not in inputs("generate")
    assert "agent/vllm_chat.py" in inputs("generate", generate={"backend": "vllm"})
    assert "training/export_local.py" in inputs("export_checkpoint")
    verl = inputs("export_checkpoint", train={"backend": "verl"})
    assert "training/verl/export.py" in verl and "training/export_local.py" not in verl


def test_labeling_follows_its_backend_and_the_warm_start_uses_the_rule_labeler():
    assert "labeling/rules.py" in inputs("label_slices")
    claude = inputs("label_slices", label={"backend": "claude"})
    assert "labeling/claude.py" in claude and "labeling/rules.py" not in claude
    assert "labeling/rules.py" in inputs("build_policy")


def test_every_import_counts_except_those_for_types_only(tmp_path):
    script = tmp_path / "stage.py"
    script.write_text(
        "from typing import TYPE_CHECKING\n"
        "import audiobook_rl.steps\n"
        "if TYPE_CHECKING:\n"
        "    from audiobook_rl.report import render\n"
        "def main():\n"
        "    from audiobook_rl.judging import rubric\n",
        encoding="utf-8",
    )
    assert sorted(imported_names(script)) == ["audiobook_rl.judging", "audiobook_rl.judging.rubric", "audiobook_rl.steps"]
    assert "audiobook_rl.report.render" in imported_names(script, typing=True)


def test_only_the_report_runs_the_check_of_the_references_speakers():
    assert "judging/speaker_key.py" in inputs("report")
    others = [p.stem for p in SCRIPTS.glob("*.py") if p.stem != "report"]
    assert "label_slices" in others and "judge" in others
    for rule in others:
        assert "judging/speaker_key.py" not in inputs(rule), rule
