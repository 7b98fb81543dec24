"""Reference scripts for the excerpts: the ``label_slices`` stage and its backends.

A backend is any object with ``backend`` and ``model`` attributes and a method
``label(slices, progress=None) -> list[list[Segment]]`` (one script per slice, in order). Backends
are looked up by name in :data:`BACKENDS`; each factory takes the ``label`` config section and the
corpus lexicon and imports its SDK only when chosen.
"""

from __future__ import annotations

import importlib
import logging
from typing import Callable

from ..corpus import Slice
from ..errors import UserError
from ..script import dumps
from .lexicon import Lexicon, build_lexicon

log = logging.getLogger(__name__)


def _rules(settings: dict, lexicon: Lexicon | None):
    from .rules import RuleLabeler

    return RuleLabeler(lexicon)


def _claude(settings: dict, lexicon: Lexicon | None):
    # Loaded by name so that stages that only use the rule labeler (policy building) do not depend
    # on the API client code: see audiobook_rl.deps.
    return importlib.import_module(f"{__name__}.claude").ClaudeLabeler(settings)


BACKENDS: dict[str, Callable] = {"rules": _rules, "claude": _claude}


def make_labeler(settings: dict, lexicon: Lexicon | None = None):
    name = settings.get("backend", "rules")
    if name not in BACKENDS:
        raise UserError(f"config key 'label.backend' is {name!r}; choose one of {sorted(BACKENDS)}.")
    return BACKENDS[name](settings, lexicon)


def label_slices(slices: list[Slice], settings: dict, corpus_text: str, progress=None) -> list[dict]:
    """Label every slice; return one record per slice (id, script, backend, model, aliases)."""
    lexicon = build_lexicon(corpus_text)
    labeler = make_labeler(settings, lexicon)
    log.info(
        "labeling %d slices with %s (%s); %d speaker names and %d aliases known from the corpus",
        len(slices), labeler.backend, labeler.model, len(lexicon.names), len(lexicon.aliases),
    )
    scripts = labeler.label(slices, progress=progress)
    records = []
    for item, script in zip(slices, scripts):
        records.append(
            {
                "id": item.id,
                "text": item.text,
                "script": [s.to_dict() for s in script],
                "backend": labeler.backend,
                "model": labeler.model,
                "prompt_hash": getattr(labeler, "prompt_hash", None),
                "aliases": lexicon.aliases,
            }
        )
    return records


__all__ = ["BACKENDS", "make_labeler", "label_slices", "build_lexicon", "dumps"]
