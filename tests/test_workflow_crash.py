"""Killing the pipeline mid-stage loses no finished work and leaves nothing half-written as done.

Training is killed (SIGTERM, SIGKILL) after it saved a checkpoint; the rerun resumes from it and
ends with the metrics of an uninterrupted run. Labeling and judging with a paid backend are killed
mid-stage (SIGTERM, SIGKILL); the rerun sends only the requests whose replies were not cached yet
and writes the labels or scores of an uninterrupted run.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from helpers.workflow import snakemake, write_config
from helpers.policy import TINY_POLICY, TINY_TRAIN
from loopback import Loopback, Reply, anthropic_message, chat_completion
from loopback.scripts import judge_reply, valid_label_reply
from helpers.workflow import OPENAI_KEY, judging_overlay, start

pytestmark = pytest.mark.slow

SIGNALS = pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
TRAIN = {**TINY_TRAIN, "total_steps": 6, "save_freq": 1, "test_freq": 2}
TARGET = "results/train/metrics.jsonl"


def kill_when(proc: subprocess.Popen, ready, sig: int, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert proc.poll() is None, "the run ended before the kill point"
        assert time.monotonic() < deadline, "the kill point was never reached"
        time.sleep(0.05)
    os.killpg(proc.pid, sig)
    proc.wait(timeout=60)


def unlock(workdir: Path, config: Path, env: dict | None = None) -> None:
    """After a SIGKILL Snakemake's lock stays behind; `snakemake --unlock` is the documented step."""
    snakemake(workdir, "--unlock", "--configfile", str(config), env=env)


def training_config(workdir: Path) -> Path:
    return write_config(workdir, policy=TINY_POLICY, train=TRAIN, eval={"steps": [6]})


def metrics(workdir: Path) -> list[dict]:
    rows = [json.loads(line) for line in (workdir / TARGET).read_text().splitlines()]
    return [{k: v for k, v in row.items() if not k.endswith(("seconds", "_s"))} for row in rows]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> list[dict]:
    workdir = tmp_path_factory.mktemp("uninterrupted")
    snakemake(workdir, TARGET, "--cores", "2", "--configfile", str(training_config(workdir)))
    return metrics(workdir)


@SIGNALS
def test_killed_training_resumes_from_its_checkpoint_and_matches(tmp_path, uninterrupted, sig):
    config = training_config(tmp_path)
    checkpoint = tmp_path / "results/train/checkpoints/step_2"
    proc = start(tmp_path, TARGET, "--cores", "2", "--configfile", str(config))
    kill_when(proc, checkpoint.exists, sig)
    time.sleep(0.5)
    assert not (tmp_path / TARGET).exists(), "a killed training job left its output looking finished"
    unlock(tmp_path, config)
    snakemake(tmp_path, TARGET, "--cores", "2", "--configfile", str(config))
    log = (tmp_path / "logs/train_grpo.log").read_text()
    assert "resum" in log.lower(), "the rerun did not resume from the saved checkpoint"
    assert metrics(tmp_path) == uninterrupted


# Labeling: 20 excerpts labelled by a loopback Claude that answers each with the rule labeler's script.
LABELS = "results/labels.jsonl"
ANTHROPIC_KEY = {"ANTHROPIC_API_KEY": "sk-ant-test-key"}


def label_reply(kind, body, n):
    return Reply(body=anthropic_message(valid_label_reply(body)), delay=0.2)


def labeling_config(workdir: Path, url: str) -> Path:
    return write_config(
        workdir,
        slice={"n_slices": 20},
        split={"n_test": 0},
        label={"backend": "claude", "model": "claude-test"},
        llm={"base_url": {"anthropic": url}, "concurrency": 1, "rate_limit_per_minute": {"anthropic": 0}},
    )


@pytest.fixture(scope="module")
def labeled_uninterrupted(tmp_path_factory) -> str:
    workdir = tmp_path_factory.mktemp("labeled")
    with Loopback(label_reply) as server:
        config = labeling_config(workdir, server.url)
        snakemake(workdir, LABELS, "--cores", "1", "--configfile", str(config), env=ANTHROPIC_KEY)
        assert server.count == 20
    return (workdir / LABELS).read_text()


@SIGNALS
def test_killed_labeling_resends_only_what_was_not_cached(tmp_path, labeled_uninterrupted, sig):
    with Loopback(label_reply) as server:
        config = labeling_config(tmp_path, server.url)
        proc = start(tmp_path, LABELS, "--cores", "1", "--configfile", str(config), env=ANTHROPIC_KEY)
        kill_when(proc, lambda: server.count >= 6, sig)
        sent_before = server.count
        assert not (tmp_path / LABELS).exists()
        unlock(tmp_path, config, env=ANTHROPIC_KEY)
        snakemake(tmp_path, LABELS, "--cores", "1", "--configfile", str(config), env=ANTHROPIC_KEY)
        resent = server.count - sent_before
    # Replies that arrived before the kill were cached; at most the one in flight is asked again.
    assert 20 - sent_before <= resent <= 20 - sent_before + 1
    labels = [json.loads(line) for line in (tmp_path / LABELS).read_text().splitlines()]
    assert len(labels) == 20 and {r["backend"] for r in labels} == {"claude"}
    assert (tmp_path / LABELS).read_text() == labeled_uninterrupted


# Judging: the base policy's outputs on 12 validation slices, scored by an OpenAI-compatible judge
# whose verdict depends on what it is asked, so equal scores mean equal requests and replies.
JUDGED = "results/eval/step_0/scores.jsonl"


def judge_verdict(kind, body, n):
    digest = hashlib.sha256(json.dumps(body["messages"], sort_keys=True).encode()).digest()
    return Reply(body=chat_completion(judge_reply(round(digest[0] / 255, 3))), delay=0.25)


def judging_config(workdir: Path, url: str) -> Path:
    return judging_overlay(workdir, url, llm={"concurrency": 1})


@pytest.fixture(scope="module")
def judged_uninterrupted(tmp_path_factory) -> str:
    workdir = tmp_path_factory.mktemp("judged")
    with Loopback(judge_verdict) as server:
        config = judging_config(workdir, server.url)
        snakemake(workdir, JUDGED, "--cores", "2", "--configfile", str(config), env=OPENAI_KEY)
        assert server.count == 12
    return (workdir / JUDGED).read_text()


@SIGNALS
def test_killed_judging_resends_only_what_was_not_cached_and_matches(tmp_path, judged_uninterrupted, sig):
    with Loopback(judge_verdict) as server:
        config = judging_config(tmp_path, server.url)
        proc = start(tmp_path, JUDGED, "--cores", "2", "--configfile", str(config), env=OPENAI_KEY)
        kill_when(proc, lambda: server.count >= 4, sig)
        sent_before = server.count
        assert not (tmp_path / JUDGED).exists(), "a killed judge job left its scores looking finished"
        unlock(tmp_path, config, env=OPENAI_KEY)
        snakemake(tmp_path, JUDGED, "--cores", "2", "--configfile", str(config), env=OPENAI_KEY)
        resent = server.count - sent_before
    assert 12 - sent_before <= resent <= 12 - sent_before + 1
    assert (tmp_path / JUDGED).read_text() == judged_uninterrupted
