"""Checkpoints and the metrics log of a training run, laid out so that a killed run resumes.

``<root>/step_N/`` holds the policy as a Hugging Face directory; it is written to a temporary
directory and renamed, so a directory named ``step_N`` is always complete. The newest one also holds
``trainer_state.pt`` (the optimizer state, what a resumed run needs): once a checkpoint is in place,
the state is deleted from the ones before it (Adam's moments take twice the policy's size, and only
the newest is ever resumed from). ``<root>/run.json`` holds the fingerprint of the
inputs and settings: checkpoints of a different run are discarded instead of resumed.
``<root>/metrics.jsonl`` is the live log; on resume it is cut back to the checkpoint's step, so a
resumed run writes the same lines as an uninterrupted one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
from pathlib import Path

import torch

from ..files import read_jsonl, write_json, write_jsonl
from ..policy.model import save_policy

log = logging.getLogger(__name__)

STATE = "trainer_state.pt"
_STEP_DIR = re.compile(r"^step_(\d+)$")


def fingerprint(settings: dict, judge_settings: dict | None, input_files: list[str]) -> str:
    """Hash of the settings and the contents of every input file (data, base policy, code, prompts)."""
    h = hashlib.sha256(json.dumps([settings, judge_settings], sort_keys=True, default=str).encode())
    for path in sorted(input_files):
        p = Path(path)
        files = sorted(q for q in p.rglob("*") if q.is_file()) if p.is_dir() else [p]
        for f in files:
            h.update(f.name.encode())
            h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()[:20]


def saved_steps(root: str | Path, resumable: bool = False) -> list[int]:
    """Steps that have a checkpoint under ``root`` (with ``resumable``: with its optimizer state)."""
    root = Path(root)
    if not root.is_dir():
        return []
    steps = []
    for d in root.iterdir():
        m = _STEP_DIR.match(d.name)
        if m and d.is_dir() and (not resumable or (d / STATE).is_file()):
            steps.append(int(m.group(1)))
    return sorted(steps)


def same_run(root: str | Path, fp: str) -> bool:
    """Whether ``root`` holds checkpoints of the run with fingerprint ``fp``."""
    run_file = Path(root) / "run.json"
    return run_file.is_file() and json.loads(run_file.read_text()).get("fingerprint") == fp


def start_run(root: str | Path, fp: str) -> None:
    """Empty ``root`` (saying so if it held checkpoints of another run) and mark it as run ``fp``'s."""
    root = Path(root)
    if root.exists() and any(root.iterdir()):
        log.warning("%s holds checkpoints of other settings or inputs: starting over", root)
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    write_json(root / "run.json", {"fingerprint": fp})


def prepare_run(root: str | Path, fp: str) -> int:
    """Start or resume: return the step to resume from (0 = fresh). Wipes checkpoints of another run."""
    root = Path(root)
    if same_run(root, fp):
        steps = saved_steps(root, resumable=True)
        last = steps[-1] if steps else 0
        metrics = root / "metrics.jsonl"
        if metrics.is_file():  # lines of steps after the checkpoint are redone, so dropped
            if last:
                write_jsonl(metrics, [m for m in read_metrics(root) if m["step"] <= last])
            else:
                metrics.unlink()
        return last
    start_run(root, fp)
    return 0


def append_metrics(root: str | Path, record: dict) -> None:
    with open(Path(root) / "metrics.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(record, ensure_ascii=False) + "\n")
        f.flush()
        os.fsync(f.fileno())


def read_metrics(root: str | Path) -> list[dict]:
    """The metrics lines so far; a line cut off by a kill is dropped."""
    path = Path(root) / "metrics.jsonl"
    return read_jsonl(path, problems=[]) if path.is_file() else []


def save_checkpoint(root: str | Path, step: int, model, tokenizer, optimizer) -> Path:
    """Write ``root/step_N`` atomically (HF policy + optimizer state), then delete the optimizer state
    of the checkpoints before it: until this one is in place, the one before stays resumable."""
    root = Path(root)
    final = root / f"step_{step}"
    tmp = root / f".step_{step}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    save_policy(model, tokenizer, tmp)
    torch.save({"step": step, "optimizer": optimizer.state_dict()}, tmp / STATE)
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    for earlier in saved_steps(root, resumable=True):
        if earlier < step:
            (root / f"step_{earlier}" / STATE).unlink(missing_ok=True)
    return final


def load_state(root: str | Path, step: int, device) -> dict:
    return torch.load(Path(root) / f"step_{step}" / STATE, map_location=device, weights_only=False)


def remove_checkpoint(root: str | Path, step: int) -> None:
    shutil.rmtree(Path(root) / f"step_{step}", ignore_errors=True)
