"""The index of several experiments: one row per run under results/runs/<name>/, one HTML page.

A run is a directory written by the workflow with ``run_name`` set (``results/runs/<name>/``). Its
row carries the headline numbers of its own report, recomputed from the run's files: the mean
judge score of the baseline (step 0), of the best and of the last evaluated checkpoint, the change
of the best against the baseline, judge failures, the judge used and the last training reward.
A last row gives the mean and spread over runs of each number.

Runs are grouped into *arms* by what their training recorded (``train/summary.json``:
``reward_shuffled``): the real reward, or the shuffled-reward control. Each run's **gain** is its
best checkpoint (chosen on validation) against its base policy on the held-out test slices
(validation when the run has no test set, which the page then says), per slice
(:func:`.compare.paired.differences`). Per arm: the seeds' gains, their mean and interquartile mean
with stratified bootstrap intervals, and how often a seed gained (:mod:`.compare.seeds`); with both
arms, the gain the reward explains (:func:`.compare.control.reward_effect`).

Runs that trained from an SFT warm start (``eval/step_sft``) also carry **what GRPO added**: the same
best checkpoint against the warm start, per slice on the same split, and per arm the same statistics
over the seeds. A warm start's seed can move a run more than GRPO does, so this is the number that
answers whether RL helped beyond imitation.
"""

from __future__ import annotations

import html
import json
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from .compare.control import reward_effect
from .compare.paired import Paired, differences, paired
from .compare.seeds import MIN_SEEDS, arm_summary, probability_of_improvement
from .config import section
from .files import read_jsonl, write_text
from .steps import SFT, best_step

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
    arm: str = "real"  # "shuffled" when training permuted its rewards (train.reward.shuffle)
    gain_split: str = ""  # "test", or "validation" when the run has no test set; "" = no gain
    gains: dict[str, float] = field(default_factory=dict)  # slice id -> best - base, on gain_split
    paired: Paired | None = None  # best against base on gain_split
    sft: float | None = None  # the SFT warm start's mean on validation (None: the run had none)
    rl_gains: dict[str, float] = field(default_factory=dict)  # slice id -> best - warm start, on gain_split
    rl_paired: Paired | None = None  # best against the warm start on gain_split

    @property
    def change_pct(self) -> float | None:
        """The best checkpoint against the baseline, in % (None when the baseline is 0 or missing)."""
        if self.best is None or not self.baseline:
            return None
        return 100.0 * (self.best - self.baseline) / self.baseline


def _overall(scores: list[dict]) -> dict[str, float | None]:
    """Slice id -> overall score (None for a judge failure) of one step's scores.jsonl lines."""
    return {str(s.get("id")): s.get("overall") for s in scores}


def _sft_scores(eval_dir: Path) -> list[dict] | None:
    """The warm start's scores.jsonl lines under ``eval_dir`` (None when the run had no warm start)."""
    path = eval_dir / f"step_{SFT}" / "scores.jsonl"
    return read_jsonl(path, problems=[]) if path.is_file() else None


def _overall_by_step(eval_dir: Path) -> dict[int, list[dict]]:
    """The scores.jsonl lines of each step_N directory under ``eval_dir`` (torn lines skipped)."""
    out = {}
    for step_dir in sorted(eval_dir.iterdir() if eval_dir.is_dir() else []):
        match = STEP_DIR.match(step_dir.name)
        scores_path = step_dir / "scores.jsonl"
        if match and scores_path.is_file():
            out[int(match.group(1))] = read_jsonl(scores_path, problems=[])
    return out


