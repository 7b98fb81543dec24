"""The train/validation split, as parquet rows that Agent Lightning and verl read directly."""

from __future__ import annotations

import json
import random

from .errors import UserError
from .prompts import Prompt


def split_rows(labels: list[dict], settings: dict, create_prompt: Prompt) -> dict[str, list[dict]]:
    """Shuffle the labelled slices with ``settings['seed']`` and cut them into train and val rows.

    Each row carries the create role's chat messages as ``prompt`` and the reference script as
    ``reward_model.ground_truth`` (JSON text), as verl's RL datasets expect.
    """
    n_train, n_val = settings["n_train"], settings["n_val"]
    if n_train + n_val > len(labels):
        raise UserError(
            f"config keys 'split.n_train' + 'split.n_val' ask for {n_train + n_val} rows "
            f"but only {len(labels)} labelled slices exist; raise 'slice.n_slices' or lower the split."
        )
    order = sorted(labels, key=lambda r: r["id"])
    random.Random(settings["seed"]).shuffle(order)
    parts = {"train": order[:n_train], "val": order[n_train : n_train + n_val]}
    return {
        split: [_row(label, split, i, settings, create_prompt) for i, label in enumerate(rows)]
        for split, rows in parts.items()
    }


def _row(label: dict, split: str, index: int, settings: dict, create_prompt: Prompt) -> dict:
    return {
        "data_source": settings["data_source"],
        "prompt": create_prompt.messages(text=label["text"]),
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
            "aliases": json.dumps(label.get("aliases", {}), ensure_ascii=False),
        },
    }
