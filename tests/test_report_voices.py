"""The report's voices: voice accuracy per checkpoint, the speaker names it uses, the red flags, and
the SFT warm start as a second baseline ("did RL help beyond imitation?")."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

import helpers.report_run as fx
from audiobook_rl.report import make_report
from audiobook_rl.report.checkpoints import checkpoint_rows, sft_row
from audiobook_rl.report.load import load_run


def never_narrator(i: int) -> str:
    """Slice ``i``'s reference with every narration read by a speech tag and every quote by a fragment
    of its own text: the scripts of a policy that learned the judge, not the task."""
    script = [
        {**s, "speaker": "老邓道" if s["speaker"] == "旁白" else s["content"][:2]} for s in fx.reference(i)
    ]
    return json.dumps(script, ensure_ascii=False)


def write_outputs(path: Path, finals: list[str], step) -> None:
    path.write_text("".join(json.dumps({"id": sid, "step": step, "draft": f, "final": f, "draft_notes": None,
                                        "final_notes": None}, ensure_ascii=False) + "\n"
                            for sid, f in zip(fx.VAL_IDS, finals)), encoding="utf-8")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("voices")
    paths = fx.write_run(root)
    write_outputs(Path(paths["evals"][30][0]), [never_narrator(i) for i in range(4)], 30)
    # The warm start: step 10's scores and scripts (every voice right), where GRPO started.
    sft = root / "eval" / "step_sft"
    sft.mkdir()
    for name, source in zip(("outputs.jsonl", "scores.jsonl"), paths["evals"][10]):
        shutil.copy(source, sft / name)
    paths["evals"]["sft"] = (sft / "outputs.jsonl", sft / "scores.jsonl")
    html = make_report(paths["metrics"], paths["labels"], paths["evals"], fx.DEFAULT_SETTINGS, val=paths["val"])
    return paths, html


def test_a_checkpoint_that_never_uses_the_narrator_is_flagged_in_red(run):
    paths, html = run
    rows = {r.step: r for r in checkpoint_rows(load_run(paths["metrics"], paths["labels"], paths["evals"], paths["val"]), fx.DEFAULT_SETTINGS)}
    step30 = rows[30]
    assert step30.speakers.never_narrator and step30.speakers.mostly_not_persons
    assert step30.voice.overall == 0.0 and step30.speakers.narrator == 0
    assert not rows[20].voice_flags and rows[20].voice.overall == 1.0
    row = re.search(r'<td class="step">step 30</td>(.*?)</tr>', html.split('id="speakers-table"')[1], re.S).group(1)
    assert '<td class="n fail">0%</td>' in row  # voice accuracy in red
    assert '<td class="n fail">0</td>' in row  # no narrator segment
    assert "老邓道 (4)" in row  # the five most used names, with their segment counts
    assert '<td class="flags fail">never uses the narrator (旁白); names no person of the excerpt in most of its characters&#39; segments (9 of 9' in row
    # ... and the diagnosis says so in a red callout.
    assert "step 30 never uses the narrator (旁白) and names no person of the excerpt in most of its characters&#39; segments (9 of 9" in html
    # A checkpoint without flags has an empty flags cell.
    row20 = re.search(r'<td class="step">step 20</td>(.*?)</tr>', html.split('id="speakers-table"')[1], re.S).group(1)
    assert '<td class="flags"></td>' in row20 and "旁白 (" in row20


def test_voice_accuracy_beside_the_judge_score_in_the_summary(run):
    _, html = run
    # Step 20 (best on validation): every voice right; the baseline 35/45 (one unreadable output).
    line = re.search(r'<p class="voice-line">(.*?)</p>', html).group(1)
    assert line.startswith("Voice accuracy of step 20: 100% of the characters read by the right voice "
                           "(narration by the narrator 100%, quotes by the right person 100%), against 78% for the baseline:")
    assert 'voice accuracy · step 20 · validation</div><div class="v">100%</div>' in html


def test_the_warm_start_is_a_second_baseline(run):
    paths, html = run
    data = load_run(paths["metrics"], paths["labels"], paths["evals"], paths["val"])
    rows = checkpoint_rows(data, fx.DEFAULT_SETTINGS)
    sft = sft_row(data, rows, fx.DEFAULT_SETTINGS)
    assert sft.is_sft and sft.name == "SFT warm start" and sft.mean == pytest.approx(0.425)
    best = next(r for r in rows if r.is_best)
    # step 20 against the warm start (step 10's scores) on the three slices both scored: +0.15, +0.15, 0
    assert best.vs_sft.mean_diff == pytest.approx(0.1, abs=1e-9) and best.vs_sft.n == 3
    # The tables list it right after the base policy; the headline answers "did RL help?" against it.
    names = re.findall(r'<td class="step">([^<]*)</td>', html.split('id="speakers-table"')[1].split("</table>")[0])
    assert names == ["base (step 0)", "SFT warm start", "step 10", "step 20", "step 30"]
    headline = re.search(r'<p class="headline \w+">(.*?)</p>', html).group(1)
    assert "Against the SFT warm start that GRPO started from (0.425), step 20 differs by +0.100 (95% paired interval" in headline
    assert 'id="sft-table"' in html and "Did RL help beyond imitation?" in html
    # the warm start's scripts are among each sample's cards
    assert html.count("<span>SFT warm start") == len(fx.VAL_IDS)


def test_without_a_warm_start_there_is_no_second_baseline(tmp_path):
    paths = fx.write_run(tmp_path)
    html = make_report(paths["metrics"], paths["labels"], paths["evals"], fx.DEFAULT_SETTINGS, val=paths["val"])
    assert "SFT warm start" not in html and 'id="sft-table"' not in html


def test_the_warm_start_table_counts_the_scripts_grpo_changed(run, tmp_path):
    # The module's run: the warm start wrote step 10's scripts; step 20 the same, step 30 others.
    _, html = run
    table = html.split('id="sft-table"')[1].split("</table>")[0]
    cells = {name: re.findall(r'<td class="n">([^<]*)</td>', row)
             for name, row in re.findall(r'<td class="step">([^<]*)</td>(.*?)</tr>', table, re.S)}
    assert cells["step 10"][-1] == "0 of 4" and cells["step 30"][-1] == "4 of 4"
    # A warm start that loops to the token limit on one slice: the step that reads it whole changed
    # that one script, and the table says the unreadable one became readable.
    paths = fx.write_run(tmp_path)
    sft = tmp_path / "eval" / "step_sft"
    sft.mkdir()
    looped = "[" + ",".join(['{"speaker":"旁白","content":"","tone":"平静","intensity":1,"delay":400}'] * 40) + ',{"speaker":"旁'
    finals = [json.dumps(fx.reference(i), ensure_ascii=False) if i != 3 else looped for i in range(4)]
    write_outputs(sft / "outputs.jsonl", finals, "sft")
    shutil.copy(paths["evals"][10][1], sft / "scores.jsonl")
    paths["evals"]["sft"] = (sft / "outputs.jsonl", sft / "scores.jsonl")
    data = load_run(paths["metrics"], paths["labels"], paths["evals"], paths["val"])
    rows = checkpoint_rows(data, fx.DEFAULT_SETTINGS)
    sft_row(data, rows, fx.DEFAULT_SETTINGS)
    by_step = {r.step: r.changes_vs_sft for r in rows[1:]}
    assert (by_step[20].changed, by_step[20].of, by_step[20].unreadable_before, by_step[20].unreadable_after) == (1, 4, 1, 0)
    html = make_report(paths["metrics"], paths["labels"], paths["evals"], fx.DEFAULT_SETTINGS, val=paths["val"])
    assert "<td class=\"n\">1 of 4; unreadable 1 → 0</td>" in html.split('id="sft-table"')[1]
