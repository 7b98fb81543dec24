"""label_slices with the claude backend, run by Snakemake against a loopback Messages API: the
stage's outputs, a free rerun, a missing key, and no key in any file the run wrote."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers.workflow import snakemake, write_config
from loopback import Loopback, Reply, anthropic_message
from loopback.scripts import slices, valid_label_reply

from audiobook_rl.files import write_jsonl

KEY = "sk-ant-loopback-SECRET-9f8e7d6c5b4a"

pytestmark = pytest.mark.slow


def overlay(workdir: Path, server: Loopback) -> Path:
    """Claude at the loopback server, over four ready-made slices (the slicing stage is not under test)."""
    write_jsonl(workdir / "results/slices.jsonl", [s.to_dict() for s in slices(4)])
    return write_config(
        workdir,
        label={"backend": "claude", "model": "claude-opus-test"},
        llm={"base_url": {"anthropic": server.url}, "backoff_s": 0.001, "rate_limit_per_minute": {"anthropic": 0}},
    )


def valid(kind, body, n) -> Reply:
    return Reply(body=anthropic_message(valid_label_reply(body), input_tokens=200, output_tokens=80))


def files_under(root: Path):
    for dirpath, _, names in os.walk(root):
        for name in names:
            yield Path(dirpath) / name


def test_claude_stage_labels_every_slice_and_never_writes_the_key(workdir):
    with Loopback(valid) as server:
        config = overlay(workdir, server)
        snakemake(
            workdir, "--cores", "2", "results/labels.jsonl", "--configfile", str(config), env={"ANTHROPIC_API_KEY": KEY}
        )
        sent = server.count
        # Forcing the finished stage again pays nothing: every reply is in the cache.
        snakemake(
            workdir,
            "--cores",
            "2",
            "results/labels.jsonl",
            "--forcerun",
            "label_slices",
            "--configfile",
            str(config),
            env={"ANTHROPIC_API_KEY": KEY},
        )
        assert server.count == sent

    labels = [json.loads(line) for line in (workdir / "results/labels.jsonl").read_text(encoding="utf-8").splitlines()]
    assert sent == len(labels) == 4
    assert {(r["backend"], r["model"]) for r in labels} == {("claude", "claude-opus-test")}
    usage = json.loads((workdir / "results/labels.usage.json").read_text(encoding="utf-8"))
    assert (usage["requests_sent"], usage["cache_hits"], usage["input_tokens"]) == (0, 4, 0)  # the forced rerun
    assert "labeled: 4/4" in (workdir / "logs/label_slices.log").read_text(encoding="utf-8")

    # Client knobs (concurrency, timeouts, rate limits) are not params: editing them reruns nothing.
    knobs = write_config(
        workdir,
        label={"backend": "claude", "model": "claude-opus-test"},
        llm={"base_url": {"anthropic": "http://127.0.0.1:9"}, "concurrency": 2, "timeout_s": 9, "max_tries": 2},
    )
    dry = snakemake(
        workdir, "-n", "--cores", "1", "results/labels.jsonl", "--configfile", str(knobs), env={"ANTHROPIC_API_KEY": KEY}
    )
    assert "Nothing to be done" in dry.stdout

    written = list(files_under(workdir))
    assert any(".snakemake" in str(p) for p in written) and any("cache" in str(p) for p in written)
    leaks = [str(p) for p in written if KEY.encode() in p.read_bytes()]
    assert leaks == []


def test_missing_key_stops_the_stage_with_one_sentence_before_any_request(workdir):
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    with Loopback(valid) as server:
        config = overlay(workdir, server)
        saved = os.environ.pop("ANTHROPIC_API_KEY", None)
        try:
            proc = snakemake(
                workdir, "--cores", "1", "results/labels.jsonl", "--configfile", str(config), check=False, env=env
            )
        finally:
            if saved is not None:
                os.environ["ANTHROPIC_API_KEY"] = saved
    assert proc.returncode != 0
    assert server.count == 0
    # Said in one sentence by the workflow's start check or, failing that, by the stage itself.
    log = workdir / "logs/label_slices.log"
    said = proc.stdout + proc.stderr + (log.read_text(encoding="utf-8") if log.exists() else "")
    assert "ANTHROPIC_API_KEY" in said and "not set" in said
    assert "Traceback" not in said
    assert not (workdir / "results/labels.jsonl").exists()
