# step_0 is the base policy itself, step_sft its warm start; every other step (a number or `best`) is
# exported from training.
ruleorder: build_policy > sft_policy > export_checkpoint


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


# On the validation slices (results/eval/step_N/) and on the held-out test slices (eval/test/step_N/).
rule generate:
    input:
        model=f"{RESULTS}/models/step_{{step}}",
        tasks=split_tasks,
        create_prompt=agent_prompt("create"),
        rewrite_prompt=agent_prompt("rewrite"),
        code=code("generate"),
    output:
        f"{eval_dir()}/outputs.jsonl",
    log:
        f"{LOGS}/generate/{{split}}step_{{step}}.log",
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
