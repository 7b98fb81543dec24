"""The sweep index's arms, checked by hand on fixed inputs: each run's paired gain on test (a
bootstrap with a fixed seed, replayed here), P(improve), and per arm the seeds' mean, IQM,
P(gain > 0) and the gain the reward explains."""

import json
import re

import numpy as np
import pytest

from audiobook_rl.sweep import read_run, render_index

STATS = {"bootstrap_samples": 200, "bootstrap_seed": 3, "confidence": 0.9}
BASE_TEST = [0.2, 0.2, 0.2, 0.2]
# test scores of each run's best checkpoint (step 10) on slices t1..t4; base 0.2 everywhere
REAL = {"real-1": [0.5, 0.3, 0.2, 0.4], "real-2": [0.3, 0.3, 0.3, 0.3], "real-3": [0.6, 0.2, 0.4, 0.2],
        "real-4": [0.1, 0.5, 0.6, 0.5]}
SHUFFLED = {"shuf-1": [0.2, 0.2, 0.2, 0.2], "shuf-2": [0.3, 0.2, 0.2, 0.1], "shuf-3": [0.4, 0.2, 0.2, 0.2],
            "shuf-4": [0.2, 0.1, 0.2, 0.1]}


def write_scores(d, step, values, ids):
    d.mkdir(parents=True, exist_ok=True)
    rows = [{"id": i, "step": step, "overall": v, "scores": {}, "backend": "rubric", "model": "rubric-v3", "error": None}
            for i, v in zip(ids, values)]
    (d / "scores.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def write_run(root, name, best_test, shuffled):
    run = root / name
    write_scores(run / "eval/step_0", 0, [0.1, 0.1], ["v1", "v2"])
    write_scores(run / "eval/step_10", 10, [0.5, 0.5], ["v1", "v2"])  # validation chooses step 10
    write_scores(run / "eval/test/step_0", 0, BASE_TEST, ["t1", "t2", "t3", "t4"])
    write_scores(run / "eval/test/step_10", 10, best_test, ["t1", "t2", "t3", "t4"])
    (run / "train").mkdir()
    (run / "train/summary.json").write_text(json.dumps({"reward_shuffled": shuffled}))
    return run


@pytest.fixture
def rows(tmp_path):
    runs = [write_run(tmp_path, n, v, False) for n, v in REAL.items()]
    runs += [write_run(tmp_path, n, v, True) for n, v in SHUFFLED.items()]
    return [read_run(r, STATS) for r in runs]


def cells(page: str, first: str) -> list[str]:
    row = re.search(rf"<tr><td>{re.escape(first)}</td>(.*?)</tr>", page, re.S).group(1)
    return [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td>(.*?)</td>", row, re.S)]


def test_a_run_s_gain_is_its_paired_test_difference_replayed_by_hand(rows):
    r = next(r for r in rows if r.name == "real-1")
    assert (r.arm, r.gain_split, r.best_step) == ("real", "test", 10)
    d = np.array([0.3, 0.1, 0.0, 0.2])  # t1..t4: 0.5-0.2, 0.3-0.2, 0.2-0.2, 0.4-0.2
    w = np.array([1.0, 1.0, 0.5, 1.0])  # the tie counts half
    idx = np.random.default_rng(STATS["bootstrap_seed"] + 10).integers(0, 4, size=(200, 4))
    assert r.paired.mean_diff == pytest.approx(0.15)
    assert r.paired.diff_ci == pytest.approx(tuple(np.quantile(d[idx].mean(axis=1), [0.05, 0.95])), abs=1e-12)
    assert r.paired.p_improve == 0.875
    assert r.paired.p_improve_ci == pytest.approx(tuple(np.quantile(w[idx].mean(axis=1), [0.05, 0.95])), abs=1e-12)
    page = render_index(rows, stats=STATS)
    lo, hi = r.paired.diff_ci
    assert f"+0.150 [{lo:+.3f}, {hi:+.3f}] (test)" in page


def test_the_arms_mean_iqm_probabilities_and_the_control_row_by_hand(rows):
    page = render_index(rows, stats=STATS)
    real = cells(page, "real")
    # seed gains 0.15, 0.10, 0.15, 0.225: mean 0.15625; IQM drops one from each end: (0.15 + 0.15) / 2
    assert real[0] == "4" and real[1] == "real-1: +0.150, real-2: +0.100, real-3: +0.150, real-4: +0.225"
    assert real[2].startswith("+0.156 [") and real[3].startswith("+0.150 [")
    assert real[4] == "1.00"  # every real seed gained
    shuffled = cells(page, "shuffled")
    # seed gains 0, 0, +0.05, -0.05: mean 0, IQM (0 + 0) / 2; P(gain > 0) = (½ + ½ + 1 + 0) / 4
    assert shuffled[1] == "shuf-1: +0.000, shuf-2: +0.000, shuf-3: +0.050, shuf-4: -0.050"
    assert shuffled[2].startswith("+0.000 [") and shuffled[3].startswith("+0.000 [") and shuffled[4] == "0.50"
    # the reward explains 0.15625 - 0; every real seed beats every shuffled one: P = 16/16
    control = re.search(r"<p class=control>(.*?)</p>", page, re.S).group(1)
    assert re.search(r"\(real − shuffled\): \+0\.156 \[[-+]\d\.\d{3}, [-+]\d\.\d{3}\], P\(real &gt; shuffled\) = 1\.00 \[", control)
    assert "too few seeds" not in page
    assert "Bootstrap intervals over few seeds are too narrow" in page


def test_with_fewer_than_the_minimum_seeds_there_is_no_interval_but_a_sentence(rows):
    page = render_index([r for r in rows if r.name != "real-4"], stats=STATS)
    real = cells(page, "real")
    assert real[2] == "+0.133" and real[3] == "+0.133"  # (0.15 + 0.10 + 0.15) / 3; n ≤ 3 drops nothing
    assert real[5].startswith("too few seeds for an interval (the arm has 3; at least 4 needed)")
    assert "at least 4 needed" in re.search(r"<p class=control>(.*?)</p>", page, re.S).group(1)


def test_a_run_without_a_summary_or_test_set_is_a_real_arm_measured_on_validation(tmp_path):
    run = tmp_path / "old"
    write_scores(run / "eval/step_0", 0, [0.1, 0.2], ["v1", "v2"])
    write_scores(run / "eval/step_10", 10, [0.5, 0.2], ["v1", "v2"])
    row = read_run(run, STATS)
    assert (row.arm, row.gain_split, row.gains) == ("real", "validation", {"v1": pytest.approx(0.4), "v2": 0.0})
    assert "optimistic" in render_index([row], stats=STATS)


SFT_TEST = [0.4, 0.3, 0.2, 0.4]  # the warm start's test scores on t1..t4, in every run that has one


def test_what_grpo_added_to_the_warm_start_per_run_and_per_arm_by_hand(tmp_path):
    runs = []
    for name, best in REAL.items():
        run = write_run(tmp_path, name, best, False)
        write_scores(run / "eval/step_sft", "sft", [0.4, 0.6], ["v1", "v2"])
        write_scores(run / "eval/test/step_sft", "sft", SFT_TEST, ["t1", "t2", "t3", "t4"])
        runs.append(run)
    runs.append(write_run(tmp_path, "shuf-1", SHUFFLED["shuf-1"], True))  # trained from the base policy
    rows = [read_run(r, STATS) for r in runs]
    r1 = next(r for r in rows if r.name == "real-1")
    # best (step 10) minus the warm start on test: 0.5-0.4, 0.3-0.3, 0.2-0.2, 0.4-0.4
    assert r1.sft == pytest.approx(0.5) and r1.rl_gains == pytest.approx({"t1": 0.1, "t2": 0.0, "t3": 0.0, "t4": 0.0})
    assert r1.rl_paired.mean_diff == pytest.approx(0.025)
    shuf = next(r for r in rows if r.name == "shuf-1")
    assert shuf.sft is None and shuf.rl_gains == {} and shuf.rl_paired is None
    page = render_index(rows, stats=STATS)
    run_row = cells(page, '<a href="real-1/report.html">real-1</a>')
    lo, hi = r1.rl_paired.diff_ci
    assert run_row[4] == "0.500" and run_row[10] == f"+0.025 [{lo:+.3f}, {hi:+.3f}]"
    section = page.split("<h2>What GRPO added to the SFT warm start</h2>")[1]
    assert "Runs without a warm start are left out (shuf-1)." in section
    real = cells(section, "real")
    # seed gains +0.025, -0.025, +0.025, +0.100: mean 0.03125, IQM (0.025 + 0.025) / 2, 3 of 4 gained
    assert real[1] == "real-1: +0.025, real-2: -0.025, real-3: +0.025, real-4: +0.100"
    assert real[2].startswith("+0.031 [") and real[3].startswith("+0.025 [") and real[4] == "0.75"
    assert "shuffled" not in re.sub(r"<p>.*?</p>", "", section, flags=re.S)  # no arm without warm starts


def test_without_any_warm_start_there_is_no_grpo_section(rows):
    assert "What GRPO added" not in render_index(rows, stats=STATS)
