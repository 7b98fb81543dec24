"""The client: cache, retries, rate limit and bounded concurrency around one provider adapter."""

from __future__ import annotations

import fcntl
import logging
import random
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from ..errors import UserError
from .cache import DiskCache, request_key
from .progress import Bar
from .providers import EmptyReply, make_provider
from .usage import Usage

log = logging.getLogger(__name__)

MAX_RETRY_AFTER_S = 600.0  # a server asking for a longer wait than this is not waited for that long


class _Skipped(Exception):
    """An item not started because another one failed."""


class LLMError(UserError):
    """A request that still failed after the last try (or could not be retried); names the item."""


@dataclass(frozen=True)
class Request:
    """One model call. ``item`` names what it is for (a slice id) in errors and logs; it is not
    part of the cache key, everything else is."""

    model: str
    system: str
    messages: tuple  # ({"role": "user"|"assistant", "content": str}, ...)
    max_tokens: int
    temperature: float | None = None
    extra: dict = field(default_factory=dict)  # other body fields (e.g. response_format)
    item: str = ""

    def payload(self) -> dict:
        return {
            "model": self.model,
            "system": self.system,
            "messages": [dict(m) for m in self.messages],
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "extra": self.extra,
        }


@dataclass(frozen=True)
class Reply:
    text: str
    input_tokens: int
    output_tokens: int
    cached: bool


class _RateLimiter:
    """At most ``per_minute`` request starts per minute for one provider, across every thread and
    every process that shares the file ``state`` (in the cache folder): parallel judge jobs,
    training's runner processes and parallel runs on one machine all draw from the provider's one
    limit. The file holds the earliest time the next request may start; a start is reserved by
    reading and advancing it under an exclusive lock.
    """

    def __init__(self, per_minute: float, state: Path):
        self.interval = 60.0 / per_minute if per_minute else 0.0
        self.state = state
        if self.interval:
            state.parent.mkdir(parents=True, exist_ok=True)

    def wait(self, limit: float | None = None) -> bool:
        """Wait for this request's start; False (without taking a start) if it would come more than
        ``limit`` seconds from now."""
        if not self.interval:
            return True
        start = self._reserve(time.time(), limit)
        if start is None:
            return False
        delay = start - time.time()
        if delay > 0:
            time.sleep(delay)
        return True

    def _reserve(self, now: float, limit: float | None = None) -> float | None:
        with open(self.state, "a+", encoding="utf-8") as f:  # each call its own open file: threads exclude each other too
            fcntl.flock(f, fcntl.LOCK_EX)
            f.seek(0)
            try:
                next_start = float(f.read().strip() or 0)
            except ValueError:
                next_start = 0.0
            # A reservation more than an hour ahead is not a queue but a clock that jumped back.
            start = max(now, next_start if next_start - now < 3600 else now)
            if limit is not None and start - now > limit:
                return None
            f.seek(0)
            f.truncate()
            f.write(repr(start + self.interval))
        return start