def read_run(run_dir: str | Path, stats: dict | None = None) -> RunRow:
    """The row of the run written to ``run_dir`` (its eval/[test/]step_N/scores.jsonl, train/metrics.jsonl
    and train/summary.json; lines a killed run left torn are skipped: the run's own report names them).
    ``stats`` (the ``report`` section's bootstrap settings) sets the paired interval of the gain."""
    run_dir = Path(run_dir)
    row = RunRow(run_dir.name)
    means: dict[int, float] = {}
    judges: set[str] = set()
    ids: set[str] = set()
    val = _overall_by_step(run_dir / "eval")
    sft_val = _sft_scores(run_dir / "eval")
    for step, scores in val.items():
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
        test = _overall_by_step(run_dir / "eval" / "test")
        split, scores = ("test", test) if {0, row.best_step} <= set(test) else ("validation", val)
        if {0, row.best_step} <= set(scores):
            best, base = (_overall(scores[k]) for k in (row.best_step, 0))
            row.gain_split, row.gains = split, differences(best, base)
            row.paired = paired(best, base, **_options(stats, seed_offset=row.best_step))
            sft = _sft_scores(run_dir / "eval" / "test") if split == "test" else sft_val
            if sft is not None:
                warm = _overall(sft)
                row.rl_gains = differences(best, warm)
                row.rl_paired = paired(best, warm, **_options(stats, seed_offset=row.best_step))
    if sft_val is not None:
        ok = [s["overall"] for s in sft_val if s.get("overall") is not None]
        row.sft = statistics.fmean(ok) if ok else None
    metrics_path = run_dir / "train" / "metrics.jsonl"
    if metrics_path.is_file():
        rewards = [m["train_reward"] for m in read_jsonl(metrics_path, problems=[]) if m.get("train_reward") is not None]
        row.last_train_reward = rewards[-1] if rewards else None
    summary_path = run_dir / "train" / "summary.json"
    if summary_path.is_file():
        try:
            shuffled = json.loads(summary_path.read_text(encoding="utf-8")).get("reward_shuffled")
        except (OSError, ValueError, AttributeError):
            shuffled = None
        row.arm = "shuffled" if shuffled else "real"
    return row


def _options(stats: dict | None, seed_offset: int = 0) -> dict:
    """The bootstrap options of the ``report`` section (samples, seed, confidence), as the report
    uses them; the schema's defaults when none is given."""
    stats = stats or section("report")
    return {"samples": stats["bootstrap_samples"], "seed": stats["bootstrap_seed"] + seed_offset,
            "confidence": stats["confidence"]}


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


def _signed(x: float, digits: int = 3) -> str:
    """``x`` with its sign; a value that rounds to 0 is +0.000 (float noise is no loss)."""
    return f"{x if round(x, digits) else 0.0:+.{digits}f}"


def _interval(ci: tuple[float, float] | None, digits: int = 3, signed: bool = True) -> str:
    if ci is None:
        return ""
    lo, hi = (_signed(v, digits) for v in ci) if signed else (f"{v:.{digits}f}" for v in ci)
    return f" [{lo}, {hi}]"


def _gain_cell(p: Paired | None) -> str:
    if p is None or p.mean_diff is None:
        return "–"
    return f"{_signed(p.mean_diff)}{_interval(p.diff_ci)}"


def _improve_cell(p: Paired | None) -> str:
    if p is None or p.p_improve is None:
        return "–"
    return f"{p.p_improve:.2f}{_interval(p.p_improve_ci, 2, signed=False)}"


ARMS = ("real", "shuffled")


def _arm_rows(arms: dict[str, dict[str, dict[str, float]]], options: dict) -> str:
    """One table row per arm: its seeds, each seed's gain, mean and IQM with their intervals,
    P(gain > 0) across seeds and the reason an interval is missing."""
    e = html.escape
    body = []
    for arm, runs in arms.items():
        a = arm_summary(runs, **options)
        seeds = ", ".join(f"{e(name)}: {_signed(gain)}" for name, gain in a.gains.items())
        pi = probability_of_improvement(list(a.gains.values()), [0.0])
        cells = [e(arm), str(a.n_seeds), seeds, f"{_signed(a.mean)}{_interval(a.mean_ci)}",
                 f"{_signed(a.iqm)}{_interval(a.iqm_ci)}", f"{pi:.2f}", e(a.too_few or "")]
        body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return "\n".join(body)


