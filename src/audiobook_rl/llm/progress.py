"""A one-line progress bar on an interactive terminal (the log gets stage.Progress lines)."""

from __future__ import annotations

import sys
import threading
import time


class Bar:
    def __init__(self, total: int, what: str, stream=None):
        self.stream = stream or sys.stderr
        self.enabled = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.total, self.what, self.done = total, what, 0
        self.started = time.monotonic()
        self.lock = threading.Lock()

    def step(self, n: int = 1) -> None:
        with self.lock:
            self.done += n
            if self.enabled:
                width = 30
                filled = int(width * self.done / max(1, self.total))
                elapsed = time.monotonic() - self.started
                self.stream.write(
                    f"\r{self.what} [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {elapsed:.0f}s"
                )
                self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.done:
            self.stream.write("\n")
            self.stream.flush()
