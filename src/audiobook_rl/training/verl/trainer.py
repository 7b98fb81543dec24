"""Agent Lightning's verl trainer with the project's own per-step record.

Handed to ``agl.VERL(config, trainer_cls=RecordingTrainer, ...)``; it runs in verl's trainer actor,
where :data:`.environment.STEP_RECORD` names the record's file.

Agent Lightning's ``fit`` logs each step's metrics through a ``Tracking`` it builds itself; for
the duration of ``fit`` that name in Agent Lightning's module is a ``Tracking`` that also hands
every logged step to :class:`.metrics.StepRecord`. Everything else of the loop is Agent Lightning's.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager

from agentlightning.verl.trainer import AgentLightningTrainer

from .environment import STEP_RECORD
from .metrics import StepRecord


class RecordingTrainer(AgentLightningTrainer):
    def fit(self):
        with _recording(StepRecord(os.environ[STEP_RECORD])):
            return super().fit()


@contextmanager
def _recording(record: StepRecord):
    """Make Agent Lightning's training loop log every step to ``record`` too."""
    loop = sys.modules[AgentLightningTrainer.__module__]
    tracking = loop.Tracking

    class RecordingTracking(tracking):
        def log(self, data, step, backend=None):
            super().log(data=data, step=step, backend=backend)
            record.log(step, data)

    loop.Tracking = RecordingTracking
    try:
        yield
    finally:
        loop.Tracking = tracking
