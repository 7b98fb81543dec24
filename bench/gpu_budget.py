"""The whole DAG on a multi-GPU machine under a GPU budget: how many GPU jobs ran at once, and on which GPUs.

    python bench/gpu_budget.py [--gpus 2] [--workdir DIR]

Runs ``snakemake --cores 8 --resources gpu=N llm_api=4`` up to the generated outputs, on a small
policy with training and every generate job on one GPU each (train_grpo + generate for steps 0, 2,
4, 6: five GPU jobs). Prints each
GPU job's time span and claimed GPU (from Snakemake's job records and the job logs), the most GPU
jobs that ran at once, and any two jobs that overlapped on one GPU. Needs CUDA and N GPUs.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from audiobook_rl.paths import REPO
STEPS = [0, 2, 4, 6]
SLACK_S = 1.0
OVERLAY = {
    "policy": {
        "model": {"hidden_size": 64, "layers": 2, "heads": 4, "kv_heads": 2, "max_positions": 1024},
        "warm_start": {"window_draws": 1, "windows_per_draw": 16, "steps": 20, "batch_size": 8},
    },
    "train": {"total_steps": 6, "save_freq": 2, "test_freq": 2},
    "eval": {"steps": STEPS[1:]},
    "resources": {"train_grpo": {"gpu": 1}, "generate": {"gpu": 1}},
}


def job_span(workdir: Path, output: str) -> tuple[float, float]:
    name = base64.urlsafe_b64encode(output.encode()).decode()
    record = json.loads((workdir / ".snakemake/metadata" / name).read_text())
    return record["starttime"], record["endtime"]


def claimed(log: Path) -> str:
    found = re.search(r"claimed GPU\(s\) (\S+) of", log.read_text())
    return found.group(1) if found else "?"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpus", type=int, default=2)
    ap.add_argument("--workdir", type=Path, default=None)
    args = ap.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="gpu-budget-"))
    workdir.mkdir(parents=True, exist_ok=True)
    overlay = workdir / "overlay.yaml"
    overlay.write_text(yaml.safe_dump(OVERLAY))
    budget = ["--cores", "8", "--resources", f"gpu={args.gpus}", "llm_api=4"]
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(workdir)]
    started = time.monotonic()
    targets = [f"results/eval/step_{s}/outputs.jsonl" for s in STEPS]
    proc = subprocess.run([*cmd, *targets, *budget, "--configfile", str(overlay)], capture_output=True, text=True)
    wall = time.monotonic() - started
    if proc.returncode:
        sys.exit(proc.stderr[-4000:])
    jobs = [("train_grpo", "results/train/metrics.jsonl", workdir / "logs/train_grpo.log")]
    jobs += [(f"generate {s}", f"results/eval/step_{s}/outputs.jsonl", workdir / f"logs/generate/step_{s}.log") for s in STEPS]
    rows = [(name, *job_span(workdir, out), claimed(log)) for name, out, log in jobs]
    t0 = min(start for _, start, _, _ in rows)
    print(f"DAG wall {wall:.0f} s with {' '.join(budget)}")
    for name, start, end, gpu in sorted(rows, key=lambda r: r[1]):
        print(f"  {name:12s} {start - t0:6.1f} -> {end - t0:6.1f} s  GPU {gpu}")
    events = sorted([(s + SLACK_S, 1) for _, s, _, _ in rows] + [(e, -1) for _, _, e, _ in rows])
    running = peak = 0
    for _, change in events:
        running += change
        peak = max(peak, running)
    # A job's span in Snakemake's record ends a moment after its process (and its GPU claim) ended.
    shared = [
        f"{a[0]} / {b[0]}: {min(a[2], b[2]) - max(a[1], b[1]):.1f} s"
        for i, a in enumerate(rows)
        for b in rows[i + 1 :]
        if a[3] == b[3] and min(a[2], b[2]) - max(a[1], b[1]) > SLACK_S
    ]
    print(f"most GPU jobs at once: {peak} (budget {args.gpus}); "
          f"jobs on one GPU overlapping by more than {SLACK_S} s: {shared or 'none'}")


if __name__ == "__main__":
    main()
