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
    script:
        "../scripts/build_policy.py"
