"""The train/validation parquet files, in the row format verl and Agent Lightning read."""

import json

import pyarrow.parquet as pq
import pytest

from audiobook_rl.dataset import Task, read_tasks, split_rows
from audiobook_rl.errors import UserError
from audiobook_rl.files import read_parquet_rows, write_parquet_rows
from audiobook_rl.prompts import load_prompt
from audiobook_rl.script import from_dicts
from helpers import REPO

SETTINGS = {"n_train": 16, "n_val": 4, "seed": 7, "data_source": "audiobook"}
SCRIPT = [{"speaker": "旁白", "content": "雪停了。", "tone": "平静", "intensity": 1, "delay": 800}]


def labels(n=20):
    return [{"id": f"s{i:03d}", "text": f"第{i}段。", "start": 10 * i, "end": 10 * i + 4, "script": SCRIPT,
             "aliases": {"孤雁刀": "裴寒山"}} for i in range(n)]


@pytest.fixture(scope="module")
def prompt():
    return load_prompt(REPO / "config" / "prompts" / "create.md")


def test_split_is_seeded_disjoint_and_complete(prompt):
    rows = split_rows(labels(), SETTINGS, prompt)
    assert len(rows["train"]) == 16 and len(rows["val"]) == 4
    train_ids = {r["extra_info"]["slice_id"] for r in rows["train"]}
    val_ids = {r["extra_info"]["slice_id"] for r in rows["val"]}
    assert not train_ids & val_ids and len(train_ids | val_ids) == 20
    assert split_rows(labels(), SETTINGS, prompt) == rows
    other = split_rows(labels(), {**SETTINGS, "seed": 8}, prompt)
    assert {r["extra_info"]["slice_id"] for r in other["val"]} != val_ids


def test_parquet_rows_read_back_as_plain_values(tmp_path, prompt):
    rows = split_rows(labels(), SETTINGS, prompt)
    path = tmp_path / "train.parquet"
    write_parquet_rows(path, rows["train"])
    assert pq.read_schema(path).names == ["data_source", "prompt", "ability", "reward_model", "extra_info"]
    back = read_parquet_rows(path)
    assert back == rows["train"]  # lists and dicts, not numpy arrays: what the stages compare and dump as JSON
    row = back[0]
    assert row["data_source"] == "audiobook"
    messages = list(row["prompt"])
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[1]["content"] == row["extra_info"]["text"]
    assert from_dicts(json.loads(row["reward_model"]["ground_truth"]))[0].content == "雪停了。"
    assert row["extra_info"]["split"] == "train" and row["extra_info"]["index"] == 0
    assert json.loads(row["extra_info"]["aliases"]) == {"孤雁刀": "裴寒山"}


def test_a_task_carries_what_the_later_stages_read(tmp_path, prompt):
    # The references the judge and training score against, the aliases as one type (a dict), and the
    # source offsets the base policy's warm start keeps away from: no stage goes back to the labels.
    rows = split_rows(labels(), SETTINGS, prompt)
    write_parquet_rows(tmp_path / "val.parquet", rows["val"])
    tasks = read_tasks(tmp_path / "val.parquet")
    assert tasks == [Task.from_row(r) for r in rows["val"]]
    first = tasks[0]
    i = int(first.id[1:])
    assert (first.text, first.start, first.end) == (f"第{i}段。", 10 * i, 10 * i + 4)
    assert first.reference == from_dicts(SCRIPT) and first.aliases == {"孤雁刀": "裴寒山"}


def test_too_few_labels_name_the_keys(prompt):
    with pytest.raises(UserError, match="'split.n_train' \\+ 'split.n_val' ask for 20 rows but only 5"):
        split_rows(labels(5), SETTINGS, prompt)
