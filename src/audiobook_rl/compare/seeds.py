"""Several training seeds per arm: per-seed gains, their mean and IQM, and arms compared.

An *arm* is one training recipe (e.g. the real reward, or the shuffled-reward control) trained
with several seeds. Each seed's input is its per-slice gains on the test slices
(:func:`.paired.differences` of its chosen checkpoint against its base); its **gain** is their mean.

Aggregates over the seeds' gains (Agarwal et al. 2021, "Deep RL at the Edge of the Statistical
Precipice", the ``rliable`` library):

- the mean;
- the interquartile mean (IQM), exactly as ``rliable.metrics.aggregate_iqm``, which is
  ``scipy.stats.trim_mean(scores, proportiontocut=0.25)``: sort the n values, drop ``⌊n/4⌋`` from
  each end, average the rest. There is no fractional weighting of the boundary values: n = 5 keeps
  the middle 3, n = 6 the middle 4, and for n ≤ 3 nothing is dropped (the IQM *is* the mean).

Interval: a stratified bootstrap in the manner of ``rliable.library.StratifiedBootstrap``, whose
strata are tasks and whose resampled units are runs. Here there is one task; a seed (one trained
policy) is the unit, and a seed's slices are never split from it, because all slices of a seed
share the same trained weights. Each resample, per arm:

1. draws S seeds of the arm with replacement (S = the arm's number of seeds);
2. if ``resample_slices`` (the default), replaces each drawn seed's gain by the mean of its n_s
   slice gains drawn again with replacement, independently for every drawn seed (a two-stage
   bootstrap, Davison & Hinkley 1997, §3.8), so the interval also carries the sampling noise of a
   finite test set; otherwise the drawn seed keeps its gain;
3. computes the statistic (mean, IQM) of those S values.

Two arms are resampled independently (as ``rliable.library.StratifiedIndependentBootstrap``
does for probability of improvement). Draws, from ``numpy.random.default_rng(seed)``, arm by arm:
``pick = rng.integers(0, S, size=(samples, S))`` over the seeds sorted by ``str(seed)``; then, if
``resample_slices``, for each seed in that order ``rng.integers(0, n_s, size=(samples, S, n_s))``
over its finite slice gains in sorted slice-id order, of which position ``(r, k)`` is used when
``pick[r, k]`` names that seed.

Probability of improvement of arm X over arm Y (``rliable.metrics.probability_of_improvement``
with one task): the Mann-Whitney U statistic over the seeds' gains divided by ``n_x·n_y``,
``P(X > Y) = Σ_i Σ_j ([x_i > y_j] + ½[x_i = y_j]) / (n_x n_y)``; ties by the rule of :mod:`.ranks`.

Tiny n: with fewer than ``min_seeds`` seeds in an arm (default :data:`MIN_SEEDS`) no interval is
given and ``too_few`` says why: resampling 3 seeds has only 10 distinct outcomes, and an interval
from them would look like certainty it is not. Even with more seeds a percentile interval over few
runs is too narrow: ``bench/bench_compare_coverage.py`` measures how often a nominal 95 % interval
covers the true gain (two-stage, 16 slices: 0.79 with 2 seeds, 0.85 with 3, 0.86 with 4, 0.89 with
8; seeds alone: 0.46, 0.74, 0.77, 0.84), so a report should say so in words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ..judging import finite_number
from . import bootstrap
from .paired import wins

MIN_SEEDS = 4


@dataclass(frozen=True)
class ArmSummary:
    """One arm's seeds: each seed's gain (mean over its slices) and the aggregates over seeds."""

    gains: dict[str, float]  # seed → gain, seeds sorted by str(seed)
    mean: float | None
    iqm: float | None
    mean_ci: tuple[float, float] | None
    iqm_ci: tuple[float, float] | None
    too_few: str | None  # why there is no interval, or None
    skipped: tuple[str, ...] = ()  # seeds without a single scored slice

    @property
    def n_seeds(self) -> int:
        return len(self.gains)


@dataclass(frozen=True)
class ArmComparison:
    """Arm X against arm Y over their seeds' gains."""

    mean_diff: float | None  # mean gain of X − mean gain of Y
    mean_diff_ci: tuple[float, float] | None
    p_improve: float | None  # P(X > Y), Mann-Whitney over the seeds' gains
    p_improve_ci: tuple[float, float] | None
    too_few: str | None


