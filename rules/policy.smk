rule build_policy:
    input:
        corpus=repo_file(config["corpus"]),
        slices=f"{RESULTS}/slices.jsonl",
        val=f"{RESULTS}/data/val.parquet",
        create_prompt=repo_file(config["agent"]["create_prompt"]),
        rewrite_prompt=repo_file(config["agent"]["rewrite_prompt"]),
        code=code("build_policy.py"),
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
    script:
        "../scripts/build_policy.py"
