"""generate: the agent's two calls per validation slice with a saved policy, batched."""

from pathlib import Path

import pytest

from audiobook_rl.agent import hf_chat
from audiobook_rl.dataset import Task
from audiobook_rl.generation import generate_outputs
from helpers import prompts, settings
from helpers.policy import shared_tiny_policy, tiny_rows

SETTINGS = settings("generate", max_tokens=10, batch_size=2)


@pytest.fixture(scope="module")
def policy_dir(tmp_path_factory):
    return shared_tiny_policy(tmp_path_factory)


def generate(policy_dir, tasks, step=0, **changes):
    config = {**SETTINGS, **changes}
    return generate_outputs(hf_chat.client(str(policy_dir), config, "cpu"), tasks, prompts(), config, step)


def test_outputs_have_one_record_per_slice_in_the_contract_format(policy_dir):
    tasks = [Task.from_row(r) for r in tiny_rows(1, 3)["val"]]
    records = generate(policy_dir, tasks)
    assert [r["id"] for r in records] == [t.id for t in tasks]
    for r in records:
        assert set(r) == {"id", "step", "draft", "final", "draft_notes", "final_notes"}
        assert r["step"] == 0 and isinstance(r["draft"], str) and isinstance(r["final"], str)
        assert r["final_notes"]["status"] in {"strict", "repaired", "invalid"}
    # greedy: the same model gives the same outputs
    assert generate(policy_dir, tasks) == records
    # `best` names its step as the workflow does
    assert {r["step"] for r in generate(policy_dir, tasks, step="best")} == {"best"}


def test_top_k_1_sampling_is_greedy(policy_dir):
    tasks = [Task.from_row(r) for r in tiny_rows(1, 2)["val"]]
    assert generate(policy_dir, tasks, temperature=1.5, top_k=1) == generate(policy_dir, tasks)


# A generate job on one of two GPUs with vLLM, which this machine cannot install: a stand-in whose
# LLM forks its engine core as vLLM 0.10 does and whose llm_engine.engine_core.shutdown() ends it as
# vLLM's SyncMPClient does (terminate, wait up to 5 s, kill), after a second of teardown; like vLLM's,
# the client also shuts down from an exit handler (weakref.finalize), which a terminated job never runs.
VLLM_JOB = """
import multiprocessing, os, runpy, sys, time, types, weakref
from pathlib import Path

mode, work = sys.argv[1], Path(sys.argv[2])


def engine_core():
    (work / "engine.pid").write_text(str(os.getpid()))
    time.sleep(3600)


def end(proc):
    if proc.is_alive():
        time.sleep(1.0)
        proc.terminate()
        proc.join(5)
        if proc.is_alive():
            proc.kill()
            proc.join()


class EngineCoreClient:
    def __init__(self, proc):
        self._finalizer = weakref.finalize(self, end, proc)

    def shutdown(self):
        self._finalizer()


class LLM:
    def __init__(self, **engine):
        proc = multiprocessing.get_context("fork").Process(target=engine_core)
        proc.start()
        self.llm_engine = types.SimpleNamespace(engine_core=EngineCoreClient(proc))

    def generate(self, prompts, params, use_tqdm=True):
        (work / "generating").touch()
        if mode == "error":
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        time.sleep(3600)


sys.modules["vllm"] = types.SimpleNamespace(LLM=LLM, SamplingParams=lambda **kwargs: kwargs)
import audiobook_rl.agent.vllm_chat as vllm_chat
import audiobook_rl.gpus as gpus
from helpers import REPO, seed_config

vllm_chat.check_generate_vllm = lambda: []  # a vLLM the stage accepts, as far as it can tell
gpus.require_cuda = lambda n, key: None  # the GPUs are stand-ins: torch here is a CPU build
smk = types.SimpleNamespace(
    threads=1, rule="generate", wildcards=types.SimpleNamespace(step="1000"), resources=types.SimpleNamespace(gpu=1),
    input=types.SimpleNamespace(model=str(work / "model"), tasks=str(work / "val.parquet"),
                                create_prompt=str(REPO / "config/prompts/create.md"),
                                rewrite_prompt=str(REPO / "config/prompts/rewrite.md")),
    params=types.SimpleNamespace(generate=seed_config()["generate"]), output=[str(work / "outputs.jsonl")],
    log=[str(work / "generate.log")],
)
runpy.run_path(str(REPO / "scripts/generate.py"), init_globals={"snakemake": smk})
"""


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie, dead but not yet reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def free(lock: Path) -> bool:
    """Whether the GPU lock ``lock`` can be taken now (taken and let go at once)."""
    import fcntl
    import os

    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


