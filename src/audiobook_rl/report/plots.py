"""The report's charts as inline SVG text, drawn with matplotlib's SVG backend.

Only numbers and fixed English labels go into a chart, never text from a model or the corpus, so
the SVG needs no escaping. The output is deterministic (fixed id salt, no date) so reruns are
byte-identical.
"""

from __future__ import annotations

import io
import re

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from .checkpoints import CheckpointRow  # noqa: E402
from .diagnosis import Curves  # noqa: E402

TRAIN_RAW, TRAIN, VAL, BEST, CKPT, BASE = "#9ecae1", "#1f5fa8", "#d95f02", "#1b9e77", "#8c8c8c", "#555555"

_STYLE = {
    "svg.fonttype": "none",  # text stays text: small, crisp, selectable
    "svg.hashsalt": "audiobook-rl-report",  # stable element ids
    "font.family": "sans-serif",
    "font.size": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e6e6e6",
    "grid.linewidth": 0.8,
    "axes.axisbelow": True,
}


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    # Inline <svg> in HTML: no XML prolog or DOCTYPE; scale with the page.
    text = text[text.index("<svg") :]
    text = re.sub(r'<svg([^>]*?) width="[^"]*" height="[^"]*"', r'<svg\1 width="100%" preserveAspectRatio="xMidYMid meet"', text, count=1)
    return re.sub(r"<!--.*?-->\n?", "", text, flags=re.S)


def curves_svg(c: Curves, eval_steps: list[int], window: int) -> str | None:
    """Training reward (raw and smoothed) and validation reward per step, best-validation step and
    evaluated checkpoints marked; None when nothing was logged."""
    if not c.train and not c.val:
        return None
    with plt.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(9.5, 3.9))
        if c.train:
            ax.plot(c.train_steps, c.train, color=TRAIN_RAW, lw=0.9, label="train reward (raw)")
            ax.plot(c.train_steps, c.train_smooth, color=TRAIN, lw=2.2, label=f"train reward (mean of last {window})")
        if c.val:
            ax.plot(c.val_steps, c.val, color=VAL, lw=1.8, marker="o", ms=4.5, label="validation reward")
        values = c.train + c.val
        top = max(values) + 0.12 * (max(values) - min(min(values), 0) or 1)
        ax.set_ylim(min(0.0, min(values)), top)
        for step in eval_steps:
            ax.axvline(step, color=CKPT, lw=0.9, ls=":", zorder=0)
            ax.annotate(
                "base" if step == 0 else f"ckpt {step}", (step, 0), xycoords=("data", "axes fraction"),
                xytext=(3, 4), textcoords="offset points", fontsize=8, color=BASE, rotation=90, va="bottom",
            )
        best = c.best_val
        if best is not None:
            ax.axvline(best[0], color=BEST, lw=1.6, ls="--", zorder=1, label=f"best validation: step {best[0]}")
            ax.plot([best[0]], [best[1]], marker="*", ms=14, color=BEST, zorder=5, ls="none")
            steps = c.train_steps + c.val_steps
            right = best[0] > min(steps) + 0.7 * (max(steps) - min(steps))  # keep the label inside the axes
            ax.annotate(
                f"best val {best[1]:.3f} @ step {best[0]}", best, xytext=(-10 if right else 10, 10), textcoords="offset points",
                ha="right" if right else "left", fontsize=9, color=BEST, fontweight="bold", zorder=6,
                bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "none", "alpha": 0.85},
            )
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole numbers
        ax.set_xlabel("training step")
        ax.set_ylabel("reward")
        ax.legend(loc="lower left", bbox_to_anchor=(0, 1.01), ncol=4, frameon=False, fontsize=8.5, borderaxespad=0)
        return _svg(fig)


def checkpoints_svg(rows: list[CheckpointRow], confidence: float) -> str | None:
    """Each checkpoint's per-slice scores (grey, paired slices joined) with the mean and its interval."""
    scored = [r for r in rows if r.mean is not None]
    if not scored:
        return None
    with plt.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(9.5, 2.9))
        xs = list(range(len(rows)))
        ids = sorted({i for r in rows for i in r.overall_by_id})
        if len(ids) <= 40:  # paired lines help with few slices and clutter with many
            for sid in ids:
                pts = [(x, r.overall_by_id[sid]) for x, r in zip(xs, rows) if sid in r.overall_by_id]
                ax.plot([p[0] for p in pts], [p[1] for p in pts], color="#cfcfcf", lw=0.8, zorder=1)
        for x, r in zip(xs, rows):
            vals = list(r.overall_by_id.values())
            ax.plot([x] * len(vals), vals, "o", color="#b0b0b0", ms=4, zorder=2)
            if r.mean is None:
                ax.annotate("no score", (x, 0), xytext=(0, 6), textcoords="offset points", ha="center", fontsize=8, color=VAL)
                continue
            color = BEST if r.is_best else TRAIN
            if r.ci is not None:
                ax.errorbar([x], [r.mean], yerr=[[r.mean - r.ci[0]], [r.ci[1] - r.mean]], fmt="none", ecolor=color, elinewidth=2.2, capsize=6, zorder=3)
            ax.plot([x], [r.mean], marker="D", ms=8, color=color, zorder=4)
            ax.annotate(f"{r.mean:.3f}", (x, r.mean), xytext=(10, -3), textcoords="offset points", fontsize=9, color=color, fontweight="bold")
        base = rows[0]
        if base.mean is not None:
            ax.axhline(base.mean, color=BASE, lw=1, ls="--", zorder=0)
        ax.set_xticks(xs, [("base (0)" if r.step == 0 else f"step {r.step}") + (" ★" if r.is_best else "") + f"\nn={r.n_scored}" for r in rows])
        ax.set_xlim(-0.5, len(rows) - 0.5)
        ax.set_ylim(0, max(1.0, max(v for r in rows for v in r.overall_by_id.values()) * 1.05))
        ax.set_ylabel(f"judge score (mean, {confidence:.0%} CI)")
        return _svg(fig)
