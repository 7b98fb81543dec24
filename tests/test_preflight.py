"""The preflight of the seed backends: one sentence per problem, before anything expensive starts."""

from __future__ import annotations

import pytest

from audiobook_rl.errors import UserError
from audiobook_rl.preflight import check_generation, check_keys, check_training, require

GOOD = {
    "verl": "0.6.1", "agentlightning": "0.3.0", "vllm": "0.10.2", "litellm": "1.80.0",
    "opentelemetry-api": "1.44.0", "opentelemetry-sdk": "1.44.0", "flash-attn": "2.8.3",
}
TRAIN = {"backend": "verl", "gpus_per_node": 2}
JUDGE = {"backend": "glm"}


def versions(**changes):
    table = {**GOOD, **{k.replace("_", "-"): v for k, v in changes.items()}}
    return lambda name: table.get(name)


def test_a_good_gpu_box_passes():
    assert check_training(TRAIN, JUDGE, env={"ZHIPUAI_API_KEY": "k"}, version=versions(), count=lambda: 2) == []
    assert check_generation({"backend": "vllm"}, version=versions(), count=lambda: 1) == []


def test_this_cpu_machine_gets_one_sentence_per_problem():
    problems = check_training(TRAIN, JUDGE, env={}, version=versions(vllm=None, verl="0.9.1"), count=lambda: 0)
    assert len(problems) == 4
    text = "\n".join(problems)
    for needle in ("verl 0.9.1 is installed", "vllm is not installed", "'train.gpus_per_node' needs 2 GPU(s)", "ZHIPUAI_API_KEY"):
        assert needle in text
    assert all(p.endswith(".") and p.count(". ") == 0 for p in problems)
    with pytest.raises(UserError) as err:
        require(problems)
    assert str(err.value).count("\n") == 3


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
    problems = check_training(TRAIN, None, version=versions(**changes), count=lambda: 2)
    assert len(problems) == 1 and needle in problems[0]


def test_keys_follow_the_configured_backends():
    config = {"label": {"backend": "claude"}, "judge": {"backend": "glm"}}
    assert len(check_keys(config, env={})) == 2
    assert check_keys(config, env={"ANTHROPIC_API_KEY": "a", "ZHIPUAI_API_KEY": "z"}) == []
    assert check_keys({"label": {"backend": "rules"}, "judge": {"backend": "rubric"}}, env={}) == []
    # The key's value never appears in a message.
    assert "secret" not in " ".join(check_keys(config, env={"ANTHROPIC_API_KEY": "secret"}))


def test_hf_generation_needs_nothing():
    assert check_generation({"backend": "hf"}, version=lambda n: None, count=lambda: 0) == []
    problems = check_generation({"backend": "vllm"}, version=lambda n: None, count=lambda: 0)
    assert len(problems) == 2


def test_the_key_variable_follows_llm_key_env():
    config = {"judge": {"backend": "glm"}, "llm": {"key_env": {"zhipuai": "MY_GLM_KEY"}}}
    assert "MY_GLM_KEY" in check_keys(config, env={"ZHIPUAI_API_KEY": "z"})[0]
    assert check_keys(config, env={"MY_GLM_KEY": "z"}) == []
    # A local OpenAI-compatible judge without a key needs none.
    assert check_keys({"judge": {"backend": "openai"}, "llm": {"key_env": {"openai": None}}}, env={}) == []
