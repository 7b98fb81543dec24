"""How right the reference scripts' speakers are, against a hand-labelled speaker key of the corpus.

A speaker key (``<corpus stem>.speakers.json`` beside the corpus; ``corpus/story.speakers.json``
for the bundled story) lists every quote of the corpus: the offset of its opening mark in the text
as :func:`audiobook_rl.corpus.read_text` gives it, its first characters (``head``), the names that
are right for its speaker (the first is the one a reference uses, the others are the same person)
and a note where it is not obvious; ``"speaker": null`` leaves a quote unscored. ``story.sha256``
is the text's checksum, so a key is never applied to another version of the corpus.

:func:`check_references` scores a run's labels (results/labels.jsonl: excerpts with their offsets
in the corpus and their scripts) against it: per quote whether its speaker is one of the right
names, and the voice accuracy (:func:`.voice.voice_accuracy`) of each script against the same script
with every keyed quote read by its right person. The quote helpers here are also those of
``bench/check_labeler.py``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..errors import UserError
from ..script import NARRATOR, SCENE_BREAK, Segment, is_read, reading_text
from .voice import VoiceAccuracy, as_segments, voice_accuracy

KEY_SUFFIX = ".speakers.json"


def key_path(corpus: str | Path) -> Path:
    """Where the speaker key of ``corpus`` sits: beside it, ``<stem>.speakers.json``."""
    corpus = Path(corpus)
    return corpus.with_name(corpus.stem + KEY_SUFFIX)


def quote_layout(text: str) -> tuple[list[int], list[int | None]]:
    """The offset in ``text`` of each quote's opening “ (quotes inside a quote belong to it), and for
    each character read aloud (see ``reading_text``) the number of the quote it lies in, or None."""
    starts: list[int] = []
    owner: list[int | None] = []
    depth = 0
    offset = 0
    for line in text.split("\n"):
        if not SCENE_BREAK.match(line):
            for col, ch in enumerate(line):
                if ch == "“":
                    if depth == 0:
                        starts.append(offset + col)
                    depth += 1
                elif ch == "”":
                    depth = max(0, depth - 1)
                elif is_read(ch):
                    owner.append(len(starts) - 1 if depth > 0 else None)
        offset += len(line) + 1
    return starts, owner


def quote_mask(text: str) -> list[bool]:
    """For each character read aloud (see ``reading_text``): True when it lies inside “…”."""
    return [q is not None for q in quote_layout(text)[1]]


def segments_by_quote(text: str, script: list[Segment]) -> list[list[Segment]] | None:
    """Per quote of ``text`` (in order), the segments of ``script`` that read it; None when a
    segment mixes quoted and unquoted text, a segment outside quotes is not narration, or the script
    does not read the whole text."""
    starts, owner = quote_layout(text)
    quotes: list[list[Segment]] = [[] for _ in starts]
    pos = 0
    for seg in script:
        n = len(reading_text(seg.content))
        inside = [q is not None for q in owner[pos : pos + n]]
        if not inside or len(set(inside)) != 1 or (not inside[0] and seg.speaker != NARRATOR):
            return None
        if inside[0]:
            quotes[owner[pos]].append(seg)
        pos += n
    return quotes if pos == len(owner) else None


def quoted_segments(text: str, script) -> list | None:
    """The segments inside quote marks, in order; None when a segment mixes quoted and unquoted
    text or a segment outside quotes is not narration."""
    quotes = segments_by_quote(text, script)
    return None if quotes is None else [seg for segs in quotes for seg in segs]


def reference_script(script, quotes, labels):
    """The labeler's segments with each labelled quote read by its first right name, and the
    excerpt's aliases that fold the other right names into it."""
    chosen = {id(seg): label["speaker"] for seg, label in zip(quotes, labels) if label["speaker"]}
    firsts = {names[0] for names in chosen.values()}
    aliases = {alt: names[0] for names in chosen.values() for alt in names[1:] if alt not in firsts}
    reference = [replace(seg, speaker=chosen[id(seg)][0]) if id(seg) in chosen else seg for seg in script]
    # A quote nobody says (an inscription) is narration in the reference.
    reference = [replace(seg, speaker=NARRATOR) if seg.speaker == NARRATOR else seg for seg in reference]
    return reference, aliases


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class SpeakerKey:
    """A speaker key: its file, the checksum of the text it was made on, and its quotes by offset."""

    path: str
    sha256: str
    quotes: dict[int, dict]


