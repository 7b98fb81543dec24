"""Stand-ins for a cluster, for the profile tests: SLURM commands that record what they are asked,
and an S3 endpoint on 127.0.0.1 that holds the repository's inputs but no results yet."""

from __future__ import annotations

import os
import threading
import time
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

SBATCH = """#!/bin/sh
# Record the submission, then refuse it: the test needs the call, not a job.
echo "sbatch $*" >> "$FAKE_SLURM_LOG"
echo "sbatch: error: not a cluster (test stand-in)" >&2
exit 1
"""


def fake_slurm(bin_dir: Path, account: str) -> Path:
    """sbatch (records its arguments to $FAKE_SLURM_LOG), sacctmgr (knows ``account``), and the
    query commands the executor may call (answering nothing)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    scripts = {"sbatch": SBATCH, "sacctmgr": f"#!/bin/sh\necho {account}\n"}
    for name in ("sinfo", "squeue", "sacct", "scancel", "scontrol", "sshare"):
        scripts[name] = "#!/bin/sh\nexit 0\n"
    for name, text in scripts.items():
        path = bin_dir / name
        path.write_text(text)
        path.chmod(0o755)
    return bin_dir


class S3Stub:
    """``with S3Stub("bucket") as s3:`` → ``s3.url``. Keys under ``results/`` do not exist yet; any
    other key (the corpus, prompts, code) exists, as after uploading the inputs to the bucket."""

    def __init__(self, bucket: str):
        self.bucket = bucket
        self.requests: list[tuple[str, str]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def _handler(self):
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, status: int, body: bytes = b"", headers: dict | None = None):
                stub.requests.append((self.command, self.path))
                self.send_response(status)
                self.send_header("content-type", "application/xml")
                self.send_header("content-length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def _key(self) -> str | None:
                path = self.path.split("?")[0].strip("/")
                return path.split("/", 1)[1] if "/" in path else None

            def do_HEAD(self):
                key = self._key()
                if key is None:
                    return self._send(200)  # the bucket exists
                if "/results/" in f"/{key}":
                    return self._send(404)
                self._send(200, headers={"last-modified": formatdate(0, usegmt=True), "etag": '"0"'})

            def do_GET(self):
                if self._key() is None:  # a listing: empty
                    body = (b'<?xml version="1.0" encoding="UTF-8"?><ListBucketResult '
                            b'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>' + stub.bucket.encode() +
                            b"</Name><IsTruncated>false</IsTruncated></ListBucketResult>")
                    return self._send(200, body)
                self._send(404)

        return Handler

    def __enter__(self) -> "S3Stub":
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()


def touch_in_order(root: Path, paths: list[str]) -> None:
    """Create ``paths`` (a trailing ``/`` makes a directory) with increasing modification times,
    in DAG order, so that Snakemake sees each as up to date with respect to the one before."""
    now = time.time() + 60
    for i, rel in enumerate(paths):
        p = root / rel
        if rel.endswith("/"):
            p.mkdir(parents=True, exist_ok=True)
            (p / "config.json").write_text("{}")
            os.utime(p / "config.json", (now + i, now + i))
        else:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text("x")
        os.utime(p, (now + i, now + i))
