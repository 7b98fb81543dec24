"""The ``judge`` stage: score each checkpoint's final scripts against the reference scripts."""

from __future__ import annotations

import logging
import statistics

from ..errors import UserError

log = logging.getLogger(__name__)


def score_outputs(outputs: list[dict], labels: list[dict], judge, step: int | str) -> list[dict]:
    """One ``scores.jsonl`` row per row of ``outputs.jsonl``: the judge's verdict on its ``final``
    script (the rewrite, i.e. the trajectory's answer) against the slice's reference in ``labels``."""
    by_id = {row["id"]: row for row in labels}
    missing = [o["id"] for o in outputs if o["id"] not in by_id]
    if missing:
        raise UserError(
            f"outputs of step {step} name slices {missing[:5]} that results/labels.jsonl lacks; "
            "regenerate the outputs from the current labels."
        )
    cases = [
        {
            "id": o["id"],
            "source": by_id[o["id"]]["text"],
            "reference": by_id[o["id"]]["script"],
            "candidate": o.get("final") or "",
            "aliases": by_id[o["id"]].get("aliases") or {},
        }
        for o in outputs
    ]
    verdicts = judge.score_many(cases)
    rows = [
        {
            "id": case["id"],
            "step": int(step),
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
