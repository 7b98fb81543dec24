"""label_slices: results/slices.jsonl -> results/labels.jsonl (one reference script per slice)."""

import logging
from pathlib import Path

from audiobook_rl import llm
from audiobook_rl.corpus import Slice, read_text
from audiobook_rl.files import read_jsonl, write_json, write_jsonl
from audiobook_rl.labeling import claude  # noqa: F401  (the claude backend: an input of this rule)
from audiobook_rl.labeling import label_slices
from audiobook_rl.stage import Progress, run

log = logging.getLogger("audiobook_rl.label_slices")


def main(smk):
    slices = [Slice(**row) for row in read_jsonl(smk.input.slices)]
    corpus_text, _ = read_text(smk.input.corpus)
    settings = dict(smk.params.label)
    if smk.input.prompt:  # the rule input (resolved path) of the claude backend
        settings["prompt"] = str(smk.input.prompt[0] if isinstance(smk.input.prompt, list) else smk.input.prompt)
    with llm.session(smk.params.llm, stage="label_slices") as session:
        records = label_slices(slices, settings, corpus_text, progress=Progress(len(slices), "labeled"))
    write_jsonl(smk.output[0], records)
    # Token and cost totals beside the output (zero for the rules backend).
    write_json(Path(smk.output[0]).with_suffix(".usage.json"), session.usage.summary())
    log.info("wrote %d reference scripts to %s", len(records), smk.output[0])


run(main, snakemake)  # noqa: F821
