rule judge:
    input:
        **judge_inputs("val"),
    output:
        f"{eval_dir('val')}/scores.jsonl",
    log:
        f"{LOGS}/judge/step_{{step}}.log",
    conda:
        conda_env("judge")
    resources:
        llm_api=llm_api("judge"),
    params:
        judge=JUDGE,
        llm=llm_settings,
    script:
        "../scripts/judge.py"


use rule judge as judge_test with:
    input:
        **judge_inputs("test"),
    output:
        f"{eval_dir('test')}/scores.jsonl",
    log:
        f"{LOGS}/judge/test/step_{{step}}.log",


# More judges on the same outputs (judge.agreement), for the report's agreement section.
use rule judge as judge_agreement with:
    input:
        outputs=f"{eval_dir(head_split())}/outputs.jsonl",
        tasks=f"{RESULTS}/data/{head_split()}.parquet",
        prompt=agreement_prompt,
        code=agreement_code,
    output:
        f"{agreement_dir()}/scores.jsonl",
    log:
        f"{LOGS}/judge/{head_split()}/step_{{step}}/{{judge}}.log",
    resources:
        llm_api=agreement_llm_api,
    params:
        judge=lambda wildcards: AGREEMENT[wildcards.judge],
        llm=llm_settings,
