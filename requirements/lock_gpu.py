"""Write requirements/gpu.lock and gpu.lock.json: the seed experiment's GPU environment, every package pinned.

Regenerate after an edit of requirements/gpu.txt or of pyproject.toml's dependencies, on Linux x86_64
with Python 3.11 (the platform of the lock) and access to the package index:

    python3.11 -m venv /tmp/lock && /tmp/lock/bin/pip install uv packaging
    /tmp/lock/bin/python requirements/lock_gpu.py

then run ``pytest tests/test_gpu_lock.py``. Three steps:

1. ``uv pip compile`` resolves gpu.txt together with pyproject.toml's dependencies for Linux x86_64,
   Python 3.11. The exact pins of gpu.txt are taken as written; every other package (but snakemake's,
   see ENGINE) as the index stood on STACK_DATE, so the resolver cannot pick releases years newer than the
   stack (ray, starlette, openai, protobuf majors that vLLM 0.10.2, verl 0.6.1 and Agent Lightning 0.3.0
   never ran with).
   (pip 23.2's resolver gives up on this set after about ten minutes with a ResolutionImpossible that
   names no real conflict: its backjumping skips over the solution.)
2. pip reads each pinned package's metadata (``--dry-run --no-deps --report``, nothing installed);
   the requirements it states are written to gpu.lock.json, so tests/test_gpu_lock.py checks offline
   that the lock is complete, and each pin carries the extras that other pins (or gpu.txt) ask of it.
3. pip resolves the written lock as ``pip install -r requirements/gpu.lock`` will, to show that the
   installer of envs/gpu.yaml accepts it.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

HERE = Path(__file__).resolve().parent
GPU_TXT, PYPROJECT = HERE / "gpu.txt", HERE.parent / "pyproject.toml"
LOCK, REQUIRES = HERE / "gpu.lock", HERE / "gpu.lock.json"
# The day after tokenizers 0.22.2 (2026-01-05), the newest upstream release that gpu.txt pins besides
# OpenTelemetry 1.44.0 (pinned on purpose: the last release Agent Lightning 0.3.0 keeps its spans with).
STACK_DATE = "2026-01-06T00:00:00Z"
# Markers are evaluated for the first and a late 3.11 release: some requirements apply only below 3.11.3
# (redis needs async-timeout there), and the lock serves every 3.11.x.
PYTHONS = ("3.11.0", "3.11.99")
# The workflow engine is no part of the GPU stack: snakemake takes the newest release in pyproject.toml's
# range (profiles/default/profile.yaml needs >= 9.19, out in 2026-03), with the three of its requirements
# it needs newer than STACK_DATE.
# The report's CJK font package (data only, released after STACK_DATE) is no part of it either.
ENGINE = ("snakemake", "snakemake-interface-storage-plugins", "sqlmodel", "tenacity", "pylopdf-fonts-zh-cn")
HEADER = f"""\
# The seed experiment's GPU environment, every package pinned, for Linux x86_64, Python 3.11 and CUDA 12.8:
# torch 2.8.0's Linux x86_64 wheels on the package index are CUDA 12.8 builds, and the CUDA libraries they
# load are the nvidia-*-cu12 pins below (an NVIDIA driver for CUDA 12.8 is needed).
# Written by requirements/lock_gpu.py from requirements/gpu.txt and pyproject.toml's dependencies: the exact
# pins of gpu.txt as written, snakemake (the workflow engine) and the report's font at their newest, every other package as released
# by {STACK_DATE[:10]}, when the stack's newest upstream release was out. Do not edit by hand.
# Each package's own requirements are in requirements/gpu.lock.json (tests/test_gpu_lock.py checks them).
# Install into a fresh Python 3.11 environment (envs/gpu.yaml does the first and last step):
#   pip install -r requirements/gpu.lock
#   pip install flash-attn==2.8.3 --no-build-isolation   # not in the lock: built against the torch above
#   pip install --no-deps -e .
"""


def roots() -> list[Requirement]:
    """What the lock must satisfy: gpu.txt and the project's own dependencies."""
    lines = (line.split("#")[0].strip() for line in GPU_TXT.read_text().splitlines())
    project = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    return [Requirement(x) for x in lines if x] + [Requirement(x) for x in project]


