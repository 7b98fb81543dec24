"""The rule-based labeler: speakers, tones, delays, and scripts that give back their excerpt."""

import pytest

from audiobook_rl.corpus import read_text, slice_text
from audiobook_rl.labeling import label_slices
from audiobook_rl.labeling.lexicon import build_lexicon
from audiobook_rl.labeling.rules import UNKNOWN_SPEAKER, RuleLabeler
from audiobook_rl.script import NARRATOR, TONES, dumps, joined_content, parse_script, reading_text

from conftest import STORY


def quotes(text: str, lexicon=None) -> list[tuple[str, str]]:
    """(speaker, content) of every non-narration segment."""
    script = RuleLabeler(lexicon).label_text(text)
    return [(s.speaker, s.content) for s in script if s.speaker != NARRATOR]


@pytest.fixture(scope="module")
def story():
    return read_text(STORY)[0]


def test_every_script_reconstructs_its_excerpt_and_passes_the_schema(story):
    labeler = RuleLabeler(build_lexicon(story))
    for seed in range(10):
        for s in slice_text(story, n=20, min_chars=100, max_chars=200, seed=seed):
            script = labeler.label_text(s.text)
            assert joined_content(script) == reading_text(s.text), s.id
            assert parse_script(dumps(script)).ok


def test_plain_and_verb_tags():
    assert quotes("　　林青道：“走吧。”韩七笑道：“好。”") == [("林青", "走吧。"), ("韩七", "好。")]


def test_listener_before_the_verb_is_not_the_speaker():
    text = "　　沈墨白对林青道：“你来了。”林青问沈墨白道：“你等了多久？”那汉子对林青喝道：“站住！”苏晚晴看着林青道：“别去。”"
    assert [s for s, _ in quotes(text)] == ["沈墨白", "林青", "那汉子", "苏晚晴"]


def test_subject_carried_over_from_an_earlier_clause():
    text = "　　林青站起身来，拍了拍衣上的雪，笑道：“走吧。”沈墨白听了，沉吟半晌，道：“也好。”"
    assert quotes(text) == [("林青", "走吧。"), ("沈墨白", "也好。")]


def test_tag_after_the_quote_and_quote_tag_quote():
    text = "　　“你来了。”沈墨白道，“坐吧。”\n\n　　“多谢。”林青道。"
    assert quotes(text) == [("沈墨白", "你来了。"), ("沈墨白", "坐吧。"), ("林青", "多谢。")]


def test_untagged_turns_alternate_between_two_speakers():
    text = "　　林青道：“你是谁？”\n\n　　沈墨白道：“过路的。”\n\n　　“过路的？”\n\n　　“正是。”\n\n　　“去哪里？”"
    assert [s for s, _ in quotes(text)] == ["林青", "沈墨白", "林青", "沈墨白", "林青"]


def test_inner_thoughts_and_nested_quotes_belong_to_the_character():
    text = "　　林青心中寻思道：“师父说过‘刀在人在’，我不能走。”"
    [(speaker, content)] = quotes(text)
    assert speaker == "林青" and content == "师父说过‘刀在人在’，我不能走。"
    script = RuleLabeler().label_text(text)
    assert script[-1].tone == "沉思"


def test_descriptors_speak():
    text = "　　那汉子道：“拿钱来。”众人齐声道：“好！”店小二笑道：“客官里面请。”两个公差喝道：“让开！”"
    assert [s for s, _ in quotes(text)] == ["那汉子", "众人", "店小二", "两个公差"]


def test_unknown_speaker_when_nothing_tells():
    assert quotes("　　“谁？”") == [(UNKNOWN_SPEAKER, "谁？")]


def test_alias_table_from_the_text(story):
    lexicon = build_lexicon(story)
    assert lexicon.aliases == {"孤雁刀": "裴寒山"}
    for name in ["陆青崖", "裴寒山", "孤雁刀", "钱百通", "柳含烟", "店小二"]:
        assert name in lexicon.names


def test_tone_follows_the_verb_and_punctuation():
    script = RuleLabeler().label_text("　　林青喝道：“滚出去！”韩七冷笑道：“就凭你？”苏晚晴哭道：“师父……”")
    tones = [(s.tone, s.intensity) for s in script if s.speaker != NARRATOR]
    assert tones[0][0] == "愤怒" and tones[0][1] >= 4
    assert tones[1][0] == "轻蔑"
    assert tones[2][0] == "悲伤"
    assert all(s.tone in TONES for s in script)


def test_delays_are_longer_at_paragraph_ends_and_scene_breaks():
    script = RuleLabeler().label_text("　　雪停了。风还在吹。\n\n　　林青道：“走吧。”\n\n　　＊　＊　＊\n\n　　天亮了。")
    delays = {s.content: s.delay for s in script}
    assert delays["雪停了。"] < delays["风还在吹。"]  # sentence end < paragraph end
    assert delays["走吧。"] >= 1500  # before a scene break
    assert all(0 <= s.delay <= 5000 for s in script)


def test_label_records_carry_backend_model_and_aliases(story):
    slices = slice_text(story, n=3, min_chars=100, max_chars=200, seed=1)
    records = label_slices(slices, {"backend": "rules"}, story)
    assert [r["id"] for r in records] == [s.id for s in slices]
    assert all(r["backend"] == "rules" and r["model"] == "rules-v1" for r in records)
    assert records[0]["aliases"] == {"孤雁刀": "裴寒山"}
