"""One tiny run of the whole DAG (story -> slices -> labels -> split -> policy -> GRPO -> export ->
generate -> judge -> report): what it makes, the held-out test set among it, and, after it, an edit
reruns exactly the stages it invalidates (the README's table).

The rows of the table are dry runs on the finished run. Rows that edit a file restore it afterwards;
contents are compared by checksum, so a restored file is unchanged. The run uses a copy of the workflow
and package, so that the package files these tests edit and touch are the copy's, never those that
other tests' runs read meanwhile.
"""

from __future__ import annotations

import json
import re
import shutil
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from audiobook_rl.files import read_jsonl, read_parquet_rows
from helpers import REPO, STORY
from helpers import workflow
from helpers.workflow import ran_rules, workflow_copy
from helpers.policy import TINY_POLICY, TINY_TRAIN
from helpers.workflow import BAD_CORPORA

pytestmark = pytest.mark.slow

BASE = {
    "corpus": "novel.txt",
    "agent": {"create_prompt": "create.md", "rewrite_prompt": "rewrite.md"},
    "policy": TINY_POLICY,
    "train": {**TINY_TRAIN, "total_steps": 2, "save_freq": 1, "test_freq": 1},
    "eval": {"steps": [2]},
    "generate": {"backend": "hf", "temperature": 0.0, "max_tokens": 12, "batch_size": 8, "seed": 0},
    "report": {"bootstrap_samples": 100},
}
EVERYTHING = {
    "slice_corpus", "label_slices", "split_dataset", "build_policy", "train_grpo",
    "export_checkpoint", "generate", "judge", "report",
}  # fmt: skip
FROM_SPLIT = EVERYTHING - {"slice_corpus", "label_slices"}
FROM_TRAINING = {"train_grpo", "export_checkpoint", "generate", "judge", "report"}
# Set during the run (and the seed dry run below): no file may ever contain them.
DUMMY_KEYS = {
    "ANTHROPIC_API_KEY": "sk-ant-dummy-7f3a9c1e5b",
    "ZHIPUAI_API_KEY": "zhipu-dummy-4d8e2b6a0f",
    "OPENAI_API_KEY": "sk-openai-dummy-9b1d3f5a7c",
}


WORKFLOW: list[Path] = []  # the module's copy of the workflow and package (fixture `run`)


def snakemake(workdir: Path, *args: str, **options):
    """A run of the module's copy of the workflow."""
    return workflow.snakemake(workdir, *args, repo=WORKFLOW[0], **options)


def planned_rules(workdir: Path, *targets: str, configfile: Path) -> set[str]:
    """The rules a dry run of the module's copy of the workflow would execute."""
    return workflow.planned_rules(workdir, *targets, configfile=configfile, repo=WORKFLOW[0])


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    WORKFLOW[:] = [workflow_copy(tmp_path_factory.mktemp("workflow"))]
    workdir = tmp_path_factory.mktemp("trust")
    shutil.copy(STORY, workdir / "novel.txt")
    # the story's speaker key beside it: the report checks the references' speakers against it
    shutil.copy(STORY.with_name("story.speakers.json"), workdir / "novel.speakers.json")
    for name in ("create.md", "rewrite.md"):
        shutil.copy(REPO / "config" / "prompts" / name, workdir / name)
    base = write(workdir, BASE, "base.yaml")
    snakemake(workdir, "--cores", "2", "--configfile", str(base), env=DUMMY_KEYS)
    assert (workdir / "results/report.html").is_file()
    return workdir


def write(workdir: Path, config: dict, name: str = "overlay.yaml") -> Path:
    path = workdir / name
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return path


def merged(**changes) -> dict:
    config = yaml.safe_load(yaml.safe_dump(BASE))
    for section, value in changes.items():
        if isinstance(value, dict) and isinstance(config.get(section), dict):
            config[section].update(value)
        else:
            config[section] = value
    return config


def plan(workdir: Path, **changes) -> set[str]:
    return planned_rules(workdir, configfile=write(workdir, merged(**changes)))


@contextmanager
def edited(path: Path, append: str):
    original = path.read_bytes()
    try:
        path.write_bytes(original + append.encode())
        yield
    finally:
        path.write_bytes(original)


# What the finished run made.


