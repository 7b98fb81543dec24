"""The config schema is closed: a misspelt key in any section stops the run with one sentence that
names it and the valid key closest to it. The sections are read from the schema itself, so a new
section is covered (and must be closed, or be listed here as a map) without editing this file."""

from __future__ import annotations

import copy

import pytest
import yaml

from audiobook_rl.config import load_config, validate_config
from audiobook_rl.errors import UserError
from audiobook_rl.startup import check_config
from helpers import REPO

SCHEMA_PATH = REPO / "config/config.schema.yaml"
SCHEMA = yaml.safe_load(SCHEMA_PATH.read_text(encoding="utf-8"))
DEFAULT = yaml.safe_load((REPO / "config/config.yaml").read_text(encoding="utf-8"))
# Objects keyed by names the user chooses (model ids): any key is valid, their values are closed.
MAPS = {"llm.prices_per_mtok"}


def resolve(node: dict) -> dict:
    ref = node.get("$ref")
    if not ref:
        return node
    target = SCHEMA
    for part in ref.removeprefix("#/").split("/"):
        target = target[part]
    return target


def objects(node: dict = SCHEMA, path: tuple = ()) -> list[tuple[tuple, dict]]:
    """(path, schema) of every object in the schema, top level first; '*' stands for a map's key."""
    node = resolve(node)
    if node.get("type") != "object":
        return []
    found = [(path, node)]
    for name, sub in node.get("properties", {}).items():
        found += objects(sub, (*path, name))
    if isinstance(node.get("additionalProperties"), dict):
        found += objects(node["additionalProperties"], (*path, "*"))
    return found


OBJECTS = objects()
CLOSED = [(path, node) for path, node in OBJECTS if ".".join(path) not in MAPS]


def dotted(path) -> str:
    return ".".join(path) or "(top level)"


def test_the_walk_sees_every_section():
    names = {dotted(path) for path, _ in OBJECTS}
    assert {"(top level)", "train", "train.rollout", "train.reward", "train.verl", "resources",
            "resources.train_grpo", "llm.prices_per_mtok.*", "judge.weights", "policy.warm_start"} <= names  # fmt: skip


@pytest.mark.parametrize("path,node", OBJECTS, ids=[dotted(p) for p, _ in OBJECTS])
def test_every_object_is_closed_unless_a_map_by_design(path, node):
    if ".".join(path) in MAPS:
        assert isinstance(node.get("additionalProperties"), dict)
    else:
        assert node.get("additionalProperties") is False, f"add 'additionalProperties: false' to {dotted(path)}"


def typo(name: str) -> str:
    """The key with two neighbouring letters swapped (or a letter doubled), as a hand types it."""
    for i in range(len(name) // 2, len(name)):
        if name[i - 1] != name[i]:
            return name[: i - 1] + name[i] + name[i - 1] + name[i + 1 :]
    return name + name[-1]


def section_of(config: dict, path: tuple) -> tuple[dict, str]:
    """The dict at ``path`` in ``config`` (made where missing) and the dotted prefix of its keys."""
    names = []
    for part in path:
        if part == "*":
            part = next(iter(config))  # a map's entry the config has (the default prices)
        config = config.setdefault(part, {})
        names.append(part)
    return config, "".join(f"{n}." for n in names)


@pytest.mark.parametrize("path,node", CLOSED, ids=[dotted(p) for p, _ in CLOSED])
def test_a_misspelt_key_names_itself_and_the_closest_valid_key(path, node):
    config = copy.deepcopy(DEFAULT)
    section, prefix = section_of(config, path)
    key = max(node["properties"], key=len)
    wrong = typo(key)
    assert wrong not in node["properties"]
    section[wrong] = section.pop(key, node["properties"][key].get("default"))
    with pytest.raises(UserError) as err:
        validate_config(config, SCHEMA_PATH)
    message = str(err.value)
    assert f"unknown key '{prefix}{wrong}' (did you mean '{prefix}{key}'?)" in message
    assert message.count("\n") == 0


def test_an_unknown_key_far_from_any_lists_the_valid_ones():
    config = copy.deepcopy(DEFAULT)
    config["split"]["zzz"] = 1
    with pytest.raises(UserError, match=r"unknown key 'split.zzz' \(valid keys here: data_source, n_test, n_train, n_val, seed\)"):
        validate_config(config, SCHEMA_PATH)


def test_any_model_id_is_a_valid_key_of_the_prices():
    config = copy.deepcopy(DEFAULT)
    config["llm"]["prices_per_mtok"]["my-model"] = {"input": 1.0, "output": 2.0}
    assert validate_config(config, SCHEMA_PATH)["llm"]["prices_per_mtok"]["my-model"]["output"] == 2.0


OVERLAYS = sorted(p for p in (REPO / "config").glob("*.yaml") if p.name not in ("config.yaml", "config.schema.yaml"))


@pytest.mark.parametrize("overlay", OVERLAYS, ids=[p.name for p in OVERLAYS])
def test_each_shipped_overlay_is_a_config_the_workflow_starts_with(overlay, monkeypatch):
    """The README's `--configfile config/<overlay>.yaml` commands: the overlay validates over the
    default config, and the start-up check finds nothing once the API keys of its paid backends are
    in the environment (stand-ins here; config/one_gpu.yaml needs none)."""
    config = load_config(REPO / "config/config.yaml", SCHEMA_PATH, [overlay])
    for var in filter(None, config["llm"]["key_env"].values()):
        monkeypatch.setenv(var, "stand-in")
    assert check_config(config) == []
