rule report:
    input:
        metrics=f"{RESULTS}/train/metrics.jsonl",
        labels=f"{RESULTS}/labels.jsonl",
        # the corpus and its speaker key, if any: how right the references' speakers are
        corpus=CORPUS,
        speaker_key=speaker_key(),
        val=f"{RESULTS}/data/val.parquet",
        policy=f"{RESULTS}/models/step_0",  # its config.json names the base policy
        test=f"{RESULTS}/data/test.parquet",
        outputs=eval_files("val", "outputs.jsonl"),
        scores=eval_files("val", "scores.jsonl"),
        # the held-out test slices (none when split.n_test is 0)
        test_outputs=eval_files("test", "outputs.jsonl"),
        test_scores=eval_files("test", "scores.jsonl"),
        # the extra judges (judge.agreement) on the same outputs
        agreement=agreement_files(),
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
        judge=judge_name(JUDGE),
        agreement=list(AGREEMENT),
        config_hash=config_hash(),
    script:
        "../scripts/report.py"
