"""Two judges on the same outputs, end to end: the configured judge is an OpenAI-compatible endpoint
(a loopback server), judge.agreement adds the rubric; both score every evaluated checkpoint on the
held-out test slices and the report shows their agreement."""

from __future__ import annotations

import re

import pytest

from audiobook_rl.files import read_jsonl
from helpers.policy import TINY_TRAIN
from helpers.workflow import OPENAI_KEY, judging_overlay, planned_rules, snakemake, write_config
from loopback import Loopback, Reply, chat_completion
from loopback.scripts import judge_reply

pytestmark = pytest.mark.slow


def varied_verdict(kind, body, n):
    # scores that differ between requests, so that the two judges can disagree
    return Reply(body=chat_completion(judge_reply(round(0.1 + (n % 5) / 5, 2))))


def test_a_run_judged_by_two_judges_reports_their_agreement(tmp_path):
    with Loopback(varied_verdict) as server:
        config = judging_overlay(
            tmp_path, server.url, llm={"cache_dir": "cache"},
            train={**TINY_TRAIN, "total_steps": 2, "save_freq": 1, "test_freq": 1},
            eval={"steps": [2]},
            judge={"backend": "openai", "model": "judge-test", "agreement": [{"backend": "rubric"}]},
        )
        snakemake(tmp_path, "--cores", "2", "--configfile", str(config), env=OPENAI_KEY)
    for step in (0, 2):
        configured = read_jsonl(tmp_path / f"results/eval/test/step_{step}/scores.jsonl")
        extra = read_jsonl(tmp_path / f"results/eval/test/step_{step}/judges/rubric/scores.jsonl")
        assert {r["backend"] for r in configured} == {"openai"} and {r["backend"] for r in extra} == {"rubric"}
        assert [r["id"] for r in extra] == [r["id"] for r in configured] and len(extra) == 16
    # the headline is measured on test, so the extra judge scores the test outputs only
    assert not list((tmp_path / "results/eval").glob("step_*/judges"))
    html = (tmp_path / "results/report.html").read_text(encoding="utf-8")
    section = html.split('<section id="judges">')[1].split("</section>")[0]
    assert "<h3>openai-judge-test and rubric</h3>" in section
    overall = re.search(r'<td class="step">overall</td><td class="n">(\d+)</td>', section).group(1)
    assert overall == "32"  # 2 evaluated steps x 16 test slices, every one scored by both
    assert section.count("<li>") >= 5  # the largest disagreements, with both scores


def test_scores_of_a_judge_not_in_judge_agreement_are_refused_in_one_sentence(tmp_path):
    config = write_config(tmp_path, judge={"agreement": [{"backend": "rubric"}]})
    target = "results/eval/test/step_0/judges/{}/scores.jsonl"
    # the configured judge is the rubric too: the extra one is named by its position
    assert planned_rules(tmp_path, target.format("rubric-1"), configfile=config) >= {"judge_agreement"}
    proc = snakemake(tmp_path, target.format("glm-4.7"), "-n", "--configfile", str(config), check=False)
    said = proc.stdout + proc.stderr
    assert proc.returncode != 0 and f"No rule to produce {target.format('glm-4.7')}" in said
    assert "Traceback" not in said and "KeyError" not in said
