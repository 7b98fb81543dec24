"""What the judges say beyond the mean, on the split the headline is measured on: which rubric
dimensions each checkpoint's gain comes from (a reward-hacking check, :mod:`..compare.hacking`) and,
when more judges scored the same outputs (``judge.agreement``), how far they agree and whether a
gain appears under one judge only (:mod:`..compare.agreement`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..compare.agreement import GainCheck, PairAgreement, agreement, one_judge_gains
from ..compare.hacking import HackingCheck, hacking_check
from .load import RunData, read_jsonl_tolerant


def hacking_checks(split: RunData, settings: dict) -> list[HackingCheck]:
    """Every evaluated checkpoint against the baseline (the first step), dimension by dimension,
    with the report's bootstrap settings and its smallest change counted."""
    base = split.steps[0]
    return [
        hacking_check(
            s.scores,
            base.scores,
            step=s.step,
            samples=settings["bootstrap_samples"],
            seed=settings["bootstrap_seed"] + s.step,
            confidence=settings["confidence"],
            min_effect=settings["overfit_min_drop"],
        )
        for s in split.steps[1:]
    ]


@dataclass
class JudgeAgreement:
    """The judges (the configured one first), each pair's agreement and each checkpoint's gain per judge."""

    names: list[str]
    pairs: list[PairAgreement]
    gains: list[GainCheck]

    @property
    def flagged(self) -> list[GainCheck]:
        return [g for g in self.gains if g.flagged]


def judge_agreement(split: RunData, judge: str, extra: dict[str, dict[int, str | Path]], settings: dict,
                    top: int = 5) -> JudgeAgreement | None:
    """``judge`` (the configured judge's name; its scores are ``split``'s) and the ``extra`` judges
    (name → step → scores.jsonl) on the same outputs; None without extra judges. Unreadable lines
    and missing files are named in ``split.problems``."""
    if not extra:
        return None
    judges = {judge: {s.step: s.scores for s in split.steps}}
    for name, files in extra.items():
        judges[name] = {
            step: {str(row["id"]): row for row in read_jsonl_tolerant(path, split.problems) if "id" in row}
            for step, path in files.items()
        }
    base = split.steps[0].step
    gains = one_judge_gains(
        judges,
        base_step=base,
        samples=settings["bootstrap_samples"],
        seed=settings["bootstrap_seed"],
        confidence=settings["confidence"],
        min_effect=settings["overfit_min_drop"],
    )
    return JudgeAgreement([judge, *extra], agreement(judges, top=top), gains)
