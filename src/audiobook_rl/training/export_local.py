"""Exporting a local-backend checkpoint: it is already a Hugging Face directory, so it is copied."""

from __future__ import annotations

import shutil
from pathlib import Path

from ..errors import UserError
from .checkpoints import STATE

# Files of a checkpoint that are training state, not part of the model directory.
_TRAINING_ONLY = {STATE}


def resolve_step(step: str, summary: dict) -> int:
    """The step number of ``step`` (a number, or ``best`` for the best-validation checkpoint)."""
    if step == "best":
        return int(summary["best_step"])
    return int(step)


def export_local(step: str, summary: dict, checkpoints: str | Path, base_dir: str | Path, out_dir: str | Path) -> int:
    """Copy checkpoint ``step`` (``best`` allowed) to ``out_dir`` as a from_pretrained directory."""
    n = resolve_step(step, summary)
    source = Path(base_dir) if n == 0 else Path(checkpoints) / f"step_{n}"
    if n not in summary["saved_steps"] and n != 0 or not source.is_dir():
        raise UserError(
            f"config key 'eval.steps': step {n} was not saved by training (saved: {summary['saved_steps']}); "
            f"use multiples of train.save_freq or the last step."
        )
    out_dir = Path(out_dir)
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(source, tmp, ignore=lambda d, names: [n for n in names if n in _TRAINING_ONLY])
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)
    return n
