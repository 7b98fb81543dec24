"""Reading and writing the pipeline's files: outputs are written so that a crash never leaves a
half-written file that looks finished; JSON lines have one reader."""

from __future__ import annotations

import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

from .errors import UserError


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; move it into place only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes the file private; outputs are ordinary files
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _read_umask() -> int:
    """The process umask. Read once, at import: reading it with ``os.umask`` means setting it for a
    moment, and a thread creating a file in that moment (the LLM client writes its cache from many
    threads) would get no umask at all."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


def write_text(path: str | Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json(path: str | Path, value) -> None:
    write_text(path, json.dumps(value, ensure_ascii=False, indent=2) + "\n")


def write_jsonl(path: str | Path, rows: Iterable[dict]) -> None:
    write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def read_jsonl(path: str | Path, problems: list[str] | None = None) -> list[dict]:
    """The JSON objects of a .jsonl file, one per non-empty line: the one reader of every stage.

    A line that is not a JSON object stops a stage with one sentence naming the file and line; with
    ``problems`` (a list) it is skipped and described there instead, for readers that must get
    through what a killed run leaves behind (a last line cut short).
    """
    rows = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError:
                row = None
            if isinstance(row, dict):
                rows.append(row)
                continue
            problem = f"{path} line {n} is not a JSON object"
            if problems is None:
                raise UserError(f"{problem}; rerun the stage that wrote it.")
            problems.append(f"{problem}; skipped.")
    return rows


# Parquet is read and written by path, in the calling thread. Handing Arrow a Python file object
# (what ``pandas.read_parquet`` does) lets Arrow's I/O threads call back into Python; a pool thread
# still alive when the interpreter finalises aborts the process ("terminate called without an
# active exception", exit 134) after the stage's work is done, about one run in ten. With a native
# path, no pre-buffering and no thread pool, no Arrow thread ever holds Python state.


def read_parquet_rows(path: str | Path, columns: list[str] | None = None) -> list[dict]:
    """The rows of a parquet file as plain Python values (dicts, lists, str, int, float)."""
    import pyarrow.parquet as pq

    table = pq.read_table(os.fspath(path), columns=columns, use_threads=False, pre_buffer=False)
    return table.to_pylist()


def write_parquet_rows(path: str | Path, rows: list[dict]) -> None:
    """Write ``rows`` (dicts of plain values) as one parquet table, atomically."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist(rows)
    with atomic_path(path) as tmp:
        pq.write_table(table, os.fspath(tmp))
