"""The audiobook agent and the chat clients it runs on.

:mod:`.episode` is the agent itself, framework-free: one create → rewrite episode through any
:class:`~.episode.ChatClient`, judged on the final script. The clients sit beside it:
:mod:`.hf_chat` (a local Hugging Face policy, decoding with :mod:`.decoding`), :mod:`.vllm_chat`
(vLLM offline batches) and :mod:`.openai_chat` (any OpenAI-compatible endpoint). :mod:`.lightning`
wraps the episode as Agent Lightning's ``@agl.rollout`` for the verl backend. Training and
generation import down into these modules; nothing here imports them.
"""