def load_key(path: str | Path) -> SpeakerKey:
    """Read a speaker key (see the module docstring)."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
        return SpeakerKey(str(path), doc["story"]["sha256"], {q["offset"]: q for q in doc["quotes"]})
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise UserError(f"{path}: not a readable speaker key ({err}); fix it or move it away from the corpus") from err


@dataclass(frozen=True)
class WrongQuote:
    offset: int  # of the quote's opening mark in the corpus
    head: str  # its first characters
    labelled: str  # the reference's speaker (several, joined by ／, when its segments disagree)
    right: list[str]


@dataclass
class ReferenceCheck:
    """How right a run's references are on the quotes a speaker key covers."""

    key: str
    backend: str = ""
    model: str = ""
    excerpts: int = 0  # excerpts scored
    unscored_excerpts: int = 0  # scripts that do not split narration from quotes (or unreadable): not scored
    elsewhere: int = 0  # records whose text is not the corpus's at their offsets: not scored
    quotes: int = 0  # quotes scored
    right: int = 0
    not_in_key: int = 0  # quotes of the excerpts that the key lacks (or leaves unscored)
    voices: VoiceAccuracy = field(default_factory=VoiceAccuracy)
    wrong: list[WrongQuote] = field(default_factory=list)

    @property
    def accuracy(self) -> float | None:
        return self.right / self.quotes if self.quotes else None


def check_labels(records: list[dict], key: SpeakerKey, corpus_text: str | None = None) -> ReferenceCheck:
    """Score label records (results/labels.jsonl rows: ``text``, ``start``, ``script``, ``aliases``,
    ``backend``, ``model``) against ``key``, the key of the corpus they were cut from; with
    ``corpus_text``, a record whose text is not the corpus's at its offsets is left out."""
    check = ReferenceCheck(key.path)
    for record in records:
        check.backend = check.backend or record.get("backend", "")
        check.model = check.model or record.get("model", "")
        text, start = record.get("text"), record.get("start")
        if not isinstance(text, str) or not isinstance(start, int) or (
                corpus_text is not None and corpus_text[start : start + len(text)] != text):
            check.elsewhere += 1
            continue
        try:
            script = as_segments(record.get("script"))
        except (ValueError, KeyError, TypeError):
            script = None
        quotes = segments_by_quote(text, script) if script else None
        if quotes is None:
            check.unscored_excerpts += 1
            continue
        check.excerpts += 1
        starts = quote_layout(text)[0]
        flat, labels = [], []
        for at, segs in zip(starts, quotes):
            entry = key.quotes.get(start + at)
            names = entry["speaker"] if entry and _same_quote(text[at + 1 :], entry["head"]) else None
            flat += segs
            labels += [{"speaker": names}] * len(segs)
            if not names:
                check.not_in_key += 1
                continue
            if not segs:  # an empty quote (“”): nothing to read
                continue
            check.quotes += 1
            said = list(dict.fromkeys(seg.speaker for seg in segs))
            if all(name in names for name in said):
                check.right += 1
            else:
                said_text = "".join(seg.content for seg in segs)
                head = said_text if len(said_text) <= 12 else said_text[:12] + "…"
                check.wrong.append(WrongQuote(start + at, head, "／".join(said), list(names)))
        reference, aliases = reference_script(script, flat, labels)
        check.voices += voice_accuracy(reference, script, {**(record.get("aliases") or {}), **aliases}, text)
    return check


def _same_quote(rest: str, head: str) -> bool:
    """Whether the quote that opens before ``rest`` starts as the key's ``head`` (an excerpt may end
    inside it)."""
    seen = reading_text(rest)[: len(reading_text(head))]
    return bool(seen) and reading_text(head).startswith(seen)


def check_references(records: list[dict], corpus_text: str, key_file: str | Path | None) -> ReferenceCheck | str:
    """The check of ``records`` against the speaker key ``key_file`` of the corpus ``corpus_text``,
    or one sentence saying why there is none (no key, or a key made on another text)."""
    if key_file is None or not Path(key_file).is_file():
        return "No speaker key of the corpus was found (a <corpus name>.speakers.json beside it), so the references' speakers were not checked."
    key = load_key(key_file)
    if key.sha256 != text_sha256(corpus_text):
        return (f"The speaker key {Path(key_file).name} was made on another version of the corpus (its sha256 differs), "
                "so the references' speakers were not checked.")
    return check_labels(records, key, corpus_text)
