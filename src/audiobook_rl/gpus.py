"""Each GPU job runs on GPUs of its own.

``--resources gpu=N`` makes Snakemake run jobs whose ``gpu`` resources add up to at most N, but it
does not say which GPUs each job gets: without more, two ``generate`` jobs with ``gpu=1`` would both
start on GPU 0 (and two vLLM engines sized for a whole card do not fit on one). A job therefore
claims its GPUs before CUDA starts: one exclusive lock per device, released when the process ends
however it ends (even on SIGKILL), and ``CUDA_VISIBLE_DEVICES`` set to the claimed devices, so the
job's ``cuda:0`` is its first claimed GPU and its Ray or vLLM workers see only its own. The locks
belong to the job's process alone: a process it forks (Agent Lightning's runners, a multiprocessing
worker) does not keep them, so an orphan left behind by a killed job holds no GPU, unless it is
forked to use the GPU (vLLM's engine, :func:`shared_with_children`): then the claim lasts until
that process has ended too, and a killed job's orphaned engine keeps its GPU claimed, not free for
the next job to run out of memory on. :func:`claimed` holds a claim for a block and ends it at the
block's end, after what the block started on the GPU has ended, also when the job is terminated.

The candidates are the entries of ``CUDA_VISIBLE_DEVICES`` if it is set, else every GPU that
``nvidia-smi`` lists. When the environment already gives the job exactly the GPUs it needs (a Slurm
or Kubernetes job, whose GPUs the cluster assigned), they are used as they are, without locks. The
locks live in ``$AUDIOBOOK_RL_GPU_LOCKS`` (default: a per-user folder in the system's temp dir); a job
that finds every GPU claimed waits for one and says so in its log.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .errors import UserError

log = logging.getLogger(__name__)

LOCK_DIR_ENV = "AUDIOBOOK_RL_GPU_LOCKS"
POLL_S = 1.0
# torch's CUDA check through NVML: torch.cuda.is_available() otherwise calls cudaGetDeviceCount, which
# marks the process so that no forked child can ever use CUDA, while torch.cuda.is_initialized()
# stays False. vLLM decides between fork and spawn for its engine process on is_initialized() alone,
# so it would fork, and the engine would die with "Cannot re-initialize CUDA in forked subprocess".
NVML_CHECK = "PYTORCH_NVML_BASED_CUDA_CHECK"
_held: list[int] = []  # open lock files: a claim lasts as long as the process
_shared = False  # while set, a forked child keeps the claims (shared_with_children)


def _drop_claims_in_child() -> None:
    """In a forked child: close the inherited lock descriptors (the parent's locks stay; a flock
    ends when every descriptor of it is closed, so an orphaned child would otherwise keep it),
    unless the child was forked to use the GPU; its own children drop them."""
    global _shared
    if _shared:
        _shared = False
        return
    release()


os.register_at_fork(after_in_child=_drop_claims_in_child)


@contextmanager
def shared_with_children() -> Iterator[None]:
    """The processes forked in this block keep this process's GPU claims until they end (a GPU
    engine's process, e.g. vLLM's): a job killed with them alive leaves its GPUs claimed, not free."""
    global _shared
    _shared = True
    try:
        yield
    finally:
        _shared = False


def release() -> None:
    """End this process's GPU claims (a process that forked with :func:`shared_with_children` holds
    them until it ends too)."""
    for fd in _held:
        try:
            os.close(fd)
        except OSError:
            pass
    _held.clear()


def lock_dir() -> Path:
    return Path(os.environ.get(LOCK_DIR_ENV) or Path(tempfile.gettempdir()) / f"audiobook-rl-{os.getuid()}" / "gpus")


def visible_gpus() -> list[str]:
    """The GPU ids this process may use: ``CUDA_VISIBLE_DEVICES`` if set, else what the driver lists."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [d.strip() for d in env.split(",") if d.strip() and d.strip() != "-1"]
    if shutil.which("nvidia-smi"):
        proc = subprocess.run(
            ["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"], capture_output=True, text=True
        )
        if proc.returncode == 0:
            return [line.strip() for line in proc.stdout.splitlines() if line.strip()]
    # No NVIDIA tool: ask torch, in a child process (should NVML fail, torch falls back to the CUDA
    # runtime, which must not start in this process before CUDA_VISIBLE_DEVICES is set).
    proc = subprocess.run(
        [sys.executable, "-c", "from audiobook_rl.gpus import cuda_device_count; print(cuda_device_count())"],
        capture_output=True,
        text=True,
    )
    count = int(proc.stdout.strip() or 0) if proc.returncode == 0 else 0
    return [str(i) for i in range(count)]


