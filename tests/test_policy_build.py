"""The embedded policy: built offline, loadable with from_pretrained, chat template, seeded."""

import hashlib

import pytest
import torch

from audiobook_rl.corpus import read_text
from audiobook_rl.policy.warmstart import warmstart_windows
from helpers import STORY
from helpers.policy import TINY_POLICY, build_tiny_policy, shared_tiny_policy


@pytest.fixture(scope="module")
def policy_dir(tmp_path_factory):
    return shared_tiny_policy(tmp_path_factory)


def test_policy_dir_loads_with_auto_classes_and_chats(policy_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(policy_dir)
    model = AutoModelForCausalLM.from_pretrained(policy_dir)
    assert model.config.model_type == "qwen2"
    messages = [{"role": "system", "content": "你是有声书脚本编剧。"}, {"role": "user", "content": "林青道：“走吧。”"}]
    text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert text.endswith("<|im_start|>assistant\n")
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert tok.convert_tokens_to_ids("<|im_start|>") in ids
    # byte-level: text never seen in training round-trips exactly
    unseen = "宇宙飞船降落在火星。{\"speaker\": \"旁白\"} 🚀"
    assert tok.decode(tok(unseen, add_special_tokens=False)["input_ids"]) == unseen
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|endoftext|>"
    out = model.generate(torch.tensor([ids]), max_new_tokens=3, do_sample=False)
    assert out.shape[1] == len(ids) + 3 or tok.eos_token_id in out[0].tolist()


def test_same_inputs_and_seed_give_the_same_weights(policy_dir, tmp_path):
    again = tmp_path / "again"
    build_tiny_policy(again)
    digest = lambda d: hashlib.sha256((d / "model.safetensors").read_bytes()).hexdigest()  # noqa: E731
    assert digest(again) == digest(policy_dir)
    assert (again / "tokenizer.json").read_bytes() == (policy_dir / "tokenizer.json").read_bytes()


def test_warm_start_windows_avoid_the_validation_slices():
    text, _ = read_text(STORY)
    val = [(1000, 1150), (5000, 5190)]
    settings = {**TINY_POLICY["warm_start"], "window_draws": 3, "windows_per_draw": 30, "seed": 1}
    windows = warmstart_windows(text, val, settings)
    assert len(windows) > 30
    assert not any(a < vb and va < b for a, b, _ in windows for va, vb in val)
    assert all(text[a:b] == t for a, b, t in windows)


def test_warm_start_examples_show_each_window_with_the_text_before_it_as_the_tasks_are(policy_dir):
    from audiobook_rl.agent.episode import AgentPrompts
    from audiobook_rl.policy.model import load_policy
    from audiobook_rl.policy.warmstart import labelled_windows, script_examples
    from helpers import REPO

    text, _ = read_text(STORY)
    windows = warmstart_windows(text, [], {"windows_per_draw": 4, "window_draws": 1, "min_chars": 100, "max_chars": 200, "seed": 1})
    triples = labelled_windows(windows, text, 200)
    for (start, _, window), (same, script, before) in zip(windows, triples):
        assert same == window and script and 0 < len(before) <= 200 and text[start - len(before) : start] == before
    assert all(before == "" for _, _, before in labelled_windows(windows, text))
    _, tok = load_policy(policy_dir)
    context = AgentPrompts.load(REPO / "config/prompts/create_context.md", REPO / "config/prompts/rewrite_context.md")
    examples = script_examples(triples[:1], context, tok, seed=1)
    assert len(examples) == 2  # create and rewrite
    for prompt, _ in examples:
        assert triples[0][2].strip() in tok.decode(prompt)
