"""Ranks with ties, and the two rank correlations the judge agreement reports.

Tie rule (one for the whole package): two scores are tied when they agree to :data:`DECIMALS`
decimal places. Judges write scores with a few decimals; a weighted sum computed two ways can
differ in the 17th digit, which must not decide a rank or a win.

- Average ranks: tied values share the mean of the 1-based positions they occupy (the "fractional"
  ranking of Kendall & Gibbons, *Rank Correlation Methods*, 1990, §3.2; ``scipy.stats.rankdata``'s
  default ``method="average"``).
- Spearman's rho: Pearson's correlation of the two average-rank vectors (Spearman 1904; with ties
  this is the definition ``scipy.stats.spearmanr`` uses, not the 1 − 6Σd²/(n(n²−1)) shortcut,
  which holds only without ties).
- Kendall's tau-b: (P − Q) / sqrt((n0 − n1)(n0 − n2)), with P and Q the concordant and discordant
  pairs, n0 = n(n−1)/2, n1 and n2 the pairs tied in x and in y (Kendall 1945, "The treatment of
  ties in ranking problems"; ``scipy.stats.kendalltau``'s default ``variant="b"``).

Both are undefined (None) for fewer than two items or when one side is constant.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

DECIMALS = 9


def rounded(values: Sequence[float]) -> np.ndarray:
    """``values`` as floats rounded to :data:`DECIMALS` places: equal results are ties."""
    return np.round(np.asarray(values, dtype=float), DECIMALS)


def average_ranks(values: Sequence[float]) -> np.ndarray:
    """1-based ranks, ascending; tied values share the mean of their positions."""
    x = rounded(values)
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x), dtype=float)
    i = 0
    while i < len(x):
        j = i
        while j + 1 < len(x) and x[order[j + 1]] == x[order[i]]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1  # positions i..j (0-based) → mean 1-based rank
        i = j + 1
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho with ties: Pearson's correlation of the average ranks."""
    _check_pair(x, y)
    if len(x) < 2:
        return None
    rx, ry = average_ranks(x), average_ranks(y)
    dx, dy = rx - rx.mean(), ry - ry.mean()
    denom = math.sqrt(float(dx @ dx) * float(dy @ dy))
    return None if denom == 0 else float(dx @ dy) / denom


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's tau-b: concordant minus discordant pairs over the geometric mean of the pairs
    untied in x and untied in y."""
    _check_pair(x, y)
    n = len(x)
    if n < 2:
        return None
    xr, yr = rounded(x), rounded(y)
    upper = np.triu_indices(n, k=1)  # each unordered pair once
    sx = np.sign(xr[:, None] - xr[None, :])[upper]
    sy = np.sign(yr[:, None] - yr[None, :])[upper]
    n0 = n * (n - 1) // 2
    n1, n2 = n0 - int(np.count_nonzero(sx)), n0 - int(np.count_nonzero(sy))  # pairs tied in x, in y
    if n1 == n0 or n2 == n0:
        return None
    # P − Q: +1 for a pair ordered alike, −1 for one ordered oppositely, 0 for a tie on either side.
    return float(np.sum(sx * sy)) / math.sqrt((n0 - n1) * (n0 - n2))


def _check_pair(x: Sequence[float], y: Sequence[float]) -> None:
    if len(x) != len(y):
        raise ValueError(f"rank correlation needs paired values; got {len(x)} and {len(y)}")
