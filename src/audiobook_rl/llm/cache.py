"""A content-addressed on-disk cache of model replies, one file per request.

The key is the SHA-256 of the provider, the model and the full request (messages, system prompt,
sampling settings), so any change to what is asked is a new entry and an unchanged request is
never paid twice. Files are written atomically: a crash leaves whole entries or none. The cache is
shared by all stages and runs (default ``results/cache/llm/``); delete the folder to start afresh.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..files import write_json


def request_key(provider: str, payload: dict) -> str:
    blob = json.dumps({"provider": provider, **payload}, ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class DiskCache:
    """Replies stored as ``<dir>/<provider>/<key[:2]>/<key>.json``."""

    def __init__(self, directory: str | Path, provider: str):
        self.root = Path(directory) / provider

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        path = self._path(key)
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except ValueError:
            return None  # unreadable (should not happen with atomic writes): ask again

    def put(self, key: str, record: dict) -> None:
        write_json(self._path(key), record)
