rule split_dataset:
    input:
        labels=f"{RESULTS}/labels.jsonl",
        create_prompt=agent_prompt("create"),
        code=code("split_dataset"),
    output:
        train=f"{RESULTS}/data/train.parquet",
        val=f"{RESULTS}/data/val.parquet",
    log:
        f"{LOGS}/split_dataset.log",
    conda:
        "../envs/pipeline.yaml"
    params:
        split=config["split"],
    script:
        "../scripts/split_dataset.py"
