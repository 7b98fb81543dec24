"""verl's step log (Agent Lightning 0.3.0 key names) → results/train/metrics.jsonl rows, the format
the report reads for both backends."""

from __future__ import annotations

import json

from audiobook_rl.training.verl.backend import attempt_log
from audiobook_rl.training.verl.environment import training_env
from audiobook_rl.training.verl.metrics import convert_logs

# Written by hand from the keys AgentLightningTrainer.fit / AgentModeDaemon / verl's dp_actor log.
STEP0 = {"step": 0, "data": {"val/n_rollouts": 4, "val/n_rollouts_w_trace": 4, "val/n_rollouts_w_reward": 4,
                             "val/reward": 0.125, "val/audiobook/reward": 0.125, "val/mean_response_length": 301.5,
                             "val/sum_response_length": 603.0, "val/turn_count": 2.0}}
STEP1 = {"step": 1, "data": {
    "training/reward": 0.21, "training/n_rollouts": 32, "training/n_rollouts_w_trace": 32,
    "training/n_rollouts_w_reward": 32, "training/n_truncated_triplets": 0, "training/n_triplets": 64,
    "training/n_triplets_prompt_too_long": 0, "training/n_triplets_dropped_remainder": 0,
    "actor/entropy_loss": 0.93, "actor/pg_loss": -0.012, "actor/pg_clipfrac": 0.004, "actor/ppo_kl": 0.0001,
    "actor/pg_clipfrac_lower": 0.0, "actor/grad_norm": 0.41, "actor/lr": 1e-06,
    "critic/score/mean_after_processing": 0.2099609375, "critic/score/mean_before_processing": 0.2099609375,
    "response_length/mean_after_processing": 288.25, "response_length/mean_before_processing": 288.25,
    "response_length/clip_ratio_after_processing": 0.0, "timing_s/gen": 41.2, "timing_s/step": 63.7,
    "perf/throughput": 301.2, "training/global_step": 1, "training/epoch": 0}}
STEP2_VAL = {"step": 2, "data": {**STEP1["data"], "training/reward": 0.25, "val/reward": 0.2, "timing_s/step": 70.0,
                                 "training/global_step": 2}}


def write(path, *entries, tail=""):
    path.write_text("".join(json.dumps(e) + "\n" for e in entries) + tail)
    return path


def test_steps_become_our_rows(tmp_path):
    rows = convert_logs([write(tmp_path / "attempt_001.jsonl", STEP0, STEP1, STEP2_VAL)])
    assert [r["step"] for r in rows] == [0, 1, 2]
    assert rows[0] == {"step": 0, "val_reward": 0.125, "val_n_rollouts": 4.0, "val_n_rollouts_w_reward": 4.0}
    one = rows[1]
    assert one["train_reward"] == 0.21 and "val_reward" not in one
    assert (one["loss"], one["clip_frac"], one["response_length"], one["seconds"]) == (-0.012, 0.004, 288.25, 63.7)
    assert one["grad_norm"] == 0.41 and one["n_triplets"] == 64.0
    assert rows[2]["val_reward"] == 0.2 and rows[2]["train_reward"] == 0.25


def test_a_resumed_attempt_replaces_the_steps_it_redoes(tmp_path):
    crashed = {"step": 2, "data": {**STEP1["data"], "training/reward": 0.9}}
    first = write(tmp_path / "attempt_001.jsonl", STEP0, STEP1, crashed, tail='{"step": 3, "da')  # cut mid-line
    resumed_val = {"step": 1, "data": {"val/reward": 0.15, "val/n_rollouts": 4}}  # val_before_train after resume
    second = write(tmp_path / "attempt_002.jsonl", resumed_val, STEP2_VAL)
    rows = convert_logs([first, second])
    assert [r["step"] for r in rows] == [0, 1, 2]
    assert rows[1]["train_reward"] == 0.21 and rows[1]["val_reward"] == 0.15
    assert rows[2]["train_reward"] == 0.25


def test_non_numbers_are_left_out(tmp_path):
    bad = {"step": 1, "data": {"training/reward": float("nan"), "actor/pg_loss": "x", "val/reward": None}}
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps(bad).replace("NaN", "NaN") + "\n")
    assert convert_logs([path]) == [{"step": 1}]


def test_each_attempt_gets_its_own_log_and_the_environment_points_at_it(tmp_path):
    first = attempt_log(tmp_path / "logs")
    first.write_text("")
    second = attempt_log(tmp_path / "logs")
    assert (first.name, second.name) == ("attempt_001.jsonl", "attempt_002.jsonl")
    env = training_env(second)
    assert env["VERL_FILE_LOGGER_PATH"] == str(second.resolve())
    assert env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    assert "LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY" not in env  # read by neither litellm 1.80 nor Agent Lightning


def test_reads_what_verls_own_file_logger_writes(tmp_path, monkeypatch):
    from verl.utils.tracking import Tracking

    path = tmp_path / "attempt_001.jsonl"
    monkeypatch.setenv("VERL_FILE_LOGGER_PATH", str(path))
    tracker = Tracking(project_name="audiobook-rl", experiment_name="seed", default_backend=["file"])
    tracker.log(data=STEP0["data"], step=0)
    tracker.log(data=STEP1["data"], step=1)
    del tracker  # verl flushes and closes its loggers on deletion
    rows = convert_logs([path])
    assert [(r["step"], r.get("val_reward"), r.get("train_reward")) for r in rows] == [(0, 0.125, None), (1, None, 0.21)]
