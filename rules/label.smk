rule label_slices:
    input:
        slices=f"{RESULTS}/slices.jsonl",
        corpus=repo_file(config["corpus"]),
        code=code("label_slices.py"),
    output:
        f"{RESULTS}/labels.jsonl",
    log:
        f"{LOGS}/label_slices.log",
    conda:
        "../envs/pipeline.yaml"
    params:
        label=config["label"],
    script:
        "../scripts/label_slices.py"
