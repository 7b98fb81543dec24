# audiobook-rl: novel excerpts -> reference scripts -> GRPO training -> judged checkpoints -> report.
# The DAG is the architecture: one rules/*.smk file per stage, helpers in rules/common.smk.
import os

from snakemake.utils import min_version

min_version("9.0")


# The default config lives with the workflow, so `snakemake -d elsewhere` finds it too.
configfile: os.path.join(workflow.basedir, "config", "config.yaml")


include: "rules/common.smk"
include: "rules/corpus.smk"
include: "rules/label.smk"
include: "rules/split.smk"
include: "rules/policy.smk"
include: "rules/train.smk"
include: "rules/evaluate.smk"
include: "rules/judge.smk"
include: "rules/report.smk"
include: "rules/sweep.smk"


rule all:
    default_target: True
    input:
        final_outputs(),
