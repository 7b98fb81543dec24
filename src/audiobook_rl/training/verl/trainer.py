"""Agent Lightning's verl trainer with two changes: its update is the token-mean over each mini-batch,
and it keeps the project's own per-step record.

Handed to ``agl.VERL(config, trainer_cls=SeedTrainer, ...)``; it runs in verl's trainer actor.

**The objective.** verl 0.6.1's actor (``verl/workers/actor/dp_actor.py``, ``update_policy``) cuts
each GPU's share of a mini-batch into micro-batches of ``ppo_micro_batch_size_per_gpu`` samples and
takes, per micro-batch, the mean loss over its tokens (``core_algos.agg_loss``, ``token-mean``)
times ``1 / gradient_accumulation`` whatever its token count; FSDP then averages the GPUs'
gradients. With one sample per micro-batch (``train.micro_batch_size: 1``, which 24 GB cards need)
that is a mean of per-sample means: a 100-token draft weighs as much as a 1,000-token rewrite. The
local backend, and the seed's ``token-mean``, weigh every token of a mini-batch alike.

The PPO-clip loss of a token is proportional to its sample's advantage (every clipped and dual-clipped
term is), so scaling sample ``i``'s advantage by ``w_i = W · G · T_μ / N_k`` turns verl's update
into the token-mean over mini-batch ``k`` across its GPUs: ``W`` GPUs, ``G`` micro-batches per GPU's
share of a mini-batch, ``T_μ`` response tokens of the sample's micro-batch, ``N_k`` of its mini-batch.
:func:`token_mean_weights` finds each sample's micro- and mini-batch as verl does: the batch is
dealt to the GPUs in equal consecutive chunks (``DataProto.chunk``), each chunk cut into consecutive
mini-batches and those into consecutive micro-batches (``DataProto.split``). Only the copy of the
batch handed to the update is scaled; the advantages the metrics show are the GRPO ones. The KL
loss (``train.kl_coef`` > 0; the seed has none) is not weighted by advantages and stays verl's
mean per micro-batch.

**The record.** Agent Lightning's ``fit`` logs each step's metrics through a ``Tracking`` it builds
itself; for the duration of ``fit`` that name in Agent Lightning's module is a ``Tracking`` that
also hands every logged step to :class:`.metrics.StepRecord`, at the path
:data:`.environment.STEP_RECORD` names.

**The checkpoint after the record.** Agent Lightning 0.3.0's ``fit`` saves a step's checkpoint before
it logs the step's metrics: a run killed between the two resumes after a step whose training metrics
were never written (the resumed run validates that step again, so its line would hold the validation
alone). Within ``fit`` the save waits until the step is logged, and is made right after: a run killed
before it resumes from the checkpoint before and redoes the step, whose line the resume drops.

**The collapse guard.** After each logged step (and its due checkpoint) the record is read with the
local backend's rule (:func:`...collapse.collapse`, ``train.collapse_patience`` from the
environment): verl's rows tell a step whose tasks' rollouts all tied by its advantages, all 0. A
run that has gone that many steps without a signal before its last step ends with
:class:`TrainingCollapsed`; the backend reads the record and says so in one sentence.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager

import torch
from agentlightning.verl.trainer import AgentLightningTrainer
from verl import DataProto

from ..collapse import collapse
from .environment import COLLAPSE_PATIENCE, STEP_RECORD
from .metrics import StepRecord, read_record


class TrainingCollapsed(RuntimeError):
    """Raised in verl's trainer actor to end a run whose steps carry no learning signal."""


