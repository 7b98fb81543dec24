rule label_slices:
    input:
        slices=f"{RESULTS}/slices.jsonl",
        corpus=repo_file(config["corpus"]),
        # the labeling prompt matters only to the claude backend
        prompt=prompt("label.prompt"),
        code=code("label_slices.py"),
    output:
        f"{RESULTS}/labels.jsonl",
    log:
        f"{LOGS}/label_slices.log",
    conda:
        "../envs/pipeline.yaml"
    resources:
        # paid API stages share `--resources llm_api=N`
        llm_api=1 if config["label"]["backend"] == "claude" else 0,
    params:
        label=config["label"],
        # a function of `resources`: Snakemake does not record it, so editing the llm section
        # (concurrency, timeouts, cache) reruns nothing
        llm=lambda wildcards, resources: config["llm"],
    script:
        "../scripts/label_slices.py"
