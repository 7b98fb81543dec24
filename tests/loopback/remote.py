"""A loopback server in a child process (for benchmarks): ``with Remote("label", 0.3) as r: r.url``."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path


class Remote:
    def __init__(self, kind: str, latency: float):
        self.args = [sys.executable, "-m", "loopback.serve", kind, str(latency)]

    def __enter__(self) -> "Remote":
        tests = str(Path(__file__).resolve().parents[1])
        self.proc = subprocess.Popen(self.args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=tests)
        self.url = self.proc.stdout.readline().strip()
        return self

    def stats(self) -> dict:
        with urllib.request.urlopen(self.url + "/_stats") as reply:
            return json.loads(reply.read())

    def __exit__(self, *exc) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=10)
