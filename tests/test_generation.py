"""generate: the agent's two calls per validation slice with a saved policy, batched."""

import pytest

from audiobook_rl.agent import Task, run_episodes
from audiobook_rl.errors import UserError
from audiobook_rl.generation import HFChat, generate_outputs
from audiobook_rl.policy import load_policy
from grpo_helpers import prompts, shared_tiny_policy, tiny_rows

SETTINGS = {"backend": "hf", "temperature": 0.0, "top_p": 1.0, "top_k": 0, "max_tokens": 10, "batch_size": 2, "seed": 0}


@pytest.fixture(scope="module")
def policy_dir(tmp_path_factory):
    return shared_tiny_policy(tmp_path_factory)


def test_outputs_have_one_record_per_slice_in_the_contract_format(policy_dir):
    rows = tiny_rows(1, 3)["val"]
    records = generate_outputs(str(policy_dir), rows, prompts(), SETTINGS, 0)
    assert [r["id"] for r in records] == [r["extra_info"]["slice_id"] for r in rows]
    for r in records:
        assert set(r) == {"id", "step", "draft", "final", "draft_notes", "final_notes"}
        assert r["step"] == 0 and isinstance(r["draft"], str) and isinstance(r["final"], str)
        assert r["final_notes"]["status"] in {"strict", "repaired", "invalid"}
    # greedy: the same model gives the same outputs
    assert generate_outputs(str(policy_dir), rows, prompts(), SETTINGS, 0) == records


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


def test_unknown_backend_names_the_key(policy_dir):
    with pytest.raises(UserError, match="generate.backend"):
        generate_outputs(str(policy_dir), tiny_rows(1, 1)["val"], prompts(), {**SETTINGS, "backend": "nope"}, 0)


def test_top_k_1_sampling_is_greedy_on_both_decoding_paths(policy_dir):
    # The embedded policy decodes with the static decoder; a policy it does not cover (here: the same
    # weights declared with a sliding window) goes through transformers' generate. Both must apply
    # the sampling filters: with top_k 1, sampling at any temperature is greedy decoding.
    model, tok = load_policy(policy_dir)
    rows = tiny_rows(1, 2)["val"]
    greedy = generate_outputs(str(policy_dir), rows, prompts(), SETTINGS, 0)
    assert generate_outputs(str(policy_dir), rows, prompts(), {**SETTINGS, "temperature": 1.5, "top_k": 1}, 0) == greedy
    model.config.use_sliding_window, model.config.sliding_window = True, 4096
    client = HFChat(model, tok, batch_size=4)
    assert client.decoder is None
    tasks = [Task.from_row(r) for r in rows]
    sampled = run_episodes(tasks, client, prompts(), temperature=1.5, top_k=1, max_tokens=10)
    assert [e.final for e in sampled] == [g["final"] for g in greedy]
