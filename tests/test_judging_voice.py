"""Voice accuracy: who reads each character of the excerpt, computed by hand on short excerpts."""

from __future__ import annotations

import dataclasses
import json

import pytest
from loopback.damage import characters_read_narration, dumps, merge_all, speech_tags, text_fragments
from loopback.scripts import REFERENCE, REFERENCE_JSON, SOURCE

from audiobook_rl.judging.voice import SpeakerUse, VoiceAccuracy, Voices, is_speech_tag, voice_accuracy
from audiobook_rl.script import from_dicts

# SOURCE: 林青推门进来，冷笑道：“你还敢来？”  那汉子吓得后退一步，颤声道：“小人……小人只是路过。”
# Compared characters (letters, digits, CJK): narration 9 + 12 = 21, 林青's quote 4, 那汉子's 8; 33 in all.
REF = from_dicts(REFERENCE)


def speak(script, i, **change):
    return [dataclasses.replace(s, **change) if k == i else s for k, s in enumerate(script)]


def test_a_copy_of_the_reference_reads_every_character_in_the_right_voice():
    v = voice_accuracy(REF, REFERENCE_JSON, excerpt=SOURCE)
    assert v == VoiceAccuracy(21, 21, 12, 12)
    assert (v.overall, v.narration, v.quotes) == (1.0, 1.0, 1.0)


@pytest.mark.parametrize(
    "candidate, counts",
    [
        # a quote read by the narrator: 林青's 4 characters wrong
        (speak(REF, 1, speaker="旁白"), (21, 21, 8, 12)),
        # a quote read by another person of the excerpt
        (speak(REF, 1, speaker="那汉子"), (21, 21, 8, 12)),
        # the narration before 那汉子's quote read by him: 12 narration characters wrong
        (speak(REF, 2, speaker="那汉子"), (9, 21, 12, 12)),
        # the quote left out: read by no one
        (REF[:3], (21, 21, 4, 12)),
        # everything in one narration segment
        (merge_all(REF), (21, 21, 0, 12)),
        # the speech tag as the speaker: 林青道 is no person
        (speak(REF, 1, speaker="林青道"), (21, 21, 8, 12)),
        # a name found neither in the excerpt nor among the aliases
        (speak(REF, 1, speaker="林青道长"), (21, 21, 8, 12)),
        # half of 那汉子's quote in his voice, half in 林青's: 小人…小人 (4) right, 只是路过 (4) wrong
        (REF[:3] + [dataclasses.replace(REF[3], content="小人……小人"), dataclasses.replace(REF[3], content="只是路过。", speaker="林青")],
         (21, 21, 8, 12)),
    ],
)
def test_wrong_voices_cost_character_by_character(candidate, counts):
    v = voice_accuracy(REF, dumps(candidate), excerpt=SOURCE)
    assert (v.narration_right, v.narration_total, v.quote_right, v.quote_total) == counts


def test_adversarial_scripts_on_a_short_excerpt():
    assert voice_accuracy(REF, dumps(speech_tags(REF)), excerpt=SOURCE).overall == 0.0
    assert voice_accuracy(REF, dumps(text_fragments(REF)), excerpt=SOURCE).overall == 0.0
    # every quote right, the narration read by characters: exactly the quotes' share, 12/33
    v = voice_accuracy(REF, dumps(characters_read_narration(REF)), excerpt=SOURCE)
    assert v.overall == pytest.approx(12 / 33) and v.narration == 0.0 and v.quotes == 1.0
    everyone = [dataclasses.replace(s, speaker="林青") for s in REF]
    assert voice_accuracy(REF, dumps(everyone), excerpt=SOURCE).overall == pytest.approx(4 / 33)


def test_aliases_fold_to_one_person():
    alias = dumps(speak(REF, 1, speaker="林大侠"))
    assert voice_accuracy(REF, alias, excerpt=SOURCE).quotes == pytest.approx(8 / 12)
    assert voice_accuracy(REF, alias, {"林大侠": "林青"}, SOURCE).quotes == 1.0
    # the reference may name the alias and the candidate the name: the same person either way
    ref = speak(REF, 1, speaker="林大侠")
    assert voice_accuracy(ref, REFERENCE_JSON, {"林大侠": "林青"}, SOURCE).overall == 1.0


def test_an_unreadable_or_empty_candidate_reads_nothing():
    assert voice_accuracy(REF, "我无法完成这个任务。", excerpt=SOURCE) == VoiceAccuracy(0, 21, 0, 12)
    assert voice_accuracy(REF, "[]", excerpt=SOURCE).overall == 0.0
    assert voice_accuracy([], "[]").overall is None  # nothing to read


def test_counts_pool_over_slices():
    a = voice_accuracy(REF, REFERENCE_JSON, excerpt=SOURCE)
    b = voice_accuracy(REF, dumps(merge_all(REF)), excerpt=SOURCE)
    pooled = a + b
    assert (pooled.right, pooled.total) == (33 + 21, 66)
    assert pooled.quotes == pytest.approx(12 / 24) and pooled.narration == 1.0


@pytest.mark.parametrize("name", ["鲁达道", "林青笑道", "宋江问", "那汉子说", "他寻思"])
def test_speech_tags_are_not_names(name):
    assert is_speech_tag(name)


@pytest.mark.parametrize("name", ["鲁达", "林青", "李云", "那汉子", "旁白"])
def test_names_are_not_speech_tags(name):
    assert not is_speech_tag(name)


def test_who_counts_as_a_person_of_the_excerpt():
    loose = Voices.of(SOURCE, REF, {"林大侠": "林青"})
    assert loose.voice("旁白") == "旁白"
    assert loose.voice("林大侠") == "林青" and loose.is_person("林青")
    assert not loose.is_person("林青道") and not loose.is_person("陆青崖")  # a speech tag; a name not in the excerpt
    assert loose.is_person("推门进来")  # without the novel's names, any text of the excerpt may be a name
    # With the names the novel's lexicon finds in the excerpt, fragments of text are no persons.
    strict = Voices.of(SOURCE, REF, {}, names=["林青"])
    assert strict.is_person("林青") and strict.is_person("那汉子")  # the reference's speakers are persons
    assert not strict.is_person("推门进来") and not strict.is_person("后退一步")


def test_speaker_use_flags_scripts_without_narrator_or_persons():
    voices = Voices.of(SOURCE, REF, {}, names=["林青"])
    good = SpeakerUse()
    good.add(REF, voices)
    assert good.top(2) == [("旁白", 2), ("林青", 1)] and not good.never_narrator and not good.mostly_not_persons
    bad = SpeakerUse()
    bad.add(characters_read_narration(REF), voices)
    assert bad.never_narrator and not bad.mostly_not_persons
    tags = SpeakerUse()
    tags.add(speech_tags(REF), voices)
    tags.add(text_fragments(REF), voices)
    assert tags.never_narrator and tags.mostly_not_persons and (tags.persons, tags.others) == (1, 7)
    assert not SpeakerUse().never_narrator  # nothing read, nothing to flag


def test_reference_may_be_given_as_json_text():
    assert voice_accuracy(json.dumps(REFERENCE, ensure_ascii=False), REFERENCE_JSON).overall == 1.0
