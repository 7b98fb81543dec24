"""Judging a candidate script against the reference: the reward of training and the measure of
every checkpoint.

A judge has ``backend`` and ``model`` attributes and
``score(source: str, reference: list[Segment], candidate: str, aliases: dict | None = None,
deadline: float | None = None) -> Verdict`` (the candidate is the raw model output, it may not parse;
``aliases`` maps a name's aliases to the name, :mod:`audiobook_rl.dataset`; ``deadline``, a
:func:`time.monotonic` time, is when a judge that calls a model gives up: a judge failure) and ``score_many(cases) -> list[Verdict]`` (cases are dicts
with ``source``, ``reference``, ``candidate`` and optional ``aliases`` keys, or tuples in that
order; LLM judges score them concurrently). The backends (``rubric``, ``glm``, ``openai``) are in
:mod:`audiobook_rl.backends`; each builds its judge from the ``judge`` (or ``train.reward``) config
section, whose rubric weights and defaults are the schema's.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field

DIMENSIONS = ("format", "completeness", "speaker", "emotion", "segmentation")


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


def finite_number(value) -> float | None:
    """A score or reward as read back from a file: a finite float, or None (JSON null, NaN, strings and
    booleans are not scores)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def weighted(scores: dict[str, float], weights: dict[str, float]) -> float:
    """Σ weight × score over the five dimensions, with weights normalised to sum to 1 (the config
    check refuses weights that are all zero)."""
    total = sum(weights[d] for d in DIMENSIONS)
    return sum(weights[d] * scores[d] for d in DIMENSIONS) / total


def case_args(case) -> tuple:
    """(source, reference, candidate, aliases) of a case given as a dict or a tuple."""
    if isinstance(case, dict):
        return case["source"], case["reference"], case["candidate"], case.get("aliases")
    return tuple(case) + (None,) * (4 - len(case))


def failure(backend: str, model: str, error: str) -> Verdict:
    """The verdict recorded when a judge could not score a case: kept and counted, never a silent 0."""
    return Verdict(None, dict.fromkeys(DIMENSIONS), dict.fromkeys(DIMENSIONS, ""), backend, model, error)


def judge_name(settings: dict) -> str:
    """A judge section's name in paths and on the report: ``rubric``, or ``<backend>-<model>`` for an
    LLM judge (characters other than letters, digits, '.', '_' and '-' become '-')."""
    name = settings["backend"] if settings["backend"] == "rubric" else f"{settings['backend']}-{settings['model']}"
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name)


def agreement_judges(judge: dict) -> dict[str, dict]:
    """The extra judges of the ``judge`` section (``judge.agreement``) by unique name; a name taken by
    an earlier judge (the configured one included) gets the judge's position appended (``rubric-2``)."""
    taken = {judge_name(judge)}
    out = {}
    for i, settings in enumerate(judge["agreement"], start=1):
        name = judge_name(settings)
        if name in taken:
            name = f"{name}-{i}"
        taken.add(name)
        out[name] = settings
    return out
