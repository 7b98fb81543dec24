"""LLM-as-judge: GLM-4.7 through the zhipuai SDK, or any OpenAI-compatible endpoint (a local vLLM).

The judge is shown the §4 rubric (``judge.prompt``, a rule input), the source, the reference and
the candidate, and answers a JSON object with a score in [0, 1] and a reason per dimension. The
overall score is computed here from the configured weights, never taken from the model.

Prompt-injection defence: the source, reference, aliases and candidate enter the prompt only as
JSON strings inside ``<source>``/``<reference>``/``<aliases>``/``<candidate>`` tags, with ``<`` and
``>`` escaped (``\\u003c``, ``\\u003e``) so the data can never close its tag or open a new one; the
system prompt says the tagged data are not instructions and that instruction-like text in a
candidate is invented content (it costs completeness). The model still reads the text, so the
defence is best effort: the rubric judge, which interprets nothing, is the control.

A reply that is not such an object, lacks a dimension or has a score outside [0, 1] is shown its
problem and asked again, up to ``judge.max_attempts`` replies; then — as after a request that still
fails after the client layer's retries, or an empty reply (a thinking model whose reasoning took
``judge.max_tokens``) — the case is recorded as a judge failure (``overall`` None, ``error`` set
with the reason), never as a silent 0. The GLM judge asks GLM not to think (``thinking`` disabled).
"""

from __future__ import annotations

import json
import logging
import math
import time

from .. import backends, llm
from ..errors import UserError
from ..paths import repo_file
from ..prompts import load_prompt
from ..script import TONES, Segment
from . import DIMENSIONS, Verdict, case_args, failure, weighted

log = logging.getLogger(__name__)

# Request fields per provider. GLM-4.7 thinks before it answers unless told not to, and its reasoning
# counts against judge.max_tokens: a long one leaves an empty reply, which is a judge failure.
REQUEST_EXTRA = {"zhipuai": {"thinking": {"type": "disabled"}}}

RETRY = "你的回答无法使用：{problems}。请只输出一个 JSON 对象，包含五个维度，每个维度的 score 是 0 到 1 之间的数。"


def _data(value) -> str:
    """JSON text of ``value`` that cannot close or open a tag of the prompt."""
    return json.dumps(value, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e")


def parse_verdict(raw: str) -> tuple[dict[str, float], dict[str, str], str]:
    """Scores and reasons from a judge reply, or ({}, {}, the problems)."""
    obj = None
    decoder = json.JSONDecoder()
    start = raw.find("{")
    while start != -1 and obj is None:
        try:
            value, _ = decoder.raw_decode(raw, start)
            if isinstance(value, dict):
                obj = value
        except ValueError:
            pass
        start = raw.find("{", start + 1) if obj is None else -1
    if obj is None:
        return {}, {}, "no JSON object found"
    scores, reasons, problems = {}, {}, []
    for dim in DIMENSIONS:
        entry = obj.get(dim)
        if not isinstance(entry, dict) or "score" not in entry:
            problems.append(f"'{dim}' lacks a score")
            continue
        score = entry["score"]
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
            problems.append(f"'{dim}' score {score!r} is not a number")
        elif not 0 <= score <= 1:
            problems.append(f"'{dim}' score {score!r} is outside [0, 1]")
        else:
            scores[dim] = float(score)
            reasons[dim] = str(entry.get("reason", ""))[:500]
    if problems:
        return {}, {}, "; ".join(problems)
    return scores, reasons, ""


def judge(settings: dict, llm_settings: dict | None = None) -> "LLMJudge":
    """The ``glm`` and ``openai`` backends: ``settings`` is the ``judge`` (or ``train.reward``) section."""
    return LLMJudge(settings, llm_settings)


class LLMJudge:
    """An LLM as judge, through the provider of its backend (``glm``: zhipuai, ``openai``: openai)."""

    def __init__(self, settings: dict, llm_settings: dict | None = None):
        self.backend = settings["backend"]
        self.provider = backends.get("judge", self.backend).provider
        self.model = settings["model"]
        if not self.model:
            raise UserError(f"config key 'judge.model' is empty; name the model the {self.backend} judge should call.")
        self.weights = settings["weights"]
        self.prompt = load_prompt(repo_file(settings["prompt"]))
        self.prompt_hash = self.prompt.sha256
        self.max_tokens = settings["max_tokens"]
        self.temperature = settings["temperature"]
        self.max_attempts = settings["max_attempts"]
        session = llm.current() if llm_settings is None else llm.session_for(llm_settings, "judge")
        self.client = session.client(self.provider, needed_by=f"judge.backend '{self.backend}'")

    def score(self, source: str, reference, candidate, aliases: dict[str, str] | None = None, item: str = "",
              deadline: float | None = None) -> Verdict:
        """Score one case; a judge failure is returned as a Verdict with ``overall`` None and ``error``.

        ``deadline`` (a :func:`time.monotonic` time) bounds the whole scoring, every reply attempt and
        every retry of the client layer: at it the case is a judge failure."""
        if isinstance(reference, str):
            reference = json.loads(reference)
        reference = [s.to_dict() if isinstance(s, Segment) else s for s in reference]
        if not isinstance(candidate, str):
            candidate = json.dumps(
                [s.to_dict() if isinstance(s, Segment) else s for s in candidate], ensure_ascii=False
            )
        system, user = (
            m["content"]
            for m in self.prompt.messages(
                tones=" ".join(TONES),
                source=_data(source),
                reference=_data(reference),
                aliases=_data(aliases or {}),
                candidate=_data(candidate),
            )
        )
        messages = [{"role": "user", "content": user}]
        problems = ""
        try:
            for attempt in range(1, self.max_attempts + 1):
                if deadline is not None and time.monotonic() >= deadline:
                    return self._failed(item, f"no valid judge reply in {attempt - 1} tries before the deadline: {problems}")
                reply = self.client.complete(
                    llm.Request(
                        model=self.model,
                        system=system,
                        messages=tuple(messages),
                        max_tokens=self.max_tokens,
                        temperature=self.temperature,
                        extra=REQUEST_EXTRA.get(self.provider, {}),
                        item=item or "judge case",
                    ),
                    deadline=deadline,
                )
                scores, reasons, problems = parse_verdict(reply.text)
                if not problems:
                    return Verdict(round(weighted(scores, self.weights), 6), scores, reasons, self.backend, self.model)
                messages += [
                    {"role": "assistant", "content": reply.text},
                    {"role": "user", "content": RETRY.format(problems=problems)},
                ]
            return self._failed(item, f"no valid judge reply in {self.max_attempts} tries: {problems}")
        except llm.LLMError as err:
            return self._failed(item, str(err))

    def _failed(self, item: str, error: str) -> Verdict:
        log.warning("%s: judge failure: %s", item or "judge case", error)
        return failure(self.backend, self.model, error)

    def score_many(self, cases) -> list[Verdict]:
        """Score cases concurrently (``llm.concurrency``); order kept, failures recorded per case."""

        def one(pair):
            i, case = pair
            item = case.get("id", f"case {i}") if isinstance(case, dict) else f"case {i}"
            return self.score(*case_args(case), item=str(item))

        return self.client.map(one, list(enumerate(cases)), "judged")
