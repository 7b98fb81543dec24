"""Voice accuracy: who reads each character of the excerpt.

An audiobook script exists to say who reads each piece of text: the narrator (旁白) or a person.
For every compared character of the reference (the excerpt as the reference reads it), the voice
that reads it in the candidate is set against the reference's voice:

- narration must be read by 旁白 and a quote by the person the reference names, aliases folded to
  one person; narration counts as much as dialogue, character for character;
- a speaker that is a speech tag (``鲁达道``, ``林青笑道``) or a name that occurs neither in the
  excerpt nor in the aliases is a wrong voice, whoever it was meant to be;
- text the candidate leaves out is read by no one: a wrong voice too.

The result is reported as the overall share of characters read by the right voice and as the
narration and quote shares (:class:`VoiceAccuracy`). :func:`voice_accuracy` is the one definition:
the rubric judge's speaker dimension, the report and the benchmarks use it. :class:`SpeakerUse`
counts the names a set of scripts uses, for the report's list of speakers and its red flags.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field

from ..script import NARRATOR, Segment, from_dicts, parse_script
from .alignment import Alignment, align

WRONG = ""  # the voice of a speaker that is no person of the excerpt

# A speaker ending in a verb of speaking is the narration's tag read as a name (鲁达道, 林青笑道,
# 宋江问道, 那汉子说): a wrong voice unless the reference itself names that person so.
SPEECH_TAG = re.compile(r".(?:道|说|曰|问|答|叫|喝|骂|嚷|喊|叹|笑|想|寻思)$")


def is_speech_tag(name: str) -> bool:
    """Whether ``name`` ends in a verb of speaking (``鲁达道``): the tag of a quote, not a person."""
    return bool(SPEECH_TAG.search(name))


@dataclass(frozen=True)
class Voices:
    """Who may read one excerpt: the narrator and the persons of the excerpt.

    A name is read as the person it stands for (aliases folded) when the reference names that
    person, or, with ``names`` (the persons a lexicon of the novel finds in the excerpt), when it is
    one of them; without ``names``, when it occurs in the excerpt or among the aliases and is no
    speech tag. Anything else is :data:`WRONG`.
    """

    excerpt: str
    aliases: dict[str, str]
    persons: frozenset[str]  # canonical names that are persons for sure
    strict: bool  # names were given: only known persons count

    @classmethod
    def of(cls, excerpt: str, reference: list[Segment], aliases: dict[str, str] | None = None,
           names: list[str] | None = None) -> "Voices":
        aliases = dict(aliases or {})
        canon = lambda n: aliases.get(n, n)  # noqa: E731
        persons = {canon(s.speaker) for s in reference if not s.is_narration}
        persons |= {canon(n) for n in names or ()}
        return cls(excerpt, aliases, frozenset(persons), names is not None)

    def canon(self, name: str) -> str:
        return self.aliases.get(name, name)

    def voice(self, speaker: str) -> str:
        """The voice a segment's speaker gives: :data:`NARRATOR`, a canonical person, or :data:`WRONG`."""
        if speaker == NARRATOR:
            return NARRATOR
        person = self.canon(speaker)
        if person in self.persons:
            return person
        if self.strict or is_speech_tag(speaker):
            return WRONG
        known = speaker in self.excerpt or speaker in self.aliases or speaker in self.aliases.values()
        return person if known else WRONG

    def is_person(self, speaker: str) -> bool:
        return self.voice(speaker) not in (NARRATOR, WRONG)


@dataclass(frozen=True)
class VoiceAccuracy:
    """Characters read by the right voice, of the narration and of the quotes. Counts add up
    (``a + b``), so a checkpoint's accuracy pools its slices character by character."""

    narration_right: int = 0
    narration_total: int = 0
    quote_right: int = 0
    quote_total: int = 0

    @property
    def right(self) -> int:
        return self.narration_right + self.quote_right

    @property
    def total(self) -> int:
        return self.narration_total + self.quote_total

    @property
    def overall(self) -> float | None:
        """Share of the excerpt's characters read by the right voice (None for an empty reference)."""
        return self.right / self.total if self.total else None

    @property
    def narration(self) -> float | None:
        """Share of the narration read by the narrator."""
        return self.narration_right / self.narration_total if self.narration_total else None

    @property
    def quotes(self) -> float | None:
        """Share of the quotes' characters read by the right person."""
        return self.quote_right / self.quote_total if self.quote_total else None

    def __add__(self, other: "VoiceAccuracy") -> "VoiceAccuracy":
        return VoiceAccuracy(
            self.narration_right + other.narration_right,
            self.narration_total + other.narration_total,
            self.quote_right + other.quote_right,
            self.quote_total + other.quote_total,
        )

    def metrics(self, prefix: str) -> dict:
        """Metrics-row fields: ``{prefix}_voice`` and its ``_narration`` and ``_quotes`` shares."""
        return {f"{prefix}_voice": self.overall, f"{prefix}_voice_narration": self.narration,
                f"{prefix}_voice_quotes": self.quotes}

    def reason(self) -> str:
        """One phrase for the judge's reasons."""
        parts = [f"{self.right}/{self.total} characters read by the right voice"]
        if self.narration_total:
            parts.append(f"narration by the narrator {self.narration_right}/{self.narration_total}")
        if self.quote_total:
            parts.append(f"quotes by the right person {self.quote_right}/{self.quote_total}")
        return "; ".join(parts)


