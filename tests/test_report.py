"""The comparison report: headline numbers, checkpoint table, diagnosis, escaping, degraded inputs."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from helpers import report_run as fx
from audiobook_rl.report import make_report
from audiobook_rl.report.checkpoints import checkpoint_rows
from audiobook_rl.report import stats
from audiobook_rl.report.load import load_run, read_metrics
from audiobook_rl.config import config_digest
from audiobook_rl.report.provenance import code_version

TRAIN = {"backend": "local", "rollout": {"n": 4}, "clip_ratio_high": 0.3, "api_key": "sk-should-not-show"}


# Without a test set the headline says its score is optimistic; with few slices, that intervals are wide.
OPTIMISTIC = (
    " This score is measured on the validation slices that chose the checkpoint, so it is optimistic "
    "(no held-out test set: split.n_test is 0). With n = {n} paired slices the intervals are wide, and a nominal 95% "
    "interval covers the true difference less often than it says (fewer than 16 slices)."
)

def render(paths: dict, **settings) -> str:
    return make_report(
        paths["metrics"], paths["labels"], paths["evals"], {**fx.DEFAULT_SETTINGS, **settings}, val=paths["val"],
        train=TRAIN, eval_cfg={"steps": [10, 20, 30]}, config_hash="0123456789abcdef", policy_dir=paths["policy"],
    )


class Page(HTMLParser):
    """Tags, attributes and the cells of the checkpoint table (the first table.num)."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.table_rows: list[list[str]] = []
        self._in_table = self._done = False
        self._cell: list[str] | None = None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if tag == "table" and attrs.get("class") == "num" and not self._done:
            self._in_table = True
        if self._in_table and tag == "tr":
            self.table_rows.append([])
        if self._in_table and tag == "td":
            self._cell = []

    def handle_endtag(self, tag):
        if self._in_table and tag == "td" and self._cell is not None:
            self.table_rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        if tag == "table" and self._in_table:
            self._in_table, self._done = False, True

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)

    def row(self, first_cell_start: str) -> list[str]:
        return next(r for r in self.table_rows if r and r[0].startswith(first_cell_start))


@pytest.fixture(scope="module")
def overfit_run(tmp_path_factory):
    paths = fx.write_run(tmp_path_factory.mktemp("overfit"))
    return paths, render(paths)


def test_headline_names_best_checkpoint_its_score_the_baseline_and_the_change(overfit_run):
    _, html = overfit_run
    # step 20: (0.55 + 0.60 + 0.50) / 3 = 0.55 (its judge failure left out); baseline 0.125 → +340%.
    # Paired on the three slices both scored: +0.45, +0.45, +0.38 → +0.427, its interval first, then
    # P(improve) (all three slices up), then the relative change; measured on the slices that chose it.
    assert (
        '<p class="headline ok">Step 20 improves on the baseline (step 0): +0.427 (95% paired interval +0.380 to +0.450), '
        "P(improve) 1.00 (95% interval 1.00 to 1.00), +340.0% relative; validation score 0.550 (n = 3) against 0.125 "
        f"for the baseline (step 0).{OPTIMISTIC.format(n=3)}</p>"
    ) in html


