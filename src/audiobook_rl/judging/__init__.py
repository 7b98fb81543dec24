"""Judging a candidate script against the reference: the reward of training and the measure of
every checkpoint.

A judge has ``backend`` and ``model`` attributes and
``score(source: str, reference: list[Segment], candidate: str) -> Verdict``; the candidate is the
raw model output (it may not parse). Backends are looked up by name in :data:`BACKENDS`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

DIMENSIONS = ("format", "completeness", "speaker", "emotion", "segmentation")
SEED_WEIGHTS = {"format": 0.20, "completeness": 0.30, "speaker": 0.20, "emotion": 0.15, "segmentation": 0.15}


@dataclass
class Verdict:
    """A judge's answer. ``overall`` is None (and ``error`` set) when the judge itself failed."""

    overall: float | None
    scores: dict[str, float] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    backend: str = ""
    model: str = ""
    error: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def weighted(scores: dict[str, float], weights: dict[str, float]) -> float:
    """Σ weight × score over the five dimensions, with weights normalised to sum to 1."""
    total = sum(weights[d] for d in DIMENSIONS)
    return sum(weights[d] * scores[d] for d in DIMENSIONS) / total
