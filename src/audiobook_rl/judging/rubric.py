"""The rubric judge: the embedded, deterministic judge and the reward of local training.

Each dimension of SPEC §4 is computed from the parsed candidate, the source and the reference.
The candidate is aligned to the reference character by character. The **text read** is coverage
(the share of the reference's characters the candidate holds) × precision (the share of the
candidate's characters that are the reference's). Only completeness can be earned by text alone;
the other four dimensions say how well the text is presented, and text the candidate leaves out
is not presented at all, so **each of them is multiplied by the text read** (speaker's voice
accuracy counts text left out as read by no one already, and is multiplied by precision): a stub (a speech tag
and one invented line), one copied sentence, a repeated line or the same script for every excerpt
earns little on any dimension, however well formed, while a faithful script keeps its full score.
Precision is part of the factor so that repeated or invented text cannot buy coverage through
characters it happens to share with the reference. No candidate scores more than its coverage.

- **format**: the parser's verdict — a bare array scores 1, an array read after repairs (code
  fence, prose, ``{"segments": …}``) 0.8 — times the share of entries that pass the schema, times
  the share of the output the script spans (text written around it, such as more JSON after the
  array up to the token limit, costs in proportion), times the text read. Unparseable output
  scores 0 on every dimension (there is nothing to align).
- **completeness**: character alignment of the joined contents against the source: the share of
  the source's characters present times the share of the output's characters that are in the
  source, so omissions and invented text cost in proportion (a third of the text, copied
  faithfully, earns a third). The text a reference reads counts as well as the source (the better
  of the two is taken), so a perfect copy of any reference scores 1.
- **speaker**: voice accuracy (:mod:`.voice`): the share of the excerpt's characters read by the
  right voice, narration by 旁白 and each quote by the person the reference names (aliases are
  the same person), character for character, so narration read by a character costs as much as a
  quote read by the wrong person; speech tags (``鲁达道``) and names found neither in the excerpt
  nor among the aliases are wrong voices, and text the candidate leaves out is read by no one.
  Times the candidate's precision (the share of its characters that are the reference's), so
  repeated text cannot buy voices. A script that reads everything in one voice earns only the
  share of the text that voice has in the reference.
- **emotion**: every reference segment counts equally; each of its characters earns
  0.7 × tone (same tone 1, same broad family 0.5) + 0.3 × intensity closeness (1 − |Δ| / 4) of the
  candidate segment holding it, and 0 where the candidate lacks it.
- **segmentation**: 0.6 × F1 of segment boundaries (candidate boundaries mapped into the reference
  through the alignment) + 0.4 × delay closeness summed over the reference's boundaries (a boundary
  the candidate does not share earns 0; the reference carries the longer pauses at paragraph and
  scene breaks; delay ranges are checked under format).

Only letters, digits and CJK characters are compared (:mod:`.alignment`): punctuation and spacing
do not change how much of the text is read. Text inside the source or candidate is never interpreted, so an instruction
hidden in it ("给满分") is just more characters: invented ones in a candidate cost completeness.
"""

from __future__ import annotations

import json

from ..script import FAMILY_OF, Segment, parse_script
from . import DIMENSIONS, Verdict, case_args, weighted
from .alignment import Alignment, align, blocks, compared, matched
from .voice import Voices, aligned_voices, as_segments

REPAIRED_FORMAT = 0.8  # a readable but not strictly valid array (fence, prose, wrapper)
TONE_SHARE = 0.7  # of the emotion score; the rest is intensity closeness
BOUNDARY_SHARE = 0.6  # of the segmentation score; the rest is delay closeness
DELAY_SCALE_MS = 300  # a delay off by max(this, the reference's delay) or more earns 0


def judge(settings: dict, llm: dict | None = None) -> "RubricJudge":
    """The ``rubric`` backend: ``settings`` is the ``judge`` (or ``train.reward``) section."""
    return RubricJudge(settings["weights"])


class RubricJudge:
    """Deterministic judge of SPEC §4; ``weights`` maps the five dimensions to their weights."""

    backend = "rubric"
    model = "rubric-v3"

    def __init__(self, weights: dict[str, float]):
        self.weights = dict(weights)

    def score(self, source: str, reference, candidate, aliases: dict[str, str] | None = None,
              deadline: float | None = None) -> Verdict:
        """Score one candidate (raw model output, or a list of segments) against the reference
        (``deadline``, of the judge interface, needs no heed: the rubric takes milliseconds)."""
        scores, reasons = rubric_scores(source, as_segments(reference), candidate, aliases or {})
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


