"""The rubric judge: the embedded, deterministic judge and the reward of local training.

Each dimension of SPEC §4 is computed from the parsed candidate, the source and the reference:

- **format**: the parser's verdict — a bare array scores 1, an array read after repairs (code
  fence, prose, ``{"segments": …}``) 0.8 — times the share of entries that pass the schema.
  Unparseable output scores 0 on every dimension (there is nothing to align).
- **completeness**: character alignment of the joined contents against the source: F1 of coverage
  (source characters present) and precision (output characters that are in the source), so both
  omissions and invented text cost. The text a reference reads counts as well as the source
  (the better of the two is taken), so a perfect copy of any reference scores 1.
- **speaker** and **emotion**: every reference segment is aligned, character by character, to the
  candidate segments holding its words; each such character earns the agreement of the two
  segments, and reference segments count equally (a short line of dialogue weighs as much as a long
  paragraph of narration). Speaker agreement: same person 1 (aliases of the reference are the same
  person), both narration or both dialogue 0.5, else 0. Emotion agreement: 0.7 × tone (same tone 1,
  same broad family 0.5) + 0.3 × intensity closeness (1 − |Δ| / 4).
- **segmentation**: 0.6 × F1 of segment boundaries (candidate boundaries mapped into the reference
  through the alignment) + 0.4 × delay closeness at the shared boundaries (the reference carries the
  longer pauses at paragraph and scene breaks; delay ranges are checked under format).

Only letters, digits and CJK characters are compared: punctuation and spacing do not change how
much of the text is read. Text inside the source or candidate is never interpreted, so an instruction
hidden in it ("给满分") is just more characters: invented ones in a candidate cost completeness.
"""

from __future__ import annotations

import json
from difflib import SequenceMatcher

from ..script import FAMILY_OF, NARRATOR, Segment, from_dicts, parse_script
from . import DIMENSIONS, SEED_WEIGHTS, Verdict, case_args, weighted

REPAIRED_FORMAT = 0.8  # a readable but not strictly valid array (fence, prose, wrapper)
TONE_SHARE = 0.7  # of the emotion score; the rest is intensity closeness
BOUNDARY_SHARE = 0.6  # of the segmentation score; the rest is delay closeness
DELAY_SCALE_MS = 300  # a delay off by max(this, the reference's delay) or more earns 0


class RubricJudge:
    """Deterministic judge of SPEC §4; ``weights`` maps the five dimensions to their weights."""

    backend = "rubric"
    model = "rubric-v1"

    def __init__(self, weights: dict[str, float] | None = None):
        self.weights = dict(weights or SEED_WEIGHTS)

    def score(self, source: str, reference, candidate, aliases: dict | str | None = None) -> Verdict:
        """Score one candidate (raw model output, or a list of segments) against the reference."""
        reference = _as_segments(reference)
        aliases = json.loads(aliases) if isinstance(aliases, str) else (aliases or {})
        scores, reasons = rubric_scores(source, reference, candidate, aliases)
        return Verdict(
            overall=round(weighted(scores, self.weights), 6),
            scores=scores,
            reasons=reasons,
            backend=self.backend,
            model=self.model,
        )

    def score_many(self, cases) -> list[Verdict]:
        """Score a list of cases: dicts with source/reference/candidate[/aliases] keys or tuples."""
        return [self.score(*case_args(case)) for case in cases]


def _as_segments(reference) -> list[Segment]:
    """A reference given as segments, dicts or script JSON text (the parquet ground_truth)."""
    if isinstance(reference, str):
        reference = json.loads(reference)
    return [s if isinstance(s, Segment) else from_dicts([s])[0] for s in reference]


def _chars(text: str) -> str:
    return "".join(ch for ch in text if ch.isalnum())


def rubric_scores(
    source: str, reference: list[Segment], candidate, aliases: dict[str, str]
) -> tuple[dict[str, float], dict[str, str]]:
    """The five dimension scores in [0, 1] and a short reason for each."""
    if isinstance(candidate, list):
        candidate = json.dumps([s.to_dict() if isinstance(s, Segment) else s for s in candidate], ensure_ascii=False)
    parsed = parse_script(candidate)
    if parsed.status == "invalid" or not parsed.segments:
        why = "; ".join(parsed.errors[:3]) or "no valid segment"
        scores = dict.fromkeys(DIMENSIONS, 0.0)
        reasons = dict.fromkeys(DIMENSIONS, "nothing to compare: the output has no valid segment")
        reasons["format"] = f"unreadable output: {why}" if parsed.status == "invalid" else f"no valid segment: {why}"
        return scores, reasons

    cand = parsed.segments
    scores: dict[str, float] = {}
    reasons: dict[str, str] = {}

    base = 1.0 if parsed.status == "strict" else REPAIRED_FORMAT
    valid = len(cand) / parsed.items
    scores["format"] = base * valid
    reasons["format"] = (
        ("strict JSON array" if parsed.status == "strict" else f"readable after repairs: {', '.join(parsed.repairs)}")
        + f"; {len(cand)}/{parsed.items} segments valid"
        + (f" ({parsed.errors[0]})" if parsed.errors else "")
    )

    cand_text, cand_owner = _joined(cand)
    ref_text, ref_owner = _joined(reference)
    src_text = _chars(source)
    ref_blocks = _blocks(cand_text, ref_text)

    # Completeness against the source, or against the reference's reading of it (whichever is better).
    src_blocks = ref_blocks if src_text == ref_text else _blocks(cand_text, src_text)
    best = max(
        (_f1(_matched(src_blocks), len(cand_text), len(src_text)), "source", src_blocks, src_text),
        (_f1(_matched(ref_blocks), len(cand_text), len(ref_text)), "reference", ref_blocks, ref_text),
        key=lambda t: t[0],
    )
    f1, against, blocks, target = best
    hit = _matched(blocks)
    scores["completeness"] = f1
    reasons["completeness"] = (
        f"covers {hit}/{len(target)} characters of the {against}; "
        f"{len(cand_text) - hit} of {len(cand_text)} output characters not in it"
    )

    # Per reference segment: which candidate segments hold its characters, and how many.
    overlap = _overlap(ref_blocks, cand_owner, ref_owner, len(reference))
    canon = lambda name: aliases.get(name, name)  # noqa: E731
    speaker = _aligned(overlap, reference, cand, lambda r, c: _speaker_agreement(r, c, canon))
    emotion = _aligned(overlap, reference, cand, _emotion_agreement)
    scores["speaker"], reasons["speaker"] = speaker[0], _aligned_reason(speaker, "speaker")
    scores["emotion"], reasons["emotion"] = emotion[0], _aligned_reason(emotion, "tone/intensity")

    scores["segmentation"], reasons["segmentation"] = _segmentation(cand, reference, ref_blocks)
    return {d: round(min(1.0, max(0.0, scores[d])), 6) for d in DIMENSIONS}, reasons


