"""Putting the report together: data → numbers → charts → one self-contained HTML page.

The template is rendered by Jinja2 with autoescaping on, so every string from a model, the corpus
or a file (scripts, reasons, errors, model ids, paths) is HTML-escaped. Only the SVG charts, built
from numbers by :mod:`.plots`, and the stylesheet are inserted unescaped.
"""

from __future__ import annotations

from pathlib import Path

import jinja2

from ..judging import DIMENSIONS
from . import diagnosis, fonts, judge_checks, plots, provenance
from .checkpoints import best_row, checkpoint_rows, sft_row
from .load import RunData
from .scripts_view import script_view

TEMPLATE = Path(__file__).with_name("template.html")  # the same file as audiobook_rl.report.TEMPLATE


def _samples(run: RunData, rows, limit: int) -> list[dict]:
    out = []
    best = best_row(rows)
    # the base policy, the warm start (if any), then the training steps
    shown = [(s, "base (step 0)" if s.step == 0 else f"step {s.step}", False) for s in run.steps]
    if run.sft is not None:
        shown.insert(1, (run.sft, "SFT warm start", True))
    for sid in run.val_ids[:limit] if limit else run.val_ids:
        label = run.labels.get(sid, {})
        cards = []
        for s, name, is_sft in shown:
            output = s.outputs.get(sid)
            score = s.scores.get(sid)
            cards.append(
                {
                    "name": name,
                    "is_best": best is not None and best.step == s.step and not is_sft,
                    "has_output": output is not None,
                    "final": script_view(output.get("final")) if output else None,
                    "draft": script_view(output.get("draft")) if output else None,
                    "score": score,
                    "overall": diagnosis.fmt(score.get("overall")) if score and isinstance(score.get("overall"), (int, float)) else None,
                    "dims": [
                        (d, (score.get("scores") or {}).get(d), (score.get("reasons") or {}).get(d, ""))
                        for d in DIMENSIONS
                    ]
                    if score
                    else [],
                }
            )
        out.append(
            {
                "id": sid,
                "text": label.get("text") or run.val_text.get(sid, ""),
                "before": run.val_before.get(sid, ""),
                "reference": script_view(label["script"]) if "script" in label else None,
                "cards": cards,
            }
        )
    return out


def with_sft(rows: list, sft) -> list:
    """The checkpoint rows with the warm start's (if any) right after the base policy's."""
    return rows[:1] + [sft] + rows[1:] if sft else list(rows)


