rule judge:
    input:
        outputs=f"{RESULTS}/eval/step_{{step}}/outputs.jsonl",
        labels=f"{RESULTS}/labels.jsonl",
        # the rubric prompt matters only to the LLM judges
        prompt=prompt("judge.prompt"),
        code=code("judge.py"),
    output:
        f"{RESULTS}/eval/step_{{step}}/scores.jsonl",
    log:
        f"{LOGS}/judge/step_{{step}}.log",
    wildcard_constraints:
        step=r"\d+",
    conda:
        "../envs/pipeline.yaml"
    resources:
        # paid API stages share `--resources llm_api=N`
        llm_api=0 if config["judge"]["backend"] == "rubric" else 1,
    params:
        judge=config["judge"],
        # a function of `resources`: Snakemake does not record it, so editing the llm section
        # (concurrency, timeouts, cache) reruns nothing
        llm=lambda wildcards, resources: config["llm"],
    script:
        "../scripts/judge.py"