@pytest.mark.slow  # a generate job in a process of its own
@pytest.mark.parametrize("end", ["error", "sigterm"])
def test_the_generate_job_ends_its_vllm_engine_before_it_frees_its_gpu(tmp_path, end):
    """When generation fails, or Snakemake terminates the job, the engine process that holds the GPU
    ends before the job's claim on the GPU does: a job waiting for the GPU never gets it while an
    orphaned engine still holds its memory."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from audiobook_rl.files import write_parquet_rows
    from audiobook_rl.policy.tokenizer import train_tokenizer
    from helpers import REPO

    train_tokenizer([(REPO / "config/prompts/create.md").read_text(encoding="utf-8")], 300).save_pretrained(tmp_path / "model")
    write_parquet_rows(tmp_path / "val.parquet", tiny_rows(1, 1)["val"])
    tests = Path(__file__).parent
    env = {**os.environ, "AUDIOBOOK_RL_GPU_LOCKS": str(tmp_path / "locks"), "CUDA_VISIBLE_DEVICES": "0,1",
           "PYTHONPATH": os.pathsep.join([str(tests), os.environ.get("PYTHONPATH", "")])}
    job = subprocess.Popen([sys.executable, "-c", VLLM_JOB, end, str(tmp_path)], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    engine = None
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "generating").exists():
            assert job.poll() is None or end == "error", job.stderr.read()[-3000:]
            assert time.monotonic() < deadline, "generation never started"
            time.sleep(0.05)
        engine = int((tmp_path / "engine.pid").read_text())
        if end == "sigterm":
            job.send_signal(signal.SIGTERM)
        lock = tmp_path / "locks" / "gpu-0.lock"
        deadline = time.monotonic() + 30
        while not free(lock):
            assert time.monotonic() < deadline, "the job never freed its GPU"
            time.sleep(0.01)
        assert not alive(engine), "the GPU was free while the engine still ran"
        assert job.wait(timeout=30) == (1 if end == "error" else 128 + signal.SIGTERM)
    finally:
        job.kill()
        job.wait()
        if engine is not None and alive(engine):
            os.kill(engine, signal.SIGKILL)


class Recorder:
    """A chat client that answers every call with an empty script and keeps the messages it was sent."""

    def __init__(self):
        self.sent = []

    def chat(self, messages, **sampling):
        from audiobook_rl.agent.episode import Reply

        self.sent.append(messages)
        return Reply("[]")


def test_the_agent_shows_both_roles_the_text_before_the_excerpt_only_through_a_context_prompt():
    from audiobook_rl.agent.episode import AgentPrompts, run_episodes
    from helpers import REPO

    task = Task("s1", "那汉子笑道：“今日好热！”", [], {}, before="卖酒的钱百通正在擦桌子。\n")
    context = AgentPrompts.load(REPO / "config/prompts/create_context.md", REPO / "config/prompts/rewrite_context.md")
    assert context.create.uses("before") and not prompts().create.uses("before")
    client = Recorder()
    run_episodes([task], client, context, temperature=0.0, max_tokens=8)
    assert len(client.sent) == 2  # create, then rewrite
    for messages in client.sent:
        user = messages[1]["content"]
        assert "卖酒的钱百通正在擦桌子。" in user and user.index("钱百通") < user.index("那汉子笑道")
    plain = Recorder()
    run_episodes([task], plain, prompts(), temperature=0.0, max_tokens=8)
    assert not any("钱百通" in m["content"] for messages in plain.sent for m in messages)
