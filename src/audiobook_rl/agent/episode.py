"""The audiobook agent: one *create* → *rewrite* episode, judged on the final script.

*create* drafts a script from the excerpt; *rewrite* gets the excerpt and the draft (as text, even
when it does not parse) and returns the corrected script; the judge scores the final script
against the reference, and that score is the episode's reward. Both calls are training samples
that share the reward.

This module is framework-free: the two LLM calls go through a :class:`ChatClient`, so the same
prompt building, parsing and reward code runs against the local Hugging Face policy
(:mod:`.hf_chat`), vLLM (:mod:`.vllm_chat`) and an OpenAI-compatible endpoint served by Agent
Lightning during verl training (:mod:`.lightning`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence

from ..dataset import Task
from ..prompts import Prompt, load_prompt
from ..script import parse_script

log = logging.getLogger(__name__)

ROLES = ("create", "rewrite")


@dataclass(frozen=True)
class Reply:
    """One chat completion: its text and, when the server reports them, the token ids."""

    text: str
    prompt_ids: list[int] = field(default_factory=list)
    response_ids: list[int] = field(default_factory=list)


class ChatClient(Protocol):
    """Anything that answers chat messages. ``temperature == 0`` means greedy decoding; ``top_p``
    1 and ``top_k`` 0 mean no nucleus or top-k filter."""

    def chat(self, messages: list[dict], *, temperature: float, max_tokens: int, top_p: float = 1.0,
             top_k: int = 0) -> Reply: ...


def chat_many(client, batch: Sequence[list[dict]], **sampling) -> list[Reply]:
    """Answer several conversations: in one batch if the client has ``chat_batch``, else one by one.

    ``sampling`` holds the keyword arguments of :meth:`ChatClient.chat` (temperature, max_tokens, ...).
    """
    if hasattr(client, "chat_batch"):
        return client.chat_batch(list(batch), **sampling)
    return [client.chat(m, **sampling) for m in batch]


# follow(i, chain): chain i's next messages, given its (messages, reply) pairs so far; None ends it.
Follow = Callable[[int, list[tuple[list[dict], Reply]]], "list[dict] | None"]


def chat_chains(client, starts: Sequence[list[dict]], follow: Follow, **sampling) -> list[list[tuple[list[dict], Reply]]]:
    """Conversations that go on after each reply: chain ``i`` starts with ``starts[i]``, and
    ``follow`` gives its next call from its replies so far. A client with ``chat_chains`` sends each
    next call as soon as its chain's reply is in; any other answers the chains round by round."""
    if hasattr(client, "chat_chains"):
        return client.chat_chains(list(starts), follow, **sampling)
    return chat_in_rounds(lambda batch: chat_many(client, batch, **sampling), starts, follow)


def chat_in_rounds(chat_batch, starts: Sequence[list[dict]], follow: Follow) -> list[list[tuple[list[dict], Reply]]]:
    """Chains answered round by round: every chain's first call in one batch, then every second call."""
    chains: list[list[tuple[list[dict], Reply]]] = [[] for _ in starts]
    pending = list(enumerate(starts))
    while pending:
        replies = chat_batch([messages for _, messages in pending])
        following = []
        for (i, messages), reply in zip(pending, replies):
            chains[i].append((messages, reply))
            nxt = follow(i, chains[i])
            if nxt is not None:
                following.append((i, nxt))
        pending = following
    return chains


@dataclass(frozen=True)
class AgentPrompts:
    """The two role prompts (files under config/prompts/)."""

    create: Prompt
    rewrite: Prompt

    @classmethod
    def load(cls, create_path: str, rewrite_path: str) -> "AgentPrompts":
        return cls(load_prompt(create_path), load_prompt(rewrite_path))

    def create_messages(self, text: str, before: str = "") -> list[dict]:
        """The create call for an excerpt; ``before`` (the novel just before it) fills a prompt's
        ``{{before}}`` and is left out by a prompt without one."""
        return self.create.messages(text=text, before=before)

    def rewrite_messages(self, text: str, draft: str, before: str = "") -> list[dict]:
        return self.rewrite.messages(text=text, draft=draft, before=before)


@dataclass
class Call:
    role: str
    messages: list[dict]
    reply: Reply


@dataclass
class Episode:
    """What one create → rewrite run produced. ``reward`` is None when no judge ran or it failed."""

    task_id: str
    calls: list[Call]
    reward: float | None = None
    verdict: object | None = None

    @property
    def draft(self) -> str:
        return self.calls[0].reply.text

    @property
    def final(self) -> str:
        return self.calls[1].reply.text

    def output_record(self, step) -> dict:
        """The line of results/eval/step_N/outputs.jsonl for this episode."""
        return {
            "id": self.task_id,
            "step": step,
            "draft": self.draft,
            "final": self.final,
            "draft_notes": parse_script(self.draft).notes(),
            "final_notes": parse_script(self.final).notes(),
        }


def judge_final(judge, task: Task, final: str, deadline: float | None = None):
    """The judge's verdict on the final script; the reward is ``verdict.overall`` (None = failure,
    also when ``deadline``, a :func:`time.monotonic` time, came first)."""
    if deadline is None:
        return judge.score(task.text, task.reference, final, aliases=task.aliases)
    return judge.score(task.text, task.reference, final, aliases=task.aliases, deadline=deadline)


def run_episode(task: Task, client: ChatClient, prompts: AgentPrompts, judge=None, **sampling) -> Episode:
    """One create → rewrite episode through ``client``, judged if a judge is given.

    ``sampling``: the keyword arguments of :meth:`ChatClient.chat` (temperature, max_tokens, top_p, top_k).
    """
    return run_episodes([task], client, prompts, judge, **sampling)[0]


def run_episodes(tasks: Sequence[Task], client, prompts: AgentPrompts, judge=None, **sampling) -> list[Episode]:
    """Run one episode per task (repeat a task to get a group). An episode's rewrite is asked for as
    soon as its own draft is in (with a client that batches so; else after every draft)."""

    def rewrite(i: int, chain: list[tuple[list[dict], Reply]]) -> list[dict] | None:
        # A draft that does not parse still goes to rewrite, as the text the model wrote.
        task = tasks[i]
        return prompts.rewrite_messages(task.text, chain[0][1].text.strip(), task.before) if len(chain) == 1 else None

    chains = chat_chains(client, [prompts.create_messages(t.text, t.before) for t in tasks], rewrite, **sampling)
    episodes = []
    for task, chain in zip(tasks, chains):
        episode = Episode(task.id, [Call(role, messages, reply) for role, (messages, reply) in zip(ROLES, chain)])
        if judge is not None:
            episode.verdict = judge_final(judge, task, episode.final)
            episode.reward = episode.verdict.overall
        episodes.append(episode)
    return episodes
