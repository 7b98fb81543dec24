"""The vLLM backend of generate, around vLLM itself (not installable on the CPU machine): engine and
sampling arguments, prompts rendered with the chat template as token ids, output parsing through the
agent's create -> rewrite code, and one clear sentence when vLLM or a GPU is missing."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

from audiobook_rl import preflight
from audiobook_rl.agent import vllm_chat
from audiobook_rl.agent.episode import run_episodes
from audiobook_rl.agent.vllm_chat import VLLMChat, client, engine_args
from audiobook_rl.agent.vllm_sampling import sampling_args
from audiobook_rl.dataset import Task
from audiobook_rl.errors import UserError
from audiobook_rl.policy.tokenizer import prompt_ids, train_tokenizer
from helpers import REPO, prompts as agent_prompts


class FakeSamplingParams:
    def __init__(self, **kwargs):
        self.kwargs = kwargs


class FakeLLM:
    """Answers like ``vllm.LLM.generate``: one RequestOutput per prompt, in order."""

    def __init__(self, tokenizer, answers, **engine):
        self.tokenizer, self.answers, self.engine, self.calls = tokenizer, list(answers), engine, []

    def generate(self, prompts, params, use_tqdm=True):
        self.calls.append((prompts, params))
        outs = []
        for p in prompts:
            text = self.answers.pop(0)
            ids = self.tokenizer(text, add_special_tokens=False)["input_ids"] + [self.tokenizer.eos_token_id]
            outs.append(SimpleNamespace(prompt_token_ids=p["prompt_token_ids"],
                                        outputs=[SimpleNamespace(text=text, token_ids=tuple(ids), finish_reason="stop")]))
        return outs


@pytest.fixture(scope="module")
def tokenizer():
    # Byte-level BPE with a ChatML template (the embedded policy's): any text round-trips.
    return train_tokenizer([(REPO / "config/prompts/rewrite.md").read_text(encoding="utf-8"), "draft final"], 400)


def test_engine_and_sampling_arguments():
    args = engine_args("/m/step_1400", {"seed": 3})
    assert args["model"] == args["tokenizer"] == "/m/step_1400"
    assert (args["tensor_parallel_size"], args["dtype"], args["seed"]) == (1, "bfloat16", 3)
    greedy = sampling_args(0.0, 1024, seed=3)
    assert greedy["temperature"] == 0.0 and "seed" not in greedy and greedy["max_tokens"] == 1024
    assert sampling_args(0.7, 16, seed=3)["seed"] == 3
    assert (greedy["top_p"], greedy["top_k"]) == (1.0, -1)  # vLLM writes "no top-k" as -1


def test_nucleus_and_top_k_reach_vllms_sampling_params(tokenizer):
    prompts = agent_prompts()
    llm = FakeLLM(tokenizer, ["draft", "final"])
    chat = VLLMChat(llm, tokenizer, FakeSamplingParams, seed=0)
    run_episodes([Task("s1", "林青道：“走吧。”", [], {})], chat, prompts, temperature=0.7, max_tokens=64, top_p=0.9, top_k=40)
    assert [(c[1].kwargs["top_p"], c[1].kwargs["top_k"]) for c in llm.calls] == [(0.9, 40), (0.9, 40)]


def test_both_roles_run_through_vllm_with_chat_template_prompts(tokenizer):
    prompts = agent_prompts()
    task = Task("s1", "林青道：“走吧。”", [], {})
    llm = FakeLLM(tokenizer, ["draft A", "draft B", "final A", "final B"])  # create batch, then rewrite batch
    chat = VLLMChat(llm, tokenizer, FakeSamplingParams, seed=0)
    episodes = run_episodes([task, task], chat, prompts, temperature=0.0, max_tokens=64)
    # one batched generate call per role, greedy
    assert len(llm.calls) == 2 and all(c[1].kwargs["temperature"] == 0.0 for c in llm.calls)
    create_prompts = [p["prompt_token_ids"] for p in llm.calls[0][0]]
    assert create_prompts[0] == prompt_ids(tokenizer, prompts.create_messages(task.text))
    # the draft reaches the rewrite prompt
    rewrite_text = tokenizer.decode(llm.calls[1][0][0]["prompt_token_ids"], skip_special_tokens=False)
    assert "draft A" in rewrite_text and rewrite_text.endswith("<|im_start|>assistant\n")
    assert [(e.draft, e.final) for e in episodes] == [("draft A", "final A"), ("draft B", "final B")]
    reply = episodes[0].calls[1].reply
    assert reply.response_ids[-1] == tokenizer.eos_token_id and reply.prompt_ids == llm.calls[1][0][0]["prompt_token_ids"]
    record = episodes[0].output_record(1400)
    assert record["final"] == "final A" and record["final_notes"]["status"] == "invalid"


def test_missing_vllm_is_one_sentence(monkeypatch):
    # vLLM missing, whatever this machine has installed
    monkeypatch.setattr(preflight, "installed", lambda name: None)
    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(UserError) as err:
        client("/m", {"seed": 0}, "cuda")
    msg = str(err.value)
    assert "'generate.backend' is 'vllm' but vllm is not installed" in msg and "generate.backend: hf" in msg
    assert msg.count(".") >= 1 and "\n" not in msg


def test_vllm_needs_a_gpu():
    with pytest.raises(UserError, match="resources.generate.gpu"):
        client("/m", {"seed": 0}, "cpu")


def test_the_client_builds_the_engine(monkeypatch, tmp_path, tokenizer):
    tokenizer.save_pretrained(tmp_path)
    built = {}

    def llm(**engine):
        built.update(engine)
        return FakeLLM(tokenizer, ["x"])

    monkeypatch.setitem(sys.modules, "vllm", SimpleNamespace(LLM=llm, SamplingParams=FakeSamplingParams))
    monkeypatch.setattr(preflight, "installed", lambda name: "0.26.0" if name == "vllm" else None)
    chat = client(str(tmp_path), {"seed": 5}, "cuda")
    assert built["model"] == str(tmp_path) and built["seed"] == 5
    assert chat.chat([{"role": "user", "content": "hi"}], temperature=0.0, max_tokens=4).text == "x"


@pytest.mark.parametrize("version, warned", [("0.10.2", False), ("0.26.0", False), ("0.27.1", True)])
def test_a_vllm_newer_than_those_tested_builds_with_a_warning(monkeypatch, tmp_path, tokenizer, caplog, version, warned):
    tokenizer.save_pretrained(tmp_path)
    monkeypatch.setitem(sys.modules, "vllm", SimpleNamespace(LLM=lambda **engine: FakeLLM(tokenizer, ["x"]),
                                                             SamplingParams=FakeSamplingParams))
    monkeypatch.setattr(preflight, "installed", lambda name: version if name == "vllm" else None)
    with caplog.at_level("WARNING", logger=vllm_chat.log.name):
        client(str(tmp_path), {"seed": 0}, "cuda")
    assert (f"vllm {version}: the generate stage is known to work with vllm 0.10.2 and 0.26.0 only" in caplog.text) is warned


def test_a_vllm_older_than_0_10_2_is_refused(monkeypatch):
    monkeypatch.setattr(preflight, "installed", lambda name: "0.9.2" if name == "vllm" else None)
    with pytest.raises(UserError, match=r"'generate.backend' is 'vllm' but vllm 0.9.2 is older than generation needs \(>= 0.10.2"):
        client("/m", {"seed": 0}, "cuda")


def test_the_generate_stage_leaves_fork_usable_for_the_vllm_engine(tmp_path, monkeypatch):
    """vLLM 0.10.2 runs its engine in a child process and forks it unless CUDA is initialised here
    (``torch.cuda.is_initialized()``). torch's plain ``is_available()`` calls cudaGetDeviceCount
    (``torch._C._cuda_getDeviceCount``), which leaves is_initialized() False but poisons fork: the
    engine would die with "Cannot re-initialize CUDA in forked subprocess". The stage script must
    count GPUs through NVML instead. torch here is a CPU build, so it stands in for a CUDA build with
    one GPU; the real fork on a GPU is bench/fork_after_gpu_check.py."""
    import runpy

    import torch

    from audiobook_rl import gpus
    from audiobook_rl.files import write_parquet_rows
    from helpers.policy import tiny_rows

    poisoning = []
    monkeypatch.setattr(torch.cuda, "_is_compiled", lambda: True)
    monkeypatch.setattr(torch.cuda, "_device_count_nvml", lambda: 1)
    monkeypatch.setattr(torch._C, "_cuda_getDeviceCount", lambda: poisoning.append("cudaGetDeviceCount") or 1, raising=False)
    monkeypatch.setenv(gpus.NVML_CHECK, "0")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")  # the job's GPU, as a cluster would give it
    at_engine_start = {}

    def vllm_backend(model_dir, settings, device):
        at_engine_start.update(device=device, poisoned=list(poisoning), initialized=torch.cuda.is_initialized())
        raise UserError("stop here: vLLM itself is not installed on this machine")

    monkeypatch.setattr(vllm_chat, "client", vllm_backend)
    write_parquet_rows(tmp_path / "val.parquet", tiny_rows(1, 1)["val"])
    smk = SimpleNamespace(
        threads=1, rule="generate", wildcards=SimpleNamespace(step="1000"), resources=SimpleNamespace(gpu=1),
        input=SimpleNamespace(model=str(tmp_path), tasks=str(tmp_path / "val.parquet"),
                              create_prompt=str(REPO / "config/prompts/create.md"),
                              rewrite_prompt=str(REPO / "config/prompts/rewrite.md")),
        params=SimpleNamespace(generate={"backend": "vllm"}), output=[str(tmp_path / "out.jsonl")],
        log=[str(tmp_path / "generate.log")],
    )
    with pytest.raises(SystemExit):
        runpy.run_path(str(REPO / "scripts/generate.py"), init_globals={"snakemake": smk})
    assert at_engine_start == {"device": "cuda", "poisoned": [], "initialized": False}
