"""Reference scripts for the excerpts: the ``label_slices`` stage.

A labeler has ``backend`` and ``model`` attributes and ``label(slices, progress=None) ->
list[list[Segment]]`` (one script per slice, in order). The backends (``rules``: :mod:`.rules`,
``claude``: :mod:`.claude`) are in :mod:`audiobook_rl.backends`; each builds its labeler from the
``label`` config section and the corpus lexicon (:mod:`.lexicon`).
"""

from __future__ import annotations

import logging

from ..corpus import Slice
from .lexicon import Lexicon

log = logging.getLogger(__name__)


def label_slices(slices: list[Slice], labeler, lexicon: Lexicon, progress=None) -> list[dict]:
    """Label every slice; one results/labels.jsonl record per slice (id, text, source offsets, script,
    backend, model, prompt hash, the corpus's aliases, which the judges need, and the names the
    corpus's lexicon finds in the excerpt, which tell the report a person from a fragment of text)."""
    log.info(
        "labeling %d slices with %s (%s); %d speaker names and %d aliases known from the corpus",
        len(slices), labeler.backend, labeler.model, len(lexicon.names), len(lexicon.aliases),
    )
    scripts = labeler.label(slices, progress=progress)
    return [
        {
            "id": item.id,
            "text": item.text,
            "start": item.start,
            "end": item.end,
            "script": [s.to_dict() for s in script],
            "backend": labeler.backend,
            "model": labeler.model,
            "prompt_hash": labeler.prompt_hash,
            "aliases": lexicon.aliases,
            "names": list(dict.fromkeys(m.group() for m in lexicon.names_in(item.text))),
        }
        for item, script in zip(slices, scripts)
    ]
