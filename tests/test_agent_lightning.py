"""The decorated agent end to end through Agent Lightning's own runner and store, against a
loopback OpenAI-compatible server: two calls per rollout, the draft reaches rewrite, the final
reward is the judge's score, validation decodes greedily."""

import asyncio
import os
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from audiobook_rl.agent import AgentPrompts  # noqa: E402
from audiobook_rl.dataset import split_rows  # noqa: E402
from audiobook_rl.files import read_parquet_rows, write_parquet_rows  # noqa: E402
from audiobook_rl.judging import make_judge  # noqa: E402
from loopback import Loopback, Reply, chat_completion  # noqa: E402
from loopback.scripts import REFERENCE, REFERENCE_JSON, SOURCE  # noqa: E402

import agentlightning as agl  # noqa: E402
from audiobook_rl.agent_lightning import make_agent  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DRAFT = "这不是 JSON，只是一份草稿"  # a draft that does not parse


def _prompts():
    return AgentPrompts.load(ROOT / "config/prompts/create.md", ROOT / "config/prompts/rewrite.md")


def _row(tmp_path):
    """A dataset row as the verl backend hands it over: split_dataset's row after a parquet round trip."""
    label = {"id": "s001", "text": SOURCE, "script": REFERENCE, "aliases": {}}
    rows = split_rows([label], {"n_train": 1, "n_val": 0, "seed": 0, "data_source": "audiobook"}, _prompts().create)
    write_parquet_rows(tmp_path / "train.parquet", rows["train"])
    return read_parquet_rows(tmp_path / "train.parquet")[0]


def _responder(kind, body, n):
    system = body["messages"][0]["content"]
    # create answers an unparseable draft; rewrite answers the reference itself
    text = DRAFT if "审校" not in system else REFERENCE_JSON
    return Reply(body={**chat_completion(text), "id": f"chatcmpl-{n}"})  # distinct ids: distinct calls


def _run(agent, row, llm, mode):
    async def go():
        runner = agl.LitAgentRunner(agl.AgentOpsTracer())
        store = agl.InMemoryLightningStore()
        with runner.run_context(agent=agent, store=store):
            rollout = await runner.step(row, resources={"main_llm": llm}, mode=mode)
        spans = await store.query_spans(rollout.rollout_id)
        return rollout, spans

    return asyncio.run(go())


def test_rollout_through_agent_lightning_runner(tmp_path):
    agent = make_agent(_prompts(), make_judge({"backend": "rubric"}), max_tokens=256, val_temperature=0.0)
    assert isinstance(agent, agl.LitAgent)
    with Loopback(_responder) as server:
        llm = agl.LLM(endpoint=server.url + "/v1", model="policy", sampling_parameters={"temperature": 0.7})
        rollout, spans = _run(agent, _row(tmp_path), llm, "train")
        train_requests = list(server.requests)
        _, val_spans = _run(agent, _row(tmp_path), llm, "val")
        val_requests = server.requests[len(train_requests):]

    assert rollout.status == "succeeded"
    # two calls: create (the excerpt) then rewrite (the excerpt and the unparseable draft, as text)
    assert len(train_requests) == 2
    create, rewrite = (r["body"] for r in train_requests)
    assert SOURCE in create["messages"][1]["content"]
    assert DRAFT in rewrite["messages"][1]["content"] and SOURCE in rewrite["messages"][1]["content"]
    assert create["temperature"] == 0.7 and create["max_tokens"] == 256
    assert all(r["body"]["temperature"] == 0.0 for r in val_requests)
    # the final script is the reference, so the rubric judge gives full marks: the rollout's reward
    reward = agl.find_final_reward(spans)
    assert reward == pytest.approx(1.0)
    assert agl.find_final_reward(val_spans) == pytest.approx(1.0)
    # each chat completion is one triplet (create, rewrite); the reward sits on the last one
    triplets = agl.TracerTraceToTriplet().adapt(spans)
    assert len(triplets) == 2
    assert triplets[-1].reward == pytest.approx(1.0)


def test_rollout_reward_is_zero_for_an_unreadable_final_script(tmp_path):
    agent = make_agent(_prompts(), make_judge({"backend": "rubric"}), max_tokens=64)

    with Loopback(lambda kind, body, n: Reply(body=chat_completion(DRAFT))) as server:
        llm = agl.LLM(endpoint=server.url + "/v1", model="policy")
        rollout, spans = _run(agent, _row(tmp_path), llm, "train")
    assert rollout.status == "succeeded"
    assert agl.find_final_reward(spans) == 0.0
