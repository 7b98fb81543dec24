"""The generate stage's GPU check, then a forked child that starts CUDA, as vLLM's engine does.

vLLM 0.10.2 runs its engine core in a child process and forks it unless CUDA is initialised in the
parent (``torch.cuda.is_initialized()``). torch's plain ``torch.cuda.is_available()`` leaves that
False but marks the process so that no forked child can use CUDA ("Cannot re-initialize CUDA in
forked subprocess"). The stage checks through NVML instead (``audiobook_rl.gpus.require_cuda``).

Each check runs in a fresh process, which then forks a child that initialises CUDA and allocates a
tensor. On a GPU machine (needs only torch and this repository's src/):

    PYTHONPATH=src python bench/fork_after_gpu_check.py

Prints one line per check; exits 0 when our check leaves fork usable and the plain check does not.
"""

from __future__ import annotations

import multiprocessing
import subprocess
import sys


def child(queue) -> None:
    import torch

    try:
        torch.cuda.init()
        x = torch.ones(4, device="cuda")
        queue.put(f"child started CUDA: {torch.cuda.get_device_name(0)}, sum={float(x.sum())}")
    except Exception as err:  # the failure we show
        queue.put(f"child failed: {type(err).__name__}: {err}")


def run_check(which: str) -> None:
    import torch

    if which == "ours":
        from audiobook_rl import gpus

        gpus.require_cuda(1, "resources.generate.gpu")
        seen = gpus.cuda_device_count()
    else:
        seen = torch.cuda.device_count() if torch.cuda.is_available() else 0
    ctx = multiprocessing.get_context("fork")  # what vLLM picks while CUDA is not initialised
    queue = ctx.Queue()
    proc = ctx.Process(target=child, args=(queue,))
    proc.start()
    proc.join(120)
    print(f"{which:>5}: GPUs seen {seen}; parent torch.cuda.is_initialized()={torch.cuda.is_initialized()}; "
          f"{queue.get(timeout=5)}", flush=True)


def main() -> int:
    outputs = {}
    for which in ("ours", "plain"):
        proc = subprocess.run([sys.executable, __file__, which], capture_output=True, text=True)
        outputs[which] = proc.stdout.strip() or proc.stderr.strip()[-2000:]
        print(outputs[which], flush=True)
    ok = "child started CUDA" in outputs["ours"] and "Cannot re-initialize CUDA in forked subprocess" in outputs["plain"]
    print("as expected" if ok else "NOT as expected")
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) > 1:
        run_check(sys.argv[1])
    else:
        sys.exit(main())
