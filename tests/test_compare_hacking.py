"""Which rubric dimensions a gain comes from, and the warning when it is only format and segmentation."""

import pytest

from audiobook_rl.compare.hacking import SUBSTANCE, SURFACE, hacking_check
from audiobook_rl.config import section
from audiobook_rl.judging import DIMENSIONS, weighted

SEED_WEIGHTS = section("judge")["weights"]  # the seed's rubric weights, the schema's default

BASE_DIMS = [
    {"format": 0.4, "completeness": 0.5, "speaker": 0.4, "emotion": 0.3, "segmentation": 0.3},
    {"format": 0.2, "completeness": 0.6, "speaker": 0.5, "emotion": 0.4, "segmentation": 0.2},
    {"format": 0.5, "completeness": 0.4, "speaker": 0.3, "emotion": 0.5, "segmentation": 0.4},
    {"format": 0.3, "completeness": 0.7, "speaker": 0.6, "emotion": 0.2, "segmentation": 0.3},
    {"format": 0.4, "completeness": 0.5, "speaker": 0.5, "emotion": 0.3, "segmentation": 0.1},
    {"format": 0.1, "completeness": 0.6, "speaker": 0.4, "emotion": 0.4, "segmentation": 0.2},
]
WOBBLE = [0.02, -0.02, 0.01, -0.01, 0.02, -0.02]  # no direction: its interval straddles 0


def rows(moves: dict[str, list[float]]) -> dict[str, dict]:
    """Slice id → scores.jsonl-like row: the base dimensions moved per slice, overall by the seed weights."""
    out = {}
    for i, dims in enumerate(BASE_DIMS):
        scores = {d: round(dims[d] + moves.get(d, [0.0] * 6)[i], 6) for d in DIMENSIONS}
        out[f"v{i}"] = {"overall": weighted(scores, SEED_WEIGHTS), "scores": scores}
    return out


BASE = rows({})


def test_surface_and_substance_are_rubric_dimensions():
    assert set(SURFACE) | set(SUBSTANCE) <= set(DIMENSIONS)
    assert not set(SURFACE) & set(SUBSTANCE)


def test_gain_from_format_and_segmentation_alone_is_warned():
    ckpt = rows({"format": [0.5, 0.6, 0.4, 0.5, 0.5, 0.7], "segmentation": [0.3, 0.4, 0.2, 0.3, 0.5, 0.4],
                 "completeness": WOBBLE, "speaker": [-0.05, -0.1, -0.05, -0.1, -0.05, -0.1]})
    c = hacking_check(ckpt, BASE, step=40, samples=500)
    assert c.moved == {"format": "up", "segmentation": "up", "completeness": "flat", "speaker": "down", "emotion": "flat"}
    assert c.verdict == "surface only"
    assert c.warning == ("step 40: the gain comes only from format, segmentation while completeness flat, speaker down; "
                         "the policy may be learning the judge's surface checks rather than the task.")
    # the numbers behind it: format's paired mean difference is the mean of its moves
    assert c.dimensions["format"].mean_diff == pytest.approx(3.2 / 6)
    assert c.overall.mean_diff == pytest.approx(0.2 * 3.2 / 6 + 0.15 * 2.1 / 6 + 0.2 * -0.45 / 6)


def test_a_substantive_dimension_moving_up_makes_it_broad():
    ckpt = rows({"format": [0.5] * 6, "emotion": [0.1, 0.2, 0.1, 0.2, 0.1, 0.2]})
    c = hacking_check(ckpt, BASE, step=40, samples=500)
    assert c.moved["emotion"] == "up"
    assert (c.verdict, c.warning) == ("broad", None)


def test_no_gain_no_warning_even_if_format_rose():
    ckpt = rows({"format": [0.2] * 6, "completeness": [-0.15, -0.1, -0.15, -0.1, -0.15, -0.1]})
    c = hacking_check(ckpt, BASE, step=40, samples=500)
    assert c.moved["format"] == "up" and c.moved["completeness"] == "down"
    assert c.verdict == "no gain" and c.warning is None


def test_overall_up_with_no_single_dimension_up_is_diffuse():
    # each dimension wobbles a little on its own; overall (given by the judge) rises on every slice
    ckpt = rows({d: WOBBLE for d in DIMENSIONS})
    for i, r in enumerate(ckpt.values()):
        r["overall"] = BASE[f"v{i}"]["overall"] + 0.05
    c = hacking_check(ckpt, BASE, step=40, samples=500)
    assert set(c.moved.values()) == {"flat"}
    assert c.verdict == "diffuse"


def test_minimum_effect_and_too_few_slices():
    tiny = rows({"format": [0.01] * 6})
    assert hacking_check(tiny, BASE, step=1, samples=200).verdict == "surface only"
    assert hacking_check(tiny, BASE, step=1, samples=200, min_effect=0.01).verdict == "no gain"
    one = {"v0": rows({"format": [0.5] * 6})["v0"]}
    c = hacking_check(one, BASE, step=1)
    assert c.verdict == "too few" and c.overall.n == 1


def test_judge_failures_take_no_part():
    ckpt = rows({"format": [0.5] * 6, "segmentation": [0.3] * 6})
    ckpt["v5"] = {"overall": None, "scores": {}, "error": "judge timed out"}
    c = hacking_check(ckpt, BASE, step=2, samples=200)
    assert c.overall.n == 5 and c.dimensions["format"].n == 5