def test_checkpoint_table_values(overfit_run):
    _, html = overfit_run
    page = Page(html)
    header = ["mean ± std", "95% CI", "n", "failures", "format", "complete", "speaker", "emotion", "segment.", "voice", "narration", "quotes", "distinct", "alike", "JSON valid", "schema valid", "segments", "vs baseline"]
    base = page.row("base (step 0)")
    assert len(base) == 1 + len(header)
    cells = dict(zip(header, base[1:]))
    assert cells["mean ± std"] == "0.125 ± 0.021"
    assert cells["n"] == "4/4" and cells["failures"] == "0"
    assert cells["format"] == "0.750"  # one unparseable output scored 0 on format
    assert cells["JSON valid"] == "75%" and cells["segments"] == "1.8"  # 3 + 0 + 2 + 2 entries
    assert cells["vs baseline"] == "baseline"
    # Voices, character by character: v1 reads 3 narration + 12 quote characters right (the markup
    # quote's letters and 好), v3 and v4 5 + 5 each; v2's output does not parse, so its 5 + 5 are
    # read by no one: 35/45 overall, narration 13/18, quotes 22/27.
    assert (cells["voice"], cells["narration"], cells["quotes"]) == ("78%", "72%", "81%")
    assert cells["distinct"] == "100%"

    best = dict(zip(header, page.row("step 20")[1:]))
    assert page.row("step 20")[0] == "step 20 ★ best"
    assert best["mean ± std"] == "0.550 ± 0.050"
    assert best["n"] == "3/4" and best["failures"] == "1"
    assert best["completeness" if "completeness" in best else "complete"] == "0.550"
    assert best["vs baseline"] == "+0.427 (+340.0%)"
    assert (best["voice"], best["narration"], best["quotes"]) == ("100%", "100%", "100%")
    assert dict(zip(header, page.row("step 10")[1:]))["vs baseline"] == "+0.300 (+240.0%)"
    step30 = dict(zip(header, page.row("step 30")[1:]))
    assert step30["JSON valid"] == "100%"  # the fenced output was repaired, still JSON
    assert step30["vs baseline"] == "+0.325 (+260.0%)"


def test_judge_failures_are_counted_not_scored_zero(overfit_run, tmp_path):
    paths, html = overfit_run
    rows = {r.step: r for r in checkpoint_rows(load_run(paths["metrics"], paths["labels"], paths["evals"], paths["val"]), fx.DEFAULT_SETTINGS)}
    assert rows[20].n_failed == 1 and rows[20].n_scored == 3
    assert rows[20].mean == pytest.approx(0.55)  # not (0.55 * 3 + 0) / 4
    lo, hi = rows[20].ci
    assert lo <= rows[20].mean <= hi
    assert "1 judge failure(s) (step 20: 1) are excluded from the means" in html
    assert "Judge failure (not counted as 0)" in html


def test_overfitting_note_says_where_and_by_how_much(overfit_run):
    _, html = overfit_run
    # Step 30 vs step 20 on the three slices both scored: −0.1 each, so the interval excludes 0.
    assert (
        '<div class="callout bad"><strong>Over-fitting: step 30 scores 0.450 against 0.550 at step 20, the best checkpoint: '
        "-0.100 (95% paired interval -0.100 to -0.100), while the smoothed training reward kept rising"
    ) in html


def test_no_overfitting_note_when_validation_keeps_rising(tmp_path):
    html = render(fx.write_run(tmp_path, overfit=False))
    assert "Over-fitting" not in html
    assert "No sign of over-fitting: the last evaluated checkpoint, step 30, scores highest." in html


def test_small_n_warning_and_its_threshold(overfit_run, tmp_path):
    _, html = overfit_run
    assert "Only n = 3 validation slices were scored for step 20 (fewer than 20): the intervals are wide" in html
    assert "Only n = 3" not in render(fx.write_run(tmp_path), min_n=3)


def test_overlapping_intervals_warn_that_ranking_is_unreliable(tmp_path):
    # step 30 close to the best: their intervals overlap
    paths = fx.write_run(tmp_path)
    scores = Path(paths["evals"][30][1])
    rows = [json.loads(line) for line in scores.read_text(encoding="utf-8").splitlines()]
    for row, value in zip(rows, [0.55, 0.58, 0.50, 0.52]):
        row["overall"] = value
    scores.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    html = render(paths)
    assert "The best checkpoint (step 20) cannot be told apart from step(s) 10, 30: their paired 95% intervals include 0" in html
    assert "the ranking among these checkpoints is not reliable" in html
    # The training-time validation curve still falls from 0.552 to 0.45, but the one rule (the paired
    # interval of step 30 vs step 20) calls the drop noise: no red over-fitting box beside that warning.
    assert "Over-fitting" not in html and 'class="callout bad"' not in html
    assert "No clear sign of over-fitting: step 30 scores 0.537 against 0.550 at step 20" in html
    assert "which includes 0, so the drop is within noise." in html


