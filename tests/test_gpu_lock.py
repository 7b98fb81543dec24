"""requirements/gpu.lock, the seed experiment's GPU environment: complete for Linux x86_64 and Python 3.11
(every requirement of every locked package that applies there, markers and extras evaluated, is pinned
and satisfied), in agreement with requirements/gpu.txt, pyproject.toml and the versions the training
preflight accepts, and the file envs/gpu.yaml installs. Offline: each package's requirements are read from
requirements/gpu.lock.json, which requirements/lock_gpu.py writes beside the lock."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from audiobook_rl.preflight import FLASH_ATTN_INSTALL, check_training_stack
from helpers import REPO

LOCK, REQUIRES = REPO / "requirements" / "gpu.lock", REPO / "requirements" / "gpu.lock.json"
GPU_TXT, PYPROJECT = REPO / "requirements" / "gpu.txt", REPO / "pyproject.toml"
# The platform of the lock in packaging's marker variables: Linux x86_64, CPython, the first and a late
# 3.11 release (a few requirements apply only below 3.11.3).
TARGETS = [
    {"implementation_name": "cpython", "implementation_version": v, "os_name": "posix", "platform_machine": "x86_64",
     "platform_python_implementation": "CPython", "platform_release": "", "platform_system": "Linux",
     "platform_version": "", "python_full_version": v, "python_version": "3.11", "sys_platform": "linux"}
    for v in ("3.11.0", "3.11.99")
]  # fmt: skip
# flash-attn is installed after the lock: pip builds it without build isolation against the locked torch.
# Its setup.py needs these in the environment (install_requires, and what it imports to build).
FLASH_ATTN_NEEDS = ("torch", "einops", "setuptools", "wheel", "packaging", "psutil", "ninja")
FLASH_ATTN_VERSION = re.search(r"flash-attn==(\S+)", FLASH_ATTN_INSTALL).group(1)


def read_lock(text: str) -> dict[str, tuple[str, set[str]]]:
    """Name -> (pinned version, extras installed)."""
    pins = {}
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            req = Requirement(line)
            [spec] = list(req.specifier)
            assert spec.operator == "==", f"not a pin: {line}"
            pins[canonicalize_name(req.name)] = (spec.version, set(req.extras))
    return pins


def roots(gpu_txt: str, pyproject: str) -> list[tuple[str, Requirement]]:
    """What the lock must satisfy: requirements/gpu.txt and the project's dependencies."""
    lines = (line.split("#")[0].strip() for line in gpu_txt.splitlines())
    project = tomllib.loads(pyproject)["project"]["dependencies"]
    return [("requirements/gpu.txt", Requirement(x)) for x in lines if x] + [
        ("pyproject.toml", Requirement(x)) for x in project
    ]


def applies(req: Requirement, extra: str) -> bool:
    return req.marker is None or any(req.marker.evaluate({**env, "extra": extra}) for env in TARGETS)


def problems(lock: str, requires: dict, wanted: list[tuple[str, Requirement]]) -> list[str]:
    """Everything that keeps ``lock`` from being the complete, consistent environment ``wanted`` needs."""
    pins = read_lock(lock)
    found = [f"{n} is pinned at {pins[n][0]} but its requirements are recorded for {requires.get(n, {}).get('version')}"
             for n in pins if requires.get(n, {}).get("version") != pins[n][0]]  # fmt: skip
    found += [f"requirements are recorded for {n}, which the lock does not pin" for n in requires if n not in pins]
    todo = [(who, req, "") for who, req in wanted]
    asked: dict[str, set[str]] = {}
    while todo:
        who, req, extra = todo.pop()
        if not applies(req, extra):
            continue
        name = canonicalize_name(req.name)
        if name not in pins:
            found.append(f"{who} needs {req}, which the lock does not pin")
            continue
        version, extras = pins[name]
        if not req.specifier.contains(version, prereleases=True):
            found.append(f"{who} needs {req}, the lock pins {version}")
        if not req.extras <= extras:
            found.append(f"{who} needs {req}, the lock installs {name} with extras {sorted(extras)}")
        if name not in asked:
            asked[name] = set()
            own = [Requirement(r) for r in requires.get(name, {}).get("requires", [])]
            todo += [(name, r, e) for r in own for e in ("", *extras)]
        asked[name] |= req.extras
    found += [f"{n} is pinned but nothing needs it" for n in pins if n not in asked]
    found += [f"{n} is pinned with extras {sorted(pins[n][1])} but asked for {sorted(asked[n])}"
              for n in pins if n in asked and pins[n][1] != asked[n]]  # fmt: skip
    return found


def repo_files() -> tuple[str, dict, list[tuple[str, Requirement]]]:
    return LOCK.read_text(), json.loads(REQUIRES.read_text()), roots(GPU_TXT.read_text(), PYPROJECT.read_text())


def test_every_requirement_of_every_locked_package_is_pinned_and_satisfied():
    assert problems(*repo_files()) == []


