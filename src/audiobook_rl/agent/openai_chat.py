"""The agent's chat client over any OpenAI-compatible endpoint: a vLLM server, or Agent Lightning's
LLM proxy in front of verl's vLLM servers during training (:mod:`.lightning`)."""

from __future__ import annotations

from .episode import Reply


class OpenAIChat:
    """The agent's :class:`~.episode.ChatClient` over an OpenAI-compatible endpoint."""

    def __init__(self, endpoint: str, model: str, api_key: str | None = None, timeout: float = 600.0):
        from openai import OpenAI

        self.model = model
        self.client = OpenAI(base_url=endpoint, api_key=api_key or "dummy", timeout=timeout, max_retries=2)

    def chat(self, messages: list[dict], *, temperature: float, max_tokens: int, top_p: float = 1.0,
             top_k: int = 0) -> Reply:
        # top_k is not an OpenAI parameter: vLLM's server reads it from the request body.
        response = self.client.chat.completions.create(
            model=self.model, messages=messages, temperature=temperature, max_tokens=max_tokens, top_p=top_p,
            **({"extra_body": {"top_k": top_k}} if top_k > 0 else {}),
        )
        choice = response.choices[0]
        # vLLM reports token ids when asked (Agent Lightning's proxy asks); other servers do not.
        prompt_ids = getattr(response, "prompt_token_ids", None) or []
        response_ids = getattr(choice, "token_ids", None) or []
        return Reply(choice.message.content or "", list(prompt_ids), list(response_ids))
