"""A stage that fails at run time: its one sentence is the last line the user sees, the log stays."""

from __future__ import annotations

import logging
import socket
import types

import pytest

from audiobook_rl.errors import UserError
from audiobook_rl.failures import sentences, summary
from audiobook_rl.stage import run
from helpers import STORY
from helpers.workflow import snakemake, write_config


def stage_log(tmp_path, error: Exception) -> str:
    """The log a stage writes when ``error`` ends it (through the stages' own runner)."""
    log = tmp_path / "stage.log"

    def main(smk):
        logging.getLogger("audiobook_rl.x").info("read 20 slices")
        raise error

    with pytest.raises((SystemExit, type(error))):
        run(main, types.SimpleNamespace(log=[str(log)], rule="x"))
    logging.getLogger("audiobook_rl").handlers.clear()
    return log.read_text(encoding="utf-8")


def test_the_sentence_of_a_user_error(tmp_path):
    text = stage_log(tmp_path, UserError("novel.txt: the file is empty."))
    assert sentences(text) == ["novel.txt: the file is empty."]


def test_every_problem_of_a_multi_line_error(tmp_path):
    text = stage_log(tmp_path, UserError("vllm is not installed; install it.\nno GPU is visible; use one."))
    assert sentences(text) == ["vllm is not installed; install it.", "no GPU is visible; use one."]


def test_an_unexpected_exception_gives_its_last_line(tmp_path):
    text = stage_log(tmp_path, RuntimeError("CUDA error: an illegal memory access was encountered"))
    assert sentences(text) == ["rule x failed unexpectedly: RuntimeError: CUDA error: an illegal memory access was encountered"]


def test_memory_run_out_gives_the_sentence_not_the_traceback(tmp_path):
    text = stage_log(tmp_path, RuntimeError("CUDA out of memory"))
    assert sentences(text) == ["rule x ran out of GPU memory: lower the rule's batch sizes in your config, or end "
                               "other processes on the GPU, and run the same command again; the finished stages are kept."]


def test_a_killed_stage_shows_where_its_log_ends():
    assert sentences("10:00:00 INFO audiobook_rl.x: step 3/30\n") == [
        "stopped without an error message; its log ends with: 10:00:00 INFO audiobook_rl.x: step 3/30"
    ]
    assert sentences("") == []


def test_summary_names_each_job_and_its_log(tmp_path):
    log = tmp_path / "judge.log"
    log.write_text("10:00:00 ERROR audiobook_rl: scores.jsonl: 3 judge failures.\n", encoding="utf-8")
    assert summary([("judge step=2", log), ("report", None)]) == (
        f"Error in judge step=2: scores.jsonl: 3 judge failures. (full log: {log})\n"
        "Error in report: failed before writing its log; see Snakemake's messages above"
    )


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_a_stage_failing_at_run_time_ends_the_output_with_its_sentence(workdir):
    # Claude labels from a server that is not there: a failure no start-up check can foresee.
    (workdir / "novel.txt").write_bytes(STORY.read_bytes())
    overlay = write_config(
        workdir, corpus="novel.txt", label={"backend": "claude"},
        llm={"base_url": {"anthropic": f"http://127.0.0.1:{closed_port()}"}, "max_tries": 1, "timeout_s": 5},
    )  # fmt: skip
    proc = snakemake(workdir, "results/labels.jsonl", "--cores", "1", "--configfile", str(overlay), check=False,
                     env={"ANTHROPIC_API_KEY": "sk-ant-test"})
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("Error in label_slices: slice s0") and "Connection" in last, proc.stderr[-3000:]
    assert last.endswith("(full log: logs/label_slices.log)")
    # The log is kept whole, and not printed a second time.
    log = (workdir / "logs/label_slices.log").read_text(encoding="utf-8")
    assert last.split(": ", 1)[1].split(" (full log")[0] in log
    assert "Logfile logs/label_slices.log" not in proc.stdout + proc.stderr
