"""What the numbers say: the headline sentence, an over-fitting note and warnings about noise.

Every message is plain text (no markup); the template escapes it like any other string.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import stats
from .checkpoints import CheckpointRow, best_row


@dataclass
class Curves:
    """Training reward (raw and smoothed) and validation reward, by step."""

    train_steps: list[int]
    train: list[float]
    train_smooth: list[float]
    val_steps: list[int]
    val: list[float]

    @property
    def best_val(self) -> tuple[int, float] | None:
        """(step, value) of the highest validation reward; the earliest step on ties."""
        if not self.val:
            return None
        i = max(range(len(self.val)), key=lambda k: (self.val[k], -self.val_steps[k]))
        return self.val_steps[i], self.val[i]


def curves(metrics: list[dict], window: int) -> Curves:
    """The reward series of the metrics rows; the smoothed curve is a trailing mean of ``window``."""
    train = [(m["step"], m["train_reward"]) for m in metrics if m.get("train_reward") is not None]
    val = [(m["step"], m["val_reward"]) for m in metrics if m.get("val_reward") is not None]
    raw = [v for _, v in train]
    return Curves([s for s, _ in train], raw, stats.moving_average(raw, window), [s for s, _ in val], [v for _, v in val])


def fmt(x: float | None, digits: int = 3) -> str:
    """A score for the page: fixed decimals, an en dash when missing."""
    return "–" if x is None else f"{x:.{digits}f}"


def pct(x: float | None) -> str:
    """A relative change with its sign, or n/a."""
    return "n/a" if x is None else f"{x:+.1f}%"


def headline(rows: list[CheckpointRow]) -> str:
    """One sentence a reader can quote: the best checkpoint, its score, the baseline's, the change."""
    base, best = rows[0], best_row(rows)
    base_name = "the baseline (step 0)" if base.step == 0 else f"the first evaluated step ({base.step})"
    if len(rows) == 1 and base.mean is not None:
        return f"Only {base_name} was evaluated: validation score {fmt(base.mean)} (n = {base.n_scored})."
    if best is None:
        return "No checkpoint could be scored: every judge call failed or no scores were written (see the table)."
    if base.mean is None:
        return (
            f"The best checkpoint is step {best.step} with validation score {fmt(best.mean)} (n = {best.n_scored}); "
            f"{base_name} has no judge score, so no change can be computed."
        )
    change = "" if best.change_pct is None else f", {pct(best.change_pct)}"
    if best.is_baseline:
        others = [r for r in rows[1:] if r.mean is not None]
        runner = max(others, key=lambda r: (r.mean, -r.step)) if others else None
        tail = f"; the best trained checkpoint, step {runner.step}, scored {fmt(runner.mean)} ({pct(runner.change_pct)})" if runner else ""
        return f"No checkpoint beat {base_name}, which scored {fmt(base.mean)} on the validation set (n = {base.n_scored}){tail}."
    return (
        f"The best checkpoint is step {best.step}: validation score {fmt(best.mean)} (n = {best.n_scored}) "
        f"against {fmt(base.mean)} for {base_name}{change}."
    )


def overfitting_note(c: Curves, rows: list[CheckpointRow], min_drop: float) -> str | None:
    """A note when validation peaks before its last point and then drops while training reward rises.

    The validation curve of training is used when it has at least two points; otherwise the
    checkpoint scores of the table stand in for it.
    """
    if len(c.val) >= 2:
        points, what = list(zip(c.val_steps, c.val)), "validation reward"
    else:
        points = [(r.step, r.mean) for r in rows if r.mean is not None]
        what = "checkpoint validation score"
        if len(points) < 3:
            return None
    peak_i = max(range(len(points)), key=lambda k: (points[k][1], -points[k][0]))
    peak_step, peak = points[peak_i]
    last_step, last = points[-1]
    drop = peak - last
    if peak_step == last_step or drop < min_drop:
        return None
    rise = _train_rise(c, peak_step, last_step)
    where = (
        f"The {what} peaked at step {peak_step} ({fmt(peak)}) and fell to {fmt(last)} by step {last_step} "
        f"(−{fmt(drop)}, {pct(stats.relative_change(last, peak))})"
    )
    if rise is None:
        return where + "; training reward was not logged over that stretch, so over-fitting cannot be confirmed."
    before, after = rise
    if after > before:
        return (
            f"Over-fitting: {where}, while the smoothed training reward kept rising from {fmt(before)} to {fmt(after)}. "
            f"Later steps fit the training slices better and generalise worse; use the best-validation checkpoint, not the last."
        )
    return (
        f"{where}, and the smoothed training reward did not rise either ({fmt(before)} → {fmt(after)}): "
        "this looks like unstable training rather than over-fitting."
    )


def _train_rise(c: Curves, start: int, end: int) -> tuple[float, float] | None:
    """Smoothed training reward at the last logged step ≤ ``start`` and ≤ ``end``."""

    def at(step: int) -> float | None:
        vals = [v for s, v in zip(c.train_steps, c.train_smooth) if s <= step]
        return vals[-1] if vals else None

    a, b = at(start), at(end)
    return None if a is None or b is None else (a, b)


def noise_warnings(rows: list[CheckpointRow], min_n: int, confidence: float) -> list[str]:
    """Warnings when the validation set is too small to tell the checkpoints apart, and each
    checkpoint's paired difference to the baseline with its interval (does it beat it at all?)."""
    out = []
    best = best_row(rows)
    if best is None:
        return out
    level = f"{confidence:.0%}"
    if best.n_scored < min_n:
        out.append(
            f"Only n = {best.n_scored} validation slices were scored for step {best.step} (fewer than {min_n}): "
            "differences between checkpoints of a few hundredths are within noise."
        )
    for r in rows:
        if r.is_baseline or r.diff is None:
            continue
        if r.diff_ci is None:
            out.append(f"Step {r.step} vs baseline: too few slices scored at both steps for an interval.")
            continue
        lo, hi = r.diff_ci
        verdict = (
            "the validation set cannot tell them apart"
            if lo <= 0 <= hi
            else ("better than the baseline" if lo > 0 else "worse than the baseline")
        )
        out.append(f"Step {r.step} vs baseline: paired difference {r.diff:+.3f}, {level} bootstrap interval [{lo:+.3f}, {hi:+.3f}]: {verdict}.")
    others = [r for r in rows if r is not best and r.ci is not None and not r.is_baseline]
    if best.ci is not None:
        overlap = [r.step for r in others if r.ci[1] >= best.ci[0]]
        if overlap:
            names = ", ".join(str(s) for s in overlap)
            out.append(
                f"The {level} interval of the best checkpoint (step {best.step}) overlaps that of step(s) {names}: "
                "the ranking among these checkpoints is not reliable."
            )
    return out


def coverage_warnings(rows: list[CheckpointRow]) -> list[str]:
    """Judge failures and unscored slices, per step, so no mean silently rests on fewer slices."""
    out = []
    failed = [(r.step, r.n_failed) for r in rows if r.n_failed]
    if failed:
        total = sum(n for _, n in failed)
        each = ", ".join(f"step {s}: {n}" for s, n in failed)
        out.append(f"{total} judge failure(s) ({each}) are excluded from the means, not counted as 0; their errors are shown in the samples.")
    for r in rows:
        if r.n_missing:
            out.append(f"Step {r.step}: {r.n_missing} of {r.n_val} validation slices have no score line; its mean rests on the rest.")
    return out
