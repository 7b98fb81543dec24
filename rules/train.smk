rule train_grpo:
    input:
        train=f"{RESULTS}/data/train.parquet",
        val=f"{RESULTS}/data/val.parquet",
        policy=start_policy(),
        create_prompt=agent_prompt("create"),
        rewrite_prompt=agent_prompt("rewrite"),
        reward_prompt=prompts("train_grpo"),
        code=code("train_grpo"),
    output:
        # Sentinels only: the checkpoints (results/train/checkpoints/) must survive a failed
        # job, which Snakemake would delete if they were declared, so that a rerun resumes.
        metrics=f"{RESULTS}/train/metrics.jsonl",
        summary=f"{RESULTS}/train/summary.json",
    log:
        f"{LOGS}/train_grpo.log",
    conda:
        conda_env("train_grpo")
    threads: config["resources"]["train_grpo"]["threads"]
    resources:
        gpu=gpus("train_grpo"),
        # every rollout is judged by the training reward: a paid one shares `--resources llm_api=N`
        llm_api=llm_api("train_grpo"),
        mem_mb=config["resources"]["train_grpo"]["mem_mb"],
        runtime=config["resources"]["train_grpo"]["runtime"],
    params:
        train=config["train"],
        llm=llm_settings,
        n_runners=n_runners,
    script:
        "../scripts/train_grpo.py"
