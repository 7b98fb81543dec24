"""export_checkpoint: results/train/checkpoints/step_N -> results/models/step_N/ (a Hugging Face dir)."""

import json
import logging
from pathlib import Path

from audiobook_rl.errors import UserError
from audiobook_rl.stage import run
from audiobook_rl.training.export import export_verl
from audiobook_rl.training.export_local import export_local

log = logging.getLogger("audiobook_rl.export_checkpoint")


def main(smk):
    summary = json.loads(Path(smk.input.summary).read_text(encoding="utf-8"))
    if smk.params.train.get("backend", "local") == "verl":
        # FSDP shards -> Hugging Face dir through verl's own merger
        step = export_verl(smk.wildcards.step, summary, smk.output[0], log_file=smk.log[0])
        log.info("exported step %d to %s", step, smk.output[0])
        return
    if smk.params.train.get("backend", "local") != "local":
        raise UserError(f"config key 'train.backend': {smk.params.train['backend']!r} has no exporter in this stage script.")
    checkpoints = Path(smk.input.summary).parent / "checkpoints"
    step = export_local(smk.wildcards.step, summary, checkpoints, smk.input.base, smk.output[0])
    log.info("exported step %d to %s", step, smk.output[0])


run(main, snakemake)  # noqa: F821
