"""Reading a novel in any common Chinese encoding, and cutting it into excerpts ("slices").

Offsets are character offsets into the decoded text with line endings normalised to ``\\n``
(and a byte-order mark removed), so a GBK copy or a CRLF copy of a file yields the same slices.
"""

from __future__ import annotations

import codecs
import logging
import random
import re
from array import array
from dataclasses import asdict, dataclass
from pathlib import Path

from .errors import UserError
from .script import SCENE_BREAK

log = logging.getLogger(__name__)

SENTENCE_END = "。！？!?…"
OPEN_QUOTE, CLOSE_QUOTE = "“", "”"
OPEN_INNER, CLOSE_INNER = "‘", "’"
_TRAILING_CLOSERS = CLOSE_QUOTE + CLOSE_INNER + "）)』」"
# A chapter heading line (第十二回…, 楔子): excerpts never hold one, and the labeler reads a chapter from it.
HEADING = re.compile(r"^\s*(第[一二三四五六七八九十百千零〇两\d]+[回章节卷]|楔子|序章|尾声)")


@dataclass(frozen=True)
class Slice:
    id: str
    text: str
    start: int
    end: int

    def to_dict(self) -> dict:
        return asdict(self)


def read_text(path: str | Path) -> tuple[str, str]:
    """Decode a text file; return (text, encoding name).

    UTF-8 (with or without BOM), UTF-16 with a BOM and GB18030 (a superset of GBK and GB2312) are
    detected. Line endings become ``\\n``. Raises :class:`UserError` for a missing, empty or binary
    file.
    """
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such file; set the config key 'corpus' to a UTF-8 or GBK .txt file.")
    data = path.read_bytes()
    if not data.strip():
        raise UserError(f"{path}: the file is empty.")
    text, encoding = decode(data, path)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise UserError(f"{path}: the file holds only whitespace.")
    return text, encoding


def decode(data: bytes, path: Path | str = "<bytes>") -> tuple[str, str]:
    if data.startswith(codecs.BOM_UTF8):
        return _strict(data[len(codecs.BOM_UTF8) :], "utf-8", path, "utf-8-sig")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return _strict(data, "utf-16", path, "utf-16")
    if b"\x00" in data:
        raise UserError(f"{path}: looks like a binary file (it contains NUL bytes), not a text file.")
    for encoding in ("utf-8", "gb18030"):
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError:
            continue
        if _mostly_text(text):
            return text, encoding
    raise UserError(f"{path}: cannot be read as UTF-8 or GB18030/GBK text; convert it to UTF-8.")


def _strict(data: bytes, codec: str, path: Path | str, name: str) -> tuple[str, str]:
    try:
        return data.decode(codec), name
    except UnicodeDecodeError as err:
        raise UserError(f"{path}: starts with a {name} byte-order mark but is not valid {name} ({err.reason}).")


def _mostly_text(text: str) -> bool:
    """Reject control-character soup that happens to decode (e.g. random bytes as GB18030)."""
    sample = text[:200_000]
    controls = sum(1 for ch in sample if ord(ch) < 32 and ch not in "\n\r\t\f")
    return controls <= len(sample) * 0.01


def quote_balanced(paragraph: str) -> bool:
    """True when every “…” closes in order and every ‘…’ closes inside its quote."""
    depth = inner = 0
    for ch in paragraph:
        if ch == OPEN_QUOTE:
            if depth:
                return False
            depth = 1
        elif ch == CLOSE_QUOTE:
            if not depth or inner:
                return False
            depth = 0
        elif ch == OPEN_INNER and depth:
            if inner:
                return False
            inner = 1
        elif ch == CLOSE_INNER and depth:
            if not inner:
                return False
            inner = 0
    return depth == 0 and inner == 0


