"""The audiobook agent as an Agent Lightning 0.3.0 rollout (for the verl training backend).

``make_agent(...)`` returns an ``@agl.rollout`` function ``(task, llm, rollout) -> float``:

- ``task`` is a dataset row (results/data/*.parquet as a dict; verl adds ``data_id``/``index``);
- ``llm`` is the ``agl.LLM`` resource; both calls go to ``llm.endpoint`` through the ``openai``
  SDK (during verl training that is Agent Lightning's LLM proxy, which records the token ids of each
  call: create and rewrite become two training samples with the same reward);
- ``rollout.mode == "val"`` decodes at ``val_temperature`` (greedy by default); training uses the
  temperature verl publishes in ``llm.sampling_parameters``;
- it returns the judge's score of the final script, which the runner records as the reward.

A rollout that has no true reward returns None, never a made-up 0: a judge that still fails by its
deadline (429s, timeouts, malformed replies; see ``JUDGE_BUDGET_S``), or a call whose prompt
plus ``max_tokens`` exceeds the context verl gives vLLM (which would answer HTTP 400). The verl
backend then drops the task's whole group from the update and counts it
(:mod:`audiobook_rl.training.verl.daemon`).

Prompt building, parsing and judging are the same functions the local backend uses
(:mod:`.episode`); only how the two calls are served differs (:mod:`.openai_chat`). This module imports
``agentlightning`` (about 10 s, and it pulls in litellm), so only the verl path imports it.

Usage, as in Agent Lightning's examples::

    agent = make_agent(AgentPrompts.load(create, rewrite), judge, max_tokens=1024)
    trainer = agl.Trainer(algorithm=agl.VERL(config), n_runners=8, ...)
    trainer.fit(agent, train_rows, val_dataset=val_rows)

The rollout function closes over the prompts and the judge; Agent Lightning's runners are forked
from the trainer process (the default start method on Linux), so nothing needs pickling.
"""

from __future__ import annotations

import logging
import os
import time

# litellm (imported by agentlightning) otherwise tries to download a price list at import time.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import agentlightning as agl  # noqa: E402

from ..dataset import Task  # noqa: E402
from ..policy.tokenizer import prompt_ids  # noqa: E402
from .episode import AgentPrompts, Episode, Reply, judge_final, run_episode  # noqa: E402
from .openai_chat import OpenAIChat  # noqa: E402

log = logging.getLogger(__name__)

# Judging a rollout's final script ends by a deadline: JUDGE_BUDGET_S after the two policy calls, and
# never later than ROLLOUT_LEFT_S before Agent Lightning 0.3.0 gives up on the rollout (its daemon's
# RolloutConfig.timeout_seconds, ROLLOUT_TIMEOUT_S after the rollout started), so that the rollout
# reports "no reward" itself. Every wait and try of the judge (its replies, the client layer's
# retries, Retry-After, the rate limit, each request's timeout) is cut to that deadline; a failed
# verdict is asked for again after JUDGE_WAIT_S (doubling, up to JUDGE_WAIT_MAX_S) while time is left.
JUDGE_BUDGET_S = 300.0
ROLLOUT_TIMEOUT_S, ROLLOUT_LEFT_S = 1200.0, 60.0
JUDGE_WAIT_S, JUDGE_WAIT_MAX_S = 10.0, 120.0


class ContextLimit:
    """Refuses a call whose prompt plus ``max_tokens`` exceeds ``max_model_len`` tokens (vLLM would
    answer HTTP 400), counting prompts with the policy's own tokenizer and chat template."""

    def __init__(self, tokenizer, max_model_len: int):
        self.tokenizer, self.max_model_len = tokenizer, max_model_len

    def excess(self, messages: list[dict], max_tokens: int) -> str | None:
        """Why the call does not fit, or None."""
        n = len(prompt_ids(self.tokenizer, messages))
        if n + max_tokens > self.max_model_len:
            return f"prompt of {n} tokens + max_tokens {max_tokens} > the {self.max_model_len} tokens vLLM serves"
        return None


class LimitedChat:
    """A chat client that raises :class:`TooLong` instead of sending a call that cannot fit."""

    def __init__(self, client, limit: ContextLimit):
        self.client, self.limit = client, limit

    def chat(self, messages: list[dict], *, max_tokens: int, **sampling) -> Reply:
        why = self.limit.excess(messages, max_tokens)
        if why:
            raise TooLong(why)
        return self.client.chat(messages, max_tokens=max_tokens, **sampling)


class TooLong(Exception):
    """A call skipped because it cannot fit in the policy server's context."""


def judge_deadline(started: float, judging: float, budget_s: float = JUDGE_BUDGET_S) -> float:
    """When judging must end (:func:`time.monotonic` times): ``budget_s`` after it begins at
    ``judging``, and ``ROLLOUT_LEFT_S`` before Agent Lightning's timeout of a rollout that began at ``started``."""
    return min(judging + budget_s, started + ROLLOUT_TIMEOUT_S - ROLLOUT_LEFT_S)


def judge_with_retries(judge, task: Task, final: str, deadline: float, *, clock=time.monotonic, sleep=time.sleep):
    """The judge's verdict on ``final``, asked again after a failure until ``deadline`` (a ``clock``
    time), which bounds each verdict too."""
    wait = JUDGE_WAIT_S
    while True:
        verdict = judge_final(judge, task, final, deadline=deadline)
        if verdict.overall is not None or clock() + wait > deadline:
            return verdict
        log.info("judge failed on task %s (%s); asking again in %.0f s", task.id, verdict.error, wait)
        sleep(wait)
        wait = min(2 * wait, JUDGE_WAIT_MAX_S)


def make_agent(prompts: AgentPrompts, judge, *, max_tokens: int, val_temperature: float = 0.0,
               top_p: float = 1.0, top_k: int = 0, limit: ContextLimit | None = None,
               judge_budget_s: float = JUDGE_BUDGET_S):
    """The ``@agl.rollout`` agent: one create → rewrite episode, returning the final reward, or None
    when there is none to give (a skipped call, a judge that kept failing). Training rollouts sample
    with ``top_p``/``top_k`` (verl publishes only the temperature); validation is greedy by default."""

    def audiobook_agent(task: dict, llm: agl.LLM, rollout: agl.Rollout) -> float | None:
        started = time.monotonic()
        client = OpenAIChat(llm.endpoint, llm.model, llm.api_key)
        if limit is not None:
            client = LimitedChat(client, limit)
        if getattr(rollout, "mode", None) == "val":
            sampling = {"temperature": val_temperature, "top_p": top_p, "top_k": top_k}
        else:
            temperature = float((llm.sampling_parameters or {}).get("temperature", 1.0))
            sampling = {"temperature": temperature, "top_p": top_p, "top_k": top_k}
        item = Task.from_row(task)
        try:
            episode: Episode = run_episode(item, client, prompts, None, max_tokens=max_tokens, **sampling)
        except TooLong as why:
            log.warning("task %s skipped, no reward: %s", item.id, why)
            return None
        judging = time.monotonic()
        verdict = judge_with_retries(judge, item, episode.final, judge_deadline(started, judging, judge_budget_s))
        if verdict.overall is None:
            log.warning("task %s: no reward, the judge failed for %.0f s: %s", item.id, time.monotonic() - judging,
                        verdict.error)
            return None
        return float(verdict.overall)

    return agl.rollout(audiobook_agent)