def rewrite_step(paths: dict, step: int, overall: list[float], finals: list[str] | None = None) -> None:
    """Give ``step`` these overall scores per validation slice (and these final scripts)."""
    outputs, scores = (Path(p) for p in paths["evals"][step])
    rows = [json.loads(line) for line in scores.read_text(encoding="utf-8").splitlines()]
    for row, value in zip(rows, overall):
        row.update(overall=value, error=None, scores={d: value for d in row["scores"] or fx.DIMENSIONS})
    scores.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    if finals is not None:
        outs = [json.loads(line) for line in outputs.read_text(encoding="utf-8").splitlines()]
        for out, final in zip(outs, finals):
            out.update(final=final, draft=final, final_notes=None)
        outputs.write_text("".join(json.dumps(o, ensure_ascii=False) + "\n" for o in outs), encoding="utf-8")


STUB = json.dumps([fx.seg("旁白", "陆青崖道："), fx.seg("陆青崖", "今晚的酒，我请了。", "喜悦", 3, 800)], ensure_ascii=False)


def test_a_checkpoint_whose_outputs_ignore_their_input_is_never_an_improvement(tmp_path):
    # Step 20 writes the same stub for every excerpt, and the judge scores it clearly above the
    # baseline on every slice (as a judge that rewards form would).
    paths = fx.write_run(tmp_path, steps=(0, 10, 20))
    rewrite_step(paths, 20, [0.70, 0.75, 0.72, 0.71], [STUB] * 4)
    html = render(paths)
    rows = {r.step: r for r in checkpoint_rows(load_run(paths["metrics"], paths["labels"], paths["evals"], paths["val"]), fx.DEFAULT_SETTINGS)}
    assert rows[20].is_best and rows[20].diff_ci[0] > 0  # the score alone would call it a clear gain
    assert rows[20].diversity.distinct == 1 and rows[20].diversity.ignores_input
    assert not rows[10].diversity.ignores_input

    headline = re.search(r'<p class="headline (\w+)">(.*?)</p>', html).groups()
    assert headline[0] == "bad" and headline[1].startswith("Not an improvement: step 20 scores highest, +0.595 (95% paired interval")
    assert "its outputs ignore their input (1 distinct script(s) for 4 excerpts" in headline[1]
    # The checkpoint that does follow its input is named with its own paired difference.
    assert headline[1].endswith(
        "The best checkpoint whose outputs follow their input, step 10: +0.300 (95% paired interval +0.240 to +0.340), "
        "P(improve) 1.00 (95% interval 1.00 to 1.00), +240.0% relative (an improvement)." + OPTIMISTIC.format(n=4)
    )
    assert "improves on" not in html
    assert (
        "Step 20 ignores its input: 1 distinct script(s) for 4 excerpts, and the outputs of different excerpts are 1.00 alike"
    ) in html
    assert "mode collapse, not an improvement" in html
    cells = dict(zip(["distinct", "alike"], Page(html).row("step 20 ★ best")[13:15]))
    assert cells == {"distinct": "25%", "alike": "1.00"}
    assert Page(html).row("step 20 ★ best")[-1] == "+0.595 (+476.0%)"
    # The change tile is not green and says why.
    tile = html.split("change vs baseline (paired)")[1].split("</div></div>")[0]
    assert 'class="v down"' in tile and "outputs ignore their input" in tile