class Sentences:
    """Sentence spans of a text, in order, as compact arrays (linear in the text's size).

    A sentence ends after ``。！？…`` (plus closing quotes) outside any quote, or at the end of a
    paragraph. Sentences of paragraphs with unbalanced quotes are flagged ``broken``.
    """

    def __init__(self, text: str):
        self.starts = array("q")
        self.ends = array("q")
        self.broken = bytearray()
        self.inner = bytearray()  # scene-break lines: allowed inside an excerpt, never at its edges
        pos = 0
        for line in text.split("\n"):
            self._add_paragraph(line, pos)
            pos += len(line) + 1

    def __len__(self) -> int:
        return len(self.starts)

    def _add_paragraph(self, line: str, offset: int) -> None:
        n = len(line)
        i = 0
        while i < n and line[i].isspace():
            i += 1
        if i == n:
            return
        # Chapter headings and unbalanced quotes: no excerpt may contain them.
        broken = not quote_balanced(line) or bool(HEADING.match(line))
        if SCENE_BREAK.match(line):
            self._add(offset + i, offset + len(line.rstrip()), broken, inner=True)
            return
        depth = 0
        start = i
        while i < n:
            ch = line[i]
            if ch == OPEN_QUOTE:
                depth += 1
            elif ch == CLOSE_QUOTE:
                depth = max(0, depth - 1)
            i += 1
            if depth == 0 and (ch in SENTENCE_END or (ch == CLOSE_QUOTE and i >= 2 and line[i - 2] in SENTENCE_END)):
                while i < n and line[i] in SENTENCE_END + _TRAILING_CLOSERS:
                    i += 1
                self._add(offset + start, offset + i, broken)
                while i < n and line[i].isspace():
                    i += 1
                start = i
        end = n
        while end > start and line[end - 1].isspace():
            end -= 1
        if end > start:
            self._add(offset + start, offset + end, broken)

    def _add(self, start: int, end: int, broken: bool, inner: bool = False) -> None:
        self.starts.append(start)
        self.ends.append(end)
        self.broken.append(1 if broken else 0)
        self.inner.append(1 if inner else 0)


