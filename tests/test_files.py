"""Outputs are written whole or not at all, as ordinary files that follow the user's umask."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from audiobook_rl.files import atomic_path, read_parquet_rows, write_parquet_rows, write_text


def test_a_failed_write_leaves_neither_the_file_nor_a_temporary(tmp_path):
    target = tmp_path / "out" / "scores.jsonl"
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half", encoding="utf-8")
            raise RuntimeError("crash mid-write")
    assert list((tmp_path / "out").iterdir()) == []


def test_an_existing_output_survives_a_failed_rewrite(tmp_path):
    target = tmp_path / "labels.jsonl"
    write_text(target, "finished\n")
    with pytest.raises(KeyboardInterrupt):
        with atomic_path(target) as tmp:
            tmp.write_text("partial", encoding="utf-8")
            raise KeyboardInterrupt
    assert target.read_text(encoding="utf-8") == "finished\n"
    assert [p.name for p in tmp_path.iterdir()] == ["labels.jsonl"]


@pytest.mark.parametrize("umask", [0o022, 0o027, 0o077])
def test_files_from_many_threads_follow_the_umask(tmp_path, umask):
    # The LLM client writes cache entries from many threads at once; every file and folder gets the
    # mode the umask allows, none a wider one.
    code = f"""
import os, sys
from concurrent.futures import ThreadPoolExecutor
os.umask({umask:#o})
sys.setswitchinterval(1e-6)  # switch threads as often as possible: races show up
from audiobook_rl.files import write_json
with ThreadPoolExecutor(32) as pool:
    list(pool.map(lambda i: write_json(f"{{sys.argv[1]}}/{{i % 300}}/{{i}}.json", {{"i": i}}), range(6000)))
"""
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True)
    for path in tmp_path.rglob("*"):
        mode = stat.S_IMODE(os.stat(path).st_mode)
        assert mode == (0o777 if path.is_dir() else 0o666) & ~umask, f"{path}: {mode:#o}"


def _parquet_rows(n: int) -> list[dict]:
    return [
        {
            "prompt": [{"role": "user", "content": f"第{i}段。"}],
            "reward_model": {"ground_truth": "[]", "style": "model"},
            "extra_info": {"index": i, "slice_id": f"s{i:03d}", "aliases": "{}"},
        }
        for i in range(n)
    ]


def test_parquet_rows_round_trip_as_plain_python_values(tmp_path):
    rows = _parquet_rows(3)
    write_parquet_rows(tmp_path / "d.parquet", rows)
    back = read_parquet_rows(tmp_path / "d.parquet")
    assert back == rows and isinstance(back[0]["prompt"], list)
    assert read_parquet_rows(tmp_path / "d.parquet", columns=["extra_info"]) == [{"extra_info": r["extra_info"]} for r in rows]
    assert [p.name for p in tmp_path.iterdir()] == ["d.parquet"]  # no temporary left beside it


def test_reading_parquet_never_fails_the_process_at_exit(tmp_path):
    # Handing Arrow a Python file object (as pandas does) aborts the interpreter at exit in about
    # one run of ten (bench/parquet_exit.py measures it over hundreds of runs). Stages read
    # parquet in every run of the pipeline: twenty fresh processes in a row must all exit 0.
    write_parquet_rows(tmp_path / "train.parquet", _parquet_rows(16))
    write_parquet_rows(tmp_path / "val.parquet", _parquet_rows(4))
    code = (
        "import sys\nfrom audiobook_rl.files import read_parquet_rows\n"
        "print(len(read_parquet_rows(sys.argv[1])), len(read_parquet_rows(sys.argv[2])))"
    )
    args = [sys.executable, "-c", code, str(tmp_path / "train.parquet"), str(tmp_path / "val.parquet")]
    results = [subprocess.run(args, capture_output=True, text=True) for _ in range(20)]
    assert [r.returncode for r in results] == [0] * 20, [r.stderr[-300:] for r in results if r.returncode]
    assert {r.stdout for r in results} == {"16 4\n"}
