rule export_checkpoint:
    input:
        # the training sentinel, not the checkpoint: adding an evaluated step never retrains
        summary=f"{RESULTS}/train/summary.json",
        base=f"{RESULTS}/models/step_0",
        code=code("export_checkpoint.py"),
    output:
        directory(f"{RESULTS}/models/step_{{step}}"),
    log:
        f"{LOGS}/export_checkpoint/step_{{step}}.log",
    wildcard_constraints:
        # step 0 is the base policy (rule build_policy); `best` = the best validation step
        step=r"[1-9]\d*|best",
    conda:
        conda_env(config["train"]["backend"] == "verl")
    params:
        train=config["train"],
    script:
        "../scripts/export_checkpoint.py"


rule generate:
    input:
        model=f"{RESULTS}/models/step_{{step}}",
        val=f"{RESULTS}/data/val.parquet",
        create_prompt=repo_file(config["agent"]["create_prompt"]),
        rewrite_prompt=repo_file(config["agent"]["rewrite_prompt"]),
        code=code("generate.py"),
    output:
        f"{RESULTS}/eval/step_{{step}}/outputs.jsonl",
    log:
        f"{LOGS}/generate/step_{{step}}.log",
    wildcard_constraints:
        step=r"\d+|best",
    conda:
        conda_env(config["generate"]["backend"] == "vllm")
    threads: config["resources"]["generate"]["threads"]
    resources:
        gpu=config["resources"]["generate"]["gpu"],
        mem_mb=config["resources"]["generate"]["mem_mb"],
        runtime=config["resources"]["generate"]["runtime"],
    params:
        generate=config["generate"],
    script:
        "../scripts/generate.py"
