"""The decorated agent end to end through Agent Lightning's own runner and store, against a
loopback OpenAI-compatible server: two calls per rollout, the draft reaches rewrite, the final
reward is the judge's score, validation decodes greedily."""

import asyncio
import json

import agentlightning as agl
import pytest
from loopback import Loopback, Reply, chat_completion
from loopback.scripts import REFERENCE, REFERENCE_JSON, SOURCE

from audiobook_rl.agent.lightning import make_agent
from audiobook_rl.dataset import split_rows
from audiobook_rl.files import read_parquet_rows, write_parquet_rows
from helpers import make_judge
from helpers import prompts as _prompts

DRAFT = "这不是 JSON，只是一份草稿"  # a draft that does not parse


def _row(tmp_path):
    """A dataset row as the verl backend hands it over: split_dataset's row after a parquet round trip."""
    label = {"id": "s001", "text": SOURCE, "start": 0, "end": len(SOURCE), "script": REFERENCE, "aliases": {}}
    rows = split_rows([label], {"n_train": 1, "n_val": 0, "n_test": 0, "seed": 0, "data_source": "audiobook"}, _prompts().create)
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
    agent = make_agent(_prompts(), make_judge(), max_tokens=256, val_temperature=0.0)
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


def test_the_text_before_the_excerpt_reaches_both_calls_through_agent_lightning(tmp_path):
    # agent.context_chars with the context prompts: the row the verl backend hands over carries the
    # novel before the excerpt, and the agent shows it to create and to rewrite.
    from audiobook_rl.agent.episode import AgentPrompts
    from helpers import REPO

    before = "　　钱百通笑道：“这雪夜正好喝酒。”\n"
    novel = before + SOURCE
    label = {"id": "s001", "text": SOURCE, "start": len(before), "end": len(novel), "script": REFERENCE, "aliases": {}}
    context = AgentPrompts.load(REPO / "config/prompts/create_context.md", REPO / "config/prompts/rewrite_context.md")
    rows = split_rows([label], {"n_train": 1, "n_val": 0, "n_test": 0, "seed": 0, "data_source": "audiobook"},
                      context.create, novel, 600)
    write_parquet_rows(tmp_path / "train.parquet", rows["train"])
    row = read_parquet_rows(tmp_path / "train.parquet")[0]
    agent = make_agent(context, make_judge(), max_tokens=256, val_temperature=0.0)
    with Loopback(_responder) as server:
        llm = agl.LLM(endpoint=server.url + "/v1", model="policy", sampling_parameters={"temperature": 0.7})
        rollout, _ = _run(agent, row, llm, "train")
    assert rollout.status == "succeeded" and len(server.requests) == 2
    for request in server.requests:
        user = request["body"]["messages"][1]["content"]
        assert before.strip() in user and SOURCE in user


def test_training_calls_carry_the_rollout_filters_to_the_policy_server(tmp_path):
    # verl publishes only the temperature; the agent sends top_p, and top_k in the body vLLM reads.
    agent = make_agent(_prompts(), make_judge(), max_tokens=64, top_p=0.9, top_k=40)
    plain = make_agent(_prompts(), make_judge(), max_tokens=64)
    with Loopback(_responder) as server:
        llm = agl.LLM(endpoint=server.url + "/v1", model="policy", sampling_parameters={"temperature": 0.7})
        _run(agent, _row(tmp_path), llm, "train")
        _run(plain, _row(tmp_path), llm, "train")
        bodies = [r["body"] for r in server.requests]
    assert [(b["temperature"], b["top_p"], b.get("top_k")) for b in bodies] == [(0.7, 0.9, 40)] * 2 + [(0.7, 1.0, None)] * 2


def test_rollout_reward_is_zero_for_an_unreadable_final_script(tmp_path):
    agent = make_agent(_prompts(), make_judge(), max_tokens=64)

    with Loopback(lambda kind, body, n: Reply(body=chat_completion(DRAFT))) as server:
        llm = agl.LLM(endpoint=server.url + "/v1", model="policy")
        rollout, spans = _run(agent, _row(tmp_path), llm, "train")
    assert rollout.status == "succeeded"
    assert agl.find_final_reward(spans) == 0.0


class FlakyJudge:
    """The rubric judge behind an outage: the first ``failures`` verdicts are judge failures."""

    def __init__(self, failures: int):
        from audiobook_rl.judging import failure

        self.rubric, self.failures, self.calls, self.failure = make_judge(), failures, 0, failure

    def score(self, *args, **kwargs):
        self.calls += 1
        if self.calls <= self.failures:
            return self.failure("glm", "glm-4.7", "HTTP 429 after 6 tries")
        return self.rubric.score(*args, **kwargs)


def _reference_server():
    return Loopback(lambda kind, body, n: Reply(body={**chat_completion(REFERENCE_JSON), "id": f"chatcmpl-{n}"}))


def test_a_judge_failure_is_asked_again_within_the_rollout(tmp_path, monkeypatch):
    from audiobook_rl.agent import lightning as agent_lightning

    monkeypatch.setattr(agent_lightning, "JUDGE_WAIT_S", 0.01)
    judge = FlakyJudge(failures=2)
    agent = make_agent(_prompts(), judge, max_tokens=64, judge_budget_s=30)
    with _reference_server() as server:
        rollout, spans = _run(agent, _row(tmp_path), agl.LLM(endpoint=server.url + "/v1", model="policy"), "train")
    assert judge.calls == 3 and len(server.requests) == 2  # the policy is not asked again
    assert agl.find_final_reward(spans) == pytest.approx(1.0)


