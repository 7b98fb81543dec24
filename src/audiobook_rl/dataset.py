"""The train/validation/test split, as parquet rows that Agent Lightning and verl read directly.

A row carries everything the later stages need, so data flows one way (labels → parquet → policy,
training, generation, judging): the create role's messages (``prompt``), the reference script
(``reward_model.ground_truth``, JSON text) and, in ``extra_info``, the slice's id, text, source
offsets (``start``/``end``: the base policy's warm start avoids the validation text), the novel's text
just before the excerpt (``before``, empty unless ``agent.context_chars`` asks for it) and aliases.
Aliases map a name's other names to the name (``{"黑旋风": "李逵"}``); they are a dict everywhere in
the package, and JSON text only inside the parquet file (a table column cannot hold maps with
different keys): :meth:`Task.from_row` is the one place that reads them back.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

from .config import split_size
from .corpus import text_before
from .errors import UserError
from .files import read_parquet_rows
from .prompts import Prompt
from .script import Segment, from_dicts


@dataclass(frozen=True)
class Task:
    """One excerpt to adapt, with its reference script: a row of results/data/*.parquet."""

    id: str
    text: str
    reference: list[Segment]
    aliases: dict[str, str]
    start: int = 0  # offsets of the excerpt in the corpus
    end: int = 0
    before: str = ""  # the corpus text just before the excerpt, which the agent reads (agent.context_chars)

    @classmethod
    def from_row(cls, row: dict) -> "Task":
        """Read a dataset row as written by split_dataset (also as verl's dataset hands it over)."""
        extra = row["extra_info"]
        return cls(
            id=str(extra["slice_id"]),
            text=str(extra["text"]),
            reference=from_dicts(json.loads(row["reward_model"]["ground_truth"])),
            aliases=json.loads(extra["aliases"]),
            start=int(extra["start"]),
            end=int(extra["end"]),
            before=str(extra.get("before") or ""),  # (rows written before the column existed have none)
        )


def read_tasks(path) -> list[Task]:
    """The tasks of a parquet file written by split_dataset, in row order."""
    return [Task.from_row(row) for row in read_parquet_rows(path)]


def split_rows(labels: list[dict], settings: dict, create_prompt: Prompt, novel: str = "",
               context_chars: int = 0) -> dict[str, list[dict]]:
    """Shuffle the labelled slices with ``settings['seed']`` and cut them into train, val and test rows
    (disjoint: no slice is in two parts).

    Each row carries the create role's chat messages as ``prompt`` and the reference script as
    ``reward_model.ground_truth`` (JSON text), as verl's RL datasets expect; with ``context_chars``,
    the ``novel``'s text just before each excerpt, in its scene, goes with it
    (:func:`~audiobook_rl.corpus.text_before`).
    """
    n_train, n_val = settings["n_train"], settings["n_val"]
    wanted = split_size(settings)
    if wanted > len(labels):
        raise UserError(
            f"config keys 'split.n_train' + 'split.n_val' + 'split.n_test' ask for {wanted} rows "
            f"but only {len(labels)} labelled slices exist; raise 'slice.n_slices' to {wanted} or lower the split."
        )
    order = sorted(labels, key=lambda r: r["id"])
    random.Random(settings["seed"]).shuffle(order)
    # Train and val are cut first, as before a test set existed: adding one leaves them as they were.
    parts = {
        "train": order[:n_train],
        "val": order[n_train : n_train + n_val],
        "test": order[n_train + n_val : wanted],
    }
    return {
        split: [_row(label, split, i, settings, create_prompt, _before(label, novel, context_chars))
                for i, label in enumerate(rows)]
        for split, rows in parts.items()
    }


def _before(label: dict, novel: str, context_chars: int) -> str:
    """The novel's text before a labelled slice, in the slice's scene, that the agent reads with it."""
    return text_before(novel, label["start"], label["text"], context_chars, scene=True)


def _row(label: dict, split: str, index: int, settings: dict, create_prompt: Prompt, before: str) -> dict:
    return {
        "data_source": settings["data_source"],
        "prompt": create_prompt.messages(text=label["text"], before=before),
        "ability": "audiobook_script",
        "reward_model": {
            "style": "model",
            "ground_truth": json.dumps(label["script"], ensure_ascii=False),
        },
        "extra_info": {
            "index": index,
            "split": split,
            "slice_id": label["id"],
            "text": label["text"],
            "start": label["start"],
            "end": label["end"],
            "before": before,
            "aliases": json.dumps(label["aliases"], ensure_ascii=False),
        },
    }