class LLMClient:
    """Calls to one provider (``anthropic``, ``zhipuai`` or ``openai``) with the ``llm`` settings.

    ``needed_by`` names the config key that asked for this provider, for the missing-key message.
    """

    def __init__(self, provider: str, settings: dict, usage: Usage, needed_by: str):
        self.provider_name = provider
        self.settings = settings
        self.usage = usage
        self.provider = make_provider(provider, settings, needed_by)  # checks the key: fails before any work
        self.cache = DiskCache(settings["cache_dir"], provider)
        self.concurrency = max(1, int(settings["concurrency"]))
        self._in_flight = threading.BoundedSemaphore(self.concurrency)
        self._limiter = _RateLimiter(
            settings["rate_limit_per_minute"][provider],
            Path(settings["cache_dir"]).resolve() / ".rate" / provider,
        )

    def complete(self, request: Request, deadline: float | None = None) -> Reply:
        """The reply to ``request``: from the cache if it was ever answered, else from the provider.

        ``deadline`` (a :func:`time.monotonic` time) bounds everything this call does: each try's
        timeout is cut to the time left, and a try that could only start after it (a backoff, a
        server's ``Retry-After``, the rate limit) is not waited for; the call then fails with an
        :class:`LLMError` saying so.
        """
        key = request_key(self.provider_name, request.payload())
        hit = self.cache.get(key)
        if hit is not None:
            reply = Reply(hit["reply"]["text"], hit["reply"]["input_tokens"], hit["reply"]["output_tokens"], True)
            self.usage.call(
                self.provider_name, request.model, request.item, reply.input_tokens, reply.output_tokens, True
            )
            return reply
        text, tokens_in, tokens_out = self._send(request, deadline)
        # Stored before returning: whatever happens next, this answer has been paid for once.
        self.cache.put(
            key,
            {
                "provider": self.provider_name,
                "request": request.payload(),
                "reply": {"text": text, "input_tokens": tokens_in, "output_tokens": tokens_out},
                "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            },
        )
        self.usage.call(self.provider_name, request.model, request.item, tokens_in, tokens_out, False)
        return Reply(text, tokens_in, tokens_out, False)

    def _send(self, request: Request, deadline: float | None = None) -> tuple[str, int, int]:
        s = self.settings
        tries = max(1, int(s["max_tries"]))
        failure = None
        for attempt in range(1, tries + 1):
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise self._gave_up(request, attempt - 1, "no time left before its deadline", failure)
            if not self._limiter.wait(left):
                raise self._gave_up(request, attempt - 1, "its rate limit's next start comes after its deadline", failure)
            timeout = float(s["timeout_s"]) if deadline is None else min(float(s["timeout_s"]), deadline - time.monotonic())
            try:
                with self._in_flight:
                    return self.provider.send(request, max(timeout, 0.001))
            except EmptyReply as empty:
                # Paid for, but not kept: a rerun asks again. Not retried now: the same request
                # would most likely be answered the same way.
                self.usage.call(self.provider_name, request.model, request.item, empty.input_tokens,
                                empty.output_tokens, False)
                self.usage.failure(self.provider_name, request.model)
                raise LLMError(
                    f"{request.item or 'a request'}: {self.provider_name} model {request.model} sent an empty reply "
                    f"({empty.reason})"
                ) from None
            except Exception as err:  # noqa: BLE001 — classified below; unknown errors are not retried
                failure = self.provider.classify(err)
            if not failure.retryable or attempt == tries:
                self.usage.failure(self.provider_name, request.model)
                what = "after %d tries" % attempt if failure.retryable else "(not retryable)"
                raise LLMError(
                    f"{request.item or 'a request'}: {self.provider_name} model {request.model} failed {what}: "
                    f"{failure.message}"
                ) from None
            backoff = min(float(s["backoff_max_s"]), float(s["backoff_s"]) * 2 ** (attempt - 1))
            delay = backoff * (0.5 + random.random() / 2)  # jitter: parallel workers do not retry in lockstep
            if failure.retry_after is not None:
                delay = max(delay, min(failure.retry_after, MAX_RETRY_AFTER_S))
            if deadline is not None and time.monotonic() + delay >= deadline:
                raise self._gave_up(request, attempt, f"the next try (in {delay:.1f} s) would start after its deadline",
                                    failure)
            self.usage.retry(self.provider_name, request.model)
            log.warning(
                "%s: try %d/%d failed (%s); retrying in %.1f s",
                request.item or "request",
                attempt,
                tries,
                failure.message,
                delay,
            )
            time.sleep(delay)
        raise AssertionError("unreachable")

    def _gave_up(self, request: Request, tries: int, why: str, failure) -> "LLMError":
        """The error of a request given up at its deadline (counted as a failure), naming the last try's."""
        self.usage.failure(self.provider_name, request.model)
        last = f": {failure.message}" if failure is not None else ""
        return LLMError(
            f"{request.item or 'a request'}: {self.provider_name} model {request.model} gave up after "
            f"{tries} {'try' if tries == 1 else 'tries'}: {why}{last}"
        )

    def map(self, fn: Callable, items: Sequence, what: str, progress: Callable | None = None) -> list:
        """``[fn(item) for item in items]`` on ``llm.concurrency`` threads, in order.

        The first exception stops the items not yet started, lets the running ones finish (their
        replies land in the cache) and is raised. ``progress`` (e.g. :class:`stage.Progress`) is
        called once per finished item; a terminal also gets a progress bar.
        """
        if not items:
            return []
        if progress is None:
            from ..stage import Progress

            progress = Progress(len(items), what)
        bar = Bar(len(items), what)
        results: list = [None] * len(items)
        stop = threading.Event()

        def guarded(item):
            if stop.is_set():  # a failure elsewhere: start nothing new
                raise _Skipped()
            try:
                return fn(item)
            except BaseException:
                stop.set()
                raise

        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(items))) as pool:
            futures = {pool.submit(guarded, item): i for i, item in enumerate(items)}

            def finished(future) -> None:
                if not future.cancelled() and future.exception() is None:
                    bar.step()
                    progress()

            for future in futures:
                future.add_done_callback(finished)
            done, pending = wait(futures, return_when=FIRST_EXCEPTION)
            if any(f.exception() is not None for f in done):
                for f in pending:
                    f.cancel()
                wait(pending)
                bar.close()
                failed = [
                    f
                    for f in futures
                    if not f.cancelled() and f.exception() is not None and not isinstance(f.exception(), _Skipped)
                ]
                raise min(failed, key=lambda f: futures[f]).exception()
            for future, i in futures.items():
                results[i] = future.result()
        bar.close()
        return results