def slice_text(
    text: str, *, n: int, min_chars: int, max_chars: int, seed: int, source: str = "corpus", key: str = "slice.n_slices"
) -> list[Slice]:
    """Cut ``n`` non-overlapping excerpts of ``min_chars``–``max_chars`` characters.

    Each excerpt is a run of whole sentences (it starts at a sentence start and ends at a sentence
    end, never inside a quote) from paragraphs with balanced quotes. The text is split into ``n``
    equal strata and one excerpt is drawn from each with a seeded generator, so excerpts spread over
    the whole book and the same text and seed always give the same excerpts. It fails exactly when
    :func:`count_slices` finds fewer than ``n`` (``key`` names the setting to lower).
    """
    sentences = Sentences(text)
    if len(sentences) == 0:
        raise UserError(f"{source}: has no sentences to cut excerpts from.")
    rng = random.Random(seed)
    chosen: list[tuple[int, int]] = []
    total = len(sentences)
    strata = [(total * k // n, total * (k + 1) // n) for k in range(n)]
    leftovers: list[int] = []
    for lo, hi in strata:
        candidates = list(range(lo, hi))
        rng.shuffle(candidates)
        window = None
        for tried, first in enumerate(candidates):
            window = _window_at(sentences, first, min_chars, max_chars, rng, chosen)
            if window:
                leftovers.extend(candidates[tried + 1 :])
                break
        if window:
            chosen.append(window)
    if len(chosen) < n:
        # Some strata had no room (dialogue-heavy or broken stretches): draw the rest anywhere.
        rng.shuffle(leftovers)
        for first in leftovers:
            if len(chosen) == n:
                break
            window = _window_at(sentences, first, min_chars, max_chars, rng, chosen)
            if window:
                chosen.append(window)
    if len(chosen) < n:
        # The random draw boxed itself in: fall back to the most excerpts the text holds, so the
        # stage fails only where the start-up check (count_slices) says it will.
        packed = _packed_windows(sentences, min_chars, max_chars)
        if len(packed) < n:
            raise too_few_slices(source, len(packed), n, min_chars, max_chars, key)
        chosen = rng.sample(packed, n)
    chosen.sort()
    return [Slice(f"s{k:03d}", text[a:b], a, b) for k, (a, b) in enumerate(chosen)]


def too_few_slices(source: str, found: int, n: int, min_chars: int, max_chars: int, key: str) -> UserError:
    return UserError(
        f"{source}: can make only {found} slices of {min_chars}–{max_chars} characters, "
        f"but {n} were requested; use a longer text or lower {key}."
    )


def count_slices(text: str, *, min_chars: int, max_chars: int, enough: int) -> int:
    """How many non-overlapping excerpts :func:`slice_text` can cut from ``text``, counted up to
    ``enough``: fast on a long book, which holds ``enough`` in its first pages.

    Sentences belong to one paragraph, so the excerpts of a prefix that ends at a line break are
    excerpts of the whole text: the prefix grows fourfold until it holds ``enough`` or is the text.
    """
    size = 1 << 20
    while True:
        cut = len(text) if size >= len(text) else (text.find("\n", size) + 1 or len(text))
        found = len(_packed_windows(Sentences(text[:cut]), min_chars, max_chars, enough))
        if found >= enough or cut == len(text):
            return found
        size *= 4


def _packed_windows(sentences: Sentences, min_chars: int, max_chars: int, enough: int | None = None) -> list[tuple[int, int]]:
    """The most non-overlapping windows there are (up to ``enough``): from left to right, each
    window that starts after the last one taken and ends soonest (interval scheduling)."""
    windows: list[tuple[int, int]] = []
    last_end = -1
    for first in range(len(sentences)):
        if sentences.starts[first] < last_end:
            continue
        end = next(_window_ends(sentences, first, min_chars, max_chars), None)
        if end is not None:
            windows.append((sentences.starts[first], end))
            last_end = end
            if enough is not None and len(windows) >= enough:
                break
    return windows


def _window_ends(sentences: Sentences, first: int, min_chars: int, max_chars: int):
    """The ends (in order) of the valid windows starting at sentence ``first``."""
    if sentences.broken[first] or sentences.inner[first]:
        return
    start = sentences.starts[first]
    j = first
    while j < len(sentences) and not sentences.broken[j]:
        length = sentences.ends[j] - start
        if length > max_chars:
            return
        if length >= min_chars and not sentences.inner[j]:
            yield sentences.ends[j]
        j += 1


def _window_at(
    sentences: Sentences, first: int, min_chars: int, max_chars: int, rng: random.Random, taken: list
) -> tuple[int, int] | None:
    ends = list(_window_ends(sentences, first, min_chars, max_chars))
    if not ends:
        return None
    start = sentences.starts[first]
    end = ends[rng.randrange(len(ends))]
    if any(start < b and a < end for a, b in taken):
        return None
    return start, end


def text_before(novel: str, start: int, text: str, chars: int, scene: bool = False) -> str:
    """The novel's text just before ``text``, which starts at ``start`` in it: ``chars`` characters
    back, from the first paragraph that starts in them (not from the middle of a sentence), and with
    ``scene`` not past a scene break or chapter heading (people of another scene are no help); ""
    when ``chars`` is 0 or ``text`` is not the novel's at ``start`` (a slice cut from another copy)."""
    if not chars or novel[start : start + len(text)] != text:
        return ""
    begin = max(0, start - chars)
    before = novel[begin:start]
    newline = before.find("\n")
    if begin > 0 and 0 <= newline < len(before) // 2:
        before = before[newline + 1 :]
    if scene:
        lines = before.split("\n")
        breaks = [k for k, line in enumerate(lines) if line.strip() and (SCENE_BREAK.match(line) or HEADING.match(line))]
        before = "\n".join(lines[breaks[-1] + 1 :] if breaks else lines)
    return before.lstrip("\n")


def has_dialogue(text: str) -> bool:
    return OPEN_QUOTE in text or "「" in text
