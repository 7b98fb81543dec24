rule judge:
    input:
        outputs=f"{RESULTS}/eval/step_{{step}}/outputs.jsonl",
        # the references, as training reads them
        val=f"{RESULTS}/data/val.parquet",
        prompt=prompts("judge"),
        code=code("judge"),
    output:
        f"{RESULTS}/eval/step_{{step}}/scores.jsonl",
    log:
        f"{LOGS}/judge/step_{{step}}.log",
    conda:
        conda_env("judge")
    resources:
        llm_api=llm_api("judge"),
    params:
        judge=config["judge"],
        llm=llm_settings,
    script:
        "../scripts/judge.py"