def cuda_device_count() -> int:
    """CUDA devices torch can use in this process, counted through NVML without initialising CUDA
    (see ``NVML_CHECK``); 0 for a CPU build of torch or a machine without a driver."""
    os.environ[NVML_CHECK] = "1"  # also for every later torch.cuda.is_available() in this process
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def require_cuda(n: int, key: str) -> None:
    """Raise one sentence naming config key ``key`` unless torch sees ``n`` CUDA devices here."""
    have = cuda_device_count()
    if have < n:
        raise UserError(f"config key '{key}' asks for {n} GPU(s) but torch sees {have}; set it to 0 for the CPU.")


CPU_FIX = "lower it, or set it to 0 for the CPU"  # what fixes too few GPUs for a resources.*.gpu key


def claim(n: int, key: str, holder: str = "", fix: str = CPU_FIX) -> list[str]:
    """Claim ``n`` GPUs for the rest of this process and make them the only ones CUDA sees.

    ``key`` is the config key that asked for them and ``fix`` what to do when there are too few
    (both named in errors); ``holder`` says who holds the claim (shown to jobs waiting for it). Call
    before anything starts CUDA. Returns the device ids.
    """
    if n <= 0:
        return []
    visible = visible_gpus()
    if len(visible) < n:
        env = os.environ.get("CUDA_VISIBLE_DEVICES")
        has = f"CUDA_VISIBLE_DEVICES={env!r} leaves {len(visible)}" if env is not None else f"this machine has {len(visible)}"
        raise UserError(f"config key '{key}' asks for {n} GPU(s) but {has}; {fix}.")
    if len(visible) == n and "CUDA_VISIBLE_DEVICES" in os.environ:
        log.info("using the GPU(s) this job was given: CUDA_VISIBLE_DEVICES=%s", ",".join(visible))
        return visible
    chosen = _lock(visible, n, f"{holder}, pid {os.getpid()}" if holder else f"pid {os.getpid()}")
    os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(chosen)
    log.info("claimed GPU(s) %s of %s", ",".join(chosen), ",".join(visible))
    return chosen


@contextmanager
def claimed(n: int, key: str, holder: str = "", fix: str = CPU_FIX) -> Iterator[list[str]]:
    """:func:`claim` for the block, ended at its end, whose cleanup (``with`` and ``finally``) ends
    what it started on the GPUs first, also when the job is terminated: SIGTERM (Snakemake's, a
    cluster's) becomes ``SystemExit`` in the block, instead of ending the process where it stands."""
    devices = claim(n, key, holder, fix)
    terminate = _exit_on_sigterm() if devices and threading.current_thread() is threading.main_thread() else None
    try:
        yield devices
    finally:
        if terminate is not None:
            signal.signal(signal.SIGTERM, terminate)
        release()


def _exit_on_sigterm():
    """Make SIGTERM raise ``SystemExit`` (status 143, as the signal's); returns the handler it replaces."""

    def exit_now(signum, frame):
        raise SystemExit(128 + signum)

    return signal.signal(signal.SIGTERM, exit_now)


def _lock(visible: list[str], n: int, holder: str) -> list[str]:
    folder = lock_dir()
    folder.mkdir(parents=True, exist_ok=True)
    waited_since, last_said = None, 0.0
    while True:
        chosen, busy = _try_lock(folder, visible, n, holder)
        if chosen:
            if waited_since is not None:
                log.info("GPU(s) came free after %.0f s", time.monotonic() - waited_since)
            return chosen
        now = time.monotonic()
        if waited_since is None:
            waited_since = now
        if now - last_said >= 60:
            log.warning(
                "waiting for %d free GPU(s) of %s; in use: %s (is --resources gpu larger than this machine's GPUs?)",
                n,
                ",".join(visible),
                "; ".join(f"GPU {device}: {who}" for device, who in busy),
            )
            last_said = now
        time.sleep(POLL_S)


def _try_lock(folder: Path, visible: list[str], n: int, holder: str) -> tuple[list[str], list[tuple[str, str]]]:
    """``n`` devices locked (or none), and the busy devices with their holders. One claimer picks at a
    time (a folder-wide lock), so two jobs each wanting two GPUs never end up with one each."""
    with open(folder / "claim.lock", "w") as picking:
        fcntl.flock(picking, fcntl.LOCK_EX)
        fds: dict[str, int] = {}
        busy = []
        for device in visible:
            path = folder / f"gpu-{device}.lock"
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                busy.append((device, os.pread(fd, 200, 0).decode(errors="replace").strip() or "unknown"))
                os.close(fd)
                continue
            fds[device] = fd
            if len(fds) == n:
                break
        if len(fds) < n:
            for fd in fds.values():
                os.close(fd)
            return [], busy
        for fd in fds.values():
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{holder}\n".encode(), 0)
        _held.extend(fds.values())
        return list(fds), busy
