"""Small statistics for the report: smoothing and the bootstrap interval of one mean (paired
comparisons are :mod:`audiobook_rl.compare.paired`).

Every random draw uses a seeded generator, so the same inputs give the same numbers (and the same
bytes of HTML) on every rerun.
"""

from __future__ import annotations

import numpy as np


def mean(values: list[float]) -> float | None:
    """Arithmetic mean, or None for no values."""
    return float(np.mean(values)) if values else None


def std(values: list[float]) -> float | None:
    """Sample standard deviation (ddof=1); 0.0 for one value, None for none."""
    if not values:
        return None
    return float(np.std(values, ddof=1)) if len(values) > 1 else 0.0


def moving_average(values: list[float], window: int) -> list[float]:
    """Trailing mean over the last ``window`` values (fewer at the start), one per input value."""
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def bootstrap_ci(values: list[float], samples: int, seed: int, confidence: float) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the mean; None for fewer than two values.

    With one value there is nothing to resample; the report then shows no interval rather than
    a zero-width one that would look certain.
    """
    if len(values) < 2:
        return None
    rng = np.random.default_rng(seed)
    data = np.asarray(values, dtype=float)
    means = data[rng.integers(0, len(data), size=(samples, len(data)))].mean(axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return float(low), float(high)


def relative_change(value: float | None, base: float | None) -> float | None:
    """(value - base) / base in percent; None when either is missing or the base is 0."""
    if value is None or base is None or base == 0:
        return None
    return 100.0 * (value - base) / base
