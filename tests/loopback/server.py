"""A threaded HTTP server on 127.0.0.1 speaking the Anthropic Messages API (``POST /v1/messages``)
and the chat-completions API of OpenAI-compatible servers and GLM (``POST .../chat/completions``).

What it answers is decided by a function ``responder(kind, body, n) -> Reply`` (``kind`` is
``"anthropic"`` or ``"chat"``, ``n`` counts requests from 1); the server records every request
(path, headers, body, arrival time) and the most requests it ever had in flight at once.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable


@dataclass
class Reply:
    status: int = 200
    body: dict | str | None = None
    headers: dict = field(default_factory=dict)
    delay: float = 0.0  # seconds before answering (injected latency)
    hang: bool = False  # never answer (until the server stops): the client must time out


def anthropic_message(text: str, input_tokens: int = 100, output_tokens: int = 50) -> dict:
    return {
        "id": "msg_loopback",
        "type": "message",
        "role": "assistant",
        "model": "loopback",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }


def chat_completion(text: str, prompt_tokens: int = 100, completion_tokens: int = 50, *, reasoning: str | None = None,
                    finish_reason: str = "stop") -> dict:
    """A chat completion; ``reasoning`` is a thinking model's reasoning (GLM's ``reasoning_content``)."""
    message = {"role": "assistant", "content": text, **({"reasoning_content": reasoning} if reasoning is not None else {})}
    return {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "loopback",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _error_body(status: int) -> dict:
    return {"type": "error", "error": {"type": "loopback_error", "message": f"injected status {status}"}}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the listen backlog: many clients connect at once


class Loopback:
    """``with Loopback(responder) as server:`` → ``server.url`` (no path) is the base URL."""

    def __init__(self, responder: Callable[[str, dict, int], Reply]):
        self.responder = responder
        self.requests: list[dict] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server = _Server(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def _handler(self):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            wbufsize = -1  # headers and body leave in one write (flushed by the base class)

            def setup(self):
                super().setup()
                # Without this, Nagle's algorithm and delayed ACKs add ~40 ms to every keep-alive request.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, *args):  # keep test output clean
                pass

            def do_GET(self):
                # Counters for a client in another process (the benchmarks run the server apart, so
                # that it does not share the client's interpreter lock).
                with outer._lock:
                    data = json.dumps({"count": len(outer.requests), "max_in_flight": outer.max_in_flight}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                kind = "anthropic" if self.path.endswith("/messages") else "chat"
                with outer._lock:
                    outer.requests.append(
                        {
                            "path": self.path,
                            "headers": {k.lower(): v for k, v in self.headers.items()},
                            "body": body,
                            "time": time.monotonic(),
                        }
                    )
                    n = len(outer.requests)
                    outer.in_flight += 1
                    outer.max_in_flight = max(outer.max_in_flight, outer.in_flight)
                try:
                    reply = outer.responder(kind, body, n)
                    if reply.hang:
                        outer._stopping.wait(30)
                        return
                    if reply.delay:
                        time.sleep(reply.delay)
                    payload = reply.body if reply.body is not None else _error_body(reply.status)
                    data = (payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)).encode()
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                finally:
                    with outer._lock:
                        outer.in_flight -= 1

        return Handler

    def __enter__(self) -> "Loopback":
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
