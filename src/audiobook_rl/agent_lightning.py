"""The audiobook agent as an Agent Lightning 0.3.0 rollout (for the verl training backend).

``make_agent(...)`` returns an ``@agl.rollout`` function ``(task, llm, rollout) -> float``:

- ``task`` is a dataset row (results/data/*.parquet as a dict; verl adds ``data_id``/``index``);
- ``llm`` is the ``agl.LLM`` resource; both calls go to ``llm.endpoint`` through the ``openai``
  SDK (during verl training that is Agent Lightning's LLM proxy, which records the token ids of each
  call: create and rewrite become two training samples with the same reward);
- ``rollout.mode == "val"`` decodes at ``val_temperature`` (greedy by default); training uses the
  temperature verl publishes in ``llm.sampling_parameters``;
- it returns the judge's score of the final script, which the runner records as the reward.

Prompt building, parsing and judging are the same functions the local backend uses
(:mod:`audiobook_rl.agent`); only how the two calls are served differs. This module imports
``agentlightning`` (about 10 s, and it pulls in litellm), so only the verl path imports it.

Usage, as in Agent Lightning's examples::

    agent = make_agent(AgentPrompts.load(create, rewrite), make_judge(judge_settings), max_tokens=1024)
    trainer = agl.Trainer(algorithm=agl.VERL(config), n_runners=8, ...)
    trainer.fit(agent, train_rows, val_dataset=val_rows)

The rollout function closes over the prompts and the judge; Agent Lightning's runners are forked
from the trainer process (the default start method on Linux), so nothing needs pickling.
"""

from __future__ import annotations

import logging
import os

# litellm (imported by agentlightning) otherwise tries to download a price list at import time.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import agentlightning as agl  # noqa: E402

from .agent import AgentPrompts, Reply, Task, run_episode  # noqa: E402

log = logging.getLogger(__name__)


class OpenAIChat:
    """The agent's :class:`~audiobook_rl.agent.ChatClient` over an OpenAI-compatible endpoint."""

    def __init__(self, endpoint: str, model: str, api_key: str | None = None, timeout: float = 600.0):
        from openai import OpenAI

        self.model = model
        self.client = OpenAI(base_url=endpoint, api_key=api_key or "dummy", timeout=timeout, max_retries=2)

    def chat(self, messages: list[dict], *, temperature: float, max_tokens: int) -> Reply:
        response = self.client.chat.completions.create(
            model=self.model, messages=messages, temperature=temperature, max_tokens=max_tokens
        )
        choice = response.choices[0]
        # vLLM reports token ids when asked (Agent Lightning's proxy asks); other servers do not.
        prompt_ids = getattr(response, "prompt_token_ids", None) or []
        response_ids = getattr(choice, "token_ids", None) or []
        return Reply(choice.message.content or "", list(prompt_ids), list(response_ids))


def make_agent(prompts: AgentPrompts, judge, *, max_tokens: int, val_temperature: float = 0.0):
    """The ``@agl.rollout`` agent: one create → rewrite episode, returning the final reward."""

    def audiobook_agent(task: dict, llm: agl.LLM, rollout: agl.Rollout) -> float:
        client = OpenAIChat(llm.endpoint, llm.model, llm.api_key)
        if getattr(rollout, "mode", None) == "val":
            temperature = val_temperature
        else:
            temperature = float((llm.sampling_parameters or {}).get("temperature", 1.0))
        episode = run_episode(Task.from_row(task), client, prompts, judge, temperature=temperature, max_tokens=max_tokens)
        if episode.reward is None:
            # verl would fill a missing reward with 0 anyway; say why in the log.
            log.warning("judge failed on task %s: %s", task.get("extra_info", {}).get("slice_id"),
                        getattr(episode.verdict, "error", None))
            return 0.0
        return float(episode.reward)

    return agl.rollout(audiobook_agent)
