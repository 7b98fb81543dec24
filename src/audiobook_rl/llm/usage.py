"""Token and cost accounting: per call in the log, totals per stage in a small JSON file."""

from __future__ import annotations

import logging
import threading

log = logging.getLogger(__name__)


class Usage:
    """Thread-safe totals of the calls a stage made (sent and served from the cache)."""

    def __init__(self, stage: str, prices: dict | None = None):
        self.stage = stage
        self.prices = prices or {}
        self._lock = threading.Lock()
        self.models: dict[tuple[str, str], dict] = {}

    def _row(self, provider: str, model: str) -> dict:
        return self.models.setdefault(
            (provider, model),
            {
                "provider": provider,
                "model": model,
                "requests_sent": 0,
                "cache_hits": 0,
                "retries": 0,
                "failures": 0,
                "input_tokens": 0,
                "output_tokens": 0,
            },
        )

    def call(self, provider: str, model: str, item: str, input_tokens: int, output_tokens: int, cached: bool) -> None:
        with self._lock:
            row = self._row(provider, model)
            if cached:
                row["cache_hits"] += 1
            else:
                row["requests_sent"] += 1
                row["input_tokens"] += input_tokens
                row["output_tokens"] += output_tokens
        if not cached:
            cost = self.cost(model, input_tokens, output_tokens)
            log.info(
                "%s: %s %s, %d tokens in, %d out%s",
                item,
                provider,
                model,
                input_tokens,
                output_tokens,
                "" if cost is None else f", ${cost:.4f}",
            )

    def retry(self, provider: str, model: str) -> None:
        with self._lock:
            self._row(provider, model)["retries"] += 1

    def failure(self, provider: str, model: str) -> None:
        with self._lock:
            self._row(provider, model)["failures"] += 1

    def cost(self, model: str, input_tokens: int, output_tokens: int) -> float | None:
        price = self.prices.get(model)
        if not price:
            return None
        return (input_tokens * price["input"] + output_tokens * price["output"]) / 1e6

    def summary(self) -> dict:
        """Totals for the stage; ``cost_usd`` is None where ``llm.prices_per_mtok`` lacks the model."""
        with self._lock:
            rows = [dict(r) for r in self.models.values()]
        for row in rows:
            row["cost_usd"] = self.cost(row["model"], row["input_tokens"], row["output_tokens"])
        costs = [r["cost_usd"] for r in rows]
        total = {
            key: sum(r[key] for r in rows)
            for key in ("requests_sent", "cache_hits", "retries", "failures", "input_tokens", "output_tokens")
        }
        total["cost_usd"] = None if any(c is None for c in costs) else round(sum(costs), 6)
        return {"stage": self.stage, **total, "by_model": rows}

    def log_summary(self) -> None:
        s = self.summary()
        if not s["by_model"]:
            return
        log.info(
            "%s: %d requests sent, %d served from the cache, %d retries, %d failures; %d tokens in, %d out; cost %s",
            s["stage"],
            s["requests_sent"],
            s["cache_hits"],
            s["retries"],
            s["failures"],
            s["input_tokens"],
            s["output_tokens"],
            "unknown (no price in llm.prices_per_mtok)" if s["cost_usd"] is None else f"${s['cost_usd']:.4f}",
        )
