"""The workflow config: validated against ``config/config.schema.yaml``, which holds every default.

Code reads a validated config (or section) and never states a default of its own: a stage gets its
section from the workflow, the command line reads config/config.yaml, and code run outside both
(benchmarks, tests) fills a partial section with :func:`section`.
"""

from __future__ import annotations

import copy
import difflib
import functools
import hashlib
import json
from pathlib import Path

import yaml
from jsonschema import Draft202012Validator, validators

from .errors import UserError
from .paths import SCHEMA


def _with_defaults(cls):
    validate_properties = cls.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for key, sub in properties.items():
                if "default" in sub and key not in instance:
                    instance[key] = _copy(sub["default"])
        yield from validate_properties(validator, properties, instance, schema)

    return validators.extend(cls, {"properties": set_defaults})


def _copy(value):
    return yaml.safe_load(yaml.safe_dump(value))


_Validator = _with_defaults(Draft202012Validator)


def validate_config(config: dict, schema_path: str | Path = SCHEMA) -> dict:
    """Fill in defaults and check types and ranges; raise one sentence naming the first bad key."""
    schema = yaml.safe_load(Path(schema_path).read_text(encoding="utf-8"))
    _coerce_scalars(config, schema)
    errors = sorted(_Validator(schema).iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        key = ".".join(str(p) for p in err.absolute_path) or "(top level)"
        if err.validator == "additionalProperties":
            raise UserError(_unknown_keys(err))
        raise UserError(f"config key '{key}': {err.message}.")
    _check_ranges(config)
    return config


def _unknown_keys(err) -> str:
    """One sentence naming each unknown key of a closed section and the valid key closest to it."""
    prefix = "".join(f"{p}." for p in err.absolute_path)
    valid = sorted(err.schema.get("properties", {}))
    parts = []
    for name in sorted(set(err.instance) - set(valid), key=str):
        close = difflib.get_close_matches(str(name), valid, n=1, cutoff=0.5)
        hint = f"did you mean '{prefix}{close[0]}'?" if close else f"valid keys here: {', '.join(valid)}"
        parts.append(f"'{prefix}{name}' ({hint})")
    noun = "key" if len(parts) == 1 else "keys"
    return f"config: unknown {noun} {'; '.join(parts)}; see config/config.schema.yaml."


_SCALARS = {"integer": int, "number": (int, float), "boolean": bool}


def _coerce_scalars(config: dict, schema: dict) -> None:
    """Turn command-line text into the type the schema asks for.

    ``--config 'train={seed: 2}'`` reaches the workflow as the string ``'2'``; read such strings as
    YAML scalars when the schema wants a number or a boolean, so the command line works like a file.
    """
    for key, sub in schema.get("properties", {}).items():
        if key not in config:
            continue
        value = config[key]
        if isinstance(value, dict) and sub.get("type") == "object":
            _coerce_scalars(value, sub)
        elif isinstance(value, list) and isinstance(sub.get("items"), dict):
            holder = {str(i): v for i, v in enumerate(value)}
            _coerce_scalars(holder, {"properties": {k: sub["items"] for k in holder}})
            config[key] = [holder[str(i)] for i in range(len(value))]
        elif isinstance(value, str):
            types = sub.get("type")
            types = [types] if isinstance(types, str) else list(types or [])
            if "string" in types:
                continue
            try:
                parsed = yaml.safe_load(value)
            except yaml.YAMLError:
                continue
            for name in types:
                wanted = _SCALARS.get(name)
                if wanted and isinstance(parsed, wanted) and (name == "boolean") == isinstance(parsed, bool):
                    config[key] = parsed
                    break
            if parsed is None and "null" in types:
                config[key] = None


def _check_ranges(config: dict) -> None:
    """What the schema cannot say (it has filled in every default by now)."""
    s = config["slice"]
    if s["min_chars"] > s["max_chars"]:
        raise UserError("config keys 'slice.min_chars' and 'slice.max_chars': the minimum is above the maximum.")
    wanted = split_size(config["split"])
    if wanted > s["n_slices"]:
        raise UserError(
            f"config keys 'split.n_train' + 'split.n_val' + 'split.n_test' ({wanted}) exceed 'slice.n_slices' "
            f"({s['n_slices']}); raise 'slice.n_slices' to {wanted} or lower the split."
        )
    judges = [("judge", config["judge"]), ("train.reward", config["train"]["reward"])]
    judges += [(f"judge.agreement[{i}]", judge) for i, judge in enumerate(config["judge"]["agreement"])]
    for key, judge in judges:
        if sum(judge["weights"].values()) <= 0:
            raise UserError(f"config key '{key}.weights': weights must be non-negative and not all zero.")


def split_size(split: dict) -> int:
    """Slices the split takes: training, validation and test rows."""
    return split["n_train"] + split["n_val"] + split["n_test"]


def load_config(path: str | Path, schema_path: str | Path = SCHEMA, overlays: list[str | Path] = ()) -> dict:
    """Read a config file (plus overlays, merged section by section) and validate it."""
    config: dict = {}
    for p in [path, *overlays]:
        p = Path(p)
        if not p.is_file():
            raise UserError(f"{p}: config file not found.")
        data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
        if not isinstance(data, dict):
            raise UserError(f"{p}: a config file must be a YAML mapping.")
        merge(config, data)
    return validate_config(config, schema_path)


def merge(base: dict, update: dict) -> dict:
    """Recursive dict update, as Snakemake merges --configfile overlays."""
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merge(base[key], value)
        else:
            base[key] = value
    return base


@functools.cache
def _defaults() -> dict:
    return validate_config({})


def section(key: str, values: dict | None = None) -> dict:
    """Config section ``key`` (dotted: ``train.reward``) with ``values`` over the schema's defaults,
    validated: what a stage would be handed, for code that runs outside the workflow."""
    config: dict = {}
    here = config
    *parents, last = key.split(".")
    for part in parents:
        here = here.setdefault(part, {})
    here[last] = copy.deepcopy(values or {})
    validated = validate_config(config) if values else copy.deepcopy(_defaults())
    for part in key.split("."):
        validated = validated[part]
    return validated


# Top-level config keys that never change results; the config hash covers everything else.
# ``report`` only changes how results are shown, ``llm`` holds request knobs (concurrency, retries,
# timeouts, cache), ``resources`` where jobs run, ``run_name`` only where results are written.
NOT_HASHED = ("report", "llm", "run_name", "resources")


def config_digest(config: dict) -> str:
    """SHA-256 (first 16 hex digits) of the result-defining config, canonical JSON, sorted keys."""
    part = {k: v for k, v in config.items() if k not in NOT_HASHED}
    text = json.dumps(part, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
