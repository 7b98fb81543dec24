"""The comparison report: headline numbers, checkpoint table, diagnosis, escaping, degraded inputs."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

import report_helpers as fx
from audiobook_rl.report import make_report
from audiobook_rl.report.checkpoints import checkpoint_rows
from audiobook_rl.report import stats
from audiobook_rl.report.load import load_run, read_metrics
from audiobook_rl.report.provenance import code_version, config_digest

TRAIN = {"backend": "local", "rollout": {"n": 4}, "clip_ratio_high": 0.3, "api_key": "sk-should-not-show"}


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
    # step 20: (0.55 + 0.60 + 0.50) / 3 = 0.55 (its judge failure left out); baseline 0.125 → +340%
    assert "The best checkpoint is step 20: validation score 0.550 (n = 3) against 0.125 for the baseline (step 0), +340.0%." in html


def test_checkpoint_table_values(overfit_run):
    _, html = overfit_run
    page = Page(html)
    header = ["mean ± std", "95% CI", "n", "failures", "format", "complete", "speaker", "emotion", "segment.", "JSON valid", "schema valid", "segments", "vs baseline"]
    base = page.row("base (step 0)")
    assert len(base) == 1 + len(header)
    cells = dict(zip(header, base[1:]))
    assert cells["mean ± std"] == "0.125 ± 0.021"
    assert cells["n"] == "4/4" and cells["failures"] == "0"
    assert cells["format"] == "0.750"  # one unparseable output scored 0 on format
    assert cells["JSON valid"] == "75%" and cells["segments"] == "1.8"  # 3 + 0 + 2 + 2 entries
    assert cells["vs baseline"] == "baseline"

    best = dict(zip(header, page.row("step 20")[1:]))
    assert page.row("step 20")[0] == "step 20 ★ best"
    assert best["mean ± std"] == "0.550 ± 0.050"
    assert best["n"] == "3/4" and best["failures"] == "1"
    assert best["completeness" if "completeness" in best else "complete"] == "0.550"
    assert best["vs baseline"] == "+340.0%"
    assert dict(zip(header, page.row("step 10")[1:]))["vs baseline"] == "+240.0%"
    step30 = dict(zip(header, page.row("step 30")[1:]))
    assert step30["JSON valid"] == "100%"  # the fenced output was repaired, still JSON
    assert step30["vs baseline"] == "+260.0%"


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
    assert "Over-fitting: The validation reward peaked at step 20 (0.552) and fell to 0.450 by step 30 (−0.102" in html
    assert "training reward kept rising" in html


def test_no_overfitting_note_when_validation_keeps_rising(tmp_path):
    html = render(fx.write_run(tmp_path, overfit=False))
    assert "Over-fitting" not in html
    assert "No sign of over-fitting" in html


def test_small_n_warning_and_its_threshold(overfit_run, tmp_path):
    _, html = overfit_run
    assert "Only n = 3 validation slices were scored for step 20 (fewer than 20)" in html
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
    assert "overlaps that of step(s) 30" in html
    assert "the ranking among these checkpoints is not reliable" in html


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
    assert "The best checkpoint is step 20" in html
    assert html.count("<svg") == 1  # the checkpoint chart only


def test_metrics_without_validation_reward_use_checkpoint_scores(tmp_path):
    rows = [{k: v for k, v in r.items() if k != "val_reward"} for r in fx.metrics_rows()]
    html = render(fx.write_run(tmp_path, metrics=rows))
    assert "No validation reward was logged during training" in html
    # checkpoints: 0.125, 0.425, 0.55 (step 20), 0.45 → the drop after step 20 is still reported
    assert "checkpoint validation score peaked at step 20 (0.550) and fell to 0.450 by step 30" in html


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
    assert "No checkpoint could be scored" in html
    assert "8 judge failure(s)" in html


def test_unreadable_lines_and_missing_files_are_named(tmp_path):
    paths = fx.write_run(tmp_path)
    with open(paths["metrics"], "a", encoding="utf-8") as f:
        f.write("{not json\n")
    Path(paths["evals"][30][0]).unlink()
    html = render(paths)
    assert "line 32 is not JSON; skipped." in html
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
