"""bench/labeler_changes.py: every quote of a novel with its speaker, and the quotes a change turns."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench" / "labeler_changes.py"
spec = importlib.util.spec_from_file_location("labeler_changes", BENCH)
labeler_changes = importlib.util.module_from_spec(spec)
spec.loader.exec_module(labeler_changes)

NOVEL = "　　宋江道：“兄弟请坐。”李逵道：“哥哥也坐。”\n　　天色晚了。\n　　宋江又道：“明日再说。”\n"


def test_every_quote_is_keyed_by_its_paragraph_and_read_where_it_stands():
    found = labeler_changes.quote_speakers(NOVEL)
    assert sorted(v[0] for v in found.values()) == ["宋江", "宋江", "李逵"]
    second = NOVEL.index("　　宋江又道")
    assert [v for k, v in found.items() if k.startswith(f"{second}.")] == [["宋江", "明日再说。"]]


def test_the_quotes_whose_speaker_changed_are_listed_with_the_text_before_them(tmp_path):
    before = labeler_changes.quote_speakers(NOVEL)
    key = next(k for k, v in before.items() if v[0] == "李逵")
    before[key] = ["宋江", before[key][1]]
    (tmp_path / "before.json").write_text(json.dumps(before, ensure_ascii=False), encoding="utf-8")
    assert [(k, old, new) for k, old, new, _ in labeler_changes.changes(before, labeler_changes.quote_speakers(NOVEL), NOVEL)] == [
        (key, "宋江", "李逵")
    ]
    (tmp_path / "novel.txt").write_text(NOVEL, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, str(BENCH), "--novel", str(tmp_path / "novel.txt"), "--against", str(tmp_path / "before.json")],
        capture_output=True, text=True, check=True,
    )
    assert "宋江 → 李逵  | " in run.stdout and "1 of 3 quotes changed speaker" in run.stdout
