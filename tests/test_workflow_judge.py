"""The judge rule: outputs.jsonl + val.parquet -> scores.jsonl, what its edits rerun, and the GLM
judge run by Snakemake against a loopback server."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from loopback import Loopback, Reply, chat_completion
from loopback.damage import dumps, merge_all, story_cases
from loopback.scripts import judge_reply

from audiobook_rl.dataset import split_rows
from audiobook_rl.files import read_jsonl, write_jsonl, write_parquet_rows
from helpers import REPO, prompts
from helpers.workflow import snakemake, write_config

pytestmark = pytest.mark.slow

SCORES = "results/eval/step_0/scores.jsonl"
ROW_KEYS = {"id", "step", "overall", "scores", "reasons", "backend", "model", "error"}


def fixtures(workdir: Path) -> None:
    """The validation split of three story slices (references as split_dataset writes them) and
    hand-made outputs of step 0: a copy, a merge, garbage."""
    cases = story_cases(3)
    labels = [{**c, "script": [s.to_dict() for s in c["script"]]} for c in cases]
    split = {"n_train": 0, "n_val": 3, "n_test": 0, "seed": 0, "data_source": "audiobook"}
    write_parquet_rows(workdir / "results/data/val.parquet", split_rows(labels, split, prompts().create)["val"])
    finals = [dumps(cases[0]["script"]), dumps(merge_all(cases[1]["script"])), "I cannot do that."]
    outputs = [
        {"id": c["id"], "step": 0, "draft": f, "final": f, "draft_notes": {}, "final_notes": {}}
        for c, f in zip(cases, finals)
    ]
    write_jsonl(workdir / "results/eval/step_0/outputs.jsonl", outputs)


def planned(workdir: Path, config: Path) -> set[str]:
    """Rules a dry run would execute for the scores, upstream stages (not built here) left out."""
    # The workflow checks keys at start, dry runs included: a dummy one is enough to plan.
    proc = snakemake(
        workdir, "-n", "--cores", "1", SCORES, "--allowed-rules", "judge", "--configfile", str(config),
        env={"ZHIPUAI_API_KEY": "dummy-key-for-planning"},
    )
    return set(re.findall(r"^(?:local)?rule (\w+):$", proc.stdout, re.M))


def run_judge(workdir: Path, *args: str, env: dict | None = None):
    return snakemake(workdir, "--cores", "1", SCORES, "--allowed-rules", "judge", *args, env=env)


def test_judge_rule_writes_one_score_row_per_output_and_edits_rerun_only_judging(workdir):
    fixtures(workdir)
    run_judge(workdir)
    rows = read_jsonl(workdir / SCORES)
    assert [set(r) for r in rows] == [ROW_KEYS] * 3
    assert [r["overall"] for r in rows][0] == 1.0 and 0 < rows[1]["overall"] < 1 and rows[2]["overall"] == 0.0
    assert {(r["backend"], r["model"], r["step"], r["error"]) for r in rows} == {("rubric", "rubric-v3", 0, None)}
    assert json.loads((workdir / "results/eval/step_0/scores.usage.json").read_text())["requests_sent"] == 0

    weights = write_config(workdir, judge={"weights": {"format": 1.0}})
    assert planned(workdir, weights) == {"judge"}
    knobs = write_config(workdir, llm={"concurrency": 2, "timeout_s": 5, "cache_dir": "elsewhere"})
    assert planned(workdir, knobs) == set()


def test_glm_judge_stage_scores_through_the_api_and_never_writes_the_key(workdir):
    key = "glm-loopback-SECRET-5a4b3c2d1e"
    fixtures(workdir)
    # A copy of the rubric prompt in the working directory takes precedence over the repository's.
    prompt = workdir / "config/prompts/judge.md"
    prompt.parent.mkdir(parents=True)
    prompt.write_text(
        (REPO / "config/prompts/judge.md").read_text(encoding="utf-8"), encoding="utf-8"
    )
    with Loopback(lambda kind, body, n: Reply(body=chat_completion(judge_reply(0.5)))) as server:
        config = write_config(
            workdir,
            judge={"backend": "glm"},
            llm={"base_url": {"zhipuai": server.url}, "backoff_s": 0.001, "rate_limit_per_minute": {"zhipuai": 0}},
        )
        run_judge(workdir, "--configfile", str(config), env={"ZHIPUAI_API_KEY": key})
    assert server.count == 3
    rows = read_jsonl(workdir / SCORES)
    assert {(r["backend"], r["model"], r["overall"]) for r in rows} == {("glm", "glm-4.7", 0.5)}
    usage = json.loads((workdir / "results/eval/step_0/scores.usage.json").read_text())
    assert usage["requests_sent"] == 3 and usage["input_tokens"] == 300
    leaks = [p for p in workdir.rglob("*") if p.is_file() and key.encode() in p.read_bytes()]
    assert leaks == []
    # The rubric prompt is an input of the LLM judge: editing it reruns judging (and nothing else).
    prompt.write_text(prompt.read_text(encoding="utf-8") + "\n评分时从严。\n", encoding="utf-8")
    assert planned(workdir, config) == {"judge"}
