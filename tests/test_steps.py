"""Steps as the workflow names them: one wildcard, and one rule for the best step."""

import re
from types import SimpleNamespace

import pytest

from audiobook_rl.errors import UserError
from audiobook_rl.files import write_jsonl
from audiobook_rl.report.checkpoints import best_row
from audiobook_rl.steps import WILDCARD, best_step, check_eval_steps, parse, resolve
from audiobook_rl.sweep import read_run
from helpers import seed_config, settings

SUMMARY = {"saved_steps": [10, 20, 30], "best_step": 20}


def test_the_wildcard_takes_numbers_and_best_only():
    for name in ("0", "10", "1600", "best"):
        assert re.fullmatch(WILDCARD, name)
    for name in ("", "-1", "1.5", "last", "best1", "10/x"):
        assert not re.fullmatch(WILDCARD, name)
    assert (parse("10"), parse("best")) == (10, "best")


def test_the_best_step_is_the_highest_trained_one_and_the_earlier_on_ties():
    assert best_step({0: 0.2, 10: 0.3, 20: 0.5, 30: 0.5}) == 20
    assert best_step({0: 0.9, 10: 0.3, 20: 0.1}) == 10  # the baseline is compared against, never chosen
    assert best_step({0: 0.9}) is None and best_step({}) is None
    assert best_step({10: None, 20: 0.1}) == 20  # a step without a score is no candidate
    assert best_step({10: 0.3, 15: 0.9, 20: 0.5}, among=[10, 20]) == 20  # verl: only steps with a checkpoint


def test_a_step_resolves_to_a_saved_checkpoint_or_one_sentence():
    assert resolve("best", SUMMARY) == 20 and resolve("30", SUMMARY) == 30 and resolve("0", SUMMARY) == 0
    with pytest.raises(UserError, match="step 15 was not saved by training"):
        resolve("15", SUMMARY)
    with pytest.raises(UserError, match="step 'best': training logged no validation reward"):
        resolve("best", {**SUMMARY, "best_step": None})


def test_eval_steps_must_be_saved_steps():
    seed = seed_config()["train"]
    check_eval_steps(seed, [0, 1000, 1400, 1600])
    check_eval_steps({**seed, "total_steps": 1650}, [1000, 1650])  # the last step is always saved
    for bad in ([1300], [1800]):
        with pytest.raises(UserError, match="eval.steps"):
            check_eval_steps(seed, bad)
    check_eval_steps(settings("train"), settings("eval")["steps"])  # the default config's


def test_the_report_and_the_run_index_name_the_same_best_step(tmp_path):
    # A run whose baseline beats every checkpoint: both name step 10, neither names the baseline.
    means = {0: 0.9, 10: 0.3, 20: 0.1}
    for step, mean in means.items():
        write_jsonl(tmp_path / "eval" / f"step_{step}" / "scores.jsonl", [{"id": "s0", "step": step, "overall": mean}])
    rows = [SimpleNamespace(step=step, mean=mean, chosen_by=mean) for step, mean in means.items()]
    assert best_row(rows).step == read_run(tmp_path).best_step == 10
