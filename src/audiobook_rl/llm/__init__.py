"""The one client layer for every external model call (the Claude labeler, the LLM judges).

:class:`LLMClient` sends :class:`Request` objects through a provider adapter (``anthropic``,
``zhipuai`` or ``openai``, see :mod:`.providers`) and adds what every paid stage needs:

- a content-addressed on-disk cache (:mod:`.cache`): a crash mid-stage loses nothing, a rerun sends
  only what is missing, and a rerun of a finished stage sends nothing;
- bounded concurrency (:meth:`LLMClient.map`), a per-provider rate limit and a per-request timeout;
- retries with exponential backoff and jitter on 429, 5xx, connection errors and timeouts,
  honouring ``Retry-After``; after the last try, an :class:`LLMError` naming the item;
- token and cost accounting (:mod:`.usage`) and progress (a bar on a terminal, lines in the log).

Settings come from the ``llm`` config section. They never change a result, so the rules do not
record them as params; a stage script opens a :func:`session` with them and writes the session's
usage next to its output.
"""

from .client import LLMClient, LLMError, Reply, Request
from .session import Session, current, session, session_for

__all__ = [
    "LLMClient",
    "LLMError",
    "Reply",
    "Request",
    "Session",
    "session",
    "session_for",
    "current",
]
