"""The training's per-step record (Agent Lightning 0.3.0 key names) → results/train/metrics.jsonl rows,
the format the report reads for both backends: each step on disk once logged, one line per step
across a resume, seconds that count the whole step."""

from __future__ import annotations

import json
import time

from audiobook_rl.training.verl.environment import STEP_RECORD, training_env
from audiobook_rl.training.verl.metrics import StepRecord, keep_steps, read_record

# Written by hand from the keys AgentLightningTrainer.fit / AgentModeDaemon / verl's dp_actor log.
STEP0 = {"val/n_rollouts": 4, "val/n_rollouts_w_trace": 4, "val/n_rollouts_w_reward": 4, "val/reward": 0.125,
         "val/audiobook/reward": 0.125, "val/mean_response_length": 301.5, "val/sum_response_length": 603.0,
         "val/turn_count": 2.0}
STEP1 = {
    "training/reward": 0.21, "training/n_rollouts": 32, "training/n_rollouts_w_trace": 32,
    "training/n_rollouts_w_reward": 32, "training/n_truncated_triplets": 0, "training/n_triplets": 64,
    "training/n_triplets_prompt_too_long": 0, "training/n_triplets_dropped_remainder": 0,
    "actor/entropy_loss": 0.93, "actor/pg_loss": -0.012, "actor/pg_clipfrac": 0.004, "actor/ppo_kl": 0.0001,
    "actor/pg_clipfrac_lower": 0.0, "actor/grad_norm": 0.41, "actor/lr": 1e-06,
    "critic/score/mean_after_processing": 0.2099609375, "critic/score/mean_before_processing": 0.2099609375,
    "response_length/mean_after_processing": 288.25, "response_length/mean_before_processing": 288.25,
    "response_length/clip_ratio_after_processing": 0.0, "timing_s/gen": 41.2, "timing_s/step": 63.7,
    "perf/throughput": 301.2, "training/global_step": 1, "training/epoch": 0}
STEP2_VAL = {**STEP1, "training/reward": 0.25, "val/reward": 0.2, "timing_s/step": 70.0, "training/global_step": 2}


def lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_steps_become_our_rows_with_seconds_that_count_the_whole_step(tmp_path):
    record = StepRecord(tmp_path / "steps.jsonl")
    record.log(0, STEP0)  # the validation before training
    record.log(1, STEP1)
    time.sleep(0.2)  # e.g. step 2's validation, which verl's timing_s/step leaves out
    record.log(2, STEP2_VAL)
    rows = read_record(tmp_path / "steps.jsonl")
    assert [r["step"] for r in rows] == [0, 1, 2]
    assert rows[0] == {"step": 0, "val_reward": 0.125, "val_n_rollouts": 4.0, "val_n_rollouts_w_reward": 4.0}
    one = rows[1]
    assert one["train_reward"] == 0.21 and "val_reward" not in one
    assert (one["loss"], one["clip_frac"], one["response_length"]) == (-0.012, 0.004, 288.25)
    assert one["grad_norm"] == 0.41 and one["n_triplets"] == 64.0
    assert rows[2]["val_reward"] == 0.2 and rows[2]["train_reward"] == 0.25
    assert rows[2]["seconds"] >= 0.2 and one["seconds"] < 0.2
    # everything verl logged is kept in the record
    assert lines(tmp_path / "steps.jsonl")[1]["data"] == STEP1


def test_each_step_is_on_disk_once_logged(tmp_path):
    path = tmp_path / "steps.jsonl"
    record = StepRecord(path)
    record.log(0, STEP0)
    assert [entry["step"] for entry in lines(path)] == [0]  # read while the record is still in use
    record.log(1, STEP1)
    assert [entry["step"] for entry in lines(path)] == [0, 1]


def test_a_resumed_run_keeps_one_line_per_step(tmp_path):
    path = tmp_path / "steps.jsonl"
    first = StepRecord(path)
    for step, data in ((0, STEP0), (1, STEP1), (2, {**STEP1, "training/reward": 0.9, "training/global_step": 2})):
        first.log(step, data)
    with open(path, "a") as f:
        f.write('{"step": 3, "da')  # a line cut short by a kill
    keep_steps(path, up_to=1)  # resumed from the checkpoint of step 1: steps 2 and 3 are redone
    assert [entry["step"] for entry in lines(path)] == [0, 1]
    resumed = StepRecord(path)
    resumed.log(1, {"val/reward": 0.15, "val/n_rollouts": 4})  # val_before_train at the resumed step
    resumed.log(2, STEP2_VAL)
    assert [entry["step"] for entry in lines(path)] == [0, 1, 2]
    rows = read_record(path)
    assert rows[1]["train_reward"] == 0.21 and rows[1]["val_reward"] == 0.15 and "seconds" in rows[1]
    assert rows[2]["train_reward"] == 0.25


def test_non_numbers_are_left_out_and_numpy_numbers_are_written(tmp_path):
    import numpy as np

    path = tmp_path / "steps.jsonl"
    StepRecord(path).log(1, {"training/reward": float("nan"), "actor/pg_loss": "x", "val/reward": None,
                             "training/n_triplets": np.int64(64)})
    assert read_record(path) == [{"step": 1, "n_triplets": 64.0}]


def test_a_missing_record_gives_no_rows(tmp_path):
    assert read_record(tmp_path / "steps.jsonl") == []
    keep_steps(tmp_path / "steps.jsonl", up_to=3)
    assert not (tmp_path / "steps.jsonl").exists()


def test_the_environment_points_the_trainer_at_the_record(tmp_path):
    env = training_env(tmp_path / "train" / "steps.jsonl")
    assert env[STEP_RECORD] == str((tmp_path / "train" / "steps.jsonl").resolve())
    assert env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    assert "LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY" not in env  # read by neither litellm 1.80 nor Agent Lightning


def test_the_trainer_records_what_agent_lightnings_loop_logs_through_verls_tracking(tmp_path):
    import agentlightning.verl.trainer as loop

    from audiobook_rl.training.verl.trainer import _recording

    path = tmp_path / "steps.jsonl"
    untouched = loop.Tracking
    with _recording(StepRecord(path)):
        # what AgentLightningTrainer.fit builds and logs to
        tracker = loop.Tracking(project_name="audiobook-rl", experiment_name="seed", default_backend=["console"])
        tracker.log(data=STEP0, step=0)
        tracker.log(data=STEP1, step=1)
    assert loop.Tracking is untouched
    rows = read_record(path)
    assert [(r["step"], r.get("val_reward"), r.get("train_reward")) for r in rows] == [(0, 0.125, None), (1, None, 0.21)]