def _arm_table(arms: dict[str, dict[str, dict[str, float]]], options: dict, gain: str) -> str:
    level = f"{options['confidence']:.0%}"
    head = ("arm", "seeds", f"gain per seed ({gain})", f"mean [{level} interval]", f"IQM [{level} interval]",
            "P(gain > 0) across seeds", "note")
    return f"""<table>
<thead><tr>{"".join(f"<th>{html.escape(h)}</th>" for h in head)}</tr></thead>
<tbody>
{_arm_rows(arms, options)}
</tbody>
</table>"""


def _by_arm(rows: list[RunRow], gains: str) -> dict[str, dict[str, dict[str, float]]]:
    """Arm -> run name -> the run's per-slice gains (the ``gains`` field), arms without runs left out."""
    arms = {arm: {r.name: getattr(r, gains) for r in rows if r.arm == arm and getattr(r, gains)} for arm in ARMS}
    return {arm: runs for arm, runs in arms.items() if runs}


def arms_html(rows: list[RunRow], stats: dict | None = None, min_seeds: int = MIN_SEEDS) -> str:
    """The arms section: per arm (each run a seed) the seeds' gains, mean and IQM with stratified
    bootstrap intervals, P(gain > 0) across seeds; with both arms, the gain the reward explains; for
    runs with an SFT warm start, the same statistics of what GRPO added to it."""
    e = html.escape
    with_gain = [r for r in rows if r.gains]
    if not with_gain:
        return "<p>No run has a best checkpoint scored beside its base policy: no gains to compare.</p>"
    options = {**_options(stats), "min_seeds": min_seeds}
    arms = _by_arm(with_gain, "gains")
    level = f"{options['confidence']:.0%}"
    splits = sorted({r.gain_split for r in with_gain})
    where = " and ".join(splits)
    optimistic = (" Some runs have no test set: their gain is measured on the validation slices that chose their checkpoint, "
                  "so it is optimistic.") if "validation" in splits else ""
    control = ""
    if set(arms) == set(ARMS):
        effect = reward_effect(arms["real"], arms["shuffled"], **options)
        d = effect.difference
        if d.mean_diff is None:
            control = "<p class=control>The reward's share of the gain cannot be computed: an arm has no gain.</p>"
        else:
            share = "" if effect.explained_share is None else f"; share of the real arm's gain: {effect.explained_share:.0%}"
            note = f" ({e(d.too_few)})" if d.too_few else ""
            control = (
                f"<p class=control><b>Gain the reward explains</b> (real − shuffled): {_signed(d.mean_diff)}{_interval(d.mean_diff_ci)}, "
                f"P(real &gt; shuffled) = {d.p_improve:.2f}{_interval(d.p_improve_ci, 2, signed=False)}{share}{note}.</p>"
            )
    rl_arms = _by_arm(with_gain, "rl_gains")
    rl = ""
    if rl_arms:
        rl_where = " and ".join(sorted({r.gain_split for r in with_gain if r.rl_gains}))
        without = sorted(r.name for r in with_gain if not r.rl_gains)
        left_out = f" Runs without a warm start are left out ({e(', '.join(without))})." if without else ""
        rl = f"""<h2>What GRPO added to the SFT warm start</h2>
<p>For the runs that trained from an SFT warm start: the same best checkpoint minus the warm start GRPO started
from, per slice, on the {e(rl_where)} slices, averaged; per arm the same statistics as above. The gain over the base
policy above is the whole recipe's; this is RL's share beyond imitation. Warm starts of different seeds can differ
by more than GRPO changes them: read it over several seeds.{left_out}</p>
{_arm_table(rl_arms, options, "best − warm start")}"""
    return f"""<h2>Arms: the real reward and the shuffled-reward control</h2>
<p>Each run is one training seed of its arm (read from its train/summary.json). A run's gain is its best
checkpoint (chosen on validation) minus its base policy, per slice, on the {e(where)} slices, averaged. Mean and
IQM (interquartile mean: the middle half of the seeds) have {level} stratified bootstrap intervals
({options['samples']} resamples of the seeds, and of each seed's slices); with fewer than {min_seeds} seeds
no interval is given. Bootstrap intervals over few seeds are too narrow: a nominal 95% interval of the mean gain
covered the true gain 85% of the time with 3 seeds, 86% with 4 and 88% with 5 (bench/bench_compare_coverage.py).
P(gain &gt; 0) is the share of seeds that gained (a tie with 0 counts half). The shuffled arm trains on each step's
rewards permuted across its episodes: what it gains, training gives without the reward's information.{optimistic}</p>
{_arm_table(arms, options, "best − base")}
{control}
{rl}"""


