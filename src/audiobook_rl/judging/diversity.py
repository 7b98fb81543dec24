"""Do a policy's outputs depend on their input? Distinct outputs and similarity across excerpts.

A policy that collapses writes (nearly) the same script whatever the excerpt, and a judge that
rewards form over text can still score it higher than the base policy. Two numbers make that
visible, in the training metrics and in the report:

- the **distinct share**: distinct final scripts / scripts (scripts that parse are compared as
  parsed, so spacing and fences do not make two copies distinct);
- the **cross-excerpt similarity**: the mean similarity (difflib's ratio on the text read, or on the
  raw output when it does not parse) between outputs of *different* excerpts, next to the mean
  similarity of each output to its own excerpt.

Outputs **ignore their input** when at most half of them are distinct, or when outputs of different
excerpts resemble each other (≥ 0.5) more than they resemble their own excerpts.
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher

from ..script import dumps, parse_script

COMPARED_CHARS = 500  # a long output is compared on its first characters: the cost stays bounded
PARTNERS = 16  # each output is compared with at most this many later ones
COLLAPSE_DISTINCT = 0.5  # at most this share distinct: the outputs do not follow their input
COLLAPSE_SIMILARITY = 0.5  # cross-excerpt similarity this high, and above the similarity to the source


@dataclass(frozen=True)
class Diversity:
    n: int  # outputs
    distinct: int  # distinct outputs
    cross_similarity: float | None  # mean similarity between outputs of different excerpts
    source_similarity: float | None  # mean similarity of each output to its own excerpt

    @property
    def distinct_share(self) -> float | None:
        return self.distinct / self.n if self.n else None

    @property
    def ignores_input(self) -> bool:
        """The outputs do not follow their excerpts (see the module docstring)."""
        if self.n < 2 or self.cross_similarity is None:
            return False
        if self.distinct_share <= COLLAPSE_DISTINCT:
            return True
        return self.cross_similarity >= COLLAPSE_SIMILARITY and self.cross_similarity > (self.source_similarity or 0.0)

    def metrics(self, prefix: str) -> dict:
        """Metrics-row fields: ``{prefix}_distinct_share`` and ``{prefix}_cross_similarity``."""
        return {f"{prefix}_distinct_share": self.distinct_share, f"{prefix}_cross_similarity": self.cross_similarity}


def diversity(outputs: list[str], sources: list[str], groups: list[str] | None = None) -> Diversity:
    """How much ``outputs`` (raw final scripts) differ, where ``sources[i]`` is the excerpt of
    ``outputs[i]`` and ``groups[i]`` its task (outputs of one task are not compared with each other;
    by default every output has its own)."""
    groups = groups if groups is not None else [str(i) for i in range(len(outputs))]
    keys, texts = zip(*map(_canonical, outputs)) if outputs else ((), ())
    pairs = [
        _similarity(texts[i], texts[j])
        for i in range(len(texts))
        for j in range(i + 1, min(len(texts), i + 1 + PARTNERS))
        if groups[i] != groups[j]
    ]
    own = [_similarity(t, _compared(s)) for t, s in zip(texts, sources)]
    return Diversity(
        n=len(outputs),
        distinct=len(set(keys)),
        cross_similarity=sum(pairs) / len(pairs) if pairs else None,
        source_similarity=sum(own) / len(own) if own else None,
    )


def _canonical(output) -> tuple[str, str]:
    """(what makes two outputs the same script, the text compared for similarity)."""
    parsed = parse_script(output)
    if parsed.status != "invalid" and parsed.segments:
        return dumps(parsed.segments), _compared("".join(s.content for s in parsed.segments))
    raw = str(output or "").strip()
    return raw, _compared(raw)


def _compared(text: str) -> str:
    # Cut before filtering too: a 10 MB output costs no more than a short one.
    return "".join(ch for ch in text[: 4 * COMPARED_CHARS] if ch.isalnum())[:COMPARED_CHARS]


def _similarity(a: str, b: str) -> float:
    if not a and not b:
        return 1.0
    return SequenceMatcher(None, a, b, autojunk=False).ratio()
