"""The audiobook script: its schema, a tolerant parser and helpers.

A script is a JSON array of segments in reading order; every segment has exactly these fields:

========== ======= =========================================================
speaker    str     ``旁白`` for narration, otherwise the character's name
content    str     the words to read, taken from the source, quotes removed
tone       str     one label of :data:`TONES`
intensity  int     1–5, how strongly the tone is voiced
delay      int     pause after the segment in milliseconds, 0–5000
========== ======= =========================================================

This module is the only definition of the schema: prompts, labelers, judges and the report use it.
:func:`parse_script` never raises on model output; it returns what it could read, the repairs it
made and the problems it found.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field

NARRATOR = "旁白"
FIELDS = ("speaker", "content", "tone", "intensity", "delay")
INTENSITY_RANGE = (1, 5)
DELAY_RANGE = (0, 5000)

# Broad emotional families: the rubric judge gives partial credit for a tone of the right family.
TONE_FAMILIES: dict[str, tuple[str, ...]] = {
    "平和": ("平静", "温柔", "严肃", "沉思"),
    "愉悦": ("喜悦", "得意"),
    "激烈": ("愤怒", "轻蔑", "焦急"),
    "不安": ("紧张", "恐惧"),
    "低落": ("悲伤", "无奈"),
    "意外": ("惊讶", "疑惑"),
}
TONES: tuple[str, ...] = tuple(t for family in TONE_FAMILIES.values() for t in family)
FAMILY_OF: dict[str, str] = {t: fam for fam, tones in TONE_FAMILIES.items() for t in tones}

# Quote marks that enclose speech; they are not part of any segment's content.
OUTER_QUOTES = "“”「」"
_NOT_READ = re.compile(rf"[\s{OUTER_QUOTES}]")
# A line of symbols only (＊　＊　＊) marks a scene break: a long pause, nothing to read.
SCENE_BREAK = re.compile(r"^[\s＊*·•—－\-~～#＃=]+$")


@dataclass(frozen=True)
class Segment:
    speaker: str
    content: str
    tone: str
    intensity: int
    delay: int

    @property
    def is_narration(self) -> bool:
        return self.speaker == NARRATOR

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class ParseResult:
    """What :func:`parse_script` made of a raw model output.

    ``status`` is ``"strict"`` (a bare JSON array), ``"repaired"`` (readable after the repairs
    listed in ``repairs``) or ``"invalid"`` (no array found; ``segments`` is empty).
    ``items`` counts the array's entries; ``errors`` lists per-segment schema problems, and only
    the entries without problems are in ``segments``. ``share`` is the part of the output's
    characters that the script was read from: below 1 when prose around it was dropped (a policy
    that writes on after its array, to the token limit, has a small share).
    """

    status: str
    segments: list[Segment] = field(default_factory=list)
    items: int = 0
    repairs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    share: float = 1.0

    @property
    def ok(self) -> bool:
        """A readable array whose every entry passed the schema."""
        return self.status != "invalid" and not self.errors and self.items > 0

    def notes(self) -> dict:
        return {
            "status": self.status,
            "items": self.items,
            "valid_segments": len(self.segments),
            "repairs": self.repairs,
            "errors": self.errors[:20],
        }


def check_segment(item: object) -> tuple[Segment | None, list[str]]:
    """Validate one array entry; return the segment (or None) and the problems found."""
    if not isinstance(item, dict):
        return None, [f"is a {type(item).__name__}, not an object"]
    problems = [f"lacks '{name}'" for name in FIELDS if name not in item]
    extra = sorted(set(item) - set(FIELDS))
    if extra:
        problems.append(f"has unknown fields {extra}")
    if problems:
        return None, problems
    speaker, content, tone = item["speaker"], item["content"], item["tone"]
    intensity, delay = item["intensity"], item["delay"]
    if not isinstance(speaker, str) or not speaker.strip():
        problems.append("has an empty or non-string speaker")
    if not isinstance(content, str) or not content.strip():
        problems.append("has an empty or non-string content")
    if tone not in TONES:
        problems.append(f"has tone {tone!r}, not one of the vocabulary")
    if not _is_int(intensity) or not INTENSITY_RANGE[0] <= intensity <= INTENSITY_RANGE[1]:
        problems.append(f"has intensity {intensity!r}, not an integer 1–5")
    if not _is_int(delay) or not DELAY_RANGE[0] <= delay <= DELAY_RANGE[1]:
        problems.append(f"has delay {delay!r}, not an integer 0–5000 ms")
    if problems:
        return None, problems
    return Segment(speaker.strip(), content, tone, int(intensity), int(delay)), []


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_FENCE = re.compile(r"```[a-zA-Z]*\s*\n?(.*?)```", re.S)


def parse_script(raw: object) -> ParseResult:
    """Read a script from model output, tolerating fences, prose and a ``{"segments": …}`` wrapper."""
    if not isinstance(raw, str):
        if isinstance(raw, list):
            return _check_array(raw, "strict", [])
        return ParseResult("invalid", errors=[f"output is a {type(raw).__name__}, not text"])
    text = raw.strip()
    repairs: list[str] = []
    if not text:
        return ParseResult("invalid", errors=["output is empty"])

    value, ok = _loads(text)
    span = len(text)  # the characters the script is read from
    if not ok:
        fence = _FENCE.search(text)
        if fence:
            value, ok = _loads(fence.group(1).strip())
            if ok:
                repairs.append("removed a code fence")
                span = len(fence.group(0))
    if not ok:
        value, ok, what, span = _embedded_json(text)
        if ok:
            repairs.append(what)
    if not ok:
        return ParseResult("invalid", repairs=repairs, errors=["no JSON array could be read"])

    if isinstance(value, dict):
        array = _unwrap(value)
        if array is None:
            return ParseResult("invalid", repairs=repairs, errors=["a JSON object without a segment list"])
        repairs.append("unwrapped the segment list from an object")
        value = array
    if not isinstance(value, list):
        return ParseResult("invalid", repairs=repairs, errors=[f"JSON {type(value).__name__}, not an array"])
    result = _check_array(value, "repaired" if repairs else "strict", repairs)
    result.share = span / len(text)
    return result


def _check_array(value: list, status: str, repairs: list[str]) -> ParseResult:
    result = ParseResult(status, items=len(value), repairs=repairs)
    if not value:
        result.errors.append("the array is empty")
    for i, item in enumerate(value):
        segment, problems = check_segment(item)
        if segment is None:
            result.errors.extend(f"segment {i} {p}" for p in problems)
        else:
            result.segments.append(segment)
    return result


def _loads(text: str) -> tuple[object, bool]:
    try:
        return json.loads(text), True
    except (ValueError, RecursionError):
        return None, False


def _embedded_json(text: str) -> tuple[object, bool, str, int]:
    """Find the first decodable JSON array (or object) inside surrounding prose; also return the
    number of characters it spans."""
    decoder = json.JSONDecoder()
    for opener, what in (("[", "removed prose around the array"), ("{", "removed prose around the object")):
        start = text.find(opener)
        tries = 0
        while start != -1 and tries < 50:
            try:
                value, end = decoder.raw_decode(text, start)
            except (ValueError, RecursionError):
                start = text.find(opener, start + 1)
                tries += 1
                continue
            if isinstance(value, (list, dict)):
                return value, True, what, end - start
            start = text.find(opener, start + 1)
            tries += 1
    return None, False, "", 0


def _unwrap(obj: dict) -> list | None:
    for key in ("segments", "script", "data", "items"):
        if isinstance(obj.get(key), list):
            return obj[key]
    lists = [v for v in obj.values() if isinstance(v, list)]
    return lists[0] if len(lists) == 1 else None


def dumps(segments: list[Segment] | list[dict]) -> str:
    """The canonical JSON text of a script (UTF-8 characters kept, one line)."""
    items = [s.to_dict() if isinstance(s, Segment) else s for s in segments]
    return json.dumps(items, ensure_ascii=False)


def from_dicts(items: list[dict]) -> list[Segment]:
    """Segments from trusted dicts (e.g. a stored reference); raises ValueError if one is invalid."""
    out = []
    for i, item in enumerate(items):
        segment, problems = check_segment(item)
        if segment is None:
            raise ValueError(f"segment {i} {'; '.join(problems)}")
        out.append(segment)
    return out


def reading_text(text: str) -> str:
    """The characters a narrator reads: scene-break lines, whitespace and outer quote marks removed."""
    lines = (line for line in text.split("\n") if not SCENE_BREAK.match(line))
    return _NOT_READ.sub("", "".join(lines))


def is_read(ch: str) -> bool:
    """Whether one character of a line that is not a scene break is read aloud (a dash is, although
    a line of dashes alone is a scene break)."""
    return not _NOT_READ.match(ch)


def joined_content(segments: list[Segment]) -> str:
    """All contents in order, as read (see :func:`reading_text`)."""
    return reading_text("".join(s.content for s in segments))
