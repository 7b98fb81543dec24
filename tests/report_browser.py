"""Open an HTML file in headless Chromium, save a screenshot, and return the page's console messages.

Used by tests/test_report_browser.py; also a command for looking at a real report:

    python tests/report_browser.py results/report.html report.png

Chromium comes from Debian's packages (``apt-get install -y chromium``). With
``--enable-logging=stderr`` every console message of the page is printed as a ``CONSOLE`` line;
the report has no scripts, so any such line is a failure.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

INSTALL = "apt-get update && apt-get install -y chromium"
_CONSOLE = re.compile(r":CONSOLE[:(].*")


def chromium() -> str | None:
    """Path of the Chromium binary ($CHROMIUM, else chromium or chromium-browser on PATH)."""
    return os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def open_page(html: str | Path, screenshot: str | Path, width: int = 1280, height: int = 2400) -> list[str]:
    """Load ``html`` (offline, no sandbox, fresh profile), write a PNG screenshot and return the
    console messages the page produced; raises RuntimeError when the browser fails."""
    binary = chromium()
    if binary is None:
        raise RuntimeError(f"chromium is not installed; install it with: {INSTALL}")
    with tempfile.TemporaryDirectory() as profile:
        cmd = [
            binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
            f"--user-data-dir={profile}", f"--window-size={width},{height}", "--enable-logging=stderr", "--v=0",
            f"--screenshot={Path(screenshot).resolve()}", Path(html).resolve().as_uri(),
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if not Path(screenshot).is_file() or Path(screenshot).stat().st_size == 0:
        raise RuntimeError(f"chromium wrote no screenshot (exit {done.returncode}): {done.stderr[-2000:]}")
    return [m.group(0) for m in _CONSOLE.finditer(done.stderr)]


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python tests/report_browser.py REPORT.html SCREENSHOT.png")
    messages = open_page(sys.argv[1], sys.argv[2], height=int(os.environ.get("HEIGHT", "2400")))
    print("\n".join(messages) or "no console messages")
    sys.exit(1 if messages else 0)
