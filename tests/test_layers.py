"""The package's import graph: imports run down the layers only, and every module has a user.

A *unit* is a top-level module (``audiobook_rl.steps``) or a subpackage (``audiobook_rl.agent``).
:data:`LAYERS` orders the units from the bottom up; a module may import its own unit or a unit
below it, never one above. Every import statement counts, also inside functions and under
``if TYPE_CHECKING:``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from audiobook_rl import backends
from audiobook_rl.deps import PACKAGE, PACKAGE_DIR, imported_names
from helpers import REPO

# Bottom first. Files, errors and the script schema; then what a stage is made of (config, backend
# registry, corpus, dataset); the LLM client layer; labelers and judges; the statistics that compare
# judged scores; the policy; the agent and its chat clients; generation and training; what reads
# results (report, run index); the start-up checks and the command line.
LAYERS = [
    "",  # the package's own __init__
    "errors",
    "paths",
    "failures",
    "script",
    "files",
    "stage",
    "gpus",
    "steps",
    "prompts",
    "config",
    "backends",
    "corpus",
    "dataset",
    "preflight",
    "deps",
    "llm",
    "labeling",
    "judging",
    "compare",
    "policy",
    "agent",
    "generation",
    "training",
    "report",
    "sweep",
    "startup",
    "cli",
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE_DIR.rglob("*.py"))}


def unit(name: str) -> str:
    """The unit of a dotted name of this package (``audiobook_rl.agent.episode`` -> ``agent``)."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else ""


def package_imports(path: Path) -> set[str]:
    """The modules of this package that the file at ``path`` imports (``from .x import y``: x, or
    x.y when y is a module)."""
    return {name for name in imported_names(path, typing=True) if name in MODULES}


def test_every_unit_has_a_layer():
    assert {unit(name) for name in MODULES} == set(LAYERS)


def upward_imports(modules: dict[str, Path]) -> list[str]:
    """Each import of a module in a unit above the importing one."""
    return [
        f"{name} imports {target}"
        for name, path in modules.items()
        for target in sorted(package_imports(path))
        if LAYERS.index(unit(target)) > LAYERS.index(unit(name))
    ]


def test_no_import_runs_back_up_the_layers():
    assert upward_imports(MODULES) == []


def test_the_layering_check_names_an_import_that_runs_back_up(tmp_path):
    files = tmp_path / "files.py"
    files.write_text(
        MODULES["audiobook_rl.files"].read_text(encoding="utf-8") + "\n\ndef f():\n    from audiobook_rl.report import render\n",
        encoding="utf-8",
    )
    assert upward_imports({**MODULES, "audiobook_rl.files": files}) == [
        "audiobook_rl.files imports audiobook_rl.report",
        "audiobook_rl.files imports audiobook_rl.report.render",
    ]


def users_outside_the_package() -> set[str]:
    """Modules named by the stage scripts, the rules, the benchmarks, the backend registry and the
    command-line entry point."""
    used = {f"{PACKAGE}.cli"}  # [project.scripts] audiobook-rl = "audiobook_rl.cli:main"
    assert f'"{PACKAGE}.cli:main"' in (REPO / "pyproject.toml").read_text(encoding="utf-8")
    for path in [*(REPO / "scripts").glob("*.py"), *(REPO / "bench").rglob("*.py")]:
        used |= set(imported_names(path, typing=True))
    for path in [REPO / "Snakefile", *(REPO / "rules").glob("*.smk")]:
        used |= set(re.findall(rf"\b{PACKAGE}(?:\.\w+)+", path.read_text(encoding="utf-8")))
    for choices in backends.REGISTRY.values():
        for backend in choices.values():
            used |= {target.partition(":")[0] for target in (backend.run, backend.export) if target}
    return used


def test_every_module_is_used_by_the_package_the_workflow_or_a_benchmark():
    used = users_outside_the_package()
    for name, path in MODULES.items():
        used |= package_imports(path) - {name}
    # A package is imported whenever one of its modules is.
    used |= {".".join(name.split(".")[:i]) for name in used for i in range(1, name.count(".") + 1)}
    assert sorted(set(MODULES) - used) == []


def import_circles(modules: dict[str, Path]) -> list[list[str]]:
    """Groups of modules that import each other in a circle, each sorted. An import of a package's
    ``__init__`` (``from . import stats`` names the package too) does not count: it runs no module
    of the circle unless the ``__init__`` itself imports one, which is then an edge of its own."""
    packages = {name for name, path in modules.items() if path.name == "__init__.py"}
    graph = {name: {t for t in package_imports(path) if t != name and t not in packages}
             for name, path in modules.items()}
    circles, done = [], set()
    for start in graph:
        if start in done:
            continue
        reach = _reachable(graph, start)
        circle = sorted(n for n in reach if start in _reachable(graph, n)) if start in reach else []
        done |= set(circle)
        if circle:
            circles.append(circle)
    return circles


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), list(graph[start])
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(graph.get(name, ()))
    return seen


def test_no_modules_import_each_other_in_a_circle():
    assert import_circles(MODULES) == []


def test_the_circle_check_names_modules_that_import_each_other(tmp_path):
    steps = tmp_path / "steps.py"
    steps.write_text(MODULES["audiobook_rl.steps"].read_text(encoding="utf-8") + "\n\ndef f():\n    from audiobook_rl import files\n",
                     encoding="utf-8")
    files = tmp_path / "files.py"
    files.write_text(MODULES["audiobook_rl.files"].read_text(encoding="utf-8") + "\n\ndef g():\n    from audiobook_rl import steps\n",
                     encoding="utf-8")
    circles = import_circles({**MODULES, "audiobook_rl.steps": steps, "audiobook_rl.files": files})
    assert ["audiobook_rl.files", "audiobook_rl.steps"] in circles


def third_party_imports(path: Path) -> set[str]:
    """The top-level names of the packages outside this one that the file at ``path`` imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names - {PACKAGE}


def test_the_verl_backend_is_one_package_apart_from_the_local_backend():
    """Every module that runs verl or Agent Lightning for training sits in ``training.verl`` (the
    agent's rollout for Agent Lightning is the agent stage's: ``agent.lightning``), and the
    registry's verl backend runs and exports from there."""
    verl = f"{PACKAGE}.training.verl"
    outside = sorted(name for name, path in MODULES.items()
                     if third_party_imports(path) & {"verl", "agentlightning"}
                     and not (name == verl or name.startswith(verl + ".")) and name != f"{PACKAGE}.agent.lightning")
    assert outside == []
    backend = backends.get("train", "verl")
    assert all(target.startswith(verl + ".") for target in (backend.run, backend.export))
