rule report:
    input:
        metrics=f"{RESULTS}/train/metrics.jsonl",
        labels=f"{RESULTS}/labels.jsonl",
        val=f"{RESULTS}/data/val.parquet",
        policy=f"{RESULTS}/models/step_0",  # its config.json names the base policy
        outputs=expand(f"{RESULTS}/eval/step_{{step}}/outputs.jsonl", step=eval_steps()),
        scores=expand(f"{RESULTS}/eval/step_{{step}}/scores.jsonl", step=eval_steps()),
        template=str(repo_file("src/audiobook_rl/report/template.html")),
        code=code("report"),
    output:
        f"{RESULTS}/report.html",
    log:
        f"{LOGS}/report.log",
    conda:
        "../envs/pipeline.yaml"
    params:
        report=config["report"],
        # shown as provenance; they change results upstream, so the report reruns anyway
        train=config["train"],
        policy=config["policy"],
        eval=config["eval"],
        steps=eval_steps(),
        config_hash=config_hash(),
    script:
        "../scripts/report.py"
