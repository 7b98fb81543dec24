import os
import sys

from audiobook_rl.config import validate_config
from audiobook_rl.deps import imported_files
from audiobook_rl.errors import UserError

try:
    validate_config(
        config, os.path.join(workflow.basedir, "config", "config.schema.yaml")
    )
except UserError as err:
    # One sentence, no traceback: the user fixes a key, not our code.
    sys.exit(f"Error: {err}")

RESULTS = "results"
LOGS = "logs"


def repo_file(path):
    """A path from the config: as given if it exists (or is absolute), else inside the repository."""
    if os.path.isabs(path) or os.path.exists(path):
        return path
    return os.path.join(workflow.basedir, path)


if not os.path.exists(repo_file(config["corpus"])):
    sys.exit(f"Error: config key 'corpus': {config['corpus']}: no such file.")


def code(script):
    """The package modules a stage script imports: rule inputs, so an edit reruns the stage."""
    return imported_files(os.path.join(workflow.basedir, "scripts", script))


def eval_steps():
    """The checkpoints that are exported, generated from and judged (step 0 = the base policy)."""
    return [0] + sorted(config.get("eval", {}).get("steps", []))


def final_outputs():
    return [f"{RESULTS}/data/train.parquet", f"{RESULTS}/data/val.parquet"]
