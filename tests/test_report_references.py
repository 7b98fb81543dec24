"""The report's "Reference scripts" block: how right the references' speakers are against the
corpus's speaker key, and the one sentence when there is no key for the corpus."""

from __future__ import annotations

import json
import re

import helpers.report_run as fx
from audiobook_rl.judging.alignment import compared
from audiobook_rl.report import make_report
from helpers import speaker_key as case


def run_with_case_labels(root):
    """The fixture run with the four-line case as its labels (the validation slices' references)."""
    paths = fx.write_run(root / "run")
    paths["labels"].write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in case.records()), encoding="utf-8")
    return paths


def report(paths, **kwargs) -> str:
    return make_report(paths["metrics"], paths["labels"], paths["evals"], fx.DEFAULT_SETTINGS, val=paths["val"], **kwargs)


def block(html: str) -> str:
    return re.search(r'<section id="references">(.*?)</section>', html, re.S).group(1)


def test_the_block_shows_the_labeler_the_counts_and_the_wrong_quotes(tmp_path):
    paths = run_with_case_labels(tmp_path)
    corpus, key = case.write_corpus_and_key(tmp_path)
    html = report(paths, corpus=corpus, speaker_key=key)
    text = block(html)
    assert "<code>rules</code> (<code>rules-v4</code>)" in text
    assert "3 quotes in 4 excerpts are covered" in text
    assert "Speaker right: <strong>2/3</strong> (66.7%)" in text
    assert "Quotes not in the key: 1." in text
    # voice accuracy: 1 wrong character (好) of the four lines' compared characters; of the quotes' 5 (走吧好再会)
    n = len(compared(case.CORPUS))
    assert f"Voice accuracy: <strong>{100 * (n - 1) / n:.1f}%</strong>" in text and "(quotes 80.0%, narration 100.0%)" in text
    rows = re.findall(r"<tr><td>(.*?)</td><td class=\"n\">(\d+)</td><td>(.*?)</td><td>(.*?)</td></tr>", text)
    assert rows == [("好。", str(case.CORPUS.index("“好")), "老邓", "杜三娘 | 三娘")]
    assert str(key) in html  # listed among the input files


def test_without_a_key_or_with_a_stale_one_the_block_says_so_in_one_sentence(tmp_path):
    paths = run_with_case_labels(tmp_path)
    corpus, key = case.write_corpus_and_key(tmp_path, key_text="another text")
    stale = block(report(paths, corpus=corpus, speaker_key=key))
    assert "was made on another version of the corpus" in stale and "Speaker right" not in stale
    missing = block(report(paths, corpus=corpus, speaker_key=None))
    assert re.fullmatch(r"\s*<h2>Reference scripts</h2>\s*<p>No speaker key of the corpus was found[^<]*</p>\s*", missing)
    # Without the corpus (a report of files alone) there is nothing to check against: no block.
    assert 'id="references"' not in report(paths)