class SeedTrainer(AgentLightningTrainer):
    def init_workers(self):
        super().init_workers()
        update = self.actor_rollout_wg.update_actor
        self.actor_rollout_wg.update_actor = lambda batch: update(self.token_mean_batch(batch))

    def token_mean_batch(self, batch: DataProto) -> DataProto:
        """``batch`` with each sample's advantages scaled by its :func:`token_mean_weights`."""
        actor, n = self.config.actor_rollout_ref.actor, self.config.actor_rollout_ref.rollout.n
        ranks = self.actor_rollout_wg.world_size // actor.ulysses_sequence_parallel_size
        weights = token_mean_weights(batch.batch["response_mask"], ranks=ranks,
                                     mini_rows=actor.ppo_mini_batch_size * n // ranks,
                                     micro_rows=actor.ppo_micro_batch_size_per_gpu)
        tensors = batch.batch.copy()  # a new dict of the same tensors: the trainer's batch keeps its advantages
        tensors["advantages"] = batch.batch["advantages"] * weights.unsqueeze(-1).to(batch.batch["advantages"].dtype)
        return DataProto(batch=tensors, non_tensor_batch=batch.non_tensor_batch, meta_info=batch.meta_info)

    def fit(self):
        record = StepRecord(os.environ[STEP_RECORD])
        patience = int(os.environ.get(COLLAPSE_PATIENCE) or 0)
        self._checkpoint_due = None  # False outside fit: a save is made when asked

        def after_log():
            self._save_due_checkpoint(record)
            self._stop_if_collapsed(record, patience)

        with _recording(record, after_log=after_log):
            self._checkpoint_due = False
            try:
                return super().fit()
            finally:
                self._checkpoint_due = None

    def _save_checkpoint(self):
        if getattr(self, "_checkpoint_due", None) is None:
            return super()._save_checkpoint()
        self._checkpoint_due = True  # made once the step is logged (see the module's docstring)

    def _stop_if_collapsed(self, record: StepRecord, patience: int) -> None:
        """End the run (:class:`TrainingCollapsed`) once ``patience`` logged steps in a row carried no
        learning signal (:func:`...collapse.collapse`, the local backend's rule), before the last step;
        the backend reads the record and says so in one sentence."""
        found = collapse(read_record(record.path), patience)
        if found and found[0] == self.global_steps and self.global_steps < self.total_training_steps:
            raise TrainingCollapsed(f"training collapsed at step {found[0]}: {found[1]}")

    def _save_due_checkpoint(self, record: StepRecord) -> None:
        if self._checkpoint_due:
            self._checkpoint_due = False
            super()._save_checkpoint()
            record.restart_clock()  # (the write is no part of the next step's time)


def token_mean_weights(response_mask: torch.Tensor, *, ranks: int, mini_rows: int, micro_rows: int) -> torch.Tensor:
    """Per sample, the factor that makes verl's per-micro-batch means a token-mean over each mini-batch.

    ``response_mask`` is the batch's (samples × response positions) in the order the update gets it;
    ``ranks`` the data-parallel GPUs, ``mini_rows`` and ``micro_rows`` the samples per GPU of a mini-
    and a micro-batch (verl's ``ppo_mini_batch_size`` after its worker divides it over the GPUs, and
    ``ppo_micro_batch_size_per_gpu``). A sample of a mini-batch without response tokens weighs 0.
    """
    rows = response_mask.shape[0]
    if rows % ranks:
        raise ValueError(f"{rows} samples do not split over {ranks} GPUs.")
    tokens = response_mask.sum(-1).double()
    local = torch.arange(rows) % (rows // ranks)  # the sample's place in its GPU's chunk
    rank = torch.arange(rows) // (rows // ranks)
    mini = local // mini_rows
    micro = rank * rows + local // micro_rows  # a micro-batch is one GPU's
    micro_tokens = torch.zeros(ranks * rows, dtype=torch.float64).index_add_(0, micro, tokens)[micro]
    mini_tokens = torch.zeros(rows, dtype=torch.float64).index_add_(0, mini, tokens)[mini]
    accumulation = mini_rows // micro_rows  # verl's gradient_accumulation, also for a shorter last mini-batch
    weights = ranks * accumulation * micro_tokens / mini_tokens.clamp(min=1.0)
    return weights.float()


@contextmanager
def _recording(record: StepRecord, after_log=None):
    """Make Agent Lightning's training loop log every step to ``record`` too, then call ``after_log``."""
    loop = sys.modules[AgentLightningTrainer.__module__]
    tracking = loop.Tracking

    class RecordingTracking(tracking):
        def log(self, data, step, backend=None):
            super().log(data=data, step=step, backend=backend)
            record.log(step, data)
            if after_log:
                after_log()

    loop.Tracking = RecordingTracking
    try:
        yield
    finally:
        loop.Tracking = tracking
