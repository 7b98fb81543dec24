"""A stage entry point: one sentence for a user's mistake, and a finished stage always reported finished."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _stage(tmp_path, body: str) -> subprocess.CompletedProcess:
    """Run ``body`` as the ``main`` of a stage script, with a stand-in for Snakemake's object."""
    header = f"""\
import atexit, types
from audiobook_rl.errors import UserError
from audiobook_rl.stage import run

smk = types.SimpleNamespace(log=[{str(tmp_path / "stage.log")!r}], rule="demo")
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
