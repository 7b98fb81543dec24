"""split_dataset: results/labels.jsonl (+ the corpus, for the text before each excerpt when
agent.context_chars > 0) -> results/data/{train,val,test}.parquet (test may be empty)."""

import logging

from audiobook_rl.corpus import read_text
from audiobook_rl.dataset import split_rows
from audiobook_rl.files import read_jsonl, write_parquet_rows
from audiobook_rl.prompts import load_prompt
from audiobook_rl.stage import run

log = logging.getLogger("audiobook_rl.split_dataset")


def main(smk):
    labels = read_jsonl(smk.input.labels)
    context_chars = smk.params.context_chars
    novel = read_text(smk.input.corpus)[0] if context_chars else ""
    rows = split_rows(labels, smk.params.split, load_prompt(smk.input.create_prompt), novel, context_chars)
    for split in ("train", "val", "test"):
        path = smk.output[split]
        write_parquet_rows(path, rows[split])
        log.info("wrote %d %s rows to %s", len(rows[split]), split, path)


run(main, snakemake)  # noqa: F821
