"""slice_corpus: the novel -> results/slices.jsonl (one excerpt per line, with source offsets)."""

import logging

from audiobook_rl.corpus import has_dialogue, read_text, slice_text
from audiobook_rl.files import write_jsonl
from audiobook_rl.stage import run

log = logging.getLogger("audiobook_rl.slice_corpus")


def main(smk):
    settings = smk.params.slice
    text, encoding = read_text(smk.input.corpus)
    log.info("read %s: %d characters, %s", smk.input.corpus, len(text), encoding)
    if not has_dialogue(text):
        log.warning("%s has no dialogue (no “ quote marks): every script will be narration only", smk.input.corpus)
    slices = slice_text(
        text,
        n=settings["n_slices"],
        min_chars=settings["min_chars"],
        max_chars=settings["max_chars"],
        seed=settings["seed"],
        source=smk.input.corpus,
    )
    write_jsonl(smk.output[0], [s.to_dict() for s in slices])
    log.info("wrote %d slices to %s", len(slices), smk.output[0])


run(main, snakemake)  # noqa: F821
