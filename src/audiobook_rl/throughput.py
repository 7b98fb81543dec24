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
that reaches the floor.
"""

from __future__ import annotations

import math


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
    """The fewest runners whose bound equals the bound with one runner per rollout.

    Beyond this count, extra runners shorten nothing: the step waits for the slowest wave or for
    the judge's rate limit.
    """
    floor = step_time_bound(rollouts, rollouts, policy_latency_s, judge_latency_s, judge_rate_per_minute)
    for n in range(1, rollouts + 1):
        if step_time_bound(rollouts, n, policy_latency_s, judge_latency_s, judge_rate_per_minute) <= floor + 1e-9:
            return n
    return rollouts

