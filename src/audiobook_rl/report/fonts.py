"""The report's Chinese in a font of its own, so that it reads on a machine without CJK fonts.

When the report is built, Noto Sans SC (SIL Open Font License) is taken from the Python package
``pylopdf-fonts-zh-cn``, a dependency of this one, so every installation has it and every machine
builds the same page; where that package is missing, Noto Sans CJK SC is looked up on this machine
(fontconfig's match for the name, else where font packages install it; Debian and Ubuntu:
``fonts-noto-cjk``). The glyphs of the characters the page uses are cut out of it with fontTools
and inlined as WOFF2 in an ``@font-face`` rule (tens to a few hundred KB instead of 8 MB). Without
any such font the page keeps the viewer's own fonts, and the report's log says so.
"""

from __future__ import annotations

import base64
import functools
import importlib.util
import io
import logging
import shutil
import subprocess
from pathlib import Path

log = logging.getLogger(__name__)

FAMILY = "audiobook-rl CJK"  # first in the page's font stacks (template.html)
PACKAGED = ("pylopdf_fonts_zh_cn", "NotoSansSC-Regular.otf")  # (module, file beside it): Noto Sans SC
NAME = "Noto Sans CJK SC"  # the system font looked for when the packaged one is missing
KNOWN_PATHS = (
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",  # Debian, Ubuntu: fonts-noto-cjk
    "/usr/share/fonts/google-noto-cjk/NotoSansCJK-Regular.ttc",  # Fedora: google-noto-sans-cjk-fonts
    "/usr/share/fonts/noto-cjk/NotoSansCJK-Regular.ttc",  # Arch: noto-fonts-cjk
    "~/Library/Fonts/NotoSansCJK-Regular.ttc",  # macOS (Homebrew's font-noto-sans-cjk)
    "/Library/Fonts/NotoSansCJK-Regular.ttc",
)
INSTALL = "pip install pylopdf-fonts-zh-cn (a dependency of this package), or install Noto Sans CJK (Debian/Ubuntu: apt-get install fonts-noto-cjk)"
# The font's copyright and license stay in the subset, as the Open Font License asks.
_NAME_IDS = [0, 1, 2, 3, 4, 5, 6, 13, 14]


def find_font() -> tuple[Path, int] | None:
    """(file, face index) of the packaged Noto Sans SC, else of Noto Sans CJK SC on this machine, or None."""
    packaged = packaged_font()
    if packaged is not None:
        return packaged, 0
    if shutil.which("fc-match"):
        done = subprocess.run(["fc-match", "-f", "%{file}\n%{index}\n%{family}", NAME], capture_output=True, text=True)
        file, index, family = (done.stdout.split("\n") + ["", "", ""])[:3]
        if done.returncode == 0 and NAME in family.split(",") and Path(file).is_file():
            return Path(file), int(index or 0)
    for path in KNOWN_PATHS:
        path = Path(path).expanduser()
        if path.is_file():
            index = _face_index(path)
            if index is not None:
                return path, index
    return None


def packaged_font() -> Path | None:
    """The font file of the ``pylopdf-fonts-zh-cn`` package (found without importing it), or None."""
    module, name = PACKAGED
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin:
        return None
    path = Path(spec.origin).parent / name
    return path if path.is_file() else None


def _face_index(path: Path) -> int | None:
    from fontTools.ttLib import TTCollection, TTFont

    faces = TTCollection(str(path), lazy=True).fonts if path.suffix == ".ttc" else [TTFont(str(path), lazy=True)]
    for index, face in enumerate(faces):
        if face["name"].getDebugName(1) == NAME:
            return index
    return None


def font_face(page: str) -> str:
    """An ``@font-face`` rule for :data:`FAMILY` holding the glyphs of every non-ASCII character of
    ``page``, or "" when no CJK font is found (logged)."""
    found = find_font()
    if found is None:
        log.warning("no CJK font found (%s): the report's Chinese shows only where the viewer has a CJK font", INSTALL)
        return ""
    path, index = found
    chars = frozenset(ord(ch) for ch in page if ord(ch) > 0x7F)
    try:
        woff2, covered = _subset(str(path), index, path.stat().st_mtime_ns, chars)
    except (ImportError, OSError) as err:  # no Brotli to write WOFF2 with, an unreadable font file
        log.warning("could not embed %s (%s): the report's Chinese shows only where the viewer has a CJK font", path, err)
        return ""
    log.info("embedded %d glyphs of %s in the report: %d KB of WOFF2", len(covered), path, len(woff2) // 1024)
    data = base64.b64encode(woff2).decode("ascii")
    # unicode-range: the browser takes this face only for these characters, and the line metrics
    # from the next family, so the page lays out as it does with the viewer's own CJK font.
    return (
        f'@font-face {{ font-family: "{FAMILY}"; unicode-range: {_ranges(covered)}; '
        f'src: url(data:font/woff2;base64,{data}) format("woff2"); }}'
    )


def _ranges(codes: list[int]) -> str:
    """CSS unicode-range of sorted code points: ``U+4E00-4E03, U+4E07``."""
    spans: list[list[int]] = []
    for code in codes:
        if spans and code == spans[-1][1] + 1:
            spans[-1][1] = code
        else:
            spans.append([code, code])
    return ", ".join(f"U+{a:X}" if a == b else f"U+{a:X}-{b:X}" for a, b in spans)


@functools.lru_cache(maxsize=8)
def _subset(path: str, index: int, mtime_ns: int, chars: frozenset[int]) -> tuple[bytes, list[int]]:
    """The WOFF2 bytes of the face's glyphs for ``chars``, and the characters it covers.
    Deterministic (no timestamp), so a rebuilt report is byte-identical; cached per font file
    version (``mtime_ns``) and characters."""
    from fontTools import subset
    from fontTools.ttLib import TTFont

    font = TTFont(path, fontNumber=index, lazy=True, recalcTimestamp=False)
    covered = sorted(chars & set(font.getBestCmap()))
    options = subset.Options()
    options.name_IDs = _NAME_IDS
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=covered)
    subsetter.subset(font)
    font.flavor = "woff2"  # Brotli-compressed
    out = io.BytesIO()
    font.save(out)
    return out.getvalue(), covered
