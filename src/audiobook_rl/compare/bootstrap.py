"""The seeded percentile bootstrap behind every interval of this package.

Percentile bootstrap (Efron & Tibshirani, *An Introduction to the Bootstrap*, 1993, ch. 13): draw
``samples`` resamples with replacement, compute the statistic on each, and report the
(1 − confidence)/2 and (1 + confidence)/2 quantiles of those values. Quantiles interpolate linearly
between order statistics (numpy's default, type 7 of Hyndman & Fan 1996): with ``B`` sorted values
``v[0..B-1]`` the q-quantile is ``v[f] + (h − f)(v[f+1] − v[f])`` with ``h = q(B − 1)``, ``f = ⌊h⌋``.

Determinism: every function that resamples takes an integer ``seed`` and draws only from
``numpy.random.default_rng(seed)``, in an order its docstring states, so the same inputs give the
same interval on every machine and rerun (and a test can replay the draws).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


def check(samples: int, confidence: float) -> None:
    """Refuse settings under which no interval means anything."""
    if samples < 1:
        raise ValueError(f"bootstrap samples must be at least 1, got {samples}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")


def percentile_interval(replicates: Sequence[float], confidence: float) -> tuple[float, float]:
    """The central ``confidence`` interval of the bootstrap ``replicates``."""
    alpha = (1 - confidence) / 2
    low, high = np.quantile(np.asarray(replicates, dtype=float), [alpha, 1 - alpha])
    return float(low), float(high)