def text_f1(output: str, target: str) -> float:
    """Character-alignment F1 of ``output`` against ``target`` (letters, digits and CJK only)."""
    a, b = _chars(output), _chars(target)
    return _f1(_matched(_blocks(a, b)), len(a), len(b))


def _joined(segments: list[Segment]) -> tuple[str, list[int]]:
    """The compared characters of all contents in order, and the segment index owning each."""
    parts, owner = [], []
    for i, seg in enumerate(segments):
        text = _chars(seg.content)
        parts.append(text)
        owner.extend([i] * len(text))
    return "".join(parts), owner


def _blocks(a: str, b: str) -> list[tuple[int, int, int]]:
    # autojunk would treat any character seen in >1% of a 200+ character text as noise: wrong for Chinese.
    return SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()[:-1]


def _matched(blocks) -> int:
    return sum(size for _, _, size in blocks)


def _f1(hit: int, n_out: int, n_target: int) -> float:
    if n_out == 0 or n_target == 0:
        return 1.0 if n_out == n_target else 0.0
    return 2 * hit / (n_out + n_target)


def _overlap(blocks, cand_owner, ref_owner, n_ref) -> list[dict[int, int]]:
    counts: list[dict[int, int]] = [{} for _ in range(n_ref)]
    for a, b, size in blocks:
        for k in range(size):
            row = counts[ref_owner[b + k]]
            c = cand_owner[a + k]
            row[c] = row.get(c, 0) + 1
    return counts


def _aligned(overlap, reference, cand, agreement) -> tuple[float, int, int]:
    """Mean over reference segments of the character-weighted agreement with the aligned candidates."""
    total, full, counted = 0.0, 0, 0
    for r, row in enumerate(overlap):
        length = len(_chars(reference[r].content))
        if length == 0:
            continue  # a segment of punctuation only: nothing to align
        counted += 1
        value = sum(n * agreement(reference[r], cand[c]) for c, n in row.items()) / length
        total += value
        full += value >= 0.999
    return (total / counted if counted else 1.0), full, counted


def _aligned_reason(result: tuple[float, int, int], what: str) -> str:
    _, full, counted = result
    return f"{what} agrees fully on {full}/{counted} reference segments"


def _speaker_agreement(ref: Segment, cand: Segment, canon) -> float:
    if canon(ref.speaker) == canon(cand.speaker):
        return 1.0
    return 0.5 if (ref.speaker == NARRATOR) == (cand.speaker == NARRATOR) else 0.0


def _emotion_agreement(ref: Segment, cand: Segment) -> float:
    if ref.tone == cand.tone:
        tone = 1.0
    else:
        tone = 0.5 if FAMILY_OF.get(ref.tone) == FAMILY_OF.get(cand.tone) else 0.0
    intensity = 1.0 - abs(ref.intensity - cand.intensity) / 4
    return TONE_SHARE * tone + (1 - TONE_SHARE) * intensity


def _boundaries(segments: list[Segment]) -> dict[int, int]:
    """Character position after each segment but the last → the delay after it."""
    out, pos = {}, 0
    for seg in segments[:-1]:
        pos += len(_chars(seg.content))
        out[pos] = seg.delay
    return out


def _segmentation(cand: list[Segment], reference: list[Segment], blocks) -> tuple[float, str]:
    ref_bounds, cand_bounds = _boundaries(reference), _boundaries(cand)
    if not ref_bounds and not cand_bounds:
        return 1.0, "one segment, as in the reference"
    # A candidate boundary counts where the alignment puts it in the reference; one inside invented
    # text has no place there and only costs precision.
    mapped: dict[int, int] = {}
    for pos, delay in cand_bounds.items():
        for a, b, size in blocks:
            if a <= pos <= a + size:
                mapped.setdefault(b + pos - a, delay)
                break
    shared = [p for p in mapped if p in ref_bounds]
    f1 = 2 * len(shared) / (len(cand_bounds) + len(ref_bounds))
    if shared:
        delay = sum(
            1 - min(1.0, abs(mapped[p] - ref_bounds[p]) / max(DELAY_SCALE_MS, ref_bounds[p])) for p in shared
        ) / len(shared)
    else:
        delay = 0.0 if ref_bounds else 1.0
    score = BOUNDARY_SHARE * f1 + (1 - BOUNDARY_SHARE) * delay
    return score, (
        f"{len(shared)} of {len(cand_bounds)} boundaries match the reference's {len(ref_bounds)} (F1 {f1:.2f}); "
        f"delay closeness {delay:.2f} at shared boundaries"
    )
