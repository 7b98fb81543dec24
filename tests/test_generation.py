"""generate: the agent's two calls per validation slice with a saved policy, batched."""

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
