"""The verl backend's orchestration around ``trainer.fit``, driven through Agent Lightning's real
training loop with verl's real checkpoints and dataloader (tests/helpers/agl_loop.py; only the
rollouts, the update and the FSDP shards are stubbed): the config it hands over, the environment the
training process gets, the per-step record, resume and its fingerprint, and the outputs."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from audiobook_rl import preflight
from audiobook_rl.errors import UserError
from audiobook_rl.files import read_jsonl
from audiobook_rl.training import TrainingJob
from audiobook_rl.training.verl import backend as verl_backend
from audiobook_rl.training.verl import environment
from audiobook_rl.training.verl.daemon import RewardedGroupsDaemon
from audiobook_rl.training.verl.trainer import SeedTrainer
from helpers import make_judge, seed_config
from helpers.agl_loop import VALIDATE_S, FakeAgentLightning, Killed, clean_env, recorded_steps, rows

# 16 rows in batches of 8: 2 steps per epoch, so every save (every 2 steps) falls on an epoch's end.
TRAIN = {**seed_config()["train"], "total_steps": 6, "save_freq": 2, "test_freq": 2}
TRAIN_ROWS, VAL_ROWS = rows(16), rows(4, "v")


@pytest.fixture
def backend(monkeypatch, tmp_path_factory):
    """run_verl with Agent Lightning replaced by its loop on CPU; returns a function making the fake."""
    clean_env(monkeypatch, [*environment.training_env("x"), environment.RAY_JOB_CONFIG])
    # verl leaves a lock file in the temporary folder for each checkpoint folder it makes
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path_factory.mktemp("tmpdir")))
    monkeypatch.setattr(verl_backend, "check_training", lambda *a, **k: [])
    monkeypatch.setattr(verl_backend.gpus, "claim", lambda *a, **k: [])
    started = []
    monkeypatch.setattr(verl_backend, "start_local_ray", lambda: started.append(True))

    def use(kill_at=None, step_metrics=None):
        fake = FakeAgentLightning(kill_at, step_metrics)
        fake.ray_started = started
        monkeypatch.setattr(verl_backend, "_agentlightning", lambda: fake)
        return fake

    return use


def run(out, train=TRAIN, fp="run-a", **kw):
    return verl_backend.run_verl(train, "agent", TRAIN_ROWS, VAL_ROWS, model_path=out.parent / "step_0",
                                 out_dir=out, fingerprint=fp, **kw)


def test_run_verl_hands_over_the_checked_config_and_writes_our_outputs(tmp_path, backend, monkeypatch):
    fake = backend()
    out = tmp_path / "results" / "train"
    metrics, summary = run(out)

    loop = fake.fits[-1]
    assert loop.config.trainer.default_local_dir == str((out / "checkpoints").resolve())
    assert loop.config.actor_rollout_ref.model.path == str((tmp_path / "results" / "step_0").resolve())
    # rollouts without a reward drop their group instead of scoring 0
    assert fake.daemon_classes == [RewardedGroupsDaemon]
    # the trainer writes the per-step record whose path the environment gives
    assert fake.trainer_classes == [SeedTrainer]
    assert os.environ[environment.STEP_RECORD] == str((out / "steps.jsonl").resolve())
    # Agent Lightning's store listens on a port of this training's own
    assert fake.ports[0] != 4747
    assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    # litellm 1.80 and Agent Lightning 0.3.0 read no master-key variable: none is set
    assert "LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY" not in os.environ
    # the same variables reach Ray's workers, also those of a cluster started elsewhere (tests/test_training_verl_ray.py)
    ray_env = json.loads(os.environ[environment.RAY_JOB_CONFIG])["runtime_env"]["env_vars"]
    assert ray_env[environment.STEP_RECORD] == os.environ[environment.STEP_RECORD]
    # one node and no RAY_ADDRESS: a Ray of this job's own is started before Agent Lightning's ray.init
    assert fake.ray_started == [True]
    assert [m["step"] for m in metrics] == [0, 1, 2, 3, 4, 5, 6]
    assert [m["step"] for m in metrics if "val_reward" in m] == [0, 2, 4, 6]
    assert summary["saved_steps"] == [2, 4, 6]
    assert (summary["best_step"], summary["best_of"]) == (6, "saved steps")

    # the stage entry writes both declared outputs (a finished run: nothing is trained again)
    agents = []
    monkeypatch.setitem(sys.modules, "audiobook_rl.agent.lightning", SimpleNamespace(
        ContextLimit=lambda tokenizer, n: ("limit", n), make_agent=lambda *a, **k: agents.append(k) or "agent"))
    verl_backend.train_stage(job(tmp_path, out))
    # the agent skips calls longer than verl's vLLM context: max_prompt_tokens + rollout.max_tokens
    assert agents[0]["limit"] == ("limit", TRAIN["verl"]["max_prompt_tokens"] + TRAIN["rollout"]["max_tokens"])
    assert read_jsonl(out / "metrics.jsonl")[-1]["step"] == 6
    assert json.loads((out / "summary.json").read_text())["backend"] == "verl"
    assert len(fake.fits) == 1


def job(tmp_path: Path, out: Path) -> TrainingJob:
    return TrainingJob(settings=TRAIN, judge=make_judge(), prompts=None, train_rows=TRAIN_ROWS, val_rows=VAL_ROWS,
                       policy_dir=str(_tokenizer_dir(tmp_path)), metrics_path=str(out / "metrics.jsonl"),
                       summary_path=str(out / "summary.json"), fingerprint="run-a", gpus=2, threads=1)


def test_the_training_stage_stops_on_a_machine_without_the_stack_before_importing_anything(tmp_path, monkeypatch):
    """No GPU, no vLLM (whatever this machine has): train_stage raises the preflight's sentences,
    nothing else runs."""
    monkeypatch.setattr(preflight, "installed", lambda name: None)
    monkeypatch.setattr(preflight, "gpu_count", lambda: 0)
    monkeypatch.delitem(sys.modules, "audiobook_rl.agent.lightning", raising=False)
    out = tmp_path / "train"
    with pytest.raises(UserError) as err:
        verl_backend.train_stage(job(tmp_path, out))
    text = str(err.value)
    assert "vllm is not installed" in text and "'train.gpus_per_node' needs 2 GPU(s)" in text
    assert "audiobook_rl.agent.lightning" not in sys.modules and not out.exists()


def _tokenizer_dir(tmp_path: Path) -> Path:
    """A policy tokenizer the stage can load offline."""
    from audiobook_rl.policy.tokenizer import train_tokenizer

    path = tmp_path / "tokenizer"
    train_tokenizer(["林青推门进来，笑道：“今晚的酒，我请了。”"] * 4, vocab_size=300).save_pretrained(path)
    return path


@pytest.mark.slow  # two verl training runs end to end
def test_a_finished_run_is_not_trained_again(tmp_path, backend):
    out = tmp_path / "train"
    first = backend()
    metrics, summary = run(out)
    assert [s for s, _ in first.fits[0].trained] == [1, 2, 3, 4, 5, 6]

    # verl would resume from step 6, and Agent Lightning would train a step 7 and save global_step_7
    again = backend()
    metrics2, summary2 = run(out)
    assert again.fits == []
    assert (metrics2, summary2) == (metrics, summary)
    assert not (out / "checkpoints" / "global_step_7").exists()


def test_other_settings_or_inputs_start_over_instead_of_resuming(tmp_path, backend, caplog):
    out = tmp_path / "train"
    backend()
    run(out)
    retrain = backend()
    metrics, summary = run(out, train={**TRAIN, "lr": 3e-6}, fp="run-b")

    # the new run trained every step from the start; nothing of the old one is merged in
    assert [s for s, _ in retrain.fits[0].trained] == [1, 2, 3, 4, 5, 6]
    assert recorded_steps(out / "steps.jsonl") == [0, 1, 2, 3, 4, 5, 6]
    assert json.loads((out / "checkpoints" / "run.json").read_text()) == {"fingerprint": "run-b"}
    assert "holds checkpoints of other settings or inputs: starting over" in caplog.text


@pytest.mark.slow  # three verl training runs end to end (about two minutes)
def test_resume_after_a_kill_at_an_epoch_end_trains_the_remaining_steps(tmp_path, backend):
    """verl 0.6.1's own loop resumes from a checkpoint at an epoch's end into no steps at all; Agent
    Lightning's loop (the one that runs) reaches the last step, each epoch on every row once."""
    whole = backend()
    run(tmp_path / "whole")
    uninterrupted = whole.fits[0].trained

    out = tmp_path / "killed"
    killed = backend(kill_at=5)  # after the checkpoint of step 4, at the end of epoch 2
    with pytest.raises(Killed):
        run(out)
    assert killed.fits[0].trained == uninterrupted[:4]
    resumed = backend()
    metrics, summary = run(out)
    assert [s for s, _ in resumed.fits[0].trained] == [5, 6]
    assert sorted(r for _, ids in resumed.fits[0].trained for r in ids) == sorted(x["row_id"] for x in TRAIN_ROWS)
    assert [m["step"] for m in metrics] == [0, 1, 2, 3, 4, 5, 6] and summary["saved_steps"] == [2, 4, 6]
    # What differs (the restored sampler replays the shuffle of the epoch that ended): the batches
    # after the resume are those of epoch 2 again, not the uninterrupted run's epoch 3.
    assert resumed.fits[0].trained[0][1] == uninterrupted[2][1]


