"""Exporting a verl FSDP checkpoint as a Hugging Face model directory (rule export_checkpoint).

verl saves each rank's shard (``model_world_size_W_rank_R.pt``) plus ``fsdp_config.json`` and a
``huggingface/`` folder with the config and tokenizer under ``global_step_N/actor``; verl's own
merger (``python -m verl.model_merger merge --backend fsdp``, verl 0.6.1) concatenates the shards
and writes bf16 safetensors with the tokenizer. It runs on CPU; peak memory is roughly 2-3x the
fp32 model (an estimate: 10-20 GB for 1.5B parameters).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ...errors import UserError
from ...steps import resolve
from .. import ExportJob


def actor_dir(checkpoint_dir: str | Path, step: int) -> Path:
    """Where verl keeps the actor shards of ``step``."""
    return Path(checkpoint_dir) / f"global_step_{step}" / "actor"


def merge_command(actor: str | Path, target: str | Path) -> list[str]:
    """The verl 0.6.1 merger command line (same interpreter, so the same environment)."""
    return [sys.executable, "-m", "verl.model_merger", "merge", "--backend", "fsdp",
            "--local_dir", str(actor), "--target_dir", str(target)]


def export_verl_checkpoint(checkpoint_dir: str | Path, step: int, target_dir: str | Path, log_file: str | None = None) -> Path:
    """Merge ``global_step_{step}`` of a verl run into the HF model directory ``target_dir``.

    The merge writes to a temporary directory beside ``target_dir`` that replaces it only when the
    merger succeeded and left a loadable layout, so an interrupted export never looks finished.
    """
    actor = actor_dir(checkpoint_dir, step)
    if not (actor / "fsdp_config.json").is_file():
        raise UserError(
            f"{actor}: no verl checkpoint of step {step}; check that 'eval.steps' are multiples of "
            "'train.save_freq' and that train_grpo finished."
        )
    target = Path(target_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        # The merger needs no GPU; hiding them keeps it off a GPU that training may still hold.
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
        out = open(log_file, "a", encoding="utf-8") if log_file else subprocess.DEVNULL
        try:
            done = subprocess.run(merge_command(actor, tmp), env=env, stdout=out, stderr=subprocess.STDOUT)
        finally:
            if log_file:
                out.close()
        if done.returncode != 0:
            raise UserError(f"{actor}: verl's model merger failed (exit {done.returncode}); see the rule's log.")
        missing = [n for n in ("config.json",) if not (tmp / n).is_file()]
        if missing or not any(tmp.glob("*.safetensors")):
            raise UserError(f"{actor}: verl's model merger wrote no config.json or safetensors weights.")
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def export_verl(step: str, summary: dict, target_dir: str | Path, log_file: str | None = None) -> int:
    """Merge checkpoint ``step`` (a number or ``best``) of the run ``summary`` describes; returns the step."""
    n = resolve(step, summary)
    export_verl_checkpoint(summary["checkpoints"], n, target_dir, log_file)
    return n


def export_stage(job: ExportJob) -> int:
    """export_checkpoint with the verl backend: FSDP shards -> Hugging Face dir through verl's own merger."""
    summary = json.loads(Path(job.summary_path).read_text(encoding="utf-8"))
    return export_verl(job.step, summary, job.out_dir, log_file=job.log_file)
