"""One rollout of the agent through the path verl training uses: Agent Lightning's LLM proxy (LiteLLM)
in front of an OpenAI-compatible policy server that returns token ids (as vLLM does when the proxy
asks for them), the store served over HTTP, the OpenTelemetry tracer and LlmProxyTraceToTriplet.

The create and the rewrite call must become two training triplets with the policy's token ids, the
judge's score must be the trajectory's reward, and the judge's own call (an OpenAI-compatible
endpoint here, the strictest case) must never become a triplet."""

from __future__ import annotations

import asyncio
import multiprocessing
import socket

import agentlightning as agl
import pytest
from agentlightning.store.client_server import LightningStoreClient, LightningStoreServer
from loopback import Loopback, Reply, chat_completion
from loopback.scripts import REFERENCE, REFERENCE_JSON, SOURCE, judge_reply

from audiobook_rl.agent.lightning import make_agent
from audiobook_rl.dataset import split_rows
from audiobook_rl.files import read_parquet_rows, write_parquet_rows
from helpers import make_judge, prompts, seed_config

MODEL = "Qwen/Qwen2.5-1.5B-Instruct"
CREATE_IDS = ([11, 12, 13, 14, 15], [21, 22, 23])
REWRITE_IDS = ([31, 32, 33, 34, 35, 36], [41, 42, 43, 44])
DRAFT = '[{"speaker": "旁白", "content": "林青推门进来", "tone": "平静", "intensity": 1, "delay": 300}]'


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def policy(kind, body, n):
    """vLLM-like: the draft for create, the reference for rewrite, with prompt and response token ids."""
    rewrite = "审校" in body["messages"][0]["content"]
    text, (prompt_ids, response_ids) = (REFERENCE_JSON, REWRITE_IDS) if rewrite else (DRAFT, CREATE_IDS)
    reply = chat_completion(text)
    reply["id"] = f"chatcmpl-policy-{n}"
    reply["model"] = body.get("model", MODEL)
    reply["prompt_token_ids"] = prompt_ids
    reply["choices"][0]["token_ids"] = response_ids
    return Reply(body=reply)


def judge_server(kind, body, n):
    return Reply(body={**chat_completion(judge_reply(0.5)), "id": f"chatcmpl-judge-{n}"})


def run_runner(endpoint, agent, row, resource, results) -> None:
    """A runner process, as Agent Lightning's client-server strategy starts them."""

    async def go():
        client = LightningStoreClient(endpoint)
        runner = agl.LitAgentRunner(agl.OtelTracer())
        with runner.run_context(agent=agent, store=client):
            rollout = await runner.step(row, resources={"main_llm": resource}, mode="train")
        await client.close()
        return rollout

    rollout = asyncio.run(go())
    results.put((rollout.rollout_id, rollout.status))


def task_row(tmp_path) -> dict:
    """A training row as verl hands it to the agent: split_dataset's row after a parquet round trip."""
    label = {"id": "s001", "text": SOURCE, "start": 0, "end": len(SOURCE), "script": REFERENCE, "aliases": {}}
    rows = split_rows([label], {"n_train": 1, "n_val": 0, "n_test": 0, "seed": 0, "data_source": "audiobook"}, prompts().create)
    write_parquet_rows(tmp_path / "train.parquet", rows["train"])
    row = read_parquet_rows(tmp_path / "train.parquet")[0]
    # The daemon turns numpy values into plain ones before it enqueues a task (verl/daemon.py).
    from agentlightning.verl.daemon import _to_native

    return _to_native({**row, "data_id": "d-1", "index": 0})


async def spans_of_both_calls(store, rollout_id, timeout: float = 30.0) -> list:
    """The rollout's spans once the proxy's spans of both policy calls have reached the store: the
    proxy exports them in batches, later on a busy machine (or those there after ``timeout``)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        spans = await store.query_spans(rollout_id)
        if len(agl.LlmProxyTraceToTriplet().adapt(spans)) >= 2 or asyncio.get_running_loop().time() > deadline:
            return spans
        await asyncio.sleep(0.2)


@pytest.fixture
def no_tracer_provider(monkeypatch):
    """No global OpenTelemetry tracer provider, as in a fresh process: Agent Lightning's proxy adds its
    span exporter only while none is set (``llm_proxy.LightningOpenTelemetry``), and an earlier test
    in this process may have set one (Agent Lightning's tracers do). Restored afterwards."""
    from opentelemetry import trace
    from opentelemetry.util._once import Once

    monkeypatch.setattr(trace, "_TRACER_PROVIDER_SET_ONCE", Once())
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)
    monkeypatch.setattr(trace, "_PROXY_TRACER_PROVIDER", trace.ProxyTracerProvider())


def test_create_and_rewrite_become_two_triplets_with_the_reward_and_the_judge_none(tmp_path, monkeypatch, no_tracer_provider):
    monkeypatch.chdir(tmp_path)  # LiteLLM / AgentOps write logs into the working directory
    config = seed_config()
    row = task_row(tmp_path)
    with Loopback(policy) as policy_srv, Loopback(judge_server) as judge_srv:
        llm_settings = {**config["llm"], "base_url": {**config["llm"]["base_url"], "openai": judge_srv.url + "/v1"},
                        "key_env": {**config["llm"]["key_env"], "openai": None}, "cache_dir": str(tmp_path / "cache"),
                        "backoff_s": 0.001, "rate_limit_per_minute": {"openai": 0}}
        judge = make_judge(llm_settings, backend="openai", model="judge-model")
        agent = make_agent(prompts(), judge, max_tokens=64, val_temperature=0.0)

        async def one_rollout():
            store = agl.InMemoryLightningStore(thread_safe=True)
            server = LightningStoreServer(store, "127.0.0.1", free_port())
            await server.start()
            # As in training: the proxy runs in its own process and exports its spans to the store
            # server over HTTP; the runner runs in another process and talks to the store as a client.
            proxy = agl.LLMProxy(
                port=free_port(), store=server,
                model_list=[{"model_name": MODEL,
                             "litellm_params": {"model": "hosted_vllm/" + MODEL, "api_base": policy_srv.url + "/v1"}}],
            )
            await proxy.start()
            try:
                resource = proxy.as_resource(sampling_parameters={"temperature": 1.0})
                ctx = multiprocessing.get_context("fork")
                results = ctx.Queue()
                runner = ctx.Process(target=run_runner, args=(server.endpoint, agent, row, resource, results))
                runner.start()
                await asyncio.to_thread(runner.join, 120)
                rollout_id, status = results.get(timeout=5)
                return status, await spans_of_both_calls(store, rollout_id)
            finally:
                await proxy.stop()
                await server.stop()

        status, spans = asyncio.run(one_rollout())

    assert status == "succeeded"
    # (LiteLLM also sends the policy server a "What's 1 + 1?" health check, outside any rollout.)
    calls = [r["body"] for r in policy_srv.requests if r["body"]["messages"][0]["role"] == "system"]
    assert len(calls) == 2 and judge_srv.count == 1
    # the proxy asked the policy server for token ids, as it asks verl's vLLM servers
    assert all(body.get("return_token_ids") is True for body in calls)
    triplets = agl.LlmProxyTraceToTriplet().adapt(spans)
    assert [(t.prompt["token_ids"], t.response["token_ids"]) for t in triplets] == [CREATE_IDS, REWRITE_IDS]
    # The judge scored the final script 0.5 on every dimension; the reward lands on the last call,
    # and Agent Lightning's daemon gives every triplet of the rollout its last non-None reward.
    assert [t.reward for t in triplets] == [None, 0.5]
    assert agl.find_final_reward(spans) == 0.5
