"""The agent's chat client over a local Hugging Face policy: batched calls, token ids, both decoding paths."""

import pytest

from audiobook_rl.agent.episode import run_episodes
from audiobook_rl.agent.hf_chat import HFChat
from audiobook_rl.dataset import Task
from audiobook_rl.policy.model import load_policy
from helpers import prompts
from helpers.policy import shared_tiny_policy, tiny_rows


@pytest.fixture(scope="module")
def policy_dir(tmp_path_factory):
    return shared_tiny_policy(tmp_path_factory)


def test_calls_record_token_ids_and_stop_at_max_tokens(policy_dir):
    model, tok = load_policy(policy_dir)
    client = HFChat(model, tok, batch_size=4)
    tasks = [Task.from_row(r) for r in tiny_rows(1, 2)["val"]]
    episodes = run_episodes(tasks, client, prompts(), temperature=1.0, max_tokens=8)
    for e in episodes:
        assert [c.role for c in e.calls] == ["create", "rewrite"]
        for call in e.calls:
            assert 1 <= len(call.reply.response_ids) <= 8
            assert call.reply.prompt_ids[-3:] == tok("<|im_start|>assistant\n", add_special_tokens=False)["input_ids"][-3:]
        # the rewrite prompt holds the draft as text
        assert e.draft.strip() in e.calls[1].messages[1]["content"]
    assert client.generated_tokens == sum(len(c.reply.response_ids) for e in episodes for c in e.calls)


def test_top_k_1_sampling_is_greedy_on_both_decoding_paths(policy_dir):
    # The embedded policy decodes with the static decoder; a policy it does not cover (here: the same
    # weights declared with a sliding window) goes through transformers' generate. Both must apply
    # the sampling filters: with top_k 1, sampling at any temperature is greedy decoding.
    tasks = [Task.from_row(r) for r in tiny_rows(1, 2)["val"]]
    model, tok = load_policy(policy_dir)
    static = HFChat(model, tok, batch_size=4)
    assert static.decoder is not None
    greedy = run_episodes(tasks, static, prompts(), temperature=0.0, max_tokens=10)
    assert [e.final for e in run_episodes(tasks, static, prompts(), temperature=1.5, top_k=1, max_tokens=10)] == [
        e.final for e in greedy
    ]
    model.config.use_sliding_window, model.config.sliding_window = True, 4096
    fallback = HFChat(model, tok, batch_size=4)
    assert fallback.decoder is None
    sampled = run_episodes(tasks, fallback, prompts(), temperature=1.5, top_k=1, max_tokens=10)
    assert [e.final for e in sampled] == [e.final for e in greedy]


def test_each_rewrite_follows_its_own_draft_as_in_rounds(policy_dir):
    # With the static decoder a rewrite joins the batch as soon as its draft ends; a client without
    # chat_chains answers all drafts first. Greedy episodes must be the same either way.
    model, tok = load_policy(policy_dir)
    client = HFChat(model, tok, batch_size=2)  # fewer rows than calls: rows are refilled

    class InRounds:
        def chat_batch(self, batch, **sampling):
            return HFChat(model, tok, batch_size=8).chat_batch(batch, **sampling)

    tasks = [Task.from_row(r) for r in tiny_rows(1, 4)["val"]]
    chained = run_episodes(tasks, client, prompts(), temperature=0.0, max_tokens=12)
    rounds = run_episodes(tasks, InRounds(), prompts(), temperature=0.0, max_tokens=12)
    assert [(e.draft, e.final) for e in chained] == [(e.draft, e.final) for e in rounds]
    assert [[c.reply.prompt_ids for c in e.calls] for e in chained] == [[c.reply.prompt_ids for c in e.calls] for e in rounds]
    assert client.generated_tokens == sum(len(c.reply.response_ids) for e in chained for c in e.calls)