def test_the_baseline_is_never_the_best_checkpoint(tmp_path):
    # Every trained checkpoint below the baseline: the best is still a trained one (steps.best_step),
    # and the headline says that none beat the baseline.
    paths = fx.write_run(tmp_path, steps=(0, 10, 20))
    rewrite_step(paths, 0, [0.50, 0.50, 0.50, 0.50])
    rewrite_step(paths, 10, [0.30, 0.30, 0.30, 0.30])
    rewrite_step(paths, 20, [0.40, 0.40, 0.40, 0.40])
    html = render(paths)
    headline = re.search(r'<p class="headline (\w+)">(.*?)</p>', html).groups()
    assert headline == ("neutral", "No checkpoint beat the baseline (step 0), which scored 0.500 on the validation set "
                        "(n = 4); the best trained checkpoint, step 20, scored 0.400: -0.100 (95% paired interval "
                        "-0.100 to -0.100), P(improve) 0.00 (95% interval 0.00 to 0.00), -20.0% relative."
                        + OPTIMISTIC.format(n=4))
    assert Page(html).row("step 20 ★ best") and "base (0) ★" not in html


def test_headline_says_no_clear_change_when_the_paired_interval_includes_0(tmp_path):
    paths = fx.write_run(tmp_path, steps=(0, 10))
    rewrite_step(paths, 0, [0.30, 0.50, 0.40, 0.60])
    rewrite_step(paths, 10, [0.50, 0.35, 0.55, 0.45])  # +0.2, −0.15, +0.15, −0.15: mean +0.0125
    html = render(paths)
    headline = re.search(r'<p class="headline (\w+)">(.*?)</p>', html).groups()
    assert headline[0] == "neutral"
    assert headline[1].startswith("No clear change: the best checkpoint, step 10, differs from the baseline (step 0) by +0.013 (95% paired interval -0.")
    assert "+2.8% relative; validation score 0.462 (n = 4) against 0.450 for the baseline (step 0)." in headline[1]
    assert "improves" not in html
    tile = html.split("change vs baseline (paired)")[1].split("</div></div>")[0]
    assert 'class="v "' in tile and "no clear change" in tile
    assert Page(html).row("step 10 ★ best")[-1] == "+0.013 (+2.8%)"


def test_a_gain_below_the_smallest_change_is_no_clear_change(tmp_path):
    # +0.007 on every slice: the paired interval excludes 0, but the gain is below
    # report.overfit_min_drop (0.01), so it is not called an improvement (nor "+400 %" in green).
    paths = fx.write_run(tmp_path, steps=(0, 10))
    rewrite_step(paths, 0, [0.001, 0.002, 0.002, 0.003])
    rewrite_step(paths, 10, [0.008, 0.009, 0.009, 0.010])
    html = render(paths)
    headline = re.search(r'<p class="headline (\w+)">(.*?)</p>', html).groups()
    assert headline == ("neutral", (
        "No clear change: the best checkpoint, step 10, differs from the baseline (step 0) by +0.007 "
        "(95% paired interval +0.007 to +0.007), P(improve) 1.00 (95% interval 1.00 to 1.00), +350.0% relative; "
        "validation score 0.009 (n = 4) against 0.002 for the baseline (step 0)." + OPTIMISTIC.format(n=4)
    ))
    assert "Step 10 vs baseline: paired difference +0.007, 95% bootstrap interval [+0.007, +0.007]: smaller than the smallest change counted" in html
    assert "Step 10 improves" in render(paths, overfit_min_drop=0.005)


INJECTED = [fx.INJECT_TEXT, fx.INJECT_CONTENT, fx.INJECT_SPEAKER, fx.INJECT_REASON, fx.INJECT_ERROR, fx.INJECT_MODEL, "<script>alert(4)</script>"]


def test_model_and_corpus_text_is_escaped(overfit_run):
    _, html = overfit_run
    for raw in INJECTED:
        assert raw not in html, raw
    assert "&lt;script&gt;alert(&#34;corpus&#34;)&lt;/script&gt;" in html
    assert "&lt;/table&gt;&lt;b&gt;bold&lt;/b&gt;" in html
    assert "&#34;onmouseover=alert(1) x=&#34;" in html
    page = Page(html)
    names = [t for t, _ in page.tags]
    assert "script" not in names and "img" not in names and "b" not in names and "i" not in names
    assert not [a for _, attrs in page.tags for a in attrs if a.lower().startswith("on")]
    assert page.table_rows and names.count("table") >= 4  # the injected </table> closed nothing


