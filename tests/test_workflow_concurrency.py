"""Parallel jobs stay inside their budgets and share the reply cache safely.

With ``--cores 8 --resources gpu=2 llm_api=4`` six judge jobs are ready at once: at most four run
together and the judge server never sees more than ``4 x llm.concurrency`` requests in flight. Writers
in several processes storing the same cache entries never leave a torn one, and two runs judging the
same outputs at the same time end with one valid cache that a third run reads without a request.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.workflow import snakemake
from helpers.policy import TINY_TRAIN
from loopback import Loopback, Reply, chat_completion
from loopback.scripts import judge_reply
from helpers.workflow import OPENAI_KEY, judging_overlay, start

pytestmark = pytest.mark.slow

CONCURRENCY = 2  # llm.concurrency: requests in flight per job
LLM_API = 4  # --resources llm_api: paid jobs at once


def slow_verdict(kind, body, n):
    return Reply(body=chat_completion(judge_reply(0.6)), delay=0.4)


def judged_by(workdir: Path, url: str, **sections) -> Path:
    return judging_overlay(workdir, url, llm={"concurrency": CONCURRENCY, "cache_dir": "cache"}, **sections)


def job_times(workdir: Path, output: str) -> tuple[float, float]:
    """When Snakemake started and finished the job that made ``output`` (from its metadata record)."""
    name = base64.urlsafe_b64encode(output.encode()).decode()
    record = json.loads((workdir / ".snakemake" / "metadata" / name).read_text())
    return record["starttime"], record["endtime"]


def most_at_once(intervals: list[tuple[float, float]]) -> int:
    events = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    running = peak = 0
    for _, change in events:  # at equal times an end (-1) sorts before a start
        running += change
        peak = max(peak, running)
    return peak


def test_parallel_judge_jobs_stay_within_the_api_budget(tmp_path):
    steps = [1, 2, 3, 4, 5]
    with Loopback(slow_verdict) as server:
        config = judged_by(
            tmp_path,
            server.url,
            train={**TINY_TRAIN, "total_steps": 5, "save_freq": 1, "test_freq": 5},
            eval={"steps": steps},
        )
        # Everything up to the judge first, so that all six judge jobs are ready together.
        outputs = [f"results/eval/step_{s}/outputs.jsonl" for s in [0, *steps]]
        snakemake(tmp_path, *outputs, "--cores", "2", "--configfile", str(config), env=OPENAI_KEY)
        assert server.count == 0
        scores = [f"results/eval/step_{s}/scores.jsonl" for s in [0, *steps]]
        budget = ["--cores", "8", "--resources", "gpu=2", f"llm_api={LLM_API}"]
        snakemake(tmp_path, *scores, *budget, "--configfile", str(config), env=OPENAI_KEY)
        # The tiny policy writes the same outputs at every step: jobs that start after others
        # finished find the replies in the cache.
        assert 12 <= server.count <= 6 * 12
        in_flight = server.max_in_flight
    jobs = most_at_once([job_times(tmp_path, path) for path in scores])
    print(f"judge jobs at once: {jobs}; requests in flight at most: {in_flight}; sent: {server.count}")
    assert 2 <= jobs <= LLM_API, f"{jobs} judge jobs ran at once with llm_api={LLM_API}"
    assert CONCURRENCY < in_flight <= LLM_API * CONCURRENCY


WRITER = """
import json, sys
from pathlib import Path
from audiobook_rl.llm.cache import DiskCache

cache, who, torn = DiskCache(sys.argv[1], "openai"), int(sys.argv[2]), 0
keys = [f"{k:02d}" + "ab" * 31 for k in range(20)]
for _ in range(15):
    for k, key in enumerate(keys):
        cache.put(key, {"writer": who, "text": str(k) * (20000 + 7000 * who)})
        other = keys[(k + 7) % 20]
        path = Path(sys.argv[1]) / "openai" / other[:2] / f"{other}.json"  # the documented layout
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            continue
        except ValueError:
            torn += 1
            continue
        torn += record["text"] != str((k + 7) % 20) * (20000 + 7000 * record["writer"])
print(torn)
"""


def test_writers_in_several_processes_never_leave_a_torn_cache_entry(tmp_path):
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), str(who)], stdout=subprocess.PIPE, text=True)
        for who in range(4)
    ]
    torn = [int(w.communicate(timeout=120)[0]) for w in writers]
    assert [w.returncode for w in writers] == [0] * 4
    assert torn == [0] * 4, "a reader saw a half-written cache entry"
    files = sorted((tmp_path / "openai").rglob("*"))
    entries = [f for f in files if f.is_file()]
    assert len(entries) == 20 and all(f.suffix == ".json" for f in entries), "temporary files left behind"
    for entry in entries:
        record, k = json.loads(entry.read_text(encoding="utf-8")), int(entry.name[:2])
        assert record["text"] == str(k) * (20000 + 7000 * record["writer"])


def test_two_runs_judging_at_once_share_one_valid_cache(tmp_path):
    def judge(run_name: str) -> subprocess.Popen:
        target = f"results/runs/{run_name}/eval/step_0/scores.jsonl"
        return start(tmp_path, target, "--cores", "2", "--configfile", str(config), "--config", f"run_name={run_name}",
                     env=OPENAI_KEY, capture=True)

    with Loopback(slow_verdict) as server:
        config = judged_by(tmp_path, server.url)
        # Both runs build the same base policy and outputs, then judge them at the same time.
        runs = [judge("a"), judge("b")]
        logs = [run.communicate(timeout=600)[0] for run in runs]
        assert [run.returncode for run in runs] == [0, 0], logs[0][-3000:] + logs[1][-3000:]
        sent = server.count
        snakemake(
            tmp_path, "results/runs/c/eval/step_0/scores.jsonl", "--cores", "2", "--configfile", str(config),
            "--config", "run_name=c", env=OPENAI_KEY,
        )  # fmt: skip
        assert server.count == sent, "a third run paid again for replies the cache holds"
    assert 12 <= sent <= 24  # each request once or, where both asked at the same moment, twice
    entries = [f for f in (tmp_path / "cache" / "openai").rglob("*") if f.is_file()]
    assert len(entries) == 12 and all(json.loads(f.read_text())["reply"]["text"] for f in entries)
    scores = {run: (tmp_path / f"results/runs/{run}/eval/step_0/scores.jsonl").read_text() for run in "abc"}
    assert scores["a"] == scores["b"] == scores["c"]
