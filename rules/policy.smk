rule build_policy:
    input:
        corpus=CORPUS,
        val=f"{RESULTS}/data/val.parquet",
        test=f"{RESULTS}/data/test.parquet",
        create_prompt=agent_prompt("create"),
        rewrite_prompt=agent_prompt("rewrite"),
        code=code("build_policy"),
    output:
        directory(f"{RESULTS}/models/step_0"),
    log:
        f"{LOGS}/build_policy.log",
    conda:
        "../envs/pipeline.yaml"
    threads: config["resources"]["build_policy"]["threads"]
    resources:
        mem_mb=config["resources"]["build_policy"]["mem_mb"],
        runtime=config["resources"]["build_policy"]["runtime"],
    params:
        policy=config["policy"],
        context_chars=config["agent"]["context_chars"],
    script:
        "../scripts/build_policy.py"


# The supervised warm start on the training references (and, with sft.window_draws, more windows of the
# corpus); training starts here when sft.epochs > 0.
rule sft_policy:
    input:
        train=f"{RESULTS}/data/train.parquet",
        corpus=CORPUS,
        val=f"{RESULTS}/data/val.parquet",
        test=f"{RESULTS}/data/test.parquet",
        policy=f"{RESULTS}/models/step_0",
        create_prompt=agent_prompt("create"),
        rewrite_prompt=agent_prompt("rewrite"),
        code=code("sft_policy"),
    output:
        directory(f"{RESULTS}/models/step_sft"),
    log:
        f"{LOGS}/sft_policy.log",
    conda:
        "../envs/pipeline.yaml"
    threads: config["resources"]["sft_policy"]["threads"]
    resources:
        gpu=config["resources"]["sft_policy"]["gpu"],
        mem_mb=config["resources"]["sft_policy"]["mem_mb"],
        runtime=config["resources"]["sft_policy"]["runtime"],
    params:
        sft=config["sft"],
        slice=config["slice"],
        context_chars=config["agent"]["context_chars"],
    script:
        "../scripts/sft_policy.py"
