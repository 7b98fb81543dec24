"""index_runs: results/runs/<name>/ of every finished run -> results/runs/index.html (runs, and arms of seeds)."""

import logging
import os

from audiobook_rl.stage import run
from audiobook_rl.sweep import build_index

log = logging.getLogger("audiobook_rl.index_runs")


def main(smk):
    run_dirs = [os.path.dirname(report) for report in smk.input.reports]
    rows = build_index(run_dirs, smk.output[0], stats=dict(smk.params.report))
    log.info("indexed %d runs: %s", len(rows), ", ".join(r.name for r in rows))


run(main, snakemake)  # noqa: F821
