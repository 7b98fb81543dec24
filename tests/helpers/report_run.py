"""A small fake run on disk for the report tests: metrics, labels, val parquet, outputs and scores.

The numbers are chosen so the expected report values can be worked out by hand (see the test
module): validation peaks at step 20 and falls while training reward rises (over-fitting), step 20
has one judge failure, step 0 has one unparseable output, and model/corpus strings carry HTML.
"""

from __future__ import annotations

import json
from pathlib import Path


from audiobook_rl.files import write_parquet_rows
from audiobook_rl.judging import DIMENSIONS

INJECT_TEXT = '林青道：“<script>alert("corpus")</script>快走！”'
INJECT_CONTENT = "</table><b>bold</b>"
INJECT_SPEAKER = '"onmouseover=alert(1) x="'
INJECT_REASON = "<img src=x onerror=alert(2)>"
INJECT_ERROR = "judge timed out <script>alert(3)</script>"
INJECT_MODEL = "<i>glm</i>"

VAL_IDS = ["v1", "v2", "v3", "v4"]
# overall judge score per step and slice; None = judge failure
OVERALL = {
    0: [0.10, 0.15, 0.12, 0.13],
    10: [0.40, 0.45, 0.50, 0.35],
    20: [0.55, 0.60, 0.50, None],
    30: [0.45, 0.50, 0.40, 0.45],
}
RISING_30 = [0.60, 0.65, 0.55, 0.60]  # step 30 without over-fitting: above step 20 on every slice
POLICY_CONFIG = {"_name_or_path": "/tmp/build/step_0", "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 128, "num_hidden_layers": 2, "vocab_size": 3000}
DEFAULT_SETTINGS = {
    "title": "Fixture run",
    "smoothing_window": 5,
    "bootstrap_samples": 500,
    "bootstrap_seed": 0,
    "confidence": 0.95,
    "min_n": 20,
    "overfit_min_drop": 0.01,
    "max_samples": 50,
}


def seg(speaker, content, tone="平静", intensity=2, delay=300):
    return {"speaker": speaker, "content": content, "tone": tone, "intensity": intensity, "delay": delay}


def reference(i: int) -> list[dict]:
    if i == 0:
        return [seg("旁白", "林青道："), seg("林青道", INJECT_CONTENT, "焦急", 4, 500), seg(INJECT_SPEAKER, "好。", "平静", 1, 0)]
    return [seg("旁白", f"第{i}段叙述。"), seg("老邓", f"第{i}段对白！", "喜悦", 3, 600)]


def metrics_rows(overfit: bool = True) -> list[dict]:
    rows = []
    for step in range(0, 31):
        row = {"step": step, "train_reward": round(0.10 + 0.0197 * step, 4), "loss": 0.1, "clip_frac": 0.0, "response_length": 50.0, "seconds": 1.0}
        if step == 0:
            row.pop("train_reward")
        rows.append(row)
    val = {0: 0.125, 5: 0.30, 10: 0.42, 15: 0.50, 20: 0.552, 25: 0.50, 30: 0.45}
    if not overfit:
        val = {0: 0.125, 10: 0.30, 20: 0.40, 30: 0.45}
    for row in rows:
        if row["step"] in val:
            row["val_reward"] = val[row["step"]]
    return rows


def write_run(root: Path, overfit: bool = True, steps=(0, 10, 20, 30), metrics=None) -> dict:
    """Write a fake run under ``root``; return the paths make_report takes."""
    root.mkdir(parents=True, exist_ok=True)
    labels = []
    for i, sid in enumerate(VAL_IDS):
        text = INJECT_TEXT if i == 0 else f"第{i}段叙述。老邓道：“第{i}段对白！”"
        labels.append({"id": sid, "text": text, "script": reference(i), "backend": "rules", "model": "rules-v1", "prompt_hash": None,
                       "aliases": {}, "names": ["林青"] if i == 0 else ["老邓"]})
    _jsonl(root / "labels.jsonl", labels)
    write_parquet_rows(
        root / "val.parquet",
        [{"data_source": "audiobook", "extra_info": {"index": i, "split": "val", "slice_id": sid, "text": l["text"], "aliases": "{}"}} for i, (sid, l) in enumerate(zip(VAL_IDS, labels))],
    )
    _jsonl(root / "metrics.jsonl", metrics_rows(overfit) if metrics is None else metrics)
    (root / "models" / "step_0").mkdir(parents=True, exist_ok=True)
    (root / "models" / "step_0" / "config.json").write_text(json.dumps(POLICY_CONFIG), encoding="utf-8")
    evals = {}
    for step in steps:
        outs, scores = [], []
        for i, sid in enumerate(VAL_IDS):
            final = json.dumps(reference(i), ensure_ascii=False)
            if step == 0 and i == 1:
                final = "I cannot do this <script>alert(4)</script>"
            if step == 30 and i == 2:
                final = "```json\n" + final + "\n```"
            outs.append({"id": sid, "step": step, "draft": final, "final": final, "draft_notes": None, "final_notes": None})
            overall = (RISING_30 if step == 30 and not overfit else OVERALL.get(step, OVERALL[10]))[i]
            fmt_score = 0.0 if (step == 0 and i == 1) else 1.0
            if overall is None:
                scores.append({"id": sid, "step": step, "overall": None, "scores": {}, "reasons": {}, "backend": "zhipu", "model": INJECT_MODEL, "error": INJECT_ERROR})
            else:
                dims = {d: overall for d in DIMENSIONS}
                dims["format"] = fmt_score
                reasons = {d: f"{d} ok" for d in DIMENSIONS}
                reasons["speaker"] = INJECT_REASON
                scores.append({"id": sid, "step": step, "overall": overall, "scores": dims, "reasons": reasons, "backend": "zhipu", "model": INJECT_MODEL, "error": None})
        d = root / "eval" / f"step_{step}"
        d.mkdir(parents=True, exist_ok=True)
        _jsonl(d / "outputs.jsonl", outs)
        _jsonl(d / "scores.jsonl", scores)
        evals[step] = (d / "outputs.jsonl", d / "scores.jsonl")
    return {"metrics": root / "metrics.jsonl", "labels": root / "labels.jsonl", "val": root / "val.parquet", "evals": evals, "policy": root / "models" / "step_0"}


def _jsonl(path: Path, rows) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


TEST_IDS = ["t1", "t2", "t3", "t4"]


def write_test_split(root: Path, overall: dict[int, list[float]]) -> tuple[Path, dict]:
    """The same checkpoints on held-out test slices ``TEST_IDS`` with these overall scores per step
    (every dimension = overall); returns the test parquet and the test evals make_report takes."""
    write_parquet_rows(
        root / "test.parquet",
        [{"data_source": "audiobook", "extra_info": {"index": i, "split": "test", "slice_id": sid, "aliases": "{}",
                                                     "text": f"第{i + 5}段叙述。老邓道：“第{i + 5}段对白！”"}}
         for i, sid in enumerate(TEST_IDS)],
    )
    evals = {}
    for step, values in overall.items():
        d = root / "eval" / "test" / f"step_{step}"
        d.mkdir(parents=True, exist_ok=True)
        finals = [json.dumps(reference(i + 5), ensure_ascii=False) for i in range(len(TEST_IDS))]
        _jsonl(d / "outputs.jsonl", [{"id": sid, "step": step, "draft": final, "final": final, "draft_notes": None, "final_notes": None}
                                     for sid, final in zip(TEST_IDS, finals)])
        _jsonl(d / "scores.jsonl", [{"id": sid, "step": step, "overall": v, "scores": {dim: v for dim in DIMENSIONS},
                                     "reasons": {}, "backend": "rubric", "model": "rubric-v3", "error": None}
                                    for sid, v in zip(TEST_IDS, values)])
        evals[step] = (d / "outputs.jsonl", d / "scores.jsonl")
    return root / "test.parquet", evals
