rule judge:
    input:
        outputs=f"{eval_dir()}/outputs.jsonl",
        # the references, as training reads them
        tasks=split_tasks,
        prompt=prompts("judge"),
        code=code("judge"),
    output:
        f"{eval_dir()}/scores.jsonl",
    log:
        f"{LOGS}/judge/{{split}}step_{{step}}.log",
    conda:
        conda_env("judge")
    resources:
        llm_api=llm_api("judge"),
    params:
        judge=JUDGE,
        llm=llm_settings,
    script:
        "../scripts/judge.py"


# More judges on the same outputs (judge.agreement), for the report's agreement section.
use rule judge as judge_agreement with:
    input:
        outputs=f"{eval_dir()}/outputs.jsonl",
        tasks=split_tasks,
        prompt=agreement_prompt,
        code=agreement_code,
    output:
        f"{eval_dir()}/judges/{{judge}}/scores.jsonl",
    log:
        f"{LOGS}/judge/{{split}}step_{{step}}/{{judge}}.log",
    resources:
        llm_api=agreement_llm_api,
    params:
        judge=lambda wildcards: AGREEMENT[wildcards.judge],
        llm=llm_settings,
