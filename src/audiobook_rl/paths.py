"""Where the repository's files are: one definition for the package, the workflow and the tests.

The package runs from a clone of the repository (``pip install -e .``): its config, prompts and
stage scripts are read from there.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "config" / "config.yaml"
SCHEMA = REPO / "config" / "config.schema.yaml"
SCRIPTS = REPO / "scripts"


def repo_file(path: str | Path) -> Path:
    """A file named in the config (the corpus, a prompt): as given if it exists or is absolute, else
    inside the repository (so a run in another working directory finds the bundled files)."""
    p = Path(path)
    return p if p.is_absolute() or p.exists() else REPO / p
