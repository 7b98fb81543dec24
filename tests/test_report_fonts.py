"""The report carries the glyphs of its own Chinese (a subset of Noto Sans SC from the
``pylopdf-fonts-zh-cn`` package, inlined as WOFF2), so it reads on a machine without CJK fonts;
without such a font at build time it keeps the viewer's fonts and its log says so.

The font is a dependency of the package, so every installation has it; without it this test fails
with the instruction instead of being skipped.
"""

from __future__ import annotations

import base64
import io
import logging
import re

import pytest
from fontTools.ttLib import TTFont

from helpers import browser as report_browser
from helpers import report_run as fx
from audiobook_rl.report import fonts, make_report

FACE = re.compile(r'@font-face \{ font-family: "audiobook-rl CJK"; unicode-range: ([^;]+); src: url\(data:font/woff2;base64,([A-Za-z0-9+/=]+)\) format\("woff2"\); \}')


@pytest.fixture(scope="module")
def system_font():
    found = fonts.find_font()
    if found is None:
        pytest.fail(f"no CJK font on this machine; the report's font test needs one: {fonts.INSTALL}")
    return found


def build(tmp_path) -> str:
    paths = fx.write_run(tmp_path / "run")
    return make_report(paths["metrics"], paths["labels"], paths["evals"], fx.DEFAULT_SETTINGS, val=paths["val"])


def page_text(html: str) -> str:
    return FACE.sub("", html)


def test_the_report_carries_a_glyph_for_each_chinese_character_it_shows(system_font, tmp_path):
    html = build(tmp_path)
    face = FACE.search(html)
    assert face, "no embedded CJK font in the report"
    data = base64.b64decode(face.group(2))
    assert data[:4] == b"wOF2"
    font = TTFont(io.BytesIO(data))
    cmap = set(font.getBestCmap())
    chinese = {ord(ch) for ch in page_text(html) if "\u4e00" <= ch <= "\u9fff" or "\u3000" <= ch <= "\u303f" or "\uff00" <= ch <= "\uffef"}
    assert "独" in page_text(html) and len(chinese) > 30
    assert chinese <= cmap
    assert not {c for c in cmap if c < 0x80}  # Latin stays in the viewer's fonts
    assert f"U+{ord('独'):X}" in face.group(1)
    assert len(face.group(2)) < 200_000  # a subset, not the 19 MB font
    # The font's copyright and license travel with it (SIL Open Font License).
    assert "SIL Open Font License" in (font["name"].getDebugName(13) or "")


def test_the_font_comes_with_the_package_so_every_machine_builds_the_same_page():
    # A dependency of the pipeline, found first whatever the machine has installed.
    from fontTools.ttLib import TTFont as Font

    path, index = fonts.find_font()
    assert path == fonts.packaged_font() and index == 0
    name = Font(str(path), lazy=True)["name"]
    assert name.getDebugName(1) == "Noto Sans SC" and "SIL Open Font License" in (name.getDebugName(13) or "")


def test_a_rebuilt_report_is_byte_identical(system_font, tmp_path):
    first = build(tmp_path)
    fonts._subset.cache_clear()  # subset the font again, as a new process would
    assert build(tmp_path) == first


def test_without_a_cjk_font_the_page_keeps_the_viewers_fonts_and_the_log_says_so(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("FONTCONFIG_FILE", report_browser.without_cjk_fonts(tmp_path / "fc")["FONTCONFIG_FILE"])
    monkeypatch.setattr(fonts, "KNOWN_PATHS", ())
    monkeypatch.setattr(fonts, "PACKAGED", ("no_such_font_package", "NotoSansSC-Regular.otf"))
    assert fonts.find_font() is None
    with caplog.at_level(logging.WARNING, logger="audiobook_rl.report.fonts"):
        html = build(tmp_path)
    assert "@font-face" not in html and '"Noto Sans CJK SC"' in html  # the font stack, as before
    assert f"no CJK font found ({fonts.INSTALL})" in caplog.text and "pip install pylopdf-fonts-zh-cn" in caplog.text


def test_a_font_that_cannot_be_written_as_woff2_leaves_the_viewers_fonts(system_font, tmp_path, monkeypatch, caplog):
    # WOFF2 needs the Brotli module (fontTools looks for it once, at import): without it the report
    # is still made, with the font stack.
    from fontTools.ttLib import woff2

    monkeypatch.setattr(woff2, "haveBrotli", False)
    fonts._subset.cache_clear()
    with caplog.at_level(logging.WARNING, logger="audiobook_rl.report.fonts"):
        html = build(tmp_path)
    fonts._subset.cache_clear()
    assert "@font-face" not in html and '"Noto Sans CJK SC"' in html
    assert f"could not embed {fonts.find_font()[0]}" in caplog.text