def test_page_is_self_contained(overfit_run):
    _, html = overfit_run
    page = Page(html)
    assert [t for t, _ in page.tags].count("svg") == 2
    refs = [v for _, attrs in page.tags for k, v in attrs.items() if k in ("src", "href", "xlink:href") and v]
    assert all(v.startswith("#") for v in refs), refs
    assert "<link" not in html and "@import" not in html
    assert not re.search(r"url\((?!#|data:font/woff2;base64,)", html)  # the charts' clip paths, the inlined font


def test_rerender_is_byte_identical(overfit_run):
    paths, html = overfit_run
    assert render(paths) == html


def test_provenance_names_backends_settings_and_hides_secrets(overfit_run):
    _, html = overfit_run
    assert "rules / rules-v1" in html  # labeling, from labels.jsonl
    assert "local / Qwen2ForCausalLM (hidden 128, layers 2, vocab 3000) from " in html  # policy: its HF config
    assert "zhipu / &lt;i&gt;glm&lt;/i&gt;" in html  # judge, from the scores
    assert "0123456789abcdef" in html and "audiobook-rl 0.1.0" in html
    assert "rollout.n" in html and "sk-should-not-show" not in html and "(hidden)" in html
    assert "<td>rollouts per task (group size)</td><td><code>4</code></td>" in html
    assert "<td>clip ratio high</td><td><code>0.3</code></td>" in html
    assert "train_grpo" in html and "label_slices" in html


def test_code_version_outside_a_git_checkout(tmp_path):
    assert code_version(tmp_path).startswith("audiobook-rl ")


def test_config_hash_ignores_report_settings():
    config = {"train": {"lr": 1e-6}, "report": {"title": "a"}}
    assert config_digest(config) == config_digest({**config, "report": {"title": "b"}})
    assert config_digest(config) != config_digest({**config, "train": {"lr": 2e-6}})


# Degraded inputs: the report still renders and says what is missing.


def test_empty_metrics(tmp_path):
    html = render(fx.write_run(tmp_path, metrics=[]))
    assert "No training metrics to plot" in html
    assert "Step 20 improves on the baseline (step 0)" in html
    assert html.count("<svg") == 1  # the checkpoint chart only


def test_metrics_without_validation_reward_use_checkpoint_scores(tmp_path):
    rows = [{k: v for k, v in r.items() if k != "val_reward"} for r in fx.metrics_rows()]
    html = render(fx.write_run(tmp_path, metrics=rows))
    assert "No validation reward was logged during training" in html
    # checkpoints: 0.125, 0.425, 0.55 (step 20), 0.45 → the drop after step 20 is still reported
    assert "Over-fitting: step 30 scores 0.450 against 0.550 at step 20, the best checkpoint" in html


def test_single_checkpoint(tmp_path):
    html = render(fx.write_run(tmp_path, steps=(0,)))
    assert "Only the baseline (step 0) was evaluated: validation score 0.125 (n = 4)." in html
    assert "★ best" not in html  # nothing to choose from


def test_every_judge_call_failed(tmp_path):
    paths = fx.write_run(tmp_path, steps=(0, 10))
    for _, scores in paths["evals"].values():
        rows = [json.loads(line) for line in Path(scores).read_text(encoding="utf-8").splitlines()]
        scores.write_text("".join(json.dumps({**r, "overall": None, "scores": {}, "error": "HTTP 500"}) + "\n" for r in rows), encoding="utf-8")
    html = render(paths)
    assert "No trained checkpoint could be scored" in html
    assert "8 judge failure(s)" in html


