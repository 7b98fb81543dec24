"""Realistic references (the bundled story, rule-labeled) and the ways tests damage a script."""

from __future__ import annotations

import dataclasses
import json
import re

from audiobook_rl.corpus import read_text, slice_text
from audiobook_rl.labeling.lexicon import build_lexicon
from audiobook_rl.labeling.rules import RuleLabeler
from audiobook_rl.script import NARRATOR, Segment
from helpers import STORY


def story_cases(n: int = 20, seed: int = 2024) -> list[dict]:
    """``n`` excerpts of the bundled story with rule-labeled references: {id, text, start, end, script, aliases}."""
    text, _ = read_text(STORY)
    lexicon = build_lexicon(text)
    items = slice_text(text, n=n, min_chars=100, max_chars=200, seed=seed)
    scripts = RuleLabeler(lexicon).label(items)
    return [
        {"id": s.id, "text": s.text, "start": s.start, "end": s.end, "script": script, "aliases": lexicon.aliases}
        for s, script in zip(items, scripts)
    ]


def dumps(script: list[Segment]) -> str:
    return json.dumps([s.to_dict() for s in script], ensure_ascii=False)


def drop_segment(script: list[Segment]) -> list[Segment]:
    """Lose the longest segment (the omission a model makes most visibly)."""
    i = max(range(len(script)), key=lambda k: len(script[k].content))
    return script[:i] + script[i + 1 :]


def swap_speaker(script: list[Segment]) -> list[Segment]:
    """Give the first line of dialogue to the narrator (or the first narration to a character)."""
    out = list(script)
    for i, s in enumerate(out):
        if s.speaker != NARRATOR:
            out[i] = dataclasses.replace(s, speaker=NARRATOR)
            return out
    out[0] = dataclasses.replace(out[0], speaker="某人")
    return out


def flatten_tones(script: list[Segment]) -> list[Segment]:
    """Every segment calm at intensity 1, whatever the text says."""
    return [dataclasses.replace(s, tone="平静", intensity=1) for s in script]


def merge_all(script: list[Segment]) -> list[Segment]:
    """One narration segment holding all the text."""
    return [Segment(NARRATOR, "".join(s.content for s in script), "平静", 1, 500)]


def half_text(script: list[Segment]) -> list[Segment]:
    """Stop halfway: the first half of the segments (at least one)."""
    return script[: max(1, len(script) // 2)]


def stub(script: list[Segment]) -> list[Segment]:
    """What a collapsed policy writes for any excerpt: a speech tag and one invented line, spoken by
    the script's first character (or a name of the bundled story)."""
    name = next((s.speaker for s in script if s.speaker != NARRATOR), "陆青崖")
    return [Segment(NARRATOR, f"{name}道：", "平静", 1, 300), Segment(name, "今晚的酒，我请了。", "喜悦", 3, 800)]


def copied_sentences(text: str) -> list[list[Segment]]:
    """One script per sentence of ``text``: that sentence alone, as one narration segment."""
    found = re.findall(r"[^。！？\n]+[。！？]+[”」]?", text)
    return [[Segment(NARRATOR, s.strip("“”「」 "), "平静", 1, 300)] for s in found if len(s.strip("“”「」 ")) > 1]


def wrong_speakers(script: list[Segment], aliases: dict | None = None) -> list[Segment]:
    """Every quote given to another person: the next character of the script (aliases of one person
    count as one), or an invented name when the script has a single speaker."""
    canon = lambda name: (aliases or {}).get(name, name)  # noqa: E731
    people = list(dict.fromkeys(canon(s.speaker) for s in script if s.speaker != NARRATOR))
    other = {p: people[(i + 1) % len(people)] if len(people) > 1 else "某甲" for i, p in enumerate(people)}
    return [s if s.speaker == NARRATOR else dataclasses.replace(s, speaker=other[canon(s.speaker)]) for s in script]


def break_json(text: str) -> str:
    """Cut the JSON off before its end, as a model that ran out of tokens does."""
    return text[: len(text) * 2 // 3]


def one_voice(script: list[Segment], aliases: dict | None = None) -> list[Segment]:
    """Everything read by one character: the one who speaks most in the script (or an invented name
    when nobody speaks)."""
    canon = lambda name: (aliases or {}).get(name, name)  # noqa: E731
    share: dict[str, int] = {}
    for s in script:
        if s.speaker != NARRATOR:
            share[canon(s.speaker)] = share.get(canon(s.speaker), 0) + len(s.content)
    name = max(share, key=share.get) if share else "某甲"
    return [dataclasses.replace(s, speaker=name) for s in script]


def speech_tags(script: list[Segment]) -> list[Segment]:
    """Every segment named by a speech tag, as a policy that copies ``X道`` from the text does."""
    name = next((s.speaker for s in script if s.speaker != NARRATOR), "某甲")
    return [dataclasses.replace(s, speaker=f"{name}道") for s in script]


def text_fragments(script: list[Segment]) -> list[Segment]:
    """Every speaker a fragment of the text: the first characters of the segment's own content."""
    return [dataclasses.replace(s, speaker=s.content[:3]) for s in script]


def characters_read_narration(script: list[Segment], aliases: dict | None = None) -> list[Segment]:
    """Every quote right, and the narration read by a character (the next quote's speaker, or the
    last one's), as a policy that never uses the narrator does."""
    speakers = [s.speaker for s in script if s.speaker != NARRATOR]
    if not speakers:
        return [dataclasses.replace(s, speaker="某甲") for s in script]
    out, upcoming = [], list(speakers)
    for s in script:
        if s.speaker == NARRATOR:
            out.append(dataclasses.replace(s, speaker=upcoming[0] if upcoming else speakers[-1]))
        else:
            out.append(s)
            upcoming.pop(0)
    return out
