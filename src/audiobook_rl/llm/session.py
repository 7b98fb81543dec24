"""The LLM settings and usage of one stage run, shared by every client the stage builds.

A stage script wraps its work in ``with llm.session(settings, stage="label_slices") as s:`` and
writes ``s.usage.summary()`` next to its output. Code that builds clients (the Claude labeler, the
LLM judges) asks :func:`current` for the session, so the ``llm`` section never has to travel
through the result-relevant ``label``/``judge`` sections. Settings not given are the schema's
defaults (:func:`audiobook_rl.config.section`); outside a session all of them apply.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator

from ..config import section
from .usage import Usage


class Session:
    def __init__(self, settings: dict | None, stage: str):
        self.settings = section("llm", settings)
        self.usage = Usage(stage, self.settings["prices_per_mtok"])
        self._clients: dict[str, object] = {}
        self._lock = threading.Lock()

    def client(self, provider: str, needed_by: str):
        """The session's client for ``provider`` (built once; raises UserError if its key is missing)."""
        from .client import LLMClient

        with self._lock:
            if provider not in self._clients:
                self._clients[provider] = LLMClient(provider, self.settings, self.usage, needed_by)
            return self._clients[provider]


_stack: list[Session] = []


@contextmanager
def session(settings: dict | None = None, stage: str = "llm") -> Iterator[Session]:
    """Make ``settings`` (the ``llm`` section) the current LLM settings; log the usage at the end."""
    s = Session(settings, stage)
    _stack.append(s)
    try:
        yield s
    finally:
        _stack.remove(s)
        s.usage.log_summary()


def session_for(settings: dict | None, stage: str) -> Session:
    """A session that is not made current (for code given explicit ``llm`` settings)."""
    return Session(settings, stage)


def current() -> Session:
    """The innermost open session, or a fresh one with the default settings."""
    return _stack[-1] if _stack else Session(None, "llm")
