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
        judge=config["judge"],
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
