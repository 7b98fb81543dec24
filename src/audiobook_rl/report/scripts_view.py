"""Scripts as the report shows them: parsed segments with display hints, or the raw text when
nothing could be read. Values stay plain strings; the template escapes them."""

from __future__ import annotations

import hashlib
import json

from ..script import FAMILY_OF, NARRATOR, parse_script


def speaker_hue(name: str) -> int:
    """A stable colour hue per speaker name, so one character keeps one colour across the page."""
    return int(hashlib.sha256(name.encode("utf-8")).hexdigest()[:4], 16) % 360


def script_view(raw) -> dict:
    """Segments of a raw output (text or list) with their parse status, repairs and problems."""
    result = parse_script(raw)
    segments = [
        {
            "narration": s.speaker == NARRATOR,
            "speaker": s.speaker,
            "content": s.content,
            "tone": s.tone,
            "family": FAMILY_OF.get(s.tone, ""),
            "intensity": s.intensity,
            "delay": s.delay,
            "hue": speaker_hue(s.speaker),
        }
        for s in result.segments
    ]
    if isinstance(raw, str):
        text = raw
    elif raw is None:
        text = ""
    else:
        text = json.dumps(raw, ensure_ascii=False, indent=1)
    return {
        "status": result.status,
        "segments": segments,
        "items": result.items,
        "repairs": result.repairs,
        "errors": result.errors[:8],
        "more_errors": max(0, len(result.errors) - 8),
        "raw": text,
    }
