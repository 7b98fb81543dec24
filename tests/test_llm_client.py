"""The LLM client layer against a loopback server speaking the Anthropic Messages API, through
the real anthropic SDK: cache, retries, timeouts, concurrency, rate limit, keys and usage."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from loopback import Loopback, Reply, anthropic_message
from loopback.scripts import fast_client_settings

from audiobook_rl import llm
from audiobook_rl.errors import UserError

KEY = "sk-loopback-SECRET-0123456789"


def settings(server: Loopback, tmp_path: Path, **overrides) -> dict:
    """Tiny backoffs so that retry tests take milliseconds."""
    return fast_client_settings(server.url, tmp_path / "cache", **{"timeout_s": 5, "max_tries": 4, **overrides})


def request(text: str = "hello", **fields) -> llm.Request:
    return llm.Request(
        model="claude-test",
        system="be brief",
        messages=({"role": "user", "content": text},),
        max_tokens=64,
        temperature=0.0,
        item=fields.pop("item", "item-1"),
        **fields,
    )


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


def answer(text: str = "ok") -> Reply:
    return Reply(body=anthropic_message(text, input_tokens=120, output_tokens=30))


def test_happy_path_returns_the_reply_and_counts_tokens(tmp_path):
    with Loopback(lambda kind, body, n: answer("你好")) as server:
        with llm.session(settings(server, tmp_path), stage="t") as s:
            reply = s.client("anthropic", "test").complete(request())
    assert (reply.text, reply.input_tokens, reply.output_tokens, reply.cached) == ("你好", 120, 30, False)
    sent = server.requests[0]
    assert sent["path"] == "/v1/messages"
    assert KEY in sent["headers"].get("x-api-key", "") + sent["headers"].get("authorization", "")
    assert sent["body"]["system"] == "be brief" and sent["body"]["temperature"] == 0.0
    summary = s.usage.summary()
    assert (summary["requests_sent"], summary["input_tokens"], summary["output_tokens"]) == (1, 120, 30)


def test_429_waits_for_retry_after_then_succeeds(tmp_path):
    def respond(kind, body, n):
        return Reply(429, headers={"retry-after": "0.4"}) if n == 1 else answer()

    with Loopback(respond) as server:
        with llm.session(settings(server, tmp_path)) as s:
            started = time.monotonic()
            reply = s.client("anthropic", "test").complete(request())
            elapsed = time.monotonic() - started
    assert reply.text == "ok" and server.count == 2
    assert elapsed >= 0.4  # the server's Retry-After, not the 1 ms backoff
    assert s.usage.summary()["retries"] == 1


def test_500_then_success(tmp_path):
    with Loopback(lambda kind, body, n: Reply(500) if n == 1 else answer()) as server:
        with llm.session(settings(server, tmp_path)) as s:
            assert s.client("anthropic", "test").complete(request()).text == "ok"
    assert server.count == 2


def test_connection_error_is_retried(tmp_path):
    # A port with nothing listening: every try is a connection error, and the failure names the item.
    with Loopback(lambda kind, body, n: answer()) as server:
        dead = server.url
    with llm.session(settings(server, tmp_path, base_url={"anthropic": dead}, max_tries=3)) as s:
        with pytest.raises(llm.LLMError, match=r"item-1: anthropic model claude-test failed after 3 tries"):
            s.client("anthropic", "test").complete(request())
    assert s.usage.summary()["retries"] == 2


def test_hanging_request_hits_the_timeout_and_fails_naming_the_item(tmp_path):
    with Loopback(lambda kind, body, n: Reply(hang=True)) as server:
        with llm.session(settings(server, tmp_path, timeout_s=0.3, max_tries=2)) as s:
            started = time.monotonic()
            with pytest.raises(llm.LLMError, match=r"slice s007: .* failed after 2 tries: .*Timeout"):
                s.client("anthropic", "test").complete(request(item="slice s007"))
            elapsed = time.monotonic() - started
    assert server.count == 2
    assert 0.6 <= elapsed < 3


def test_client_errors_are_not_retried(tmp_path):
    with Loopback(lambda kind, body, n: Reply(400)) as server:
        with llm.session(settings(server, tmp_path)) as s:
            with pytest.raises(llm.LLMError, match="not retryable"):
                s.client("anthropic", "test").complete(request())
    assert server.count == 1


def test_same_request_is_served_from_the_cache_and_sampling_settings_are_part_of_the_key(tmp_path):
    with Loopback(lambda kind, body, n: answer(f"reply {n}")) as server:
        with llm.session(settings(server, tmp_path)) as s:
            client = s.client("anthropic", "test")
            first = client.complete(request())
            again = client.complete(request(item="another name, same request"))
            hotter = client.complete(llm.Request(**{**request().__dict__, "temperature": 0.7}))
    assert first.text == again.text == "reply 1" and again.cached
    assert hotter.text == "reply 2"
    assert server.count == 2
    files = list((tmp_path / "cache" / "anthropic").rglob("*.json"))
    assert len(files) == 2
    stored = json.loads(files[0].read_text(encoding="utf-8"))
    assert {"provider", "request", "reply"} <= set(stored)


def test_concurrency_never_exceeds_the_bound(tmp_path):
    with Loopback(lambda kind, body, n: Reply(body=anthropic_message("ok"), delay=0.05)) as server:
        with llm.session(settings(server, tmp_path, concurrency=4)) as s:
            client = s.client("anthropic", "test")
            replies = client.map(lambda i: client.complete(request(f"q{i}")).text, list(range(24)), "asked")
    assert replies == ["ok"] * 24
    assert server.max_in_flight == 4  # the bound is reached and never exceeded


def test_map_keeps_order_stops_on_the_first_failure_and_names_it(tmp_path):
    def respond(kind, body, n):
        return Reply(400) if body["messages"][0]["content"] == "q3" else answer(body["messages"][0]["content"])

    with Loopback(respond) as server:
        with llm.session(settings(server, tmp_path, concurrency=1)) as s:
            client = s.client("anthropic", "test")
            with pytest.raises(llm.LLMError, match="item q3"):
                client.map(lambda i: client.complete(request(f"q{i}", item=f"item q{i}")), list(range(8)), "asked")
    assert server.count == 4  # q0..q3; the rest were never started


def test_rate_limit_spaces_request_starts(tmp_path):
    with Loopback(lambda kind, body, n: answer()) as server:
        with llm.session(settings(server, tmp_path, concurrency=4, rate_limit_per_minute={"anthropic": 600})) as s:
            client = s.client("anthropic", "test")
            started = time.monotonic()
            client.map(lambda i: client.complete(request(f"r{i}")), list(range(5)), "asked")
            elapsed = time.monotonic() - started
    assert elapsed >= 0.4  # 600/min = one start per 0.1 s; 5 starts span at least 0.4 s


SENDER = """
import json, sys
from audiobook_rl import llm
settings = json.loads(sys.argv[1])
with llm.session(settings) as s:
    client = s.client("anthropic", "test")
    asks = [llm.Request(model="m", system="", messages=({"role": "user", "content": f"{sys.argv[2]}-{i}"},), max_tokens=8)
            for i in range(10)]
    client.map(client.complete, asks, "asked")