def aligned_voices(al: Alignment, voices: Voices) -> VoiceAccuracy:
    """Voice accuracy of an aligned candidate: per reference character, the right voice or not."""
    counts = [0, 0, 0, 0]  # narration right/total, quote right/total
    for r, ref in enumerate(al.reference):
        want = NARRATOR if ref.is_narration else voices.canon(ref.speaker)
        right = sum(n for c, n in al.overlap[r].items() if voices.voice(al.candidate[c].speaker) == want)
        k = 0 if ref.is_narration else 2
        counts[k] += right
        counts[k + 1] += al.lengths[r]
    return VoiceAccuracy(*counts)


def voice_accuracy(reference, candidate, aliases: dict[str, str] | None = None, excerpt: str | None = None,
                   names: list[str] | None = None) -> VoiceAccuracy:
    """Voice accuracy of ``candidate`` (raw model output, or segments) against ``reference``
    (segments, dicts or script JSON) on ``excerpt`` (default: the reference's text); an unreadable
    candidate reads nothing right. ``names`` makes only known persons count (see :class:`Voices`)."""
    reference = as_segments(reference)
    parsed = parse_script(candidate if isinstance(candidate, str) else [_as_dict(s) for s in candidate])
    segments = parsed.segments if parsed.status != "invalid" else []
    text = excerpt if excerpt is not None else "".join(s.content for s in reference)
    return aligned_voices(align(reference, segments), Voices.of(text, reference, aliases, names))


def task_voices(finals: list[str], tasks) -> VoiceAccuracy:
    """Voice accuracy of raw final scripts, pooled over their tasks (each with ``reference``,
    ``aliases`` and ``text``, as :class:`audiobook_rl.dataset.Task`)."""
    total = VoiceAccuracy()
    for final, task in zip(finals, tasks):
        total += voice_accuracy(task.reference, final, task.aliases, task.text)
    return total


def as_segments(script) -> list[Segment]:
    """A trusted script given as segments, dicts or script JSON text (the parquet ground_truth)."""
    if isinstance(script, str):
        script = json.loads(script)
    return [s if isinstance(s, Segment) else from_dicts([s])[0] for s in script]


def _as_dict(segment) -> dict:
    return segment.to_dict() if isinstance(segment, Segment) else segment


@dataclass
class SpeakerUse:
    """The speaker names a set of scripts uses: segments per name, and how many of the non-narrator
    segments name a person of their excerpt (:meth:`Voices.is_person`)."""

    counts: Counter = field(default_factory=Counter)
    scripts: int = 0  # readable scripts counted
    narrator: int = 0  # segments read by the narrator
    persons: int = 0  # segments read by a person of their excerpt
    others: int = 0  # segments whose speaker is no person of its excerpt (speech tags, fragments, invented names)

    def add(self, segments: list[Segment], voices: Voices) -> None:
        self.scripts += 1
        for seg in segments:
            self.counts[seg.speaker] += 1
            if seg.is_narration:
                self.narrator += 1
            elif voices.is_person(seg.speaker):
                self.persons += 1
            else:
                self.others += 1

    def top(self, k: int = 5) -> list[tuple[str, int]]:
        """The ``k`` most used names with their segment counts (ties: first seen first)."""
        return self.counts.most_common(k)

    @property
    def never_narrator(self) -> bool:
        """Scripts were read, with segments, and not one of them is the narrator's."""
        return sum(self.counts.values()) > 0 and self.narrator == 0

    @property
    def mostly_not_persons(self) -> bool:
        """More of the characters' segments name no person of their excerpt than name one."""
        return self.others > self.persons
