"""GPU jobs claim GPUs of their own: parallel jobs never share one, a killed job frees its GPUs.

The GPUs are stand-ins (a fake ``nvidia-smi`` on PATH, or ``CUDA_VISIBLE_DEVICES``): claiming is
locking and setting the environment, which CUDA then honours (checked on real GPUs in the note).
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from audiobook_rl import gpus
from audiobook_rl.errors import UserError
from audiobook_rl.preflight import VERL_GPUS_FIX
from helpers.workflow import snakemake, write_config
from helpers.policy import TINY_POLICY

CLAIMER = """
import os, sys
from audiobook_rl.gpus import claim
print(",".join(claim(int(sys.argv[1]), "resources.generate.gpu", holder=sys.argv[2])),
      os.environ["CUDA_VISIBLE_DEVICES"], flush=True)
sys.stdin.read()  # hold the claim until the test closes stdin
"""


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """A machine whose driver lists two GPUs, with its own lock folder."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text("#!/bin/sh\nprintf '0\\n1\\n'\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv(gpus.LOCK_DIR_ENV, str(tmp_path / "locks"))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    yield tmp_path
    for claimer in Claimer.started:  # jobs still waiting when a test ends
        claimer.proc.kill()
        claimer.proc.wait()
    Claimer.started.clear()


class Claimer:
    started: list["Claimer"] = []

    def __init__(self, n: int, name: str):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CLAIMER, str(n), name],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: self.lines.put(self.proc.stdout.readline()), daemon=True).start()
        Claimer.started.append(self)

    def claimed(self, timeout: float = 30) -> tuple[str, str] | None:
        """(claimed ids, CUDA_VISIBLE_DEVICES) once the claim is made; None if still waiting."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            return None
        assert line, self.proc.stderr.read()
        ids, env = line.split()
        return ids, env

    def release(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def test_parallel_jobs_get_different_gpus_and_cuda_sees_only_its_own(machine):
    a, b = Claimer(1, "generate step 10"), Claimer(1, "generate step 20")
    got = [a.claimed(), b.claimed()]
    assert sorted(ids for ids, _ in got) == ["0", "1"]
    assert all(ids == env for ids, env in got)
    a.release(), b.release()


def test_a_job_waits_for_a_gpu_and_gets_the_one_a_killed_job_held(machine):
    a, b = Claimer(1, "generate step 10"), Claimer(1, "generate step 20")
    held = {a.claimed()[0]: a, b.claimed()[0]: b}
    c = Claimer(1, "generate step 30")
    assert c.claimed(timeout=2.5) is None, "a third job started on a GPU that two jobs hold"
    os.kill(held["1"].proc.pid, signal.SIGKILL)  # no clean-up at all: the kernel drops the lock
    assert c.claimed() == ("1", "1")
    held["0"].release(), c.release()
    said = c.proc.stderr.read()  # what its job log would show while it waited
    assert "waiting for 1 free GPU(s) of 0,1" in said and "GPU 1: generate step " in said and ", pid " in said


FORKER = """
import os, sys, time
from audiobook_rl.gpus import claim
claim(2, "train.gpus_per_node", holder="train_grpo (verl)")
child = os.fork()
if child == 0:  # a runner process, as Agent Lightning forks them; it outlives the job
    time.sleep(300)
    os._exit(0)
print(child, flush=True)
sys.stdin.read()
"""


def test_a_forked_child_that_outlives_a_killed_job_holds_no_gpu(machine):
    job = subprocess.Popen([sys.executable, "-c", FORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    orphan = int(job.stdout.readline())
    try:
        os.kill(job.pid, signal.SIGKILL)  # the stage is killed (OOM, scancel); its runner lives on
        job.wait(timeout=30)
        os.kill(orphan, 0)  # still alive
        nxt = Claimer(2, "train_grpo of the next run")
        assert nxt.claimed(timeout=10) == ("0,1", "0,1"), "an orphaned child of a killed job kept its GPUs"
        nxt.release()
    finally:
        os.kill(orphan, signal.SIGKILL)


ENGINE_FORKER = """
import os, sys, time
from audiobook_rl.gpus import claim, shared_with_children
claim(1, "resources.generate.gpu", holder="generate step 1000")
with shared_with_children():
    engine = os.fork()  # vLLM's engine core, which holds the GPU's memory
    if engine == 0:
        if os.fork() == 0:  # a process the engine forks in turn: it holds no claim
            time.sleep(30)
            os._exit(0)
        time.sleep(300)
        os._exit(0)
