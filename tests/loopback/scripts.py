"""Tiny excerpts and reference scripts for the loopback tests, and a labeler reply built from them."""

from __future__ import annotations

import json
import re

from audiobook_rl.corpus import Slice
from audiobook_rl.labeling.rules import RuleLabeler

SOURCE = "林青推门进来，冷笑道：“你还敢来？”\n那汉子吓得后退一步，颤声道：“小人……小人只是路过。”"
REFERENCE = [
    {"speaker": "旁白", "content": "林青推门进来，冷笑道：", "tone": "平静", "intensity": 1, "delay": 300},
    {"speaker": "林青", "content": "你还敢来？", "tone": "轻蔑", "intensity": 3, "delay": 800},
    {"speaker": "旁白", "content": "那汉子吓得后退一步，颤声道：", "tone": "紧张", "intensity": 2, "delay": 300},
    {"speaker": "那汉子", "content": "小人……小人只是路过。", "tone": "恐惧", "intensity": 4, "delay": 1000},
]
REFERENCE_JSON = json.dumps(REFERENCE, ensure_ascii=False)
EXCERPT = re.compile(r"<excerpt>\n(.*)\n</excerpt>", re.S)


def fast_client_settings(url: str, cache_dir, **overrides) -> dict:
    """`llm` settings against a loopback Anthropic server, with tiny backoffs so retries take milliseconds."""
    return {
        "base_url": {"anthropic": url},
        "cache_dir": str(cache_dir),
        "backoff_s": 0.001,
        "backoff_max_s": 0.01,
        "rate_limit_per_minute": {"anthropic": 0},
        **overrides,
    }


def slices(n: int) -> list[Slice]:
    """``n`` distinct small slices (distinct texts, so distinct requests)."""
    out = []
    for i in range(n):
        text = f"第{i + 1}回。" + SOURCE
        out.append(Slice(f"s{i:03d}", text, 0, len(text)))
    return out


def excerpt_of(body: dict) -> str:
    """The excerpt of a labeling request (first user message of an Anthropic Messages body)."""
    return EXCERPT.search(body["messages"][0]["content"]).group(1)


def valid_label_reply(body: dict) -> str:
    """A valid reference script for the excerpt in ``body``, as Claude would answer it."""
    text = excerpt_of(body)
    [script] = RuleLabeler().label([Slice("x", text, 0, len(text))])
    return json.dumps([s.to_dict() for s in script], ensure_ascii=False)


def judge_reply(score: float = 0.8, **overrides) -> str:
    """A judge answer with every dimension at ``score`` (overrides per dimension)."""
    dims = ("format", "completeness", "speaker", "emotion", "segmentation")
    return json.dumps(
        {d: {"score": overrides.get(d, score), "reason": f"{d} looks fine"} for d in dims}, ensure_ascii=False
    )
