"""The report in a real browser: headless Chromium loads it without console errors.

Chromium is required, not optional: CI installs it (apt-get update && apt-get install -y chromium);
without it this test fails with that instruction instead of being skipped.
"""

from __future__ import annotations

import pytest
from PIL import Image

import report_browser
import report_helpers as fx
from audiobook_rl.report import make_report


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
