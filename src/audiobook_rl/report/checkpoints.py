"""One row per evaluated checkpoint: the judge's scores and the output checks on one split (the
validation slices, or the held-out test slices).

Judge failures (``overall`` null, ``error`` set) are counted and left out of every mean; they
are never read as a score of 0. Besides the judge's numbers, each row measures the outputs
themselves against the labels, whatever the judge: voice accuracy (who reads each character:
:mod:`..judging.voice`, the rubric's speaker definition), the speaker names the scripts use, and
whether the outputs follow their excerpts at all (:mod:`..judging.diversity`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..compare.paired import Paired, direction, paired
from ..judging import DIMENSIONS, finite_number
from ..judging.diversity import Diversity, diversity
from ..judging.voice import SpeakerUse, VoiceAccuracy, Voices, as_segments, voice_accuracy
from ..script import parse_script
from ..steps import best_step
from . import stats
from .load import RunData, StepEval


@dataclass(frozen=True)
class ScriptChanges:
    """How a checkpoint's final scripts differ from the warm start's, on the slices both wrote:
    how many changed at all, and how many of each side no parser can read (looped to the token
    limit, cut off, not JSON). A score difference with few changed scripts is those scripts alone."""

    changed: int
    of: int
    unreadable_before: int  # the warm start's
    unreadable_after: int  # the checkpoint's


@dataclass
class CheckpointRow:
    step: int
    n_val: int  # slices in the validation set
    n_scored: int  # slices with a judge score
    n_failed: int  # judge failures (error, no score)
    n_missing: int  # validation slices with no score line at all
    mean: float | None
    std: float | None
    ci: tuple[float, float] | None
    dims: dict[str, float | None]
    json_valid: float | None  # share of final outputs that parse as a JSON array
    schema_valid: float | None  # share whose every segment passes the schema
    mean_segments: float | None
    n_outputs: int
    voice: VoiceAccuracy  # characters read by the right voice, pooled over the slices with an output
    speakers: SpeakerUse  # the names the final scripts use
    diversity: Diversity
    overall_by_id: dict[str, float] = field(default_factory=dict)
    voice_by_id: dict[str, float] = field(default_factory=dict)  # voice accuracy of each slice's final script
    finals_by_id: dict[str, str] = field(default_factory=dict)  # each slice's final output, as written
    unreadable_ids: frozenset[str] = frozenset()  # slices whose final output does not parse
    change_pct: float | None = None  # vs the baseline's mean
    vs_base: Paired | None = None  # paired comparison with the baseline (None for the baseline itself)
    voice_vs_base: Paired | None = None  # the same for voice accuracy
    vs_baseline: str = "unclear"  # better / worse / unclear, by :func:`compare`
    is_best: bool = False
    is_baseline: bool = False
    is_sft: bool = False  # the supervised warm start, where GRPO started (not a training step)
    # A trained checkpoint against the warm start (None without one): did RL help beyond imitation?
    vs_sft: Paired | None = None
    voice_vs_sft: Paired | None = None
    vs_sft_verdict: str = "unclear"
    changes_vs_sft: ScriptChanges | None = None
    # The score the best checkpoint is chosen by: the validation mean, also for a row of the test set,
    # whose own mean never chooses (that would make its headline optimistic again).
    chosen_by: float | None = None

    @property
    def name(self) -> str:
        """How the page names the row: ``base (step 0)``, ``SFT warm start`` or ``step N``."""
        if self.is_sft:
            return "SFT warm start"
        return "base (step 0)" if self.step == 0 else f"step {self.step}"

    @property
    def voice_flags(self) -> list[str]:
        """What makes the scripts unusable as an audiobook, in words (the report shows them in red)."""
        flags = []
        if self.speakers.never_narrator:
            flags.append("never uses the narrator (旁白)")
        if self.speakers.mostly_not_persons:
            flags.append(f"names no person of the excerpt in most of its characters' segments ({self.speakers.others} of "
                         f"{self.speakers.others + self.speakers.persons}: speech tags, fragments of the text, invented names)")
        return flags

    @property
    def diff(self) -> float | None:
        """Paired mean difference to the baseline over the slices both scored."""
        return None if self.vs_base is None else self.vs_base.mean_diff

    @property
    def diff_ci(self) -> tuple[float, float] | None:
        return None if self.vs_base is None else self.vs_base.diff_ci


def final_notes(output: dict) -> dict:
    """The parse notes of the final script: as stored, or recomputed from the raw text."""
    notes = output.get("final_notes")
    if isinstance(notes, dict) and "status" in notes:
        return notes
    return parse_script(output.get("final")).notes()


def _row(step: StepEval, run: RunData, settings: dict) -> CheckpointRow:
    ids = run.val_ids or list(step.scores)
    overall: dict[str, float] = {}
    failed = missing = 0
    dims: dict[str, list[float]] = {d: [] for d in DIMENSIONS}
    for sid in ids:
        score = step.scores.get(sid)
        if score is None:
            missing += 1
            continue
        value = finite_number(score.get("overall"))
        if value is None or score.get("error"):
            failed += 1
            continue
        overall[sid] = value
        for d in DIMENSIONS:
            v = finite_number((score.get("scores") or {}).get(d))
            if v is not None:
                dims[d].append(v)
    with_output = [sid for sid in ids if sid in step.outputs]
    notes = [final_notes(step.outputs[sid]) for sid in with_output]
    unreadable = frozenset(sid for sid, n in zip(with_output, notes) if n.get("status") == "invalid")
    parsed = [n for sid, n in zip(with_output, notes) if sid not in unreadable]
    values = list(overall.values())
    finals = [step.outputs[sid].get("final") or "" for sid in with_output]
    voice, voice_by_id, speakers = VoiceAccuracy(), {}, SpeakerUse()
    for sid, final in zip(with_output, finals):
        label = run.labels.get(sid) or {}
        try:
            reference = as_segments(label["script"])
        except (KeyError, TypeError, ValueError):
            continue  # no readable reference for this slice: the labels' problem, shown elsewhere
        text = label.get("text") or run.val_text.get(sid, "")
        names = label.get("names") if isinstance(label.get("names"), list) else None
        counts = voice_accuracy(reference, final, label.get("aliases"), text, names)
        voice += counts
        if counts.overall is not None:
            voice_by_id[sid] = counts.overall
        script = parse_script(final)
        if script.status != "invalid":
            speakers.add(script.segments, Voices.of(text, reference, label.get("aliases"), names))
    return CheckpointRow(
        step=step.step,
        n_val=len(ids),
        n_scored=len(values),
        n_failed=failed,
        n_missing=missing,
        mean=stats.mean(values),
        std=stats.std(values),
        ci=stats.bootstrap_ci(values, settings["bootstrap_samples"], settings["bootstrap_seed"] + step.step, settings["confidence"]),
        dims={d: stats.mean(v) for d, v in dims.items()},
        json_valid=len(parsed) / len(notes) if notes else None,
        schema_valid=sum(1 for n in parsed if not n.get("errors") and n.get("items", 0) > 0) / len(notes) if notes else None,
        mean_segments=stats.mean([float(n.get("items", 0)) if n.get("status") != "invalid" else 0.0 for n in notes]),
        n_outputs=len(notes),
        voice=voice,
        speakers=speakers,
        diversity=diversity(finals, [(run.labels.get(sid) or {}).get("text") or run.val_text.get(sid, "") for sid in with_output]),
        overall_by_id=overall,
        voice_by_id=voice_by_id,
        finals_by_id=dict(zip(with_output, finals)),
        unreadable_ids=unreadable,
    )


# The report's words for :func:`..compare.paired.direction`.
VERDICTS = {"up": "better", "down": "worse", "flat": "unclear", "too few": "unclear"}


def paired_diff(a: CheckpointRow, b: CheckpointRow, settings: dict, measure: str = "overall_by_id") -> Paired:
    """``a`` against ``b`` on the slices both scored (:func:`..compare.paired.paired`), seeded by
    ``a``'s step so every comparison of a checkpoint draws the same resamples; ``measure`` is the
    per-slice field compared (the judge's overall score, or ``voice_by_id``)."""
    return paired(
        getattr(a, measure),
        getattr(b, measure),
        samples=settings["bootstrap_samples"],
        seed=settings["bootstrap_seed"] + a.step,
        confidence=settings["confidence"],
    )


def compare(p: Paired, settings: dict) -> str:
    """The one rule by which the report calls two checkpoints different: ``better`` (``worse``)
    when the paired interval lies above (below) 0 and the difference is at least
    ``report.overfit_min_drop`` (:func:`..compare.paired.direction`); else ``unclear``."""
    return VERDICTS[direction(p, settings["overfit_min_drop"])]


def checkpoint_rows(run: RunData, settings: dict, chosen_by: dict[int, float | None] | None = None) -> list[CheckpointRow]:
    """Rows in step order; the first step (0 = the base policy) is the baseline, the best row is marked.
    ``chosen_by`` (step → validation mean) chooses the best for the rows of the test set; by default
    each row's own mean does (the validation rows)."""
    rows = [_row(s, run, settings) for s in run.steps]
    base = rows[0]
    base.is_baseline = True
    for r in rows:
        r.chosen_by = r.mean if chosen_by is None else chosen_by.get(r.step)
        r.change_pct = stats.relative_change(r.mean, base.mean)
        if r is not base:
            r.vs_base = paired_diff(r, base, settings)
            r.vs_baseline = compare(r.vs_base, settings)
            r.voice_vs_base = paired_diff(r, base, settings, "voice_by_id")
    best = best_row(rows)
    if best is not None:
        best.is_best = True
    return rows


def sft_row(run: RunData, rows: list[CheckpointRow], settings: dict) -> CheckpointRow | None:
    """The warm start's row (None without one), compared with the baseline (``rows[0]``) like a
    checkpoint; each trained row of ``rows`` gets its paired comparison with the warm start."""
    if run.sft is None:
        return None
    sft = _row(run.sft, run, settings)
    sft.is_sft = True
    base = rows[0]
    sft.change_pct = stats.relative_change(sft.mean, base.mean)
    sft.vs_base = paired_diff(sft, base, settings)
    sft.vs_baseline = compare(sft.vs_base, settings)
    sft.voice_vs_base = paired_diff(sft, base, settings, "voice_by_id")
    for r in rows[1:]:
        r.vs_sft = paired_diff(r, sft, settings)
        r.vs_sft_verdict = compare(r.vs_sft, settings)
        r.voice_vs_sft = paired_diff(r, sft, settings, "voice_by_id")
        r.changes_vs_sft = script_changes(r, sft)
    return sft


def script_changes(row: CheckpointRow, sft: CheckpointRow) -> ScriptChanges:
    """``row``'s final scripts against the warm start's, on the slices both wrote."""
    both = [sid for sid in row.finals_by_id if sid in sft.finals_by_id]
    return ScriptChanges(
        changed=sum(1 for sid in both if row.finals_by_id[sid] != sft.finals_by_id[sid]),
        of=len(both),
        unreadable_before=sum(1 for sid in both if sid in sft.unreadable_ids),
        unreadable_after=sum(1 for sid in both if sid in row.unreadable_ids),
    )


def best_row(rows: list[CheckpointRow], keep: Callable[[CheckpointRow], bool] = lambda r: True) -> CheckpointRow | None:
    """The best checkpoint by validation score (:func:`audiobook_rl.steps.best_step`: never the
    baseline, ``rows[0]``), among the rows ``keep`` accepts; None when none of them has a score."""
    trained = {r.step: r for r in rows[1:] if keep(r)}
    step = best_step({s: r.chosen_by for s, r in trained.items()})
    return None if step is None or trained[step].mean is None else trained[step]
