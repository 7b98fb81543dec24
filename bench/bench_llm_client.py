"""Benchmark of the LLM client layer: the Claude labeler on 200 slices against a loopback Messages
API server with 300 ms injected latency, concurrency 16 (real anthropic SDK, real HTTP).

The server runs in a child process. Prints the wall time, the ideal ⌈200/16⌉ × 0.3 s and their ratio (target ≤ 1.2), then reruns the
same stage and prints how many requests it sent (target 0: every reply comes from the cache).

    python bench/bench_llm_client.py [--requests 200] [--latency 0.3] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from loopback.remote import Remote  # noqa: E402
from loopback.scripts import slices  # noqa: E402

from audiobook_rl import llm  # noqa: E402
from audiobook_rl.labeling.claude import ClaudeLabeler  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.3)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    os.environ.setdefault("ANTHROPIC_API_KEY", "sk-ant-bench-0123456789")

    items = slices(args.requests)
    label = {"backend": "claude", "model": "claude-bench"}
    # The server runs in its own process, so that it does not compete for this one's interpreter lock.
    with tempfile.TemporaryDirectory() as cache, Remote("label", args.latency) as server:
        settings = {
            "base_url": {"anthropic": server.url},
            "cache_dir": cache,
            "concurrency": args.concurrency,
            "rate_limit_per_minute": {"anthropic": 0},
        }
        with llm.session(settings, stage="bench") as s:
            labeler = ClaudeLabeler(label)
            started = time.perf_counter()
            labeler.label(items, progress=lambda: None)
            wall = time.perf_counter() - started
        ideal = math.ceil(args.requests / args.concurrency) * args.latency
        stats = server.stats()
        print(f"requests: {stats['count']}  concurrency: {args.concurrency}  latency: {args.latency * 1000:.0f} ms")
        print(f"wall: {wall:.2f} s  ideal: {ideal:.2f} s  ratio: {wall / ideal:.3f}  (target <= 1.2)")
        print(f"max in flight at the server: {stats['max_in_flight']}")

        before = stats["count"]
        with llm.session(settings, stage="bench rerun") as s:
            started = time.perf_counter()
            ClaudeLabeler(label).label(items, progress=lambda: None)
            rerun = time.perf_counter() - started
        print(
            f"rerun of the finished stage: {server.stats()['count'] - before} requests sent, "
            f"{s.usage.summary()['cache_hits']} served from the cache, {rerun:.2f} s"
        )


if __name__ == "__main__":
    main()
