# Runs with different `run_name`s write to results/runs/<name>/; this page compares the finished ones.
rule index_runs:
    input:
        reports=[f"{RUNS}/{run}/report.html" for run in run_names()],
        scores=[run_scores(run) for run in run_names()],
        code=code("index_runs"),
    output:
        f"{RUNS}/index.html",
    log:
        "logs/runs/index_runs.log",
    conda:
        "../envs/pipeline.yaml"
    params:
        # the bootstrap settings of the intervals, as each run's report uses them
        report=config["report"],
    script:
        "../scripts/index_runs.py"
