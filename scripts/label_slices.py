"""label_slices: results/slices.jsonl -> results/labels.jsonl (one reference script per slice)."""

import logging
from pathlib import Path

from audiobook_rl import backends, llm
from audiobook_rl.corpus import Slice, read_text
from audiobook_rl.files import read_jsonl, write_json, write_jsonl
from audiobook_rl.labeling import label_slices
from audiobook_rl.labeling.lexicon import build_lexicon
from audiobook_rl.stage import Progress, run

log = logging.getLogger("audiobook_rl.label_slices")


def main(smk):
    slices = [Slice(**row) for row in read_jsonl(smk.input.slices)]
    corpus_text, _ = read_text(smk.input.corpus)
    settings = dict(smk.params.label)
    if smk.input.prompt:  # the rule input (resolved path) of a backend that reads a prompt
        settings["prompt"] = smk.input.prompt[0]
    lexicon = build_lexicon(corpus_text)  # names and aliases of the whole novel
    with llm.session(smk.params.llm, stage="label_slices") as session:
        labeler = backends.get("label", settings["backend"]).load()(settings, lexicon)  # a missing key fails here
        records = label_slices(slices, labeler, lexicon, progress=Progress(len(slices), "labeled"))
    write_jsonl(smk.output[0], records)
    # Token and cost totals beside the output (zero for the rules backend).
    write_json(Path(smk.output[0]).with_suffix(".usage.json"), session.usage.summary())
    log.info("wrote %d reference scripts to %s", len(records), smk.output[0])


run(main, snakemake)  # noqa: F821
