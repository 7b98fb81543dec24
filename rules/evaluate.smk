# step_0 is the base policy itself; every other step (a number or `best`) is exported from training.
ruleorder: build_policy > export_checkpoint


rule export_checkpoint:
    input:
        # the training sentinel, not the checkpoint: adding an evaluated step never retrains
        summary=f"{RESULTS}/train/summary.json",
        base=f"{RESULTS}/models/step_0",
        code=code("export_checkpoint"),
    output:
        directory(f"{RESULTS}/models/step_{{step}}"),
    log:
        f"{LOGS}/export_checkpoint/step_{{step}}.log",
    conda:
        conda_env("export_checkpoint")
    params:
        train=config["train"],
    script:
        "../scripts/export_checkpoint.py"


rule generate:
    input:
        **generate_inputs("val"),
    output:
        f"{eval_dir('val')}/outputs.jsonl",
    log:
        f"{LOGS}/generate/step_{{step}}.log",
    conda:
        conda_env("generate")
    threads: config["resources"]["generate"]["threads"]
    resources:
        gpu=gpus("generate"),
        mem_mb=config["resources"]["generate"]["mem_mb"],
        runtime=config["resources"]["generate"]["runtime"],
    params:
        generate=config["generate"],
    script:
        "../scripts/generate.py"


# The same checkpoints on the held-out test slices (split.n_test > 0).
use rule generate as generate_test with:
    input:
        **generate_inputs("test"),
    output:
        f"{eval_dir('test')}/outputs.jsonl",
    log:
        f"{LOGS}/generate/test/step_{{step}}.log",
