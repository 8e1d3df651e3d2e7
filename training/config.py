"""Training configs: nested dataclasses, filled from a YAML file and then `--key value` overrides.

Every key must be known and of its default's type: a typo or a wrong type is a `ConfigError` that names
the key and where it came from. Dotted keys reach into sections: `--sft.steps 10`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Sequence

import yaml


class ConfigError(ValueError):
    """A config key is unknown, of the wrong type, or the file is not YAML."""


def _check(value: Any, default: Any, key: str, where: str) -> Any:
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, float):
        if isinstance(value, str):  # YAML reads `1e-4` (no dot) as a string
            try:
                value = float(value)
            except ValueError:
                pass
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        value = float(value) if ok else value
    elif isinstance(default, int):
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif isinstance(default, (list, tuple)):
        ok = isinstance(value, list)
    else:
        ok = isinstance(value, type(default))
    if not ok:
        raise ConfigError(f"{where}: key {key!r} must be {type(default).__name__}, got {value!r}")
    return value


def merge(config, data: dict, where: str, prefix: str = ""):
    """A copy of the dataclass `config` with the values of `data` (nested dicts for sections) set."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: {prefix.rstrip('.') or 'the config'} must be a mapping of keys to values")
    fields = {f.name: f for f in dataclasses.fields(config)}
    changes = {}
    for key, value in data.items():
        full = prefix + str(key)
        if key not in fields:
            raise ConfigError(f"{where}: unknown key {full!r}; expected one of "
                              f"{', '.join(prefix + name for name in fields)}")
        current = getattr(config, key)
        if dataclasses.is_dataclass(current):
            changes[key] = merge(current, value, where, full + ".")
        else:
            changes[key] = _check(value, current, full, where)
    return dataclasses.replace(config, **changes)


def _nest(key: str, value: Any) -> dict:
    for part in reversed(key.split(".")[1:]):
        value = {part: value}
    return {key.split(".")[0]: value}


def _deep_update(target: dict, update: dict) -> dict:
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _deep_update(target[key], value)
        else:
            target[key] = value
    return target


def load(default, path: str | Path | None = None, overrides: Sequence[str] = ()):
    """`default` updated from the YAML file at `path`, then from `["--key", "value", ...]` (values parsed as YAML)."""
    config = default
    if path is not None:
        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except OSError as e:
            raise ConfigError(f"cannot read config {path}: {e.strerror}") from None
        except yaml.YAMLError as e:
            raise ConfigError(f"{path} is not valid YAML: {e}") from None
        config = merge(config, data, str(path))
    if len(overrides) % 2 or any(not key.startswith("--") for key in overrides[::2]):
        raise ConfigError(f"overrides must be pairs `--key value`, got {' '.join(overrides)!r}")
    data: dict = {}
    for key, value in zip(overrides[::2], overrides[1::2]):
        _deep_update(data, _nest(key[2:].replace("-", "_"), yaml.safe_load(value)))
    return merge(config, data, "command line")


def as_dict(config) -> dict:
    return dataclasses.asdict(config)
