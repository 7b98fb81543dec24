"""The training environment reaches the Ray workers of a cluster that was started elsewhere.

A Ray head is started apart (as ``ray start`` on a training node would be), and a driver connects to
it through ``RAY_ADDRESS`` and calls ``ray.init`` the way Agent Lightning's ``run_ppo`` does. A worker
of that cluster does not inherit the driver's environment: without ``hand_env_to_ray`` verl's trainer
would not see ``VERL_FILE_LOGGER_PATH`` and would log nowhere.
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

from audiobook_rl.training.verl_backend import RAY_JOB_CONFIG, hand_env_to_ray, training_env

pytestmark = pytest.mark.slow

DRIVER = """
import json, os, sys
import ray
from audiobook_rl.training.verl_backend import hand_env_to_ray, training_env

env = training_env(sys.argv[1])
os.environ.update(env)
if sys.argv[2] == "handed":
    hand_env_to_ray(env)
# What agentlightning.verl.entrypoint.run_ppo does when Ray is not initialised yet:
ray.init(runtime_env={"env_vars": {"TOKENIZERS_PARALLELISM": "true", "NCCL_DEBUG": "WARN", "VLLM_LOGGING_LEVEL": "WARN"}})

@ray.remote
def worker_env():
    return {k: os.environ.get(k) for k in ("VERL_FILE_LOGGER_PATH", "LITELLM_LOCAL_MODEL_COST_MAP", "NCCL_DEBUG")}

print(json.dumps(ray.get(worker_env.remote())))
"""


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
    log = tmp_path / "verl_logs" / "attempt_001.jsonl"
    # The gap this closes: a cluster worker sees Agent Lightning's variables but none of the driver's.
    assert worker_env(ray_cluster, log, "inherited") == {
        "VERL_FILE_LOGGER_PATH": None, "LITELLM_LOCAL_MODEL_COST_MAP": None, "NCCL_DEBUG": "WARN",
    }  # fmt: skip
    assert worker_env(ray_cluster, log, "handed") == {
        "VERL_FILE_LOGGER_PATH": str(log.resolve()), "LITELLM_LOCAL_MODEL_COST_MAP": "True", "NCCL_DEBUG": "WARN",
    }  # fmt: skip


def test_a_submitted_job_keeps_its_runtime_env_and_the_training_variables_win(monkeypatch):
    submitted = {"runtime_env": {"env_vars": {"A": "1", "VERL_FILE_LOGGER_PATH": "/old"}, "pip": ["x"]}, "metadata": {"k": "v"}}
    monkeypatch.setenv(RAY_JOB_CONFIG, json.dumps(submitted))
    hand_env_to_ray({"VERL_FILE_LOGGER_PATH": "/new", "B": "2"})
    job = json.loads(os.environ[RAY_JOB_CONFIG])
    assert job == {
        "runtime_env": {"env_vars": {"A": "1", "VERL_FILE_LOGGER_PATH": "/new", "B": "2"}, "pip": ["x"]},
        "metadata": {"k": "v"},
    }