def iqm(values) -> float:
    """Interquartile mean as rliable computes it: drop ⌊n/4⌋ values from each end, average the rest."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        raise ValueError("the interquartile mean of no values is undefined")
    return float(_iqm_rows(x[None, :])[0])


def probability_of_improvement(x, y) -> float:
    """P(X > Y) with ties counting half: the Mann-Whitney U of ``x`` over ``y`` divided by n_x·n_y."""
    return float(_poi(np.asarray(x, dtype=float)[None, :], np.asarray(y, dtype=float)[None, :])[0])


def arm_summary(
    gains: Mapping[str, Mapping[str, object]],
    *,
    samples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
    min_seeds: int = MIN_SEEDS,
    resample_slices: bool = True,
) -> ArmSummary:
    """Summarise an arm given, per training seed, its per-slice gains (slice id → gain)."""
    bootstrap.check(samples, confidence)
    arm = _Arm(gains)
    values = np.array(list(arm.gain.values()))
    if values.size == 0:
        return ArmSummary({}, None, None, None, None, "no seed has a scored slice", arm.skipped)
    too_few = _too_few({"the arm": arm}, min_seeds)
    mean_ci = iqm_ci = None
    if too_few is None:
        reps = arm.replicates(np.random.default_rng(seed), samples, resample_slices)
        mean_ci = bootstrap.percentile_interval(reps.mean(axis=1), confidence)
        iqm_ci = bootstrap.percentile_interval(_iqm_rows(reps), confidence)
    return ArmSummary(arm.gain, float(values.mean()), iqm(values), mean_ci, iqm_ci, too_few, arm.skipped)


def compare_arms(
    x: Mapping[str, Mapping[str, object]],
    y: Mapping[str, Mapping[str, object]],
    *,
    samples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
    min_seeds: int = MIN_SEEDS,
    resample_slices: bool = True,
) -> ArmComparison:
    """Arm ``x`` against arm ``y`` (each: seed → slice id → gain): the difference of their mean
    gains and P(X > Y), with intervals from independent stratified resamples of the two arms."""
    bootstrap.check(samples, confidence)
    ax, ay = _Arm(x), _Arm(y)
    gx, gy = np.array(list(ax.gain.values())), np.array(list(ay.gain.values()))
    if gx.size == 0 or gy.size == 0:
        return ArmComparison(None, None, None, None, "an arm has no seed with a scored slice")
    too_few = _too_few({"arm X": ax, "arm Y": ay}, min_seeds)
    diff_ci = poi_ci = None
    if too_few is None:
        rng = np.random.default_rng(seed)
        rx = ax.replicates(rng, samples, resample_slices)
        ry = ay.replicates(rng, samples, resample_slices)
        diff_ci = bootstrap.percentile_interval(rx.mean(axis=1) - ry.mean(axis=1), confidence)
        poi_ci = bootstrap.percentile_interval(_poi(rx, ry), confidence)
    return ArmComparison(float(gx.mean() - gy.mean()), diff_ci, probability_of_improvement(gx, gy), poi_ci, too_few)


class _Arm:
    """The seeds of one arm: per-slice gains (finite ones only) and the per-seed gain."""

    def __init__(self, gains: Mapping[str, Mapping[str, object]]):
        self.slices: dict[str, np.ndarray] = {}
        skipped = []
        for s in sorted(gains, key=str):
            values = [finite_number(gains[s][sid]) for sid in sorted(gains[s])]
            values = [v for v in values if v is not None]
            if values:
                self.slices[str(s)] = np.array(values)
            else:
                skipped.append(str(s))
        self.skipped = tuple(skipped)
        self.gain = {s: float(v.mean()) for s, v in self.slices.items()}

    def replicates(self, rng: np.random.Generator, samples: int, resample_slices: bool) -> np.ndarray:
        """(samples, S): the S resampled seed gains of each bootstrap replicate (module docstring)."""
        seeds = list(self.slices)
        S = len(seeds)
        pick = rng.integers(0, S, size=(samples, S))
        if not resample_slices:
            return np.array([self.gain[s] for s in seeds])[pick]
        # stage 2 for every seed at every position; the pick then chooses which seed each position holds
        redrawn = np.stack([v[rng.integers(0, v.size, size=(samples, S, v.size))].mean(axis=2) for v in self.slices.values()])
        return redrawn[pick, np.arange(samples)[:, None], np.arange(S)[None, :]]


def _too_few(arms: dict[str, _Arm], min_seeds: int) -> str | None:
    short = [f"{name} has {len(a.gain)}" for name, a in arms.items() if len(a.gain) < max(min_seeds, 2)]
    if not short:
        return None
    return f"too few seeds for an interval ({'; '.join(short)}; at least {max(min_seeds, 2)} needed)"


def _iqm_rows(reps: np.ndarray) -> np.ndarray:
    """The IQM of each row: sorted, ⌊n/4⌋ dropped from each end (``n // 4`` is ``int(0.25 * n)``,
    scipy's cut, exactly), the rest averaged."""
    x = np.sort(reps, axis=1)
    cut = x.shape[1] // 4
    return x[:, cut : x.shape[1] - cut].mean(axis=1)


def _poi(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Row-wise P(X > Y) of (R, n_x) against (R, n_y), ties half."""
    return wins(x[:, :, None], y[:, None, :]).mean(axis=(1, 2))
