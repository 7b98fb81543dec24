"""The report's judge checks: which rubric dimensions a gain comes from (a warning when only the
surface ones moved) and, with a second judge on the same outputs, their agreement and a gain that
appears under one judge only. Numbers worked out by hand."""

import json
import re

import helpers.report_run as fx
from audiobook_rl.report import make_report

BASE = {"format": 0.2, "completeness": 0.5, "speaker": 0.5, "emotion": 0.5, "segmentation": 0.2}
SURFACE = {**BASE, "format": 0.9, "segmentation": 0.9}  # only the surface dimensions rise


def score_rows(step, overalls, dims):
    return [{"id": sid, "step": step, "overall": o, "scores": dims, "reasons": {}, "backend": "glm", "model": "glm-4.7",
             "error": None} for sid, o in zip(fx.VAL_IDS, overalls)]


def write(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def render(tmp_path, extra: dict | None = None):
    paths = fx.write_run(tmp_path, steps=(0, 10))
    write(paths["evals"][0][1], score_rows(0, [0.4] * 4, BASE))
    write(paths["evals"][10][1], score_rows(10, [0.6] * 4, SURFACE))
    return make_report(paths["metrics"], paths["labels"], paths["evals"], fx.DEFAULT_SETTINGS, val=paths["val"],
                       judges=extra or {}, judge_name="glm-glm-4.7")


def row_cells(table: str, first: str) -> list[str]:
    row = re.search(rf'<tr>\s*<td class="step">{re.escape(first)}</td>(.*?)</tr>', table, re.S).group(1)
    return [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]


def test_a_gain_in_format_and_segmentation_only_is_flagged_as_surface(tmp_path):
    html = render(tmp_path)
    table = html.split('id="hacking-table"')[1].split("</table>")[0]
    # +0.2 overall; format and segmentation +0.7 on every slice; the rest unchanged
    assert row_cells(table, "step 10") == ["+0.200", "up (+0.700)", "flat (+0.000)", "flat (+0.000)", "flat (+0.000)",
                                          "up (+0.700)", "surface only"]
    assert ("step 10: the gain comes only from format, segmentation while completeness flat, speaker flat; "
            "the policy may be learning the judge&#39;s surface checks rather than the task.") in html
    assert 'id="judges"' not in html  # one judge: no agreement section


def test_a_second_judge_s_agreement_and_a_gain_under_one_judge_only(tmp_path):
    extra_dir = tmp_path / "rubric"
    extra_dir.mkdir()
    files = {}
    for step in (0, 10):
        rows = score_rows(step, [0.3, 0.4, 0.5, 0.6], BASE)  # no gain under this judge
        for r in rows:
            r.update(backend="rubric", model="rubric-v3")
        write(extra_dir / f"step_{step}.jsonl", rows)
        files[step] = extra_dir / f"step_{step}.jsonl"
    html = render(tmp_path / "run", {"rubric": files})
    section = html.split('<section id="judges">')[1].split("</section>")[0]
    assert "<h3>glm-glm-4.7 and rubric</h3>" in section
    # 8 items (2 steps x 4 slices). Ranks of glm: 2.5 x4, 6.5 x4; of rubric: 1.5, 3.5, 5.5, 7.5 twice;
    # centred, (-2 x4, +2 x4) . (-3, -1, 1, 3, -3, -1, 1, 3) = 0: Spearman 0. Mean |diff| =
    # (0.1 + 0 + 0.1 + 0.2 + 0.3 + 0.2 + 0.1 + 0) / 8 = 0.125.
    assert row_cells(section, "overall") == ["8", "0.00", "0.00", "0.125"]
    # the largest rank gaps (5 ranks): step 10 slice v1 (6.5 vs 1.5; scores 0.3 apart) before step 0 slice v4
    # (2.5 vs 7.5; 0.2 apart): equal rank gaps are ordered by the score gap
    first = re.findall(r"<li>(.*?)</li>", section.split('<ul class="disagreements">')[1], re.S)[:2]
    assert [re.sub(r"<[^>]+>", "", li) for li in first] == [
        "step 10, slice v1: glm-glm-4.7 0.600 (rank 6.5), rubric 0.300 (rank 1.5)",
        "base (step 0), slice v4: glm-glm-4.7 0.400 (rank 2.5), rubric 0.600 (rank 7.5)",
    ]
    assert "step 10: a gain under glm-glm-4.7 only (glm-glm-4.7: up; rubric: flat)" in section
