"""Two or more judges on the same outputs: rank agreement, mean absolute difference, the items
they disagree on most, and a gain seen by one judge only."""

import math

import pytest

from audiobook_rl.compare.agreement import agreement, by_step, one_judge_gains, pair_agreement
from audiobook_rl.judging import DIMENSIONS


def row(step, sid, overall, **dims):
    scores = {d: overall for d in DIMENSIONS} if overall is not None else {}
    scores.update(dims)
    return {"id": sid, "step": step, "overall": overall, "scores": scores, "reasons": {}, "backend": "x", "model": "y", "error": None}


# Items (step, slice) in order (0,v1) (0,v2) (10,v1) (10,v2): judge a 0.1 0.2 0.2 0.4, judge b 0.3 0.1 0.2 0.4,
# the tied example of test_compare_ranks (rho = 1/sqrt(10), tau-b = 1/sqrt(30)). (0,v3) failed under b,
# (10,v9) only a scored; neither counts.
A_ROWS = [row(0, "v1", 0.1, speaker=0.5), row(0, "v2", 0.2, speaker=0.5), row(0, "v3", 0.9), row(10, "v1", 0.2, speaker=0.5),
          row(10, "v2", 0.4, speaker=0.5), row(10, "v9", 0.5)]
B_ROWS = [row(0, "v1", 0.3, format=0.1), row(0, "v2", 0.1, format=0.2), row(0, "v3", None), row(10, "v1", 0.2, format=0.2),
          row(10, "v2", 0.4, format=0.4)]


def test_rows_are_indexed_by_step_and_slice():
    idx = by_step(A_ROWS)
    assert sorted(idx) == [0, 10]
    assert sorted(idx[10]) == ["v1", "v2", "v9"]
    assert idx[0]["v2"]["overall"] == 0.2


def test_overall_agreement_by_hand():
    pa = pair_agreement(by_step(A_ROWS), by_step(B_ROWS), judge_a="a", judge_b="b")
    assert pa.overall.n == 4
    assert pa.overall.spearman == pytest.approx(1 / math.sqrt(10))
    assert pa.overall.kendall_tau_b == pytest.approx(1 / math.sqrt(30))
    assert pa.overall.mean_abs_diff == pytest.approx((0.2 + 0.1 + 0.0 + 0.0) / 4)


def test_agreement_per_dimension():
    dims = pair_agreement(by_step(A_ROWS), by_step(B_ROWS), judge_a="a", judge_b="b").dimensions
    assert set(dims) == set(DIMENSIONS)
    # format: a 0.1 0.2 0.2 0.4 (its overall), b 0.1 0.2 0.2 0.4 → identical
    assert (dims["format"].spearman, dims["format"].kendall_tau_b, dims["format"].mean_abs_diff) == (
        pytest.approx(1.0), pytest.approx(1.0), pytest.approx(0.0))
    # speaker: a gives 0.5 everywhere → no rank correlation, still a mean absolute difference
    assert dims["speaker"].spearman is None and dims["speaker"].kendall_tau_b is None
    assert dims["speaker"].mean_abs_diff == pytest.approx((0.2 + 0.4 + 0.3 + 0.1) / 4)
    # emotion follows each judge's overall: the overall numbers again
    assert dims["emotion"].spearman == pytest.approx(1 / math.sqrt(10))


def test_most_disagreed_items_by_rank_and_by_score():
    # a: 0.1 0.2 0.3 0.4; b: 0.2 0.1 0.3 0.9 → ranks a 1 2 3 4, b 2 1 3 4: rank gaps 1 1 0 0,
    # score gaps .1 .1 0 .5. Judge b is merely more generous on the last item: its rank is the same.
    a = {0: {"p": row(0, "p", 0.1), "q": row(0, "q", 0.2), "r": row(0, "r", 0.3), "s": row(0, "s", 0.4)}}
    b = {0: {"p": row(0, "p", 0.2), "q": row(0, "q", 0.1), "r": row(0, "r", 0.3), "s": row(0, "s", 0.9)}}
    by_rank = pair_agreement(a, b, judge_a="a", judge_b="b", top=2).disagreements
    assert [(d.slice_id, d.rank_a, d.rank_b) for d in by_rank] == [("p", 1.0, 2.0), ("q", 2.0, 1.0)]
    by_score = pair_agreement(a, b, judge_a="a", judge_b="b", top=2, by="score").disagreements
    assert [d.slice_id for d in by_score] == ["s", "p"]
    assert (by_score[0].score_a, by_score[0].score_b) == (0.4, 0.9)
    with pytest.raises(ValueError, match="rank"):
        pair_agreement(a, b, judge_a="a", judge_b="b", by="size")


def test_every_pair_of_three_judges_in_name_order():
    judges = {"rubric": by_step(A_ROWS), "glm": by_step(B_ROWS), "local": by_step(A_ROWS)}
    pairs = agreement(judges)
    assert [(p.judge_a, p.judge_b) for p in pairs] == [("glm", "local"), ("glm", "rubric"), ("local", "rubric")]
    assert pairs[2].overall.spearman == pytest.approx(1.0)  # a judge agrees with itself


BASE = (0.2, 0.3, 0.4, 0.5, 0.3, 0.2)
BASE_ROWS = [row(0, f"v{i}", b) for i, b in enumerate(BASE)]


def moved(step, deltas):
    return [row(step, f"v{i}", round(b + d, 4)) for i, (b, d) in enumerate(zip(BASE, deltas))]


def test_a_gain_under_one_judge_only_is_flagged():
    up = [0.2, 0.25, 0.15, 0.2, 0.3, 0.1]
    mixed = [0.1, -0.1, 0.05, -0.05, 0.1, -0.1]
    judges = {
        "rubric": by_step(BASE_ROWS + moved(10, up) + moved(20, up)),
        "glm": by_step(BASE_ROWS + moved(10, mixed) + moved(20, up)),
    }
    checks = one_judge_gains(judges, samples=500)
    assert [c.step for c in checks] == [10, 20]
    ten, twenty = checks
    assert ten.moved == {"glm": "flat", "rubric": "up"}
    assert ten.gain_under == ("rubric",) and ten.flagged
    assert ten.by_judge["rubric"].mean_diff == pytest.approx(sum(up) / 6)
    assert ten.by_judge["glm"].mean_diff == pytest.approx(0.0, abs=1e-12)
    assert twenty.gain_under == ("glm", "rubric") and not twenty.flagged


def test_a_judge_without_enough_slices_counts_neither_way():
    up = [0.2, 0.25, 0.15, 0.2, 0.3, 0.1]
    judges = {"rubric": by_step(BASE_ROWS + moved(10, up)), "glm": by_step([row(10, "v0", 0.9), row(0, "v0", 0.1)])}
    (check,) = one_judge_gains(judges, samples=200)
    assert check.moved == {"glm": "too few", "rubric": "up"}
    assert not check.flagged
