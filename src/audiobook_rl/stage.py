"""How a pipeline stage runs: logging to the rule's log file, and errors as one sentence."""

from __future__ import annotations

import atexit
import errno
import logging
import os
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Callable

from .errors import UserError

log = logging.getLogger("audiobook_rl")


def setup_logging(log_file: str | None = None, level: int = logging.INFO) -> None:
    """Send the package's log lines to the terminal and, if given, to ``log_file``."""
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S")
    log.handlers.clear()
    log.setLevel(level)
    log.propagate = False
    terminal = logging.StreamHandler(sys.stderr)
    terminal.setFormatter(fmt)
    log.addHandler(terminal)
    if log_file:
        handler = logging.FileHandler(log_file, mode="w", encoding="utf-8")
        handler.setFormatter(fmt)
        log.addHandler(handler)


def run(main: Callable, smk) -> None:
    """Run ``main(smk)`` for a Snakemake ``script:``. A :class:`UserError`, a full disk and memory
    run out exit 1 with one sentence as the log's last line (the traceback of the latter two stays in
    the log above it); any other error fails the stage with its traceback."""
    setup_logging(smk.log[0] if smk.log else None)
    started = time.monotonic()
    try:
        main(smk)
    except UserError as err:
        log.error("%s", err)
        sys.exit(1)
    except Exception as err:
        sentence = ran_out(err, smk)
        if sentence is None:
            log.exception("rule %s failed unexpectedly", smk.rule)
            raise
        log.warning("rule %s stopped; what stopped it:", smk.rule, exc_info=True)
        log.error("%s", sentence)
        sys.exit(1)
    log.info("rule %s done in %.1f s", smk.rule, time.monotonic() - started)
    leave_after_success()


# The config keys that set how much a rule holds in memory at once.
_MEMORY_KEYS = {
    "train_grpo": "train.micro_batch_size (the update) or train.generate_batch_size (the rollouts)",
    "sft_policy": "sft.batch_size",
    "generate": "generate.batch_size",
}
_DISK_FULL = "No space left on device"
_CPU_OOM = "DefaultCPUAllocator: can't allocate memory"
_LOW_DISK = 256 * 2**20  # bytes free below which any failure is put down to a full disk
# torch's message: "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of
# 79.19 GiB of which 1.06 GiB is free. …"
_OOM_DETAIL = re.compile(r"(Tried to allocate [\d.]+ \w+)\.\s*GPU \d+ has a total capacity of ([\d.]+ \w+) of which ([\d.]+ \w+) is free")


def ran_out(err: BaseException, smk) -> str | None:
    """One sentence for a stage stopped by a full disk, or by GPU memory or RAM run out (what to free
    or lower, and that rerunning the same command keeps what was finished); None for any other failure."""
    kept = "the finished stages are kept" + (", and training resumes from its last checkpoint"
                                             if smk.rule == "train_grpo" else "")
    return exhausted(err, f"rule {smk.rule}", _disk_of(smk), kept=kept,
                     largest=" (a run's largest files are results/models/ and results/train/checkpoints/)",
                     keys=_MEMORY_KEYS.get(smk.rule, "the rule's batch sizes"), memory=f"resources.{smk.rule}.mem_mb")


def exhausted(err: BaseException, who: str, where: str | None, kept: str = "", largest: str = "",
              keys: str | None = None, memory: str | None = None) -> str | None:
    """The sentence of :func:`ran_out` for ``who`` (a rule, a command) writing under ``where``:
    ``kept`` says what a rerun keeps, ``largest`` what to delete first, ``keys`` the config keys that
    lower memory and ``memory`` the one that gives more; None if ``err`` is none of these."""
    chain, seen = [], err
    while seen is not None and len(chain) < 10:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    text = " ".join(f"{type(e).__name__}: {e}" for e in chain)
    try:
        free = shutil.disk_usage(where).free if where else None
    except OSError:
        free = None
    again = "run the same command again" + (f"; {kept}." if kept else ".")
    lower = f"lower {keys} in your config, or " if keys else ""
    disk = f"{who} stopped because the disk is full ({where}: {_size(free)} free): free some space{largest} and {again}"
    if any(isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT) for e in chain) or _DISK_FULL in text:
        return disk
    if any(type(e).__name__ == "OutOfMemoryError" for e in chain) or "CUDA out of memory" in text:
        detail = _OOM_DETAIL.search(text)
        said = f" ({detail[1]} on a GPU of {detail[2]} with {detail[3]} free)" if detail else ""
        return f"{who} ran out of GPU memory{said}: {lower}end other processes on the GPU, and {again}"
    if any(isinstance(e, MemoryError) for e in chain) or _CPU_OOM in text:
        more = f"give the job more ({memory}) on a machine that has it" if memory else "free memory or use a machine with more"
        return f"{who} ran out of memory: {lower}{more}, and {again}"
    # torch.save's own message on a full disk names no cause ("unexpected pos 576 vs 534"): there,
    # the space left on the outputs' disk tells.
    return disk if free is not None and free < _LOW_DISK else None


def _disk_of(smk) -> str | None:
    """The nearest existing folder of the rule's first output (else the working directory)."""
    outputs = [str(o) for o in getattr(smk, "output", [])]
    return existing_folder(outputs[0] if outputs else ".")


def existing_folder(path: str | Path) -> str | None:
    """The nearest existing folder of ``path`` (itself, or the first parent that exists)."""
    folder = Path(path).resolve()
    while not folder.is_dir() and folder != folder.parent:
        folder = folder.parent
    return str(folder) if folder.is_dir() else None


def _size(n: int | None) -> str:
    if n is None:
        return "unknown"
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def leave_after_success() -> None:
    """End the process with status 0 once the stage's outputs are written.

    A native library can crash while the interpreter tears itself down (a thread pool of Arrow,
    CUDA or a tokenizer destroyed in the wrong order aborts with status 134). Snakemake would then
    call a finished stage failed and delete its outputs. So, after success: run the Python exit
    handlers (they shut down Ray, flush and close logs), flush the standard streams, and leave
    through ``os._exit``, which skips the native teardown where such crashes happen.
    """
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(0)


class Progress:
    """Counts finished items and logs a progress line every ``every`` items and at the end."""

    def __init__(self, total: int, what: str, every: int | None = None):
        self.total, self.what, self.done = total, what, 0
        self.every = every or max(1, total // 10)
        self.started = time.monotonic()

    def __call__(self, n: int = 1) -> None:
        self.done += n
        if self.done % self.every == 0 or self.done == self.total:
            elapsed = time.monotonic() - self.started
            log.info("%s: %d/%d (%.0f%%) in %.1f s", self.what, self.done, self.total, 100 * self.done / max(1, self.total), elapsed)
