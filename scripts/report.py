"""report: training metrics + labels (checked against the corpus's speaker key, if any) + each evaluated step's outputs and scores (validation and test) -> results/report.html."""

import logging

from audiobook_rl.files import write_text
from audiobook_rl.report import make_report
from audiobook_rl.stage import run
from audiobook_rl.steps import SFT

log = logging.getLogger("audiobook_rl.report")


def main(smk):
    steps = list(smk.params.steps)
    evals = dict(zip(steps, zip(smk.input.outputs, smk.input.scores)))
    test_evals = dict(zip(steps, zip(smk.input.test_outputs, smk.input.test_scores)))
    # each extra judge's scores of every training step, in the order the rule lists them (judge by
    # judge; the warm start is not among them)
    extra = iter(smk.input.agreement)
    judges = {name: {step: next(extra) for step in steps if step != SFT} for name in smk.params.agreement}
    html = make_report(
        metrics=smk.input.metrics,
        labels=smk.input.labels,
        corpus=smk.input.corpus,
        speaker_key=smk.input.speaker_key[0] if smk.input.speaker_key else None,
        evals=evals,
        settings=dict(smk.params.report),
        val=smk.input.val,
        test_evals=test_evals,
        test=smk.input.test if test_evals else None,
        judges=judges,
        judge_name=smk.params.judge,
        train=dict(smk.params.train),
        policy=dict(smk.params.policy),
        eval_cfg=dict(smk.params.eval),
        config_hash=smk.params.config_hash,
        template=smk.input.template,
        policy_dir=smk.input.policy,
    )
    write_text(smk.output[0], html)
    log.info("wrote %s (%d bytes, %d evaluated steps)", smk.output[0], len(html.encode("utf-8")), len(steps))


run(main, snakemake)  # noqa: F821
