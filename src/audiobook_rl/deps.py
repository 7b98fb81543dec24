"""Which package modules a stage script imports, so Snakemake can rerun a stage when one changes.

Snakemake tracks a ``script:``'s own file but not the modules it imports; the workflow declares
the files found here as rule inputs (compared by content, so a ``touch`` reruns nothing).
Every ``import`` statement counts, also inside functions. Backend registries load optional backends
with ``importlib.import_module`` instead, so a stage depends on such a backend only when its script
imports it by name (``scripts/label_slices.py`` imports the Claude labeler; building the policy,
which uses only the rule labeler, does not).
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

PACKAGE = "audiobook_rl"
PACKAGE_DIR = Path(__file__).resolve().parent


def imported_files(script: str | Path) -> list[str]:
    """All files of this package that ``script`` imports, directly or through other modules."""
    seen: set[Path] = set()
    todo = [Path(script).resolve()]
    while todo:
        path = todo.pop()
        for dep in _imports(path):
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return sorted(str(p) for p in seen)


@lru_cache(maxsize=None)
def _imports(path: Path) -> tuple[Path, ...]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = _module_name(path)
    found: list[Path] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, here, path)
            if base is None:
                continue
            names = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            if name == PACKAGE or name.startswith(PACKAGE + "."):
                found.extend(_files_of(name))
    return tuple(dict.fromkeys(found))


def _module_name(path: Path) -> str | None:
    try:
        rel = path.relative_to(PACKAGE_DIR.parent)
    except ValueError:
        return None
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _absolute(node: ast.ImportFrom, here: str | None, path: Path) -> str | None:
    if node.level == 0:
        return node.module
    if here is None:
        return None
    package = here.split(".") if path.name == "__init__.py" else here.split(".")[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _files_of(name: str) -> list[Path]:
    """The module file for a dotted name, plus the __init__ of every package on the way."""
    parts = name.split(".")[1:]
    files = [PACKAGE_DIR / "__init__.py"]
    here = PACKAGE_DIR
    for part in parts:
        if (here / part).is_dir():
            here = here / part
            files.append(here / "__init__.py")
        elif (here / f"{part}.py").is_file():
            files.append(here / f"{part}.py")
            break
        else:
            break
    return [f for f in files if f.is_file()]
