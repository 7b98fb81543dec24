"""A byte-level BPE tokenizer trained offline on the corpus, prompts and script vocabulary.

It uses Qwen2's exact normalizer and pre-tokenizer: ``AutoTokenizer`` may load the saved files as
``Qwen2Tokenizer``, which replaces both with Qwen2's, so only this choice keeps ids identical
whichever class reads the directory. Byte-level means there is no unknown token: any text
round-trips.
"""

from __future__ import annotations

from typing import Iterable

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

# Qwen2's pre-tokenization pattern (transformers/models/qwen2/tokenization_qwen2.py).
PRETOKENIZE_REGEX = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
PAD, IM_START, IM_END = "<|endoftext|>", "<|im_start|>", "<|im_end|>"
SPECIAL_TOKENS = [PAD, IM_START, IM_END]
# ChatML, as Qwen2 instruct models use it.
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def train_tokenizer(texts: Iterable[str], vocab_size: int):
    """Train the BPE on ``texts``; return a ``PreTrainedTokenizerFast`` with the chat template."""
    from transformers import PreTrainedTokenizerFast

    tk = Tokenizer(models.BPE())
    tk.normalizer = normalizers.NFC()
    tk.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tk.train_from_iterator(list(texts), trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tk,
        eos_token=IM_END,
        pad_token=PAD,
        bos_token=None,
        padding_side="left",
        chat_template=CHAT_TEMPLATE,
    )


def prompt_ids(tokenizer, messages: list[dict]) -> list[int]:
    """Token ids of a conversation up to the assistant's turn.

    Renders the template to text, then tokenizes: ``apply_chat_template(tokenize=True)`` returns a
    list in transformers 4.x but a dict in 5.x.
    """
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def response_ids(tokenizer, text: str) -> list[int]:
    """Token ids of an assistant reply, ending with the end-of-turn token the model must learn."""
    return tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
