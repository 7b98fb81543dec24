"""label_slices: results/slices.jsonl -> results/labels.jsonl (one reference script per slice)."""

import logging

from audiobook_rl.corpus import Slice, read_text
from audiobook_rl.files import read_jsonl, write_jsonl
from audiobook_rl.labeling import label_slices
from audiobook_rl.stage import Progress, run

log = logging.getLogger("audiobook_rl.label_slices")


def main(smk):
    slices = [Slice(**row) for row in read_jsonl(smk.input.slices)]
    corpus_text, _ = read_text(smk.input.corpus)
    records = label_slices(slices, smk.params.label, corpus_text, progress=Progress(len(slices), "labeled"))
    write_jsonl(smk.output[0], records)
    log.info("wrote %d reference scripts to %s", len(records), smk.output[0])


run(main, snakemake)  # noqa: F821
