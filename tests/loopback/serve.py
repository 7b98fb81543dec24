"""Run a loopback server in its own process: ``python -m loopback.serve label|judge LATENCY``.

Prints the base URL on the first line of stdout and serves until stdin is closed. ``label``
answers Messages API requests with a valid script for the excerpt; ``judge`` answers
chat-completions requests with a valid judge verdict. ``GET /stats`` returns the counters.
"""

from __future__ import annotations

import sys

from loopback import Loopback, Reply, anthropic_message, chat_completion
from loopback.scripts import judge_reply, valid_label_reply


def main() -> None:
    kind, latency = sys.argv[1], float(sys.argv[2])

    def respond(api, body, n):
        if kind == "label":
            return Reply(body=anthropic_message(valid_label_reply(body)), delay=latency)
        return Reply(body=chat_completion(judge_reply(0.5)), delay=latency)

    with Loopback(respond) as server:
        print(server.url, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