def compile_pins(top: list[Requirement]) -> str:
    exact = {canonicalize_name(r.name) for r in top if any(s.operator == "==" for s in r.specifier)}
    cmd = [
        sys.executable, "-m", "uv", "pip", "compile", str(GPU_TXT), str(PYPROJECT), "--quiet", "--no-header",
        "--no-annotate", "--python-version", "3.11", "--python-platform", "x86_64-manylinux_2_28",
        "--exclude-newer", STACK_DATE,
        *(f"--exclude-newer-package={name}=false" for name in sorted(exact | set(ENGINE))),
    ]  # fmt: skip
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def metadata(pins: str) -> dict[str, dict]:
    """Name -> the metadata pip reads for each pinned package (no resolution, nothing installed)."""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "pins.txt").write_text(pins)
        report = Path(tmp) / "report.json"
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-deps", "--quiet",
             "--report", str(report), "-r", str(Path(tmp) / "pins.txt")],
            check=True,
        )  # fmt: skip
        items = json.loads(report.read_text())["install"]
    return {canonicalize_name(i["metadata"]["name"]): i["metadata"] for i in items}


def requested_extras(top: list[Requirement], meta: dict[str, dict]) -> dict[str, set[str]]:
    """The extras each package is installed with: walk the requirements that apply on this platform
    (the lock's), from gpu.txt and pyproject.toml through every package reached, with its extras."""
    extras: dict[str, set[str]] = {}
    todo = [(req, "") for req in top]
    while todo:
        req, extra = todo.pop()
        if not applies(req, {extra} - {""}):
            continue
        name = canonicalize_name(req.name)
        new = name not in extras or not req.extras <= extras[name]
        extras.setdefault(name, set()).update(req.extras)
        if new and name in meta:
            requires = [Requirement(r) for r in meta[name].get("requires_dist") or []]
            todo += [(r, e) for r in requires for e in ("", *extras[name])]
    return extras


def applies(req: Requirement, extras: set[str]) -> bool:
    """Whether ``req``, a requirement of a package installed with ``extras``, applies to the lock's
    platform (this one)."""
    return req.marker is None or any(req.marker.evaluate({"python_full_version": v, "extra": e})
                                     for v in PYTHONS for e in ("", *extras))  # fmt: skip


def write(meta: dict[str, dict], extras: dict[str, set[str]]) -> None:
    lines = []
    for name in sorted(meta):
        pin = f"{name}[{','.join(sorted(extras[name]))}]" if extras[name] else name
        lines.append(f"{pin}=={meta[name]['version']}\n")
    LOCK.write_text(HEADER + "".join(lines))
    # Requirements of extras the lock does not install are left out (they are most of the metadata); the
    # test checks that each pin's extras are exactly those asked of it, so none is missing here.
    entries = []
    for name in sorted(meta):
        reqs = meta[name].get("requires_dist") or []
        kept = [r for r in reqs if "extra" not in str(Requirement(r).marker) or applies(Requirement(r), extras[name])]
        entries.append(f"{json.dumps(name)}: {json.dumps({'version': meta[name]['version'], 'requires': kept})}")
    REQUIRES.write_text("{\n" + ",\n".join(entries) + "\n}\n")


def pip_installs() -> dict[str, str]:
    """What ``pip install -r requirements/gpu.lock`` would install, resolved by pip itself."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
             "--report", str(report), "-r", str(LOCK)],
            check=True,
        )  # fmt: skip
        items = json.loads(report.read_text())["install"]
    return {canonicalize_name(i["metadata"]["name"]): i["metadata"]["version"] for i in items}


def main() -> None:
    if (sys.platform, platform.machine(), sys.version_info[:2]) != ("linux", "x86_64", (3, 11)):
        sys.exit("run this with Python 3.11 on Linux x86_64: pip reads the metadata for the running platform")
    top = roots()
    meta = metadata(compile_pins(top))
    extras = requested_extras(top, meta)
    if set(extras) != set(meta):
        sys.exit(f"the resolver's pins and what their requirements reach differ: {sorted(set(extras) ^ set(meta))}")
    write(meta, extras)
    print(f"requirements/gpu.lock: {len(meta)} packages; checking that pip installs it as locked")
    locked = {name: m["version"] for name, m in meta.items()}
    if pip_installs() != locked:
        sys.exit("pip would install other packages or versions than requirements/gpu.lock")
    print("pip installs exactly the lock")


if __name__ == "__main__":
    main()
