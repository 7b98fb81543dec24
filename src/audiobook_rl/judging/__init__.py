"""Judging a candidate script against the reference: the reward of training and the measure of
every checkpoint.

A judge has ``backend`` and ``model`` attributes and
``score(source: str, reference: list[Segment], candidate: str, aliases: dict | None = None) -> Verdict``
(the candidate is the raw model output, it may not parse; ``aliases`` maps a name's aliases to the
name, as in ``results/labels.jsonl``) and ``score_many(cases) -> list[Verdict]`` (cases are dicts
with ``source``, ``reference``, ``candidate`` and optional ``aliases`` keys, or tuples in that
order; LLM judges score them concurrently). Backends are looked up by name in :data:`BACKENDS`;
:func:`make_judge` builds one from the ``judge`` config section.
"""

from __future__ import annotations

import importlib
from dataclasses import asdict, dataclass, field
from typing import Callable

from ..errors import UserError

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


def weights_from(settings: dict) -> dict[str, float]:
    """``judge.weights`` over the seed's, checked: non-negative, not all zero."""
    weights = {**SEED_WEIGHTS, **(settings.get("weights") or {})}
    unknown = sorted(set(weights) - set(DIMENSIONS))
    if unknown:
        raise UserError(f"config key 'judge.weights' has unknown dimensions {unknown}; use {list(DIMENSIONS)}.")
    if any(w < 0 for w in weights.values()) or sum(weights.values()) <= 0:
        raise UserError("config key 'judge.weights': weights must be non-negative and not all zero.")
    return weights


def case_args(case) -> tuple:
    """(source, reference, candidate, aliases) of a case given as a dict or a tuple."""
    if isinstance(case, dict):
        return case["source"], case["reference"], case["candidate"], case.get("aliases")
    return tuple(case) + (None,) * (4 - len(case))


def failure(backend: str, model: str, error: str) -> Verdict:
    """The verdict recorded when a judge could not score a case: kept and counted, never a silent 0."""
    return Verdict(None, dict.fromkeys(DIMENSIONS), dict.fromkeys(DIMENSIONS, ""), backend, model, error)


def _rubric(settings: dict, llm: dict | None):
    from .rubric import RubricJudge

    return RubricJudge(weights_from(settings))


def _llm(provider: str) -> Callable:
    def make(settings: dict, llm: dict | None):
        # Imported by name, not by an import statement: the workflow lists the modules a stage
        # imports as its inputs, and stages that only use the rubric judge (training's reward)
        # must not rerun when the LLM client code changes. scripts/judge.py imports it directly.
        module = importlib.import_module(f"{__name__}.llm_judge")
        return module.LLMJudge(settings, llm, provider=provider)

    return make


BACKENDS: dict[str, Callable] = {"rubric": _rubric, "glm": _llm("zhipuai"), "openai": _llm("openai")}


def make_judge(settings: dict | None = None, llm: dict | None = None):
    """The judge named by ``settings['backend']`` (default ``rubric``).

    ``settings`` is the ``judge`` config section (weights, backend, model, prompt, ...); ``llm`` is
    the ``llm`` section (concurrency, timeouts, cache): knobs of the client layer that never change
    a score, kept apart so that editing them reruns nothing. A paid backend whose key is missing
    raises :class:`UserError` here, before any request.
    """
    settings = settings or {}
    name = settings.get("backend", "rubric")
    if name not in BACKENDS:
        raise UserError(f"config key 'judge.backend' is {name!r}; choose one of {sorted(BACKENDS)}.")
    return BACKENDS[name](settings, llm)
