"""The preflight of the seed backends: one sentence per problem, before anything expensive starts."""

from __future__ import annotations

import pytest

from audiobook_rl import backends
from audiobook_rl.config import validate_config
from audiobook_rl.errors import UserError
from audiobook_rl.preflight import check_backend, check_keys, check_training, require
from helpers import settings

GOOD = {
    "verl": "0.6.1", "agentlightning": "0.3.0", "vllm": "0.10.2", "litellm": "1.80.0",
    "opentelemetry-api": "1.44.0", "opentelemetry-sdk": "1.44.0", "flash-attn": "2.8.3",
}
TRAIN = settings("train", backend="verl", gpus_per_node=2)


def versions(**changes):
    table = {**GOOD, **{k.replace("_", "-"): v for k, v in changes.items()}}
    return lambda name: table.get(name)


def config(**sections) -> dict:
    return validate_config(sections)


def generate(backend: str, gpu: int = 0):
    cfg = config(generate={"backend": backend}, resources={"generate": {"gpu": gpu}})
    return backends.configured(cfg, "generate"), cfg


def test_a_good_gpu_box_passes():
    assert check_training(TRAIN, version=versions(), count=lambda: 2) == []
    assert check_backend(*generate("vllm", 1), version=versions(), count=lambda: 1) == []


def test_this_cpu_machine_gets_one_sentence_per_problem():
    problems = check_training(TRAIN, version=versions(vllm=None, verl="0.9.1"), count=lambda: 0)
    problems += check_keys(config(train={"reward": {"backend": "glm"}}), env={})
    assert len(problems) == 4
    text = "\n".join(problems)
    for needle in ("verl 0.9.1 is installed", "vllm is not installed", "'train.gpus_per_node' needs 2 GPU(s)", "ZHIPUAI_API_KEY"):
        assert needle in text
    assert "train on the CPU with train.backend: local" in text  # not "lower it to 0": verl needs GPUs
    assert all(p.endswith(".") and p.count(". ") == 0 for p in problems)
    with pytest.raises(UserError) as err:
        require(problems)
    assert str(err.value).count("\n") == 3


def test_versions_and_gpus_are_looked_up_when_checked(monkeypatch):
    from audiobook_rl import preflight

    monkeypatch.setattr(preflight, "installed", lambda name: None)
    monkeypatch.setattr(preflight, "gpu_count", lambda: 0)
    assert any("vllm is not installed" in p for p in check_training(TRAIN))
    assert any("needs 2 GPU(s) on this node but 0 are visible" in p for p in check_training(TRAIN))


@pytest.mark.parametrize(
    "changes, needle",
    [
        ({"agentlightning": "1.0.2"}, "agentlightning==0.3.0"),
        ({"opentelemetry_sdk": "1.45.1"}, "opentelemetry-sdk 1.45.1"),
        ({"vllm": "0.11.0"}, "vllm 0.11.0 is installed"),
        # verl 0.6.1 gets token ids only from vLLM's own return_token_ids (0.10.2+): no training data before
        ({"vllm": "0.10.1"}, "vllm 0.10.1 is installed but the seed stack needs vllm >= 0.10.2"),
        ({"vllm": "0.9.2"}, "vllm 0.9.2 is installed"),
        ({"litellm": None}, "litellm is not installed"),
        # verl's FSDP workers import flash_attn.bert_padding minutes into the run
        ({"flash_attn": None}, "flash-attn is not installed but verl's FSDP workers import it; install it after torch"),
    ],
)
def test_version_traps_are_named(changes, needle):
    problems = check_training(TRAIN, version=versions(**changes), count=lambda: 2)
    assert len(problems) == 1 and needle in problems[0]


def test_keys_follow_the_configured_backends():
    paid = config(label={"backend": "claude"}, judge={"backend": "glm"})
    assert len(check_keys(paid, env={})) == 2
    assert check_keys(paid, env={"ANTHROPIC_API_KEY": "a", "ZHIPUAI_API_KEY": "z"}) == []
    assert check_keys(config(), env={}) == []
    # The key's value never appears in a message.
    assert "secret" not in " ".join(check_keys(paid, env={"ANTHROPIC_API_KEY": "secret"}))


def test_hf_generation_needs_nothing_and_vllm_its_package_and_a_gpu():
    assert check_backend(*generate("hf"), version=lambda n: None, count=lambda: 0) == []
    problems = check_backend(*generate("vllm"), version=lambda n: None, count=lambda: 0)
    assert len(problems) == 2 and "vllm is not installed" in problems[0] and "1 GPU(s)" in problems[1]


def test_a_gpu_asked_for_in_resources_is_named_with_its_key():
    [problem] = check_backend(*generate("hf", 2), count=lambda: 1)
    assert "config key 'resources.generate.gpu' needs 2 GPU(s) on this node but 1 are visible" in problem
    assert "set it to 0 for the CPU" in problem


def test_the_key_variable_follows_llm_key_env():
    glm = config(judge={"backend": "glm"}, llm={"key_env": {"zhipuai": "MY_GLM_KEY"}})
    assert "MY_GLM_KEY" in check_keys(glm, env={"ZHIPUAI_API_KEY": "z"})[0]
    assert check_keys(glm, env={"MY_GLM_KEY": "z"}) == []
    # A local OpenAI-compatible judge without a key needs none.
    assert check_keys(config(judge={"backend": "openai"}, llm={"key_env": {"openai": None}}), env={}) == []


def test_generation_takes_any_vllm_from_0_10_2_while_the_training_stack_keeps_0_10():
    """The generate stage's engine needs none of verl's pins: vLLM 0.26 (torch 2.11 / CUDA 13) evaluates
    checkpoints, while the verl backend still refuses it."""
    assert check_backend(*generate("vllm", 1), version=versions(vllm="0.26.0"), count=lambda: 1) == []
    training = check_training(TRAIN, version=versions(vllm="0.26.0"), count=lambda: 2)
    assert len(training) == 1 and "vllm 0.26.0 is installed but the seed stack needs vllm >= 0.10.2, < 0.11" in training[0]
    too_old = check_backend(*generate("vllm", 1), version=versions(vllm="0.10.1"), count=lambda: 1)
    assert len(too_old) == 1 and "vllm 0.10.1 is older than generation needs (>= 0.10.2; known to work: 0.10.2 and 0.26.0)" in too_old[0]
