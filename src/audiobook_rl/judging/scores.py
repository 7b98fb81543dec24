"""The ``judge`` stage: score each checkpoint's final scripts against the reference scripts of the
validation tasks (results/data/val.parquet, where training reads its references too)."""

from __future__ import annotations

import logging
import statistics

from ..dataset import Task
from ..errors import UserError

log = logging.getLogger(__name__)


def score_outputs(outputs: list[dict], tasks: list[Task], judge, step: int | str) -> list[dict]:
    """One ``scores.jsonl`` row per row of ``outputs.jsonl``: the judge's verdict on its ``final``
    script (the rewrite, i.e. the trajectory's answer) against the reference of its task."""
    by_id = {task.id: task for task in tasks}
    missing = [o["id"] for o in outputs if o["id"] not in by_id]
    if missing:
        raise UserError(
            f"outputs of step {step} name slices {missing[:5]} that their split's tasks lack; "
            "regenerate the outputs from the current split."
        )
    cases = [
        {
            "id": o["id"],
            "source": by_id[o["id"]].text,
            "reference": by_id[o["id"]].reference,
            "candidate": o.get("final") or "",
            "aliases": by_id[o["id"]].aliases,
        }
        for o in outputs
    ]
    verdicts = judge.score_many(cases)
    rows = [
        {
            "id": case["id"],
            "step": step,
            "overall": v.overall,
            "scores": v.scores,
            "reasons": v.reasons,
            "backend": v.backend,
            "model": v.model,
            "error": v.error,
        }
        for case, v in zip(cases, verdicts)
    ]
    scored = [r["overall"] for r in rows if r["overall"] is not None]
    log.info(
        "step %s: %d scripts judged by %s (%s); mean overall %s; %d judge failures",
        step,
        len(rows),
        judge.backend,
        judge.model,
        f"{statistics.mean(scored):.3f}" if scored else "n/a",
        len(rows) - len(scored),
    )
    return rows
