"""Whether a policy's outputs follow their input: distinct scripts and similarity across excerpts."""

from __future__ import annotations

import pytest
from loopback.damage import dumps, story_cases, stub

from audiobook_rl.judging.diversity import COMPARED_CHARS, diversity


@pytest.fixture(scope="module")
def cases():
    return story_cases(6)


def test_faithful_scripts_follow_their_input(cases):
    d = diversity([dumps(c["script"]) for c in cases], [c["text"] for c in cases])
    assert (d.n, d.distinct, d.distinct_share) == (6, 6, 1.0)
    assert d.source_similarity > 0.9 and d.cross_similarity < 0.3
    assert not d.ignores_input
    assert d.metrics("val") == {"val_distinct_share": 1.0, "val_cross_similarity": d.cross_similarity}


def test_the_same_script_for_every_excerpt_ignores_the_input(cases):
    same = dumps(stub(cases[0]["script"]))
    d = diversity([same] * 6, [c["text"] for c in cases])
    assert (d.distinct, d.cross_similarity) == (1, 1.0) and d.ignores_input
    # The same script with other spacing or in a code fence is still the same script.
    fenced = [same, f"```json\n{same}\n```", same.replace(", ", ",")]
    assert diversity(fenced, [c["text"] for c in cases[:3]]).distinct == 1


def test_near_copies_for_every_excerpt_ignore_the_input(cases):
    # Distinct strings, but alike across excerpts and unlike each excerpt: still collapse.
    outputs = [dumps(stub(cases[0]["script"])).replace("今晚", f"第{i}晚") for i in range(6)]
    d = diversity(outputs, [c["text"] for c in cases])
    assert d.distinct == 6 and d.cross_similarity > 0.5 > d.source_similarity and d.ignores_input


def test_outputs_of_one_task_are_not_compared_with_each_other(cases):
    # Training: n rollouts of one task may agree; only outputs of different tasks count as "alike".
    a, b = dumps(cases[0]["script"]), dumps(cases[1]["script"])
    d = diversity([a, a, b, b], [cases[0]["text"]] * 2 + [cases[1]["text"]] * 2, ["t0", "t0", "t1", "t1"])
    assert d.distinct_share == 0.5 and d.cross_similarity < 0.3
    assert diversity([a, a], [cases[0]["text"]] * 2, ["t0", "t0"]).cross_similarity is None


def test_unreadable_and_huge_outputs_are_compared_on_bounded_text(cases):
    d = diversity(["not a script", "", "x" * 10_000_000], [c["text"] for c in cases[:3]])
    assert d.distinct == 3 and 0.0 <= d.cross_similarity <= 1.0
    assert COMPARED_CHARS <= 1000
    assert diversity([], []).distinct_share is None and not diversity([], []).ignores_input
