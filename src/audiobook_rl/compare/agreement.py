"""Two or more judges scoring the same outputs: do they agree, and does a gain survive a change
of judge?

Input, per judge: ``{step: {slice_id: row}}`` where ``row`` is a ``scores.jsonl`` line (or any
mapping with ``overall`` and ``scores: {dimension: value}``); :func:`by_step` builds it from the
lines. An *item* is one (step, slice) that both judges scored with a finite number; judge failures
take no part.

For every pair of judges (names in sorted order), overall and per rubric dimension:

- Spearman's rho and Kendall's tau-b over the items (:mod:`.ranks`, ties handled): do they order
  the outputs alike, whatever their scales?
- mean absolute difference ``mean |a_i − b_i|``: do they give the same numbers? (Both judges
  score on the rubric's [0, 1] scale, so this is in score units.)
- the items they disagree on most: largest ``|rank_a − rank_b|`` (average ranks among the common
  items, so a judge that is merely harsher everywhere does not show up) or, with
  ``by="score"``, largest ``|a − b|``; ties broken by the other measure, then by step and slice id.

A gain that appears under one judge only (:func:`one_judge_gains`): for every checkpoint step,
each judge's paired comparison against the base step (:func:`.paired.paired`, same resamples for
every judge); the step is flagged when at least one judge's interval lies above 0 (``up``) and at
least one other judge's does not (``flat`` or ``down``). Judges with fewer than 2 paired slices at
that step are listed but count neither way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from typing import Iterable, Mapping

import numpy as np

from ..judging import DIMENSIONS, finite_number
from .paired import Paired, direction, paired
from .ranks import average_ranks, kendall_tau_b, spearman

Scores = Mapping[int, Mapping[str, Mapping]]  # step → slice id → scores.jsonl row


@dataclass(frozen=True)
class Correlation:
    """Agreement on one measure (overall or a dimension) over the ``n`` items both judges scored."""

    n: int
    spearman: float | None
    kendall_tau_b: float | None
    mean_abs_diff: float | None


@dataclass(frozen=True)
class Disagreement:
    """One item, as the two judges saw it (``overall`` scores; ranks among the common items)."""

    step: int
    slice_id: str
    score_a: float
    score_b: float
    rank_a: float
    rank_b: float


@dataclass(frozen=True)
class PairAgreement:
    judge_a: str
    judge_b: str
    overall: Correlation
    dimensions: dict[str, Correlation]
    disagreements: list[Disagreement] = field(default_factory=list)


@dataclass(frozen=True)
class GainCheck:
    """One checkpoint step against the base under every judge."""

    step: int
    by_judge: dict[str, Paired]
    moved: dict[str, str]  # judge → up / down / flat / too few (:func:`.paired.direction`)

    @property
    def gain_under(self) -> tuple[str, ...]:
        return tuple(j for j, m in self.moved.items() if m == "up")

    @property
    def flagged(self) -> bool:
        """A gain under some judges and not under others."""
        return bool(self.gain_under) and any(m in ("flat", "down") for m in self.moved.values())


def by_step(rows: Iterable[Mapping]) -> dict[int, dict[str, Mapping]]:
    """``scores.jsonl`` lines (each with ``step`` and ``id``) as ``{step: {slice_id: row}}``."""
    out: dict[int, dict[str, Mapping]] = {}
    for row in rows:
        out.setdefault(int(row["step"]), {})[str(row["id"])] = row
    return out


def agreement(judges: Mapping[str, Scores], *, top: int = 5, by: str = "rank") -> list[PairAgreement]:
    """The agreement of every pair of judges, pairs in sorted name order."""
    return [pair_agreement(judges[a], judges[b], judge_a=a, judge_b=b, top=top, by=by) for a, b in combinations(sorted(judges), 2)]


def pair_agreement(a: Scores, b: Scores, *, judge_a: str, judge_b: str, top: int = 5, by: str = "rank") -> PairAgreement:
    """Two judges' agreement, overall and per dimension, and their ``top`` largest disagreements."""
    if by not in ("rank", "score"):
        raise ValueError(f"disagreements are sorted by 'rank' or 'score', not {by!r}")
    keys, xa, xb = _common(a, b, lambda row: row.get("overall"))
    dims = {d: _correlation(*_common(a, b, lambda row, d=d: (row.get("scores") or {}).get(d))[1:]) for d in DIMENSIONS}
    return PairAgreement(judge_a, judge_b, _correlation(xa, xb), dims, _disagreements(keys, xa, xb, top, by))


def one_judge_gains(
    judges: Mapping[str, Scores],
    *,
    base_step: int = 0,
    samples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
    min_effect: float = 0.0,
) -> list[GainCheck]:
    """Every step after ``base_step`` that some judge scored, each judge's paired comparison of its
    ``overall`` against the base; ``flagged`` where the judges disagree on a gain."""
    steps = sorted({s for scores in judges.values() for s in scores if s != base_step})
    checks = []
    for step in steps:
        by_judge = {}
        for name in sorted(judges):
            scores = judges[name]
            overall = {sid: row.get("overall") for sid, row in scores.get(step, {}).items()}
            base = {sid: row.get("overall") for sid, row in scores.get(base_step, {}).items()}
            by_judge[name] = paired(overall, base, samples=samples, seed=seed, confidence=confidence)
        checks.append(GainCheck(step, by_judge, {j: direction(p, min_effect) for j, p in by_judge.items()}))
    return checks


def _common(a: Scores, b: Scores, value) -> tuple[list[tuple[int, str]], np.ndarray, np.ndarray]:
    """The items both judges scored with a finite ``value(row)``, sorted by (step, slice id)."""
    keys, xa, xb = [], [], []
    for step in sorted(set(a) & set(b)):
        for sid in sorted(set(a[step]) & set(b[step])):
            va, vb = finite_number(value(a[step][sid])), finite_number(value(b[step][sid]))
            if va is not None and vb is not None:
                keys.append((step, sid))
                xa.append(va)
                xb.append(vb)
    return keys, np.array(xa, dtype=float), np.array(xb, dtype=float)


def _correlation(xa: np.ndarray, xb: np.ndarray) -> Correlation:
    n = len(xa)
    mad = float(np.abs(xa - xb).mean()) if n else None
    return Correlation(n, spearman(xa, xb), kendall_tau_b(xa, xb), mad)


def _disagreements(keys, xa: np.ndarray, xb: np.ndarray, top: int, by: str) -> list[Disagreement]:
    if not keys:
        return []
    ra, rb = average_ranks(xa), average_ranks(xb)
    items = [Disagreement(step, sid, float(va), float(vb), float(pa), float(pb))
             for (step, sid), va, vb, pa, pb in zip(keys, xa, xb, ra, rb)]

    def order(d: Disagreement):
        rank_gap, score_gap = abs(d.rank_a - d.rank_b), abs(d.score_a - d.score_b)
        first, second = (rank_gap, score_gap) if by == "rank" else (score_gap, rank_gap)
        return (-first, -second, d.step, d.slice_id)

    return sorted(items, key=order)[:top]
