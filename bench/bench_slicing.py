"""Slicing time and peak memory against corpus size (should grow linearly), and the time of the
workflow's start-up check of the corpus (reading it whole, counting excerpts only as far as needed).

    python bench/bench_slicing.py [--novel PATH] [--sizes-mb 25 50 100 200]

Builds files of the given sizes by repeating a real novel, then times reading (with encoding
detection) and cutting 20 slices, each size in a fresh process so peak memory is per size.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_NOVEL = Path(__file__).resolve().parents[1] / "corpus" / "story.txt"  # the README's figures: --novel 水浒传


def measure(path: str) -> dict:
    from audiobook_rl.config import load_config
    from audiobook_rl.corpus import read_text, slice_text
    from audiobook_rl.paths import CONFIG, SCHEMA
    from audiobook_rl.startup import check_corpus

    config = load_config(CONFIG, SCHEMA)
    started = time.perf_counter()
    assert check_corpus(path, config) == []
    check_s = time.perf_counter() - started
    started = time.perf_counter()
    text, encoding = read_text(path)
    read_s = time.perf_counter() - started
    started = time.perf_counter()
    slices = slice_text(text, n=20, min_chars=100, max_chars=200, seed=2024)
    slice_s = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "chars": len(text),
        "encoding": encoding,
        "read_s": read_s,
        "slice_s": slice_s,
        "check_s": check_s,
        "slices": len(slices),
        "peak_rss_mb": peak_mb,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--novel", default=str(DEFAULT_NOVEL))
    parser.add_argument("--sizes-mb", type=int, nargs="+", default=[25, 50, 100, 200])
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure)))
        return
    novel = Path(args.novel).read_bytes()
    print(
        f"{'size MB':>8} {'chars':>12} {'read s':>8} {'slice s':>8} {'total s':>8} {'s/100MB':>8} {'peak RSS MB':>12}"
        f" {'start-up check s':>17}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes_mb:
            path = Path(tmp) / f"novel_{size}.txt"
            with open(path, "wb") as f:
                written = 0
                while written < size * 1_000_000:
                    f.write(novel)
                    written += len(novel)
            out = subprocess.run(
                [sys.executable, __file__, "--measure", str(path)], capture_output=True, text=True, check=True
            )
            r = json.loads(out.stdout)
            total = r["read_s"] + r["slice_s"]
            mb = written / 1e6
            print(
                f"{mb:8.0f} {r['chars']:12d} {r['read_s']:8.2f} {r['slice_s']:8.2f} {total:8.2f} {100 * total / mb:8.2f} {r['peak_rss_mb']:12.0f}"
                f" {r['check_s']:17.2f}"
            )
            path.unlink()


if __name__ == "__main__":
    main()