def test_training_saves_and_every_evaluated_step_is_exported_generated_and_judged(run):
    results = run / "results"
    assert [m["step"] for m in read_jsonl(results / "train/metrics.jsonl")] == [0, 1, 2]
    assert json.loads((results / "train/summary.json").read_text())["saved_steps"] == [1, 2]
    assert (results / "train/checkpoints/step_2/trainer_state.pt").is_file()
    for step in (0, 2):
        assert (results / f"models/step_{step}/config.json").is_file()
        outputs = read_jsonl(results / f"eval/step_{step}/outputs.jsonl")
        scores = read_jsonl(results / f"eval/step_{step}/scores.jsonl")
        assert len(outputs) == len(scores) == 4  # the validation slices
        assert all(o["step"] == step for o in outputs)


def test_the_test_set_is_disjoint_from_train_and_val_by_offsets(run):
    parts = {
        name: [row["extra_info"] for row in read_parquet_rows(run / f"results/data/{name}.parquet")]
        for name in ("train", "val", "test")
    }
    assert [len(parts[n]) for n in ("train", "val", "test")] == [16, 4, 16]  # the default split
    spans = {name: [set(range(i["start"], i["end"])) for i in infos] for name, infos in parts.items()}
    for a, b in (("train", "val"), ("train", "test"), ("val", "test")):
        assert not any(x & y for x in spans[a] for y in spans[b]), (a, b)


def test_every_evaluated_checkpoint_is_judged_on_test_and_the_headline_is_measured_there(run):
    test_ids = {row["extra_info"]["slice_id"] for row in read_parquet_rows(run / "results/data/test.parquet")}
    for step in (0, 2):
        assert {s["id"] for s in read_jsonl(run / f"results/eval/test/step_{step}/scores.jsonl")} == test_ids
    html = (run / "results/report.html").read_text(encoding="utf-8")
    headline = re.search(r'<p class="headline \w+">(.*?)</p>', html).group(1)
    # the tiny policy scores alike everywhere, so the headline is "no checkpoint beat ...", on test
    assert re.search(r"(test score [\d.]+|on the test set) \(n = 16\)", headline), headline
    assert "measured on the 16 held-out test slices" in headline and "optimistic" not in headline


# What an edit reruns.


def test_a_finished_run_has_nothing_left_to_do(run):
    assert plan(run) == set()


@pytest.mark.parametrize(
    "changes,expected",
    [
        ({"slice": {"seed": 99}}, EVERYTHING),
        # Claude's settings, which the rule labeler never reads: only the report, for the config hash it shows
        ({"label": {"max_tokens": 2048, "context_chars": 300}}, {"report"}),
        ({"split": {"seed": 8}}, FROM_SPLIT),
        ({"train": {"lr": 0.002}}, FROM_TRAINING),
        ({"resources": {"train_grpo": {"gpu": 0, "threads": 1, "mem_mb": 5000, "runtime": 90, "n_runners": 8}}}, set()),
        ({"llm": {"concurrency": 3, "timeout_s": 30}}, set()),
        ({"eval": {"steps": [1, 2]}}, {"export_checkpoint", "generate", "judge", "report"}),
        ({"judge": {"weights": {"format": 0.4, "completeness": 0.3, "speaker": 0.1, "emotion": 0.1, "segmentation": 0.1}}}, {"judge", "report"}),
        ({"report": {"title": "another title"}}, {"report"}),
        # the warm start switched on: its own stage, then training starts from it
        ({"sft": {"epochs": 1}}, {"sft_policy"} | FROM_TRAINING),
    ],
    ids=["slicing", "claude-keys-under-rules", "split-seed", "training", "resources", "client-knobs", "eval-steps", "judge-weights", "report",
         "sft-on"],
)
def test_a_config_edit_reruns_exactly_its_stages(run, changes, expected):
    assert plan(run, **changes) == expected


