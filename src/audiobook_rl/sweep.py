"""The index of several experiments: one row per run under results/runs/<name>/, one HTML page.

A run is a directory written by the workflow with ``run_name`` set (``results/runs/<name>/``). Its
row carries the headline numbers of its own report, recomputed from the run's files: the mean
judge score of the baseline (step 0), of the best and of the last evaluated checkpoint, the change
of the best against the baseline, judge failures, the judge used and the last training reward.
A last row gives the mean and spread over runs of each number, which is what a sweep over seeds
is for: is the gain larger than the run-to-run noise?
"""

from __future__ import annotations

import html
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from .files import read_jsonl, write_text
from .steps import best_step

STEP_DIR = re.compile(r"^step_(\d+)$")


@dataclass
class RunRow:
    """The headline numbers of one run (None where the run has no such number)."""

    name: str
    steps: list[int] = field(default_factory=list)
    n_val: int = 0
    failures: int = 0
    judge: str = ""
    baseline: float | None = None
    best_step: int | None = None
    best: float | None = None
    last: float | None = None
    last_train_reward: float | None = None

    @property
    def change_pct(self) -> float | None:
        """The best checkpoint against the baseline, in % (None when the baseline is 0 or missing)."""
        if self.best is None or not self.baseline:
            return None
        return 100.0 * (self.best - self.baseline) / self.baseline


def read_run(run_dir: str | Path) -> RunRow:
    """The row of the run written to ``run_dir`` (its eval/step_N/scores.jsonl and train/metrics.jsonl;
    lines a killed run left torn are skipped: the run's own report names them)."""
    run_dir = Path(run_dir)
    row = RunRow(run_dir.name)
    means: dict[int, float] = {}
    judges: set[str] = set()
    ids: set[str] = set()
    eval_dir = run_dir / "eval"
    for step_dir in sorted(eval_dir.iterdir() if eval_dir.is_dir() else []):
        match = STEP_DIR.match(step_dir.name)
        scores_path = step_dir / "scores.jsonl"
        if not match or not scores_path.is_file():
            continue
        step = int(match.group(1))
        scores = read_jsonl(scores_path, problems=[])
        row.steps.append(step)
        ids.update(str(s.get("id")) for s in scores)
        ok = [s["overall"] for s in scores if s.get("overall") is not None]
        row.failures += len(scores) - len(ok)
        judges.update(f"{s.get('backend')} ({s.get('model')})" for s in scores if s.get("backend"))
        if ok:
            means[step] = statistics.fmean(ok)
    row.steps.sort()
    row.n_val = len(ids)
    row.judge = ", ".join(sorted(judges))
    row.baseline = means.get(0)
    row.best_step = best_step(means)
    if row.best_step is not None:
        row.best = means[row.best_step]
        row.last = means[max(means)]
    metrics_path = run_dir / "train" / "metrics.jsonl"
    if metrics_path.is_file():
        rewards = [m["train_reward"] for m in read_jsonl(metrics_path, problems=[]) if m.get("train_reward") is not None]
        row.last_train_reward = rewards[-1] if rewards else None
    return row


def _fmt(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _spread(values: list[float | None], digits: int = 3) -> str:
    """Mean ± sample standard deviation over the runs that have the number."""
    present = [v for v in values if v is not None]
    if not present:
        return "–"
    if len(present) == 1:
        return _fmt(present[0], digits)
    return f"{statistics.fmean(present):.{digits}f} ± {statistics.stdev(present):.{digits}f}"


def render_index(rows: list[RunRow], title: str = "audiobook-rl runs") -> str:
    """A self-contained HTML page: one row per run (linking to its report) and a mean ± sd row."""
    e = html.escape
    head = ("run", "evaluated steps", "val slices", "baseline (step 0)", "best step", "best", "change vs baseline",
            "last", "last train reward", "judge failures", "judge")
    body = []
    for r in sorted(rows, key=lambda r: r.name):
        change = "–" if r.change_pct is None else f"{r.change_pct:+.0f}%"
        cells = [
            f'<a href="{e(r.name)}/report.html">{e(r.name)}</a>',
            e(", ".join(map(str, r.steps)) or "–"),
            str(r.n_val),
            _fmt(r.baseline),
            "–" if r.best_step is None else str(r.best_step),
            _fmt(r.best),
            change,
            _fmt(r.last),
            _fmt(r.last_train_reward),
            str(r.failures),
            e(r.judge or "–"),
        ]
        body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    changes = [r.change_pct for r in rows]
    summary = [
        f"mean ± sd over {len(rows)} runs", "", "", _spread([r.baseline for r in rows]), "",
        _spread([r.best for r in rows]), _spread(changes, 0) + ("%" if any(c is not None for c in changes) else ""),
        _spread([r.last for r in rows]), _spread([r.last_train_reward for r in rows]),
        str(sum(r.failures for r in rows)), "",
    ]
    foot = "<tr class=summary>" + "".join(f"<td>{e(c)}</td>" for c in summary) + "</tr>"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; }}
table {{ border-collapse: collapse; }}
th, td {{ border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: right; }}
td:first-child, th:first-child, td:last-child {{ text-align: left; }}
tr.summary td {{ font-weight: bold; background: #f4f4f4; }}
</style></head><body>
<h1>{e(title)}</h1>
<p>Mean judge score over the validation slices per run (judge failures excluded; each run's report
has the intervals and per-sample detail). "best" is the best evaluated checkpoint after step 0, the
baseline, which it may score below.</p>
<table>
<thead><tr>{"".join(f"<th>{e(h)}</th>" for h in head)}</tr></thead>
<tbody>
{chr(10).join(body)}
</tbody>
<tfoot>{foot}</tfoot>
</table>
</body></html>
"""


def build_index(run_dirs: list[str | Path], out_path: str | Path, title: str = "audiobook-rl runs") -> list[RunRow]:
    """Read each run directory and write the index page to ``out_path`` (atomically)."""
    rows = [read_run(d) for d in run_dirs]
    write_text(out_path, render_index(rows, title))
    return rows
