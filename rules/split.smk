rule split_dataset:
    input:
        labels=f"{RESULTS}/labels.jsonl",
        corpus=CORPUS,
        create_prompt=agent_prompt("create"),
        code=code("split_dataset"),
    output:
        train=f"{RESULTS}/data/train.parquet",
        val=f"{RESULTS}/data/val.parquet",
        # written even when split.n_test is 0, so the DAG has the same shape with or without a test set
        test=f"{RESULTS}/data/test.parquet",
    log:
        f"{LOGS}/split_dataset.log",
    conda:
        "../envs/pipeline.yaml"
    params:
        split=config["split"],
        context_chars=config["agent"]["context_chars"],
    script:
        "../scripts/split_dataset.py"