def test_a_judge_that_keeps_failing_gives_no_reward_never_a_zero(tmp_path, monkeypatch):
    from audiobook_rl.agent import lightning as agent_lightning

    monkeypatch.setattr(agent_lightning, "JUDGE_WAIT_S", 0.01)
    judge = FlakyJudge(failures=10**6)
    agent = make_agent(_prompts(), judge, max_tokens=64, judge_budget_s=0.2)
    with _reference_server() as server:
        rollout, spans = _run(agent, _row(tmp_path), agl.LLM(endpoint=server.url + "/v1", model="policy"), "train")
    assert rollout.status == "succeeded" and judge.calls > 1
    # no reward span at all: Agent Lightning reports the rollout without a reward, and the verl
    # backend's daemon drops its task's group (tests/test_training_verl_daemon.py) instead of scoring 0
    assert agl.find_final_reward(spans) is None


def test_a_call_longer_than_the_policy_servers_context_is_skipped_not_sent(tmp_path):
    from audiobook_rl.agent.lightning import ContextLimit
    from audiobook_rl.policy.tokenizer import prompt_ids, train_tokenizer

    tokenizer = train_tokenizer([SOURCE, REFERENCE_JSON] * 4, vocab_size=400)
    row = _row(tmp_path)
    create_tokens = len(prompt_ids(tokenizer, _prompts().create_messages(SOURCE)))
    # a long draft, so that the rewrite call (which carries it) is longer than the create call
    draft = json.dumps(REFERENCE * 8, ensure_ascii=False)
    assert len(prompt_ids(tokenizer, _prompts().rewrite_messages(SOURCE, draft))) > create_tokens + 64
    long_draft = Loopback(lambda kind, body, n: Reply(body={**chat_completion(draft), "id": f"chatcmpl-{n}"}))
    with long_draft as server:
        llm = agl.LLM(endpoint=server.url + "/v1", model="policy")
        # the create call itself would not fit: nothing is sent
        agent = make_agent(_prompts(), make_judge(), max_tokens=64,
                           limit=ContextLimit(tokenizer, create_tokens + 63))
        rollout, spans = _run(agent, row, llm, "train")
        assert server.requests == [] and rollout.status == "succeeded"
        assert agl.find_final_reward(spans) is None
        # create fits, the rewrite (which carries the draft) does not: one call, no reward
        agent = make_agent(_prompts(), make_judge(), max_tokens=64,
                           limit=ContextLimit(tokenizer, create_tokens + 64))
        rollout, spans = _run(agent, row, llm, "train")
        assert len(server.requests) == 1 and agl.find_final_reward(spans) is None


@pytest.mark.parametrize("outage", ["retry-after-600", "hang"])
def test_judging_ends_by_its_deadline_whatever_the_judge_server_does(tmp_path, monkeypatch, outage):
    """The GLM judge through its SDK, behind a server that asks for 10 minutes between tries or never
    answers (with the default 6 tries of 120 s each): the rollout ends with no reward within its
    judging budget, long before Agent Lightning's rollout timeout."""
    import threading
    import time

    monkeypatch.setenv("ZHIPUAI_API_KEY", "zhipuai-key-loopback-0123456789")

    def judge_server(kind, body, n):
        return Reply(429, headers={"retry-after": "600"}) if outage == "retry-after-600" else Reply(hang=True)

    with _reference_server() as policy, Loopback(judge_server) as glm:
        llm_settings = {"base_url": {"zhipuai": glm.url + "/api/paas/v4"}, "cache_dir": str(tmp_path / "cache"),
                        "rate_limit_per_minute": {"zhipuai": 0}}
        judge = make_judge(llm_settings, backend="glm", model="glm-4.7")
        agent = make_agent(_prompts(), judge, max_tokens=64, judge_budget_s=1.5)
        done = {}

        def rollout():
            done["spans"] = _run(agent, _row(tmp_path), agl.LLM(endpoint=policy.url + "/v1", model="policy"), "train")[1]

        started = time.monotonic()
        worker = threading.Thread(target=rollout, daemon=True)
        worker.start()
        worker.join(timeout=30)
        elapsed = time.monotonic() - started
    assert not worker.is_alive(), "the rollout was still judging after 30 s"
    assert agl.find_final_reward(done["spans"]) is None and glm.count >= 1
    assert elapsed < 1.5 + 10  # the budget, plus the two policy calls and Agent Lightning's runner


def test_judging_that_begins_late_in_a_rollout_ends_before_agent_lightning_gives_up_on_it():
    from audiobook_rl.agent.lightning import ROLLOUT_LEFT_S, ROLLOUT_TIMEOUT_S, judge_deadline

    assert judge_deadline(started=100.0, judging=130.0, budget_s=300.0) == 430.0
    # slow policy calls: the budget would run past Agent Lightning's 1,200 s
    assert judge_deadline(started=100.0, judging=1000.0, budget_s=300.0) == 100.0 + ROLLOUT_TIMEOUT_S - ROLLOUT_LEFT_S
