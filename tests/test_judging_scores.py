"""The judge stage's scoring: one row per generated output, judged against its validation task."""

from __future__ import annotations

import pytest
from loopback.damage import dumps, merge_all

from audiobook_rl.dataset import Task
from audiobook_rl.errors import UserError
from audiobook_rl.judging.scores import score_outputs
from helpers import make_judge
from helpers.policy import tiny_rows


def tasks() -> list[Task]:
    return [Task.from_row(row) for row in tiny_rows(n_train=0, n_val=3)["val"]]


def test_one_row_per_output_in_output_order_judged_against_its_own_reference():
    val = tasks()
    # The outputs in another order than the tasks: each is matched to its task by id.
    outputs = [
        {"id": val[2].id, "final": "I cannot do that."},
        {"id": val[0].id, "final": dumps(val[0].reference)},
        {"id": val[1].id, "final": dumps(merge_all(val[1].reference))},
    ]
    rows = score_outputs(outputs, val, make_judge(), "best")
    assert [r["id"] for r in rows] == [o["id"] for o in outputs]
    assert [r["overall"] for r in rows][:2] == [0.0, 1.0] and 0 < rows[2]["overall"] < 1
    assert {(r["step"], r["backend"], r["error"]) for r in rows} == {("best", "rubric", None)}
    assert set(rows[0]) == {"id", "step", "overall", "scores", "reasons", "backend", "model", "error"}


def test_an_output_without_a_final_script_scores_zero():
    val = tasks()
    [row] = score_outputs([{"id": val[0].id, "final": None}], val, make_judge(), 0)
    assert row["overall"] == 0.0


def test_outputs_of_another_split_are_one_sentence():
    with pytest.raises(UserError) as err:
        score_outputs([{"id": "elsewhere-1", "final": ""}], tasks(), make_judge(), 20)
    assert str(err.value) == (
        "outputs of step 20 name slices ['elsewhere-1'] that their split's tasks lack; "
        "regenerate the outputs from the current split."
    )
