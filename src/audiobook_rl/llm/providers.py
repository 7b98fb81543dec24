"""Provider adapters: one small class per SDK that sends a request and classifies its errors.

Each adapter builds its SDK client with the SDK's own retries switched off (the client layer
retries, so that backoff, ``Retry-After`` and accounting are the same for every provider). The key
comes from an environment variable only (``llm.key_env``); a missing key raises :class:`UserError`
when the adapter is built, i.e. at stage start, before any request.
"""

from __future__ import annotations

import email.utils
import os
import time
from dataclasses import dataclass

from ..errors import UserError

RETRY_STATUS = {408, 409, 425, 429}  # plus every 5xx


class EmptyReply(Exception):
    """A reply without text: paid for (its tokens are kept for the accounts) but of no use, e.g. a
    thinking model whose reasoning took every token of ``max_tokens``."""

    def __init__(self, reason: str, input_tokens: int, output_tokens: int):
        super().__init__(reason)
        self.reason, self.input_tokens, self.output_tokens = reason, input_tokens, output_tokens


def _text_or_empty(text: str, stopped: str | None, reasoned: bool, input_tokens: int, output_tokens: int) -> str:
    """``text``, or :class:`EmptyReply` saying why there is none (the stop reason, and whether the
    model's reasoning took the tokens)."""
    if text.strip():
        return text
    why = f"finish_reason {stopped!r}" + ("; its reasoning took the tokens" if reasoned else "")
    raise EmptyReply(why, input_tokens, output_tokens)


@dataclass
class Failure:
    """What a failed try means: retry or not, the server's ``Retry-After`` (s) and a short message."""

    retryable: bool
    retry_after: float | None
    message: str


def api_key(provider: str, settings: dict, needed_by: str) -> str:
    """The key of ``provider`` from its environment variable; UserError naming the variable if unset."""
    env = settings["key_env"][provider]
    if not env:
        return "none"  # a local OpenAI-compatible server that wants no key (llm.key_env.openai: null)
    key = os.environ.get(env, "").strip()
    if not key:
        raise UserError(
            f"{needed_by} needs the environment variable {env}, which is not set; export it "
            f"(or name another variable in llm.key_env.{provider}) and run again."
        )
    return key


class Provider:
    name = ""
    sdk = ""

    def __init__(self, settings: dict, needed_by: str):
        key = api_key(self.name, settings, needed_by)
        self._key = key
        self.base_url = settings["base_url"][self.name]
        self.sdk_client = self._build(key, self.base_url, float(settings["timeout_s"]))

    def _build(self, key: str, base_url: str | None, timeout: float):
        raise NotImplementedError

    def send(self, request, timeout: float) -> tuple[str, int, int]:
        """Send one request; return (reply text, input tokens, output tokens), or raise
        :class:`EmptyReply` when the reply holds no text."""
        raise NotImplementedError

    def _errors(self):
        """(connection error types, status error types) of the SDK."""
        module = __import__(self.sdk)
        return (module.APIConnectionError, module.APITimeoutError), (module.APIStatusError,)

    def classify(self, err: BaseException) -> Failure:
        connection, status = self._errors()
        text = f"{type(err).__name__}: {err}"
        if err.__cause__ is not None:  # the SDKs wrap the transport error; its text says what happened
            text += f" ({type(err.__cause__).__name__}: {err.__cause__})"
        message = self._clean(text)
        if isinstance(err, status):
            code = getattr(err, "status_code", None) or 0
            headers = getattr(getattr(err, "response", None), "headers", None) or {}
            retryable = code in RETRY_STATUS or code >= 500
            return Failure(retryable, _retry_after(headers), message)
        if isinstance(err, connection):
            return Failure(True, None, message)
        return Failure(False, None, message)

    def _clean(self, text: str) -> str:
        """A short error message that can never carry the key."""
        text = " ".join(text.split())
        if len(self._key) >= 8:
            text = text.replace(self._key, "***")
        return text[:300]


def _retry_after(headers) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000)
        value = headers.get("retry-after")
    except AttributeError:
        return None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class AnthropicProvider(Provider):
    """Claude through the Messages API."""

    name = sdk = "anthropic"

    def _build(self, key, base_url, timeout):
        import anthropic

        return anthropic.Anthropic(api_key=key, base_url=base_url, max_retries=0, timeout=timeout)

    def send(self, request, timeout):
        extra = dict(request.extra)
        if request.temperature is not None:
            extra["temperature"] = request.temperature  # sent as a body field: not every model takes it
        reply = self.sdk_client.messages.create(
            model=request.model,
            max_tokens=request.max_tokens,
            system=request.system,
            messages=list(request.messages),
            extra_body=extra or None,
            timeout=timeout,
        )
        text = "".join(getattr(block, "text", "") for block in reply.content)
        usage = reply.usage
        tokens = int(usage.input_tokens or 0), int(usage.output_tokens or 0)
        reasoned = any(getattr(block, "type", "") == "thinking" for block in reply.content)
        return _text_or_empty(text, reply.stop_reason, reasoned, *tokens), *tokens


class _ChatCompletions(Provider):
    """Chat-completions APIs (GLM, OpenAI-compatible servers): the system prompt is a message."""

    sdk_fields: tuple[str, ...] = ()  # body fields the SDK takes as arguments; the others go as extra_body

    def send(self, request, timeout):
        messages = ([{"role": "system", "content": request.system}] if request.system else []) + list(request.messages)
        kwargs = dict(model=request.model, messages=messages, max_tokens=request.max_tokens, timeout=timeout)
        if request.temperature is not None:
            kwargs["temperature"] = request.temperature
        extra = dict(request.extra)
        kwargs.update({name: extra.pop(name) for name in self.sdk_fields if name in extra})
        if extra:
            kwargs["extra_body"] = extra
        reply = self.sdk_client.chat.completions.create(**kwargs)
        choice = reply.choices[0]
        usage = reply.usage
        tokens = int(getattr(usage, "prompt_tokens", 0) or 0), int(getattr(usage, "completion_tokens", 0) or 0)
        # GLM and vLLM's reasoning parsers return a thinking model's reasoning apart from its content.
        reasoned = bool(getattr(choice.message, "reasoning_content", None))
        return _text_or_empty(choice.message.content or "", choice.finish_reason, reasoned, *tokens), *tokens


class ZhipuProvider(_ChatCompletions):
    """GLM through the zhipuai SDK."""

    name = sdk = "zhipuai"
    sdk_fields = ("thinking",)  # GLM's switch for its reasoning: {"type": "enabled" | "disabled"}

    def _build(self, key, base_url, timeout):
        from zhipuai import ZhipuAI

        return ZhipuAI(api_key=key, base_url=base_url, max_retries=0, timeout=timeout)


class OpenAIProvider(_ChatCompletions):
    """Any OpenAI-compatible endpoint (a local vLLM server, a gateway) through the openai SDK."""

    name = sdk = "openai"

    def _build(self, key, base_url, timeout):
        import openai

        return openai.OpenAI(api_key=key, base_url=base_url, max_retries=0, timeout=timeout)


PROVIDERS = {"anthropic": AnthropicProvider, "zhipuai": ZhipuProvider, "openai": OpenAIProvider}


def make_provider(name: str, settings: dict, needed_by: str) -> Provider:
    return PROVIDERS[name](settings, needed_by)
