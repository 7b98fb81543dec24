"""Where the report's numbers come from: backends and models of each stage, settings, code and files."""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from .. import __version__
from ..backends import REGISTRY
from ..paths import REPO

if TYPE_CHECKING:
    from .load import RunData

# Keys whose values must never be shown even if a config carries them by mistake.
_SECRET_WORDS = ("key", "token", "secret", "password")


def code_version(repo: str | Path | None = None) -> str:
    """Package version plus the git commit (with '+dirty' for uncommitted tracked changes), when
    the code sits in a git checkout; just the version otherwise, never an error."""
    repo = Path(repo) if repo else REPO
    version = f"audiobook-rl {__version__}"
    try:
        commit = _git(repo, "rev-parse", "--short=12", "HEAD")
        dirty = _git(repo, "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return version
    if not commit:
        return version
    return f"{version}, git {commit}{'+dirty' if dirty else ''}"


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=10, check=True)
    return done.stdout.strip()


def flat_settings(section: dict, prefix: str = "") -> list[tuple[str, str]]:
    """``a.b.c = value`` pairs of a config section, secrets masked, in key order."""
    out = []
    for key in sorted(section):
        value, name = section[key], f"{prefix}{key}"
        if isinstance(value, dict):
            out.extend(flat_settings(value, name + "."))
        elif any(w in key.lower() for w in _SECRET_WORDS) and "file" not in key.lower():
            out.append((name, "(hidden)"))
        else:
            out.append((name, json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value))
    return out


def backends(rows: list[dict]) -> str:
    """'backend / model' pairs found in result rows, with how many rows each, most common first."""
    counts = Counter((str(r.get("backend") or "?"), str(r.get("model") or "?")) for r in rows)
    if not counts:
        return "unknown (no rows)"
    return "; ".join(f"{b} / {m}" + (f" ({n} rows)" if len(counts) > 1 else "") for (b, m), n in counts.most_common())


def policy_identity(train: dict, policy_dir: str | Path | None = None, policy: dict | None = None) -> str:
    """The training backend and the base policy (see :func:`base_model`)."""
    return f"{train.get('backend') or '?'} / {base_model(policy_dir, policy)}"


def base_model(policy_dir: str | Path | None = None, policy: dict | None = None) -> str:
    """The base policy: config key ``policy.pretrained`` when set, else what the Hugging Face config
    of ``policy_dir`` (results/models/step_0) says it is (model id, or architecture and size)."""
    pretrained = (policy or {}).get("pretrained")
    if pretrained:
        return str(pretrained)
    return (_model_from_dir(policy_dir) if policy_dir else None) or "? (no model id found)"


def _model_from_dir(policy_dir: str | Path) -> str | None:
    path = Path(policy_dir) / "config.json"
    try:
        cfg = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(cfg, dict):
        return None
    name = cfg.get("_name_or_path") or ""
    arch = ", ".join(cfg.get("architectures") or []) or cfg.get("model_type") or "unknown architecture"
    size = ", ".join(
        f"{label} {cfg[key]}" for key, label in (("hidden_size", "hidden"), ("num_hidden_layers", "layers"), ("vocab_size", "vocab")) if key in cfg
    )
    # A locally built model has its own directory as its name: that says nothing, the shape does.
    if name and not Path(name).is_absolute() and not name.startswith((".", "results")):
        return f"{name} ({arch})"
    return f"{arch} ({size}) from {policy_dir}"


def file_record(path: str | Path, made_by: str) -> dict:
    """Path, size, line count and short SHA-256 of one input file, and the rule that writes it."""
    p = Path(path)
    if not p.is_file():
        return {"path": str(path), "made_by": made_by, "sha256": "missing", "lines": "–", "bytes": "–"}
    data = p.read_bytes()
    return {
        "path": str(path),
        "made_by": made_by,
        "sha256": hashlib.sha256(data).hexdigest()[:12],
        "lines": data.count(b"\n") if p.suffix == ".jsonl" else "–",
        "bytes": len(data),
    }


def stage_rows(
    run: "RunData", train: dict, policy_dir: str | Path | None = None, policy: dict | None = None
) -> list[tuple[str, str]]:
    """(stage, backend / model) for labeling, the policy and the judge of each evaluated step."""
    out = [("labeling (reference scripts)", backends(list(run.labels.values())))]
    out.append(("policy (training backend / base model)", policy_identity(train, policy_dir, policy)))
    judges = [(s.step, backends(list(s.scores.values()))) for s in run.steps]
    if len({j for _, j in judges}) == 1:
        out.append(("judge (all evaluated steps)", judges[0][1]))
    else:
        out.extend((f"judge, step {step}", j) for step, j in judges)
    return out


# The training settings a reader checks first (SPEC §5): (label, path in the config section
# 'train'). Read by full path: 'train.reward' holds a model and a temperature of its own.
KEY_SETTINGS = (
    ("training steps", "total_steps"),
    ("rollouts per task (group size)", "rollout.n"),
    ("tasks per step", "train_batch_size"),
    ("learning rate", "lr"),
    ("clip ratio low", "clip_ratio_low"),
    ("clip ratio high", "clip_ratio_high"),
    ("rollout temperature", "rollout.temperature"),
    ("validation temperature", "val_temperature"),
    ("validation every (steps)", "test_freq"),
    ("checkpoint every (steps)", "save_freq"),
    ("seed", "seed"),
)


def key_settings(
    train: dict, policy_dir: str | Path | None = None, policy: dict | None = None
) -> list[tuple[str, str]]:
    """(label, value) of the settings that matter: the backend, the base policy (config section
    ``policy``, or ``policy_dir``), the training reward, then :data:`KEY_SETTINGS` of ``train``."""
    if not train:
        return []
    flat = dict(flat_settings(train))
    reward = train.get("reward") or {}
    judge = reward.get("backend") or "?"
    backend = REGISTRY["train.reward"].get(judge)
    if backend is not None and backend.provider and reward.get("model"):  # an LLM judge: its model matters
        judge = f"{judge} / {reward['model']}"
    out = [
        ("backend", flat.get("backend", "?")),
        ("policy model", base_model(policy_dir, policy)),
        ("training reward (judge)", judge),
    ]
    out += [(label, flat[path]) for label, path in KEY_SETTINGS if path in flat]
    kl = [f"{k} = {v}" for k, v in flat.items() if "kl" in k.lower().split(".")[-1]]
    out.append(("KL", "; ".join(kl) if kl else "off: the GRPO objective has no KL loss and no KL in the reward"))
    return out
