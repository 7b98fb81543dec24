"""The script schema and its tolerant parser."""

import json

import pytest

from audiobook_rl.script import NARRATOR, TONES, Segment, dumps, joined_content, parse_script, reading_text

GOOD = [
    {"speaker": NARRATOR, "content": "林青道：", "tone": "平静", "intensity": 1, "delay": 200},
    {"speaker": "林青", "content": "走吧。", "tone": "严肃", "intensity": 3, "delay": 800},
]


def test_strict_array():
    result = parse_script(json.dumps(GOOD, ensure_ascii=False))
    assert result.status == "strict" and result.ok
    assert result.segments == [Segment(**GOOD[0]), Segment(**GOOD[1])]


def test_fence_prose_and_wrapper_are_repaired_and_reported():
    text = json.dumps(GOOD, ensure_ascii=False)
    fenced = parse_script(f"好的，脚本如下：\n```json\n{text}\n```\n希望有帮助。")
    assert fenced.status == "repaired" and fenced.ok and fenced.repairs == ["removed a code fence"]
    prose = parse_script(f"脚本：{text} 完。")
    assert prose.status == "repaired" and prose.ok and prose.repairs == ["removed prose around the array"]
    assert prose.share == pytest.approx(len(text) / len(f"脚本：{text} 完。"))
    assert fenced.share == pytest.approx(len(f"```json\n{text}\n```") / len(f"好的，脚本如下：\n```json\n{text}\n```\n希望有帮助。"))
    assert parse_script(text).share == 1.0
    wrapped = parse_script(json.dumps({"segments": GOOD}, ensure_ascii=False))
    assert wrapped.status == "repaired" and "unwrapped the segment list from an object" in wrapped.repairs
    assert len(wrapped.segments) == 2


def test_invalid_outputs_never_raise():
    for raw in ["", "not json", '[{"speaker": "旁白", "content": "断', "{}", "42", None, "[" * 5000 + "]" * 5000]:
        result = parse_script(raw)
        assert result.status == "invalid"
        assert result.segments == [] and result.errors


def test_field_problems_are_listed_per_segment():
    bad = [
        {"speaker": "", "content": "x", "tone": "平静", "intensity": 1, "delay": 0},
        {"speaker": "林青", "content": "x", "tone": "开心", "intensity": 9, "delay": -1},
        {"speaker": "林青", "content": "x", "tone": "平静", "intensity": True, "delay": 100},
        {"speaker": "林青", "content": "x"},
        "text",
        GOOD[1],
    ]
    result = parse_script(json.dumps(bad, ensure_ascii=False))
    assert result.status == "strict" and not result.ok
    assert result.items == 6 and result.segments == [Segment(**GOOD[1])]
    text = " | ".join(result.errors)
    for expected in ["segment 0 has an empty", "tone '开心'", "intensity 9", "delay -1", "segment 2 has intensity True", "segment 3 lacks 'tone'", "segment 4 is a str"]:
        assert expected in text


def test_huge_outputs_parse_quickly():
    many = [dict(GOOD[1], content=f"第{i}句。") for i in range(5000)]
    result = parse_script(json.dumps(many, ensure_ascii=False))
    assert result.ok and len(result.segments) == 5000
    long = parse_script("x" * 10_000_000)
    assert long.status == "invalid"


def test_reading_text_drops_quotes_whitespace_and_scene_breaks():
    assert reading_text("　　林青道：“走吧。”\n\n　　＊　＊　＊\n\n雪停了。") == "林青道：走吧。雪停了。"
    assert joined_content([Segment(**g) for g in GOOD]) == "林青道：走吧。"


def test_dumps_round_trips():
    assert parse_script(dumps([Segment(**g) for g in GOOD])).segments == [Segment(**g) for g in GOOD]
    assert len(TONES) == 15