runner = os.fork()  # forked after the block: holds no claim
if runner == 0:
    time.sleep(300)
    os._exit(0)
print(engine, runner, flush=True)
sys.stdin.read()
"""


def test_the_gpu_engine_of_a_killed_job_keeps_its_gpu_claimed_until_it_ends(machine):
    job = subprocess.Popen([sys.executable, "-c", ENGINE_FORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    engine, runner = map(int, job.stdout.readline().split())
    try:
        os.kill(job.pid, signal.SIGKILL)  # the stage is killed before it could end its engine
        job.wait(timeout=30)
        nxt = Claimer(2, "generate step 1400")
        assert nxt.claimed(timeout=2.5) is None, "the next job got a GPU an orphaned engine still holds"
        os.kill(engine, signal.SIGKILL)
        assert nxt.claimed() == ("0,1", "0,1")  # the engine's own child and the runner hold nothing
        nxt.release()
    finally:
        for pid in (engine, runner):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_a_job_needing_two_gpus_never_takes_one_of_them_while_the_other_is_held(machine):
    first = Claimer(2, "train_grpo")
    assert first.claimed() == ("0,1", "0,1")
    second, single = Claimer(2, "train_grpo of another run"), Claimer(1, "generate")
    assert second.claimed(timeout=2.5) is None and single.claimed(timeout=0.1) is None
    first.release()
    # Exactly one of the waiting jobs gets its GPUs; the other keeps waiting.
    results = [second.claimed(timeout=10), single.claimed(timeout=0.5)]
    assert results in ([("0,1", "0,1"), None], [None, ("0", "0")])


def test_candidates_are_the_visible_devices_when_cuda_visible_devices_is_set(machine, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    a, b = Claimer(1, "generate step 10"), Claimer(1, "generate step 20")
    assert sorted([a.claimed(), b.claimed()]) == [("3", "3"), ("5", "5")]
    a.release(), b.release()


def test_gpus_a_cluster_assigned_are_used_without_locks(machine, monkeypatch):
    # A Slurm or Kubernetes job sees exactly its own GPUs, numbered from 0 in every job.
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    a, b = Claimer(1, "job on node x"), Claimer(1, "another job on node x")
    assert [a.claimed(), b.claimed()] == [("0", "0"), ("0", "0")]
    a.release(), b.release()


def test_asking_for_more_gpus_than_the_machine_has_is_one_sentence(machine):
    with pytest.raises(UserError, match=r"'resources.generate.gpu' asks for 3 GPU\(s\) but this machine has 2"):
        gpus.claim(3, "resources.generate.gpu")


def test_no_gpu_at_all_is_one_sentence(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi; torch (CPU build) sees no GPU
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    with pytest.raises(UserError, match=r"'resources.train_grpo.gpu' asks for 1 GPU\(s\) but this machine has 0; lower it, or set it to 0"):
        gpus.claim(1, "resources.train_grpo.gpu")
    # verl's GPUs per node cannot be 0: the way out is the CPU backend.
    with pytest.raises(UserError, match=r"'train.gpus_per_node' asks for 2 GPU\(s\) but this machine has 0; run where that many GPUs are visible, or train on the CPU with train.backend: local\.$"):
        gpus.claim(2, "train.gpus_per_node", fix=VERL_GPUS_FIX)


def test_no_gpu_asked_claims_nothing(machine):
    assert gpus.claim(0, "resources.generate.gpu") == []
    assert "CUDA_VISIBLE_DEVICES" not in os.environ
    assert not Path(os.environ[gpus.LOCK_DIR_ENV]).exists()


@pytest.mark.slow  # runs Snakemake
def test_a_gpu_job_on_a_machine_without_gpus_stops_the_run_before_any_job(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}/usr/bin:/bin")  # no nvidia-smi
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    config = write_config(tmp_path, policy=TINY_POLICY, eval={"steps": []}, resources={"generate": {"gpu": 1}})
    proc = snakemake(
        tmp_path, "results/eval/step_0/outputs.jsonl", "--cores", "2", "--resources", "gpu=2",
        "--configfile", str(config), check=False,
    )  # fmt: skip
    assert proc.returncode != 0
    output = proc.stdout + proc.stderr
    assert output.strip().splitlines()[-1] == (
        "Error: config key 'resources.generate.gpu' needs 1 GPU(s) on this node but 0 are visible; lower it, or set it to 0 for the CPU."
    )
    assert "Traceback" not in output
    assert not (tmp_path / "results").exists(), "jobs ran although generate could not"  # checked before the first job