def build_report(
    run: RunData,
    settings: dict,
    inputs: dict[str, str],
    train: dict | None = None,
    eval_cfg: dict | None = None,
    config_hash: str = "",
    template: str | Path = TEMPLATE,
    repo: str | Path | None = None,
    policy_dir: str | Path | None = None,
    policy: dict | None = None,
    judges: dict[str, dict[int, str | Path]] | None = None,
    judge_name: str = "the configured judge",
    references=None,
) -> str:
    """The HTML text of the report.

    ``settings`` is the ``report`` config section; ``inputs`` maps input names (metrics, labels,
    val, outputs_N, scores_N) to the paths read, for the provenance table; ``train`` and
    ``eval_cfg`` are the config sections shown as settings; ``policy_dir`` is the base policy's model
    directory, whose config names the policy unless the ``policy`` section names a pretrained one;
    ``judges`` are the extra judges' scores (name → step → scores.jsonl) on the headline's split,
    compared with the configured judge, ``judge_name``; ``references`` is how right the reference
    scripts' speakers are (:func:`audiobook_rl.judging.speaker_key.check_references`: a check, or the
    sentence saying why there is none; None: not shown).
    """
    train, eval_cfg = train or {}, eval_cfg or {}
    rows = checkpoint_rows(run, settings)
    # The checkpoint is chosen on validation; with a test set, the headline numbers are the test set's.
    test_rows = checkpoint_rows(run.test, settings, chosen_by={r.step: r.mean for r in rows}) if run.test else None
    head_rows = test_rows or rows
    head_run = run.test or run
    # The warm start GRPO started from (if any), on each split, beside the base policy.
    sft = sft_row(run, rows, settings)
    test_sft = sft_row(run.test, test_rows, settings) if run.test else None
    head_sft = test_sft if test_rows else sft
    head_best = best_row(head_rows)
    hacking = judge_checks.hacking_checks(head_run, settings) if len(head_run.steps) > 1 else []
    agreement = judge_checks.judge_agreement(head_run, judge_name, judges or {}, settings)
    curves = diagnosis.curves(run.metrics, settings["smoothing_window"])
    made_by = {"metrics": "train_grpo", "labels": "label_slices", "val": "split_dataset", "test": "split_dataset", "policy": "build_policy",
               "corpus": "the novel", "speaker_key": "labelled by hand"}
    files = [
        provenance.file_record(path, made_by.get(name) or ("generate" if "outputs" in name else "judge_agreement" if name.startswith("judge ") else "judge"))
        for name, path in inputs.items()
    ]
    ref_segments = [len(l.get("script", [])) for sid, l in run.labels.items() if sid in set(run.val_ids)]
    context = {
        "title": settings["title"],
        "headline": diagnosis.headline(head_rows, settings["confidence"], held_out=test_rows is not None, sft=head_sft),
        "voice_line": diagnosis.voice_text(head_best, head_rows[0], settings["confidence"]) if head_best else None,
        "rows": rows,
        # the checkpoint tables list the warm start right after the base policy
        "table_rows": with_sft(rows, sft),
        "sft": sft,
        "head_sft": head_sft,
        "test_rows": test_rows,
        "paired_rows": list(zip(with_sft(rows, sft), with_sft(test_rows, test_sft) if test_rows else [None] * (len(rows) + bool(sft)))),
        "sft_pairs": list(zip(rows[1:], (test_rows or [None] * len(rows))[1:])) if sft else [],
        "head_split": "held-out test" if test_rows else "validation",
        "best": head_best,
        "base": head_rows[0],
        "dims": DIMENSIONS,
        "short_dims": {"format": "format", "completeness": "complete", "speaker": "speaker", "emotion": "emotion", "segmentation": "segment."},
        "fmt": diagnosis.fmt,
        "pct": diagnosis.pct,
        "verdict": diagnosis.verdict,
        "curves": curves,
        "curves_svg": plots.curves_svg(curves, [r.step for r in rows], settings["smoothing_window"]),
        "checkpoints_svg": plots.checkpoints_svg(rows, settings["confidence"]),
        "overfit": diagnosis.overfitting_note(curves, rows, settings),
        "collapse": diagnosis.training_collapse_notes(run.metrics, train) + diagnosis.collapse_notes(rows)
        + diagnosis.voice_notes(with_sft(rows, sft)),
        "warnings": diagnosis.noise_warnings(head_rows, settings, "test" if test_rows else "validation")
        + diagnosis.coverage_warnings(rows)
        + (diagnosis.coverage_warnings(test_rows, "test") if test_rows else []),
        "hacking": hacking,
        "hacking_warnings": [c.warning for c in hacking if c.warning],
        "agreement": agreement,
        "problems": run.problems,
        "n_metrics": len(run.metrics),
        "last_step": run.metrics[-1]["step"] if run.metrics else None,
        "settings": settings,
        "ref_segments": sum(ref_segments) / len(ref_segments) if ref_segments else None,
        "references": references,
        "max_wrong": 10,  # wrong quotes listed under the references' check
        "samples": _samples(run, rows, settings["max_samples"]),
        "n_val": len(run.val_ids),
        "n_test": len(run.test.val_ids) if run.test else 0,
        "stages": provenance.stage_rows(run, train, policy_dir, policy),
        "train_settings": provenance.flat_settings(train),
        "key_settings": provenance.key_settings(train, policy_dir, policy),
        "eval_settings": provenance.flat_settings(eval_cfg),
        "report_settings": provenance.flat_settings(settings),
        "config_hash": config_hash or "not given",
        "code_version": provenance.code_version(repo),
        "files": files,
    }
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(Path(template).parent)),
        autoescape=True,  # every {{ value }} is escaped unless marked safe on purpose
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    page = env.get_template(Path(template).name)
    # The characters on the page decide which glyphs of the CJK font it carries.
    html = page.render(**context, font_face="")
    face = fonts.font_face(html)
    return page.render(**context, font_face=face) if face else html