def render_index(rows: list[RunRow], title: str = "audiobook-rl runs", stats: dict | None = None,
                 min_seeds: int = MIN_SEEDS) -> str:
    """A self-contained HTML page: one row per run (linking to its report), a mean ± sd row, and the
    arms section (:func:`arms_html`). ``stats`` is the ``report`` section (bootstrap settings)."""
    e = html.escape
    head = ("run", "arm", "evaluated steps", "val slices", "baseline (step 0)", "SFT warm start", "best step", "best",
            "change vs baseline", "gain [paired interval]", "P(improve)", "GRPO vs warm start [paired interval]", "last",
            "last train reward", "judge failures", "judge")
    body = []
    for r in sorted(rows, key=lambda r: r.name):
        change = "–" if r.change_pct is None else f"{r.change_pct:+.0f}%"
        cells = [
            f'<a href="{e(r.name)}/report.html">{e(r.name)}</a>',
            e(r.arm),
            e(", ".join(map(str, r.steps)) or "–"),
            str(r.n_val),
            _fmt(r.baseline),
            _fmt(r.sft),
            "–" if r.best_step is None else str(r.best_step),
            _fmt(r.best),
            change,
            _gain_cell(r.paired) + (f" ({e(r.gain_split)})" if r.gain_split else ""),
            _improve_cell(r.paired),
            _gain_cell(r.rl_paired),
            _fmt(r.last),
            _fmt(r.last_train_reward),
            str(r.failures),
            e(r.judge or "–"),
        ]
        body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    changes = [r.change_pct for r in rows]
    summary = [
        f"mean ± sd over {len(rows)} runs", "", "", "", _spread([r.baseline for r in rows]), _spread([r.sft for r in rows]), "",
        _spread([r.best for r in rows]), _spread(changes, 0) + ("%" if any(c is not None for c in changes) else ""),
        _spread([r.paired.mean_diff if r.paired else None for r in rows]), "",
        _spread([r.rl_paired.mean_diff if r.rl_paired else None for r in rows]),
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
p.control {{ font-size: 1.1em; }}
</style></head><body>
<h1>{e(title)}</h1>
<p>Mean judge score over the validation slices per run (judge failures excluded; each run's report
has the intervals and per-sample detail). "best" is the best evaluated checkpoint after step 0, the
baseline, which it may score below. "gain" is that checkpoint against the baseline on the held-out test
slices (or, without a test set, on validation): the mean per-slice difference with its paired interval;
P(improve) is the share of slices where it scores higher (ties half). For a run with an SFT warm start,
"SFT warm start" is its validation mean and "GRPO vs warm start" the same checkpoint against it, on the
slices of its gain.</p>
<table>
<thead><tr>{"".join(f"<th>{e(h)}</th>" for h in head)}</tr></thead>
<tbody>
{chr(10).join(body)}
</tbody>
<tfoot>{foot}</tfoot>
</table>
{arms_html(rows, stats, min_seeds)}
</body></html>
"""


def build_index(run_dirs: list[str | Path], out_path: str | Path, title: str = "audiobook-rl runs",
                stats: dict | None = None) -> list[RunRow]:
    """Read each run directory and write the index page to ``out_path`` (atomically); ``stats`` is
    the ``report`` section (bootstrap settings)."""
    rows = [read_run(d, stats) for d in run_dirs]
    write_text(out_path, render_index(rows, title, stats))
    return rows
