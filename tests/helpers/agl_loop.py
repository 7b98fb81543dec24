"""Agent Lightning's real training loop on CPU, with only the GPU work stubbed.

``loop_trainer(trainer_cls)`` is the trainer class handed to ``agl.VERL`` (Agent Lightning's
``AgentLightningTrainer``, or a subclass of it) itself: its ``fit`` loop (epochs, last step,
validation and save schedule, val_before_train, the metrics it logs through verl's ``Tracking``),
verl 0.6.1's own ``_create_dataloader`` (the seeded sampler, ``StatefulDataLoader`` with verl's worker
count) and ``_save_checkpoint`` / ``_load_checkpoint`` (``data.pt``, ``latest_checkpointed_iteration.txt``,
``resume_mode``). Stubbed: the rollouts and the update (``_train_step`` records which rows each step
trains on), validation (which takes ``VALIDATE_S``), and the FSDP workers' shard files.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from agentlightning.verl.dataset import LoadedDataset
from agentlightning.verl.trainer import AgentLightningTrainer
from verl.trainer.main_ppo import create_rl_sampler
from verl.utils.dataset.rl_dataset import collate_fn


VALIDATE_S = 0.3  # how long a (stubbed) validation takes


class Killed(Exception):
    """Stands for a kill of the training job in the middle of a step."""


class StubWorkers:
    """verl's actor worker group as far as checkpoints go: writes what the merger needs."""

    world_size = 2

    def save_checkpoint(self, local_path, remote_path, global_step, max_ckpt_to_keep=None):
        Path(local_path).mkdir(parents=True, exist_ok=True)
        (Path(local_path) / "fsdp_config.json").write_text('{"FSDP_version": 1, "world_size": 2}')

    def load_checkpoint(self, local_path, del_local_after_load=False):
        pass


class StubDaemon:
    def __init__(self, *args, **kwargs):
        pass

    def start(self):
        pass


class LoopStubs:
    """What stands in for the GPU work, before the trainer class in the loop's bases."""

    def __init__(self, config, train_rows: list[dict], val_rows: list[dict], kill_at: int | None = None,
                 step_metrics=None):
        # Not AgentLightningTrainer.__init__: that builds Ray worker groups on GPUs.
        self.config = config
        self.tokenizer = SimpleNamespace(pad_token_id=0)
        self.processor = None
        self.store = self.llm_proxy = self.adapter = None
        self.daemon_cls = StubDaemon
        self.async_rollout_mode = True
        self.val_reward_fn = object()
        self.use_critic = False
        self.actor_rollout_wg = StubWorkers()
        self.kill_at = kill_at
        self.step_metrics = step_metrics  # step -> more of the step's metrics (the rewards' and advantages')
        self.trained: list[tuple[int, list[str]]] = []  # (step, row ids)
        train = LoadedDataset(train_rows)
        self._create_dataloader(train, LoadedDataset(val_rows), collate_fn, create_rl_sampler(config.data, train))

    def _train_step(self, batch_dict: dict) -> dict:
        if self.global_steps == self.kill_at:
            raise Killed(self.global_steps)
        started = time.monotonic()
        ids = [str(i) for i in np.asarray(batch_dict["row_id"]).tolist()]
        self.trained.append((self.global_steps, ids))
        # verl's step time, as Agent Lightning's _train_step measures it: the step without validation
        metrics = {"training/reward": 0.01 * self.global_steps, "timing_s/step": time.monotonic() - started}
        return {**metrics, **(self.step_metrics(self.global_steps) if self.step_metrics else {})}

    def _validate(self) -> dict:
        time.sleep(VALIDATE_S)
        return {"val/reward": 0.5 + 0.001 * self.global_steps}

    def stop_workers(self) -> None:
        """End the dataloaders' worker processes, as the end of a training job would. Left to the
        garbage collector, a loader abandoned mid-epoch (a "kill") joins each of its workers for up to
        5 s, at whatever later test happens to trigger a collection."""
        for loader in (getattr(self, "train_dataloader", None), getattr(self, "val_dataloader", None)):
            iterator = getattr(loader, "_iterator", None)
            if getattr(iterator, "_workers", None):
                iterator._shutdown_workers()


def rows(n: int, prefix: str = "r") -> list[dict]:
    return [{"row_id": f"{prefix}{i:02d}", "data_source": "audiobook"} for i in range(n)]


class FakeAgentLightning:
    """What ``training.verl.backend`` uses of the agentlightning module, running the loop trainer."""

    def __init__(self, kill_at: int | None = None, step_metrics=None):
        self.kill_at = kill_at
        self.step_metrics = step_metrics
        self.fits: list = []  # the loop trainers that ran
        self.trainer_classes: list = []
        self.daemon_classes: list = []
        self.ports: list[int] = []

    def VERL(self, overrides, trainer_cls=None, daemon_cls=None):
        from omegaconf import OmegaConf

        from audiobook_rl.training.verl.config import check_verl_config

        self.trainer_classes.append(trainer_cls)
        self.daemon_classes.append(daemon_cls)
        cfg = check_verl_config(overrides)
        OmegaConf.set_struct(cfg, False)
        return SimpleNamespace(config=cfg, trainer_cls=trainer_cls or AgentLightningTrainer)

    def Trainer(self, algorithm, n_runners, port, tracer, adapter):
        fake = self
        self.ports.append(port)

        class _Trainer:
            def fit(self, agent, train_rows, val_dataset=None):
                loop = loop_trainer(algorithm.trainer_cls)(algorithm.config, train_rows, val_dataset, kill_at=fake.kill_at,
                                                           step_metrics=fake.step_metrics)
                fake.fits.append(loop)
                try:
                    loop.fit()
                finally:
                    loop.stop_workers()

        return _Trainer()

    @staticmethod
    def OtelTracer():
        return "otel"

    @staticmethod
    def LlmProxyTraceToTriplet():
        return "proxy-adapter"


def loop_trainer(trainer_cls) -> type:
    """``trainer_cls`` with the GPU work stubbed."""
    return type(f"Loop{trainer_cls.__name__}", (LoopStubs, trainer_cls), {})


def recorded_steps(record: Path) -> list[int]:
    """The steps of the lines of the training's per-step record, in file order."""
    return [json.loads(line)["step"] for line in Path(record).read_text().splitlines()]


def clean_env(monkeypatch, names) -> None:
    for var in names:
        monkeypatch.setenv(var, "")  # recorded, so that what the backend sets is undone after the test
        monkeypatch.delenv(var)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
