"""A checkpoint against the base policy on the same slices: paired differences.

Both were scored on the same slices, so the honest comparison is per slice: slice difficulty
cancels in ``d_i = checkpoint_i − base_i``. Only slices scored at both (a finite number, not a
judge failure) take part; how many is reported as ``n``.

- Mean difference ``mean(d)`` with a paired bootstrap interval: the slices (pairs) are resampled
  with replacement, never the two sides separately (Efron & Tibshirani 1993, §8.3 on paired data).
- Probability of improvement ``PI = (#{d_i > 0} + ½·#{d_i = 0}) / n``: the share of slices where the
  checkpoint beats the base, ties counting half (the per-slice analogue of the probability of
  improvement in Agarwal et al. 2021, "Deep RL at the Edge of the Statistical Precipice", §4.3;
  ties by the rule of :mod:`.ranks`), with its interval from the same resamples.
- Relative change ``(mean(checkpoint) − mean(base)) / mean(base)`` in percent, over the same paired
  slices: a secondary number, never shown without the absolute difference (a small base makes it
  large).

Draws: ``rng = numpy.random.default_rng(seed)``; ``idx = rng.integers(0, n, size=(samples, n))``;
resample ``r`` is the slices ``ids[idx[r]]`` (ids in sorted order). Fewer than 2 pairs: no interval.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ..judging import finite_number
from . import bootstrap
from .ranks import rounded

MIN_PAIRS = 2  # with one pair there is nothing to resample: no interval rather than a zero-width one


@dataclass(frozen=True)
class Paired:
    """A checkpoint against the base over the ``n`` slices both have a score for."""

    n: int
    mean_diff: float | None
    diff_ci: tuple[float, float] | None
    p_improve: float | None
    p_improve_ci: tuple[float, float] | None
    mean_checkpoint: float | None
    mean_base: float | None
    relative_change: float | None  # percent; None when the base mean is 0 or there is no pair


def differences(checkpoint: Mapping[str, object], base: Mapping[str, object]) -> dict[str, float]:
    """``checkpoint[id] − base[id]`` for every slice id with a finite score on both sides, by id."""
    out = {}
    for sid in sorted(set(checkpoint) & set(base)):
        a, b = finite_number(checkpoint[sid]), finite_number(base[sid])
        if a is not None and b is not None:
            out[sid] = a - b
    return out


def wins(checkpoint: np.ndarray, base: np.ndarray) -> np.ndarray:
    """1 where the checkpoint scores higher, ½ on a tie, 0 where it scores lower (elementwise,
    broadcasting: the one definition of a win, per slice here and per pair of seeds in :mod:`.seeds`)."""
    a, b = rounded(checkpoint), rounded(base)
    return (a > b) + 0.5 * (a == b)


def paired(
    checkpoint: Mapping[str, object],
    base: Mapping[str, object],
    *,
    samples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> Paired:
    """Compare per-slice scores (slice id → score; None or non-numbers are judge failures)."""
    bootstrap.check(samples, confidence)
    ids = sorted(differences(checkpoint, base))
    n = len(ids)
    if n == 0:
        return Paired(0, None, None, None, None, None, None, None)
    a = np.array([finite_number(checkpoint[i]) for i in ids])
    b = np.array([finite_number(base[i]) for i in ids])
    d, w = a - b, wins(a, b)
    diff_ci = pi_ci = None
    if n >= MIN_PAIRS:
        idx = np.random.default_rng(seed).integers(0, n, size=(samples, n))
        diff_ci = bootstrap.percentile_interval(d[idx].mean(axis=1), confidence)
        pi_ci = bootstrap.percentile_interval(w[idx].mean(axis=1), confidence)
    mean_a, mean_b = float(a.mean()), float(b.mean())
    return Paired(
        n=n,
        mean_diff=float(d.mean()),
        diff_ci=diff_ci,
        p_improve=float(w.mean()),
        p_improve_ci=pi_ci,
        mean_checkpoint=mean_a,
        mean_base=mean_b,
        relative_change=None if mean_b == 0 else 100.0 * (mean_a - mean_b) / mean_b,
    )


def direction(p: Paired, min_effect: float = 0.0) -> str:
    """How the checkpoint moved: ``up`` (``down``) when the interval of the mean difference lies
    above (below) 0 and the difference is at least ``min_effect``; ``flat`` otherwise; ``too few``
    when there is no interval (fewer than 2 pairs)."""
    if p.diff_ci is None or p.mean_diff is None:
        return "too few"
    if abs(p.mean_diff) < min_effect:
        return "flat"
    return "up" if p.diff_ci[0] > 0 else "down" if p.diff_ci[1] < 0 else "flat"