def test_unreadable_lines_and_missing_files_are_named(tmp_path):
    paths = fx.write_run(tmp_path)
    with open(paths["metrics"], "a", encoding="utf-8") as f:
        f.write("{not json\n")
    Path(paths["evals"][30][0]).unlink()
    html = render(paths)
    assert "line 32 is not a JSON object; skipped." in html
    assert "step_30/outputs.jsonl is missing" in html
    assert "No output for this slice at this step." in html


def test_metrics_lines_of_one_step_are_merged(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 5, "train_reward": 0.4}\n{"step": 5, "val_reward": 0.3}\n{"step": 2, "train_reward": NaN}\n', encoding="utf-8")
    problems: list[str] = []
    rows = read_metrics(path, problems)
    assert [r["step"] for r in rows] == [2, 5]
    assert rows[1]["train_reward"] == 0.4 and rows[1]["val_reward"] == 0.3
    assert rows[0]["train_reward"] is None and problems == []


def test_bootstrap_is_seeded_and_brackets_the_mean():
    values = [0.1, 0.4, 0.35, 0.8, 0.5]
    assert stats.bootstrap_ci(values, 1000, 3, 0.95) == stats.bootstrap_ci(values, 1000, 3, 0.95)
    lo, hi = stats.bootstrap_ci(values, 1000, 3, 0.95)
    assert lo < sum(values) / len(values) < hi
    assert stats.bootstrap_ci([0.5], 1000, 3, 0.95) is None  # one slice: no interval, not a zero-width one
    assert stats.moving_average([1.0, 3.0, 5.0, 7.0], 2) == [1.0, 2.0, 4.0, 6.0]
    assert stats.relative_change(0.552, 0.125) == pytest.approx(341.6) and stats.relative_change(0.5, 0.0) is None


def test_policy_named_by_its_model_id_or_the_policy_section(tmp_path):
    from audiobook_rl.report.provenance import policy_identity

    (tmp_path / "config.json").write_text(json.dumps({"_name_or_path": "Qwen/Qwen2.5-1.5B-Instruct", "architectures": ["Qwen2ForCausalLM"]}))
    assert policy_identity({"backend": "verl"}, tmp_path) == "verl / Qwen/Qwen2.5-1.5B-Instruct (Qwen2ForCausalLM)"
    assert policy_identity({"backend": "verl"}, tmp_path / "absent", {"pretrained": "m/x"}) == "verl / m/x"


def test_a_run_that_trained_on_nothing_is_shown_as_collapsed(tmp_path):
    # Every sampled final script unreadable from step 4 on: the collapse guard's rule, read back from
    # the metrics (a run reaches the report this way when the collapse came at its last steps or the
    # guard was switched off).
    metrics = [dict(m, train_json_valid=0.0 if m["step"] >= 4 else 0.5, train_reward_group_std=0.1)
               for m in fx.metrics_rows(True)]
    paths = fx.write_run(tmp_path, metrics=metrics)
    html = render(paths)
    assert "Training collapsed: by step 6, for 3 steps in a row, no sampled final script was valid JSON" in html
    assert "train.rollout.temperature" in html
    healthy = render(fx.write_run(tmp_path / "healthy"))
    assert "Training collapsed" not in healthy


def test_a_run_whose_episodes_all_score_the_maximum_is_saturated_not_collapsed(tmp_path):
    # A warm start that learned the training excerpts: from step 4 every episode scores 1.0, so no
    # task's episodes differ. The guard must let such a run go on, and the report must say why its
    # checkpoints differ little, not call it a collapse with the advice for one.
    from audiobook_rl.training.collapse import collapse, saturation

    metrics = [dict(m, train_reward=1.0, train_reward_group_std=0.0) if m["step"] >= 4 else m for m in fx.metrics_rows(True)]
    assert collapse(metrics, 3) is None and saturation(metrics, 3) == 6
    html = render(fx.write_run(tmp_path, metrics=metrics))
    assert ("Training saturated: by step 6, for 3 steps in a row, every task&#39;s episodes tied at or near the judge&#39;s "
            "maximum") in html
    assert "Training collapsed" not in html
    # The same sameness far below the maximum is a collapse, as before.
    flat = [dict(m, train_reward=0.5) if m["step"] >= 4 else m for m in metrics]
    assert collapse(flat, 3) == (6, "every task's episodes got the same reward") and saturation(flat, 3) is None


