"""A stage entry point: one sentence for a user's mistake, and a finished stage always reported finished."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _stage(tmp_path, body: str, rule: str = "demo") -> subprocess.CompletedProcess:
    """Run ``body`` as the ``main`` of a stage script, with a stand-in for Snakemake's object."""
    header = f"""\
import atexit, types
from audiobook_rl.errors import UserError
from audiobook_rl.stage import run

smk = types.SimpleNamespace(log=[{str(tmp_path / "stage.log")!r}], rule={rule!r})
out = {str(tmp_path / "out.txt")!r}

def main(smk):
"""
    script = tmp_path / "stage.py"
    script.write_text(header + textwrap.indent(textwrap.dedent(body).strip(), "    ") + "\n\nrun(main, smk)\n", encoding="utf-8")
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True)


def test_a_crash_in_interpreter_teardown_does_not_fail_a_finished_stage(tmp_path):
    # An object that aborts the process when the interpreter clears module globals at exit, as a
    # native thread pool torn down in the wrong order does. The stage's work is done by then: it
    # must exit 0 (Snakemake would otherwise delete its outputs), with its exit handlers run and its
    # log complete.
    proc = _stage(
        tmp_path,
        """
        import os
        class Native:
            def __del__(self):
                os.abort()
        globals()["pool"] = Native()
        atexit.register(lambda: open(out + ".atexit", "w").close())
        open(out, "w").write("done")
        """,
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out.txt").read_text() == "done"
    assert (tmp_path / "out.txt.atexit").exists()  # Ray's shutdown and the like still run
    assert "rule demo done in" in (tmp_path / "stage.log").read_text()


def test_a_user_error_exits_1_with_its_sentence_and_no_traceback(tmp_path):
    proc = _stage(tmp_path, 'raise UserError("novel.txt: the file is empty.")')
    assert proc.returncode == 1
    assert "novel.txt: the file is empty." in proc.stderr and "Traceback" not in proc.stderr
    assert "novel.txt: the file is empty." in (tmp_path / "stage.log").read_text()


def test_an_unexpected_error_fails_the_stage_with_its_traceback(tmp_path):
    proc = _stage(tmp_path, 'raise RuntimeError("boom")')
    assert proc.returncode == 1 and "RuntimeError: boom" in proc.stderr


def _last_error(tmp_path) -> list[str]:
    from audiobook_rl.failures import sentences

    return sentences((tmp_path / "stage.log").read_text(encoding="utf-8"))


def test_a_full_disk_stops_the_stage_with_one_sentence_saying_what_to_free(tmp_path):
    # As Python's own writes fail (an OSError with ENOSPC), and as safetensors' do (a message).
    for body in (
        'import errno, os\nraise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "model.safetensors")',
        'raise RuntimeError(\'Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "No space left on device" })\')',
    ):
        proc = _stage(tmp_path, body, rule="train_grpo")
        assert proc.returncode == 1, proc.stderr
        (sentence,) = _last_error(tmp_path)
        assert sentence.startswith("rule train_grpo stopped because the disk is full (")
        assert "run the same command again" in sentence and "resumes from its last checkpoint" in sentence
        assert proc.stderr.rstrip().endswith(sentence)  # the last line a user sees
        assert "Traceback" in (tmp_path / "stage.log").read_text()  # the details stay in the log


def test_a_failure_that_names_no_cause_is_put_down_to_the_disk_only_when_it_is_full(tmp_path):
    # torch.save's message on a full disk (as it reads on a full tmpfs); the disk's free space decides.
    error = 'raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 704 vs 598")'
    proc = _stage(tmp_path, error)
    assert proc.returncode == 1
    assert _last_error(tmp_path)[0].startswith("rule demo failed unexpectedly: RuntimeError: [enforce fail")
    full = "import collections, shutil\nshutil.disk_usage = lambda path: collections.namedtuple('usage', 'total used free')(2**30, 2**30, 0)\n"
    proc = _stage(tmp_path, full + error)
    assert proc.returncode == 1
    assert _last_error(tmp_path)[0].startswith("rule demo stopped because the disk is full (")


def test_gpu_memory_run_out_names_the_keys_that_lower_it(tmp_path):
    # torch's message for a CUDA allocation that does not fit (torch.OutOfMemoryError).
    message = ("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of "
               "which 1.06 GiB is free. Including non-PyTorch memory, this process has 78.12 GiB memory in use.")
    proc = _stage(tmp_path, f"import torch\nraise torch.OutOfMemoryError({message!r})", rule="train_grpo")
    assert proc.returncode == 1
    (sentence,) = _last_error(tmp_path)
    assert sentence == (
        "rule train_grpo ran out of GPU memory (Tried to allocate 2.00 GiB on a GPU of 79.19 GiB with 1.06 GiB "
        "free): lower train.micro_batch_size (the update) or train.generate_batch_size (the rollouts) in your "
        "config, or end other processes on the GPU, and run the same command again; the finished stages are kept, and "
        "training resumes from its last checkpoint."
    )
    proc = _stage(tmp_path, "raise MemoryError()", rule="generate")
    assert proc.returncode == 1
    assert _last_error(tmp_path)[0].startswith("rule generate ran out of memory: lower generate.batch_size")
