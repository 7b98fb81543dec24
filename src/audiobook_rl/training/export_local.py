"""Exporting a local-backend checkpoint: it is already a Hugging Face directory, so it is copied."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from ..errors import UserError
from ..steps import resolve
from . import ExportJob
from .checkpoints import STATE

# Files of a checkpoint that are training state, not part of the model directory.
_TRAINING_ONLY = {STATE}


def export_local(step: str, summary: dict, checkpoints: str | Path, base_dir: str | Path, out_dir: str | Path) -> int:
    """Copy checkpoint ``step`` (``best`` allowed) to ``out_dir`` as a from_pretrained directory."""
    n = resolve(step, summary)
    source = Path(base_dir) if n == 0 else Path(checkpoints) / f"step_{n}"
    if not source.is_dir():
        raise UserError(f"{source}: the checkpoint of step {n} is missing; rerun train_grpo (delete results/train/).")
    out_dir = Path(out_dir)
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(source, tmp, ignore=lambda d, names: [n for n in names if n in _TRAINING_ONLY])
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)
    return n


def export_stage(job: ExportJob) -> int:
    """export_checkpoint with the local backend; returns the exported step."""
    summary = json.loads(Path(job.summary_path).read_text(encoding="utf-8"))
    return export_local(job.step, summary, Path(job.summary_path).parent / "checkpoints", job.base_dir, job.out_dir)
