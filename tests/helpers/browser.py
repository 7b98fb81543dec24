"""Open an HTML file in headless Chromium, save a screenshot, and return the page's console messages.

Used by tests/test_report_browser.py; also a command for looking at a real report:

    python tests/helpers/browser.py results/report.html report.png [--no-cjk-fonts]

``--no-cjk-fonts`` shows the page as a machine without any CJK font would: Chromium gets a
fontconfig that sees this machine's fonts except those covering Chinese.

Chromium comes from the system's packages; the README's test command first runs

    python tests/helpers/browser.py --install

which does nothing where Chromium is found, installs it on Debian (``apt-get update``, then
``apt-get install -y chromium``) when run as root, and otherwise stops with the command to run. With
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


def install() -> str:
    """The Chromium binary, installed from the system's packages first if it is missing (apt-get,
    as root); one sentence (SystemExit) when that cannot be done here."""
    found = chromium()
    if found:
        return found
    how = f"install it as root with: {INSTALL} (or set CHROMIUM to a Chromium binary)"
    if shutil.which("apt-get") is None:
        raise SystemExit("chromium is not installed and this machine has no apt-get; the report's browser test needs it: "
                         "install Chromium with the system's package manager, or set CHROMIUM to its binary.")
    if os.geteuid() != 0:
        raise SystemExit(f"chromium is not installed and installing it needs root; the report's browser test needs it: {how}.")
    print(f"chromium is not installed; installing it: {INSTALL}", flush=True)
    quiet = {"stdout": subprocess.DEVNULL, "env": {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}}
    if subprocess.run(["apt-get", "update", "-qq"], **quiet).returncode != 0:
        raise SystemExit(f"apt-get update failed (is the package archive reachable?); the report's browser test needs chromium: {how}.")
    if subprocess.run(["apt-get", "install", "-y", "-qq", "chromium"], **quiet).returncode != 0:
        raise SystemExit(f"apt-get could not install chromium; the report's browser test needs it: {how}.")
    found = chromium()
    if not found:
        raise SystemExit("apt-get installed chromium but no chromium binary is on PATH; set CHROMIUM to it.")
    return found


def without_cjk_fonts(folder: Path) -> dict[str, str]:
    """Environment for a browser that sees no CJK font: a fontconfig file in ``folder`` whose only
    fonts are this machine's fonts that do not cover Chinese (the usual rules of /etc/fonts apply)."""
    def files(*pattern: str) -> set[str]:
        done = subprocess.run(["fc-list", "--format", "%{file}\\n", *pattern], capture_output=True, text=True, check=True)
        return set(done.stdout.splitlines())

    fonts = folder / "fonts"
    fonts.mkdir(parents=True, exist_ok=True)
    for k, path in enumerate(sorted(files() - files(":lang=zh"))):
        (fonts / f"{k}-{Path(path).name}").symlink_to(path)
    conf = folder / "fonts.conf"
    conf.write_text(
        f'<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig><dir>{fonts}</dir>'
        f'<cachedir>{folder / "cache"}</cachedir><include ignore_missing="yes">/etc/fonts/conf.d</include></fontconfig>\n',
        encoding="utf-8",
    )
    return {"FONTCONFIG_FILE": str(conf)}


def open_page(
    html: str | Path, screenshot: str | Path, width: int = 1280, height: int = 2400, cjk_fonts: bool = True
) -> list[str]:
    """Load ``html`` (offline, no sandbox, fresh profile), write a PNG screenshot and return the
    console messages the page produced; raises RuntimeError when the browser fails. With
    ``cjk_fonts=False`` the browser sees no CJK font (:func:`without_cjk_fonts`)."""
    binary = chromium()
    if binary is None:
        raise RuntimeError(f"chromium is not installed; install it with: {INSTALL}")
    with tempfile.TemporaryDirectory() as profile:
        env = {**os.environ, **({} if cjk_fonts else without_cjk_fonts(Path(profile) / "fontconfig"))}
        cmd = [
            binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
            f"--user-data-dir={profile}", f"--window-size={width},{height}", "--enable-logging=stderr", "--v=0",
            f"--screenshot={Path(screenshot).resolve()}", Path(html).resolve().as_uri(),
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    if not Path(screenshot).is_file() or Path(screenshot).stat().st_size == 0:
        raise RuntimeError(f"chromium wrote no screenshot (exit {done.returncode}): {done.stderr[-2000:]}")
    return [m.group(0) for m in _CONSOLE.finditer(done.stderr)]


if __name__ == "__main__":
    if sys.argv[1:] == ["--install"]:
        print(f"chromium: {install()}")
        sys.exit(0)
    args = [a for a in sys.argv[1:] if a != "--no-cjk-fonts"]
    if len(args) != 2:
        sys.exit("usage: python tests/helpers/browser.py REPORT.html SCREENSHOT.png [--no-cjk-fonts] | --install")
    messages = open_page(*args, height=int(os.environ.get("HEIGHT", "2400")), cjk_fonts="--no-cjk-fonts" not in sys.argv)
    print("\n".join(messages) or "no console messages")
    sys.exit(1 if messages else 0)