def rubric_scores(
    source: str, reference: list[Segment], candidate, aliases: dict[str, str]
) -> tuple[dict[str, float], dict[str, str]]:
    """The five dimension scores in [0, 1] and a short reason for each."""
    parsed = parse_script(_as_text(candidate))
    if parsed.status == "invalid" or not parsed.segments:
        why = "; ".join(parsed.errors[:3]) or "no valid segment"
        scores = dict.fromkeys(DIMENSIONS, 0.0)
        reasons = dict.fromkeys(DIMENSIONS, "nothing to compare: the output has no valid segment")
        reasons["format"] = f"unreadable output: {why}" if parsed.status == "invalid" else f"no valid segment: {why}"
        return scores, reasons

    cand = parsed.segments
    al = align(reference, cand)
    n_out, ref_hit = len(al.cand_text), matched(al.blocks)
    read = _read_share(ref_hit, n_out, len(al.ref_text))
    scaled = f"× text read {read:.2f}"
    scores: dict[str, float] = {}
    reasons: dict[str, str] = {}

    base = 1.0 if parsed.status == "strict" else REPAIRED_FORMAT
    valid = len(cand) / parsed.items
    scores["format"] = base * valid * parsed.share * read
    reasons["format"] = (
        ("strict JSON array" if parsed.status == "strict" else f"readable after repairs: {', '.join(parsed.repairs)}")
        + f"; {len(cand)}/{parsed.items} segments valid"
        + (f" ({parsed.errors[0]})" if parsed.errors else "")
        + (f"; × the script's share of the output {parsed.share:.2f}" if parsed.share < 1 else "")
        + f"; {scaled}"
    )

    # Completeness against the source, or against the reference's reading of it (whichever is better).
    src_text = compared(source)
    src_hit = ref_hit if src_text == al.ref_text else matched(blocks(al.cand_text, src_text))
    value, against, hit, target = max(
        (_read_share(src_hit, n_out, len(src_text)), "source", src_hit, len(src_text)),
        (read, "reference", ref_hit, len(al.ref_text)),
        key=lambda t: t[0],
    )
    scores["completeness"] = value
    reasons["completeness"] = (
        f"covers {hit}/{target} characters of the {against}; {n_out - hit} of {n_out} output characters not in it"
    )

    voices = aligned_voices(al, Voices.of(source, reference, aliases))
    precision = ref_hit / n_out if n_out else 0.0
    scores["speaker"] = (voices.overall if voices.total else 1.0) * precision
    reasons["speaker"] = f"{voices.reason()}; × precision {precision:.2f}"

    emotion = [_credit(al, r, _emotion_agreement) for r in range(len(reference)) if al.lengths[r]]
    full = sum(e >= 0.999 for e in emotion)
    scores["emotion"] = (sum(emotion) / len(emotion) if emotion else 1.0) * read
    reasons["emotion"] = f"tone/intensity agrees fully on {full}/{len(emotion)} reference segments; {scaled}"

    segmentation, segmentation_why = _segmentation(cand, reference, al.blocks)
    scores["segmentation"], reasons["segmentation"] = segmentation * read, f"{segmentation_why}; {scaled}"
    return {d: round(min(1.0, max(0.0, scores[d])), 6) for d in DIMENSIONS}, reasons


def _as_text(candidate) -> str:
    if isinstance(candidate, list):
        return json.dumps([s.to_dict() if isinstance(s, Segment) else s for s in candidate], ensure_ascii=False)
    return candidate


def _credit(al: Alignment, r: int, agreement) -> float:
    """Mean over reference segment ``r``'s characters of the agreement of the candidate segment
    holding each (0 for characters the candidate lacks)."""
    ref = al.reference[r]
    return sum(n * agreement(ref, al.candidate[c]) for c, n in al.overlap[r].items()) / al.lengths[r]


def _read_share(hit: int, n_out: int, n_target: int) -> float:
    """Coverage (hit / target) × precision (hit / output): linear in the share of the text read."""
    if n_out == 0 or n_target == 0:
        return 1.0 if n_out == n_target else 0.0
    return hit * hit / (n_out * n_target)


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
        pos += len(compared(seg.content))
        out[pos] = seg.delay
    return out


def _segmentation(cand: list[Segment], reference: list[Segment], found) -> tuple[float, str]:
    ref_bounds, cand_bounds = _boundaries(reference), _boundaries(cand)
    if not ref_bounds and not cand_bounds:
        return 1.0, "one segment, as in the reference"
    # A candidate boundary counts where the alignment puts it in the reference; one inside invented
    # text has no place there and only costs precision.
    mapped: dict[int, int] = {}
    for pos, delay in cand_bounds.items():
        for a, b, size in found:
            if a <= pos <= a + size:
                mapped.setdefault(b + pos - a, delay)
                break
    shared = [p for p in mapped if p in ref_bounds]
    f1 = 2 * len(shared) / (len(cand_bounds) + len(ref_bounds))
    if ref_bounds:
        delay = sum(
            1 - min(1.0, abs(mapped[p] - ref_bounds[p]) / max(DELAY_SCALE_MS, ref_bounds[p])) for p in shared
        ) / len(ref_bounds)
    else:
        delay = 1.0  # nothing to pause at; the extra boundaries already cost F1
    score = BOUNDARY_SHARE * f1 + (1 - BOUNDARY_SHARE) * delay
    return score, (
        f"{len(shared)} of {len(cand_bounds)} boundaries match the reference's {len(ref_bounds)} (F1 {f1:.2f}); "
        f"delay closeness {delay:.2f} over the reference's boundaries"
    )
