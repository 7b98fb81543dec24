rule label_slices:
    input:
        slices=f"{RESULTS}/slices.jsonl",
        corpus=CORPUS,
        prompt=prompts("label_slices"),
        code=code("label_slices"),
    output:
        f"{RESULTS}/labels.jsonl",
    log:
        f"{LOGS}/label_slices.log",
    conda:
        conda_env("label_slices")
    resources:
        llm_api=llm_api("label_slices"),
    params:
        label=backends.settings(config, "label"),
        llm=llm_settings,
    script:
        "../scripts/label_slices.py"
