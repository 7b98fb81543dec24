"""Stress check: does reading parquet let a finished process die at exit?

    python bench/parquet_exit.py [--runs 200] [--jobs 2] [--data results/data]

Runs two small programs, each ``--runs`` times in a fresh interpreter, and prints how many exited
non-zero (an abort at interpreter teardown shows as status 134, "terminate called without an
active exception"):

- ``ours``: the project's reader, ``audiobook_rl.files.read_parquet_rows``, on train and val;
- ``pandas``: ``pandas.read_parquet`` on the same files, the comparison case (it hands Arrow a
  Python file object).

``--jobs`` interpreters run at once (2 by default, as Snakemake runs jobs with ``--cores 2``; the
abort is a race at exit, so its rate depends on the load: one at a time it is rarer).
``--data`` is a folder with train.parquet and val.parquet (split_dataset's outputs); without one,
rows of the same shape are written to a temporary folder first.
"""

from __future__ import annotations

import argparse
import collections
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

READERS = {
    "ours": (
        "from audiobook_rl.files import read_parquet_rows\n"
        "t = read_parquet_rows({train!r}); v = read_parquet_rows({val!r})\n"
        "print(len(t), len(v))\n"
    ),
    # The comparison case; the project itself never reads parquet this way.
    "pandas": (
        "import pandas as pd\n"
        "t = pd.read_parquet({train!r}); v = pd.read_parquet({val!r})\n"
        "print(len(t), len(v))\n"
    ),
}


def sample_data(folder: Path) -> Path:
    """train/val parquet files with split_dataset's row layout (20 rows of a made-up story)."""
    from audiobook_rl.files import write_parquet_rows

    for split, n in (("train", 16), ("val", 4)):
        rows = [
            {
                "data_source": "audiobook",
                "prompt": [{"role": "system", "content": "写成有声书脚本。"}, {"role": "user", "content": f"第{i}段。"}],
                "ability": "audiobook_script",
                "reward_model": {"style": "model", "ground_truth": "[]"},
                "extra_info": {"index": i, "split": split, "slice_id": f"s{i:03d}", "text": f"第{i}段。", "aliases": "{}"},
            }
            for i in range(n)
        ]
        write_parquet_rows(folder / f"{split}.parquet", rows)
    return folder


def exit_codes(reader: str, data: Path, runs: int, jobs: int) -> collections.Counter:
    """Exit status of each of ``runs`` fresh interpreters running ``reader``."""
    code = READERS[reader].format(train=str(data / "train.parquet"), val=str(data / "val.parquet"))

    def once(_):
        return subprocess.run([sys.executable, "-c", code], capture_output=True).returncode

    with ThreadPoolExecutor(jobs) as pool:
        return collections.Counter(pool.map(once, range(runs)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2, help="interpreters at once")
    parser.add_argument("--data", type=Path, help="folder with train.parquet and val.parquet")
    parser.add_argument("--readers", nargs="+", default=list(READERS), choices=list(READERS))
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        data = args.data or sample_data(Path(tmp))
        for reader in args.readers:
            codes = exit_codes(reader, data, args.runs, args.jobs)
            bad = args.runs - codes.get(0, 0)
            detail = ", ".join(f"status {c}: {n}" for c, n in sorted(codes.items()) if c != 0) or "none"
            print(f"{reader:7s} {bad:4d} of {args.runs} runs exited non-zero ({100 * bad / args.runs:.1f} %; {detail})")


if __name__ == "__main__":
    main()
