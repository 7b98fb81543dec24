"""The rule-based labeler: the embedded backend of ``label_slices``.

It reads an excerpt paragraph by paragraph, splits quotes from narration, and decides:

- **speaker** of a quote: the subject of its tag clause (``林青笑道：``), skipping listeners
  (``那汉子对林青道`` → 那汉子) and carrying the subject over from an earlier clause of the same
  sentence (``林青站起身来，笑道：`` → 林青); a tag after the quote (``“…”林青道。``); for an
  untagged quote, the subject of the narration just before it, or else turn-taking between the last
  two speakers; pronouns resolve to the last named subject;
- **tone and intensity** from the verb of the tag (喝道 → 愤怒) and the punctuation (！, ？, ……);
- **delay** from the punctuation that ends a segment, longer at paragraph ends and scene breaks.

Contents are copied from the text, so joined they give back the excerpt (quote marks and whitespace
aside).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..script import NARRATOR, SCENE_BREAK, Segment
from .lexicon import (
    DESCRIPTOR_OPENERS,
    LISTENER_MARKERS,
    PRONOUNS,
    Lexicon,
    build_lexicon,
    strip_lead,
    subject_candidate,
)

UNKNOWN_SPEAKER = "某人"
_SENTENCE = re.compile(r".*?(?:[。！？!?]+|…+)[”’）)]*|.+$", re.S)
_TAG_END = re.compile(r"(?:道|说|问|曰|叫|喝|骂|嚷|喊|想|答|应)?[：:]$|(?:道|说|问|曰)[，,]$|(?:道|说|问|曰)$")
_VERB_ONLY = re.compile(r"^[\u4e00-\u9fff]{0,3}?(?:道|说|问|曰)[：:，,]?$")
_AFTER_TAG = re.compile(r"^([^。！？!?“”，,]{1,14}?(?:道|说|问|曰))[。，,！!]")

# (pattern in the tag clause, tone, intensity): the first match wins.
VERB_TONES = (
    (r"冷笑|冷冷|冷哼|嗤|哂|不屑", "轻蔑", 3),
    (r"怒|喝|厉声|骂|吼|咆哮", "愤怒", 4),
    (r"哭|哽咽|泣|悲|惨然|黯然", "悲伤", 3),
    (r"叹|苦笑|无奈", "无奈", 2),
    (r"颤声|发抖|害怕|惊恐|战战", "恐惧", 3),
    (r"惊|失声|愕然|诧异", "惊讶", 3),
    (r"急|忙|大叫|叫道|喊|嚷", "焦急", 4),
    (r"寻思|暗想|心想|想道|沉吟|思忖", "沉思", 2),
    (r"得意|傲然|哈哈", "得意", 3),
    (r"柔声|轻声|温言|微笑|柔", "温柔", 2),
    (r"笑|喜", "喜悦", 3),
    (r"低声|压低|悄声", "紧张", 2),
    (r"沉声|正色|肃然|郑重", "严肃", 3),
    (r"问", "疑惑", 2),
)
_TENSE_NARRATION = re.compile(r"杀|刀光|剑光|血|惨叫|厮杀|劈|砍|刺|扑|猛|危")


@dataclass
class _State:
    recent: list[str] = field(default_factory=list)  # distinct quote speakers, most recent last
    last_subject: str | None = None

    def spoke(self, speaker: str) -> None:
        if speaker == UNKNOWN_SPEAKER:
            return
        if speaker in self.recent:
            self.recent.remove(speaker)
        self.recent.append(speaker)
        self.last_subject = speaker

    def other_speaker(self) -> str | None:
        return self.recent[-2] if len(self.recent) >= 2 else None


class RuleLabeler:
    """Deterministic labeler; ``lexicon`` holds the names found in the whole novel, if known."""

    backend = "rules"
    model = "rules-v1"

    def __init__(self, lexicon: Lexicon | None = None):
        self.lexicon = lexicon

    def label(self, slices, progress=None) -> list[list[Segment]]:
        out = []
        for item in slices:
            out.append(self.label_text(item.text))
            if progress:
                progress(1)
        return out

    def label_text(self, text: str) -> list[Segment]:
        lexicon = self.lexicon or build_lexicon(text, min_count=1)
        state = _State()
        paragraphs = [p for p in text.split("\n") if p.strip()]
        segments: list[Segment] = []
        for k, paragraph in enumerate(paragraphs):
            if SCENE_BREAK.match(paragraph):
                if segments:
                    segments[-1] = _with_delay(segments[-1], 1500)
                state = _State()  # a new scene: earlier speakers are gone
                continue
            part = _label_paragraph(paragraph.strip(), lexicon, state)
            if part:
                part[-1] = _with_delay(part[-1], max(part[-1].delay, 800))
            segments.extend(part)
        return segments


def _with_delay(segment: Segment, delay: int) -> Segment:
    return Segment(segment.speaker, segment.content, segment.tone, segment.intensity, delay)


def _pieces(paragraph: str) -> list[tuple[str, str]]:
    """Split a paragraph into ('narration', text) and ('quote', inner text) pieces."""
    pieces: list[tuple[str, str]] = []
    i = 0
    while i < len(paragraph):
        start = paragraph.find("“", i)
        if start == -1:
            pieces.append(("narration", paragraph[i:]))
            break
        if start > i:
            pieces.append(("narration", paragraph[i:start]))
        end = _closing_quote(paragraph, start)
        pieces.append(("quote", paragraph[start + 1 : end]))
        i = end + 1
    return [(kind, text) for kind, text in pieces if text.strip("”“ \t　")]


def _closing_quote(paragraph: str, start: int) -> int:
    """Index of the ” closing the quote opened at ``start`` (nested “ ” allowed); the end if none."""
    depth = 0
    for i in range(start, len(paragraph)):
        if paragraph[i] == "“":
            depth += 1
        elif paragraph[i] == "”":
            depth -= 1
            if depth == 0:
                return i
    return len(paragraph)


def _label_paragraph(paragraph: str, lexicon: Lexicon, state: _State) -> list[Segment]:
    pieces = _pieces(paragraph)
    segments: list[Segment] = []
    for k, (kind, text) in enumerate(pieces):
        if kind == "narration":
            for sentence in _SENTENCE.findall(text):
                if sentence.strip():
                    segments.append(_narration(sentence.strip("　 \t"), lexicon, state))
            continue
        before = pieces[k - 1][1] if k > 0 and pieces[k - 1][0] == "narration" else ""
        after = pieces[k + 1][1] if k + 1 < len(pieces) and pieces[k + 1][0] == "narration" else ""
        speaker, tag = _speaker(before, after, lexicon, state)
        state.spoke(speaker)
        tone, intensity = _tone(tag, text)
        segments.append(Segment(speaker, text, tone, intensity, _delay(text)))
    return segments


def _narration(sentence: str, lexicon: Lexicon, state: _State) -> Segment:
    name = _subject(sentence.split("，")[0], lexicon)
    if name and name not in PRONOUNS:
        state.last_subject = name
    tone, intensity = ("紧张", 3 if sentence.rstrip("”’").endswith("！") else 2) if _TENSE_NARRATION.search(sentence) else ("平静", 1)
    return Segment(NARRATOR, sentence, tone, intensity, _delay(sentence))


def _speaker(before: str, after: str, lexicon: Lexicon, state: _State) -> tuple[str, str]:
    """Return (speaker, tag clause) for a quote from the narration around it."""
    before = before.rstrip(" \t　")
    last_sentence = _SENTENCE.findall(before)[-1] if before.strip() else ""
    if last_sentence and _TAG_END.search(last_sentence) and not re.search(r"[。！？!?]$", last_sentence):
        name = _tag_subject(last_sentence, lexicon, state)
        return name, last_sentence
    match = _AFTER_TAG.match(after.lstrip())
    if match:
        name = _subject(match.group(1), lexicon)
        if name:
            return _resolve(name, state), match.group(1)
    if last_sentence:
        name = _subject(last_sentence.split("，")[0], lexicon)
        if name:
            return _resolve(name, state), ""
    return state.other_speaker() or UNKNOWN_SPEAKER, ""


def _tag_subject(sentence: str, lexicon: Lexicon, state: _State) -> str:
    clauses = [c for c in re.split(r"[，,；;、]", sentence.rstrip("：:，, ")) if c.strip()]
    # The verb's own clause first (林青对沈墨白道), then the sentence's subject (林青站起身来，…，笑道).
    # A name the lexicon does not know is trusted only in subject position (the first clause).
    order = [(clauses[-1], len(clauses) == 1)] + [(c, k == 0) for k, c in enumerate(clauses[:-1])] if clauses else []
    for clause, subject_position in order:
        name = _subject(clause, lexicon, allow_unknown=subject_position)
        if name:
            return _resolve(name, state)
    return state.last_subject or state.other_speaker() or UNKNOWN_SPEAKER


def _subject(clause: str, lexicon: Lexicon, allow_unknown: bool = False) -> str | None:
    """The speaker named by a clause, or a pronoun, or None."""
    clause = strip_lead(clause.strip("　 \t”’"))
    for pronoun in PRONOUNS:
        if clause.startswith(pronoun):
            return pronoun
    name = lexicon.name_at(clause, 0)
    if name:
        return name
    candidate = subject_candidate(clause)
    if candidate and candidate[0] in "那这" and lexicon.name_at(candidate, 1):
        return lexicon.name_at(candidate, 1)  # 那殷天锡 → 殷天锡
    if candidate and (candidate in lexicon.names or candidate.startswith(DESCRIPTOR_OPENERS)):
        return candidate
    if allow_unknown and candidate and _VERB_ONLY.match(clause[len(candidate) :]):
        return candidate  # a name the corpus rarely tags: 贺统军道 → 贺统军
    # A known name later in the clause that is not a listener (只听林青道 / 但听得门外林青道).
    for i in range(1, len(clause)):
        name = lexicon.name_at(clause, i)
        if name and clause[i - 1] not in LISTENER_MARKERS:
            return name
    return None


def _resolve(name: str, state: _State) -> str:
    if name in PRONOUNS:
        return state.last_subject or state.other_speaker() or UNKNOWN_SPEAKER
    return name


def _tone(tag: str, content: str) -> tuple[str, int]:
    tone, intensity = "平静", 2
    for pattern, verb_tone, verb_intensity in VERB_TONES:
        if re.search(pattern, tag):
            tone, intensity = verb_tone, verb_intensity
            break
    else:
        if "？" in content or "?" in content:
            tone, intensity = "疑惑", 2
        elif "！" in content or "!" in content:
            tone, intensity = "焦急", 3
    bangs = content.count("！") + content.count("!")
    if bangs >= 2 or "！！" in content:
        intensity += 1
    elif bangs == 0 and tone in ("愤怒", "焦急"):
        intensity -= 1
    if "……" in content and tone in ("悲伤", "无奈", "恐惧"):
        intensity += 1
    return tone, max(1, min(5, intensity))


def _delay(text: str) -> int:
    text = text.rstrip("”’）) \t　")
    if text.endswith(("……", "…", "——")):
        return 700
    if text.endswith(("！", "？", "!", "?")):
        return 500
    if text.endswith(("。", ".")):
        return 400
    if text.endswith(("：", ":")):
        return 200
    return 300
