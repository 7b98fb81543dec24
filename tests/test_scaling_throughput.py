"""Judge throughput during training: rollouts (create -> rewrite on the policy, then the judge) run
on `n_runners` workers against a loopback server with injected latencies, through the real agent
code, the real OpenAI SDK and the real LLM judge with its client layer (rate limiter included).
The measured time of one step's rollouts follows audiobook_rl.throughput.step_time_bound."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from loopback import Loopback, Reply, chat_completion
from loopback.scripts import REFERENCE, SOURCE, judge_reply

from audiobook_rl.agent import AgentPrompts, Reply as ChatReply, Task, run_episode
from audiobook_rl.judging import SEED_WEIGHTS, make_judge
from audiobook_rl.script import from_dicts
from audiobook_rl.throughput import runners_to_saturate, step_time_bound
from conftest import REPO

POLICY_S, JUDGE_S = 0.03, 0.10  # injected latency per policy call and per judge call
BATCH, GROUP = 2, 4  # train batch size x rollout.n
ROLLOUTS = BATCH * GROUP


class PolicyClient:
    """The agent's ChatClient over an OpenAI-compatible endpoint (as vLLM behind the proxy)."""

    def __init__(self, base_url: str):
        from openai import OpenAI

        self.client = OpenAI(base_url=base_url, api_key="loopback", max_retries=0)

    def chat(self, messages, *, temperature, max_tokens):
        r = self.client.chat.completions.create(model="policy", messages=messages, temperature=temperature,
                                                max_tokens=max_tokens)
        return ChatReply(r.choices[0].message.content or "")


def respond(kind, body, n):
    if body.get("model") == "policy":
        # A different script per call, so no judge request is ever a cache hit.
        script = [{"speaker": "旁白", "content": f"{SOURCE[:10]}{n}", "tone": "平静", "intensity": 1, "delay": 0}]
        return Reply(body=chat_completion(json.dumps(script, ensure_ascii=False)), delay=POLICY_S)
    return Reply(body=chat_completion(judge_reply(0.5)), delay=JUDGE_S)


@pytest.fixture(scope="module")
def server():
    with Loopback(respond) as s:
        yield s


def step(server, tmp_path, n_runners: int, rate_per_minute: float) -> float:
    """Seconds for one step's rollouts on ``n_runners`` workers sharing one judge client."""
    llm = {"base_url": {"openai": server.url + "/v1"}, "key_env": {"openai": None},
           "cache_dir": str(tmp_path / f"cache-{n_runners}-{rate_per_minute}"),
           "rate_limit_per_minute": {"openai": rate_per_minute}, "concurrency": n_runners}
    judge = make_judge({"backend": "openai", "model": "judge", "weights": SEED_WEIGHTS}, llm)
    policy = PolicyClient(server.url + "/v1")
    prompts = AgentPrompts.load(REPO / "config/prompts/create.md", REPO / "config/prompts/rewrite.md")
    tasks = [Task(f"t{i}", SOURCE, from_dicts(REFERENCE), {}) for i in range(BATCH) for _ in range(GROUP)]

    def rollout(task):
        return run_episode(task, policy, prompts, judge, temperature=1.0, max_tokens=64)

    start = time.monotonic()
    with ThreadPoolExecutor(n_runners) as runners:  # one rollout at a time per runner, as in Agent Lightning
        episodes = list(runners.map(rollout, tasks))
    elapsed = time.monotonic() - start
    assert all(e.reward == pytest.approx(0.5) for e in episodes)  # every rollout was judged
    return elapsed


@pytest.mark.parametrize(
    "n_runners, rate",
    [
        (1, 0),  # runner-bound: 8 sequential episodes
        (4, 0),  # 4x the runners: a quarter of the time
        (8, 600),  # rate-bound: 10 judge requests/s, however many runners
        (runners_to_saturate(ROLLOUTS, POLICY_S, JUDGE_S, 600), 600),  # fewest runners that reach that floor
    ],
)
def test_step_time_follows_the_bound(server, tmp_path, n_runners, rate):
    bound = step_time_bound(ROLLOUTS, n_runners, POLICY_S, JUDGE_S, rate)
    measured = step(server, tmp_path, n_runners, rate)
    # Below the bound is impossible; above it by HTTP and parsing overhead (~20 ms per call here).
    assert bound * 0.95 <= measured <= bound * 1.5 + 0.3, (n_runners, rate, bound, measured)


def test_more_runners_stop_helping_at_the_rate_limit():
    n = runners_to_saturate(ROLLOUTS, POLICY_S, JUDGE_S, 600)
    floor = step_time_bound(ROLLOUTS, ROLLOUTS, POLICY_S, JUDGE_S, 600)
    assert n == 2 and step_time_bound(ROLLOUTS, n, POLICY_S, JUDGE_S, 600) == pytest.approx(floor)
    assert step_time_bound(ROLLOUTS, n - 1, POLICY_S, JUDGE_S, 600) > floor
    # Without a rate limit, every rollout needs its own runner to reach the floor.
    assert runners_to_saturate(ROLLOUTS, POLICY_S, JUDGE_S, 0) == ROLLOUTS


def test_seed_numbers():
    # The seed: batch 8 x n 4 = 32 rollouts, GLM at 60 requests/min: the judge alone needs ~31 s per
    # step, so 1600 steps spend >= 14 h in the judge's rate limit whatever the GPUs do.
    bound = step_time_bound(32, 32, 2.0, 5.0, 60)
    assert bound == pytest.approx(31 + 9.0)
    assert runners_to_saturate(32, 2.0, 5.0, 60) == 8  # ceil(32/8) x 9 s = 36 s <= 40 s
