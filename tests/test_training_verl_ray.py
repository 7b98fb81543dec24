"""The training environment reaches the Ray workers of a cluster that was started elsewhere.

A Ray head is started apart (as ``ray start`` on a training node would be), and a driver connects to
it through ``RAY_ADDRESS`` and calls ``ray.init`` the way Agent Lightning's ``run_ppo`` does. A worker
of that cluster does not inherit the driver's environment: without ``hand_env_to_ray`` verl's trainer
would not see the path of the training's per-step record (``STEP_RECORD``) and would record nothing.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from audiobook_rl.training.verl.environment import RAY_JOB_CONFIG, STEP_RECORD, hand_env_to_ray, training_env

pytestmark = pytest.mark.slow

DRIVER = """
import json, os, sys
import ray
from audiobook_rl.training.verl.environment import STEP_RECORD, hand_env_to_ray, training_env

env = training_env(sys.argv[1])
os.environ.update(env)
if sys.argv[2] == "handed":
    hand_env_to_ray(env)
# What agentlightning.verl.entrypoint.run_ppo does when Ray is not initialised yet:
ray.init(runtime_env={"env_vars": {"TOKENIZERS_PARALLELISM": "true", "NCCL_DEBUG": "WARN", "VLLM_LOGGING_LEVEL": "WARN"}})

@ray.remote
def worker_env():
    return {k: os.environ.get(k) for k in (STEP_RECORD, "LITELLM_LOCAL_MODEL_COST_MAP", "NCCL_DEBUG")}

print(json.dumps(ray.get(worker_env.remote())))
"""


@pytest.fixture(scope="module", autouse=True)
def no_ray_login_token():
    """Ray (2.52 on) makes a login token for each new local cluster and keeps it in ~/.ray/auth_token.
    Tests write only to temporary folders, and a token left by one run would shut the next run's
    drivers out of its clusters: these clusters run without one."""
    before = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"
    yield
    if before is None:
        del os.environ["RAY_AUTH_MODE"]
    else:
        os.environ["RAY_AUTH_MODE"] = before


@pytest.fixture(scope="module")
def ray_cluster():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's socket paths must fit in 107 bytes
    ray = Path(sys.executable).parent / "ray"
    # The cluster's own environment: nothing of a training job's.
    env = {k: v for k, v in os.environ.items() if k not in {*training_env("x"), RAY_JOB_CONFIG}}
    head = subprocess.Popen(
        [str(ray), "start", "--head", "--block", f"--port={port}", "--node-ip-address=127.0.0.1", "--num-cpus=1",
         "--num-gpus=0", "--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={temp}"],
        start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    yield f"127.0.0.1:{port}"
    os.killpg(head.pid, signal.SIGKILL)  # the head and every process it started
    head.wait(timeout=30)


def worker_env(address: str, log: Path, mode: str) -> dict:
    env = {**os.environ, "RAY_ADDRESS": address}
    env.pop(RAY_JOB_CONFIG, None)
    deadline = time.monotonic() + 120
    while True:  # the head takes a few seconds to accept drivers
        proc = subprocess.run([sys.executable, "-c", DRIVER, str(log), mode], env=env, capture_output=True, text=True)
        if proc.returncode == 0:
            return json.loads(proc.stdout.strip().splitlines()[-1])
        assert time.monotonic() < deadline, proc.stderr[-3000:]
        time.sleep(1)


def test_workers_of_an_existing_cluster_get_the_training_environment(ray_cluster, tmp_path):
    log = tmp_path / "train" / "steps.jsonl"
    # The gap this closes: a cluster worker sees Agent Lightning's variables but none of the driver's.
    assert worker_env(ray_cluster, log, "inherited") == {
        STEP_RECORD: None, "LITELLM_LOCAL_MODEL_COST_MAP": None, "NCCL_DEBUG": "WARN",
    }  # fmt: skip
    assert worker_env(ray_cluster, log, "handed") == {
        STEP_RECORD: str(log.resolve()), "LITELLM_LOCAL_MODEL_COST_MAP": "True", "NCCL_DEBUG": "WARN",
    }  # fmt: skip


def test_a_submitted_job_keeps_its_runtime_env_and_the_training_variables_win(monkeypatch):
    submitted = {"runtime_env": {"env_vars": {"A": "1", STEP_RECORD: "/old"}, "pip": ["x"]}, "metadata": {"k": "v"}}
    monkeypatch.setenv(RAY_JOB_CONFIG, json.dumps(submitted))
    hand_env_to_ray({STEP_RECORD: "/new", "B": "2"})
    job = json.loads(os.environ[RAY_JOB_CONFIG])
    assert job == {
        "runtime_env": {"env_vars": {"A": "1", STEP_RECORD: "/new", "B": "2"}, "pip": ["x"]},
        "metadata": {"k": "v"},
    }


LOCAL_DRIVER = """
import json, sys
from types import SimpleNamespace
import ray
from audiobook_rl.training.verl import backend as verl_backend
from helpers import seed_config

class Trainer:
    def __init__(self, **kwargs):
        pass

    def fit(self, agent, train_rows, val_dataset=None):
        # agentlightning.verl.entrypoint.run_ppo:
        if not ray.is_initialized():
            ray.init(runtime_env={"env_vars": {"TOKENIZERS_PARALLELISM": "true"}})
        print("GCS", ray.get_runtime_context().gcs_address, flush=True)

verl_backend.check_training = lambda *a, **k: []
verl_backend._agentlightning = lambda: SimpleNamespace(
    Trainer=Trainer, VERL=lambda *a, **k: None, OtelTracer=lambda: None, LlmProxyTraceToTriplet=lambda: None)
train = {**seed_config()["train"], "total_steps": 2, "save_freq": 2, "test_freq": 2}
rows = [{"i": i} for i in range(16)]
verl_backend.run_verl(train, "agent", rows, rows[:4], model_path=sys.argv[1], out_dir=sys.argv[1], fingerprint="x")
"""


def test_one_node_training_starts_its_own_ray_even_when_a_cluster_is_left_on_the_machine(tmp_path):
    """A plain ray.init() (Agent Lightning's) joins the newest cluster that `ray start` left on the
    machine, whose GPUs are not the ones this job claimed; training must start a Ray of its own."""
    base = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # the machine's Ray folder, apart from other runs
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k not in {"RAY_ADDRESS", RAY_JOB_CONFIG}}
    env["RAY_TMPDIR"] = base
    ray = Path(sys.executable).parent / "ray"
    stale = subprocess.Popen(
        [str(ray), "start", "--head", "--block", f"--port={port}", "--node-ip-address=127.0.0.1", "--num-cpus=1",
         "--num-gpus=0", "--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={base}/ray"],
        start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not (Path(base) / "ray" / "ray_current_cluster").exists():  # written once the head is up
            assert time.monotonic() < deadline and stale.poll() is None
            time.sleep(0.5)
        tests = Path(__file__).parent
        env["PYTHONPATH"] = os.pathsep.join([str(tests), env.get("PYTHONPATH", "")])
        proc = subprocess.run([sys.executable, "-c", LOCAL_DRIVER, str(tmp_path)], env=env, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        gcs = next(line.split()[1] for line in proc.stdout.splitlines() if line.startswith("GCS"))
        assert not gcs.endswith(f":{port}"), "training joined the Ray cluster left on the machine"
    finally:
        os.killpg(stale.pid, signal.SIGKILL)
        stale.wait(timeout=30)