"""


def test_the_rate_limit_holds_across_processes(tmp_path):
    # Three jobs (parallel judge jobs, training's runner processes) against one provider: one limit.
    with Loopback(lambda kind, body, n: answer()) as server:
        config = settings(server, tmp_path, concurrency=4, rate_limit_per_minute={"anthropic": 1200})
        jobs = [
            subprocess.Popen([sys.executable, "-c", SENDER, json.dumps(config), f"job{j}"], stderr=subprocess.PIPE, text=True)
            for j in range(3)
        ]
        assert [job.wait(timeout=60) for job in jobs] == [0, 0, 0], [job.stderr.read() for job in jobs]
        arrivals = sorted(r["time"] for r in server.requests)
    assert len(arrivals) == 30
    # 1200/min = one start per 50 ms for all three together (each alone would have sent its 10 in 0.45 s)
    assert arrivals[-1] - arrivals[0] >= 29 * 0.05 * 0.9
    busiest = max(sum(1 for t in arrivals if start <= t < start + 0.5) for start in arrivals)
    assert busiest <= 0.5 / 0.05 + 2


def test_missing_key_fails_before_any_request(tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with Loopback(lambda kind, body, n: answer()) as server:
        with llm.session(settings(server, tmp_path)) as s:
            with pytest.raises(UserError, match="ANTHROPIC_API_KEY"):
                s.client("anthropic", "label.backend 'claude'")
    assert server.count == 0


def test_key_variable_name_is_configurable(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_GATEWAY_KEY", "gw-key-0123456789")
    with Loopback(lambda kind, body, n: answer()) as server:
        with llm.session(settings(server, tmp_path, key_env={"anthropic": "MY_GATEWAY_KEY"})) as s:
            s.client("anthropic", "test").complete(request())
    headers = server.requests[0]["headers"]
    assert "gw-key-0123456789" in headers.get("x-api-key", "") + headers.get("authorization", "")


def test_usage_reports_cost_from_configured_prices(tmp_path):
    prices = {"claude-test": {"input": 3.0, "output": 15.0}}
    with Loopback(lambda kind, body, n: answer()) as server:
        with llm.session(settings(server, tmp_path, prices_per_mtok=prices), stage="label_slices") as s:
            client = s.client("anthropic", "test")
            client.complete(request("a"))
            client.complete(request("a"))  # cached: not paid again
    summary = s.usage.summary()
    assert summary["stage"] == "label_slices"
    assert (summary["requests_sent"], summary["cache_hits"]) == (1, 1)
    assert summary["cost_usd"] == pytest.approx((120 * 3.0 + 30 * 15.0) / 1e6)


def test_error_messages_never_carry_the_key(tmp_path):
    # A misbehaving gateway that echoes the key in its error body: the failure message masks it.
    with Loopback(lambda kind, body, n: Reply(400, body={"error": {"message": f"bad key {KEY}"}})) as server:
        with llm.session(settings(server, tmp_path)) as s:
            with pytest.raises(llm.LLMError) as err:
                s.client("anthropic", "test").complete(request())
    assert KEY not in str(err.value) and "***" in str(err.value)


def test_sessions_do_not_leak_between_threads_of_one_stage(tmp_path):
    # Clients built in worker threads of a session share its usage (one JSON per stage).
    with Loopback(lambda kind, body, n: answer()) as server:
        with llm.session(settings(server, tmp_path)) as s:
            threads = [
                threading.Thread(target=lambda i=i: s.client("anthropic", "t").complete(request(f"t{i}")))
                for i in range(3)
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    assert s.usage.summary()["requests_sent"] == 3


def test_progress_bar_on_a_terminal_and_lines_in_the_log(tmp_path, caplog):
    import io
    import logging

    from audiobook_rl.llm.progress import Bar

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    screen = Terminal()
    bar = Bar(4, "labeled", stream=screen)
    for _ in range(4):
        bar.step()
    bar.close()
    assert "labeled [" in screen.getvalue() and "4/4" in screen.getvalue()
    assert Bar(4, "x", stream=io.StringIO()).enabled is False  # a log file gets no bar

    from audiobook_rl.stage import Progress

    with Loopback(lambda kind, body, n: answer()) as server:
        with llm.session(settings(server, tmp_path)) as s:
            client = s.client("anthropic", "test")
            logger = logging.getLogger("audiobook_rl")
            logger.addHandler(caplog.handler)
            caplog.set_level(logging.INFO, logger="audiobook_rl")
            try:
                client.map(lambda i: client.complete(request(f"p{i}")), list(range(4)), "asked", Progress(4, "asked"))
            finally:
                logger.removeHandler(caplog.handler)
    assert "asked: 4/4 (100%)" in caplog.text
    assert "item-1: anthropic claude-test, 120 tokens in, 30 out" in caplog.text  # per-call accounting


def test_a_retry_that_would_start_after_the_deadline_is_not_waited_for(tmp_path):
    # The server asks for 600 s; the caller (a rollout's judge) has one second left.
    with Loopback(lambda kind, body, n: Reply(429, headers={"retry-after": "600"})) as server:
        with llm.session(settings(server, tmp_path, timeout_s=120, max_tries=6)) as s:
            started = time.monotonic()
            with pytest.raises(llm.LLMError, match=r"item-1: anthropic model claude-test gave up after 1 try: .*deadline"):
                s.client("anthropic", "test").complete(request(), deadline=started + 1.0)
            elapsed = time.monotonic() - started
    assert server.count == 1 and elapsed < 1.0


def test_a_request_in_flight_at_the_deadline_times_out_then(tmp_path):
    with Loopback(lambda kind, body, n: Reply(hang=True)) as server:
        with llm.session(settings(server, tmp_path, timeout_s=120, max_tries=6)) as s:
            started = time.monotonic()
            with pytest.raises(llm.LLMError, match=r"item-1: .*deadline"):
                s.client("anthropic", "test").complete(request(), deadline=started + 1.0)
            elapsed = time.monotonic() - started
    assert 0.9 <= elapsed < 2.5


def test_a_rate_limit_slot_after_the_deadline_is_not_waited_for(tmp_path):
    with Loopback(lambda kind, body, n: answer()) as server:
        with llm.session(settings(server, tmp_path, rate_limit_per_minute={"anthropic": 6})) as s:
            client = s.client("anthropic", "test")
            client.complete(request("first"))  # takes this minute's slot; the next starts 10 s later
            started = time.monotonic()
            with pytest.raises(llm.LLMError, match=r"item-1: .*rate limit.*deadline"):
                client.complete(request("second"), deadline=started + 1.0)
            assert time.monotonic() - started < 1.0
    assert server.count == 1
