"""How a pipeline stage runs: logging to the rule's log file, and errors as one sentence."""

from __future__ import annotations

import atexit
import logging
import os
import sys
import time
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
    """Run ``main(smk)`` for a Snakemake ``script:``; a :class:`UserError` exits 1 with its sentence."""
    setup_logging(smk.log[0] if smk.log else None)
    started = time.monotonic()
    try:
        main(smk)
    except UserError as err:
        log.error("%s", err)
        sys.exit(1)
    except Exception:
        log.exception("rule %s failed unexpectedly", smk.rule)
        raise
    log.info("rule %s done in %.1f s", smk.rule, time.monotonic() - started)
    leave_after_success()


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