SIDE_BY_SIDE = """
import asyncio, json, sys, time
import agentlightning as agl
from audiobook_rl.training.verl.backend import make_trainer

REWARD = float(sys.argv[1])


class Collect(agl.Algorithm):
    '''Stands in for agl.VERL: enqueues the tasks, waits for their rollouts, writes their rewards.'''

    async def run(self, train_dataset=None, val_dataset=None):
        store = self.get_store()
        llm = agl.LLM(endpoint="http://127.0.0.1:9/v1", model="policy")  # never called
        resources = await store.update_resources("main", {"main_llm": llm})
        rollouts = [await store.enqueue_rollout(input=row, mode="train", resources_id=resources.resources_id)
                    for row in train_dataset]
        rewards = {}
        while len(rewards) < len(rollouts):
            for rollout in rollouts:
                done = await store.get_rollout_by_id(rollout.rollout_id)
                if done.status in ("succeeded", "failed", "cancelled") and rollout.rollout_id not in rewards:
                    rewards[rollout.rollout_id] = agl.find_final_reward(await store.query_spans(rollout.rollout_id))
            await asyncio.sleep(0.2)
        with open(sys.argv[2], "w") as out:
            json.dump(list(rewards.values()), out)


@agl.rollout
def agent(task, llm):
    time.sleep(0.5)  # long enough for the two trainings to overlap
    return REWARD


make_trainer(agl, Collect(), n_runners=2).fit(agent, [{"i": i} for i in range(8)])
"""


