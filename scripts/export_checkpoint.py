"""export_checkpoint: results/train/checkpoints/step_N -> results/models/step_N/ (a Hugging Face dir)."""

import logging

from audiobook_rl import backends
from audiobook_rl.stage import run
from audiobook_rl.training import ExportJob

log = logging.getLogger("audiobook_rl.export_checkpoint")


def main(smk):
    export = backends.get("train", smk.params.train["backend"]).load("export")
    job = ExportJob(smk.wildcards.step, smk.input.summary, smk.input.base, smk.output[0], log_file=smk.log[0])
    step = export(job)
    log.info("exported step %d to %s", step, smk.output[0])


run(main, snakemake)  # noqa: F821
