"""The colocated vLLM rollout engine, around vLLM itself (not installable on the CPU machine): the
weights it hands to vLLM and their names, the engine's arguments, seeds per request, the order of
wake-up, weight load and cache reset in an update, and one clear sentence when vLLM is missing.

Verified only on a GPU, with vLLM 0.26.0 (bench/bench_vllm.py): that the engine starts beside the
policy in this process, that ``load_weights`` accepts these names and changes the engine's greedy
output (and restoring the weights restores it), sleep and wake-up, and the speeds."""

from __future__ import annotations

import re
import sys
from types import SimpleNamespace

import pytest
import torch

from audiobook_rl.agent import vllm_rollout
from audiobook_rl.agent.episode import run_episodes
from audiobook_rl.agent.vllm_rollout import VLLMRollout, hf_weights
from audiobook_rl.dataset import Task
from audiobook_rl.errors import UserError
from audiobook_rl.policy.tokenizer import prompt_ids, train_tokenizer
from helpers import REPO, prompts as agent_prompts


def tiny_qwen(tie: bool):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    return Qwen2ForCausalLM(Qwen2Config(vocab_size=300, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                        num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=tie))


# vLLM 0.26's Qwen2 loader (vllm/model_executor/models/qwen2.py, Qwen2Model.hf_to_vllm_mapper) fuses these
STACKED = {".q_proj": ".qkv_proj", ".k_proj": ".qkv_proj", ".v_proj": ".qkv_proj", ".gate_proj": ".gate_up_proj",
           ".up_proj": ".gate_up_proj"}


def vllm_qwen2_parameters(layers: int, tie: bool) -> set[str]:
    """The parameters of vLLM's Qwen2ForCausalLM (its lm_head is the embedding when tied)."""
    names = {"model.embed_tokens.weight", "model.norm.weight"} | (set() if tie else {"lm_head.weight"})
    for i in range(layers):
        p = f"model.layers.{i}."
        names |= {p + "self_attn.qkv_proj.weight", p + "self_attn.qkv_proj.bias", p + "self_attn.o_proj.weight",
                  p + "mlp.gate_up_proj.weight", p + "mlp.down_proj.weight", p + "input_layernorm.weight",
                  p + "post_attention_layernorm.weight"}
    return names


@pytest.mark.parametrize("tie", [True, False])
def test_weights_are_the_parameters_named_as_vllms_qwen2_loader_reads_them(tie):
    model = tiny_qwen(tie)
    weights = dict(hf_weights(model))
    assert set(weights) <= set(model.state_dict())  # Hugging Face names; no buffers
    assert ("lm_head.weight" in weights) == (not tie)  # a tied head is sent once, as the embedding
    fused = set()
    for name in weights:
        for old, new in STACKED.items():
            name = re.sub(re.escape(old) + r"(?=\.)", new, name)
        fused.add(name)
    assert fused == vllm_qwen2_parameters(2, tie)
    # the live tensors, not copies: an update is read where it happened
    assert all(weights[n].data_ptr() == p.data_ptr() for n, p in model.named_parameters())


def test_a_compiled_policy_sends_the_same_names():
    model = tiny_qwen(True)
    wrapped = torch.nn.Module()
    wrapped._orig_mod = model  # what torch.compile's wrapper holds
    assert [n for n, _ in hf_weights(wrapped)] == [n for n, _ in hf_weights(model)]


class FakeEngineModel:
    """vLLM's model inside the engine: records what ``load_weights`` got."""

    def __init__(self):
        self.loads = []

    def load_weights(self, weights):
        loaded = {n: w.clone() for n, w in weights}
        self.loads.append(loaded)
        return set(loaded)


class FakeLLM:
    """The parts of ``vllm.LLM`` the rollout engine uses; ``events`` is the order of calls."""

    def __init__(self, text_tokenizer, **engine):
        self.tokenizer, self.engine, self.model, self.events, self.requests = text_tokenizer, engine, FakeEngineModel(), [], []
        self.llm_engine = SimpleNamespace(engine_core=SimpleNamespace(shutdown=lambda: self.events.append("shutdown")))

    def apply_model(self, fn):
        self.events.append("load")
        return [fn(self.model)]

    def reset_prefix_cache(self):
        self.events.append("reset_prefix_cache")
        return True

    def sleep(self, level):
        self.events.append(f"sleep {level}")

    def wake_up(self, tags=None):
        self.events.append(f"wake {','.join(tags)}")

    def generate(self, prompts, params, use_tqdm=True):
        self.requests.append(list(zip(prompts, params)))
        outs = []
        for p in prompts:
            ids = self.tokenizer("draft", add_special_tokens=False)["input_ids"] + [self.tokenizer.eos_token_id]
            outs.append(SimpleNamespace(outputs=[SimpleNamespace(text="draft", token_ids=tuple(ids), finish_reason="stop")]))
        return outs


class FakeSamplingParams:
    def __init__(self, **kwargs):
        self.kwargs = kwargs


@pytest.fixture
def fake_vllm(monkeypatch, tmp_path):
    """A stand-in ``vllm`` module; returns the list the built engines go to."""
    tokenizer = train_tokenizer([(REPO / "config/prompts/rewrite.md").read_text(encoding="utf-8"), "draft"], 400)
    built = []

    def llm(**engine):
        built.append(FakeLLM(tokenizer, **engine))
        return built[-1]

    monkeypatch.setattr(vllm_rollout, "installed", lambda name: "0.26.0")
    monkeypatch.setitem(sys.modules, "vllm", SimpleNamespace(LLM=llm, SamplingParams=FakeSamplingParams))
    monkeypatch.delenv("VLLM_ENABLE_V1_MULTIPROCESSING", raising=False)  # restored after the test
    return built, tokenizer