@pytest.mark.slow  # two Agent Lightning trainings in processes of their own
def test_two_trainings_on_one_machine_each_keep_their_rollouts(tmp_path):
    """Each training's store listens on a port of its own, and its runners ask that store: the
    rollouts of one training are never taken by the runners of the other."""
    import subprocess
    import time

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]),
           "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    runs = {}
    for reward in (0.25, 0.75):
        out = tmp_path / f"rewards-{reward}.json"
        runs[reward] = (out, subprocess.Popen([sys.executable, "-c", SIDE_BY_SIDE, str(reward), str(out)], cwd=tmp_path,
                                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        time.sleep(2)  # the second starts while the first is running
    for reward, (out, proc) in runs.items():
        try:
            log, _ = proc.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            proc.kill()
            log, _ = proc.communicate()
        assert proc.returncode == 0, log[-3000:]
        assert json.loads(out.read_text()) == [reward] * 8, "a training took rollouts of the other"


def test_seconds_per_step_include_the_validation(tmp_path, backend):
    """verl's timing_s/step leaves out the validation (and the checkpoint) of the step; the seconds of
    metrics.jsonl are the wall time from one step's end to the next."""
    backend()
    metrics, summary = run(tmp_path / "train")
    seconds = {m["step"]: m.get("seconds") for m in metrics}
    assert seconds[0] is None  # the step-0 validation trains nothing
    assert all(seconds[s] >= VALIDATE_S for s in (2, 4, 6))  # the validated steps
    assert summary["mean_seconds_per_step"] >= 3 * VALIDATE_S / 6


def test_the_step_record_is_on_disk_by_each_step_and_keeps_one_line_per_step_across_a_resume(tmp_path, backend):
    out = tmp_path / "train"
    backend(kill_at=5)  # killed in step 5, after the checkpoint of step 4
    with pytest.raises(Killed):
        run(out)
        # (the traceback keeps the training's objects alive, as a killed process keeps nothing)
    assert recorded_steps(out / "steps.jsonl") == [0, 1, 2, 3, 4]
    backend()
    metrics, _ = run(out)
    # the resumed run validates step 4 again (val_before_train): its line is updated, not repeated
    assert recorded_steps(out / "steps.jsonl") == [0, 1, 2, 3, 4, 5, 6]
    assert [m["step"] for m in metrics] == [0, 1, 2, 3, 4, 5, 6]
    assert [m["step"] for m in metrics if "val_reward" in m] == [0, 2, 4, 6]


def test_a_kill_right_after_a_checkpoint_loses_no_step_of_the_record(tmp_path, backend, monkeypatch):
    """Agent Lightning's loop saves a step's checkpoint before it logs the step; killed between the two,
    a resumed run would start after a step whose training metrics were never written."""
    from agentlightning.verl.trainer import AgentLightningTrainer

    save = AgentLightningTrainer._save_checkpoint

    def save_then_die(self):
        save(self)
        if self.global_steps == 4 and not getattr(self, "resumed", False):
            raise Killed(4)  # the checkpoint of step 4 is complete

    monkeypatch.setattr(AgentLightningTrainer, "_save_checkpoint", save_then_die)
    out = tmp_path / "train"
    backend()
    with pytest.raises(Killed):
        run(out)
    assert (out / "checkpoints" / "latest_checkpointed_iteration.txt").read_text().strip() == "4"
    monkeypatch.setattr(AgentLightningTrainer, "resumed", True, raising=False)
    backend()
    metrics, _ = run(out)
    assert [m["step"] for m in metrics] == [0, 1, 2, 3, 4, 5, 6]
    assert [m["step"] for m in metrics if "train_reward" in m] == [1, 2, 3, 4, 5, 6]
    assert [m["step"] for m in metrics if "val_reward" in m] == [0, 2, 4, 6]


def test_a_checkpoint_write_is_no_part_of_any_steps_seconds(tmp_path, backend, monkeypatch):
    from helpers.agl_loop import StubWorkers

    WRITE_S = 2.5  # longer than any stubbed step, validation included, on a slow machine
    write = StubWorkers.save_checkpoint

    def slow_write(self, *args, **kwargs):
        time.sleep(WRITE_S)
        write(self, *args, **kwargs)

    monkeypatch.setattr(StubWorkers, "save_checkpoint", slow_write)
    backend()
    metrics, _ = run(tmp_path / "train")
    seconds = {m["step"]: m["seconds"] for m in metrics if "seconds" in m}
    # steps 2, 4 and 6 are saved: neither they nor the steps after them take the write's time
    assert all(seconds[s] < WRITE_S for s in (2, 3, 4, 5, 6)), seconds



def tied(reward: float):
    """A step's metrics where every task's rollouts got ``reward``: GRPO's advantages are all 0."""
    return lambda step: {"training/reward": reward, "critic/advantages/max_after_processing": 0.0,
                         "critic/advantages/min_after_processing": 0.0}


def test_a_run_whose_steps_carry_no_signal_stops_with_one_sentence(tmp_path, backend):
    out = tmp_path / "train"
    fake = backend(step_metrics=tied(0.4))
    with pytest.raises(UserError) as stopped:
        run(out, train={**TRAIN, "collapse_patience": 2})
    assert str(stopped.value).startswith(
        "training collapsed at step 2 of 6: for 2 steps in a row every task's episodes got the same reward, so GRPO "
        "had nothing to learn from; lower train.rollout.temperature")
    assert f"the per-step record so far are kept in {out.resolve()}" in str(stopped.value)
    assert [s for s, _ in fake.fits[0].trained] == [1, 2]  # stopped in verl's loop, not after the last step
    assert recorded_steps(out / "steps.jsonl") == [0, 1, 2]
    assert (out / "checkpoints" / "global_step_2").is_dir()  # the step's checkpoint (save_freq 2) is made first


def test_the_guard_lets_a_saturated_run_or_one_with_signal_train_on(tmp_path, backend):
    # every rollout at the judge's maximum: the tasks are learned, not collapsed
    saturated = backend(step_metrics=tied(1.0))
    run(tmp_path / "a", train={**TRAIN, "collapse_patience": 2})
    assert [s for s, _ in saturated.fits[0].trained] == [1, 2, 3, 4, 5, 6]
    # advantages that differ: a signal
    signal = backend(step_metrics=lambda step: {"critic/advantages/max_after_processing": 1.2,
                                                "critic/advantages/min_after_processing": -0.8})
    metrics, _ = run(tmp_path / "b", train={**TRAIN, "collapse_patience": 2})
    assert [s for s, _ in signal.fits[0].trained] == [1, 2, 3, 4, 5, 6]
    assert metrics[1]["advantage_max"] == 1.2 and metrics[1]["advantage_min"] == -0.8
    # patience 0: never stopped
    off = backend(step_metrics=tied(0.4))
    run(tmp_path / "c", train={**TRAIN, "collapse_patience": 0})
    assert [s for s, _ in off.fits[0].trained] == [1, 2, 3, 4, 5, 6]


def test_the_sentence_comes_also_where_the_loop_ends_without_passing_the_error_on(tmp_path, backend, monkeypatch):
    fake = backend(step_metrics=tied(0.4))
    make = fake.Trainer

    def swallowing(*args, **kwargs):
        inner = make(*args, **kwargs)

        class Quiet:
            def fit(self, *a, **k):
                try:
                    inner.fit(*a, **k)
                except Exception:
                    pass

        return Quiet()

    monkeypatch.setattr(fake, "Trainer", swallowing)
    with pytest.raises(UserError, match="training collapsed at step 2 of 6"):
        run(tmp_path / "train", train={**TRAIN, "collapse_patience": 2})
