"""The report with a held-out test set: the checkpoint is chosen on validation, the headline and the
paired table are measured on test."""

import re

import numpy as np

import helpers.report_run as fx
from audiobook_rl.report import make_report

# Validation (fx.OVERALL) chooses step 20; on test, step 10 scores far higher, but it was not chosen.
TEST_OVERALL = {
    0: [0.2, 0.2, 0.2, 0.2],
    10: [0.9, 0.9, 0.9, 0.9],
    20: [0.3, 0.4, 0.2, 0.3],
    30: [0.2, 0.2, 0.2, 0.2],
}


def render(tmp_path, **settings):
    paths = fx.write_run(tmp_path)
    test, test_evals = fx.write_test_split(tmp_path, TEST_OVERALL)
    return make_report(paths["metrics"], paths["labels"], paths["evals"], {**fx.DEFAULT_SETTINGS, **settings},
                       val=paths["val"], test_evals=test_evals, test=test)


def percentile(values, q):
    return float(np.quantile(values, q))


def test_the_headline_is_the_validation_choice_measured_on_test(tmp_path):
    html = render(tmp_path)
    level, text = re.search(r'<p class="headline (\w+)">(.*?)</p>', html).groups()
    # Step 20 against step 0 on the test slices t1..t4 (sorted ids): +0.1, +0.2, 0, +0.1.
    diffs = np.array([0.1, 0.2, 0.0, 0.1])
    wins = np.array([1.0, 1.0, 0.5, 1.0])  # the tie counts half: P(improve) = 3.5 / 4
    idx = np.random.default_rng(fx.DEFAULT_SETTINGS["bootstrap_seed"] + 20).integers(0, 4, size=(500, 4))
    lo, hi = percentile(diffs[idx].mean(axis=1), 0.025), percentile(diffs[idx].mean(axis=1), 0.975)
    plo, phi = percentile(wins[idx].mean(axis=1), 0.025), percentile(wins[idx].mean(axis=1), 0.975)
    assert lo > 0
    assert level == "ok"
    assert text.startswith(
        f"Step 20 improves on the baseline (step 0): +0.100 (95% paired interval {lo:+.3f} to {hi:+.3f}), "
        f"P(improve) 0.88 (95% interval {plo:.2f} to {phi:.2f}), +50.0% relative; test score 0.300 (n = 4) "
        "against 0.200 for the baseline (step 0). The checkpoint was chosen on the validation slices; every number "
        "here is measured on the 4 held-out test slices"
    )
    assert "optimistic" not in text and "With n = 4 paired slices the intervals are wide" in text
    # Step 10's higher test score never makes it the best: the test set does not choose.
    assert "Step 10 improves" not in html


def test_the_paired_table_has_validation_and_test_columns(tmp_path):
    html = render(tmp_path)
    table = html.split('id="paired-table"')[1].split("</table>")[0]
    assert "Validation (4 slices)" in table and "Held-out test (4 slices)" in table
    best = table.split('<tr class="best">')[1].split("</tr>")[0]
    cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", best, re.S)]
    assert cells[0] == "step 20 ★ best"
    assert cells[5] == "0.300 (4)" and cells[6].startswith("+0.100 [") and cells[7].startswith("0.88 [")
    assert cells[8:] == ["+50.0%", "better"]
    # the test slices are inputs of the report, named in its provenance
    assert "test.parquet" in html and "eval/test/step_20/scores.jsonl" in html


def test_the_report_is_deterministic_with_a_test_set(tmp_path):
    assert render(tmp_path / "a") == render(tmp_path / "b").replace(str(tmp_path / "b"), str(tmp_path / "a"))
