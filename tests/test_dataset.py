"""The train/validation/test parquet files, in the row format verl and Agent Lightning read."""

import json

import pyarrow.parquet as pq
import pytest

from audiobook_rl.dataset import Task, read_tasks, split_rows
from audiobook_rl.errors import UserError
from audiobook_rl.files import read_parquet_rows, write_parquet_rows
from audiobook_rl.prompts import load_prompt
from audiobook_rl.script import from_dicts
from helpers import REPO

SETTINGS = {"n_train": 16, "n_val": 4, "n_test": 0, "seed": 7, "data_source": "audiobook"}
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


def spans(rows: list[dict]) -> set[range]:
    return {range(r["extra_info"]["start"], r["extra_info"]["end"]) for r in rows}


def test_a_test_set_is_held_out_from_train_and_val_by_offsets_and_leaves_them_as_they_were(prompt):
    rows = split_rows(labels(30), {**SETTINGS, "n_test": 10}, prompt)
    parts = {name: spans(rows[name]) for name in ("train", "val", "test")}
    assert [len(rows[n]) for n in ("train", "val", "test")] == [16, 4, 10]
    for a, b in (("train", "val"), ("train", "test"), ("val", "test")):
        # no two slices of different parts share a character of the corpus
        assert not any(set(x) & set(y) for x in parts[a] for y in parts[b]), (a, b)
    assert {r["extra_info"]["split"] for r in rows["test"]} == {"test"}
    without = split_rows(labels(30), SETTINGS, prompt)
    assert without["test"] == [] and (without["train"], without["val"]) == (rows["train"], rows["val"])


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
    with pytest.raises(UserError, match="'split.n_train' \\+ 'split.n_val' \\+ 'split.n_test' ask for 30 rows but only "
                       "20 labelled slices exist; raise 'slice.n_slices' to 30"):
        split_rows(labels(20), {**SETTINGS, "n_test": 10}, prompt)


NOVEL = "第一回　山路\n　　卖酒的王五正在擦桌子，李六走进店里。\n　　那汉子抬起头，笑道：“今日好热！”李六答道：“是啊。”\n"


def test_with_context_chars_each_row_carries_the_novel_before_its_excerpt_into_the_prompt():
    # The agent may read who 那汉子 is (王五) in the text before the excerpt: the row keeps that text,
    # from the first paragraph that starts in the window, and the context prompt shows it.
    start = NOVEL.index("　　那汉子")
    excerpt = NOVEL[start:].rstrip("\n")
    label = {"id": "s000", "text": excerpt, "start": start, "end": start + len(excerpt), "script": SCRIPT, "aliases": {}}
    settings = {**SETTINGS, "n_train": 1, "n_val": 0}
    context = load_prompt(REPO / "config" / "prompts" / "create_context.md")
    row = split_rows([label], settings, context, NOVEL, 25)["train"][0]
    before = "　　卖酒的王五正在擦桌子，李六走进店里。\n"
    assert row["extra_info"]["before"] == before  # (not from the chapter heading, which starts mid-window)
    user = row["prompt"][1]["content"]
    assert before.strip() in user and user.index(before.strip()) < user.index(excerpt.strip())
    assert Task.from_row(row).before == before
    # 0 characters, or a slice that is not the novel's text there: nothing before it.
    assert split_rows([label], settings, context, NOVEL, 0)["train"][0]["extra_info"]["before"] == ""
    moved = {**label, "start": start + 1}
    assert split_rows([moved], settings, context, NOVEL, 25)["train"][0]["extra_info"]["before"] == ""


def test_rows_written_before_the_before_column_read_as_no_context(prompt):
    row = split_rows(labels(), SETTINGS, prompt)["train"][0]
    del row["extra_info"]["before"]
    assert Task.from_row(row).before == ""
