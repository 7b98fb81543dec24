"""Reading the files the report is built from, tolerating what a real run leaves behind.

A malformed line or a missing file does not stop the report: it is skipped and named in
``RunData.problems``, which the report shows, so the reader knows what the numbers rest on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UserError
from ..files import read_jsonl, read_parquet_rows
from ..judging import finite_number
from ..steps import SFT


@dataclass
class StepEval:
    """One evaluated checkpoint: its generations and the judge's scores, keyed by slice id."""

    step: int
    outputs: dict[str, dict] = field(default_factory=dict)
    scores: dict[str, dict] = field(default_factory=dict)
    outputs_path: str = ""
    scores_path: str = ""


@dataclass
class RunData:
    metrics: list[dict]
    labels: dict[str, dict]
    val_ids: list[str]
    steps: list[StepEval]
    problems: list[str] = field(default_factory=list)
    val_text: dict[str, str] = field(default_factory=dict)  # source text by slice id, from the parquet
    val_before: dict[str, str] = field(default_factory=dict)  # the text before it the agent read (agent.context_chars)
    # The same checkpoints on the held-out test slices (split.n_test > 0): ``val_ids``, ``steps`` and
    # ``val_text``/``val_before`` there are the test set's; metrics and labels are this run's, problems shared.
    test: "RunData | None" = None
    # The supervised warm start on the same slices (sft.epochs > 0), where training started: not a
    # training step, so not one of ``steps``.
    sft: StepEval | None = None


def read_jsonl_tolerant(path: str | Path, problems: list[str]) -> list[dict]:
    """JSON objects of a .jsonl file; unreadable lines and a missing file are noted, not fatal."""
    if not Path(path).is_file():
        problems.append(f"{path} is missing; its part of the report is empty.")
        return []
    return read_jsonl(path, problems)


def read_metrics(path: str | Path, problems: list[str]) -> list[dict]:
    """Training metrics sorted by step; lines of the same step are merged, a later value winning
    (a backend may log a step's validation on a line of its own)."""
    by_step: dict[int, dict] = {}
    for row in read_jsonl_tolerant(path, problems):
        step = row.get("step")
        if isinstance(step, bool) or not isinstance(step, int):
            problems.append(f"{path}: a line without an integer 'step'; skipped.")
            continue
        merged = by_step.setdefault(step, {"train_reward": None, "val_reward": None})
        for key, value in row.items():
            if key in ("train_reward", "val_reward"):
                value = finite_number(value)
                if value is None:
                    continue
            merged[key] = value
    return [by_step[s] for s in sorted(by_step)]


def read_val_ids(path: str | Path | None, problems: list[str]) -> tuple[list[str], dict[str, str], dict[str, str]]:
    """Slice ids of the validation parquet in its order, their source texts and the texts before them
    that the agent read (empty without agent.context_chars); empty if no file."""
    if not path:
        return [], {}, {}
    try:
        infos = [row["extra_info"] for row in read_parquet_rows(path, columns=["extra_info"])]
        ids = [str(info["slice_id"]) for info in infos]
    except (OSError, ValueError, KeyError, TypeError) as err:
        problems.append(f"{path} could not be read ({type(err).__name__}); the slice order comes from the scores.")
        return [], {}, {}
    return (ids, {sid: str(info.get("text") or "") for sid, info in zip(ids, infos)},
            {sid: str(info.get("before") or "") for sid, info in zip(ids, infos)})


def _keyed(rows: list[dict], path, problems: list[str]) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for row in rows:
        key = row.get("id")
        if key is None:
            problems.append(f"{path}: a line without 'id'; skipped.")
            continue
        out[str(key)] = row
    return out


def load_steps(evals: dict[int | str, tuple[str | Path, str | Path]], problems: list[str]) -> tuple[list[StepEval], StepEval | None]:
    """Each evaluated training step's outputs and scores, in step order, and those of the warm
    start (key ``sft``; None when there is none). The warm start is recorded as step 0: the policy
    before any GRPO update."""
    steps = [_step_eval(step, *evals[step], problems) for step in sorted(s for s in evals if s != SFT)]
    sft = _step_eval(0, *evals[SFT], problems) if SFT in evals else None
    return steps, sft


def _step_eval(step: int, out_path, score_path, problems: list[str]) -> StepEval:
    return StepEval(
        step=step,
        outputs=_keyed(read_jsonl_tolerant(out_path, problems), out_path, problems),
        scores=_keyed(read_jsonl_tolerant(score_path, problems), score_path, problems),
        outputs_path=str(out_path),
        scores_path=str(score_path),
    )


def _slice_ids(parquet: str | Path | None, steps: list[StepEval],
               problems: list[str]) -> tuple[list[str], dict[str, str], dict[str, str]]:
    """The split's slice ids, their source texts and the texts before them (:func:`read_val_ids`)."""
    ids, text, before = read_val_ids(parquet, problems)
    if not ids:
        # Without the parquet, the split is what was scored, in first-seen order.
        seen: dict[str, None] = {}
        for s in steps:
            seen.update(dict.fromkeys(list(s.outputs) + list(s.scores)))
        ids = list(seen)
    return ids, text, before


def load_run(
    metrics: str | Path,
    labels: str | Path,
    evals: dict[int | str, tuple[str | Path, str | Path]],
    val: str | Path | None = None,
    test_evals: dict[int | str, tuple[str | Path, str | Path]] | None = None,
    test: str | Path | None = None,
) -> RunData:
    """Read everything: ``evals`` (``test_evals``) maps each evaluated step (a number, or ``sft``
    for the warm start) to its (outputs, scores) paths on the validation (test) slices; ``val`` and
    ``test`` are the split's parquet files."""
    if not [s for s in evals if s != SFT]:
        raise UserError("report: no evaluated steps were given; config key 'eval.steps' and step 0 name them.")
    problems: list[str] = []
    steps, sft = load_steps(evals, problems)
    label_rows = _keyed(read_jsonl_tolerant(labels, problems), labels, problems)
    val_ids, val_text, val_before = _slice_ids(val, steps, problems)
    run = RunData(read_metrics(metrics, problems), label_rows, val_ids, steps, problems, val_text, val_before, sft=sft)
    if test_evals:
        test_steps, test_sft = load_steps(test_evals, problems)
        test_ids, test_text, test_before = _slice_ids(test, test_steps, problems)
        run.test = RunData(run.metrics, label_rows, test_ids, test_steps, problems, test_text, test_before, sft=test_sft)
    return run
