rule train_grpo:
    input:
        train=f"{RESULTS}/data/train.parquet",
        val=f"{RESULTS}/data/val.parquet",
        policy=f"{RESULTS}/models/step_0",
        create_prompt=repo_file(config["agent"]["create_prompt"]),
        rewrite_prompt=repo_file(config["agent"]["rewrite_prompt"]),
        reward_prompt=prompt("train.reward.prompt"),
        code=code("train_grpo.py"),
    output:
        # Sentinels only: the checkpoints (results/train/checkpoints/) must survive a failed
        # job, which Snakemake would delete if they were declared, so that a rerun resumes.
        metrics=f"{RESULTS}/train/metrics.jsonl",
        summary=f"{RESULTS}/train/summary.json",
    log:
        f"{LOGS}/train_grpo.log",
    conda:
        conda_env(config["train"]["backend"] == "verl")
    threads: config["resources"]["train_grpo"]["threads"]
    resources:
        gpu=train_gpus(),
        # every rollout is judged by the training reward: a paid one shares `--resources llm_api=N`
        llm_api=0 if config["train"]["reward"]["backend"] == "rubric" else 1,
        mem_mb=config["resources"]["train_grpo"]["mem_mb"],
        runtime=config["resources"]["train_grpo"]["runtime"],
    params:
        train=config["train"],
        # a function of `resources`: not recorded, so editing the llm section reruns nothing
        llm=lambda wildcards, resources: config["llm"],
        # concurrency only, like llm: not recorded, so it reruns nothing
        n_runners=lambda wildcards, resources: config["resources"]["train_grpo"][
            "n_runners"
        ],
    script:
        "../scripts/train_grpo.py"
