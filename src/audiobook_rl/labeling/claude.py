"""The Claude labeler: reference scripts from Claude through the Messages API (the seed's labels).

Each slice is sent with the prompt ``label.prompt`` (a rule input) and, as ``{{before}}``, up to
``label.context_chars`` characters of the novel just before it (from the start of a paragraph): the
text that names the people an excerpt calls 那汉子 or 妇人, and says who spoke last. A reply is a
valid reference only if it parses with the shared schema without errors and its contents cover the
excerpt (text F1 of at least ``label.min_coverage``); otherwise the problems are shown to the model
in a follow-up turn, up to ``label.max_attempts`` replies in all. A slice that never validates fails
the stage with its id: a bad reference is never written silently. Every reply goes through the LLM client layer, so it
is cached: a resumed or repeated run pays only for slices it has not seen.
"""

from __future__ import annotations

import logging
from difflib import SequenceMatcher

from .. import backends, llm
from ..corpus import Slice, text_before
from ..errors import UserError
from ..paths import repo_file
from ..prompts import load_prompt
from ..script import TONES, Segment, joined_content, parse_script, reading_text

log = logging.getLogger(__name__)


class InvalidReference(UserError):
    """A slice whose replies never made a valid reference script."""


RETRY = "这个回答不能用作参考脚本：{problems}。请改正这些问题，重新输出完整的 JSON 数组（只输出数组本身）。"


def text_f1(output: str, target: str) -> float:
    """How closely the characters of ``output`` follow ``target`` (letters, digits, CJK; 1 = same)."""
    a = "".join(ch for ch in output if ch.isalnum())
    b = "".join(ch for ch in target if ch.isalnum())
    if not a or not b:
        return float(a == b)
    hit = sum(m.size for m in SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks())
    return 2 * hit / (len(a) + len(b))


def labeler(settings: dict, lexicon=None) -> "ClaudeLabeler":
    """The ``claude`` backend of label_slices: ``settings`` is the ``label`` section; the lexicon's
    text is the novel the slices were cut from."""
    return ClaudeLabeler(settings, novel=lexicon.text if lexicon is not None else "")


class ClaudeLabeler:
    """``label`` backend ``claude``; ``settings`` is the ``label`` config section."""

    backend = "claude"

    def __init__(self, settings: dict, session=None, novel: str = ""):
        self.model = settings["model"]
        if not self.model:
            raise UserError("config key 'label.model' is empty; set the Claude model id (see config/seed.yaml).")
        self.prompt = load_prompt(repo_file(settings["prompt"]))
        self.prompt_hash = self.prompt.sha256
        self.max_tokens = settings["max_tokens"]
        self.temperature = settings["temperature"]
        self.max_attempts = settings["max_attempts"]
        self.min_coverage = settings["min_coverage"]
        self.context_chars = settings["context_chars"]
        self.novel = novel
        if self.context_chars and not self.prompt.uses("before"):
            log.warning(
                "%s has no {{before}} placeholder: Claude sees each excerpt without the %d characters before it "
                "(label.context_chars)", self.prompt.path, self.context_chars,
            )
        provider = backends.get("label", self.backend).provider
        self.client = (session or llm.current()).client(provider, needed_by="label.backend 'claude'")

    def label(self, slices: list[Slice], progress=None) -> list[list[Segment]]:
        """One reference script per slice, in order; slices are labeled concurrently."""
        return self.client.map(self._label_one, slices, "labeled", progress)

    def try_label(self, slices: list[Slice], progress=None) -> list[list[Segment] | None]:
        """As :meth:`label`, but a slice that never gets a valid reply is None (and logged) instead
        of stopping the rest: for measuring the labeler, where one bad excerpt is a data point."""

        def one(item: Slice) -> list[Segment] | None:
            try:
                return self._label_one(item)
            except InvalidReference as error:  # a failing API (LLMError) still stops everything
                log.warning("%s", error)
                return None

        return self.client.map(one, slices, "labeled", progress)

    def _label_one(self, item: Slice) -> list[Segment]:
        system, user = (
            m["content"] for m in self.prompt.messages(text=item.text, before=self.before(item), tones=" ".join(TONES))
        )
        messages: list[dict] = [{"role": "user", "content": user}]
        problems = ""
        for attempt in range(1, self.max_attempts + 1):
            request = llm.Request(
                model=self.model,
                system=system,
                messages=tuple(messages),
                max_tokens=self.max_tokens,
                temperature=self.temperature,
                item=f"slice {item.id}",
            )
            reply = self.client.complete(request)
            script, problems = self.check(item.text, reply.text)
            if script is not None:
                return script
            log.warning(
                "slice %s: reply %d/%d is not a valid reference: %s", item.id, attempt, self.max_attempts, problems
            )
            messages += [
                {"role": "assistant", "content": reply.text},
                {"role": "user", "content": RETRY.format(problems=problems)},
            ]
        raise InvalidReference(
            f"slice {item.id}: {self.model} gave no valid reference script in {self.max_attempts} replies "
            f"(last problem: {problems}); raise label.max_attempts or check config/prompts/label.md."
        )

    def before(self, item: Slice) -> str:
        """The novel's text just before ``item``: ``context_chars`` characters back, from the first
        paragraph that starts in them ("" without a novel, or for a slice that is not cut from it)."""
        return text_before(self.novel, item.start, item.text, self.context_chars)

    def check(self, source: str, raw: str) -> tuple[list[Segment] | None, str]:
        """The script if ``raw`` is a usable reference for ``source``, else (None, the problems)."""
        parsed = parse_script(raw)
        if not parsed.ok:
            return None, "; ".join(parsed.errors[:8]) or "no JSON array"
        f1 = text_f1(joined_content(parsed.segments), reading_text(source))
        if f1 < self.min_coverage:
            return None, (
                f"the contents joined together differ from the excerpt (character F1 {f1:.2f}, "
                f"need {self.min_coverage:.2f}): copy every word of the excerpt, in order, and add nothing"
            )
        return parsed.segments, ""
