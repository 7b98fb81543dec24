"""judge: results/eval/[test/]step_{N}/outputs.jsonl + that split's tasks -> scores.jsonl beside them."""

import logging
from pathlib import Path

from audiobook_rl import backends, llm, steps
from audiobook_rl.dataset import read_tasks
from audiobook_rl.files import read_jsonl, write_json, write_jsonl
from audiobook_rl.judging.scores import score_outputs
from audiobook_rl.stage import run

log = logging.getLogger("audiobook_rl.judge")


def main(smk):
    settings = dict(smk.params.judge)
    if smk.input.prompt:  # the rule input (resolved path) of an LLM judge
        settings["prompt"] = smk.input.prompt[0]
    step = steps.parse(smk.wildcards.step)
    with llm.session(smk.params.llm, stage=f"judge step {step}") as session:
        judge = backends.get("judge", settings["backend"]).load()(settings, None)  # a missing key fails here
        rows = score_outputs(read_jsonl(smk.input.outputs), read_tasks(smk.input.tasks), judge, step)
    write_jsonl(smk.output[0], rows)
    usage = Path(smk.output[0]).with_suffix(".usage.json")
    write_json(usage, session.usage.summary())
    log.info("wrote %d scores to %s (usage in %s)", len(rows), smk.output[0], usage)


run(main, snakemake)  # noqa: F821
