"""What the numbers say: the headline sentence, an over-fitting note, mode collapse and warnings
about noise.

Two checkpoints are called different by one rule only (:func:`.checkpoints.compare`): the paired
bootstrap interval of their difference on the slices both scored excludes 0, and the difference is
at least ``report.overfit_min_drop``. The headline, the over-fitting note and the noise warnings
all use it, so they cannot contradict each other. A
checkpoint whose outputs ignore their input (:mod:`..judging.diversity`) is never called an
improvement, whatever its score. Every message is plain text (no markup); the template escapes it
like any other string.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..compare.paired import Paired
from ..steps import best_step
from ..training.collapse import ADVICE, collapse, saturation
from . import stats
from .checkpoints import CheckpointRow, best_row, compare, paired_diff


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
        """(step, value) of the best validation reward (:func:`audiobook_rl.steps.best_step`)."""
        val = dict(zip(self.val_steps, self.val))
        step = best_step(val)
        return None if step is None else (step, val[step])


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


@dataclass
class Note:
    """A diagnosis box: ``level`` is ``ok``, ``warn``, ``bad`` or ``neutral`` (its colour), ``text`` plain text."""

    level: str
    text: str


# Below this many paired slices, a nominal 95 % paired interval is measured to cover the true
# difference clearly less often than it says (bench/bench_compare_coverage.py: 0.78 at 4 slices,
# 0.92 at 16, 0.94 at 32), so the report says in words that its intervals are wide.
WIDE_BELOW = 16


def diff_text(r: CheckpointRow, confidence: float) -> str:
    """The paired difference to the baseline with its interval, then the probability of improvement
    with its interval, then the relative change: ``+0.105 (95% paired interval +0.020 to +0.190),
    P(improve) 0.75 (95% interval 0.50 to 0.94), +54.9% relative``."""
    if r.diff is None:
        return "no slice scored at both steps"
    level = f"{confidence:.0%}"
    interval = (
        f"{level} paired interval {r.diff_ci[0]:+.3f} to {r.diff_ci[1]:+.3f}"
        if r.diff_ci
        else "too few slices scored at both steps for an interval"
    )
    p = r.vs_base
    improve = f", P(improve) {p.p_improve:.2f}"
    if p.p_improve_ci:
        improve += f" ({level} interval {p.p_improve_ci[0]:.2f} to {p.p_improve_ci[1]:.2f})"
    relative = "" if r.change_pct is None else f", {pct(r.change_pct)} relative"
    return f"{r.diff:+.3f} ({interval}){improve}{relative}"


def verdict(r: CheckpointRow) -> str:
    """The checkpoint against the baseline (:func:`.checkpoints.compare`), unless its outputs
    ignore their input (``ignores input``): such a checkpoint is never an improvement."""
    return "ignores input" if r.diversity.ignores_input else r.vs_baseline


def headline(rows: list[CheckpointRow], confidence: float, held_out: bool = False,
             sft: CheckpointRow | None = None) -> Note:
    """One sentence a reader can quote: the best checkpoint (chosen on validation) against the
    baseline, the paired difference with its interval first, the probability of improvement second
    and the relative change last; "no clear change" when the interval includes 0, and never an
    improvement when the outputs ignore their input. Its level is ``ok`` (green) only for a clear
    improvement. ``rows`` are the held-out test set's when ``held_out``, else the validation set's:
    then a sentence says the score is optimistic, measured on the slices that chose the checkpoint.
    With a warm start (``sft``, where GRPO started), a sentence compares the checkpoint with it too:
    the baseline says what the whole recipe gained, the warm start what RL added to imitation."""
    note = _headline(rows, confidence, "test" if held_out else "validation")
    best = best_row(rows)
    if best is None or rows[0].mean is None:
        return note
    if sft is not None and best.vs_sft is not None:
        note = Note(note.level, note.text + " " + sft_text(best, sft, confidence))
    if held_out:
        tail = (f" The checkpoint was chosen on the validation slices; every number here is measured on the "
                f"{best.n_val} held-out test slices, which neither training nor that choice saw.")
    else:
        tail = (" This score is measured on the validation slices that chose the checkpoint, so it is optimistic "
                "(no held-out test set: split.n_test is 0).")
    n = best.vs_base.n if best.vs_base else best.n_scored
    if n < WIDE_BELOW:
        tail += (f" With n = {n} paired slices the intervals are wide, and a nominal {confidence:.0%} interval covers "
                 f"the true difference less often than it says (fewer than {WIDE_BELOW} slices).")
    return Note(note.level, note.text + tail)


def paired_text(p: Paired | None, confidence: float) -> str:
    """A paired difference with its interval: ``+0.105 (95% paired interval +0.020 to +0.190)``."""
    if p is None or p.mean_diff is None:
        return "no slice scored at both"
    if not p.diff_ci:
        return f"{p.mean_diff:+.3f} (too few slices for an interval)"
    return f"{p.mean_diff:+.3f} ({confidence:.0%} paired interval {p.diff_ci[0]:+.3f} to {p.diff_ci[1]:+.3f})"


def sft_text(best: CheckpointRow, sft: CheckpointRow, confidence: float) -> str:
    """Did RL help beyond imitation? The best checkpoint against the warm start GRPO started from."""
    says = {"better": "GRPO improved on it", "worse": "GRPO made it worse", "unclear": "no clear change from GRPO"}
    return (
        f"Against the SFT warm start that GRPO started from ({fmt(sft.mean)}), step {best.step} differs by "
        f"{paired_text(best.vs_sft, confidence)}: {says[best.vs_sft_verdict]}."
    )


def voice_text(r: CheckpointRow, base: CheckpointRow, confidence: float) -> str:
    """What a listener hears from checkpoint ``r``: its voice accuracy with the narration and quote
    shares, and its paired change against the baseline."""
    v = r.voice
    if v.overall is None:
        return f"{r.name}: no voice accuracy (no readable reference for its slices)."
    parts = [f"narration by the narrator {pct_share(v.narration)}", f"quotes by the right person {pct_share(v.quotes)}"]
    text = f"Voice accuracy of {r.name}: {pct_share(v.overall)} of the characters read by the right voice ({', '.join(parts)})"
    if r.voice_vs_base is not None and base.voice.overall is not None:
        text += f", against {pct_share(base.voice.overall)} for the baseline: {paired_text(r.voice_vs_base, confidence)}"
    return text + "."


def pct_share(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.0f}%"


def voice_notes(rows: list[CheckpointRow]) -> list[str]:
    """One sentence per checkpoint whose scripts are unusable as an audiobook (:attr:`CheckpointRow.voice_flags`)."""
    out = []
    for r in rows:
        if r.voice_flags:
            top = ", ".join(f"{name} ({n})" for name, n in r.speakers.top(5))
            out.append(f"{r.name} {' and '.join(r.voice_flags)}: its most used speakers are {top}. "
                       "A listener would hear the wrong voices, whatever its judge score.")
    return out


def _headline(rows: list[CheckpointRow], confidence: float, split: str) -> Note:
    base, best = rows[0], best_row(rows)
    base_name = "the baseline (step 0)" if base.step == 0 else f"the first evaluated step ({base.step})"
    if len(rows) == 1 and base.mean is not None:
        return Note("neutral", f"Only {base_name} was evaluated: {split} score {fmt(base.mean)} (n = {base.n_scored}).")
    if best is None:
        scored = "" if base.mean is None else f" ({base_name} scored {fmt(base.mean)})"
        return Note("bad", f"No trained checkpoint could be scored{scored}: every judge call failed or no scores were written (see the table).")
    if base.mean is None:
        return Note(
            "neutral",
            f"The best checkpoint is step {best.step} with {split} score {fmt(best.mean)} (n = {best.n_scored}); "
            f"{base_name} has no judge score, so no change can be computed.",
        )
    if best.mean <= base.mean:
        return Note(
            "neutral",
            f"No checkpoint beat {base_name}, which scored {fmt(base.mean)} on the {split} set (n = {base.n_scored}); "
            f"the best trained checkpoint, step {best.step}, scored {fmt(best.mean)}: {diff_text(best, confidence)}.",
        )
    scores = f"{split} score {fmt(best.mean)} (n = {best.n_scored}) against {fmt(base.mean)} for {base_name}"
    change = diff_text(best, confidence)
    outcome = verdict(best)
    if outcome == "ignores input":
        d = best.diversity
        alt = best_row(rows, keep=lambda r: not r.diversity.ignores_input)
        says = {"better": "an improvement", "worse": "worse", "unclear": "no clear change"}
        tail = (
            f" The best checkpoint whose outputs follow their input, step {alt.step}: {diff_text(alt, confidence)} "
            f"({says[alt.vs_baseline]})."
            if alt
            else ""
        )
        return Note(
            "bad",
            f"Not an improvement: step {best.step} scores highest, {change}, but its outputs ignore their input "
            f"({d.distinct} distinct script(s) for {d.n} excerpts; see the diagnosis); {scores}.{tail}",
        )
    if outcome == "better":
        return Note("ok", f"Step {best.step} improves on {base_name}: {change}; {scores}.")
    if outcome == "worse":
        return Note(
            "bad", f"Step {best.step}, the best-scoring checkpoint, is worse than {base_name} on the slices both scored: {change}; {scores}."
        )
    return Note("neutral", f"No clear change: the best checkpoint, step {best.step}, differs from {base_name} by {change}; {scores}.")


def overfitting_note(c: Curves, rows: list[CheckpointRow], settings: dict) -> Note:
    """Over-fitting or not, decided by the report's one rule (:func:`.checkpoints.compare`): the
    last evaluated checkpoint is clearly worse than the best one (their paired interval lies below
    0 and the drop is at least ``report.overfit_min_drop``); then the training reward tells
    over-fitting (it kept rising) from unstable training. ``settings`` is the ``report`` section.

    With fewer than two scored checkpoints nothing can be tested; a drop of the validation curve
    logged during training is then reported as untested.
    """
    scored = [r for r in rows if r.mean is not None]
    min_drop = settings["overfit_min_drop"]
    if len(scored) < 2:
        peak = _curve_drop(c, min_drop)
        if peak:
            return Note("warn", f"{peak}; with fewer than two scored checkpoints the drop cannot be tested against noise.")
        return Note("ok", "No sign of over-fitting: validation does not peak before its last point and then drop.")
    best, last = best_row(rows), scored[-1]
    if best is last:
        peak = _curve_drop(c, min_drop)
        tail = f" ({peak}; the evaluated checkpoints do not bracket that drop, so it is not tested)" if peak else ""
        return Note("ok", f"No sign of over-fitting: the last evaluated checkpoint, step {last.step}, scores highest{tail}.")
    drop = paired_diff(last, best, settings)
    diff, ci = drop.mean_diff, drop.diff_ci
    if ci is None:
        return Note(
            "ok",
            f"No clear sign of over-fitting: step {last.step} scores {fmt(last.mean)} against {fmt(best.mean)} at step "
            f"{best.step}, the best checkpoint, but too few slices were scored at both steps for a paired interval.",
        )
    where = (
        f"step {last.step} scores {fmt(last.mean)} against {fmt(best.mean)} at step {best.step}, the best checkpoint: "
        f"{diff:+.3f} ({settings['confidence']:.0%} paired interval {ci[0]:+.3f} to {ci[1]:+.3f})"
    )
    if compare(drop, settings) != "worse":
        why = "which includes 0, so the drop is within noise" if ci[1] >= 0 else f"a drop smaller than report.overfit_min_drop ({min_drop})"
        return Note("ok", f"No clear sign of over-fitting: {where}, {why}.")
    rise = _train_rise(c, best.step, last.step)
    if rise is None:
        return Note("warn", f"A clear drop after the best checkpoint: {where}; training reward was not logged over that stretch, so over-fitting cannot be confirmed.")
    before, after = rise
    if after > before:
        return Note(
            "bad",
            f"Over-fitting: {where}, while the smoothed training reward kept rising from {fmt(before)} to {fmt(after)}. "
            f"Later steps fit the training slices better and generalise worse; use step {best.step}, not the last.",
        )
    return Note(
        "bad",
        f"A clear drop after the best checkpoint: {where}, and the smoothed training reward did not rise either "
        f"({fmt(before)} → {fmt(after)}): this looks like unstable training rather than over-fitting.",
    )


def _curve_drop(c: Curves, min_drop: float) -> str | None:
    """A sentence when the validation curve logged during training peaks before its last point and
    then falls by at least ``min_drop``."""
    if len(c.val) < 2 or c.best_val is None:
        return None
    (peak_step, peak), last_step, last = c.best_val, c.val_steps[-1], c.val[-1]
    if peak_step == last_step or peak - last < min_drop:
        return None
    return f"the validation reward logged during training peaked at step {peak_step} ({fmt(peak)}) and fell to {fmt(last)} by step {last_step}"


def collapse_notes(rows: list[CheckpointRow]) -> list[str]:
    """One sentence per checkpoint whose outputs ignore their input (see :mod:`..judging.diversity`)."""
    out = []
    for r in rows:
        d = r.diversity
        if not d.ignores_input:
            continue
        name = "The baseline (step 0)" if r.is_baseline and r.step == 0 else f"Step {r.step}"
        out.append(
            f"{name} ignores its input: {d.distinct} distinct script(s) for {d.n} excerpts, and the outputs of different "
            f"excerpts are {fmt(d.cross_similarity, 2)} alike, against {fmt(d.source_similarity, 2)} to their own excerpt. "
            "Whatever it scores, it does not adapt the text it is given: mode collapse, not an improvement."
        )
    return out


def training_collapse_notes(metrics: list[dict], train: dict) -> list[str]:
    """A sentence when training went ``train.collapse_patience`` steps (3 when the guard was off) in a
    row without a learning signal (:func:`..training.collapse.collapse`, the guard's own rule), and
    one when it went that many with its tasks learned (:func:`..training.collapse.saturation`)."""
    patience = train.get("collapse_patience") or 3
    found = collapse(metrics, patience)
    learned = saturation(metrics, patience)
    out = []
    if found is not None:
        step, reason = found
        out.append(
            f"Training collapsed: by step {step}, for {patience} steps in a row, {reason}, so GRPO had nothing to learn "
            f"from; the checkpoints after that are not trained on anything. To train again, {ADVICE}."
        )
    if learned is not None:
        out.append(
            f"Training saturated: by step {learned}, for {patience} steps in a row, every task's episodes tied at or near "
            "the judge's maximum, so the training tasks were learned and GRPO had nothing left to learn from them; the "
            "checkpoints after that differ little. More training excerpts (split.n_train) give it more to learn."
        )
    return out


def _train_rise(c: Curves, start: int, end: int) -> tuple[float, float] | None:
    """Smoothed training reward at the last logged step ≤ ``start`` and ≤ ``end``."""

    def at(step: int) -> float | None:
        vals = [v for s, v in zip(c.train_steps, c.train_smooth) if s <= step]
        return vals[-1] if vals else None

    a, b = at(start), at(end)
    return None if a is None or b is None else (a, b)


def noise_warnings(rows: list[CheckpointRow], settings: dict, split: str = "validation") -> list[str]:
    """Warnings when the ``split`` set (whose rows these are) is small, each checkpoint's paired
    difference to the baseline with its interval (does it beat it at all?), and the checkpoints the
    best one cannot be told apart from by the same paired test."""
    out = []
    best = best_row(rows)
    if best is None:
        return out
    level = f"{settings['confidence']:.0%}"
    if best.n_scored < settings["min_n"]:
        out.append(
            f"Only n = {best.n_scored} {split} slices were scored for step {best.step} (fewer than {settings['min_n']}): "
            "the intervals are wide; a difference is called clear only where its paired interval excludes 0."
        )
    for r in rows:
        if r.is_baseline or r.diff is None:
            continue
        if r.diff_ci is None:
            out.append(f"Step {r.step} vs baseline: too few slices scored at both steps for an interval.")
            continue
        lo, hi = r.diff_ci
        says = {
            "better": "better than the baseline",
            "worse": "worse than the baseline",
            "unclear": f"the {split} set cannot tell them apart"
            if lo <= 0 <= hi
            else f"smaller than the smallest change counted (report.overfit_min_drop = {settings['overfit_min_drop']}): no clear change",
        }[r.vs_baseline]
        if r.diversity.ignores_input:
            says += " in score only (its outputs ignore their input)"
        out.append(f"Step {r.step} vs baseline: paired difference {r.diff:+.3f}, {level} bootstrap interval [{lo:+.3f}, {hi:+.3f}]: {says}.")
    ties = [
        str(r.step)
        for r in rows[1:]
        if r is not best and r.mean is not None and compare(paired_diff(r, best, settings), settings) == "unclear"
    ]
    if ties:
        out.append(
            f"The best checkpoint (step {best.step}) cannot be told apart from step(s) {', '.join(ties)}: "
            f"their paired {level} intervals include 0, so the ranking among these checkpoints is not reliable."
        )
    return out


def coverage_warnings(rows: list[CheckpointRow], split: str = "validation") -> list[str]:
    """Judge failures and unscored slices of the ``split`` set, per step, so no mean silently rests on
    fewer slices."""
    out = []
    failed = [(r.step, r.n_failed) for r in rows if r.n_failed]
    if failed:
        total = sum(n for _, n in failed)
        each = ", ".join(f"step {s}: {n}" for s, n in failed)
        where = "" if split == "validation" else f" on the {split} set"
        out.append(f"{total} judge failure(s){where} ({each}) are excluded from the means, not counted as 0; their errors are shown in the samples.")
    for r in rows:
        if r.n_missing:
            out.append(f"Step {r.step}: {r.n_missing} of {r.n_val} {split} slices have no score line; its mean rests on the rest.")
    return out
