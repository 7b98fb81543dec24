"""The comparison report (results/report.html): did RL help, where, and at which checkpoint?

:func:`make_report` reads the training metrics, the labels, the validation split and each
evaluated step's outputs and scores, and returns one self-contained HTML page (styles and SVG
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
    **shown,
) -> str:
    """The report's HTML. ``evals`` maps each evaluated step to its (outputs.jsonl, scores.jsonl);
    ``settings`` is the ``report`` config section; ``policy_dir`` (results/models/step_0) names the
    base policy. ``shown`` goes to :func:`.render.build_report` as given (``train``, ``policy``,
    ``eval_cfg``, ``config_hash``, ``template``, ``repo``)."""
    from .load import load_run
    from .render import build_report

    run = load_run(metrics, labels, evals, val)
    inputs = {"metrics": str(metrics), "labels": str(labels)}
    if val:
        inputs["val"] = str(val)
    if policy_dir:
        inputs["policy"] = str(Path(policy_dir) / "config.json")
    for step in sorted(evals):
        inputs[f"outputs_{step}"] = str(evals[step][0])
        inputs[f"scores_{step}"] = str(evals[step][1])
    return build_report(run, settings, inputs, policy_dir=policy_dir, **shown)
