"""Parallel GPU jobs on real GPUs: which physical GPU each one ran on, and how long the extra one waited.

    python bench/gpu_claims.py [--jobs 3] [--hold 8]

Starts ``--jobs`` processes that each claim one GPU the way the generate rule does, put 1 GiB on
``cuda:0`` and hold it for ``--hold`` seconds. Prints, per job, the claimed id, the physical GPU's
UUID as CUDA reports it, and the wait; then whether any two jobs that overlapped in time shared a GPU.
Needs torch with CUDA and at least one GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

JOB = """
import json, sys, time
t0 = time.time()
from audiobook_rl.gpus import claim
ids = claim(1, "resources.generate.gpu", holder="bench job " + sys.argv[1])
t1 = time.time()
import torch
x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
uuid = str(torch.cuda.get_device_properties(0).uuid)
time.sleep(float(sys.argv[2]))
print(json.dumps({"job": int(sys.argv[1]), "claimed": ids, "uuid": uuid, "wait_s": round(t1 - t0, 2),
                  "start": t1, "end": time.time(), "visible": torch.cuda.device_count()}))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=3)
    ap.add_argument("--hold", type=float, default=8.0)
    args = ap.parse_args()
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHONPATH": src, "AUDIOBOOK_RL_GPU_LOCKS": tempfile.mkdtemp()}
    env.pop("CUDA_VISIBLE_DEVICES", None)
    smi = subprocess.run(["nvidia-smi", "--query-gpu=index,uuid", "--format=csv,noheader"], capture_output=True, text=True)
    print("GPUs:", smi.stdout.strip().replace("\n", "; "))
    procs = [
        subprocess.Popen([sys.executable, "-c", JOB, str(i), str(args.hold)], env=env, stdout=subprocess.PIPE, text=True)
        for i in range(args.jobs)
    ]
    rows = [json.loads(p.communicate()[0]) for p in procs]
    for r in sorted(rows, key=lambda r: r["start"]):
        print(f"job {r['job']}: claimed {r['claimed']} -> {r['uuid']} (torch sees {r['visible']}); waited {r['wait_s']} s")
    shared = [
        (a["job"], b["job"])
        for i, a in enumerate(rows)
        for b in rows[i + 1 :]
        if a["uuid"] == b["uuid"] and a["start"] < b["end"] and b["start"] < a["end"]
    ]
    print("overlapping jobs on one GPU:", shared or "none")


if __name__ == "__main__":
    main()
