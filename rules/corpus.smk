rule slice_corpus:
    input:
        corpus=CORPUS,
        code=code("slice_corpus"),
    output:
        f"{RESULTS}/slices.jsonl",
    log:
        f"{LOGS}/slice_corpus.log",
    conda:
        "../envs/pipeline.yaml"
    params:
        slice=config["slice"],
    script:
        "../scripts/slice_corpus.py"
