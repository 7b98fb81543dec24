"""How fast the rollout phase of one GRPO step can be when every rollout calls an LLM judge.

One rollout is three calls in a row: *create* and *rewrite* on the policy (vLLM behind Agent
Lightning's proxy) and the judge on the final script. Agent Lightning runs ``n_runners`` rollouts
at a time (each runner does one rollout after another), and the judge provider accepts at most
``rate`` requests per minute. A step has ``rollouts = train batch size x rollout.n`` rollouts, so::

    step_time >= max( ceil(rollouts / n_runners) x (2 x policy_latency + judge_latency),
                      (rollouts - 1) / rate + 2 x policy_latency + judge_latency )

(roughly ``max(rollouts / n_runners x (2p + j), rollouts / rate)``). The first term shrinks as
runners are added; the second does not: once it dominates, more runners only queue at the rate
limiter, and the GPUs wait for the judge. :func:`runners_to_saturate` is the smallest runner count
that reaches the floor: raise ``resources.train_grpo.n_runners`` only up to it.

This script prints the bound and the fewest runners for given latencies and a rate, then measures
one step's rollouts through the real agent code, the real OpenAI SDK and the real LLM judge with its
client layer (rate limiter included) against a loopback server with injected latencies, for several
runner counts, beside the bound:

    python bench/judge_throughput.py [--rollouts 8] [--policy-s 0.03] [--judge-s 0.10] [--rate 600]
    python bench/judge_throughput.py --seed     # the seed: 32 rollouts, GLM at 60 requests/min
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from loopback import Loopback, Reply, chat_completion  # noqa: E402
from loopback.scripts import REFERENCE, SOURCE, judge_reply  # noqa: E402

from audiobook_rl.agent.episode import AgentPrompts, run_episode  # noqa: E402
from audiobook_rl.agent.openai_chat import OpenAIChat  # noqa: E402
from audiobook_rl.config import section  # noqa: E402
from audiobook_rl.dataset import Task  # noqa: E402
from audiobook_rl.judging.llm_judge import LLMJudge  # noqa: E402
from audiobook_rl.paths import REPO  # noqa: E402
from audiobook_rl.script import from_dicts  # noqa: E402


def step_time_bound(rollouts: int, n_runners: int, policy_latency_s: float, judge_latency_s: float,
                    judge_rate_per_minute: float = 0.0) -> float:
    """Least seconds the rollouts of one step take (policy and judge latencies per call; rate 0 = no limit)."""
    if rollouts < 1 or n_runners < 1:
        raise ValueError("rollouts and n_runners must be at least 1")
    episode = 2 * policy_latency_s + judge_latency_s
    runner_bound = math.ceil(rollouts / n_runners) * episode
    if not judge_rate_per_minute:
        return runner_bound
    rate_bound = (rollouts - 1) * 60.0 / judge_rate_per_minute + episode
    return max(runner_bound, rate_bound)


def runners_to_saturate(rollouts: int, policy_latency_s: float, judge_latency_s: float,
                        judge_rate_per_minute: float = 0.0) -> int:
    """The fewest runners whose bound equals the bound with one runner per rollout: beyond this count,
    extra runners shorten nothing (the step waits for the slowest wave or for the judge's rate limit)."""
    floor = step_time_bound(rollouts, rollouts, policy_latency_s, judge_latency_s, judge_rate_per_minute)
    for n in range(1, rollouts + 1):
        if step_time_bound(rollouts, n, policy_latency_s, judge_latency_s, judge_rate_per_minute) <= floor + 1e-9:
            return n
    return rollouts


def measure(rollouts: int, n_runners: int, rate: float, policy_s: float, judge_s: float) -> float:
    """Seconds for one step's rollouts on ``n_runners`` workers sharing one judge client."""

    def respond(kind, body, n):
        if body.get("model") == "policy":
            # A different script per call, so no judge request is ever a cache hit.
            script = [{"speaker": "旁白", "content": f"{SOURCE[:10]}{n}", "tone": "平静", "intensity": 1, "delay": 0}]
            return Reply(body=chat_completion(json.dumps(script, ensure_ascii=False)), delay=policy_s)
        return Reply(body=chat_completion(judge_reply(0.5)), delay=judge_s)

    with Loopback(respond) as server, tempfile.TemporaryDirectory() as cache:
        llm = {"base_url": {"openai": server.url + "/v1"}, "key_env": {"openai": None}, "cache_dir": cache,
               "rate_limit_per_minute": {"openai": rate}, "concurrency": n_runners}
        judge = LLMJudge(section("judge", {"backend": "openai", "model": "judge"}), llm)
        policy = OpenAIChat(server.url + "/v1", "policy")
        prompts = AgentPrompts.load(REPO / "config/prompts/create.md", REPO / "config/prompts/rewrite.md")
        tasks = [Task(f"t{i}", SOURCE, from_dicts(REFERENCE), {}) for i in range(rollouts)]
        started = time.monotonic()
        with ThreadPoolExecutor(n_runners) as runners:  # one rollout at a time per runner, as in Agent Lightning
            episodes = list(runners.map(lambda t: run_episode(t, policy, prompts, judge, temperature=1.0, max_tokens=64),
                                        tasks))
        elapsed = time.monotonic() - started
    assert all(e.reward == 0.5 for e in episodes), "a rollout was not judged"
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rollouts", type=int, default=8, help="train_batch_size x rollout.n")
    parser.add_argument("--policy-s", type=float, default=0.03, help="latency of one policy call")
    parser.add_argument("--judge-s", type=float, default=0.10, help="latency of one judge call")
    parser.add_argument("--rate", type=float, default=600, help="judge requests per minute (0 = no limit)")
    parser.add_argument("--seed", action="store_true", help="print the seed's bound only (32 rollouts, 2 s / 5 s, 60/min)")
    args = parser.parse_args()
    if args.seed:
        args.rollouts, args.policy_s, args.judge_s, args.rate = 32, 2.0, 5.0, 60
    n = runners_to_saturate(args.rollouts, args.policy_s, args.judge_s, args.rate)
    floor = step_time_bound(args.rollouts, args.rollouts, args.policy_s, args.judge_s, args.rate)
    print(f"{args.rollouts} rollouts, policy {args.policy_s} s, judge {args.judge_s} s, {args.rate:g} judge requests/min: "
          f"step >= {floor:.2f} s; {n} runners reach it")
    if args.seed:
        return
    for runners, rate in ((1, 0.0), (max(1, args.rollouts // 2), 0.0), (args.rollouts, args.rate), (n, args.rate)):
        bound = step_time_bound(args.rollouts, runners, args.policy_s, args.judge_s, rate)
        measured = measure(args.rollouts, runners, rate, args.policy_s, args.judge_s)
        print(f"runners {runners:3d}, rate {rate:5g}/min: bound {bound:.2f} s, measured {measured:.2f} s "
              f"(ratio {measured / bound:.2f})")


if __name__ == "__main__":
    main()
