"""Policy training (rule train_grpo): backends by name; the embedded one is local GRPO."""

from __future__ import annotations

from ..errors import UserError

BACKENDS = ("local",)


def check_backend(settings: dict) -> str:
    """The configured backend name, or one sentence naming the key and the choices."""
    name = settings.get("backend", "local")
    if name not in BACKENDS and name != "verl":
        raise UserError(f"config key 'train.backend' is {name!r}; choose one of {sorted(BACKENDS + ('verl',))}.")
    return name