def test_a_warm_start_that_ties_just_below_the_maximum_has_learned_its_tasks():
    # Measured on one GPU (config/one_gpu.yaml, seed 1): the warm start writes one script per task, the
    # same four times, and the judge scores it 0.996 on some steps and 1.0 on others. Those steps carry
    # no signal, but they are learned tasks: the guard must not stop the run with the advice for a
    # policy sampled too hot, and the report must say why GRPO changed nothing.
    from audiobook_rl.training.collapse import collapse, dead_step, saturation

    rewards = [0.996, 0.994, 0.996, 0.987, 0.999, 1.0, 0.999, 0.996, 1.0, 1.0]
    spread = [0.0, 0.003, 0.0, 0.015, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    metrics = [{"step": 0, "val_reward": 0.97}] + [
        {"step": i + 1, "train_reward": r, "train_reward_group_std": g, "train_json_valid": 1.0}
        for i, (r, g) in enumerate(zip(rewards, spread))
    ]
    assert [dead_step(m) for m in metrics[1:]] == [None] * 10
    assert collapse(metrics, 3) is None and saturation(metrics, 3) == 7
    # a tie well below the maximum is still no signal, and three in a row a collapse
    tied = [dict(m, train_reward=0.9, train_reward_group_std=0.0) if m["step"] >= 1 else m for m in metrics]
    assert collapse(tied, 3) == (3, "every task's episodes got the same reward") and saturation(tied, 3) is None


def test_a_verl_run_is_read_for_collapse_by_the_range_of_its_advantages(tmp_path):
    # verl logs no spread of the rewards, but GRPO's advantages are all 0 where every task's rollouts
    # tie: the same verdicts from its metrics rows (training.verl.metrics names them).
    from audiobook_rl.training.collapse import collapse, saturation

    def verl_rows(reward, spread):
        return [{k: v for k, v in m.items() if k not in ("train_json_valid", "train_reward_group_std")}
                | ({"train_reward": reward, "advantage_max": spread, "advantage_min": -spread} if m["step"] >= 4 else {})
                for m in fx.metrics_rows(True)]

    tied = verl_rows(0.5, 0.0)
    assert collapse(tied, 3) == (6, "every task's episodes got the same reward")
    assert "Training collapsed: by step 6, for 3 steps in a row, every task&#39;s episodes got the same reward" in render(
        fx.write_run(tmp_path / "tied", metrics=tied))
    assert collapse(verl_rows(1.0, 0.0), 3) is None and saturation(verl_rows(1.0, 0.0), 3) == 6
    assert collapse(verl_rows(0.5, 1.3), 3) is None  # advantages that differ: a signal


def test_a_sample_shows_the_text_before_it_that_the_agent_read(tmp_path):
    # agent.context_chars: the row carries what the agent read before the excerpt; the side-by-side
    # shows it, folded, above the source (escaped like every corpus text). Without it, nothing.
    from audiobook_rl.files import read_parquet_rows, write_parquet_rows

    paths = fx.write_run(tmp_path)
    assert "前文 · the text before the excerpt" not in render(paths)
    rows = read_parquet_rows(paths["val"])
    rows[0]["extra_info"]["before"] = "钱百通笑道：“<b>雪夜</b>正好喝酒。”"
    write_parquet_rows(paths["val"], rows)
    html = render(paths)
    assert html.count("前文 · the text before the excerpt, which the agent read (22 characters)") == 1
    assert "钱百通笑道：“&lt;b&gt;雪夜&lt;/b&gt;正好喝酒。”" in html
    sample = html.index(f'id="sample-{rows[0]["extra_info"]["slice_id"]}"')
    assert sample < html.index("前文 · the text before") < html.index('class="source"', html.index("前文 · the text before"))
