"""export_checkpoint for the verl backend: a 2-rank FSDP checkpoint in verl's layout, made here on
CPU, merged by verl 0.6.1's own merger into a Hugging Face dir that loads with the same weights."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from audiobook_rl.errors import UserError
from audiobook_rl.training.verl.export import export_verl, export_verl_checkpoint
from audiobook_rl.training.verl.backend import saved_steps, summarize

HELPER = Path(__file__).parent / "helpers" / "fsdp_checkpoint.py"


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("verl_run")
    subprocess.run([sys.executable, str(HELPER), str(out), "cpu"], check=True, capture_output=True)
    return out


def test_export_merges_the_best_step_into_a_loadable_hf_model(checkpoint, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    rows = [{"step": 0, "val_reward": 0.1}, {"step": 1, "train_reward": 0.2, "val_reward": 0.3}]
    summary = summarize(rows, checkpoint, total_steps=1)
    assert saved_steps(checkpoint) == summary["saved_steps"] == [1]
    assert (summary["best_step"], summary["best_val_reward"], summary["val_reward_step_0"]) == (1, 0.3, 0.1)
    assert export_verl("best", summary, tmp_path / "models" / "step_best", log_file=str(tmp_path / "merge.log")) == 1
    target = tmp_path / "models" / "step_best"
    assert (target / "config.json").is_file() and list(target.glob("*.safetensors"))
    model = AutoModelForCausalLM.from_pretrained(target)
    reference = torch.load(checkpoint / "reference.pt")
    state = model.state_dict()
    assert set(reference) <= set(state)
    for name, tensor in reference.items():  # the merger writes bf16
        torch.testing.assert_close(state[name].float(), tensor.to(torch.bfloat16).float(), rtol=0, atol=0)
    assert AutoTokenizer.from_pretrained(target)("hi")["input_ids"]
    # Nothing half-written is left beside the target.
    assert [p.name for p in target.parent.iterdir()] == ["step_best"]


def test_a_step_that_was_not_saved_names_the_config_keys(checkpoint, tmp_path):
    with pytest.raises(UserError, match="train.save_freq"):
        export_verl_checkpoint(checkpoint, 7, tmp_path / "step_7")
    with pytest.raises(UserError, match="eval.steps"):
        export_verl("2", summarize([], checkpoint, total_steps=2), tmp_path / "step_2")
    assert list(tmp_path.iterdir()) == []


def test_a_failed_merge_leaves_no_target(checkpoint, tmp_path):
    broken = tmp_path / "run"
    actor = broken / "global_step_1" / "actor"
    actor.mkdir(parents=True)
    (actor / "fsdp_config.json").write_text('{"FSDP_version": 2, "world_size": 2}')  # no shards
    (actor / "huggingface").symlink_to(checkpoint / "global_step_1" / "actor" / "huggingface")
    with pytest.raises(UserError, match="merger failed"):
        export_verl_checkpoint(broken, 1, tmp_path / "step_1")
    assert not (tmp_path / "step_1").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["run"]

