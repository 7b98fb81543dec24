"""The report in a real browser: headless Chromium loads it without console errors, and its
Chinese reads where no CJK font is installed.

Chromium is required, not optional: the README's test command installs it first
(``python tests/helpers/browser.py --install``), and the CJK font comes with the package; without
them these tests fail with the instruction instead of being skipped.
"""

from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest
from PIL import Image, ImageChops

from helpers import browser as report_browser
from helpers import report_run as fx
from audiobook_rl.report import fonts, make_report


@pytest.fixture(scope="module")
def browser():
    if report_browser.chromium() is None:
        pytest.fail(f"chromium is not installed; the report's browser check needs it: {report_browser.INSTALL}")
    return report_browser


def test_console_errors_are_detected(browser, tmp_path):
    # The check itself can fail: a page that logs an error and throws is caught.
    page = tmp_path / "bad.html"
    page.write_text('<!DOCTYPE html><p>x</p><script>console.error("bad"); throw new Error("boom");</script>', encoding="utf-8")
    messages = browser.open_page(page, tmp_path / "bad.png", height=400)
    assert any("boom" in m for m in messages) and any("bad" in m for m in messages)


def test_report_loads_without_console_errors(browser, tmp_path):
    paths = fx.write_run(tmp_path / "run")
    html = make_report(paths["metrics"], paths["labels"], paths["evals"], fx.DEFAULT_SETTINGS, val=paths["val"], config_hash="x")
    report = tmp_path / "report.html"
    report.write_text(html, encoding="utf-8")
    shot = tmp_path / "report.png"
    assert browser.open_page(report, shot, height=2400) == []
    image = Image.open(shot).convert("RGB")
    assert image.size == (1280, 2400)
    # Not a blank page: the header, charts and table give many distinct colours.
    assert len(image.getcolors(maxcolors=1 << 20)) > 200


def differing(a: Image.Image, b: Image.Image) -> float:
    """Share of the pixels that differ visibly between two screenshots."""
    return float((np.asarray(ImageChops.difference(a.convert("L"), b.convert("L"))) > 40).mean())


def test_chinese_reads_where_no_cjk_font_is_installed(browser, tmp_path):
    if fonts.find_font() is None:
        pytest.fail(f"no CJK font to build the report with: {fonts.INSTALL}")
    paths = fx.write_run(tmp_path / "run")
    html = make_report(paths["metrics"], paths["labels"], paths["evals"], fx.DEFAULT_SETTINGS, val=paths["val"])
    report, bare = tmp_path / "report.html", tmp_path / "without-font.html"
    report.write_text(html, encoding="utf-8")
    bare.write_text(re.sub(r"@font-face \{[^}]*\}", "", html), encoding="utf-8")  # the page without its font

    def shot(page, cjk_fonts: bool) -> Image.Image:
        path = tmp_path / f"{page.stem}-{'cjk' if cjk_fonts else 'no-cjk'}.png"
        assert browser.open_page(page, path, height=5200, cjk_fonts=cjk_fonts) == []
        return Image.open(path)

    with_cjk = shot(report, True)  # a machine with Noto Sans CJK
    without_cjk = shot(report, False)  # a machine without any CJK font
    tofu = shot(bare, False)  # the known failure: every Chinese character a box
    assert differing(tofu, with_cjk) > 0.002  # the comparison sees boxes where glyphs belong
    assert differing(without_cjk, with_cjk) < differing(tofu, with_cjk) / 20


def test_the_report_with_a_test_set_and_a_second_judge_loads_without_console_errors(browser, tmp_path):
    # Every section this run can have: the paired table with test columns, the dimensions that
    # moved, and the agreement of two judges (their scores.jsonl rows as another judge would write them).
    paths = fx.write_run(tmp_path / "run")
    test, test_evals = fx.write_test_split(tmp_path / "run", {0: [0.2] * 4, 10: [0.3, 0.4, 0.2, 0.3],
                                                             20: [0.5, 0.4, 0.3, 0.3], 30: [0.2] * 4})
    extra = {step: scores for step, (_, scores) in fx.write_test_split(tmp_path / "other", {
        0: [0.1, 0.3, 0.2, 0.4], 10: [0.2, 0.2, 0.6, 0.1], 20: [0.9, 0.1, 0.3, 0.2], 30: [0.4] * 4})[1].items()}
    html = make_report(paths["metrics"], paths["labels"], paths["evals"], fx.DEFAULT_SETTINGS, val=paths["val"],
                       test_evals=test_evals, test=test, judges={"rubric": extra}, judge_name="glm-glm-4.7")
    for section in ('id="paired-table"', 'id="hacking-table"', '<section id="judges">', "Held-out test (4 slices)"):
        assert section in html
    report = tmp_path / "report.html"
    report.write_text(html, encoding="utf-8")
    shot = tmp_path / "report.png"
    assert browser.open_page(report, shot, height=4000) == []
    image = Image.open(shot).convert("RGB")
    assert len(image.getcolors(maxcolors=1 << 20)) > 200


def test_the_install_step_names_the_command_where_it_cannot_install(monkeypatch):
    # The README's test command runs `python tests/helpers/browser.py --install` first.
    monkeypatch.delenv("CHROMIUM", raising=False)
    monkeypatch.setattr(report_browser.shutil, "which", lambda name: "/usr/bin/apt-get" if name == "apt-get" else None)
    monkeypatch.setattr(report_browser.os, "geteuid", lambda: 1000)
    with pytest.raises(SystemExit, match=r"needs root; .*install it as root with: apt-get update && apt-get install -y chromium"):
        report_browser.install()
    monkeypatch.setattr(report_browser.shutil, "which", lambda name: None)
    with pytest.raises(SystemExit, match="no apt-get"):
        report_browser.install()
    monkeypatch.setenv("CHROMIUM", "/opt/chromium/chrome")  # found: nothing to install
    assert report_browser.install() == "/opt/chromium/chrome"


def test_as_root_the_install_step_updates_the_package_lists_first(monkeypatch):
    monkeypatch.delenv("CHROMIUM", raising=False)
    installed = []
    monkeypatch.setattr(report_browser.shutil, "which",
                        lambda name: {"apt-get": "/usr/bin/apt-get", "chromium": "/usr/bin/chromium" if installed else None}.get(name))
    monkeypatch.setattr(report_browser.os, "geteuid", lambda: 0)
    calls = []

    def run(cmd, **kwargs):
        calls.append(cmd[:2])
        if cmd[1] == "install":
            installed.append(True)
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(report_browser.subprocess, "run", run)
    assert report_browser.install() == "/usr/bin/chromium"
    assert calls == [["apt-get", "update"], ["apt-get", "install"]]
