"""A four-line corpus, its speaker key and a labelling of it whose speakers can be checked by hand.

Line 1: 林青's quote, labelled 林青 (right). Line 2: 杜三娘's quote, labelled 老邓 (wrong). Line 3: a
name quoted in the narration, read by the narrator (right). Line 4: a quote the key leaves out.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

LINES = ["　　林青道：“走吧。”", "　　杜三娘骂道：“好。”", "　　门上写着“歇马店”三字。", "　　林青道：“再会。”"]
CORPUS = "\n".join(LINES) + "\n"
# The key's quotes: the opening mark's offset in CORPUS, the quote's head and its right speakers.
KEYED = [("走吧。", ["林青", "林大侠"]), ("好。", ["杜三娘", "三娘"]), ("歇马店", ["旁白"])]


def seg(speaker: str, content: str) -> dict:
    return {"speaker": speaker, "content": content, "tone": "平静", "intensity": 2, "delay": 300}


SCRIPTS = [
    [seg("旁白", "林青道："), seg("林青", "走吧。")],
    [seg("旁白", "杜三娘骂道："), seg("老邓", "好。")],
    [seg("旁白", "门上写着"), seg("旁白", "歇马店"), seg("旁白", "三字。")],  # a quote nobody says: its own segment
    [seg("旁白", "林青道："), seg("林青", "再会。")],
]


def records(ids=("v1", "v2", "v3", "v4"), backend="rules", model="rules-v4") -> list[dict]:
    """One labels.jsonl record per line, with its offsets in CORPUS."""
    out, start = [], 0
    for sid, line, script in zip(ids, LINES, SCRIPTS):
        out.append({"id": sid, "text": line, "start": start, "end": start + len(line), "script": script,
                    "backend": backend, "model": model, "prompt_hash": None, "aliases": {}, "names": ["林青"]})
        start += len(line) + 1
    return out


def key_doc(text: str = CORPUS) -> dict:
    quotes = [{"offset": CORPUS.index("“" + head), "head": head, "speaker": names} for head, names in KEYED]
    return {"title": "test key", "story": {"sha256": hashlib.sha256(text.encode()).hexdigest()}, "quotes": quotes}


def write_corpus_and_key(root: Path, key_text: str = CORPUS) -> tuple[Path, Path]:
    """``root/novel.txt`` and its key beside it, ``root/novel.speakers.json`` (made on ``key_text``)."""
    corpus = root / "novel.txt"
    corpus.write_text(CORPUS, encoding="utf-8")
    key = root / "novel.speakers.json"
    key.write_text(json.dumps(key_doc(key_text), ensure_ascii=False), encoding="utf-8")
    return corpus, key