@pytest.mark.parametrize(
    "changes,expected,untouched",
    [
        ({"judge": {"weights": {"format": 0.4, "completeness": 0.3, "speaker": 0.1, "emotion": 0.1, "segmentation": 0.1}}},
         {"judge", "report"}, ["results/train/metrics.jsonl", "results/eval/step_2/outputs.jsonl"]),
        ({"report": {"title": "another title"}}, {"report"}, ["results/eval/step_2/scores.jsonl"]),
        ({"resources": {"train_grpo": {"gpu": 0, "threads": 1, "mem_mb": 5000, "runtime": 90, "n_runners": 8}}}, set(),
         ["results/report.html"]),
    ],
    ids=["judge-weights", "report", "resources"],
)  # fmt: skip
def test_a_real_rerun_runs_only_those_stages(run, tmp_path, changes, expected, untouched):
    copy = tmp_path / "run"
    shutil.copytree(run, copy)  # keeps modification times: the copy is as finished as the original
    before = {path: (copy / path).stat().st_mtime_ns for path in untouched}
    proc = snakemake(copy, "--cores", "2", "--configfile", str(write(copy, merged(**changes))), env=DUMMY_KEYS)
    assert ran_rules(proc) == expected
    assert {path: (copy / path).stat().st_mtime_ns for path in untouched} == before