def test_the_engine_runs_in_this_process_in_bf16_and_starts_from_the_policy_in_memory(fake_vllm):
    import os

    built, tokenizer = fake_vllm
    model = tiny_qwen(True)
    VLLMRollout(model, "/m/step_0", tokenizer, memory_share=0.25, max_model_len=4096, seed=3)
    engine = built[0].engine
    assert os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"
    assert (engine["model"], engine["dtype"], engine["gpu_memory_utilization"], engine["max_model_len"], engine["seed"]) == (
        "/m/step_0", "bfloat16", 0.25, 4096, 3)
    assert built[0].events == ["load", "reset_prefix_cache"]  # synced once at start


def test_sync_weights_sends_the_current_parameters_then_resets_the_prefix_cache(fake_vllm):
    built, tokenizer = fake_vllm
    model = tiny_qwen(True)
    rollout = VLLMRollout(model, "/m", tokenizer)
    with torch.no_grad():
        model.model.norm.weight.add_(1.0)  # an optimizer step
    rollout.sync_weights()
    engine = built[0]
    assert engine.events[-2:] == ["load", "reset_prefix_cache"]
    sent = engine.model.loads[-1]
    assert torch.equal(sent["model.norm.weight"], model.model.norm.weight)
    assert not torch.equal(sent["model.norm.weight"], engine.model.loads[0]["model.norm.weight"])


def test_sleep_frees_the_engine_until_the_next_sync(fake_vllm):
    built, tokenizer = fake_vllm
    rollout = VLLMRollout(tiny_qwen(True), "/m", tokenizer, sleep_mode=True)
    assert built[0].engine["enable_sleep_mode"] is True
    rollout.sleep()
    with pytest.raises(RuntimeError, match="sync_weights"):
        rollout.chat([{"role": "user", "content": "hi"}], temperature=0.0, max_tokens=4)
    rollout.sync_weights()
    # weights back first, overwritten, then the KV cache
    assert built[0].events[2:] == ["sleep 1", "wake weights", "load", "wake kv_cache", "reset_prefix_cache"]
    assert rollout.chat([{"role": "user", "content": "hi"}], temperature=0.0, max_tokens=4).text == "draft"
    with pytest.raises(RuntimeError, match="sleep_mode"):
        VLLMRollout(tiny_qwen(True), "/m", tokenizer).sleep()


def test_each_request_has_its_own_seed_so_a_group_samples_different_replies(fake_vllm):
    built, tokenizer = fake_vllm
    rollout = VLLMRollout(tiny_qwen(True), "/m", tokenizer, seed=10)
    prompts = agent_prompts()
    task = Task("s1", "林青道：“走吧。”", [], {})
    torch.manual_seed(5)  # the training step's seed
    episodes = run_episodes([task] * 3, rollout, prompts, temperature=0.7, max_tokens=64, top_p=0.95, top_k=0)
    create, rewrite = built[0].requests  # one generate call per role
    seeds = [params.kwargs["seed"] for _, params in create + rewrite]
    assert len(set(seeds)) == 6  # distinct within and across calls
    torch.manual_seed(5)
    run_episodes([task] * 3, rollout, prompts, temperature=0.7, max_tokens=64, top_p=0.95, top_k=0)
    assert [params.kwargs["seed"] for _, params in built[0].requests[2] + built[0].requests[3]] == seeds  # repeatable
    assert {(params.kwargs["top_p"], params.kwargs["top_k"], params.kwargs["max_tokens"]) for _, params in create} == {(0.95, -1, 64)}
    assert create[0][0]["prompt_token_ids"] == prompt_ids(tokenizer, prompts.create_messages(task.text))
    reply = episodes[0].calls[0].reply
    assert reply.prompt_ids == create[0][0]["prompt_token_ids"] and reply.response_ids[-1] == tokenizer.eos_token_id
    assert rollout.generated_tokens == 12 * len(reply.response_ids)
    greedy = rollout.chat_batch([prompts.create_messages(task.text)], temperature=0.0, max_tokens=8)
    assert greedy[0].text == "draft" and "seed" not in built[0].requests[-1][0][1].kwargs


def test_close_ends_the_engine_and_its_process_group(fake_vllm, monkeypatch):
    built, tokenizer = fake_vllm
    monkeypatch.setitem(sys.modules, "vllm.distributed", SimpleNamespace())
    monkeypatch.setitem(sys.modules, "vllm.distributed.parallel_state", SimpleNamespace(
        cleanup_dist_env_and_memory=lambda: built[0].events.append("cleanup")))
    VLLMRollout(tiny_qwen(True), "/m", tokenizer).close()
    assert built[0].events[-2:] == ["shutdown", "cleanup"]


def test_missing_vllm_is_one_sentence(monkeypatch):
    monkeypatch.setattr(vllm_rollout, "installed", lambda name: None)
    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(UserError) as err:
        VLLMRollout(tiny_qwen(True), "/m", tokenizer=None)
    msg = str(err.value)
    assert "vllm package" in msg and "not installed" in msg and "local decoder" in msg and "\n" not in msg
