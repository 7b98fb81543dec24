"""The comparison report (results/report.html): did RL help, where, and at which checkpoint?

:func:`make_report` reads the training metrics, the labels, the validation and test splits and
each evaluated step's outputs and scores on both, and returns one self-contained HTML page (styles and SVG
charts inline, no scripts, every model or corpus string escaped). Modules: :mod:`.load` reads the
files, :mod:`.checkpoints` and :mod:`.diagnosis` compute the numbers and sentences, :mod:`.plots`
draws the charts, :mod:`.provenance` says where everything came from, :mod:`.render` fills
``template.html``.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["make_report", "TEMPLATE"]

# The workflow imports .provenance while it parses the rules; the heavy modules (matplotlib,
# pyarrow) are imported only when a report is made.
TEMPLATE = Path(__file__).with_name("template.html")


def make_report(
    metrics: str | Path,
    labels: str | Path,
    evals: dict[int, tuple[str | Path, str | Path]],
    settings: dict,
    val: str | Path | None = None,
    policy_dir: str | Path | None = None,
    test_evals: dict[int, tuple[str | Path, str | Path]] | None = None,
    test: str | Path | None = None,
    judges: dict[str, dict[int, str | Path]] | None = None,
    corpus: str | Path | None = None,
    speaker_key: str | Path | None = None,
    **shown,
) -> str:
    """The report's HTML. ``evals`` maps each evaluated step (a number, or ``sft`` for the warm start)
    to its (outputs.jsonl, scores.jsonl) on the validation slices, ``test_evals`` the same on the
    held-out test slices (none: no test set);
    ``settings`` is the ``report`` config section; ``policy_dir`` (results/models/step_0) names the
    base policy; ``judges`` maps each extra judge (``judge.agreement``) to its scores.jsonl per step,
    on the split of the headline. With ``corpus`` (the novel the labels were cut from), the references'
    speakers are checked against ``speaker_key`` (its hand-labelled key, none: the report says so).
    ``shown`` goes to :func:`.render.build_report` as given (``train``,
    ``policy``, ``eval_cfg``, ``config_hash``, ``template``, ``repo``, ``judge_name``)."""
    from ..steps import order
    from .load import load_run
    from .render import build_report

    run = load_run(metrics, labels, evals, val, test_evals, test)
    inputs = {"metrics": str(metrics), "labels": str(labels)}
    if val:
        inputs["val"] = str(val)
    if test and test_evals:
        inputs["test"] = str(test)
    if policy_dir:
        inputs["policy"] = str(Path(policy_dir) / "config.json")
    for split, files in (("", evals), ("test_", test_evals or {})):
        for step in sorted(files, key=order):
            inputs[f"{split}outputs_{step}"] = str(files[step][0])
            inputs[f"{split}scores_{step}"] = str(files[step][1])
    for name, files in (judges or {}).items():
        for step in sorted(files):
            inputs[f"judge {name} scores_{step}"] = str(files[step])
    references = None
    if corpus:
        from ..corpus import read_text
        from ..judging.speaker_key import check_references

        references = check_references(list(run.labels.values()), read_text(corpus)[0], speaker_key)
        inputs["corpus"] = str(corpus)
        if speaker_key:
            inputs["speaker_key"] = str(speaker_key)
    return build_report(run, settings, inputs, policy_dir=policy_dir, judges=judges or {}, references=references, **shown)