def test_the_sft_warm_start_runs_between_the_split_and_training_and_is_evaluated_like_a_checkpoint(run, tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    sft = {"epochs": 1, "batch_size": 4, "window_draws": 1, "windows_per_draw": 10}
    proc = snakemake(copy, "--cores", "2", "--configfile", str(write(copy, merged(sft=sft))), env=DUMMY_KEYS)
    assert ran_rules(proc) == {"sft_policy"} | FROM_TRAINING
    results = copy / "results"
    summary = json.loads((results / "models/step_sft/sft.json").read_text())
    # 16 references and the windows of the corpus kept, x 2 roles, one epoch of 4
    windows = summary["corpus_windows"]
    assert 0 < windows <= 10 and summary["examples"] == 2 * (16 + windows) and summary["steps"] == -(-summary["examples"] // 4)
    assert summary["deterministic"] is False
    log = (copy / "logs/sft_policy.log").read_text(encoding="utf-8")
    assert f"{windows} windows of the corpus outside 20 held-out slices" in log  # 4 validation + 16 test
    for split in ("", "test/"):
        outputs = read_jsonl(results / f"eval/{split}step_sft/outputs.jsonl")
        assert outputs and all(o["step"] == "sft" for o in outputs)
        assert len(read_jsonl(results / f"eval/{split}step_sft/scores.jsonl")) == len(outputs)
    html = (results / "report.html").read_text(encoding="utf-8")
    assert "SFT warm start" in html and 'id="sft-table"' in html and "Against the SFT warm start" in html
    # Switched off again, training starts from step_0 again: training and what follows rerun, not the warm start.
    assert planned_rules(copy, configfile=write(copy, merged())) == FROM_TRAINING
    # Without the references, the windows alone, kept off the training slices too (GRPO's tasks are new to it);
    # and with deterministic kernels only.
    apart = write(copy, merged(sft={**sft, "references": False, "deterministic": True}))
    proc = snakemake(copy, "results/models/step_sft", "--cores", "2", "--configfile", str(apart), env=DUMMY_KEYS)
    assert ran_rules(proc) == {"sft_policy"}
    summary = json.loads((results / "models/step_sft/sft.json").read_text())
    assert 0 < summary["corpus_windows"] <= 10 and summary["examples"] == 2 * summary["corpus_windows"]
    log = (copy / "logs/sft_policy.log").read_text(encoding="utf-8")
    assert f"{summary['corpus_windows']} windows of the corpus outside 36 held-out and training slices" in log
    assert "(0 training excerpts and" in log
    assert "deterministic kernels only (sft.deterministic)" in log and summary["deterministic"] is True


def test_a_new_evaluated_step_adds_only_its_own_jobs(run):
    proc = snakemake(run, "-n", "--cores", "1", "--configfile", str(write(run, merged(eval={"steps": [1, 2]}))))
    assert "step=1" in proc.stdout and "step=2" not in proc.stdout.replace("steps", "")


def test_without_a_test_set_nothing_is_planned_under_eval_test(run):
    proc = snakemake(run, "-n", "--cores", "1", "--configfile", str(write(run, merged(split={"n_test": 0}))))
    assert "rule split_dataset:" in proc.stdout  # the split changed: everything downstream is planned again
    assert "rule generate:" in proc.stdout and "eval/test/" not in proc.stdout


def test_the_best_step_is_a_target_like_any_step(run):
    assert planned_rules(run, "results/eval/step_best/scores.jsonl", configfile=write(run, merged())) == {
        "export_checkpoint", "generate", "judge",
    }  # fmt: skip


def test_a_deleted_report_is_rebuilt_alone(run):
    report = run / "results/report.html"
    kept = report.read_bytes()
    report.unlink()
    try:
        assert plan(run) == {"report"}
    finally:
        report.write_bytes(kept)
        snakemake(run, "--touch", "--cores", "1", "--configfile", str(write(run, merged())))


def test_editing_the_corpus_reruns_everything(run):
    with edited(run / "novel.txt", "\n　　林青道：“再会。”\n"):
        assert plan(run) == EVERYTHING


def test_editing_a_prompt_reruns_from_the_stage_that_reads_it(run):
    with edited(run / "create.md", "\n不要输出解释。\n"):
        assert plan(run) == FROM_SPLIT
    with edited(run / "rewrite.md", "\n不要输出解释。\n"):
        assert "split_dataset" not in plan(run)


def test_editing_the_speaker_key_reruns_only_the_report(run):
    with edited(run / "novel.speakers.json", "\n"):
        assert plan(run) == {"report"}


def test_the_report_checks_the_references_speakers_against_the_key(run):
    html = (run / "results/report.html").read_text(encoding="utf-8")
    found = re.search(r"(\d+) quotes in (\d+) excerpts are covered\. Speaker right: <strong>(\d+)/(\d+)</strong>", html)
    assert found, re.search(r'<section id="references">.*?</section>', html, re.S).group(0)
    quotes, excerpts, right, scored = map(int, found.groups())
    labels = read_jsonl(run / "results/labels.jsonl")
    # every quote that opens in an excerpt is in the key (no quote of the story is nested in another)
    assert (quotes, excerpts) == (sum(r["text"].count("“") for r in labels), len(labels)) and scored == quotes
    assert 0 < right <= scored


def test_touching_every_input_reruns_nothing(run):
    for path in [run / "novel.txt", run / "create.md", run / "rewrite.md", *sorted((WORKFLOW[0] / "src").rglob("*.py"))]:
        path.touch()
    assert plan(run) == set()


@pytest.mark.parametrize(
    "module,expected",
    [
        ("src/audiobook_rl/report/__init__.py", {"report"}),
        ("src/audiobook_rl/judging/speaker_key.py", {"report"}),  # the check of the references' speakers
        ("src/audiobook_rl/judging/rubric.py", FROM_TRAINING),  # the rubric is also the training reward
        # the rule labeler labels the slices, and build_policy's warm start labels with it too
        ("src/audiobook_rl/labeling/rules.py", EVERYTHING - {"slice_corpus"}),
        ("src/audiobook_rl/script.py", EVERYTHING),  # the schema: every stage uses it
        # backends the config does not choose (generate: hf, train: local)
        ("src/audiobook_rl/agent/vllm_chat.py", set()),
        ("src/audiobook_rl/agent/lightning.py", set()),
        ("src/audiobook_rl/training/verl/config.py", set()),
    ],
    ids=["report-module", "speaker-key-check", "rubric-judge", "rule-labeler", "schema-module", "vllm-chat", "agent-lightning", "verl-config"],
)
def test_editing_a_package_module_reruns_its_stage_and_what_follows(run, module, expected):
    with edited(WORKFLOW[0] / module, "\n# an edit\n"):
        planned = plan(run)
    assert planned == expected


# Bad inputs after a finished run: each stops the run before any job starts, so the finished
# outputs stay and a dry run with the good config still has nothing to do.
BAD_CORPUS_SAYS = {
    "missing": "config key 'corpus': bad.txt: no such file.",
    "empty": "bad.txt: the file is empty.",
    "whitespace": "bad.txt: the file holds only whitespace.",
    "binary": "bad.txt: looks like a binary file",
    "neither-utf8-nor-gb18030": "bad.txt: cannot be read as UTF-8 or GB18030/GBK text",
    "too-short": "bad.txt: can make only 1 slices of 100–200 characters, but 36 were requested",
    "unbalanced-quotes": "bad.txt: can make only 0 slices",
}
BAD_MACHINE = {
    "verl-without-gpus": ({"train": {**BASE["train"], "backend": "verl"}},
                          "'train.gpus_per_node' needs 2 GPU(s) on this node but 0 are visible"),
    "gpu-training-without-gpus": ({"train": {**BASE["train"], "lr": 0.002}, "resources": {"train_grpo": {"gpu": 1}}},
                                  "'resources.train_grpo.gpu' needs 1 GPU(s) on this node but 0 are visible"),
    # whether or not vLLM is installed here (tests/test_startup.py: the sentence for a missing vLLM)
    "vllm-without-gpus": ({"generate": {**BASE["generate"], "backend": "vllm"}},
                          "config key 'generate.backend' = 'vllm' needs 1 GPU(s) on this node but 0 are visible"),
}  # fmt: skip


def finished_outputs(workdir: Path) -> dict[str, int]:
    return {str(p.relative_to(workdir)): p.stat().st_mtime_ns for p in (workdir / "results").rglob("*") if p.is_file()}


def stops_at_start_and_keeps_the_run(workdir: Path, config: dict, says: str) -> None:
    before = finished_outputs(workdir)
    # No GPU for torch, even where the tests run on a GPU machine.
    proc = snakemake(workdir, "--cores", "2", "--configfile", str(write(workdir, config)), check=False,
                     env={**DUMMY_KEYS, "CUDA_VISIBLE_DEVICES": ""})
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0 and says in output, output[-3000:]
    assert "Traceback" not in output and "Execute" not in output  # no job started
    assert output.strip().splitlines()[-1].startswith("Error: ")
    assert finished_outputs(workdir) == before
    assert plan(workdir) == set()


@pytest.mark.parametrize("name", BAD_CORPUS_SAYS)
def test_a_bad_corpus_stops_at_start_and_deletes_nothing(run, name):
    bad = run / "bad.txt"
    bad.unlink(missing_ok=True)
    if BAD_CORPORA[name] is not None:
        bad.write_bytes(BAD_CORPORA[name])
    stops_at_start_and_keeps_the_run(run, merged(corpus="bad.txt"), BAD_CORPUS_SAYS[name])


@pytest.mark.parametrize("name", BAD_MACHINE)
def test_a_backend_this_machine_cannot_run_stops_at_start_and_deletes_nothing(run, name):
    changes, says = BAD_MACHINE[name]
    stops_at_start_and_keeps_the_run(run, merged(**changes), says)


def test_no_key_reaches_any_file(run):
    # The seed config needs all three providers: plan it too, with the keys set.
    seed = REPO / "config" / "seed.yaml"
    snakemake(run, "-n", "--cores", "8", "--resources", "gpu=2", "--configfile", str(seed), env=DUMMY_KEYS)
    written = [p for top in ("results", "logs", ".snakemake") for p in (run / top).rglob("*") if p.is_file()]
    assert any(p.name == "report.html" for p in written) and any(".snakemake" in p.parts for p in written)
    for path in written:
        data = path.read_bytes()
        for key in DUMMY_KEYS.values():
            assert key.encode() not in data, f"{key} found in {path}"



@pytest.mark.parametrize(
    "section,backend,prompt,expected",
    [
        ("label", "claude", "label.md", EVERYTHING - {"slice_corpus"}),
        ("judge", "openai", "judge.md", {"judge", "report"}),
    ],
    ids=["labeling-prompt", "judge-prompt"],
)
def test_editing_a_paid_backends_prompt_reruns_from_its_stage(run, tmp_path, monkeypatch, section, backend, prompt, expected):
    # A prompt is an input only where a backend reads it (Claude labels, LLM judges). The copy's
    # outputs are marked finished under that config (--touch sends no request), then the prompt is edited.
    for name, key in DUMMY_KEYS.items():
        monkeypatch.setenv(name, key)
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    shutil.copy(REPO / "config" / "prompts" / prompt, copy / prompt)
    paid = write(copy, merged(**{section: {"backend": backend, "prompt": prompt}}))
    snakemake(copy, "--touch", "--cores", "1", "--configfile", str(paid))
    assert planned_rules(copy, configfile=paid) == set()
    with edited(copy / prompt, "\n每段不超过五十字。\n"):
        assert planned_rules(copy, configfile=paid) == expected
