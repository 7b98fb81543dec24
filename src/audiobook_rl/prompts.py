"""Prompt files: ``config/prompts/*.md``, each a system part and a user part.

A file looks like::

    === system ===
    You write audiobook scripts …
    === user ===
    Excerpt:
    {{text}}

Placeholders are ``{{name}}``; JSON examples with single braces are left alone.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from .errors import UserError

_SECTION = re.compile(r"^=== (system|user) ===[ \t]*$", re.M)
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


@dataclass(frozen=True)
class Prompt:
    path: str
    system: str
    user: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256((self.system + "\0" + self.user).encode()).hexdigest()[:16]

    def uses(self, name: str) -> bool:
        """Whether the prompt has the placeholder ``{{name}}``."""
        return "{{" + name + "}}" in self.system + self.user

    def messages(self, **values: str) -> list[dict]:
        """Chat messages with the placeholders filled in."""
        return [
            {"role": "system", "content": self._fill(self.system, values)},
            {"role": "user", "content": self._fill(self.user, values)},
        ]

    def _fill(self, template: str, values: dict) -> str:
        def sub(match: re.Match) -> str:
            key = match.group(1)
            if key not in values:
                raise UserError(f"{self.path}: placeholder {{{{{key}}}}} has no value; known: {sorted(values)}.")
            return str(values[key])

        return _PLACEHOLDER.sub(sub, template)


def load_prompt(path: str | Path) -> Prompt:
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: prompt file not found.")
    text = path.read_text(encoding="utf-8")
    parts = _SECTION.split(text)
    sections = dict(zip(parts[1::2], (p.strip("\n") for p in parts[2::2])))
    if "user" not in sections:
        raise UserError(f"{path}: a prompt file needs a '=== user ===' line (and usually '=== system ===').")
    return Prompt(str(path), sections.get("system", "").strip(), sections["user"].strip())
