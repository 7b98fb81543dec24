"""A candidate script aligned to the reference, character by character.

Only letters, digits and CJK characters are compared: punctuation and spacing do not change how
much of the text is read. The rubric judge (:mod:`.rubric`) and voice accuracy (:mod:`.voice`)
both read scripts through this one alignment.
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher

from ..script import Segment


def compared(text: str) -> str:
    """The characters of ``text`` that are compared: letters, digits and CJK."""
    return "".join(ch for ch in text if ch.isalnum())


@dataclass
class Alignment:
    """The candidate's segments aligned to the reference's, character by character."""

    reference: list[Segment]
    candidate: list[Segment]
    blocks: list[tuple[int, int, int]]  # matching blocks (candidate pos, reference pos, size)
    overlap: list[dict[int, int]]  # per reference segment: candidate segment -> characters shared
    lengths: list[int]  # compared characters of each reference segment
    cand_text: str
    ref_text: str


def align(reference: list[Segment], candidate: list[Segment]) -> Alignment:
    """Align ``candidate`` to ``reference`` on their compared characters."""
    cand_text, cand_owner = joined(candidate)
    ref_text, ref_owner = joined(reference)
    found = blocks(cand_text, ref_text)
    overlap: list[dict[int, int]] = [{} for _ in reference]
    for a, b, size in found:
        for k in range(size):
            row = overlap[ref_owner[b + k]]
            c = cand_owner[a + k]
            row[c] = row.get(c, 0) + 1
    lengths = [len(compared(s.content)) for s in reference]
    return Alignment(reference, candidate, found, overlap, lengths, cand_text, ref_text)


def joined(segments: list[Segment]) -> tuple[str, list[int]]:
    """The compared characters of all contents in order, and the segment index owning each."""
    parts, owner = [], []
    for i, seg in enumerate(segments):
        text = compared(seg.content)
        parts.append(text)
        owner.extend([i] * len(text))
    return "".join(parts), owner


def blocks(a: str, b: str) -> list[tuple[int, int, int]]:
    """Matching blocks of ``a`` in ``b`` (position in a, position in b, size)."""
    # autojunk would treat any character seen in >1% of a 200+ character text as noise: wrong for Chinese.
    return SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()[:-1]


def matched(found) -> int:
    """Characters covered by matching blocks."""
    return sum(size for _, _, size in found)
