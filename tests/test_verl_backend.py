"""The verl backend's orchestration around ``trainer.fit`` (Agent Lightning replaced by a stand-in
that does what verl does to the file system): the config it hands over, the environment the
training process gets, one log per attempt, and the metrics and summary written from them."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace

from audiobook_rl.files import read_jsonl
from audiobook_rl.training import verl_backend
from verl_helpers import seed_config


class FakeTrainer:
    """Writes what verl writes: the file logger's lines and an FSDP checkpoint per saved step."""

    seen: list = []

    def __init__(self, algorithm, n_runners, tracer, adapter):
        self.config, self.n_runners = algorithm.config, n_runners

    def fit(self, agent, train_rows, val_dataset=None):
        cfg = self.config
        FakeTrainer.seen.append((self, dict(os.environ), agent, len(train_rows), len(val_dataset)))
        log = Path(os.environ["VERL_FILE_LOGGER_PATH"])
        lines = [{"step": 0, "data": {"val/reward": 0.1}}]
        for step in (1, 2):
            lines.append({"step": step, "data": {"training/reward": 0.2 * step, "actor/pg_loss": 0.01, "timing_s/step": 5.0,
                                                 **({"val/reward": 0.3} if step == 2 else {})}})
        log.write_text("".join(json.dumps(x) + "\n" for x in lines))
        actor = Path(cfg["trainer"]["default_local_dir"]) / "global_step_2" / "actor"
        actor.mkdir(parents=True)
        (actor / "fsdp_config.json").write_text('{"FSDP_version": 1, "world_size": 2}')


def test_run_verl_hands_over_the_checked_config_and_writes_our_outputs(tmp_path, monkeypatch):
    config = seed_config()
    train = {**config["train"], "total_steps": 2, "save_freq": 2, "test_freq": 2}
    fake = SimpleNamespace(Trainer=FakeTrainer, VERL=lambda overrides: SimpleNamespace(config=overrides),
                           OtelTracer=lambda: "otel", LlmProxyTraceToTriplet=lambda: "proxy-adapter")
    monkeypatch.setattr(verl_backend, "_agentlightning", lambda: fake)
    monkeypatch.setattr(verl_backend, "check_training", lambda *a, **k: [])
    for var in [*verl_backend.training_env("x"), verl_backend.RAY_JOB_CONFIG]:
        monkeypatch.setenv(var, "")  # recorded, so that what run_verl sets is undone after the test
        monkeypatch.delenv(var)
    rows = [{"i": i} for i in range(16)]
    out = tmp_path / "results" / "train"
    (out / "verl_logs").mkdir(parents=True)
    (out / "verl_logs" / "attempt_001.jsonl").write_text('{"step": 1, "data": {"training/reward": 0.9}}\n')  # an earlier attempt

    metrics, summary = verl_backend.run_verl(train, "agent", rows, rows[:4], model_path=tmp_path / "step_0", out_dir=out)

    trainer, env, agent, n_train, n_val = FakeTrainer.seen[-1]
    assert (agent, n_train, n_val, trainer.n_runners) == ("agent", 16, 4, 32)
    assert trainer.config["trainer"]["default_local_dir"] == str((out / "checkpoints").resolve())
    assert trainer.config["actor_rollout_ref"]["model"]["path"] == str((tmp_path / "step_0").resolve())
    assert env["VERL_FILE_LOGGER_PATH"] == str((out / "verl_logs" / "attempt_002.jsonl").resolve())
    assert env["LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY"] == "true" and env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    # the same variables reach Ray's workers, also those of a cluster started elsewhere (tests/test_verl_ray.py)
    ray_env = json.loads(env[verl_backend.RAY_JOB_CONFIG])["runtime_env"]["env_vars"]
    assert ray_env["VERL_FILE_LOGGER_PATH"] == env["VERL_FILE_LOGGER_PATH"]
    assert [(m["step"], m.get("train_reward"), m.get("val_reward")) for m in metrics] == [(0, None, 0.1), (1, 0.2, None), (2, 0.4, 0.3)]
    assert summary["saved_steps"] == [2] and (summary["best_step"], summary["best_val_reward"]) == (2, 0.3)

    # the stage entry writes both declared outputs
    monkeypatch.setitem(sys.modules, "audiobook_rl.agent_lightning", SimpleNamespace(make_agent=lambda *a, **k: "agent"))
    monkeypatch.setattr(verl_backend, "check_training", lambda *a, **k: [])
    import shutil

    shutil.rmtree(out / "checkpoints")
    verl_backend.train_stage(train, {"backend": "rubric"}, config["llm"], None, rows, rows[:4], str(tmp_path / "step_0"),
                             str(out / "metrics.jsonl"), str(out / "summary.json"))
    assert read_jsonl(out / "metrics.jsonl")[-1]["step"] == 2
    assert json.loads((out / "summary.json").read_text())["backend"] == "verl"

