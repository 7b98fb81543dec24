"""The references' speakers against a hand-labelled speaker key, and the bundled story's key itself."""

from __future__ import annotations

import json

from audiobook_rl.corpus import read_text
from audiobook_rl.judging.alignment import compared
from audiobook_rl.judging.speaker_key import (
    check_labels, check_references, key_path, load_key, quote_layout, quoted_segments, segments_by_quote,
    text_sha256,
)
from audiobook_rl.script import from_dicts, reading_text
from helpers import STORY
from helpers import speaker_key as case


def test_a_right_and_a_wrong_speaker_a_narrated_quote_and_a_quote_outside_the_key(tmp_path):
    _, key = case.write_corpus_and_key(tmp_path)
    check = check_labels(case.records(), load_key(key), case.CORPUS)
    assert (check.excerpts, check.quotes, check.right, check.not_in_key) == (4, 3, 2, 1)
    assert check.backend == "rules" and check.model == "rules-v4"
    [wrong] = check.wrong
    assert (wrong.offset, wrong.head, wrong.labelled, wrong.right) == (case.CORPUS.index("“好"), "好。", "老邓", ["杜三娘", "三娘"])
    # Voices, per compared character (letters and CJK, no punctuation): the wrong quote's 好 is the only
    # one wrong; 歇马店 is narration in the key, and the quote outside the key keeps the reference's speaker.
    v = check.voices
    assert (v.quote_right, v.quote_total) == (len("走吧再会"), len("走吧好再会"))
    assert v.narration_right == v.narration_total == len(compared(case.CORPUS)) - len("走吧好再会")


def test_an_alias_of_the_key_is_right_and_the_narrator_on_speech_is_wrong(tmp_path):
    _, key = case.write_corpus_and_key(tmp_path)
    records = case.records()
    records[0]["script"][1]["speaker"] = "林大侠"  # another name of 林青 in the key
    records[2]["script"] = [case.seg("旁白", "门上写着"), case.seg("店小二", "歇马店"), case.seg("旁白", "三字。")]
    check = check_labels(records, load_key(key), case.CORPUS)
    assert check.right == 1 and [w.labelled for w in check.wrong] == ["老邓", "店小二"]
    assert check.voices.quote_right == len("走吧再会")
    assert check.voices.narration_total - check.voices.narration_right == len("歇马店")


def test_records_that_are_not_the_corpus_or_mix_narration_and_quotes_are_not_scored(tmp_path):
    _, key = case.write_corpus_and_key(tmp_path)
    records = case.records()
    records[0]["start"] += 1  # no longer the corpus's text at its offsets
    records[1]["script"] = [case.seg("旁白", "杜三娘骂道：好。")]  # narration swallows the quote
    check = check_labels(records, load_key(key), case.CORPUS)
    assert (check.elsewhere, check.unscored_excerpts, check.excerpts, check.quotes, check.right) == (1, 1, 2, 1, 1)


def test_without_a_matching_key_the_check_is_one_sentence(tmp_path):
    corpus, key = case.write_corpus_and_key(tmp_path, key_text=case.CORPUS + "更多")
    says = check_references(case.records(), case.CORPUS, key)
    assert isinstance(says, str) and "another version of the corpus" in says
    for missing in (None, tmp_path / "absent.speakers.json"):
        says = check_references(case.records(), case.CORPUS, missing)
        assert isinstance(says, str) and says.startswith("No speaker key")
    assert key_path(corpus) == key


def test_quotes_are_split_by_their_opening_marks():
    text = "　　他道：“甲，‘乙’。”又道：“丙。”"
    starts, owner = quote_layout(text)
    assert [text[i] for i in starts] == ["“", "“"] and len(owner) == len(reading_text(text))
    script = from_dicts([case.seg("旁白", "他道："), case.seg("林青", "甲，‘乙’。"), case.seg("旁白", "又道："),
                         case.seg("林青", "丙"), case.seg("老邓", "。")])
    assert [[s.content for s in q] for q in segments_by_quote(text, script)] == [["甲，‘乙’。"], ["丙", "。"]]
    assert [s.content for s in quoted_segments(text, script)] == ["甲，‘乙’。", "丙", "。"]
    mixed = from_dicts([case.seg("旁白", "他道：甲，‘乙’。"), case.seg("旁白", "又道："), case.seg("林青", "丙。")])
    assert segments_by_quote(text, mixed) is None


def test_a_dash_in_the_narration_is_read_like_any_other_character():
    # 宋江把那封书——就取了一条金子——插在招文袋内: a dash alone on a line would be a scene break,
    # inside a sentence it is read, so the quote after it is still found.
    text = "　　宋江把书——就取了金子——插了。便道：“且坐。”\n\n——\n\n他走了。"
    starts, owner = quote_layout(text)
    assert len(owner) == len(reading_text(text))
    script = from_dicts([case.seg("旁白", "宋江把书——就取了金子——插了。"), case.seg("旁白", "便道："),
                         case.seg("宋江", "且坐。"), case.seg("旁白", "他走了。")])
    assert [s.content for s in quoted_segments(text, script)] == ["且坐。"]


def test_the_bundled_storys_key_matches_the_story_and_covers_every_quote():
    text, _ = read_text(STORY)
    doc = json.loads(key_path(STORY).read_text(encoding="utf-8"))
    assert doc["story"]["sha256"] == text_sha256(text), "corpus/story.txt changed: relabel corpus/story.speakers.json"
    starts = quote_layout(text)[0]
    assert [q["offset"] for q in doc["quotes"]] == starts  # every quote, in story order, and nothing else
    for q in doc["quotes"]:
        assert reading_text(text[q["offset"] + 1 :]).startswith(reading_text(q["head"])), q
        assert q["speaker"] and all(isinstance(n, str) and n for n in q["speaker"]), q