def test_a_transitive_dependency_missing_from_the_lock_is_found():
    lock, requires, wanted = repo_files()
    assert "\nidna==" in lock and "idna" not in {req.name for _, req in wanted}  # reached through other packages
    lock = re.sub(r"\nidna==.*", "", lock)
    del requires["idna"]
    found = problems(lock, requires, wanted)
    assert found and all("idna" in p and "which the lock does not pin" in p for p in found), found
    assert any(p.startswith("httpx needs idna") for p in found)


def test_a_lock_that_drifts_from_gpu_txt_or_pyproject_is_found():
    lock, requires, _ = repo_files()
    gpu_txt, pyproject = GPU_TXT.read_text(), PYPROJECT.read_text()
    assert "\nvllm==0.10.2\n" in gpu_txt and '"transformers>=4.56,<4.57"' in pyproject
    edited = roots(gpu_txt.replace("\nvllm==0.10.2\n", "\nvllm==0.10.1\nrich-click\n"), pyproject)
    assert sorted(problems(lock, requires, edited)) == [
        "requirements/gpu.txt needs rich-click, which the lock does not pin",
        "requirements/gpu.txt needs vllm==0.10.1, the lock pins 0.10.2",
    ]
    edited = roots(gpu_txt, pyproject.replace('"transformers>=4.56,<4.57"', '"transformers>=4.57"'))
    assert problems(lock, requires, edited) == ["pyproject.toml needs transformers>=4.57, the lock pins 4.56.2"]


def test_an_extra_the_lock_leaves_out_is_found():
    lock, requires, wanted = repo_files()
    assert "\nuvicorn[standard]==" in lock
    found = problems(lock.replace("\nuvicorn[standard]==", "\nuvicorn=="), requires, wanted)
    assert "uvicorn is pinned with extras [] but asked for ['standard']" in found, found
    assert any(p.startswith("fastapi needs uvicorn[standard]") and p.endswith("with extras []") for p in found), found


def test_the_lock_is_the_cuda_12_8_seed_stack_the_preflight_accepts():
    pins = {name: version for name, (version, _) in read_lock(LOCK.read_text()).items()}
    assert (pins["torch"], pins["vllm"], pins["verl"], pins["agentlightning"]) == ("2.8.0", "0.10.2", "0.6.1", "0.3.0")
    # torch 2.8.0's Linux x86_64 wheels load the CUDA 12.8 libraries of these pins
    assert all(pins[n].startswith("12.8.") for n in ("nvidia-cuda-runtime-cu12", "nvidia-cuda-nvrtc-cu12"))
    assert Version(pins["numpy"]) < Version("2") and Version(pins["pandas"]) < Version("3")

    def version(name: str) -> str | None:  # the environment right after the lock and flash-attn's build step
        return FLASH_ATTN_VERSION if name == "flash-attn" else pins.get(canonicalize_name(name))

    assert check_training_stack(version) == []
    assert "flash-attn" not in pins and all(canonicalize_name(n) in pins for n in FLASH_ATTN_NEEDS)


def test_every_install_instruction_names_the_flash_attn_the_preflight_asks_for():
    for path in (GPU_TXT, LOCK, REPO / "envs" / "gpu.yaml", REPO / "envs" / "gpu.post-deploy.sh", REPO / "README.md"):
        assert set(re.findall(r"flash-attn==(\S+)", path.read_text())) == {FLASH_ATTN_VERSION}, path


def test_the_conda_gpu_environment_installs_the_lock():
    env = yaml.safe_load((REPO / "envs" / "gpu.yaml").read_text())
    assert "python=3.11" in env["dependencies"]
    [pip] = [d["pip"] for d in env["dependencies"] if isinstance(d, dict)]
    assert pip[0] == "-r ../requirements/gpu.lock"


def test_snakemake_below_9_19_which_ignores_the_workflow_profile_is_outside_the_ranges():
    """profiles/default/profile.yaml is read from snakemake 9.19 on; 9.14 stops a bare `snakemake` with
    "profile given but no config.yaml found"."""
    assert (REPO / "profiles" / "default" / "profile.yaml").exists()
    [engine] = [r for r in map(Requirement, tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"])
                if r.name == "snakemake"]  # fmt: skip
    assert not engine.specifier.contains("9.18.2") and engine.specifier.contains("9.19.0")
    assert Version(read_lock(LOCK.read_text())["snakemake"][0]) >= Version("9.19")


def test_the_conda_gpu_environment_builds_flash_attn_after_the_lock():
    """Snakemake runs ``<env>.post-deploy.sh`` in an environment it has just built from ``<env>.yaml``
    (``--sdm conda``): the GPU environment's builds the flash-attn the preflight asks for, with the
    preflight's command (after the lock's torch is in, without build isolation)."""
    from snakemake.sourcecache import LocalSourceFile

    script = LocalSourceFile(str(REPO / "envs" / "gpu.yaml")).replace_suffix([".yaml", ".yml"], ".post-deploy.sh")
    text = Path(script.get_path_or_uri(secret_free=False)).read_text()
    command = FLASH_ATTN_INSTALL.split("with: ")[1]
    assert text.startswith("#!") and command in text.splitlines()
