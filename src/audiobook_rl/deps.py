"""The package modules a rule runs, so that Snakemake reruns a stage when one of them changes.

Snakemake tracks a ``script:``'s own file but not the modules it imports; the workflow declares
the files found here as rule inputs (compared by content, so a ``touch`` reruns nothing). A rule
runs what its script imports (the modules every backend shares) plus the modules of the backends
the config chooses for it (:mod:`audiobook_rl.backends`), each with everything it imports: every
``import`` statement counts, also inside functions. A backend that is not configured is not an
input, so editing it reruns nothing.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

from . import backends
from .paths import SCRIPTS

PACKAGE = "audiobook_rl"
PACKAGE_DIR = Path(__file__).resolve().parent


def code_files(config: dict, rule: str) -> list[str]:
    """The package files rule ``rule`` runs under ``config``: its script's imports and its backends'."""
    files = set(imported_files(SCRIPTS / f"{rule}.py"))
    for _, backend, entry in backends.of_rule(config, rule):
        for module in backend.modules(entry):
            files.update(module_files(module))
    return sorted(files)


def module_files(module: str) -> list[str]:
    """The files of ``module`` (a dotted name in this package) and of everything it imports."""
    own = _files_of(module)
    found = set(map(str, own))
    for path in own:
        found.update(imported_files(path))
    return sorted(found)


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
    found = [f for name in imported_names(path) for f in _files_of(name)]
    return tuple(dict.fromkeys(found))


def imported_names(path: str | Path, typing: bool = False) -> list[str]:
    """The dotted names of this package that the file at ``path`` imports: every ``import``
    statement, also inside functions, except those under ``if TYPE_CHECKING:`` (types only, never
    run) unless ``typing``. ``from .x import y`` gives ``pkg.x`` and ``pkg.x.y``."""
    path = Path(path)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = _module_name(path)
    names: list[str] = []
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if not typing and isinstance(node, ast.If) and _is_type_checking(node.test):
            todo.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, here, path)
            if base is not None:
                names += [base] + [f"{base}.{alias.name}" for alias in node.names]
        todo.extend(ast.iter_child_nodes(node))
    return [n for n in dict.fromkeys(names) if n == PACKAGE or n.startswith(PACKAGE + ".")]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


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
